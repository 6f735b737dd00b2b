//! Issue 30, approval links, against a real `serve`: `approvals link` prints a URL whose
//! token decides one approval exactly once, through `POST /api/links/{token}/resolve`;
//! reading the page or its card decides nothing; the token is refused by every other
//! route, never set as a cookie and never written to the server's log; a link ends when
//! it expires, is unlinked, its target changed or (team mode) its user may no longer
//! decide.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::time::Duration;

use pp_test_support::TempTree;
use serde_json::{Value, json};

use crate::http::request;
use crate::team_key::{TeamServe, team_config, write_key};
use crate::{pocketpilot_in, text, write_script};

/// A `pocketpilot serve` whose standard error goes to a file (killed on drop).
struct Serve {
    child: Child,
    port: u16,
    token: String,
    log: PathBuf,
}

impl Serve {
    fn start(home: &Path, workspace: &Path, script: &Path, config: Option<&Path>) -> Self {
        let log = home.with_extension("log");
        let mut command = pocketpilot_in(home);
        if let Some(config) = config {
            command.arg("--config").arg(config);
        }
        let mut child = command
            .args(["serve", "--port", "0", "--workspace"])
            .arg(workspace)
            .arg("--script")
            .arg(script)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let rest = line
            .trim()
            .strip_prefix("PocketPilot console: http://127.0.0.1:")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
        let (port, token) = rest.split_once("/login?token=").unwrap();
        Self {
            child,
            port: port.parse().unwrap(),
            token: token.to_owned(),
            log,
        }
    }

    fn call(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        request(self.port, method, path, Some(&self.token), body)
    }

    /// A task asking for the script's first call; its id and its pending approval's.
    fn pending(&self) -> (String, String) {
        let (status, task) = self.call("POST", "/api/tasks", Some(&json!({"prompt": "go"})));
        assert_eq!(status, 201, "{task}");
        let task = task["id"].as_str().unwrap().to_owned();
        wait_for(|| {
            let (_, body) = self.call("GET", &format!("/api/tasks/{task}"), None);
            body["state"] == "waiting_approval"
        });
        let (_, list) = self.call("GET", "/api/approvals?state=pending", None);
        let approval = list["approvals"]
            .as_array()
            .unwrap()
            .iter()
            .find(|row| row["task_id"] == task.as_str())
            .unwrap()["id"]
            .as_str()
            .unwrap()
            .to_owned();
        (task, approval)
    }

    fn approval(&self, id: &str) -> Value {
        self.call("GET", &format!("/api/approvals/{id}"), None).1
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn wait_for(mut done: impl FnMut() -> bool) {
    assert!(
        pp_test_support::wait_until(Duration::from_secs(20), &mut done),
        "never happened"
    );
}

/// One raw request: status, head (lower-cased) and body text.
fn raw(port: u16, method: &str, path: &str, headers: &[&str], body: &str) -> (u16, String, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let extra: String = headers.iter().map(|line| format!("{line}\r\n")).collect();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{extra}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, head.to_ascii_lowercase(), body.to_owned())
}

/// `POST /api/links/{token}/resolve` (no credentials); status and body.
fn decide(port: u16, token: &str, body: &Value) -> (u16, Value) {
    request(
        port,
        "POST",
        &format!("/api/links/{token}/resolve"),
        None,
        Some(body),
    )
}

fn cli(home: &Path, config: Option<&Path>, args: &[&str], token: Option<&str>) -> Output {
    let mut command = pocketpilot_in(home);
    if let Some(config) = config {
        command.arg("--config").arg(config);
    }
    if let Some(token) = token {
        command.env("POCKETPILOT_TOKEN", token);
    }
    command.args(args).stdin(Stdio::null()).output().unwrap()
}

/// `approvals link ID --json ARGS…`: the URL's token (the answer is checked).
fn make_link(
    home: &Path,
    config: Option<&Path>,
    id: &str,
    args: &[&str],
    user: Option<&str>,
) -> String {
    let mut all = vec!["approvals", "link", id, "--json"];
    all.extend_from_slice(args);
    let output = cli(home, config, &all, user);
    let (out, err) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{out}{err}");
    let answer: Value = serde_json::from_str(out.trim()).unwrap();
    assert!(answer["expires_at"].is_string(), "{answer}");
    let url = answer["url"].as_str().unwrap();
    let token = url.split_once("/d/").unwrap().1.to_owned();
    assert_eq!(token.len(), 64, "{url}");
    token
}

fn write_turns(tree: &TempTree, call: &Value) -> PathBuf {
    write_script(
        tree.base(),
        &json!([{"tool_calls": [call]}, {"content": "done"}]),
    )
}

#[test]
fn a_link_decides_once_and_reading_it_decides_nothing() {
    let tree = TempTree::new();
    let home = tree.base().join("home");
    let script = write_turns(
        &tree,
        &json!({"name": "write_file", "arguments": {"path": "a.md", "content": "new\n"}}),
    );
    let serve = Serve::start(&home, tree.workspace(), &script, None);
    let (task, approval) = serve.pending();

    let output = cli(&home, None, &["approvals", "link", &approval], None);
    let (out, err) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert!(out.trim().starts_with("http://127.0.0.1:"), "{out}");
    assert!(err.contains("works only on this machine"), "{err}");
    let token = out.trim().split_once("/d/").unwrap().1.to_owned();

    // The page and its card: no login, read-only, with the link headers and no cookie.
    for path in [format!("/d/{token}"), format!("/api/links/{token}")] {
        for _ in 0..2 {
            let (status, head, _) = raw(serve.port, "GET", &path, &[], "");
            assert_eq!(status, 200, "{path}: {head}");
            for header in [
                "cache-control: no-store",
                "referrer-policy: no-referrer",
                "x-robots-tag: noindex",
                "x-frame-options: deny",
                "x-content-type-options: nosniff",
                "content-security-policy: default-src 'self'",
            ] {
                assert!(head.contains(header), "{path} lacks {header}: {head}");
            }
            assert!(!head.contains("set-cookie"), "{path}: {head}");
        }
    }
    let (_, head, page) = raw(serve.port, "GET", &format!("/d/{token}"), &[], "");
    assert!(head.contains("content-type: text/html"), "{head}");
    assert!(page.contains("/assets/link.js"), "{page}");
    let (_, card) = request(
        serve.port,
        "GET",
        &format!("/api/links/{token}"),
        None,
        None,
    );
    assert_eq!(card["approval"]["id"], approval.as_str(), "{card}");
    assert_eq!(card["approval"]["tool"], "write_file");
    assert_eq!(card["approvable"], true, "{card}");
    assert_eq!(card["changed_since_link"], false, "{card}");
    assert_eq!(
        serve.approval(&approval)["state"],
        "pending",
        "reading decided nothing"
    );

    // The token unlocks nothing else.
    let bearer = format!("Authorization: Bearer {token}");
    let cookie = format!("Cookie: pp_session={token}");
    for path in [
        "/api/tasks".to_owned(),
        "/api/approvals".to_owned(),
        format!("/api/approvals/{approval}"),
        format!("/api/approvals/{approval}?token={token}"),
        format!("/api/tasks/{task}/events?token={token}"),
        "/api/me".to_owned(),
    ] {
        for header in [bearer.as_str(), cookie.as_str()] {
            let (status, _, body) = raw(serve.port, "GET", &path, &[header], "");
            assert_eq!(status, 401, "{path} with {header}: {body}");
        }
        let (status, _, _) = raw(serve.port, "GET", &path, &[], "");
        assert_eq!(status, 401, "{path}");
    }
    for header in [bearer.as_str(), cookie.as_str()] {
        let (status, _, body) = raw(
            serve.port,
            "POST",
            &format!("/api/approvals/{approval}/resolve"),
            &[header],
            r#"{"decision":"approve"}"#,
        );
        assert_eq!(status, 401, "{header}: {body}");
    }
    let (status, head, _) = raw(serve.port, "GET", &format!("/login?token={token}"), &[], "");
    assert_eq!(status, 401, "{head}");
    assert!(!head.contains("set-cookie"), "{head}");
    let (status, _, _) = raw(
        serve.port,
        "GET",
        &format!("/api/links/{token}/other"),
        &[],
        "",
    );
    assert_eq!(status, 404);
    assert_eq!(serve.approval(&approval)["state"], "pending");

    // The one decision, then 410 for every other.
    let (status, answer) = decide(serve.port, &token, &json!({"decision": "approve"}));
    assert_eq!(status, 202, "{answer}");
    wait_for(|| serve.call("GET", &format!("/api/tasks/{task}"), None).1["state"] == "completed");
    assert_eq!(
        std::fs::read_to_string(tree.workspace().join("a.md")).unwrap(),
        "new\n"
    );
    let (status, again) = decide(serve.port, &token, &json!({"decision": "approve"}));
    assert_eq!(status, 410, "{again}");
    assert_eq!(again["error"]["code"], "gone");
    let message = again["error"]["message"].as_str().unwrap();
    assert!(message.contains("already approved via link"), "{message}");
    let (status, _) = decide(serve.port, &token, &json!({"decision": "reject"}));
    assert_eq!(status, 410);
    let (status, gone) = request(
        serve.port,
        "GET",
        &format!("/api/links/{token}"),
        None,
        None,
    );
    assert_eq!(status, 410, "{gone}");
    let decided = serve.approval(&approval);
    assert_eq!(decided["state"], "approved");
    assert_eq!(decided["resolved_via"], "link", "{decided}");
    let (_, audit) = serve.call("GET", "/api/audit?limit=50", None);
    let row = audit["entries"]
        .as_array()
        .or_else(|| audit["audit"].as_array())
        .unwrap()
        .iter()
        .find(|row| row["action"] == "approval_approved")
        .cloned()
        .unwrap();
    assert_eq!(row["via"], "link", "{row}");
    // An unknown token is 404; a malformed one too.
    let (status, _) = decide(serve.port, &"0".repeat(64), &json!({"decision": "approve"}));
    assert_eq!(status, 404);
    let (status, _) = decide(serve.port, "short", &json!({"decision": "approve"}));
    assert_eq!(status, 404);

    let log = serve.log();
    assert!(!log.contains(&token), "the token is in the log: {log}");
}

#[test]
fn expiry_unlink_and_a_changed_target_end_a_link_and_run_nothing() {
    let tree = TempTree::new();
    let home = tree.base().join("home");
    std::fs::write(tree.workspace().join("a.md"), "old\n").unwrap();
    let script = write_turns(
        &tree,
        &json!({"name": "write_file", "arguments": {"path": "a.md", "content": "new\n"}}),
    );
    let serve = Serve::start(&home, tree.workspace(), &script, None);
    let (_, approval) = serve.pending();

    for bad in ["0", "86401"] {
        let output = cli(
            &home,
            None,
            &["approvals", "link", &approval, "--ttl-secs", bad],
            None,
        );
        assert_eq!(output.status.code(), Some(2), "{bad}: {}", text(&output).1);
    }

    let expiring = make_link(&home, None, &approval, &["--ttl-secs", "1"], None);
    std::thread::sleep(Duration::from_millis(1300));
    let (status, body) = decide(serve.port, &expiring, &json!({"decision": "approve"}));
    assert_eq!(status, 410, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("expired"),
        "{body}"
    );
    let (status, _) = request(
        serve.port,
        "GET",
        &format!("/api/links/{expiring}"),
        None,
        None,
    );
    assert_eq!(status, 410);

    let unlinked = make_link(&home, None, &approval, &[], None);
    let output = cli(
        &home,
        None,
        &["approvals", "unlink", &approval, "--json"],
        None,
    );
    let (out, err) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert!(
        serde_json::from_str::<Value>(out.trim()).unwrap()["revoked"]
            .as_u64()
            .unwrap()
            >= 1
    );
    let (status, body) = decide(serve.port, &unlinked, &json!({"decision": "reject"}));
    assert_eq!(status, 410, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("revoked"),
        "{body}"
    );

    // The target changes after the link was made: the page says so, an approve is
    // refused with 409, nothing runs, and the link is over.
    let changed = make_link(&home, None, &approval, &[], None);
    std::fs::write(tree.workspace().join("a.md"), "someone else's\n").unwrap();
    let (status, card) = request(
        serve.port,
        "GET",
        &format!("/api/links/{changed}"),
        None,
        None,
    );
    assert_eq!(status, 200, "{card}");
    assert_eq!(card["changed_since_link"], true, "{card}");
    let (status, body) = decide(serve.port, &changed, &json!({"decision": "approve"}));
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "changed_since_seen");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        std::fs::read_to_string(tree.workspace().join("a.md")).unwrap(),
        "someone else's\n",
        "nothing ran"
    );
    assert_eq!(serve.approval(&approval)["state"], "pending");
    let (status, body) = decide(serve.port, &changed, &json!({"decision": "reject"}));
    assert_eq!(status, 410, "the 409 ended the link: {body}");
    assert_eq!(serve.approval(&approval)["state"], "pending");
    assert!(!serve.log().contains(&changed));
}

#[test]
fn a_delete_cannot_be_approved_through_a_link_but_can_be_rejected() {
    let tree = TempTree::new();
    let home = tree.base().join("home");
    std::fs::write(tree.workspace().join("b.md"), "keep\n").unwrap();
    let script = write_turns(
        &tree,
        &json!({"name": "delete_file", "arguments": {"path": "b.md"}}),
    );
    let serve = Serve::start(&home, tree.workspace(), &script, None);
    let (task, approval) = serve.pending();
    let token = make_link(&home, None, &approval, &[], None);
    let (_, card) = request(
        serve.port,
        "GET",
        &format!("/api/links/{token}"),
        None,
        None,
    );
    assert_eq!(card["approvable"], false, "{card}");
    assert!(
        card["approve_refusal"]
            .as_str()
            .unwrap()
            .contains("console or the terminal"),
        "{card}"
    );
    let (status, body) = decide(serve.port, &token, &json!({"decision": "approve"}));
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["code"], "not_remotely_approvable");
    assert!(tree.workspace().join("b.md").exists());
    assert_eq!(serve.approval(&approval)["state"], "pending");
    let (status, body) = decide(
        serve.port,
        &token,
        &json!({"decision": "reject", "reason": "not from my phone"}),
    );
    assert_eq!(status, 202, "the link may still reject: {body}");
    wait_for(|| serve.call("GET", &format!("/api/tasks/{task}"), None).1["state"] == "completed");
    let decided = serve.approval(&approval);
    assert_eq!(decided["state"], "rejected");
    assert_eq!(decided["reason"], "not from my phone");
    assert!(tree.workspace().join("b.md").exists());
}

#[test]
fn public_url_is_the_links_base_and_its_host_must_be_allowed() {
    let tree = TempTree::new();
    let home = tree.base().join("home");
    let refused = tree.base().join("refused.toml");
    std::fs::write(
        &refused,
        "[server]\npublic_url = \"https://pp.example.org\"\nallowed_hosts = [\"other.example.org\"]\n",
    )
    .unwrap();
    let output = cli(&home, Some(&refused), &["approvals", "list"], None);
    let (_, err) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(
        err.contains("public_url") && err.contains("allowed_hosts"),
        "{err}"
    );

    let script = write_turns(
        &tree,
        &json!({"name": "write_file", "arguments": {"path": "a.md", "content": "new\n"}}),
    );
    let config = tree.base().join("ok.toml");
    std::fs::write(
        &config,
        "[server]\npublic_url = \"https://pp.example.org/\"\nallowed_hosts = [\"pp.example.org\"]\n",
    )
    .unwrap();
    let serve = Serve::start(&home, tree.workspace(), &script, Some(&config));
    let (_, approval) = serve.pending();
    let output = cli(
        &home,
        Some(&config),
        &["approvals", "link", &approval],
        None,
    );
    let (out, err) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert!(out.starts_with("https://pp.example.org/d/"), "{out}");
    assert!(!err.contains("warning"), "{err}");
}

#[test]
fn a_notifier_given_links_forwards_a_way_to_approve() {
    let tree = TempTree::new();
    let home = tree.base().join("home");
    let heard = tree.base().join("heard.jsonl");
    let config = tree.base().join("notify.toml");
    std::fs::write(
        &config,
        format!(
            "[notify]\ncommand = [\"sh\", \"-c\", \"cat >> {}\"]\nlinks = true\n",
            heard.display()
        ),
    )
    .unwrap();
    let script = write_turns(
        &tree,
        &json!({"name": "write_file", "arguments": {"path": "a.md", "content": "new\n"}}),
    );
    let serve = Serve::start(&home, tree.workspace(), &script, Some(&config));
    let (task, approval) = serve.pending();
    let mut summary = Value::Null;
    wait_for(|| {
        let lines = std::fs::read_to_string(&heard).unwrap_or_default();
        summary = lines
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .find(|line| line["event"] == "approval_waiting")
            .unwrap_or(Value::Null);
        summary.is_object()
    });
    assert_eq!(summary["approval_id"], approval.as_str(), "{summary}");
    let link = summary["link"].as_str().unwrap();
    // The port this server got (`--port 0`), not the configured 0.
    let base = format!("http://127.0.0.1:{}/d/", serve.port);
    assert!(link.starts_with(&base), "{link}");
    let token = link.split_once("/d/").unwrap().1;
    // Two requests race with one link: exactly one decides.
    let port = serve.port;
    let racers: Vec<_> = (0..4)
        .map(|_| {
            let token = token.to_owned();
            std::thread::spawn(move || decide(port, &token, &json!({"decision": "approve"})).0)
        })
        .collect();
    let mut statuses: Vec<u16> = racers
        .into_iter()
        .map(|racer| racer.join().unwrap())
        .collect();
    statuses.sort_unstable();
    assert_eq!(statuses, [202, 410, 410, 410]);
    wait_for(|| serve.call("GET", &format!("/api/tasks/{task}"), None).1["state"] == "completed");
    assert!(!serve.log().contains(token));

    // Team mode refuses it at load.
    let team = team_config(
        &tree,
        "team.toml",
        "[notify]\ncommand = [\"true\"]\nlinks = true\n",
        None,
    );
    let output = cli(&home, Some(&team), &["approvals", "list"], None);
    let (_, err) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(err.contains("links"), "{err}");
}

/// `users …` on `home` with `config`; its JSON answer.
fn users(home: &Path, config: &Path, args: &[&str]) -> Value {
    let output = cli(home, Some(config), &[&["users"][..], args].concat(), None);
    let (out, err) = text(&output);
    assert!(output.status.success(), "{args:?}: {err}");
    serde_json::from_str(out.trim()).unwrap_or(Value::Null)
}

#[test]
fn in_team_mode_a_link_acts_as_its_user_who_must_still_be_allowed() {
    let tree = TempTree::new();
    let home = tree.base().join("home");
    write_key(&tree.base().join("team.key"), 0o600);
    let config = team_config(&tree, "team.toml", "key_file = \"team.key\"\n", None);
    let mut tokens = std::collections::BTreeMap::new();
    for (name, role) in [
        ("olga", "owner"),
        ("carol", "approver"),
        ("abe", "approver"),
        ("vic", "viewer"),
    ] {
        let added = users(&home, &config, &["add", name, "--role", role, "--json"]);
        tokens.insert(name, added["token"].as_str().unwrap().to_owned());
        if role != "owner" {
            users(&home, &config, &["grant", name, "finance"]);
        }
    }
    let script = write_script(
        tree.base(),
        &json!([{"tool_calls": [{"name": "write_file", "arguments": {"path": "a.md", "content": "new\n"}}]},
                {"content": "done"}]),
    );
    let log = tree.base().join("serve.log");
    let serve = TeamServe::start(&home, &config, &script, &log);
    let olga = tokens["olga"].clone();
    let (status, task) = request(
        serve.port,
        "POST",
        "/api/tasks",
        Some(&olga),
        Some(&json!({"prompt": "go"})),
    );
    assert_eq!(status, 201, "{task}");
    let task = task["id"].as_str().unwrap().to_owned();
    wait_for(|| {
        request(
            serve.port,
            "GET",
            &format!("/api/tasks/{task}"),
            Some(&olga),
            None,
        )
        .1["state"]
            == "waiting_approval"
    });
    let (_, list) = request(
        serve.port,
        "GET",
        "/api/approvals?state=pending",
        Some(&olga),
        None,
    );
    let approval = list["approvals"][0]["id"].as_str().unwrap().to_owned();

    // Without --user: usage; a viewer may not decide, so may not make a link.
    let output = cli(
        &home,
        Some(&config),
        &["approvals", "link", &approval],
        Some(&olga),
    );
    assert_eq!(output.status.code(), Some(2), "{}", text(&output).1);
    let output = cli(
        &home,
        Some(&config),
        &["approvals", "link", &approval, "--user", "vic"],
        Some(&tokens["vic"]),
    );
    assert_eq!(output.status.code(), Some(6), "{}", text(&output).1);

    // carol loses the workspace: her link answers 403 and is over.
    let carol = make_link(
        &home,
        Some(&config),
        &approval,
        &["--user", "carol"],
        Some(&tokens["carol"]),
    );
    users(&home, &config, &["revoke", "carol", "finance"]);
    let (status, body) = request(
        serve.port,
        "GET",
        &format!("/api/links/{carol}"),
        None,
        None,
    );
    assert_eq!(status, 403, "her link no longer shows the card: {body}");
    let (status, body) = decide(serve.port, &carol, &json!({"decision": "approve"}));
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["code"], "forbidden");
    let (status, body) = decide(serve.port, &carol, &json!({"decision": "reject"}));
    assert_eq!(status, 410, "{body}");

    // abe is removed: his links are revoked.
    let abe = make_link(
        &home,
        Some(&config),
        &approval,
        &["--user", "abe"],
        Some(&tokens["abe"]),
    );
    users(&home, &config, &["remove", "abe"]);
    let (status, body) = decide(serve.port, &abe, &json!({"decision": "approve"}));
    assert_eq!(status, 410, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("revoked"),
        "{body}"
    );
    let (_, card) = request(
        serve.port,
        "GET",
        &format!("/api/approvals/{approval}"),
        Some(&olga),
        None,
    );
    assert_eq!(card["state"], "pending", "{card}");

    // olga's link decides, recording her.
    let olgas = make_link(
        &home,
        Some(&config),
        &approval,
        &["--user", "olga"],
        Some(&olga),
    );
    let (status, body) = decide(serve.port, &olgas, &json!({"decision": "approve"}));
    assert_eq!(status, 202, "{body}");
    wait_for(|| {
        request(
            serve.port,
            "GET",
            &format!("/api/tasks/{task}"),
            Some(&olga),
            None,
        )
        .1["state"]
            == "completed"
    });
    let (_, card) = request(
        serve.port,
        "GET",
        &format!("/api/approvals/{approval}"),
        Some(&olga),
        None,
    );
    assert_eq!(card["resolved_by_user"], "olga", "{card}");
    assert_eq!(card["resolved_via"], "link", "{card}");
    let said = std::fs::read_to_string(&log).unwrap_or_default();
    for token in [&carol, &abe, &olgas] {
        assert!(!said.contains(token.as_str()));
    }
}
