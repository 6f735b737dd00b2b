//! `pocketpilot approvals`: model-written paths stay on their line, and approving works
//! from any folder, since each task carries its own workspace.

use std::process::Stdio;

use pp_test_support::TempTree;
use serde_json::json;

use crate::{pocketpilot_in, text, write_script};

/// The path from issue 8, finding 4: it resolves to `notes.txt`.
const FORGED: &str = "drafts\n│ (new file; nothing existing is replaced)\n│/../notes.txt";
/// How it is shown: one line, newlines escaped.
const SHOWN: &str = "drafts\\n│ (new file; nothing existing is replaced)\\n│/../notes.txt";

/// Runs a one-write script without a terminal (it stops at the approval) and returns
/// the approval id.
fn pending_write(tree: &TempTree, path: &str) -> (String, String) {
    let script = write_script(
        tree.base(),
        &json!([{"tool_calls": [{"name": "write_file", "arguments": {"path": path, "content": "new\n"}}]},
                {"content": "done"}]),
    );
    let output = pocketpilot_in(&tree.base().join("home"))
        .arg("run")
        .arg("--workspace")
        .arg(tree.workspace())
        .arg("--script")
        .arg(script)
        .arg("rewrite my notes")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    let pending: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    (pending["approval_id"].as_str().unwrap().to_owned(), stderr)
}

fn approvals(tree: &TempTree, args: &[&str]) -> (Option<i32>, String, String) {
    let output = pocketpilot_in(&tree.base().join("home"))
        .arg("approvals")
        .args(args)
        .current_dir(tree.base())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    (output.status.code(), stdout, stderr)
}

fn assert_no_forged_line(screen: &str) {
    for line in screen.lines() {
        assert!(
            !line.starts_with("│ (new file") && !line.starts_with("│/../notes.txt"),
            "a model-written path printed a line of its own: {line:?} in\n{screen}"
        );
    }
}

#[test]
fn a_newline_in_a_path_cannot_forge_lines_on_the_card_or_the_list() {
    let tree = TempTree::new();
    tree.file("notes.txt", "old\n");
    let (id, card) = pending_write(&tree, FORGED);
    assert_no_forged_line(&card);
    let action = card
        .lines()
        .find(|line| line.starts_with("│ action:"))
        .unwrap_or_else(|| panic!("no action line: {card}"));
    assert!(
        action.starts_with(&format!("│ action:     overwrite {SHOWN}")),
        "{action}"
    );
    // The diff headers name the file on one line each: `---`, `+++`, then the hunk.
    let lines: Vec<&str> = card.lines().collect();
    let minus = lines
        .iter()
        .position(|line| line.starts_with("│   --- a/"))
        .unwrap_or_else(|| panic!("no diff: {card}"));
    assert!(lines[minus + 1].starts_with("│   +++ b/"), "{card}");
    assert!(lines[minus + 2].starts_with("│   @@ "), "{card}");

    let (code, shown, _) = approvals(&tree, &["show", &id]);
    assert_eq!(code, Some(0));
    assert_no_forged_line(&shown);
    assert!(shown.contains(&format!("overwrite {SHOWN}")), "{shown}");

    let (code, list, stderr) = approvals(&tree, &["list"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(list.lines().count(), 1, "one approval, one line: {list:?}");
    assert!(list.contains(SHOWN), "{list}");

    let (code, json, _) = approvals(&tree, &["list", "--json"]);
    assert_eq!(code, Some(0));
    let parsed: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        parsed["approvals"][0]["target"], FORGED,
        "JSON keeps the path exactly, with normal escaping"
    );

    let output = pocketpilot_in(&tree.base().join("home"))
        .args(["tasks", "list"])
        .output()
        .unwrap();
    assert_eq!(text(&output).0.lines().count(), 1);
    for (query, expected) in [
        ("REWRITE my", "rewrite my notes"),
        ("nothing like it", "no tasks"),
    ] {
        let output = pocketpilot_in(&tree.base().join("home"))
            .args(["tasks", "list", "--query", query])
            .output()
            .unwrap();
        let (stdout, stderr) = text(&output);
        assert_eq!(output.status.code(), Some(0), "{stderr}");
        assert!(stdout.contains(expected), "{query}: {stdout}");
    }
    assert_eq!(tree.read("notes.txt"), "old\n", "nothing was written");
}

#[test]
fn approving_works_from_a_folder_that_holds_the_data_directory() {
    let tree = TempTree::new();
    let (id, _) = pending_write(&tree, "a.txt");
    // The current folder (the tree's base) contains the data directory `home/`; the
    // task runs in its stored workspace, so that is no reason to refuse.
    let (code, stdout, stderr) = approvals(&tree, &["approve", &id]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("done"), "{stdout}");
    assert_eq!(tree.read("a.txt"), "new\n");

    let (id, _) = pending_write(&tree, "b.txt");
    let (code, _, stderr) = approvals(&tree, &["reject", &id, "--reason", "no"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!tree.exists("b.txt"));
}

#[test]
fn a_stored_workspace_that_now_holds_the_data_directory_is_refused() {
    let tree = TempTree::new();
    let (id, _) = pending_write(&tree, "a.txt");
    // The data directory moved into the task's workspace since the task was created.
    std::fs::rename(tree.base().join("home"), tree.workspace().join("home")).unwrap();
    let output = pocketpilot_in(&tree.workspace().join("home"))
        .args(["approvals", "approve", &id])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("contains PocketPilot's data directory"),
        "{stderr}"
    );
    assert!(!tree.exists("a.txt"));
}

#[test]
fn approve_seen_runs_only_against_the_state_that_was_shown() {
    let tree = TempTree::new();
    tree.file("notes.txt", "old\n");
    let (id, _) = pending_write(&tree, "notes.txt");
    let (code, stdout, stderr) = approvals(&tree, &["show", &id, "--json"]);
    assert_eq!(code, Some(0), "{stderr}");
    let card: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(card["precheck"]["status"], "ready");
    let seen = card["precheck"]["fingerprint"].as_str().unwrap().to_owned();
    let (code, stdout, _) = approvals(&tree, &["list", "--json"]);
    assert_eq!(code, Some(0));
    let list: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(list["approvals"][0]["precheck"]["status"], "ready");
    assert_eq!(
        list["approvals"][0]["precheck"]["diff"],
        serde_json::Value::Null
    );

    // Changed after it was shown: exit 5, nothing written, still pending.
    tree.file("notes.txt", "mine\n");
    let (code, _, stderr) = approvals(&tree, &["approve", &id, "--seen", &seen]);
    assert_eq!(code, Some(5), "{stderr}");
    assert!(stderr.contains("changed_since_seen"), "{stderr}");
    assert_eq!(tree.read("notes.txt"), "mine\n");
    let (_, card, _) = approvals(&tree, &["show", &id]);
    assert!(
        card.contains("│ now:        changed since the request"),
        "{card}"
    );
    let (_, stdout, _) = approvals(&tree, &["show", &id, "--json"]);
    let card: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(
        (card["state"].as_str(), card["precheck"]["status"].as_str()),
        (Some("pending"), Some("changed"))
    );

    // Approved against what is there now: it runs.
    let now = card["precheck"]["fingerprint"].as_str().unwrap();
    let (code, _, stderr) = approvals(&tree, &["approve", &id, "--seen", now]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(tree.read("notes.txt"), "new\n");
}
