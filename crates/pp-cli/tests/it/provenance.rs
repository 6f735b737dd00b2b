//! `pocketpilot approvals show --json` and `list --json` carry the card's `provenance`.

use std::process::Stdio;

use pp_test_support::TempTree;
use serde_json::{Value, json};

use crate::{pocketpilot_in, text, write_script};

fn approvals_json(tree: &TempTree, args: &[&str]) -> Value {
    let output = pocketpilot_in(&tree.base().join("home"))
        .arg("approvals")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    serde_json::from_str(stdout.trim()).unwrap()
}

#[test]
fn the_json_card_says_what_the_task_read_before_the_write() {
    let tree = TempTree::new();
    tree.file("notes.txt", "old\n");
    let script = write_script(
        tree.base(),
        &json!([
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
            {"content": "Rewriting the notes.",
             "tool_calls": [{"name": "write_file", "arguments": {"path": "notes.txt", "content": "new\n"}}]},
            {"content": "done"}
        ]),
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
    let pending: Value = serde_json::from_str(stdout.trim()).unwrap();
    let id = pending["approval_id"].as_str().unwrap();

    let expected = json!({
        "model_text": "Rewriting the notes.",
        "inputs": [
            {"kind": "file_read", "source": "notes.txt", "untrusted": true},
            {"kind": "prompt", "source": "operator", "untrusted": false},
        ],
        "more": 0,
        "untrusted_input": true,
    });
    let card = approvals_json(&tree, &["show", id, "--json"]);
    assert_eq!(card["provenance"], expected);
    let list = approvals_json(&tree, &["list", "--json"]);
    assert_eq!(list["approvals"][0]["provenance"], expected);
}
