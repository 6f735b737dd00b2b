//! Every command ends quietly (exit 0, no panic, no backtrace) when the reader of its
//! output goes away, as in `pocketpilot tasks list | head`.

use std::process::Stdio;

use pp_test_support::TempTree;

use crate::pocketpilot_in;

#[test]
fn a_closed_stdout_ends_commands_quietly() {
    let tree = TempTree::new();
    let home = tree.base().join("home");
    let commands: &[&[&str]] = &[
        &["tasks", "list"],
        &["tasks", "list", "--json"],
        &["approvals", "list"],
        &["approvals", "list", "--json"],
        &["token", "path"],
    ];
    for args in commands {
        let (reader, writer) = std::io::pipe().unwrap();
        // The reader is gone before the command writes a byte.
        drop(reader);
        let output = pocketpilot_in(&home)
            .args(*args)
            .current_dir(tree.workspace())
            .env("RUST_BACKTRACE", "1")
            .stdin(Stdio::null())
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{args:?}: {stderr}");
        assert_eq!(stderr, "", "{args:?} printed on stderr");
    }
}

#[test]
fn a_closed_stderr_never_panics_a_run() {
    let tree = TempTree::new();
    let script = crate::write_script(
        tree.base(),
        &serde_json::json!([
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "x"}}]},
            {"content": "done"}
        ]),
    );
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let output = pocketpilot_in(&tree.base().join("home"))
        .arg("run")
        .arg("--workspace")
        .arg(tree.workspace())
        .arg("--script")
        .arg(script)
        .arg("write a")
        .env("RUST_BACKTRACE", "1")
        .stdin(Stdio::null())
        .stderr(writer)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(3),
        "waiting for approval: {stdout}"
    );
    let pending: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(pending["status"], "waiting_approval");
    assert!(!tree.exists("a.txt"));
}

/// `set -o pipefail; pocketpilot run … | head`: a reader that closed the pipe early does
/// not turn "waiting for approval" (exit 3) into success; writing stops, the code stays.
#[test]
fn a_closed_stdout_keeps_runs_waiting_exit_code() {
    let tree = TempTree::new();
    let script = crate::write_script(
        tree.base(),
        &serde_json::json!([
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "x"}}]},
            {"content": "done"}
        ]),
    );
    for json in [false, true] {
        let (reader, writer) = std::io::pipe().unwrap();
        // The reader is gone before `run` writes a byte.
        drop(reader);
        let mut command = pocketpilot_in(&tree.base().join("home"));
        command
            .arg("run")
            .arg("--workspace")
            .arg(tree.workspace())
            .arg("--script")
            .arg(&script);
        if json {
            command.arg("--json");
        }
        let output = command
            .arg("write a")
            .env("RUST_BACKTRACE", "1")
            .stdin(Stdio::null())
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(3), "--json {json}: {stderr}");
        assert!(stderr.contains("waiting for approval"), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(!tree.exists("a.txt"));
    }
}
