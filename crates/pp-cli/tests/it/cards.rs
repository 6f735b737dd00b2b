//! The approval cards of the file operations through the real binary: a move that
//! replaces a file names it with its size, a delete shows its size and first lines, and
//! `tasks show` lists an approved move as `old → new` under "Changes on disk".

use std::process::Stdio;

use pp_test_support::TempTree;
use serde_json::{Value, json};

use crate::{pocketpilot_in, text, write_script};

/// Runs a one-call script without a terminal (it stops at the approval); returns the
/// card (stderr) and the pending approval's JSON line.
fn card_for(tree: &TempTree, call: &Value) -> (String, Value) {
    let script = write_script(
        tree.base(),
        &json!([{"tool_calls": [call]}, {"content": "done"}]),
    );
    let output = pocketpilot_in(&tree.base().join("home"))
        .arg("run")
        .arg("--workspace")
        .arg(tree.workspace())
        .arg("--script")
        .arg(script)
        .arg("tidy the inbox")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(3), "{stdout}\n{stderr}");
    (stderr, serde_json::from_str(stdout.trim()).unwrap())
}

/// The card's lines from `│ action:` to its bottom edge.
fn card_body(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .skip_while(|line| !line.starts_with("│ action:"))
        .take_while(|line| !line.starts_with('└'))
        .collect()
}

#[test]
fn an_overwriting_move_names_the_file_it_replaces_and_tasks_show_lists_the_move() {
    let tree = TempTree::new();
    tree.file("inbox/scan.txt", "ACME invoice\n");
    tree.file("archive/invoice.txt", "older text\n");
    let (card, pending) = card_for(
        &tree,
        &json!({"name": "move_file", "arguments":
            {"from": "inbox/scan.txt", "to": "archive/invoice.txt", "overwrite": true}}),
    );
    assert_eq!(
        card_body(&card),
        [
            "│ action:     move inbox/scan.txt → archive/invoice.txt",
            "│ replaces:   `archive/invoice.txt` (11 B), which is overwritten",
        ],
        "{card}"
    );

    let id = pending["approval_id"].as_str().unwrap();
    let home = tree.base().join("home");
    let output = pocketpilot_in(&home)
        .args(["approvals", "approve", id])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert_eq!(tree.read("archive/invoice.txt"), "ACME invoice\n");

    let task = pending["task_id"].as_str().unwrap();
    let output = pocketpilot_in(&home)
        .args(["tasks", "show", task])
        .output()
        .unwrap();
    let (shown, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        shown.contains("moved       inbox/scan.txt → archive/invoice.txt (13 B)"),
        "{shown}"
    );
}

#[test]
fn a_delete_card_shows_the_size_and_first_lines() {
    let tree = TempTree::new();
    tree.file("old/todo.md", "# Todo\n- [ ] milk\n");
    let (card, pending) = card_for(
        &tree,
        &json!({"name": "delete_file", "arguments": {"path": "old/todo.md"}}),
    );
    assert_eq!(pending["label"], "delete", "{pending}");
    assert_eq!(
        card_body(&card),
        [
            "│ action:     delete old/todo.md",
            "│ size:       18 B",
            "│ first lines of the file (2 lines shown):",
            "│      1 # Todo",
            "│      2 - [ ] milk",
        ],
        "{card}"
    );
}
