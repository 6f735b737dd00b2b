//! Issue 29, item 2 on PostgreSQL, with real processes: a team `serve` that does not have
//! the task's workspace records a decision (`202` with `"checked_on": "worker"`), and a
//! `worker` on another data directory that has it claims the task and runs the approved
//! call exactly once, or ends the approval `stale` when the file changed since the card
//! was made. One schema of its own on `PP_TEST_POSTGRES_URL` (skipped without it, a
//! failure under CI).

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use pp_test_support::TempTree;
use pp_test_support::postgres::Schema;
use serde_json::{Value, json};

use crate::http::request;
use crate::team_key::{TeamServe, team_config, write_key};
use crate::{pocketpilot_in, text, write_script};

/// A `pocketpilot worker` (killed on drop).
struct Worker(Child);

impl Worker {
    /// Starts it and waits until it says it runs (its stderr goes to `log`).
    fn start(home: &Path, config: &Path, log: &Path) -> Self {
        let child = pocketpilot_in(home)
            .arg("--config")
            .arg(config)
            .arg("worker")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log).unwrap())
            .spawn()
            .unwrap();
        let worker = Self(child);
        let started = pp_test_support::wait_until(Duration::from_secs(30), || {
            std::fs::read_to_string(log).is_ok_and(|said| said.contains("worker: "))
        });
        assert!(
            started,
            "the worker never started: {}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        worker
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `GET path` as `token` until `done(body)`; the last body.
fn poll(port: u16, token: &str, path: &str, done: impl Fn(&Value) -> bool) -> Value {
    let mut last = Value::Null;
    let reached = pp_test_support::wait_until(Duration::from_secs(30), || {
        let (status, body) = request(port, "GET", path, Some(token), None);
        let reached = status == 200 && done(&body);
        last = body;
        reached
    });
    assert!(reached, "{path} never reached the state: {last}");
    last
}

/// Creates a task for `research` on the serve; waits until the worker asks for its
/// write; returns the task's and the approval's ids.
fn pending_write(port: u16, token: &str) -> (String, String) {
    let (status, task) = request(
        port,
        "POST",
        "/api/tasks",
        Some(token),
        Some(&json!({"prompt": "write r.txt", "workspace": "research"})),
    );
    assert!(matches!(status, 201 | 202), "{status} {task}");
    let task = task["id"].as_str().unwrap().to_owned();
    poll(port, token, &format!("/api/tasks/{task}"), |body| {
        body["state"] == "waiting_approval"
    });
    let list = poll(port, token, "/api/approvals?state=pending", |body| {
        body["approvals"]
            .as_array()
            .is_some_and(|rows| rows.iter().any(|row| row["task_id"] == task.as_str()))
    });
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

/// Approves on the serve: `202` with `"checked_on": "worker"` (this serve has no
/// `research`); then waits until the task ends.
fn approve_elsewhere(port: u16, token: &str, task: &str, approval: &str) {
    let (_, card) = request(
        port,
        "GET",
        &format!("/api/approvals/{approval}"),
        Some(token),
        None,
    );
    assert_eq!(card["precheck"]["status"], "unavailable", "{card}");
    let (status, answer) = request(
        port,
        "POST",
        &format!("/api/approvals/{approval}/resolve"),
        Some(token),
        Some(&json!({"decision": "approve"})),
    );
    assert_eq!(status, 202, "{answer}");
    assert_eq!(answer["checked_on"], "worker", "{answer}");
    poll(port, token, &format!("/api/tasks/{task}"), |body| {
        body["state"] == "completed"
    });
}

#[test]
fn a_serve_without_the_workspace_hands_the_decision_to_the_worker_on_postgres() {
    let Some(schema) = Schema::create(
        "cli_team",
        "a_serve_without_the_workspace_hands_the_decision_to_the_worker",
    ) else {
        return;
    };
    let tree = TempTree::new();
    let url = schema.url();
    write_key(&tree.base().join("team.key"), 0o600);
    // Machine A (serve) has `finance` only; machine B (worker) has `research`.
    let serve_config = team_config(&tree, "a.toml", "key_file = \"team.key\"\n", Some(&url));
    let research = tree.base().join("research");
    std::fs::create_dir_all(&research).unwrap();
    let worker_config = tree.base().join("b.toml");
    std::fs::write(
        &worker_config,
        format!(
            "[store]\nurl = {url:?}\n\n[team]\nenabled = true\n\n[[workspace]]\n\
             name = \"research\"\npath = {:?}\n",
            research.display().to_string()
        ),
    )
    .unwrap();
    let (home_a, home_b) = (tree.base().join("home-a"), tree.base().join("home-b"));
    let owner = pocketpilot_in(&home_a)
        .arg("--config")
        .arg(&serve_config)
        .args(["users", "add", "olga", "--role", "owner", "--json"])
        .output()
        .unwrap();
    assert!(owner.status.success(), "{:?}", text(&owner));
    let owner: Value = serde_json::from_str(text(&owner).0.trim()).unwrap();
    let token = owner["token"].as_str().unwrap().to_owned();

    let _worker = Worker::start(&home_b, &worker_config, &tree.base().join("b.log"));
    let script = write_script(
        tree.base(),
        &json!([{"tool_calls": [{"name": "write_file", "arguments": {"path": "r.txt", "content": "approved\n"}}]},
                {"content": "done"}]),
    );
    let serve = TeamServe::start(&home_a, &serve_config, &script, &tree.base().join("a.log"));
    let port = serve.port;

    // Unchanged since the card: the worker runs the approved write, once.
    std::fs::write(research.join("r.txt"), "before\n").unwrap();
    let (task, approval) = pending_write(port, &token);
    approve_elsewhere(port, &token, &task, &approval);
    let (_, card) = request(
        port,
        "GET",
        &format!("/api/approvals/{approval}"),
        Some(&token),
        None,
    );
    assert_eq!(card["state"], "approved", "{card}");
    assert_eq!(
        std::fs::read_to_string(research.join("r.txt")).unwrap(),
        "approved\n"
    );
    let (_, events) = request(
        port,
        "GET",
        &format!("/api/tasks/{task}/events"),
        Some(&token),
        None,
    );
    let results = events["events"]
        .as_array()
        .unwrap_or_else(|| panic!("{events}"))
        .iter()
        .filter(|event| event["type"] == "tool_result")
        .count();
    assert_eq!(results, 1, "the approved write ran exactly once: {events}");
    assert!(
        !tree.workspace().join("r.txt").exists() && !home_a.join("research").exists(),
        "nothing ran on the serve's machine"
    );

    // The file changes after the card was made: the worker ends the approval stale.
    let (task, approval) = pending_write(port, &token);
    std::fs::write(research.join("r.txt"), "edited meanwhile\n").unwrap();
    approve_elsewhere(port, &token, &task, &approval);
    let (_, card) = request(
        port,
        "GET",
        &format!("/api/approvals/{approval}"),
        Some(&token),
        None,
    );
    assert_eq!(card["state"], "stale", "{card}");
    assert_eq!(
        std::fs::read_to_string(research.join("r.txt")).unwrap(),
        "edited meanwhile\n",
        "nothing written over the edit"
    );
    drop(serve);
}
