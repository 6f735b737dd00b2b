//! Ctrl+C while `run`'s task works, in a pseudo-terminal: the task is cancelled and
//! stored so (exit 130), keys typed meanwhile are not echoed, and a second Ctrl+C
//! leaves at once with the cancel recorded, so the next process's recovery ends the
//! task `cancelled` rather than `interrupted`.

use std::path::Path;
use std::time::Duration;

use pp_test_support::TempTree;
use serde_json::{Value, json};

use crate::http::Server;
use crate::models::{FakeServer, config_for, write_config};
use crate::terminal::Terminal;
use crate::{pocketpilot_in, text, write_script};

/// The task's id from `run`'s first line (`task t_… (stored in …)`).
fn task_id(screen: &str) -> String {
    screen
        .split("task ")
        .find_map(|rest| {
            let id = rest.split_whitespace().next()?;
            (id.starts_with("t_") && rest[id.len()..].starts_with(" (stored in"))
                .then(|| id.to_owned())
        })
        .unwrap_or_else(|| panic!("no task line in:\n{screen}"))
}

/// `tasks show ID --json`.
fn shown(home: &Path, id: &str) -> Value {
    let output = pocketpilot_in(home)
        .args(["tasks", "show", id, "--json"])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    serde_json::from_str(stdout.trim()).unwrap()
}

/// `run` in a pseudo-terminal against the fake server, with `args` before the prompt.
fn run_in_terminal(tree: &TempTree, server: &FakeServer, args: &str) -> Terminal {
    let config = write_config(tree, &config_for(server.port));
    let command = format!(
        "exec {} --config '{}' run --workspace '{}' {args} 'think hard'",
        env!("CARGO_BIN_EXE_pocketpilot"),
        config.display(),
        tree.workspace().display()
    );
    Terminal::spawn(
        &command,
        &tree.base().join("home"),
        &[("PP_TEST_KEY", "sk-test")],
    )
}

#[test]
fn ctrl_c_during_a_slow_model_call_cancels_the_task_and_exits_130() {
    let tree = TempTree::new();
    let server = FakeServer::start(
        tree.base(),
        &json!([{"content": "too late", "delay_ms": 60000}]),
    );
    let mut terminal = run_in_terminal(&tree, &server, "");
    terminal.wait_for("waiting for the model", 1);
    terminal.wait_for("Ctrl+C to stop", 1);
    // Keys typed while the model works are neither echoed nor kept. An echo would be on
    // screen before the spinner's next frames (the terminal echoes as the keys arrive);
    // Ctrl+C would throw away an echo still queued, so it comes only after them.
    let frames = terminal.screen().matches("waiting for the model").count();
    terminal.type_text("zq");
    terminal.wait_for("waiting for the model", frames + 5);
    terminal.type_text("\u{3}");
    let (code, screen) = terminal.finish();
    assert_eq!(code, 130, "{screen}");
    assert!(!screen.contains("zq"), "typed keys were echoed:\n{screen}");
    assert!(!screen.contains("^C"), "Ctrl+C was echoed:\n{screen}");
    assert!(!screen.contains("too late"), "{screen}");
    // The summary line, then what became of the task.
    assert!(screen.contains("cancelled · 1 step · "), "{screen}");
    assert!(
        screen.contains("cancelled: cancelled by the operator"),
        "{screen}"
    );
    let id = task_id(&screen);
    let task = shown(&tree.base().join("home"), &id);
    assert_eq!(task["state"], "cancelled", "{task}");
}

#[test]
fn run_json_says_the_task_was_cancelled_by_ctrl_c() {
    let tree = TempTree::new();
    let server = FakeServer::start(
        tree.base(),
        &json!([{"content": "too late", "delay_ms": 60000}]),
    );
    let mut terminal = run_in_terminal(&tree, &server, "--json");
    // No live view with --json: the model has the request once the server logged it
    // (a whole line: the log may be read while it is written).
    let log = tree.base().join("requests.jsonl");
    assert!(
        pp_test_support::wait_until(Duration::from_secs(60), || {
            std::fs::read_to_string(&log).is_ok_and(|text| text.ends_with('\n'))
        }),
        "the run never reached the model"
    );
    terminal.type_text("\u{3}");
    let (code, screen) = terminal.finish();
    assert_eq!(code, 130, "{screen}");
    let result: Value = screen
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line.trim()).ok())
        .find(|line| line["type"] == "result")
        .unwrap_or_else(|| panic!("no result line:\n{screen}"));
    assert_eq!(result["state"], "cancelled", "{result}");
    assert_eq!(result["interrupted"], "task_cancelled", "{result}");
    assert_eq!(result["approval_id"], Value::Null, "{result}");
}

#[test]
fn a_second_ctrl_c_leaves_at_once_and_recovery_ends_the_task_cancelled() {
    let tree = TempTree::new();
    let home = tree.base().join("home");
    // The test build stalls writes to `failpoint-crash-*` half-way for a minute: an
    // approved call that has started and does not end soon.
    let script = write_script(
        tree.base(),
        &json!([
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "failpoint-crash-stop.txt", "content": "never written\n"}}]},
            {"content": "never"}
        ]),
    );
    let command = format!(
        "exec {} run --workspace '{}' --script '{}' 'write it'",
        env!("CARGO_BIN_EXE_pocketpilot"),
        tree.workspace().display(),
        script.display()
    );
    let mut terminal = Terminal::spawn(&command, &home, &[]);
    terminal.answer(&["a"]);
    let stalled = || {
        std::fs::read_dir(tree.workspace()).unwrap().any(|entry| {
            entry
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with(".pocketpilot-tmp-")
        })
    };
    assert!(
        pp_test_support::wait_until(Duration::from_secs(60), stalled),
        "the approved write never started"
    );
    // The first Ctrl+C: the approved call is let finish.
    terminal.type_text("\u{3}");
    terminal.wait_for("an approved call is running: it is let finish", 1);
    // The second, at once: leave without waiting for it.
    terminal.type_text("\u{3}");
    let (code, screen) = terminal.finish();
    assert_eq!(code, 130, "{screen}");
    assert!(
        screen.contains("left at once: the cancel of task"),
        "{screen}"
    );
    let id = task_id(&screen);
    assert_eq!(shown(&home, &id)["state"], "running");
    assert!(!tree.exists("failpoint-crash-stop.txt"));

    // The next process recovers it as cancelled, without waiting for a lease.
    let server = Server::start(&home, tree.workspace(), None);
    let task = server.wait_for_state(&id, "cancelled");
    assert!(
        task["error"].as_str().unwrap().contains("process stopped"),
        "{task}"
    );
}

#[test]
fn run_json_says_ctrl_c_at_a_card_left_the_approval_pending() {
    let tree = TempTree::new();
    let script = write_script(
        tree.base(),
        &json!([
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "x\n"}}]},
            {"content": "never"}
        ]),
    );
    let command = format!(
        "exec {} run --json --workspace '{}' --script '{}' 'write it'",
        env!("CARGO_BIN_EXE_pocketpilot"),
        tree.workspace().display(),
        script.display()
    );
    let mut terminal = Terminal::spawn(&command, &tree.base().join("home"), &[]);
    terminal.answer(&["\u{3}"]);
    let (code, screen) = terminal.finish();
    assert_eq!(code, 130, "{screen}");
    let result: Value = screen
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line.trim()).ok())
        .find(|line| line["type"] == "result")
        .unwrap_or_else(|| panic!("no result line:\n{screen}"));
    assert_eq!(result["state"], "waiting_approval", "{result}");
    assert_eq!(result["interrupted"], "approval_pending", "{result}");
    assert!(result["approval_id"].is_string(), "{result}");
    assert!(!tree.exists("a.txt"));
}
