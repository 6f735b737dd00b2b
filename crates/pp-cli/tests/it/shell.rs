//! `run_command` end to end through the real binary: the card's command, approve and
//! reject through the task service, and a confined run that cannot read the data
//! directory's token, a file outside the workspace, or reach a loopback server.
//!
//! Where the kernel lacks Landlock the tool is not offered (fail closed): these tests
//! then check only that, with a visible message, and fail under CI (`CI` set).

use std::io::Read;
use std::net::TcpListener;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use pp_test_support::TempTree;
use serde_json::{Value, json};

use crate::{pocketpilot_in, text, write_script};

/// Whether this kernel confines commands; `false` prints why the test is skipped (and
/// panics under CI, where the proofs must run).
#[expect(
    clippy::print_stderr,
    reason = "a skipped proof says so where the test output shows it"
)]
pub(crate) fn landlock_or_skip(test: &str) -> bool {
    let support = pp_sandbox::probe();
    if support.usable() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI is set but this kernel has no usable Landlock ({}): {test} must run in CI",
        support.describe()
    );
    eprintln!("SKIPPED {test}: {}", support.describe());
    false
}

/// Runs a one-command script without a terminal (it stops at the approval) and returns
/// the pending approval's JSON line.
fn pending_run(tree: &TempTree, arguments: &Value) -> Value {
    let script = write_script(
        tree.base(),
        &json!([{"tool_calls": [{"name": "run_command", "arguments": arguments}]},
                {"content": "done"}]),
    );
    let output = pocketpilot_in(&tree.base().join("home"))
        .arg("run")
        .arg("--workspace")
        .arg(tree.workspace())
        .arg("--script")
        .arg(script)
        .arg("count the lines")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(3), "{stdout}\n{stderr}");
    let action = format!("run {}", arguments["command"].as_str().unwrap());
    assert!(stderr.contains(&action), "{stderr}");
    serde_json::from_str(stdout.trim()).unwrap()
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

/// The stored approval with `id`, as `approvals list --json` gives it.
fn stored_approval(tree: &TempTree, id: &str) -> Value {
    let (code, stdout, stderr) = approvals(tree, &["list", "--json"]);
    assert_eq!(code, Some(0), "{stderr}");
    let list: Value = serde_json::from_str(&stdout).unwrap();
    list["approvals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|approval| approval["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("no approval {id} in {stdout}"))
}

#[test]
fn the_card_shows_the_exact_argv_and_an_approved_command_runs_confined() {
    if !landlock_or_skip("the_card_shows_the_exact_argv_and_an_approved_command_runs_confined") {
        return;
    }
    let tree = TempTree::new();
    tree.file("data.txt", "a\nb\nc\n");
    tree.outside_file("marker.txt", "OUTSIDE-MARKER\n");
    let home = tree.base().join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join("token"), "TOKEN-FROM-THE-DATA-DIR\n").unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&accepted);
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            counter.fetch_add(1, Ordering::SeqCst);
            let _ = stream.read_to_end(&mut Vec::new());
        }
    });
    let script = format!(
        "wc -l < data.txt > count.txt; cat '{}'; cat '{}'; \
         exec 3<>/dev/tcp/127.0.0.1/{port} && echo CONNECTED",
        tree.outside().join("marker.txt").display(),
        home.join("token").display()
    );
    let pending = pending_run(&tree, &json!({"command": "bash", "args": ["-c", script]}));
    assert_eq!(pending["label"], "run");
    let id = pending["approval_id"].as_str().unwrap();
    let command = &stored_approval(&tree, id)["command"];
    assert_eq!(command["argv"], json!(["bash", "-c", script]));
    assert_eq!(command["shell"], true);
    assert_eq!(command["confined"], true);
    assert_eq!(command["cwd"], "");
    assert_eq!(command["limits"]["network"], false);
    assert_eq!(command["limits"]["timeout_secs"], 60);

    let (code, stdout, stderr) = approvals(&tree, &["approve", id]);
    let screen = format!("{stdout}\n{stderr}");
    assert_eq!(code, Some(0), "{screen}");
    assert_eq!(tree.read("count.txt").trim(), "3");
    assert!(!screen.contains("OUTSIDE-MARKER"), "{screen}");
    assert!(!screen.contains("TOKEN-FROM-THE-DATA-DIR"), "{screen}");
    assert!(!screen.contains("CONNECTED"), "{screen}");
    assert!(screen.contains("Permission denied"), "{screen}");
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        0,
        "the command reached the server"
    );
    assert_eq!(
        std::fs::read_to_string(tree.outside().join("marker.txt")).unwrap(),
        "OUTSIDE-MARKER\n"
    );
}

/// The reproduction: a writer detached with `setsid` (and one orphaned by a
/// double fork) is dead within a second of the approved call's end and never writes;
/// the card says what ends the command's processes.
#[test]
fn a_detached_writer_ends_with_its_approved_call() {
    if !landlock_or_skip("a_detached_writer_ends_with_its_approved_call") {
        return;
    }
    let tree = TempTree::new();
    let sleep = format!("2.{:08}", std::process::id());
    let script = format!(
        "setsid sh -c 'sleep {sleep}; echo LATE > late.txt' > /dev/null 2>&1 & \
         (sh -c 'sleep {sleep}; echo LATE > late2.txt' > /dev/null 2>&1 &)"
    );
    let pending = pending_run(&tree, &json!({"command": "sh", "args": ["-c", script]}));
    let id = pending["approval_id"].as_str().unwrap();
    let containment = stored_approval(&tree, id)["command"]["containment"].clone();
    let containment = containment.as_str().unwrap_or_default().to_owned();
    assert!(
        containment.contains("PID namespace") || containment.contains("subreaper"),
        "{containment}"
    );
    let (code, stdout, stderr) = approvals(&tree, &["approve", id]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    let returned = std::time::Instant::now();
    let alive = || {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|entry| std::fs::read(entry.path().join("cmdline")).ok())
            .filter(|cmdline| String::from_utf8_lossy(cmdline).contains(&sleep))
            .count()
    };
    while alive() > 0 {
        assert!(
            returned.elapsed() < std::time::Duration::from_secs(1),
            "a process of the command outlived its call"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // The command's children would write late.txt and late2.txt after their sleeps: a
    // fixed wait past them is the test (that nothing happens), not a wait for an event.
    std::thread::sleep(std::time::Duration::from_secs(3));
    assert!(!tree.exists("late.txt"), "a write nobody approved");
    assert!(!tree.exists("late2.txt"), "a write nobody approved");
}

#[test]
fn a_rejected_command_never_runs() {
    if !landlock_or_skip("a_rejected_command_never_runs") {
        return;
    }
    let tree = TempTree::new();
    let pending = pending_run(
        &tree,
        &json!({"command": "sh", "args": ["-c", "echo ran > ran.txt"]}),
    );
    let id = pending["approval_id"].as_str().unwrap();
    let (code, stdout, stderr) = approvals(&tree, &["reject", id, "--reason", "not now"]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(!tree.exists("ran.txt"));
}

#[test]
fn a_cwd_outside_the_workspace_is_denied_before_any_card() {
    let tree = TempTree::new();
    let script = write_script(
        tree.base(),
        &json!([{"tool_calls": [{"name": "run_command",
                                 "arguments": {"command": "ls", "cwd": "../outside"}}]},
                {"content": "done"}]),
    );
    let output = pocketpilot_in(&tree.base().join("home"))
        .arg("run")
        .arg("--workspace")
        .arg(tree.workspace())
        .arg("--script")
        .arg(script)
        .arg("list")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(!stderr.contains("needs your approval"), "{stderr}");
    if pp_sandbox::probe().usable() {
        assert!(stderr.contains("denied"), "{stderr}");
    }
}

/// A command has no target to pre-check (`precheck` is null), unless it is certain to
/// fail: a working folder that is not there is said before anyone decides.
#[test]
fn a_command_card_is_prechecked_only_for_what_would_fail() {
    let tree = TempTree::new();
    tree.file("data.txt", "a\n");
    let show = |id: &str| {
        let (code, stdout, stderr) = approvals(&tree, &["show", id, "--json"]);
        assert_eq!(code, Some(0), "{stderr}");
        serde_json::from_str::<Value>(&stdout).unwrap()
    };
    let plain = pending_run(&tree, &json!({"command": "cat", "args": ["data.txt"]}));
    let card = show(plain["approval_id"].as_str().unwrap());
    assert_eq!(card["precheck"], Value::Null, "{card}");

    let nowhere = pending_run(
        &tree,
        &json!({"command": "cat", "args": ["data.txt"], "cwd": "gone"}),
    );
    let card = show(nowhere["approval_id"].as_str().unwrap());
    assert_eq!(card["precheck"]["status"], "will_fail", "{card}");
    assert_eq!(
        card["precheck"]["message"],
        "the working directory `gone` does not exist"
    );
}

/// Issue 31: an approved command run through the real sandbox leaves a record — the
/// card said what a revert could not cover, `tasks show` lists each path it changed
/// as a change of `run_command`, and `revert` puts a file back.
#[test]
fn an_approved_commands_changes_are_listed_and_reverted() {
    if !landlock_or_skip("an_approved_commands_changes_are_listed_and_reverted") {
        return;
    }
    let tree = TempTree::new();
    tree.file("edit.txt", "before\n");
    tree.file("gone.txt", "kept\n");
    let pending = pending_run(
        &tree,
        &json!({"command": "sh", "args": ["-c",
            "echo after > edit.txt && rm gone.txt && echo new > made.txt && mkdir out"]}),
    );
    let id = pending["approval_id"].as_str().unwrap();
    let task = pending["task_id"].as_str().unwrap().to_owned();
    let card = stored_approval(&tree, id);
    assert_eq!(
        card["command"]["uncovered"],
        json!({"files": 0, "bytes": 0})
    );
    let (code, stdout, stderr) = approvals(&tree, &["approve", id]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert_eq!(tree.read("edit.txt"), "after\n");

    let output = pocketpilot_in(&tree.base().join("home"))
        .args(["tasks", "show", &task, "--json"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let shown: Value = serde_json::from_str(stdout.trim()).unwrap();
    let changes = shown["changes_on_disk"].as_array().unwrap();
    let mut seen: Vec<(String, String)> = changes
        .iter()
        .map(|change| {
            assert_eq!(change["tool"], "run_command", "{change}");
            (
                change["path"].as_str().unwrap().to_owned(),
                change["kind"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            ("edit.txt".to_owned(), "overwritten".to_owned()),
            ("gone.txt".to_owned(), "deleted".to_owned()),
            ("made.txt".to_owned(), "created".to_owned()),
            ("out".to_owned(), "folder_created".to_owned()),
        ]
    );
    for change in changes {
        let change = change["id"].as_str().unwrap();
        let output = pocketpilot_in(&tree.base().join("home"))
            .args(["revert", change])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let (stdout, stderr) = text(&output);
        assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    }
    assert_eq!(tree.read("edit.txt"), "before\n");
    assert_eq!(tree.read("gone.txt"), "kept\n");
    assert!(!tree.exists("made.txt"));
    assert!(!tree.exists("out"));
}
