//! `pocketpilot users add|list|grant|revoke|rotate`: the token is printed once and never
//! listed, grants name configured workspaces, rotation replaces the token, and mistakes
//! are usage errors (exit 2). And `--user NAME` (team mode): commands that act for a
//! person pass the API's role and grant checks as the user their token proves.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use pp_test_support::TempTree;
use serde_json::Value;

use crate::{Wait as _, pocketpilot_in, text};

/// A config file with the workspaces `finance` (default) and `research`.
fn config(tree: &TempTree) -> PathBuf {
    let research = tree.base().join("research");
    std::fs::create_dir_all(&research).unwrap();
    let file = tree.base().join("team.toml");
    std::fs::write(
        &file,
        format!(
            "[team]\nenabled = true\n\n[[workspace]]\nname = \"finance\"\npath = {:?}\n\
             default = true\n\n[[workspace]]\nname = \"research\"\npath = {:?}\n",
            tree.workspace().display().to_string(),
            research.display().to_string()
        ),
    )
    .unwrap();
    file
}

fn users(home: &Path, config: &Path, args: &[&str]) -> Output {
    let mut command = pocketpilot_in(home);
    command.arg("--config").arg(config).arg("users").args(args);
    command.output().unwrap()
}

fn json_of(output: &Output) -> Value {
    assert!(output.status.success(), "{:?}", text(output));
    serde_json::from_str(text(output).0.trim()).unwrap_or_else(|_| panic!("{}", text(output).0))
}

#[test]
fn users_are_added_listed_granted_revoked_and_rotated() {
    let tree = TempTree::new();
    let home = tree.base().join("home");
    let config = config(&tree);

    let added = users(&home, &config, &["add", "alice", "--role", "owner"]);
    let (out, err) = text(&added);
    assert!(added.status.success(), "{:?}", text(&added));
    assert!(out.contains("user alice (owner) added"), "{out}");
    // Which store: here this data directory's own SQLite file (docs/team.md).
    assert_eq!(
        err.trim(),
        format!("store: SQLite {}", home.join("pocketpilot.db").display()),
        "{err}"
    );
    let token = out
        .lines()
        .find_map(|line| line.strip_prefix("token: "))
        .unwrap()
        .to_owned();
    assert!(token.starts_with("ppu_") && token.len() == 68, "{token}");

    let bob = json_of(&users(
        &home,
        &config,
        &["add", "bob", "--role", "approver", "--json"],
    ));
    assert_eq!(bob["user"]["name"], "bob");
    assert_eq!(bob["user"]["role"], "approver");
    let bob_token = bob["token"].as_str().unwrap().to_owned();

    let granted = users(&home, &config, &["grant", "bob", "finance"]);
    assert!(granted.status.success(), "{:?}", text(&granted));
    assert!(
        users(&home, &config, &["grant", "bob", "research"])
            .status
            .success()
    );
    let revoked = users(&home, &config, &["revoke", "bob", "research"]);
    assert!(revoked.status.success(), "{:?}", text(&revoked));
    assert!(text(&revoked).0.contains("bob no longer works in research"));

    let listed = json_of(&users(&home, &config, &["list", "--json"]));
    let list = listed["users"].as_array().unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["name"], "alice");
    assert_eq!(list[0]["role"], "owner");
    assert_eq!(list[1]["name"], "bob");
    assert_eq!(list[1]["workspaces"], serde_json::json!(["finance"]));
    let listed_text = text(&users(&home, &config, &["list"])).0;
    assert!(
        listed_text.contains("bob    approver  finance"),
        "{listed_text}"
    );
    for shown in [listed.to_string(), listed_text] {
        assert!(!shown.contains(&token) && !shown.contains(&bob_token));
    }

    let rotated = json_of(&users(&home, &config, &["rotate", "bob", "--json"]));
    let new_token = rotated["token"].as_str().unwrap();
    assert!(new_token.starts_with("ppu_"));
    assert_ne!(new_token, bob_token);
    assert_eq!(rotated["logins_ended"], 0);
}

#[test]
fn mistakes_are_usage_errors() {
    let tree = TempTree::new();
    let home = tree.base().join("home");
    let config = config(&tree);
    assert!(
        users(&home, &config, &["add", "carol", "--role", "member"])
            .status
            .success()
    );
    for (args, says) in [
        (
            vec!["add", "dave", "--role", "admin"],
            "unknown role `admin`",
        ),
        (vec!["add", "Dave", "--role", "member"], "invalid user name"),
        (vec!["add", "carol", "--role", "viewer"], "already exists"),
        (
            vec!["grant", "nobody", "finance"],
            "user `nobody` not found",
        ),
        (
            vec!["grant", "carol", "nowhere"],
            "workspace `nowhere` not found",
        ),
        (
            vec!["revoke", "carol", "nowhere"],
            "workspace `nowhere` not found",
        ),
        (vec!["rotate", "nobody"], "user `nobody` not found"),
    ] {
        let output = users(&home, &config, &args);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {:?}",
            text(&output)
        );
        assert!(
            text(&output).1.contains(says),
            "{args:?}: {:?}",
            text(&output)
        );
    }
}

/// A team's data directory: `carol` (approver) and `vic` (viewer) on `finance`, `olga`
/// the owner; their tokens by name.
fn team(
    tree: &TempTree,
) -> (
    PathBuf,
    PathBuf,
    std::collections::BTreeMap<&'static str, String>,
) {
    let home = tree.base().join("home");
    let config = config(tree);
    let mut tokens = std::collections::BTreeMap::new();
    for (name, role) in [("olga", "owner"), ("carol", "approver"), ("vic", "viewer")] {
        let added = json_of(&users(
            &home,
            &config,
            &["add", name, "--role", role, "--json"],
        ));
        tokens.insert(name, added["token"].as_str().unwrap().to_owned());
        if role != "owner" {
            assert!(
                users(&home, &config, &["grant", name, "finance"])
                    .status
                    .success()
            );
        }
    }
    (home, config, tokens)
}

/// A task of olga's in `finance` that waits for approval of one write of `file`,
/// created and run to its approval by a service on the same database (as `serve` would);
/// the approval id.
fn pending_write(tree: &TempTree, home: &Path, file: &str) -> String {
    use pp_tasks::{CreateTask, ModelSource, TaskService, TaskSettings, Workspace, Workspaces};

    let script = serde_json::json!([
        {"tool_calls": [{"name": "write_file", "arguments": {"path": file, "content": "new\n"}}]},
        {"content": "done"}
    ]);
    let service = TaskService::new(
        pp_store::Store::open(&home.join("pocketpilot.db")).unwrap(),
        TaskSettings::default(),
        Workspaces {
            list: vec![Workspace {
                name: "finance".into(),
                path: tree.workspace().to_owned(),
            }],
            default: Some("finance".into()),
        },
        ModelSource::Scripted,
    );
    async {
        let request = CreateTask {
            prompt: format!("write {file}"),
            workspace: Some("finance".into()),
            actor: pp_types::Actor::Operator,
            script: Some(script),
        };
        let task = service
            .create_as_user(request, Some("olga".into()))
            .await
            .unwrap();
        let task = service.run_now(&task.id).await.unwrap();
        assert_eq!(task.state, pp_types::TaskState::WaitingApproval, "{task:?}");
        let approval = service
            .approvals_for_task(&task.id)
            .await
            .unwrap()
            .pop()
            .unwrap();
        approval.id.to_string()
    }
    .wait()
}

/// `pocketpilot --config CONFIG ARGS…` with `POCKETPILOT_TOKEN` set to `token`:
/// (exit code, stderr).
fn acting(home: &Path, config: &Path, token: Option<&str>, args: &[&str]) -> (Option<i32>, String) {
    let mut command = pocketpilot_in(home);
    // From the workspace folder (`run` and `chat` work there), which `home` sits beside.
    let workspace = home.parent().unwrap().join("workspace");
    command
        .arg("--config")
        .arg(config)
        .args(args)
        .current_dir(workspace)
        .stdin(Stdio::null());
    if let Some(token) = token {
        command.env("POCKETPILOT_TOKEN", token);
    }
    let output = command.output().unwrap();
    (output.status.code(), text(&output).1)
}

fn approval_state(home: &Path, id: &str) -> (String, Option<String>) {
    let store = pp_store::Store::open(&home.join("pocketpilot.db")).unwrap();
    let approval = store
        .approval(&pp_types::ApprovalId(id.to_owned()))
        .wait()
        .unwrap();
    (
        approval.state.as_str().to_owned(),
        approval.resolved_by_user,
    )
}

/// Finding 10: `approvals approve|reject` in team mode act for `--user NAME`, proven by
/// the user's token (POCKETPILOT_TOKEN or a 0600 --token-file), with the API's role and
/// grant checks; the approval and its audit row name the user.
#[test]
fn approvals_act_for_the_user_the_token_proves() {
    let tree = TempTree::new();
    let (home, config, tokens) = team(&tree);
    let id = pending_write(&tree, &home, "a.txt");
    let pending = || approval_state(&home, &id);

    // No --user in team mode: a usage error.
    let (code, stderr) = acting(&home, &config, None, &["approvals", "approve", &id]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--user NAME"), "{stderr}");
    // A token that is not carol's (vic's), or none at all.
    let (code, stderr) = acting(
        &home,
        &config,
        Some(&tokens["vic"]),
        &["approvals", "approve", &id, "--user", "carol"],
    );
    assert_eq!(code, Some(6), "{stderr}");
    assert!(
        stderr.contains("not a valid token of user `carol`"),
        "{stderr}"
    );
    let (code, stderr) = acting(
        &home,
        &config,
        None,
        &["approvals", "approve", &id, "--user", "carol"],
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("POCKETPILOT_TOKEN"), "{stderr}");
    // A viewer may not decide: refused like the API's 403.
    let (code, stderr) = acting(
        &home,
        &config,
        Some(&tokens["vic"]),
        &["approvals", "reject", &id, "--user", "vic"],
    );
    assert_eq!(code, Some(6), "{stderr}");
    assert!(stderr.contains("forbidden"), "{stderr}");
    // A token file others may read is refused before it is used.
    let loose = tree.base().join("carol.token");
    std::fs::write(&loose, format!("{}\n", tokens["carol"])).unwrap();
    std::fs::set_permissions(&loose, std::fs::Permissions::from_mode(0o644)).unwrap();
    let loose_arg = loose.display().to_string();
    let (code, stderr) = acting(
        &home,
        &config,
        None,
        &[
            "approvals",
            "approve",
            &id,
            "--user",
            "carol",
            "--token-file",
            &loose_arg,
        ],
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("may be read by other users (mode 644)"),
        "{stderr}"
    );
    assert_eq!(
        pending(),
        ("pending".to_owned(), None),
        "nothing was decided"
    );

    // carol, with her token in a private file: approved, and named.
    std::fs::set_permissions(&loose, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (code, stderr) = acting(
        &home,
        &config,
        None,
        &[
            "approvals",
            "approve",
            &id,
            "--user",
            "carol",
            "--token-file",
            &loose_arg,
        ],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(pending(), ("approved".to_owned(), Some("carol".to_owned())));
    assert_eq!(
        std::fs::read_to_string(tree.workspace().join("a.txt")).unwrap(),
        "new\n"
    );
    let store = pp_store::Store::open(&home.join("pocketpilot.db")).unwrap();
    let audit = store
        .list_audit(&pp_store::AuditFilter {
            action: Some("approval_approved".into()),
            ..Default::default()
        })
        .wait()
        .unwrap();
    assert_eq!(audit.len(), 1, "{audit:?}");
    assert_eq!(audit[0].user.as_deref(), Some("carol"));

    // Once finance is revoked, carol decides nothing there any more (POCKETPILOT_TOKEN).
    let next = pending_write(&tree, &home, "b.txt");
    assert!(
        users(&home, &config, &["revoke", "carol", "finance"])
            .status
            .success()
    );
    let (code, stderr) = acting(
        &home,
        &config,
        Some(&tokens["carol"]),
        &["approvals", "reject", &next, "--user", "carol"],
    );
    assert_eq!(code, Some(6), "{stderr}");
    assert!(
        stderr.contains("workspace `finance` is not granted"),
        "{stderr}"
    );
    assert_eq!(approval_state(&home, &next).0, "pending");
    // Reverting and cancelling check the same way: carol may no longer revert the change
    // she approved, a viewer may not cancel; nothing changes.
    let store = pp_store::Store::open(&home.join("pocketpilot.db")).unwrap();
    let first = store
        .approval(&pp_types::ApprovalId(id.clone()))
        .wait()
        .unwrap()
        .task_id;
    let change = store.task_changes(&first).wait().unwrap()[0]
        .change
        .id
        .to_string();
    let (code, stderr) = acting(
        &home,
        &config,
        Some(&tokens["carol"]),
        &["revert", &change, "--user", "carol"],
    );
    assert_eq!(code, Some(6), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(tree.workspace().join("a.txt")).unwrap(),
        "new\n"
    );
    let waiting = store
        .approval(&pp_types::ApprovalId(next.clone()))
        .wait()
        .unwrap()
        .task_id;
    let (code, stderr) = acting(
        &home,
        &config,
        Some(&tokens["vic"]),
        &["tasks", "cancel", waiting.as_str(), "--user", "vic"],
    );
    assert_eq!(code, Some(6), "{stderr}");
    assert_eq!(
        store.task(&waiting).wait().unwrap().state,
        pp_types::TaskState::WaitingApproval
    );
    // The owner still decides.
    let (code, stderr) = acting(
        &home,
        &config,
        Some(&tokens["olga"]),
        &["approvals", "reject", &next, "--user", "olga"],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        approval_state(&home, &next),
        ("rejected".to_owned(), Some("olga".to_owned()))
    );
}

/// Finding 10: in team mode every command that acts for a person refuses to run without
/// `--user` (exit 2), before it changes anything.
#[test]
fn team_mode_commands_that_act_need_a_user() {
    let tree = TempTree::new();
    let (home, config, tokens) = team(&tree);
    let script = tree.base().join("script.json");
    std::fs::write(&script, r#"[{"content": "done"}]"#).unwrap();
    let script = script.display().to_string();
    for args in [
        &["approvals", "approve", "a_1"][..],
        &["approvals", "reject", "a_1"],
        &["tasks", "cancel", "t_1"],
        &["tasks", "retry", "t_1"],
        &["revert", "c_1"],
        &["sessions", "delete", "s_1"],
        &["memory", "set", "@-"],
        &["skills", "remove", "x"],
        &["schedules", "remove", "x"],
        &["channels", "remove", "x"],
        &["run", "--script", &script, "hello"],
        &["chat", "--script", &script],
    ] {
        let (code, stderr) = acting(&home, &config, Some(&tokens["olga"]), args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("--user NAME"), "{args:?}: {stderr}");
    }
    // Owners-only commands refuse an approver (exit 6), like the API's 403.
    for args in [
        &["memory", "set", "@-", "--user", "carol"][..],
        &["skills", "remove", "x", "--user", "carol"],
        &["schedules", "remove", "x", "--user", "carol"],
        &["channels", "remove", "x", "--user", "carol"],
    ] {
        let (code, stderr) = acting(&home, &config, Some(&tokens["carol"]), args);
        assert_eq!(code, Some(6), "{args:?}: {stderr}");
        assert!(stderr.contains("only owners may"), "{args:?}: {stderr}");
    }
}

/// Finding 10: `--user` outside team mode is a usage error (exit 2); without it the
/// commands act as the operator, as before.
#[test]
fn the_user_flag_is_refused_outside_team_mode() {
    let tree = TempTree::new();
    let home = tree.base().join("home");
    let config = tree.base().join("single.toml");
    std::fs::write(&config, "").unwrap();
    for args in [
        &["approvals", "approve", "a_1", "--user", "carol"][..],
        &["tasks", "cancel", "t_1", "--user", "carol"],
        &["revert", "c_1", "--user", "carol"],
        &["memory", "set", "@-", "--user", "carol"],
    ] {
        let (code, stderr) = acting(&home, &config, Some("ppu_x"), args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("--user is for team mode"),
            "{args:?}: {stderr}"
        );
    }
}

/// The audit rows with `action`, oldest first: `(user, target, detail)`.
fn audit_rows(home: &Path, action: &str) -> Vec<(Option<String>, Option<String>, Option<String>)> {
    let store = pp_store::Store::open(&home.join("pocketpilot.db")).unwrap();
    let mut rows: Vec<_> = store
        .list_audit(&pp_store::AuditFilter {
            action: Some(action.into()),
            ..Default::default()
        })
        .wait()
        .unwrap()
        .into_iter()
        .map(|row| {
            assert_eq!(row.actor, pp_types::Actor::Operator);
            (row.user, row.target, row.detail)
        })
        .collect();
    rows.reverse();
    rows
}

/// Item 6: `users remove` ends the user's token and logins and keeps their tasks and
/// audit rows; `users role` changes a role; the last owner can be neither removed nor
/// demoted (exit 5); every `users` change is audited (here as the operator).
#[test]
fn users_are_removed_and_change_roles_and_the_last_owner_stays() {
    let tree = TempTree::new();
    let home = tree.base().join("home");
    let config = config(&tree);
    assert!(
        users(&home, &config, &["add", "olga", "--role", "owner"])
            .status
            .success()
    );
    let bob = json_of(&users(
        &home,
        &config,
        &["add", "bob", "--role", "approver", "--json"],
    ));
    let bob_token = bob["token"].as_str().unwrap().to_owned();
    assert!(
        users(&home, &config, &["grant", "bob", "finance"])
            .status
            .success()
    );
    assert!(
        users(&home, &config, &["revoke", "bob", "finance"])
            .status
            .success()
    );
    assert!(users(&home, &config, &["rotate", "olga"]).status.success());

    // The last owner: refused, nothing changed.
    for args in [&["remove", "olga"][..], &["role", "olga", "member"]] {
        let output = users(&home, &config, args);
        assert_eq!(
            output.status.code(),
            Some(5),
            "{args:?}: {:?}",
            text(&output)
        );
        assert!(
            text(&output).1.contains("`olga` is the last owner"),
            "{:?}",
            text(&output)
        );
    }
    let output = users(&home, &config, &["role", "bob", "boss"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output).1.contains("unknown role `boss`"));
    let output = users(&home, &config, &["remove", "nobody"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output).1.contains("user `nobody` not found"));

    // bob: made owner, then olga can step down, then bob's role and removal.
    let role = json_of(&users(&home, &config, &["role", "bob", "owner", "--json"]));
    assert_eq!(role["user"]["role"], "owner");
    assert_eq!(role["before"], "approver");
    let output = users(&home, &config, &["role", "olga", "viewer"]);
    assert!(output.status.success(), "{:?}", text(&output));
    assert!(text(&output).0.contains("olga is now viewer (was owner)"));

    // A console login of bob's and a task of his, then his removal.
    let store = pp_store::Store::open(&home.join("pocketpilot.db")).unwrap();
    let login = store
        .create_user_login("bob", std::time::Duration::from_secs(600))
        .wait()
        .unwrap();
    let task = store
        .create_task_as(
            pp_store::NewTask {
                prompt: "bob's task".into(),
                workspace: "finance".into(),
                workspace_path: tree.workspace().display().to_string(),
                created_by: pp_types::Actor::Operator,
                origin: None,
                script: None,
            },
            Some("bob"),
        )
        .wait()
        .unwrap();
    let output = users(&home, &config, &["remove", "bob"]);
    assert_eq!(output.status.code(), Some(5), "bob is the last owner now");
    assert!(
        users(&home, &config, &["role", "olga", "owner"])
            .status
            .success()
    );
    let removed = json_of(&users(&home, &config, &["remove", "bob", "--json"]));
    assert_eq!(removed["user"]["name"], "bob");
    assert_eq!(removed["logins_ended"], 1);
    assert_eq!(store.user_by_token(&bob_token).wait().unwrap(), None);
    assert_eq!(store.login_owner(&login).wait().unwrap(), None);
    assert_eq!(
        store
            .task(&task.id)
            .wait()
            .unwrap()
            .created_by_user
            .as_deref(),
        Some("bob"),
        "his task stays"
    );
    let listed = json_of(&users(&home, &config, &["list", "--json"]));
    assert_eq!(listed["users"].as_array().unwrap().len(), 1);

    // Every change is in the ledger, as the operator (no --user), naming whom it changed.
    let operator = |action: &str, expected: &[(&str, &str)]| {
        let rows = audit_rows(&home, action);
        let got: Vec<(String, String)> = rows
            .iter()
            .map(|(user, target, detail)| {
                assert_eq!(user, &None, "{action}");
                (
                    target.clone().unwrap_or_default(),
                    detail.clone().unwrap_or_default(),
                )
            })
            .collect();
        let want: Vec<(String, String)> = expected
            .iter()
            .map(|(target, detail)| ((*target).to_owned(), (*detail).to_owned()))
            .collect();
        assert_eq!(got, want, "{action}");
    };
    operator(
        "user_added",
        &[("olga", "role owner"), ("bob", "role approver")],
    );
    operator("user_granted", &[("bob", "finance")]);
    operator("user_revoked", &[("bob", "finance")]);
    operator(
        "user_token_rotated",
        &[("olga", "0 console login(s) ended")],
    );
    operator(
        "user_role_changed",
        &[
            ("bob", "approver → owner"),
            ("olga", "owner → viewer"),
            ("olga", "viewer → owner"),
        ],
    );
    operator(
        "user_removed",
        &[("bob", "role owner; 1 console login(s) ended")],
    );
}

/// Item 6: with `--user NAME` a `users` command acts for that user, who must be an owner
/// (exit 6 otherwise, nothing changed); the audit rows name them.
#[test]
fn users_commands_for_a_user_need_an_owner_and_name_them() {
    let tree = TempTree::new();
    let (home, config, tokens) = team(&tree);
    let (code, stderr) = acting(
        &home,
        &config,
        Some(&tokens["carol"]),
        &["users", "remove", "vic", "--user", "carol"],
    );
    assert_eq!(code, Some(6), "{stderr}");
    assert!(
        stderr.contains("only owners may change the team's users"),
        "{stderr}"
    );
    let (code, stderr) = acting(
        &home,
        &config,
        Some(&tokens["vic"]),
        &["users", "role", "vic", "owner", "--user", "carol"],
    );
    assert_eq!(code, Some(6), "a token not carol's: {stderr}");
    let listed = json_of(&users(&home, &config, &["list", "--json"]));
    assert_eq!(
        listed["users"].as_array().unwrap().len(),
        3,
        "nothing changed"
    );

    for args in [
        &["users", "role", "vic", "member", "--user", "olga"][..],
        &["users", "grant", "vic", "research", "--user", "olga"],
        &["users", "revoke", "vic", "research", "--user", "olga"],
        &["users", "rotate", "vic", "--user", "olga"],
        &["users", "add", "dora", "--role", "viewer", "--user", "olga"],
        &["users", "remove", "vic", "--user", "olga"],
    ] {
        let (code, stderr) = acting(&home, &config, Some(&tokens["olga"]), args);
        assert_eq!(code, Some(0), "{args:?}: {stderr}");
    }
    for action in [
        "user_role_changed",
        "user_granted",
        "user_revoked",
        "user_token_rotated",
        "user_added",
        "user_removed",
    ] {
        let last = audit_rows(&home, action).pop().unwrap();
        assert_eq!(last.0.as_deref(), Some("olga"), "{action}");
    }
    // The owner may remove themselves while another owner remains, never the last.
    let (code, stderr) = acting(
        &home,
        &config,
        Some(&tokens["olga"]),
        &["users", "remove", "olga", "--user", "olga"],
    );
    assert_eq!(code, Some(5), "{stderr}");
    assert!(stderr.contains("last owner"), "{stderr}");
}

/// Item 7: `users list` prints aligned columns whatever the names' lengths.
#[test]
fn users_list_columns_are_aligned() {
    let tree = TempTree::new();
    let home = tree.base().join("home");
    let config = config(&tree);
    for (name, role) in [
        ("al", "owner"),
        ("bartholomew", "approver"),
        ("cy", "viewer"),
    ] {
        assert!(
            users(&home, &config, &["add", name, "--role", role])
                .status
                .success()
        );
    }
    assert!(
        users(&home, &config, &["grant", "cy", "research"])
            .status
            .success()
    );
    let listed = text(&users(&home, &config, &["list"])).0;
    let lines: Vec<&str> = listed.lines().collect();
    assert_eq!(lines.len(), 3, "{listed}");
    let column = |line: &str, word: &str| line.find(word).unwrap();
    let roles: Vec<usize> = [
        ("al", "owner"),
        ("bartholomew", "approver"),
        ("cy", "viewer"),
    ]
    .iter()
    .zip(&lines)
    .map(|((_, role), line)| column(line, role))
    .collect();
    assert!(roles.iter().all(|at| *at == roles[0]), "{listed}");
    let grants: Vec<usize> = [("al", "(every"), ("bartholomew", "-"), ("cy", "research")]
        .iter()
        .zip(&lines)
        .map(|((_, what), line)| line.rfind(what).unwrap())
        .collect();
    assert!(grants.iter().all(|at| *at == grants[0]), "{listed}");
    assert_eq!(lines[1], "bartholomew  approver  -");
}

/// Item 4: commands that act for a person in team mode name them in the ledger (a
/// cancel, the memory, schedules); schedules are audited in single-user mode too, as
/// the operator.
#[test]
fn cli_actions_name_their_user_and_schedules_are_audited() {
    let tree = TempTree::new();
    let (home, config, tokens) = team(&tree);
    let id = pending_write(&tree, &home, "c.txt");
    let store = pp_store::Store::open(&home.join("pocketpilot.db")).unwrap();
    let task = store
        .approval(&pp_types::ApprovalId(id))
        .wait()
        .unwrap()
        .task_id;
    let olga = Some(tokens["olga"].as_str());
    for args in [
        &["tasks", "cancel", task.as_str(), "--user", "olga"][..],
        &[
            "schedules",
            "add",
            "--name",
            "daily",
            "--cron",
            "0 9 * * *",
            "--prompt",
            "report",
            "--user",
            "olga",
        ],
        &["schedules", "disable", "daily", "--user", "olga"],
        &["schedules", "remove", "daily", "--user", "olga"],
    ] {
        let (code, stderr) = acting(&home, &config, olga, args);
        assert_eq!(code, Some(0), "{args:?}: {stderr}");
    }
    let mut memory = pocketpilot_in(&home);
    memory
        .arg("--config")
        .arg(&config)
        .args(["memory", "set", "@-", "--user", "olga"])
        .env("POCKETPILOT_TOKEN", &tokens["olga"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = memory.spawn().unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), b"remember\n").unwrap();
    drop(child.stdin.take());
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{:?}", text(&output));
    for action in [
        "task_cancelled",
        "schedule_created",
        "schedule_updated",
        "schedule_removed",
        "memory_updated",
    ] {
        let rows = audit_rows(&home, action);
        assert_eq!(rows.len(), 1, "{action}: {rows:?}");
        assert_eq!(rows[0].0.as_deref(), Some("olga"), "{action}");
    }
    assert_eq!(
        audit_rows(&home, "schedule_created")[0].1.as_deref(),
        Some("daily")
    );

    // Single-user mode: the operator's schedule changes are audited, naming no user.
    let single = tree.base().join("single");
    let config = tree.base().join("single.toml");
    std::fs::write(
        &config,
        format!(
            "[[workspace]]\nname = \"main\"\npath = {:?}\ndefault = true\n",
            tree.workspace().display().to_string()
        ),
    )
    .unwrap();
    for args in [
        &[
            "schedules",
            "add",
            "--name",
            "weekly",
            "--cron",
            "0 9 * * 1",
            "--prompt",
            "sum up",
        ][..],
        &["schedules", "edit", "weekly", "--prompt", "sum it up"],
        &["schedules", "run", "weekly"],
        &["schedules", "remove", "weekly"],
    ] {
        let (code, stderr) = acting(&single, &config, None, args);
        assert_eq!(code, Some(0), "{args:?}: {stderr}");
    }
    for action in [
        "schedule_created",
        "schedule_updated",
        "schedule_run",
        "schedule_removed",
    ] {
        let rows = audit_rows(&single, action);
        assert_eq!(rows.len(), 1, "{action}: {rows:?}");
        assert_eq!(rows[0].0, None, "{action}");
        assert_eq!(rows[0].1.as_deref(), Some("weekly"), "{action}");
    }
}

/// Issue 29, item 2: `approvals approve` from a host whose config does not have the
/// task's workspace records the decision for a worker that has it (nothing runs here).
#[test]
fn a_decision_from_a_host_without_the_workspace_is_handed_to_a_worker() {
    let tree = TempTree::new();
    let (home, _config, tokens) = team(&tree);
    let id = pending_write(&tree, &home, "elsewhere.txt");
    let research = tree.base().join("research");
    let other = tree.base().join("other.toml");
    std::fs::write(
        &other,
        format!(
            "[team]\nenabled = true\n\n[[workspace]]\nname = \"research\"\npath = {:?}\n",
            research.display().to_string()
        ),
    )
    .unwrap();
    let (code, stderr) = acting(
        &home,
        &other,
        Some(&tokens["carol"]),
        &["approvals", "approve", &id, "--user", "carol"],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("checked_on: worker"), "{stderr}");
    assert_eq!(
        approval_state(&home, &id),
        ("approved".to_owned(), Some("carol".to_owned()))
    );
    assert!(!tree.exists("elsewhere.txt"), "nothing ran on this host");
}
