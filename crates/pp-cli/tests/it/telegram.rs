//! Approval cards in Telegram against a local fake of the Bot API (`getUpdates` with long
//! polling and offsets, `sendMessage`, `editMessageText`, `answerCallbackQuery`, as the
//! public reference describes them) and a real `pocketpilot serve`: a card is sent with
//! no file content; taps from a stranger, a foreign chat or with a forged button change
//! nothing and are audited; after a restart an allowed tap approves once, the file is
//! written once, the card is edited to the outcome, a second tap says who decided and
//! the offset is not replayed; a target changed since the card was sent runs nothing; a
//! delete card cannot be approved by a tap; an expired tap is not applied; the token
//! never reaches the log.

use std::collections::VecDeque;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use pp_test_support::TempTree;
use serde_json::{Value, json};

use crate::http::Server;
use crate::{pocketpilot_in, write_script};

const TOKEN: &str = "4242:SECRET-bot-token-do-not-log";
const TOKEN_VAR: &str = "PP_TEST_TELEGRAM_TOKEN";
const CHAT: i64 = -100_555;
const ANN: i64 = 111;
const VIC: i64 = 222;
const TEAM_KEY: &str = "7f3c9a1e5b2d4c6e8f0a1b3c5d7e9f1a2b4c6d8e0f1a3b5c7d9e1f2a4b6c8d0e";

/// What the fake Bot API holds.
#[derive(Default)]
struct State {
    next_update: i64,
    next_message: i64,
    /// Updates not confirmed yet (an offset confirms every update below it).
    updates: VecDeque<Value>,
    /// Every sent message: chat, message id, text, reply markup; edits replace the
    /// text and markup and are counted.
    messages: Vec<Sent>,
    /// `answerCallbackQuery` calls: query id → text.
    answers: Vec<(String, String)>,
    /// The `offset` of every `getUpdates` call.
    offsets: Vec<Option<i64>>,
    /// Answers the next `getUpdates` with an error (the log must not show the URL).
    fail_next_poll: bool,
}

#[derive(Clone, Debug)]
struct Sent {
    chat: i64,
    id: i64,
    text: String,
    markup: Value,
    edits: usize,
}

#[derive(Clone)]
struct FakeBotApi {
    state: Arc<(Mutex<State>, Condvar)>,
    port: u16,
}

impl FakeBotApi {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let fake = Self {
            state: Arc::new((
                Mutex::new(State {
                    next_update: 1000,
                    next_message: 1,
                    ..State::default()
                }),
                Condvar::new(),
            )),
            port,
        };
        let serving = fake.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let fake = serving.clone();
                std::thread::spawn(move || fake.serve(stream));
            }
        });
        fake
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn serve(&self, mut stream: TcpStream) {
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let mut length = 0;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if line.trim().is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let path = request_line.split_whitespace().nth(1).unwrap_or("");
        let (status, answer) = match path.strip_prefix(&format!("/bot{TOKEN}/")) {
            Some(method) => self.method(method, &body),
            None => (
                404,
                json!({"ok": false, "error_code": 404, "description": "Not Found"}),
            ),
        };
        let text = answer.to_string();
        let _ = write!(
            stream,
            "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{text}",
            text.len()
        );
    }

    fn method(&self, method: &str, body: &Value) -> (u16, Value) {
        let (lock, wake) = &*self.state;
        let mut state = lock.lock().unwrap();
        let ok = |result: Value| (200, json!({"ok": true, "result": result}));
        match method {
            "getUpdates" => {
                let offset = body["offset"].as_i64();
                state.offsets.push(offset);
                if std::mem::take(&mut state.fail_next_poll) {
                    return (
                        409,
                        json!({"ok": false, "error_code": 409,
                               "description": "Conflict: terminated by other getUpdates request"}),
                    );
                }
                if let Some(offset) = offset {
                    state
                        .updates
                        .retain(|update| update["update_id"].as_i64().unwrap() >= offset);
                }
                let deadline = Instant::now()
                    + Duration::from_secs(body["timeout"].as_u64().unwrap_or(0).min(30));
                while state.updates.is_empty() && Instant::now() < deadline {
                    let left = deadline.saturating_duration_since(Instant::now());
                    state = wake.wait_timeout(state, left).unwrap().0;
                }
                ok(Value::Array(state.updates.iter().cloned().collect()))
            }
            "sendMessage" => {
                let id = state.next_message;
                state.next_message += 1;
                let chat = body["chat_id"].as_i64().unwrap();
                assert!(
                    body["reply_markup"]["inline_keyboard"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .flat_map(|row| row.as_array().unwrap())
                        .all(|button| button["callback_data"]
                            .as_str()
                            .is_none_or(|data| data.len() <= 64)),
                    "callback_data over 64 bytes: {body}"
                );
                state.messages.push(Sent {
                    chat,
                    id,
                    text: body["text"].as_str().unwrap().to_owned(),
                    markup: body["reply_markup"].clone(),
                    edits: 0,
                });
                wake.notify_all();
                ok(
                    json!({"message_id": id, "date": 1_700_000_000, "chat": {"id": chat, "type": "group"},
                          "text": body["text"]}),
                )
            }
            "editMessageText" => {
                let chat = body["chat_id"].as_i64().unwrap();
                let id = body["message_id"].as_i64().unwrap();
                let Some(sent) = state
                    .messages
                    .iter_mut()
                    .find(|sent| sent.chat == chat && sent.id == id)
                else {
                    return (
                        400,
                        json!({"ok": false, "error_code": 400,
                               "description": "Bad Request: message to edit not found"}),
                    );
                };
                sent.text = body["text"].as_str().unwrap().to_owned();
                sent.markup = body["reply_markup"].clone();
                sent.edits += 1;
                wake.notify_all();
                ok(json!({"message_id": id, "chat": {"id": chat}, "date": 1_700_000_000}))
            }
            "answerCallbackQuery" => {
                let entry = (
                    body["callback_query_id"].as_str().unwrap().to_owned(),
                    body["text"].as_str().unwrap_or("").to_owned(),
                );
                state.answers.push(entry);
                wake.notify_all();
                ok(json!(true))
            }
            _ => (
                404,
                json!({"ok": false, "error_code": 404, "description": "Not Found: method"}),
            ),
        }
    }

    /// Adds a `callback_query` update: `from` tapped a button carrying `data` on message
    /// `message` of `chat`; returns the query's id.
    fn tap(&self, chat: i64, message: i64, from: i64, data: &str) -> String {
        let (lock, wake) = &*self.state;
        let mut state = lock.lock().unwrap();
        let update_id = state.next_update;
        state.next_update += 1;
        let query = format!("q{update_id}");
        state.updates.push_back(json!({
            "update_id": update_id,
            "callback_query": {
                "id": query,
                "from": {"id": from, "is_bot": false, "first_name": "X", "username": if from == ANN { "ann" } else { "mallory" }},
                "message": {"message_id": message, "date": 1_700_000_000,
                            "chat": {"id": chat, "type": "group"}, "text": "card"},
                "chat_instance": "1",
                "data": data
            }
        }));
        wake.notify_all();
        query
    }

    /// Adds a text message from `from` in `chat`.
    fn text(&self, chat: i64, from: i64, text: &str) {
        let (lock, wake) = &*self.state;
        let mut state = lock.lock().unwrap();
        let update_id = state.next_update;
        state.next_update += 1;
        state.updates.push_back(json!({
            "update_id": update_id,
            "message": {"message_id": 9000 + update_id, "date": 1_700_000_000, "text": text,
                        "chat": {"id": chat, "type": "group"},
                        "from": {"id": from, "is_bot": false, "first_name": "X"}}
        }));
        wake.notify_all();
    }

    /// Waits (at most 20 s) until `check` on the state returns something.
    fn until<T>(&self, what: &str, mut check: impl FnMut(&State) -> Option<T>) -> T {
        let (lock, wake) = &*self.state;
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut state = lock.lock().unwrap();
        loop {
            if let Some(value) = check(&state) {
                return value;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "never happened: {what}");
            state = wake
                .wait_timeout(state, left.min(Duration::from_millis(100)))
                .unwrap()
                .0;
        }
    }

    fn answer(&self, query: &str) -> String {
        self.until(&format!("an answer to {query}"), |state| {
            state
                .answers
                .iter()
                .find(|(id, _)| id == query)
                .map(|(_, text)| text.clone())
        })
    }

    fn messages(&self) -> Vec<Sent> {
        self.state.0.lock().unwrap().messages.clone()
    }

    fn offsets(&self) -> Vec<Option<i64>> {
        self.state.0.lock().unwrap().offsets.clone()
    }
}

/// The `callback_data` of the button labelled `label` on `sent`.
fn button(sent: &Sent, label: &str) -> Option<String> {
    sent.markup["inline_keyboard"]
        .as_array()?
        .iter()
        .flat_map(|row| row.as_array().cloned().unwrap_or_default())
        .find(|button| button["text"] == label)
        .and_then(|button| button["callback_data"].as_str().map(str::to_owned))
}

fn config(tree: &TempTree, fake: &FakeBotApi, extra: &str) -> std::path::PathBuf {
    let path = tree.base().join("pocketpilot.toml");
    let workspace = tree.workspace().display().to_string();
    std::fs::write(
        &path,
        format!(
            "[[workspace]]\nname = \"main\"\npath = \"{workspace}\"\n\n[telegram]\n\
             token_env = \"{TOKEN_VAR}\"\nchat_ids = [{CHAT}]\nuser_ids = [{ANN}]\n\
             api_url = \"{}\"\n{extra}",
            fake.url()
        ),
    )
    .unwrap();
    path
}

/// `serve` with the bot token in the environment, stderr appended to `log`.
fn serve(home: &Path, config: &Path, script: &Path, log: &Path) -> Server {
    serve_as(home, config, script, log, None)
}

/// [`serve`]; in team mode (`team`: a user's token for the API) with the team key set.
fn serve_as(home: &Path, config: &Path, script: &Path, log: &Path, team: Option<&str>) -> Server {
    let mut command: Command = pocketpilot_in(home);
    command
        .env(TOKEN_VAR, TOKEN)
        .env("PP_TEST_TEAM_KEY", TEAM_KEY)
        .arg("--config")
        .arg(config)
        .args(["serve", "--port", "0", "--script"])
        .arg(script)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(log)
                .unwrap(),
        );
    let mut child = command.spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("PocketPilot console: http://127.0.0.1:")
        .or_else(|| {
            line.trim()
                .strip_prefix("PocketPilot team console: http://127.0.0.1:")
        })
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
    let (port, token) = url.split_once("/login?token=").unwrap();
    Server {
        child,
        port: port.parse().unwrap(),
        token: team.unwrap_or(token).to_owned(),
    }
}

/// Stops `serve` as a person would (SIGTERM): it gives the poller lease up.
fn stop(mut server: Server) {
    let pid = server.child.id().to_string();
    let status = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(status.success());
    let _ = server.child.wait();
}

fn audit(server: &Server, query: &str) -> Vec<Value> {
    let (status, body) = server.call("GET", &format!("/api/audit?{query}"), None);
    assert_eq!(status, 200, "{body}");
    body["entries"].as_array().cloned().unwrap_or_default()
}

fn create_task(server: &Server) -> String {
    let (status, task) = server.call("POST", "/api/tasks", Some(&json!({"prompt": "write it"})));
    assert_eq!(status, 201, "{task}");
    let id = task["id"].as_str().unwrap().to_owned();
    server.wait_for_state(&id, "waiting_approval");
    id
}

#[test]
fn a_tap_decides_once_after_a_restart_and_nobody_else_decides() {
    let tree = TempTree::new();
    let home = tree.base().join("home");
    let fake = FakeBotApi::start();
    let config = config(&tree, &fake, "");
    let script = write_script(
        tree.base(),
        &json!([{"content": "I will write the report.", "tool_calls": [{"name": "write_file",
                 "arguments": {"path": "a.md", "content": "TOP SECRET CONTENT\n"}}]},
                {"content": "done"}]),
    );
    let log = tree.base().join("serve.log");
    let server = serve(&home, &config, &script, &log);
    let task = create_task(&server);

    // The card: tool, target, precheck; the model's note quoted; no file content.
    let card = fake.until("a card", |state| state.messages.first().cloned());
    assert_eq!(card.chat, CHAT);
    assert!(card.text.contains("write_file"), "{}", card.text);
    assert!(card.text.contains("Target: a.md"), "{}", card.text);
    assert!(card.text.contains("Precheck: ready"), "{}", card.text);
    assert!(
        card.text.contains("│ I will write the report."),
        "{}",
        card.text
    );
    assert!(
        !card.text.contains("TOP SECRET"),
        "content left the machine: {}",
        card.text
    );
    let approve = button(&card, "Approve").unwrap();
    let reject = button(&card, "Reject").unwrap();
    assert!(
        approve.starts_with("a:") && approve.len() >= 2 + 16,
        "{approve}"
    );
    assert_eq!(approve[2..], reject[2..]);

    // A stranger, a foreign chat, a forged button: refused, nothing written.
    let stranger = fake.tap(CHAT, card.id, 999, &approve);
    assert!(fake.answer(&stranger).starts_with("Not allowed"));
    let foreign_chat = fake.tap(-200, card.id, ANN, &approve);
    assert!(fake.answer(&foreign_chat).starts_with("Not allowed"));
    let forged = fake.tap(CHAT, card.id, ANN, "a:00112233445566778899aabbccddeeff");
    assert!(fake.answer(&forged).starts_with("Not allowed"));
    let unknown_message = fake.tap(CHAT, card.id + 50, ANN, &approve);
    assert!(fake.answer(&unknown_message).starts_with("Not allowed"));
    assert!(!tree.exists("a.md"));
    let refused = audit(&server, "action=remote_tap_refused");
    // One row per chat per minute: the stranger's in CHAT, the foreign chat's.
    assert_eq!(refused.len(), 2, "{refused:?}");
    assert!(
        refused.iter().any(|row| row["detail"]
            .as_str()
            .unwrap()
            .contains("telegram:999 (@mallory)")),
        "{refused:?}"
    );

    // A restart: the card's buttons still work; the taps above are not read again.
    stop(server);
    let offsets_before = fake.offsets().len();
    let server = serve(&home, &config, &script, &log);
    let tap = fake.tap(CHAT, card.id, ANN, &approve);
    let answer = fake.answer(&tap);
    assert_eq!(answer, "Approved by telegram:111 (@ann)");
    let first_after_restart = fake.offsets()[offsets_before];
    assert!(
        first_after_restart.is_some_and(|offset| offset > 1003),
        "the restart replays taps: {first_after_restart:?}"
    );
    server.wait_for_state(&task, "completed");
    assert_eq!(tree.read("a.md"), "TOP SECRET CONTENT\n");
    let edited = fake.until("the card edited to its outcome", |state| {
        state
            .messages
            .iter()
            .find(|sent| sent.id == card.id && sent.edits > 0)
            .cloned()
    });
    assert!(
        edited.text.contains("Written `a.md`")
            && edited.text.contains("approved by telegram:111 (@ann)"),
        "{}",
        edited.text
    );
    assert_eq!(edited.markup["inline_keyboard"], json!([]), "buttons stay");
    let approved = audit(&server, &format!("task_id={task}&action=approval_approved"));
    assert_eq!(approved.len(), 1, "{approved:?}");
    assert_eq!(approved[0]["via"], "telegram", "{approved:?}");

    // A second tap: already decided; nothing runs again, the card is edited once.
    let again = fake.tap(CHAT, card.id, ANN, &approve);
    assert!(
        fake.answer(&again)
            .starts_with("already decided by telegram:111 (@ann)"),
        "{:?}",
        fake.answer(&again)
    );
    let executed = audit(&server, &format!("task_id={task}&action=tool_executed"));
    assert_eq!(executed.len(), 1, "written once: {executed:?}");
    assert_eq!(
        fake.messages()
            .iter()
            .find(|sent| sent.id == card.id)
            .unwrap()
            .edits,
        1
    );

    // A target changed since the card was sent: nothing runs, and the card says so.
    let second = create_task(&server);
    let card2 = fake.until("a second card", |state| {
        state
            .messages
            .iter()
            .find(|sent| sent.id != card.id && button(sent, "Approve").is_some())
            .cloned()
    });
    std::fs::write(tree.workspace().join("a.md"), "changed by hand\n").unwrap();
    let tap = fake.tap(CHAT, card2.id, ANN, &button(&card2, "Approve").unwrap());
    assert_eq!(fake.answer(&tap), "changed since sent: nothing ran");
    let edited = fake.until("the changed card edited", |state| {
        state
            .messages
            .iter()
            .find(|sent| sent.id == card2.id && sent.edits > 0)
            .cloned()
    });
    assert!(
        edited.text.contains("changed since sent: nothing ran"),
        "{}",
        edited.text
    );
    assert_eq!(tree.read("a.md"), "changed by hand\n");
    let (_, task2) = server.call("GET", &format!("/api/tasks/{second}"), None);
    assert_eq!(task2["state"], "waiting_approval", "{task2}");

    // `/pending` from an allowed user lists what waits; from anyone else, nothing.
    let before = fake.messages().len();
    fake.text(CHAT, 999, "/pending");
    fake.text(CHAT, ANN, "/pending");
    let list = fake.until("the /pending answer", |state| {
        state.messages.get(before).cloned()
    });
    assert!(list.text.starts_with("1 waiting:"), "{}", list.text);
    assert!(list.text.contains("write_file a.md"), "{}", list.text);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        fake.messages().len(),
        before + 1,
        "a stranger got an answer"
    );

    stop(server);
    let log_text = std::fs::read_to_string(&log).unwrap();
    assert!(!log_text.contains("SECRET-bot-token"), "{log_text}");
}

#[test]
fn a_delete_card_cannot_be_approved_by_a_tap_and_an_old_tap_expires() {
    let tree = TempTree::new();
    tree.file("old.txt", "keep me\n");
    let home = tree.base().join("home");
    let fake = FakeBotApi::start();
    fake.state.0.lock().unwrap().fail_next_poll = true;
    let config = config(&tree, &fake, "tap_max_age_secs = 3\n");
    let script = write_script(
        tree.base(),
        &json!([{"tool_calls": [{"name": "delete_file", "arguments": {"path": "old.txt"}}]},
                {"content": "done"}]),
    );
    let log = tree.base().join("serve.log");
    let server = serve(&home, &config, &script, &log);
    let task = create_task(&server);
    let card = fake.until("a card", |state| state.messages.first().cloned());
    // The first read failed; a tap counts once a read has succeeded since (before
    // that, nothing says how long a tap waited).
    fake.until("a read after the failed one", |state| {
        (state.offsets.len() >= 3).then_some(())
    });
    assert!(button(&card, "Approve").is_none(), "{:?}", card.markup);
    assert!(
        card.text
            .contains("approve this in the console or the terminal"),
        "{}",
        card.text
    );
    // An approve forged from the Reject button's id: refused by the resolve path.
    let reject = button(&card, "Reject").unwrap();
    let forged = format!("a:{}", &reject[2..]);
    let tap = fake.tap(CHAT, card.id, ANN, &forged);
    assert_eq!(
        fake.answer(&tap),
        "Not approvable here: approve this in the console or the terminal"
    );
    assert_eq!(tree.read("old.txt"), "keep me\n");

    // A tap made while serve was down longer than a tap may wait: not applied.
    stop(server);
    let old = fake.tap(CHAT, card.id, ANN, &reject);
    std::thread::sleep(Duration::from_secs(4));
    let server = serve(&home, &config, &script, &log);
    assert_eq!(fake.answer(&old), "expired — tap again");
    let (_, waiting) = server.call("GET", &format!("/api/tasks/{task}"), None);
    assert_eq!(waiting["state"], "waiting_approval", "{waiting}");
    // Tapped again: the reject counts.
    let fresh = fake.tap(CHAT, card.id, ANN, &reject);
    assert_eq!(fake.answer(&fresh), "Rejected by telegram:111 (@ann)");
    server.wait_for_state(&task, "completed");
    assert_eq!(tree.read("old.txt"), "keep me\n");
    // The forged tap already edited the card once (to say it is not approvable
    // here); wait for the edit to the outcome.
    let edited = fake.until("the card edited to its outcome", |state| {
        state
            .messages
            .iter()
            .find(|sent| sent.id == card.id && sent.edits > 0 && sent.text.contains("rejected"))
            .cloned()
    });
    assert!(
        edited.text.contains("rejected by telegram:111 (@ann)"),
        "{}",
        edited.text
    );
    stop(server);
    // The Bot API's error was logged, without the URL or the token.
    let log_text = std::fs::read_to_string(&log).unwrap();
    assert!(
        log_text.contains("telegram getUpdates: HTTP 409"),
        "{log_text}"
    );
    assert!(!log_text.contains("SECRET-bot-token"), "{log_text}");
    assert!(
        !log_text.contains(&format!("127.0.0.1:{}", fake.port)),
        "{log_text}"
    );
}

/// Team mode: a tap decides as the team user its Telegram id maps to, whose role and
/// grants must allow it when the tap arrives: a viewer's tap is refused and audited, an
/// approver's approves, recorded as that user `via` telegram.
#[test]
fn in_team_mode_a_tap_decides_as_the_mapped_user_if_their_role_allows() {
    let tree = TempTree::new();
    let home = tree.base().join("home");
    let fake = FakeBotApi::start();
    let config = tree.base().join("team.toml");
    std::fs::write(
        &config,
        format!(
            "[team]\nenabled = true\nkey_env = \"PP_TEST_TEAM_KEY\"\n\n[[workspace]]\n\
             name = \"finance\"\npath = {:?}\ndefault = true\n\n[telegram]\n\
             token_env = \"{TOKEN_VAR}\"\nchat_ids = [{CHAT}]\n\
             users = {{ \"{ANN}\" = \"carol\", \"{VIC}\" = \"vic\" }}\napi_url = \"{}\"\n",
            tree.workspace().display().to_string(),
            fake.url()
        ),
    )
    .unwrap();
    let mut tokens = std::collections::BTreeMap::new();
    for (name, role) in [("olga", "owner"), ("carol", "approver"), ("vic", "viewer")] {
        let output = pocketpilot_in(&home)
            .arg("--config")
            .arg(&config)
            .args(["users", "add", name, "--role", role, "--json"])
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        let added: Value = serde_json::from_slice(&output.stdout).unwrap();
        tokens.insert(name, added["token"].as_str().unwrap().to_owned());
        if role != "owner" {
            let granted = pocketpilot_in(&home)
                .arg("--config")
                .arg(&config)
                .args(["users", "grant", name, "finance"])
                .output()
                .unwrap();
            assert!(granted.status.success(), "{granted:?}");
        }
    }
    let script = write_script(
        tree.base(),
        &json!([{"tool_calls": [{"name": "write_file", "arguments": {"path": "a.md", "content": "team\n"}}]},
                {"content": "done"}]),
    );
    let log = tree.base().join("serve.log");
    let server = serve_as(&home, &config, &script, &log, Some(&tokens["olga"]));
    let task = create_task(&server);
    let card = fake.until("a card", |state| state.messages.first().cloned());
    let approve = button(&card, "Approve").unwrap();
    // The first read (at once, nothing to wait for) is done: taps count from here.
    fake.until("a long poll", |state| {
        (state.offsets.len() >= 2).then_some(())
    });

    let viewer = fake.tap(CHAT, card.id, VIC, &approve);
    assert!(
        fake.answer(&viewer).starts_with("Not allowed"),
        "{}",
        fake.answer(&viewer)
    );
    assert!(!tree.exists("a.md"));
    let refused = audit(&server, "action=remote_tap_refused");
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(
        refused[0]["detail"].as_str().unwrap().contains("vic"),
        "{refused:?}"
    );

    let approver = fake.tap(CHAT, card.id, ANN, &approve);
    assert_eq!(fake.answer(&approver), "Approved by carol");
    server.wait_for_state(&task, "completed");
    assert_eq!(tree.read("a.md"), "team\n");
    let approved = audit(&server, &format!("task_id={task}&action=approval_approved"));
    assert_eq!(approved.len(), 1, "{approved:?}");
    assert_eq!(approved[0]["user"], "carol", "{approved:?}");
    assert_eq!(approved[0]["via"], "telegram", "{approved:?}");
    stop(server);
}

/// The `url` of the link button labelled `label` on `sent`.
fn link_button(sent: &Sent, label: &str) -> Option<String> {
    sent.markup["inline_keyboard"]
        .as_array()?
        .iter()
        .flat_map(|row| row.as_array().cloned().unwrap_or_default())
        .find(|button| button["text"] == label)
        .and_then(|button| button["url"].as_str().map(str::to_owned))
}

#[test]
fn the_open_button_is_a_single_use_link_under_public_url_and_absent_without_one() {
    let tree = TempTree::new();
    let home = tree.base().join("home");
    let fake = FakeBotApi::start();
    let public = config(
        &tree,
        &fake,
        "\n[server]\npublic_url = \"https://pp.example.org\"\n\
         allowed_hosts = [\"pp.example.org\"]\n",
    );
    let script = write_script(
        tree.base(),
        &json!([{"tool_calls": [{"name": "write_file",
                 "arguments": {"path": "a.md", "content": "hello\n"}}]},
                {"content": "done"}]),
    );
    let log = tree.base().join("serve.log");
    let server = serve(&home, &public, &script, &log);
    let task = create_task(&server);
    let card = fake.until("a card", |state| state.messages.first().cloned());
    let open = link_button(&card, "Open").unwrap_or_else(|| panic!("{:?}", card.markup));
    let token = open
        .strip_prefix("https://pp.example.org/d/")
        .unwrap_or_else(|| panic!("{open}"));
    // The link decides this card's approval, once.
    let (status, body) = server.call(
        "POST",
        &format!("/api/links/{token}/resolve"),
        Some(&json!({"decision": "approve"})),
    );
    assert_eq!(status, 202, "{body}");
    server.wait_for_state(&task, "completed");
    assert_eq!(tree.read("a.md"), "hello\n");
    let (status, _) = server.call(
        "POST",
        &format!("/api/links/{token}/resolve"),
        Some(&json!({"decision": "approve"})),
    );
    assert_eq!(status, 410);
    stop(server);

    // Without `public_url` a link would work only on this machine: no Open button.
    let tree = TempTree::new();
    let home = tree.base().join("home");
    let fake = FakeBotApi::start();
    let local = config(&tree, &fake, "");
    let server = serve(&home, &local, &script, &log);
    create_task(&server);
    let card = fake.until("a card", |state| state.messages.first().cloned());
    assert!(button(&card, "Approve").is_some());
    assert_eq!(link_button(&card, "Open"), None, "{:?}", card.markup);
    stop(server);
}
