//! The gate as a policy: paths first, then the capability; never the tool's name.

use std::sync::Arc;

use pp_gate::{Gate, evaluate, evaluate_capability};
use pp_types::{Capability, Decision, DenyRule, Policy, Risk, ToolSpec};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::setup;

fn spec(name: &str, capability: Option<&str>, path_params: &[&str]) -> ToolSpec {
    ToolSpec {
        name: name.to_owned(),
        description: String::new(),
        parameters: json!({"type": "object"}),
        capability: capability.map(Capability::new),
        risk: Risk::Low,
        path_params: path_params.iter().map(|p| (*p).to_owned()).collect(),
        root: pp_types::PathRoot::Workspace,
    }
}

fn rule(decision: &Decision) -> Option<DenyRule> {
    match decision {
        Decision::Deny(denial) => Some(denial.rule),
        Decision::Allow | Decision::Ask { .. } => None,
    }
}

fn ask(action: &str) -> Decision {
    Decision::Ask {
        action: action.to_owned(),
    }
}

#[test]
fn capability_table() {
    let cases: &[(Option<&str>, Decision)] = &[
        (Some("file:read"), Decision::Allow),
        (Some("file:list"), Decision::Allow),
        (Some("skill:READ"), Decision::Allow),
        (Some("file:write"), ask("write")),
        (Some("file:create"), ask("create")),
        (Some("file:update"), ask("update")),
        (Some("file:delete"), ask("delete")),
        (Some("shell:execute"), ask("execute")),
        (Some("web:Network"), ask("network")),
        (Some("mcp:fs:write_file:WRITE"), ask("write")),
    ];
    for (capability, expected) in cases {
        let capability = capability.map(Capability::new);
        assert_eq!(
            &evaluate_capability(capability.as_ref()),
            expected,
            "{capability:?}"
        );
    }
    for unknown in [
        "file:",
        "file:frobnicate",
        "file:read-only",
        "file:readwrite",
        "mcp:x:y:",
    ] {
        let decision = evaluate_capability(Some(&Capability::new(unknown)));
        assert_eq!(
            rule(&decision),
            Some(DenyRule::UnknownCapability),
            "{unknown}"
        );
    }
    assert_eq!(
        rule(&evaluate_capability(None)),
        Some(DenyRule::MissingCapability)
    );
    assert_eq!(
        rule(&evaluate_capability(Some(&Capability::new("")))),
        Some(DenyRule::MissingCapability)
    );
}

#[test]
fn paths_are_checked_before_the_capability() {
    let (_tree, jail) = setup();
    let read = spec("read_file", Some("file:read"), &["path"]);
    let denied = evaluate(&jail, &read, &json!({"path": "../outside/secret.txt"}));
    assert_eq!(rule(&denied), Some(DenyRule::Escapes));
    let denied = evaluate(&jail, &read, &json!({"path": "/etc/passwd"}));
    assert_eq!(rule(&denied), Some(DenyRule::AbsolutePath));
    let denied = evaluate(&jail, &read, &json!({"path": "C:\\x"}));
    assert_eq!(rule(&denied), Some(DenyRule::InvalidPath));
    // Even an unknown capability reports the path first.
    let unknown = spec("x", Some("file:frobnicate"), &["path"]);
    assert_eq!(
        rule(&evaluate(&jail, &unknown, &json!({"path": "../x"}))),
        Some(DenyRule::Escapes)
    );
    // Every path parameter is checked, not just the first.
    let copy = spec("copy", Some("file:read"), &["from", "to"]);
    assert_eq!(
        rule(&evaluate(
            &jail,
            &copy,
            &json!({"from": "top.txt", "to": "../x"})
        )),
        Some(DenyRule::Escapes)
    );
}

#[cfg(unix)]
#[test]
fn symlink_escape_is_a_denial() {
    let (tree, jail) = setup();
    tree.symlink("out", "../outside");
    tree.symlink("loop", "loop");
    let read = spec("read_file", Some("file:read"), &["path"]);
    for path in ["out/secret.txt", "loop"] {
        let decision = evaluate(&jail, &read, &json!({ "path": path }));
        assert_eq!(rule(&decision), Some(DenyRule::SymlinkEscape), "{path}");
    }
}

#[test]
fn missing_files_are_not_denials() {
    let (_tree, jail) = setup();
    let read = spec("read_file", Some("file:read"), &["path"]);
    let write = spec("write_file", Some("file:write"), &["path"]);
    assert_eq!(
        evaluate(&jail, &read, &json!({"path": "nope.txt"})),
        Decision::Allow
    );
    assert_eq!(
        evaluate(&jail, &write, &json!({"path": "new/dir/x.txt"})),
        ask("write")
    );
    assert_eq!(
        evaluate(&jail, &read, &json!({"path": "top.txt/x"})),
        Decision::Allow
    );
}

#[test]
fn path_arguments_must_be_strings() {
    let (_tree, jail) = setup();
    let read = spec("read_file", Some("file:read"), &["path"]);
    for value in [
        json!(1),
        json!(null),
        json!(["a"]),
        json!({"p": "a"}),
        json!(true),
    ] {
        let decision = evaluate(&jail, &read, &json!({ "path": value }));
        assert_eq!(rule(&decision), Some(DenyRule::PathNotString), "{value}");
    }
    // Absent optional path parameters and non-object arguments leave it to the capability.
    assert_eq!(evaluate(&jail, &read, &json!({})), Decision::Allow);
    assert_eq!(evaluate(&jail, &read, &json!("top.txt")), Decision::Allow);
}

#[test]
fn deny_beats_allow() {
    let (_tree, jail) = setup();
    // A good path does not rescue a bad capability, and a good capability does not
    // rescue a bad path.
    let missing = spec("read_file", None, &["path"]);
    assert_eq!(
        rule(&evaluate(&jail, &missing, &json!({"path": "top.txt"}))),
        Some(DenyRule::MissingCapability)
    );
    let read = spec("read_file", Some("file:read"), &["a", "b"]);
    assert_eq!(
        rule(&evaluate(
            &jail,
            &read,
            &json!({"a": "top.txt", "b": "/etc"})
        )),
        Some(DenyRule::AbsolutePath)
    );
    let write = spec("write_file", Some("file:write"), &["path"]);
    assert_eq!(
        rule(&evaluate(&jail, &write, &json!({"path": "../x"}))),
        Some(DenyRule::Escapes)
    );
}

#[test]
fn the_name_is_never_consulted() {
    let (_tree, jail) = setup();
    let arguments = [
        json!({"path": "top.txt"}),
        json!({"path": "../x"}),
        json!({"path": 3}),
        json!({}),
    ];
    for capability in [Some("file:read"), Some("file:write"), Some("x:y"), None] {
        for args in &arguments {
            let decisions: Vec<Decision> = ["read_file", "write_file", "rm -rf", "", "日本"]
                .iter()
                .map(|name| evaluate(&jail, &spec(name, capability, &["path"]), args))
                .collect();
            assert!(
                decisions.windows(2).all(|w| w[0] == w[1]),
                "{capability:?} {args}"
            );
        }
    }
}

#[test]
fn adding_a_tool_never_widens_another() {
    let (_tree, jail) = setup();
    let gate = Gate::new(Arc::new(jail));
    let write = spec("write_file", Some("file:write"), &["path"]);
    let calls: Vec<Value> = vec![json!({"path": "a.txt"}), json!({"path": "../a.txt"})];
    let before: Vec<Decision> = calls.iter().map(|c| gate.evaluate(&write, c)).collect();
    // "Register" more tools, including a permissive one with the same name and path
    // params, and exercise them; the gate holds no registry, so nothing can change.
    let others = [
        spec("write_file", Some("file:read"), &[]),
        spec("read_everything", Some("file:read"), &[]),
        spec("admin", Some("admin:allow"), &["path"]),
    ];
    for other in &others {
        for call in &calls {
            let _ = gate.evaluate(other, call);
        }
    }
    let after: Vec<Decision> = calls.iter().map(|c| gate.evaluate(&write, c)).collect();
    assert_eq!(before, after);
    assert_eq!(before[0], ask("write"));
    assert_eq!(rule(&before[1]), Some(DenyRule::Escapes));
    // A fresh gate on the same jail decides the same.
    let fresh = Gate::new(Arc::clone(gate.jail()));
    let again: Vec<Decision> = calls.iter().map(|c| fresh.evaluate(&write, c)).collect();
    assert_eq!(before, again);
}

#[test]
fn gate_is_a_policy_trait_object() {
    let (_tree, jail) = setup();
    let policy: Box<dyn Policy> = Box::new(Gate::new(Arc::new(jail)));
    let read = spec("read_file", Some("file:read"), &["path"]);
    assert_eq!(
        policy.evaluate(&read, &json!({"path": "docs/readme.txt"})),
        Decision::Allow
    );
}

#[test]
fn every_element_of_a_path_array_is_checked() {
    let (_tree, jail) = setup();
    let stamp = spec("stamp", Some("stamp:update"), &["paths[]"]);
    assert_eq!(
        evaluate(&jail, &stamp, &json!({"paths": ["top.txt", "a/b.txt"]})),
        ask("update")
    );
    let denied = evaluate(
        &jail,
        &stamp,
        &json!({"paths": ["top.txt", "ok.txt", "../outside/secret.txt"]}),
    );
    assert_eq!(rule(&denied), Some(DenyRule::Escapes), "the third element");
    for wrong in [json!({"paths": "top.txt"}), json!({"paths": ["a", 1]})] {
        let denied = evaluate(&jail, &stamp, &wrong);
        assert_eq!(rule(&denied), Some(DenyRule::PathNotString), "{wrong}");
    }
    assert_eq!(
        evaluate(&jail, &stamp, &json!({"paths": []})),
        ask("update"),
        "an empty array designates nothing"
    );
}

#[test]
fn scoped_roots_are_chosen_by_the_naming_argument() {
    let (tree, workspace) = setup();
    let skill = tree.workspace().join("skills/pdf");
    std::fs::create_dir_all(skill.join("scripts")).unwrap();
    std::fs::write(skill.join("scripts/run.py"), "print()").unwrap();
    let mut gate = Gate::new(Arc::new(workspace));
    gate.add_root(
        pp_types::PathRoot::key("skill", "pdf"),
        Arc::new(pp_gate::Jail::new(&skill).unwrap()),
    );
    let mut read = spec("read_skill_file", Some("skill:read"), &["path"]);
    read.root = pp_types::PathRoot::Scoped {
        scope: "skill".into(),
        key_param: "name".into(),
    };
    let decide = |arguments: Value| gate.evaluate(&read, &arguments);
    assert_eq!(
        decide(json!({"name": "pdf", "path": "scripts/run.py"})),
        Decision::Allow
    );
    // `..` leaves the skill's folder even though it stays inside the workspace.
    assert_eq!(
        rule(&decide(
            json!({"name": "pdf", "path": "../pdf/scripts/run.py"})
        )),
        Some(DenyRule::Escapes)
    );
    assert_eq!(
        rule(&decide(json!({"name": "pdf", "path": "/etc/passwd"}))),
        Some(DenyRule::AbsolutePath)
    );
    assert_eq!(
        rule(&decide(json!({"name": "nope", "path": "x"}))),
        Some(DenyRule::UnknownRoot)
    );
    assert_eq!(
        rule(&decide(json!({"name": 7, "path": "x"}))),
        Some(DenyRule::UnknownRoot),
        "a root named by a non-string is unknown"
    );
    assert_eq!(
        decide(json!({"name": "nope"})),
        Decision::Allow,
        "no path, nothing to check: the tool reports the unknown name"
    );
}

#[cfg(unix)]
#[test]
fn a_link_out_of_a_scoped_root_is_a_denial() {
    let (tree, workspace) = setup();
    let skill = tree.workspace().join("skill");
    std::fs::create_dir_all(&skill).unwrap();
    std::os::unix::fs::symlink("../top.txt", skill.join("up")).unwrap();
    let mut gate = Gate::new(Arc::new(workspace));
    gate.add_root("skill:s", Arc::new(pp_gate::Jail::new(&skill).unwrap()));
    let mut read = spec("read_skill_file", Some("skill:read"), &["path"]);
    read.root = pp_types::PathRoot::Scoped {
        scope: "skill".into(),
        key_param: "name".into(),
    };
    let decision = gate.evaluate(&read, &json!({"name": "s", "path": "up"}));
    assert_eq!(rule(&decision), Some(DenyRule::SymlinkEscape));
}

mod arrays {
    use proptest::prelude::*;

    use super::*;

    const PARTS: [&str; 7] = ["ok.txt", "a/b", "../x", "/abs", "a/../../y", "c\\d", ""];

    proptest! {
        /// An array is denied exactly when one of its elements alone would be.
        #[test]
        fn an_array_is_as_strict_as_its_worst_element(
            picks in proptest::collection::vec(0..PARTS.len(), 0..6)
        ) {
            let (_tree, jail) = setup();
            let one = spec("one", Some("file:read"), &["path"]);
            let many = spec("many", Some("file:read"), &["paths[]"]);
            let paths: Vec<&str> = picks.iter().map(|&i| PARTS[i]).collect();
            let first_denial = paths
                .iter()
                .map(|path| evaluate(&jail, &one, &json!({ "path": path })))
                .find(|decision| matches!(decision, Decision::Deny(_)));
            let decision = evaluate(&jail, &many, &json!({ "paths": paths }));
            prop_assert_eq!(decision, first_denial.unwrap_or(Decision::Allow));
        }
    }
}
