//! `pocketpilot chat` and `pocketpilot sessions`: a conversation in a pseudo-terminal
//! against an OpenAI-compatible server (the model sees the history across turns), and
//! line mode without a terminal.

use std::process::Stdio;

use pp_test_support::TempTree;
use serde_json::{Value, json};

use crate::models::{FakeServer, config_for, write_config};
use crate::terminal::Terminal;
use crate::{pocketpilot_in, text, write_script};

/// The chat's prompt.
const YOU: &str = "you › ";

/// `pocketpilot chat` in a pseudo-terminal against the fake server.
fn chat_in_terminal(tree: &TempTree, server: &FakeServer) -> Terminal {
    let config = write_config(tree, &config_for(server.port));
    let command = format!(
        "exec {} --config '{}' chat --workspace '{}'",
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

/// `pocketpilot sessions …` as JSON.
fn sessions(tree: &TempTree, args: &[&str]) -> Value {
    let output = pocketpilot_in(&tree.base().join("home"))
        .arg("sessions")
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    serde_json::from_str(&stdout).unwrap()
}

/// The ids of the stored sessions, most recently active first.
fn session_ids(tree: &TempTree) -> Vec<String> {
    sessions(tree, &["list"])["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|session| session["id"].as_str().unwrap().to_owned())
        .collect()
}

/// The states of a session's turns, oldest first.
fn turn_states(tree: &TempTree, id: &str) -> Vec<String> {
    sessions(tree, &["show", id])["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|turn| turn["state"].as_str().unwrap().to_owned())
        .collect()
}

/// The messages the model was sent in request `index`, as `role: content` lines.
fn conversation(server: &FakeServer, index: usize) -> Vec<String> {
    server.requests()[index]["body"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] != "system")
        .map(|message| {
            format!(
                "{}: {}",
                message["role"].as_str().unwrap(),
                message["content"].as_str().unwrap_or("")
            )
        })
        .collect()
}

#[test]
fn two_turns_the_first_approved_with_one_key_share_one_history() {
    let tree = TempTree::new();
    let server = FakeServer::start(
        tree.base(),
        &json!([
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "hello\n"}}]},
            {"content": "Wrote a.txt."},
            {"content": "I wrote hello into a.txt."}
        ]),
    );
    let mut terminal = chat_in_terminal(&tree, &server);
    terminal.wait_for(YOU, 1);
    terminal.type_text("write a.txt\r");
    terminal.wait_for_prompt(1);
    assert!(
        terminal.screen().contains("create a.txt"),
        "the card is inline"
    );
    terminal.type_text("a");
    terminal.wait_for(YOU, 2);
    terminal.type_text("what did you do?\r");
    terminal.wait_for(YOU, 3);
    terminal.type_text("/exit\r");
    let (code, screen) = terminal.finish();
    assert_eq!(code, 0, "{screen}");
    assert_eq!(tree.read("a.txt"), "hello\n");
    assert!(screen.contains("decision: approved"), "{screen}");
    assert!(screen.contains("Wrote a.txt.") && screen.contains("I wrote hello into a.txt."));

    // The second turn's request carries the first turn: message, call, result, answer.
    let second_turn = conversation(&server, 2);
    assert_eq!(second_turn.first().unwrap(), "user: write a.txt");
    assert!(
        second_turn.contains(&"assistant: Wrote a.txt.".to_owned()),
        "{second_turn:?}"
    );
    assert_eq!(second_turn.last().unwrap(), "user: what did you do?");

    let list = sessions(&tree, &["list"]);
    let listed = list["sessions"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{list}");
    let id = listed[0]["id"].as_str().unwrap();
    let view = sessions(&tree, &["show", id]);
    let turns: Vec<(&str, &str)> = view["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|turn| {
            (
                turn["prompt"].as_str().unwrap(),
                turn["state"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        turns,
        [
            ("write a.txt", "completed"),
            ("what did you do?", "completed")
        ]
    );
}

#[test]
fn ctrl_c_cancels_the_turn_not_the_session_then_new_and_ctrl_d() {
    let tree = TempTree::new();
    let server = FakeServer::start(
        tree.base(),
        &json!([
            // Turn 1: the model is still thinking when Ctrl+C comes.
            {"content": "too late", "delay_ms": 3000},
            // Turn 2: Ctrl+C at its approval card.
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "x\n"}}]},
            // Turn 3, in the same session after both cancels.
            {"content": "still here"},
            // Turn 4, after /new.
            {"content": "a fresh start"}
        ]),
    );
    let mut terminal = chat_in_terminal(&tree, &server);
    terminal.wait_for(YOU, 1);
    terminal.type_text("think hard\r");
    terminal.wait_for("waiting for the model", 1);
    terminal.type_text("\u{3}");
    terminal.wait_for(YOU, 2);
    terminal.type_text("write a.txt\r");
    terminal.wait_for_prompt(1);
    terminal.type_text("\u{3}");
    terminal.wait_for(YOU, 3);
    terminal.type_text("are you there?\r");
    terminal.wait_for("still here", 1);
    terminal.wait_for(YOU, 4);
    terminal.type_text("/new\r");
    terminal.wait_for(YOU, 5);
    terminal.type_text("hello again\r");
    terminal.wait_for("a fresh start", 1);
    terminal.wait_for(YOU, 6);
    terminal.type_text("\u{4}");
    let (code, screen) = terminal.finish();
    assert_eq!(code, 0, "{screen}");
    assert_eq!(
        screen
            .matches("this turn was cancelled; the session goes on")
            .count(),
        2,
        "{screen}"
    );
    assert!(!tree.exists("a.txt"), "the cancelled call never ran");
    assert!(!screen.contains("too late"), "{screen}");

    let ids = session_ids(&tree);
    assert_eq!(ids.len(), 2, "/new started a second session");
    let mut all: Vec<Vec<String>> = ids.iter().map(|id| turn_states(&tree, id)).collect();
    all.sort();
    assert_eq!(
        all,
        [
            vec!["cancelled", "cancelled", "completed"],
            vec!["completed"]
        ]
    );
    // The turn after the cancels still had the session's earlier messages.
    let third = conversation(&server, 2);
    assert_eq!(third.first().unwrap(), "user: think hard", "{third:?}");
}

/// Line mode: `pocketpilot chat --script FILE` (each turn replays the script) with input
/// from a pipe.
fn chat_lines(
    tree: &TempTree,
    script: &Value,
    input: &str,
    extra: &[&str],
) -> (i32, String, String) {
    let script = write_script(tree.base(), script);
    let mut child = pocketpilot_in(&tree.base().join("home"))
        .arg("chat")
        .arg("--workspace")
        .arg(tree.workspace())
        .arg("--script")
        .arg(script)
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), input.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    let (stdout, stderr) = text(&output);
    (output.status.code().unwrap_or(-1), stdout, stderr)
}

#[test]
fn without_a_terminal_each_line_is_a_turn() {
    let tree = TempTree::new();
    let (code, stdout, stderr) = chat_lines(
        &tree,
        &json!([{"content": "noted"}]),
        "one\n\ntwo\n/sessions\n",
        &[],
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, "noted\nnoted\n", "answers on stdout: {stderr}");
    let id = session_ids(&tree)[0].clone();
    assert!(
        stderr.contains(&format!("* {id}")),
        "/sessions marks the current one: {stderr}"
    );
    assert_eq!(turn_states(&tree, &id).len(), 2);

    // --json: a session line, each turn's events, a result line per turn.
    let (code, stdout, stderr) = chat_lines(
        &tree,
        &json!([{"content": "again"}]),
        "three\n",
        &["--session", &id, "--json"],
    );
    assert_eq!(code, 0, "{stderr}");
    let lines: Vec<Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines[0], json!({"type": "session", "session_id": id}));
    assert_eq!(lines.last().unwrap()["type"], "result");
    assert_eq!(lines.last().unwrap()["final_text"], "again");
    assert_eq!(turn_states(&tree, &id).len(), 3);
}

#[test]
fn without_a_terminal_an_approval_stops_the_chat_with_exit_3_and_the_session_is_busy() {
    let tree = TempTree::new();
    let script = json!([{"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "x\n"}}]},
                        {"content": "done"}]);
    let (code, stdout, stderr) = chat_lines(&tree, &script, "write it\nnext\n", &[]);
    assert_eq!(code, 3, "{stderr}");
    let pending: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(pending["status"], "waiting_approval");
    assert!(stderr.contains("pocketpilot chat --session s_"), "{stderr}");
    assert!(!tree.exists("a.txt"));
    let id = session_ids(&tree)[0].clone();

    // The next message is refused while the turn waits; the chat says why.
    let (code, _, stderr) = chat_lines(&tree, &script, "next\n", &["--session", &id]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("last turn (task t_"), "{stderr}");
    assert_eq!(turn_states(&tree, &id), ["waiting_approval"]);

    // Nor can it be deleted (exit 5) until the turn is cancelled; then it can.
    let delete = |tree: &TempTree| {
        pocketpilot_in(&tree.base().join("home"))
            .args(["sessions", "delete", &id])
            .output()
            .unwrap()
    };
    let refused = delete(&tree);
    assert_eq!(refused.status.code(), Some(5), "{}", text(&refused).1);
    assert!(text(&refused).1.contains("is busy"));
    let task = sessions(&tree, &["show", &id])["turns"][0]["task_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let cancelled = pocketpilot_in(&tree.base().join("home"))
        .args(["tasks", "cancel", &task])
        .output()
        .unwrap();
    assert_eq!(cancelled.status.code(), Some(0), "{}", text(&cancelled).1);
    let deleted = delete(&tree);
    assert_eq!(deleted.status.code(), Some(0), "{}", text(&deleted).1);
    assert!(session_ids(&tree).is_empty());
    assert!(!tree.exists("a.txt"));
}

#[test]
fn an_unknown_session_is_a_usage_error() {
    let tree = TempTree::new();
    let (code, _, stderr) = chat_lines(
        &tree,
        &json!([{"content": "x"}]),
        "",
        &["--session", "s_nope"],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("there is no session s_nope"), "{stderr}");
}

/// A chat killed mid-turn (a closed terminal) leaves its turn `running`; `--session`
/// marks it `interrupted` once its lease is over, and the conversation goes on.
#[test]
fn a_turn_whose_process_died_does_not_block_the_session() {
    let tree = TempTree::new();
    let server = FakeServer::start(
        tree.base(),
        &json!([{"content": "never seen", "delay_ms": 60000}, {"content": "back again"}]),
    );
    let config = write_config(
        &tree,
        &format!("{}\n[tasks]\nlease_secs = 1\n", config_for(server.port)),
    );
    let chat = |args: &[&str]| {
        pocketpilot_in(&tree.base().join("home"))
            .arg("--config")
            .arg(&config)
            .arg("chat")
            .arg("--workspace")
            .arg(tree.workspace())
            .args(args)
            .env("PP_TEST_KEY", "sk-test")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut first = chat(&[]);
    let mut input = first.stdin.take().unwrap();
    std::io::Write::write_all(&mut input, b"think forever\n").unwrap();
    assert!(
        pp_test_support::wait_until(std::time::Duration::from_secs(30), || !server
            .requests()
            .is_empty()),
        "the first turn never reached the model"
    );
    first.kill().unwrap();
    first.wait().unwrap();
    let id = session_ids(&tree)[0].clone();
    assert_eq!(turn_states(&tree, &id), ["running"]);

    // Until the lease runs out the turn still counts as running somewhere; then the
    // next message goes through.
    let mut answered = None;
    pp_test_support::wait_until(std::time::Duration::from_secs(30), || {
        let mut again = chat(&["--session", &id]);
        let mut input = again.stdin.take().unwrap();
        std::io::Write::write_all(&mut input, b"are you back?\n").unwrap();
        drop(input);
        let output = again.wait_with_output().unwrap();
        if output.status.code() == Some(0) {
            answered = Some(text(&output).0);
        }
        answered.is_some()
    });
    assert_eq!(answered.as_deref(), Some("back again\n"));
    assert_eq!(turn_states(&tree, &id), ["interrupted", "completed"]);
}
