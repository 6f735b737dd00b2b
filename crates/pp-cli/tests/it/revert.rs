//! `pocketpilot revert` and the "Changes on disk" list of `tasks show`: exit 5 with the
//! reason when refused, the file untouched; exit 0 and the old content back otherwise.

use std::process::Stdio;

use pp_test_support::TempTree;
use serde_json::{Value, json};

use crate::{pocketpilot_in, text, write_script};

fn cli(tree: &TempTree, args: &[&str]) -> (Option<i32>, String, String) {
    let output = pocketpilot_in(&tree.base().join("home"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    (output.status.code(), stdout, stderr)
}

#[test]
fn tasks_show_lists_changes_and_revert_refuses_then_restores() {
    let tree = TempTree::new();
    tree.file("notes.txt", "old\n");
    let script = write_script(
        tree.base(),
        &json!([{"tool_calls": [{"name": "write_file", "arguments": {"path": "notes.txt", "content": "new\n"}}]},
                {"content": "done"}]),
    );
    let workspace = tree.workspace().to_str().unwrap().to_owned();
    let script = script.to_str().unwrap().to_owned();
    let (code, stdout, stderr) = cli(
        &tree,
        &[
            "run",
            "--workspace",
            &workspace,
            "--script",
            &script,
            "rewrite my notes",
        ],
    );
    assert_eq!(code, Some(3), "{stderr}");
    let pending: Value = serde_json::from_str(stdout.trim()).unwrap();
    let task = pending["task_id"].as_str().unwrap().to_owned();
    let approval = pending["approval_id"].as_str().unwrap().to_owned();
    let (code, _, stderr) = cli(&tree, &["approvals", "approve", &approval]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(tree.read("notes.txt"), "new\n");

    let (code, stdout, stderr) = cli(&tree, &["tasks", "show", &task]);
    assert_eq!(code, Some(0), "{stderr}");
    let (shown, listed) = stdout.split_once("Changes on disk:").unwrap();
    assert!(shown.contains("\"overwritten\": 1"), "{stdout}");
    assert!(
        listed.contains("overwritten notes.txt (4 B)") && listed.contains("revertible"),
        "{stdout}"
    );
    let (code, stdout, _) = cli(&tree, &["tasks", "show", &task, "--json"]);
    assert_eq!(code, Some(0));
    let shown: Value = serde_json::from_str(stdout.trim()).unwrap();
    let change = shown["changes_on_disk"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(shown["changes_on_disk"][0]["kind"], "overwritten");

    // Someone edits the file after the agent: refused, nothing written.
    tree.file("notes.txt", "new\nmine\n");
    let (code, _, stderr) = cli(&tree, &["revert", &change]);
    assert_eq!(code, Some(5), "{stderr}");
    assert!(stderr.contains("changed_since"), "{stderr}");
    assert!(stderr.contains("+mine"), "the diff is shown: {stderr}");
    assert_eq!(tree.read("notes.txt"), "new\nmine\n");

    // Back to the agent's version: the revert restores what it replaced.
    tree.file("notes.txt", "new\n");
    let (code, stdout, stderr) = cli(&tree, &["revert", &change, "--json"]);
    assert_eq!(code, Some(0), "{stderr}");
    let reverted: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(reverted["change"]["kind"], "reverted");
    assert_eq!(tree.read("notes.txt"), "old\n");

    let (code, stdout, _) = cli(&tree, &["revert", &change, "--json"]);
    assert_eq!(code, Some(5));
    let refused: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(refused["error"]["code"], "not_revertible");
}

/// A change through `run` then `approvals approve`; its id.
fn approved_change(tree: &TempTree, script: &Value) -> (String, String) {
    let script = write_script(tree.base(), script);
    let workspace = tree.workspace().to_str().unwrap().to_owned();
    let script = script.to_str().unwrap().to_owned();
    let (code, stdout, stderr) = cli(
        tree,
        &[
            "run",
            "--workspace",
            &workspace,
            "--script",
            &script,
            "do it",
        ],
    );
    assert_eq!(code, Some(3), "{stderr}");
    let pending: Value = serde_json::from_str(stdout.trim()).unwrap();
    let task = pending["task_id"].as_str().unwrap().to_owned();
    let approval = pending["approval_id"].as_str().unwrap().to_owned();
    let (code, _, stderr) = cli(tree, &["approvals", "approve", &approval]);
    assert_eq!(code, Some(0), "{stderr}");
    let (_, stdout, _) = cli(tree, &["tasks", "show", &task, "--json"]);
    let shown: Value = serde_json::from_str(stdout.trim()).unwrap();
    let change = shown["changes_on_disk"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    (task, change)
}

#[test]
fn a_revert_where_the_file_became_a_folder_exits_5_changed_since() {
    let tree = TempTree::new();
    let (_, change) = approved_change(
        &tree,
        &json!([{"tool_calls": [{"name": "write_file", "arguments": {"path": "plan.md", "content": "new\n"}}]},
                {"content": "done"}]),
    );
    std::fs::remove_file(tree.workspace().join("plan.md")).unwrap();
    tree.file("plan.md/inside.txt", "someone's\n");
    let (code, stdout, stderr) = cli(&tree, &["revert", &change, "--json"]);
    assert_eq!(code, Some(5), "{stderr}");
    let refused: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(refused["error"]["code"], "changed_since", "{stdout}");
    let (code, _, stderr) = cli(&tree, &["revert", &change]);
    assert_eq!(code, Some(5), "{stderr}");
    assert!(stderr.contains("changed_since"), "{stderr}");
    assert_eq!(tree.read("plan.md/inside.txt"), "someone's\n");
}

#[test]
fn tasks_cancel_of_a_cancelled_task_exits_0() {
    let tree = TempTree::new();
    let script = write_script(
        tree.base(),
        &json!([{"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "x\n"}}]},
                {"content": "done"}]),
    );
    let workspace = tree.workspace().to_str().unwrap().to_owned();
    let script = script.to_str().unwrap().to_owned();
    let (code, stdout, stderr) = cli(
        &tree,
        &[
            "run",
            "--workspace",
            &workspace,
            "--script",
            &script,
            "write",
        ],
    );
    assert_eq!(code, Some(3), "{stderr}");
    let pending: Value = serde_json::from_str(stdout.trim()).unwrap();
    let task = pending["task_id"].as_str().unwrap().to_owned();
    for _ in 0..2 {
        let (code, stdout, stderr) = cli(&tree, &["tasks", "cancel", &task, "--json"]);
        assert_eq!(code, Some(0), "{stderr}");
        let shown: Value = serde_json::from_str(stdout.trim()).unwrap();
        assert_eq!(
            (shown["state"].clone(), shown["cancel_requested"].clone()),
            (json!("cancelled"), json!(false))
        );
    }
    let (code, stdout, stderr) = cli(&tree, &["tasks", "cancel", &task]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("cancelled"), "{stdout}");
    assert!(!tree.exists("a.txt"));
}
