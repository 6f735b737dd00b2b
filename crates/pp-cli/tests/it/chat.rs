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

/// Left arrow, Up arrow and Backspace as a terminal sends them.
const LEFT: &str = "\u{1b}[D";
const UP: &str = "\u{1b}[A";
const BACKSPACE: &str = "\u{7f}";

/// Waits until the prompt is back after `marker` (shown `count` times): the line editor
/// reads in raw mode only from then on (the line editor redraws its prompt as a line is
/// edited, so prompts are not simply counted).
fn wait_for_prompt_after(terminal: &Terminal, marker: &str, count: usize) {
    terminal.wait_for(marker, count);
    let screen = terminal.screen();
    let (index, _) = screen.match_indices(marker).nth(count - 1).unwrap();
    if !screen[index..].contains(YOU) {
        terminal.wait_for(YOU, screen.matches(YOU).count() + 1);
    }
}

/// The messages the model was sent as the last user message of each request.
fn last_user_messages(server: &FakeServer) -> Vec<String> {
    (0..server.requests().len())
        .map(|index| {
            conversation(server, index)
                .into_iter()
                .rfind(|line| line.starts_with("user: "))
                .unwrap()
        })
        .collect()
}

#[test]
fn the_prompt_edits_mid_line_and_a_second_chat_recalls_messages_with_up_and_ctrl_r() {
    let tree = TempTree::new();
    let server = FakeServer::start(
        tree.base(),
        &json!([
            {"content": "first answer"},
            {"content": "second answer"},
            {"content": "third answer"},
            {"content": "fourth answer"}
        ]),
    );
    let history = tree.base().join("home/chat_history");

    // Left arrow moves into the line; the key typed there is inserted, not appended.
    let mut terminal = chat_in_terminal(&tree, &server);
    terminal.wait_for(YOU, 1);
    terminal.type_text("helo world");
    terminal.type_text(&LEFT.repeat(7));
    terminal.type_text("l\r");
    wait_for_prompt_after(&terminal, "first answer", 2);
    terminal.type_text("another one\r");
    wait_for_prompt_after(&terminal, "second answer", 2);
    terminal.type_text("\u{4}");
    let (code, screen) = terminal.finish();
    assert_eq!(code, 0, "{screen}");
    assert_eq!(
        last_user_messages(&server),
        ["user: hello world", "user: another one"]
    );

    // The history file is private: prompts may hold secrets.
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&history).unwrap().permissions(),
    );
    assert_eq!(mode & 0o777, 0o600, "{:o}", mode & 0o777);

    // A second chat (another process) recalls the last message with Up, and the first
    // with Ctrl+R.
    let mut terminal = chat_in_terminal(&tree, &server);
    terminal.wait_for(YOU, 1);
    terminal.type_text(UP);
    terminal.type_text("\r");
    wait_for_prompt_after(&terminal, "third answer", 2);
    terminal.type_text("\u{12}hel");
    terminal.wait_for("hello world", 1);
    terminal.type_text("\r");
    wait_for_prompt_after(&terminal, "fourth answer", 2);
    terminal.type_text("\u{4}");
    let (code, screen) = terminal.finish();
    assert_eq!(code, 0, "{screen}");
    assert_eq!(
        last_user_messages(&server)[2..],
        ["user: another one", "user: hello world"]
    );
    let ids = session_ids(&tree);
    assert_eq!(ids.len(), 2, "each chat started its own session");
}

#[test]
fn a_history_file_with_a_wider_mode_is_made_private_and_backslash_or_alt_enter_continue() {
    let tree = TempTree::new();
    let server = FakeServer::start(
        tree.base(),
        &json!([{"content": "noted"}, {"content": "also noted"}]),
    );
    let history = tree.base().join("home/chat_history");
    std::fs::create_dir_all(history.parent().unwrap()).unwrap();
    std::fs::write(&history, "\"an older message\"\n").unwrap();
    std::fs::set_permissions(
        &history,
        std::os::unix::fs::PermissionsExt::from_mode(0o644),
    )
    .unwrap();

    let mut terminal = chat_in_terminal(&tree, &server);
    terminal.wait_for(YOU, 1);
    terminal.type_text("first line\\\r");
    terminal.type_text("second line\r");
    wait_for_prompt_after(&terminal, "noted", 2);
    // Alt+Enter (Escape, then Enter) starts a new line too.
    terminal.type_text("third\u{1b}\rfourth\r");
    wait_for_prompt_after(&terminal, "also noted", 2);
    terminal.type_text("\u{4}");
    let (code, screen) = terminal.finish();
    assert_eq!(code, 0, "{screen}");
    assert_eq!(
        last_user_messages(&server),
        ["user: first line\nsecond line", "user: third\nfourth"]
    );
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&history).unwrap().permissions(),
    );
    assert_eq!(mode & 0o777, 0o600, "{:o}", mode & 0o777);
    assert_eq!(
        std::fs::read_to_string(&history).unwrap(),
        "\"an older message\"\n\"first line\\nsecond line\"\n\"third\\nfourth\"\n"
    );
}

#[test]
fn backspace_over_wide_characters_removes_them_from_the_line_and_the_screen() {
    let tree = TempTree::new();
    let server = FakeServer::start(tree.base(), &json!([{"content": "好的"}]));
    let mut terminal = chat_in_terminal(&tree, &server);
    terminal.wait_for(YOU, 1);
    terminal.type_text("你好吗世界");
    terminal.type_text(&BACKSPACE.repeat(3));
    terminal.type_text("!\r");
    wait_for_prompt_after(&terminal, "好的", 2);
    terminal.type_text("\u{4}");
    let (code, screen) = terminal.finish();
    assert_eq!(code, 0, "{screen}");
    assert_eq!(last_user_messages(&server), ["user: 你好!"]);

    // What the terminal shows on the first prompt's row: the cells of the removed
    // characters were cleared (each is two columns wide).
    let shown = Screen::replay(&screen);
    let row = shown.rows.iter().find(|row| row.starts_with(YOU)).unwrap();
    assert_eq!(row.trim_end(), "you › 你好!", "{screen:?}");
}

/// A small terminal: enough of VT100 to replay what the line editor draws (text, CR,
/// LF, backspace, cursor moves, erase to the end of the line or the screen), with CJK
/// characters two columns wide.
struct Screen {
    rows: Vec<String>,
}

impl Screen {
    fn replay(output: &str) -> Self {
        let mut cells: Vec<Vec<Option<char>>> = vec![Vec::new()];
        let (mut row, mut col) = (0usize, 0usize);
        let mut chars = output.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\r' => col = 0,
                '\n' => {
                    row += 1;
                    if cells.len() <= row {
                        cells.push(Vec::new());
                    }
                }
                '\u{8}' => col = col.saturating_sub(1),
                '\u{1b}' => {
                    if chars.peek() != Some(&'[') {
                        chars.next();
                        continue;
                    }
                    chars.next();
                    let mut params = String::new();
                    let mut command = ' ';
                    for next in chars.by_ref() {
                        if next.is_ascii_alphabetic() || next == '~' {
                            command = next;
                            break;
                        }
                        params.push(next);
                    }
                    let n = params.trim_start_matches('?').parse::<usize>().unwrap_or(0);
                    match command {
                        'C' => col += n.max(1),
                        'D' => col = col.saturating_sub(n.max(1)),
                        'A' => row = row.saturating_sub(n.max(1)),
                        'B' => {
                            row += n.max(1);
                            while cells.len() <= row {
                                cells.push(Vec::new());
                            }
                        }
                        'G' => col = n.max(1) - 1,
                        'K' => cells[row].truncate(col),
                        'J' => {
                            cells[row].truncate(col);
                            cells.truncate(row + 1);
                        }
                        _ => {}
                    }
                }
                c if c.is_control() => {}
                c => {
                    let wide = matches!(c, '\u{1100}'..='\u{115f}' | '\u{2e80}'..='\u{a4cf}' | '\u{ac00}'..='\u{d7a3}' | '\u{f900}'..='\u{faff}' | '\u{fe30}'..='\u{fe4f}' | '\u{ff00}'..='\u{ff60}' | '\u{ffe0}'..='\u{ffe6}');
                    let line = &mut cells[row];
                    let width = if wide { 2 } else { 1 };
                    if line.len() < col + width {
                        line.resize(col + width, Some(' '));
                    }
                    line[col] = Some(c);
                    if wide {
                        line[col + 1] = None;
                    }
                    col += width;
                }
            }
        }
        Self {
            rows: cells
                .into_iter()
                .map(|line| line.into_iter().flatten().collect())
                .collect(),
        }
    }
}

#[test]
fn backspace_over_a_wide_character_in_the_reject_reason_clears_both_columns() {
    let tree = TempTree::new();
    let server = FakeServer::start(
        tree.base(),
        &json!([
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "x\n"}}]},
            {"content": "understood"}
        ]),
    );
    let mut terminal = chat_in_terminal(&tree, &server);
    terminal.wait_for(YOU, 1);
    terminal.type_text("write a.txt\r");
    terminal.wait_for_prompt(1);
    terminal.type_text("r");
    terminal.wait_for("reason (optional", 1);
    terminal.type_text("不要好");
    terminal.type_text(BACKSPACE);
    terminal.type_text("\r");
    wait_for_prompt_after(&terminal, "understood", 2);
    terminal.type_text("\u{4}");
    let (code, screen) = terminal.finish();
    assert_eq!(code, 0, "{screen}");
    assert!(!tree.exists("a.txt"));
    let told = conversation(&server, 1)
        .into_iter()
        .find(|line| line.starts_with("tool: "))
        .unwrap();
    assert!(told.contains("不要") && !told.contains("不要好"), "{told}");
    let shown = Screen::replay(&screen);
    let row = shown
        .rows
        .iter()
        .find(|row| row.contains("reason (optional"))
        .unwrap();
    assert!(row.trim_end().ends_with(": 不要"), "{row:?}\n{screen:?}");
}
