//! The dependency direction of STYLE.md, enforced from `cargo metadata`.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

/// Allowed internal edges (normal and build dependencies).
const ALLOWED: &[(&str, &[&str])] = &[
    ("pp-types", &[]),
    ("pp-gate", &["pp-types"]),
    ("pp-agent", &["pp-types"]),
    ("pp-model", &["pp-types", "pp-agent"]),
    ("pp-store", &["pp-types"]),
    ("pp-docs", &["pp-types"]),
    ("pp-sandbox", &["pp-types"]),
    (
        "pp-tools",
        &["pp-types", "pp-gate", "pp-agent", "pp-docs", "pp-sandbox"],
    ),
    // pp-sandbox: stdio MCP servers start confined like run_command.
    ("pp-mcp", &["pp-types", "pp-gate", "pp-agent", "pp-sandbox"]),
    (
        "pp-tasks",
        &[
            "pp-types", "pp-gate", "pp-agent", "pp-model", "pp-tools", "pp-store",
        ],
    ),
    // Schedules and webhook channels: tasks through the task service, the store through
    // a narrow book of their own (pp-model: their tests' scripted model).
    (
        "pp-schedules",
        &["pp-types", "pp-store", "pp-tasks", "pp-model"],
    ),
    (
        "pp-channels",
        &["pp-types", "pp-store", "pp-tasks", "pp-model"],
    ),
    // Notifications and approval expiry: tasks through the task service, the event feed
    // through a narrow handle of their own.
    ("pp-notify", &["pp-types", "pp-store", "pp-tasks"]),
    // Remote decisions through a chat app: decisions through the task service, its card
    // messages, offset and lease through a narrow handle of its own.
    ("pp-remote", &["pp-types", "pp-store", "pp-tasks"]),
    // The operator's skills and memory: the file work through pp-tools, the audit rows
    // through a narrow handle on the store; nothing about tasks.
    ("pp-knowledge", &["pp-types", "pp-tools", "pp-store"]),
    // Team users and console logins: the workspaces through the task service, users,
    // grants, tokens and logins through a narrow handle of their own.
    ("pp-users", &["pp-types", "pp-store", "pp-tasks"]),
    // Chat sessions: workspaces and workers through the task service, sessions and their
    // turns through a narrow handle of their own.
    ("pp-chat", &["pp-types", "pp-store", "pp-tasks"]),
    (
        "pp-server",
        &[
            "pp-types",
            "pp-gate",
            "pp-tasks",
            "pp-knowledge",
            "pp-users",
            "pp-chat",
            "pp-schedules",
            "pp-channels",
        ],
    ),
    (
        "pp-cli",
        &[
            "pp-types",
            "pp-gate",
            "pp-agent",
            "pp-model",
            "pp-tools",
            "pp-docs",
            "pp-sandbox",
            "pp-mcp",
            "pp-store",
            "pp-tasks",
            "pp-schedules",
            "pp-channels",
            "pp-notify",
            "pp-remote",
            "pp-knowledge",
            "pp-users",
            "pp-chat",
            "pp-server",
        ],
    ),
    (
        "pp-test-support",
        &[
            "pp-types",
            "pp-gate",
            "pp-agent",
            "pp-model",
            "pp-tools",
            "pp-docs",
            "pp-sandbox",
            "pp-mcp",
            "pp-store",
            "pp-tasks",
            "pp-schedules",
            "pp-channels",
            "pp-notify",
            "pp-remote",
            "pp-knowledge",
            "pp-users",
            "pp-chat",
            "pp-server",
        ],
    ),
];

/// Dev-only edges that run up (a test drives its crate through a crate above it, as the
/// front ends do); allowed only as dev-dependencies.
const DEV_ALLOWED: &[(&str, &[&str])] = &[
    // The chat turns' tests (history, summaries, the busy rule) send messages through
    // pp-chat's sessions and watch the task service run them.
    ("pp-tasks", &["pp-chat"]),
];

/// Heavy external crates and the crates allowed to use each (one, but for rusqlite:
/// pp-docs runs SQL over a loaded table on an in-memory database, never a file).
const OWNERS: &[(&str, &[&str])] = &[
    ("cap-std", &["pp-gate"]),
    ("tokio-postgres", &["pp-store"]),
    ("deadpool-postgres", &["pp-store"]),
    ("rusqlite", &["pp-store", "pp-docs"]),
    ("axum", &["pp-server"]),
    ("hyper", &["pp-server"]),
    ("hyper-util", &["pp-server"]),
    ("rmcp", &["pp-mcp"]),
    ("jsonschema", &["pp-mcp"]),
    ("reqwest", &["pp-model", "pp-mcp", "pp-remote"]),
    ("yaml-rust2", &["pp-tools"]),
    ("pdf_oxide", &["pp-docs"]),
    ("office_oxide", &["pp-docs"]),
    ("zip", &["pp-docs"]),
    ("quick-xml", &["pp-docs"]),
    ("csv", &["pp-docs"]),
    ("landlock", &["pp-sandbox"]),
    ("seccompiler", &["pp-sandbox"]),
    ("grep-searcher", &["pp-tools"]),
    ("grep-regex", &["pp-tools"]),
    ("grep-matcher", &["pp-tools"]),
    ("ignore", &["pp-tools"]),
    ("globset", &["pp-tools"]),
    ("croner", &["pp-schedules"]),
    ("chrono-tz", &["pp-schedules"]),
    ("rustyline", &["pp-cli"]),
];

/// Crates the bottom layers must never use.
const NOT_IN_TYPES_OR_GATE: &[&str] = &["tokio", "reqwest", "rusqlite", "axum", "hyper"];

struct Dependency {
    name: String,
    dev_only: bool,
}

fn workspace_dependencies() -> BTreeMap<String, Vec<Dependency>> {
    let output = std::process::Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(crate::repo_root())
        .output()
        .expect("run cargo metadata");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: Value = serde_json::from_slice(&output.stdout).unwrap();
    let mut crates = BTreeMap::new();
    for package in metadata["packages"].as_array().unwrap() {
        let name = package["name"].as_str().unwrap().to_owned();
        let deps = package["dependencies"]
            .as_array()
            .unwrap()
            .iter()
            .map(|dep| Dependency {
                name: dep["name"].as_str().unwrap().to_owned(),
                dev_only: dep["kind"].as_str() == Some("dev"),
            })
            .collect();
        crates.insert(name, deps);
    }
    crates
}

#[test]
fn internal_edges_follow_the_table() {
    let allowed: BTreeMap<&str, BTreeSet<&str>> = ALLOWED
        .iter()
        .map(|(name, deps)| (*name, deps.iter().copied().collect()))
        .collect();
    let crates = workspace_dependencies();
    assert!(crates.contains_key("pp-gate") && crates.contains_key("pp-agent"));
    let mut violations = Vec::new();
    for (name, deps) in &crates {
        let Some(allowed) = allowed.get(name.as_str()) else {
            violations.push(format!("{name} is not in the dependency table"));
            continue;
        };
        for dep in deps.iter().filter(|dep| dep.name.starts_with("pp-")) {
            if dep.name == "pp-test-support" {
                if !dep.dev_only {
                    violations.push(format!("{name} uses pp-test-support outside dev"));
                }
                continue;
            }
            let dev_allowed = dep.dev_only
                && DEV_ALLOWED
                    .iter()
                    .any(|(from, to)| *from == name.as_str() && to.contains(&dep.name.as_str()));
            if !allowed.contains(dep.name.as_str()) && !dev_allowed {
                violations.push(format!("{name} -> {} is not allowed", dep.name));
            }
        }
    }
    assert!(violations.is_empty(), "{violations:#?}");
}

#[test]
fn heavy_crates_have_one_owner() {
    let crates = workspace_dependencies();
    let mut violations = Vec::new();
    for (name, deps) in &crates {
        for dep in deps.iter().filter(|dep| !dep.dev_only) {
            if let Some((_, owners)) = OWNERS.iter().find(|(heavy, _)| *heavy == dep.name)
                && !owners.contains(&name.as_str())
            {
                violations.push(format!("{name} uses {} (owners: {owners:?})", dep.name));
            }
            let bottom = name == "pp-types" || name == "pp-gate";
            if bottom && NOT_IN_TYPES_OR_GATE.contains(&dep.name.as_str()) {
                violations.push(format!(
                    "{name} must stay synchronous and offline: uses {}",
                    dep.name
                ));
            }
        }
    }
    assert!(violations.is_empty(), "{violations:#?}");
}

#[test]
fn the_agent_never_depends_on_the_gate() {
    let crates = workspace_dependencies();
    let agent = &crates["pp-agent"];
    assert!(
        agent.iter().all(|dep| dep.name != "pp-gate"),
        "pp-agent must receive the policy as a callback"
    );
}

#[test]
fn the_checker_catches_a_forbidden_edge() {
    // The table itself forbids what the rules forbid (guards against a permissive table).
    let allowed: BTreeMap<&str, BTreeSet<&str>> = ALLOWED
        .iter()
        .map(|(name, deps)| (*name, deps.iter().copied().collect()))
        .collect();
    assert!(!allowed["pp-agent"].contains("pp-gate"));
    assert!(!allowed["pp-types"].contains("pp-agent"));
    assert!(!allowed["pp-server"].contains("pp-store"));
    assert!(!allowed["pp-gate"].contains("pp-agent"));
}

/// The server talks to the task service only (issues 15 and 26), and the crates say so,
/// not the text: the server depends on no store crate, so it cannot name the store at
/// all; every crate it depends on that reaches `pp-store` (the task service, the
/// scheduler and the webhook channels, each through a handle of its own whose store field
/// is private) re-exports neither the store crate nor a way to it (`pp_tasks::store`, `TaskService::store` do
/// not compile: pp-tasks' `compile_fail` doc tests). The CLI opens the database with
/// `pp-store` itself and hands it to the service.
#[test]
fn the_server_reaches_the_store_only_through_the_task_service() {
    let crates = workspace_dependencies();
    let normal = |name: &str| -> Vec<String> {
        crates[name]
            .iter()
            .filter(|dep| !dep.dev_only && dep.name.starts_with("pp-"))
            .map(|dep| dep.name.clone())
            .collect()
    };
    assert!(
        !normal("pp-server").iter().any(|dep| dep == "pp-store"),
        "pp-server must not depend on pp-store"
    );
    // Every crate on a path from the server to the store, and whether it re-exports it.
    let mut reaching = BTreeSet::new();
    let mut stack = normal("pp-server");
    let mut seen = BTreeSet::new();
    while let Some(name) = stack.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        let deps = normal(&name);
        if deps.iter().any(|dep| dep == "pp-store") {
            reaching.insert(name.clone());
        }
        stack.extend(deps);
    }
    assert_eq!(
        reaching,
        BTreeSet::from(
            [
                "pp-channels",
                "pp-chat",
                "pp-knowledge",
                "pp-schedules",
                "pp-tasks",
                "pp-users",
            ]
            .map(str::to_owned)
        ),
        "the server reaches pp-store only through the task service and the services beside it \
         (operator knowledge, users, chat, schedules, webhook channels), each with a store handle of its \
         own"
    );
    for name in &reaching {
        let lib = crate::repo_root()
            .join("crates")
            .join(name)
            .join("src/lib.rs");
        #[expect(
            clippy::disallowed_methods,
            reason = "reads the workspace's own sources"
        )]
        let text = std::fs::read_to_string(&lib).unwrap();
        let reexports_the_crate = text.lines().any(|line| {
            let code = line.trim();
            code.starts_with("pub use pp_store as")
                || code.starts_with("pub use pp_store;")
                || code.starts_with("pub use pp_store::*")
                || code.starts_with("pub extern crate pp_store")
        });
        assert!(!reexports_the_crate, "{name} re-exports pp_store");
    }
}

/// The task service never names a tool argument: the stale check, the audit target and
/// the approval preview come from the tool (issue 9's acceptance).
#[test]
fn the_task_service_names_no_tool_argument() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../pp-tasks/src");
    let mut offenders = Vec::new();
    let mut stack = vec![src];
    while let Some(dir) = stack.pop() {
        #[expect(
            clippy::disallowed_methods,
            reason = "reads the repository's own sources"
        )]
        let entries = std::fs::read_dir(&dir).expect("pp-tasks/src");
        for entry in entries {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                #[expect(
                    clippy::disallowed_methods,
                    reason = "reads the repository's own sources"
                )]
                let text = std::fs::read_to_string(&path).expect("source");
                if text.contains("\"path\"") {
                    offenders.push(path.display().to_string());
                }
            }
        }
    }
    assert!(offenders.is_empty(), "`\"path\"` literal in {offenders:?}");
}
