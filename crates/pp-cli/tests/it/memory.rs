//! `pocketpilot memory show|edit|set`: the operator's road to `memory.md`.

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use pp_test_support::TempTree;
use serde_json::{Value, json};

use crate::{pocketpilot_in, text};

fn home(tree: &TempTree) -> PathBuf {
    tree.base().join("home")
}

fn memory(tree: &TempTree, args: &[&str], visual: Option<&Path>) -> (Option<i32>, String, String) {
    let mut command = pocketpilot_in(&home(tree));
    command.arg("memory").args(args).stdin(Stdio::null());
    command.env_remove("EDITOR");
    match visual {
        Some(script) => command.env("VISUAL", script),
        None => command.env_remove("VISUAL"),
    };
    let output = command.output().unwrap();
    let (stdout, stderr) = text(&output);
    (output.status.code(), stdout, stderr)
}

fn show_json(tree: &TempTree) -> Value {
    let (code, stdout, stderr) = memory(tree, &["show", "--json"], None);
    assert_eq!(code, Some(0), "{stderr}");
    serde_json::from_str(&stdout).unwrap()
}

/// An executable shell script standing in for the editor.
fn editor(tree: &TempTree, name: &str, body: &str) -> PathBuf {
    let path = tree.base().join(name);
    std::fs::write(&path, format!("#!/bin/sh\nset -e\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[test]
fn show_json_set_from_a_file_and_from_stdin() {
    let tree = TempTree::new();
    assert_eq!(
        show_json(&tree),
        json!({"content": "", "version": "absent"})
    );
    let notes = tree.base().join("notes.md");
    std::fs::write(&notes, "likes tea\n").unwrap();
    let (code, stdout, stderr) = memory(&tree, &["set", &format!("@{}", notes.display())], None);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout, "memory saved (10 bytes)\n");
    let shown = show_json(&tree);
    assert_eq!(shown["content"], "likes tea\n");
    assert!(shown["version"].as_str().unwrap().starts_with("sha256:"));
    assert_eq!(
        std::fs::read_to_string(home(&tree).join("memory.md")).unwrap(),
        "likes tea\n"
    );
    let (code, stdout, _) = memory(&tree, &["show"], None);
    assert_eq!((code, stdout.as_str()), (Some(0), "likes tea\n"));

    let mut child = pocketpilot_in(&home(&tree))
        .args(["memory", "set", "@-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"from stdin\n")
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{output:?}");
    assert_eq!(show_json(&tree)["content"], "from stdin\n");

    let (code, _, stderr) = memory(&tree, &["set", "notes.md"], None);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("expected @FILE or @-"), "{stderr}");
}

#[test]
fn edit_saves_what_the_editor_wrote() {
    let tree = TempTree::new();
    std::fs::create_dir_all(home(&tree)).unwrap();
    std::fs::write(home(&tree).join("memory.md"), "one\n").unwrap();
    let script = editor(&tree, "append.sh", "printf 'two\\n' >> \"$1\"");
    let (code, stdout, stderr) = memory(&tree, &["edit"], Some(&script));
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout, "memory saved (8 bytes)\n");
    assert_eq!(show_json(&tree)["content"], "one\ntwo\n");

    let unchanged = editor(&tree, "noop.sh", "true");
    let (code, stdout, _) = memory(&tree, &["edit"], Some(&unchanged));
    assert_eq!((code, stdout.as_str()), (Some(0), "memory unchanged\n"));
}

#[test]
fn edit_runs_an_editor_setting_with_arguments_through_the_shell() {
    let tree = TempTree::new();
    std::fs::create_dir_all(home(&tree)).unwrap();
    std::fs::write(home(&tree).join("memory.md"), "likes tea\n").unwrap();
    // As `code --wait` would be: a program and its own arguments in one setting.
    let (code, stdout, stderr) = memory(&tree, &["edit"], Some(Path::new("sed -i s/tea/coffee/")));
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout, "memory saved (13 bytes)\n");
    assert_eq!(show_json(&tree)["content"], "likes coffee\n");

    let (code, _, stderr) = memory(&tree, &["edit"], Some(Path::new("no-such-editor --wait")));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("`no-such-editor --wait` was not found"),
        "{stderr}"
    );
    assert_eq!(show_json(&tree)["content"], "likes coffee\n");
}

#[test]
fn edit_is_a_conflict_when_the_memory_changed_meanwhile_and_keeps_the_text() {
    let tree = TempTree::new();
    std::fs::create_dir_all(home(&tree)).unwrap();
    let file = home(&tree).join("memory.md");
    std::fs::write(&file, "base\n").unwrap();
    // The editor writes the person's text, and meanwhile someone else saves.
    let script = editor(
        &tree,
        "racy.sh",
        &format!(
            "printf 'mine\\n' > \"$1\"\nprintf 'theirs\\n' > '{}'",
            file.display()
        ),
    );
    let (code, stdout, stderr) = memory(&tree, &["edit"], Some(&script));
    assert_eq!(code, Some(5), "{stdout}{stderr}");
    assert!(stderr.contains("nothing was saved"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "theirs\n");
    // The message names the file holding the edited text.
    let kept = stderr
        .split_whitespace()
        .find(|word| word.contains("pocketpilot-memory-"))
        .map(|word| word.trim_end_matches([':', '.', ',']))
        .unwrap();
    assert_eq!(std::fs::read_to_string(kept).unwrap(), "mine\n");
    std::fs::remove_file(kept).unwrap();
}

#[test]
fn run_offers_memory_write_which_waits_for_approval_then_writes_the_memory() {
    let tree = TempTree::new();
    let script = crate::write_script(
        tree.base(),
        &json!([{"tool_calls": [{"name": "memory_write",
                                 "arguments": {"mode": "append", "content": "likes tea\n"}}]},
                {"content": "remembered"}]),
    );
    let output = pocketpilot_in(&home(&tree))
        .arg("run")
        .arg("--workspace")
        .arg(tree.workspace())
        .arg("--script")
        .arg(script)
        .arg("remember that I like tea")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(
        output.status.code(),
        Some(3),
        "waits for approval: {stderr}"
    );
    let pending: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(pending["tool"], "memory_write");
    assert_eq!(pending["capability"], "memory:write");
    assert_eq!(show_json(&tree)["content"], "", "nothing written yet");

    let output = pocketpilot_in(&home(&tree))
        .args([
            "approvals",
            "approve",
            pending["approval_id"].as_str().unwrap(),
        ])
        .current_dir(tree.base())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let (_, stderr) = text(&output);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(show_json(&tree)["content"], "likes tea\n");
}
