//! Create → run → wait for approval → card → resolve → complete; conflicts; edits;
//! many simultaneous resolves.

use std::time::{Duration, Instant};

use axum::http::Method;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::{App, json_request};
use pp_server::ServerSettings;
use pp_types::{TaskId, TaskState};

#[tokio::test]
async fn the_whole_approval_flow_through_the_api() {
    let app = App::with_settings(ServerSettings {
        default_script: Some(crate::write_script("notes/out.txt", "hello\n")),
        ..ServerSettings::default()
    });
    app.service.start_workers();
    app.tree.file("notes/old.txt", "old\n");

    let created = app
        .call_json(
            Method::POST,
            "/api/tasks",
            &json!({"prompt": "write the file"}),
        )
        .await;
    created.expect(201, None);
    assert_eq!(created.json["state"], "queued");
    assert_eq!(created.json["created_by"], "operator");
    assert_eq!(created.json["workspace"], "main");
    let task = TaskId(created.json["id"].as_str().unwrap().to_owned());
    app.wait_for(&task, TaskState::WaitingApproval).await;

    let shown = app.call(Method::GET, &format!("/api/tasks/{task}")).await;
    shown.expect(200, None);
    assert_eq!(shown.json["state"], "waiting_approval");
    let listed = app
        .call(Method::GET, "/api/tasks?state=waiting_approval")
        .await;
    assert_eq!(listed.json["tasks"][0]["id"], task.as_str());

    let inbox = app.call(Method::GET, "/api/approvals").await;
    inbox.expect(200, None);
    let approvals = inbox.json["approvals"].as_array().unwrap();
    assert_eq!(approvals.len(), 1);
    let id = approvals[0]["id"].as_str().unwrap().to_owned();
    // A row is for triage: what and where, not the call's content (the card has it).
    let row = &approvals[0];
    assert_eq!(
        (&row["tool"], &row["target"], &row["label"], &row["state"]),
        (
            &json!("write_file"),
            &json!("notes/out.txt"),
            &json!("create"),
            &json!("pending")
        )
    );
    assert_eq!(row["precheck"]["status"], "ready");
    for heavy in ["arguments", "content", "diff", "provenance", "checkpoint"] {
        assert_eq!(row.get(heavy), None, "a row carries no `{heavy}`: {row}");
    }

    let card = app.call(Method::GET, &format!("/api/approvals/{id}")).await;
    card.expect(200, None);
    assert_eq!(card.json["prompt"], "write the file");
    assert_eq!(card.json["tool"], "write_file");
    assert_eq!(card.json["state"], "pending");
    assert_eq!(card.json["label"], "create");
    assert_eq!(card.json["target"], "notes/out.txt");
    assert_eq!(card.json["content"], "hello\n");
    assert!(card.json["risk"].is_string());
    assert!(card.json["capability"].is_string());
    assert_eq!(card.json["arguments"]["path"], "notes/out.txt");
    assert!(
        !app.tree.exists("notes/out.txt"),
        "nothing written before approval"
    );

    let resolved = app
        .call_json(
            Method::POST,
            &format!("/api/approvals/{id}/resolve"),
            &json!({"decision": "approve"}),
        )
        .await;
    resolved.expect(202, None);
    assert_eq!(resolved.json["id"], task.as_str());
    let done = app.wait_for(&task, TaskState::Completed).await;
    assert_eq!(done.final_text.as_deref(), Some("done"));
    assert_eq!(app.tree.read("notes/out.txt"), "hello\n");

    let card = app.call(Method::GET, &format!("/api/approvals/{id}")).await;
    assert_eq!(card.json["state"], "approved");
    assert_eq!(card.json["resolved_by"], "operator");
    assert!(card.json["resolved_at"].as_str().unwrap().contains('T'));
    assert_eq!(
        app.call(Method::GET, "/api/approvals").await.json["approvals"],
        json!([])
    );
    let approved = app.call(Method::GET, "/api/approvals?state=approved").await;
    assert_eq!(approved.json["approvals"][0]["id"], id.as_str());

    // A second resolve is a conflict and runs nothing.
    app.call_json(
        Method::POST,
        &format!("/api/approvals/{id}/resolve"),
        &json!({"decision": "reject"}),
    )
    .await
    .expect(409, Some("already_resolved"));
    assert_eq!(app.audit("tool_executed", Some(&task)).await.len(), 1);

    // The JSON event log of the task tells the story in order.
    let events = app
        .call(Method::GET, &format!("/api/tasks/{task}/events"))
        .await;
    events.expect(200, None);
    let types: Vec<&str> = events.json["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|event| event["type"].as_str().unwrap())
        .collect();
    assert!(types.contains(&"approval_required"), "{types:?}");
    assert_eq!(types.last(), Some(&"task_completed"), "{types:?}");
    let seqs: Vec<i64> = events.json["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|event| event["seq"].as_i64().unwrap())
        .collect();
    let after = seqs[seqs.len() - 2];
    let tail = app
        .call(
            Method::GET,
            &format!("/api/tasks/{task}/events?after={after}"),
        )
        .await;
    assert_eq!(tail.json["events"].as_array().unwrap().len(), 1);
    let all = app.call(Method::GET, "/api/events?after=0&limit=2").await;
    assert_eq!(all.json["events"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn wait_true_returns_the_finished_task() {
    let app = App::running();
    let (task, approval) = app.waiting_write("w.txt", "w\n").await;
    let reply = app
        .call_json(
            Method::POST,
            &format!("/api/approvals/{approval}/resolve?wait=true"),
            &json!({"decision": "approve"}),
        )
        .await;
    reply.expect(200, None);
    assert_eq!(reply.json["id"], task.as_str());
    assert_eq!(reply.json["state"], "completed");
    assert_eq!(app.tree.read("w.txt"), "w\n");
}

#[tokio::test]
async fn reject_with_a_reason() {
    let app = App::running();
    let (task, approval) = app.waiting_write("r.txt", "r\n").await;
    app.call_json(
        Method::POST,
        &format!("/api/approvals/{approval}/resolve?wait=true"),
        &json!({"decision": "reject", "reason": "not today"}),
    )
    .await
    .expect(200, None);
    let card = app
        .call(Method::GET, &format!("/api/approvals/{approval}"))
        .await;
    assert_eq!(card.json["state"], "rejected");
    assert_eq!(card.json["reason"], "not today");
    assert!(!app.tree.exists("r.txt"));
    assert!(app.audit("tool_executed", Some(&task)).await.is_empty());
    assert_eq!(app.audit("approval_rejected", Some(&task)).await.len(), 1);
}

#[tokio::test]
async fn invalid_edited_arguments_are_422_and_leave_the_approval_pending() {
    let app = App::running();
    app.tree.outside_file("secret.txt", "TOP-SECRET");
    let (task, approval) = app.waiting_write("e.txt", "e\n").await;
    let uri = format!("/api/approvals/{approval}/resolve");
    for edited in [
        json!({"path": "e.txt"}),
        json!({"path": "e.txt", "content": 5}),
        json!({"path": "../outside/secret.txt", "content": "pwned"}),
        json!({"path": "/etc/passwd", "content": "pwned"}),
        json!("not an object"),
    ] {
        let reply = app
            .call_json(
                Method::POST,
                &uri,
                &json!({"decision": "approve", "edited_arguments": edited}),
            )
            .await;
        reply.expect(422, Some("invalid_arguments"));
        let message = reply.json["error"]["message"].as_str().unwrap();
        assert!(
            !message.contains(app.tree.outside().to_str().unwrap()),
            "{message}"
        );
    }
    let card = app
        .call(Method::GET, &format!("/api/approvals/{approval}"))
        .await;
    assert_eq!(card.json["state"], "pending");
    assert_eq!(app.tree.read("../outside/secret.txt"), "TOP-SECRET");

    // A valid edit is executed instead of the original call.
    app.call_json(
        Method::POST,
        &format!("{uri}?wait=true"),
        &json!({"decision": "approve", "edited_arguments": {"path": "edited.txt", "content": "edited\n"}}),
    )
    .await
    .expect(200, None);
    assert_eq!(app.tree.read("edited.txt"), "edited\n");
    assert!(!app.tree.exists("e.txt"));
    let executed = app.audit("tool_executed", Some(&task)).await;
    assert_eq!(executed.len(), 1);
    assert_eq!(executed[0].target.as_deref(), Some("edited.txt"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn simultaneous_resolves_execute_exactly_once() {
    let app = App::running();
    let (task, approval) = app.waiting_write("once.txt", "once\n").await;
    let uri = format!("/api/approvals/{approval}/resolve");
    let mut handles = Vec::new();
    for i in 0..20 {
        let router = app.router.clone();
        let body = if i % 2 == 0 {
            json!({"decision": "approve"})
        } else {
            json!({"decision": "reject", "reason": "racing"})
        };
        let request = json_request(Method::POST, &uri, &body);
        handles.push(tokio::spawn(
            async move { crate::send(&router, request).await },
        ));
    }
    let mut accepted = 0;
    let mut conflicts = 0;
    for handle in handles {
        let reply = handle.await.unwrap();
        match reply.status.as_u16() {
            202 => accepted += 1,
            409 => {
                assert_eq!(reply.code(), "already_resolved", "{reply:?}");
                conflicts += 1;
            }
            other => panic!("unexpected {other}: {reply:?}"),
        }
    }
    assert_eq!((accepted, conflicts), (1, 19));
    let finished = wait_until_ended(&app, &task).await;
    let executed = app.audit("tool_executed", Some(&task)).await;
    let decided = app.audit("approval_approved", Some(&task)).await.len()
        + app.audit("approval_rejected", Some(&task)).await.len();
    assert_eq!(decided, 1);
    if app.tree.exists("once.txt") {
        assert_eq!(executed.len(), 1, "{finished:?}");
        assert_eq!(app.tree.read("once.txt"), "once\n");
    } else {
        assert!(executed.is_empty());
    }
}

async fn wait_until_ended(app: &App, task: &TaskId) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let reply = app.call(Method::GET, &format!("/api/tasks/{task}")).await;
        let state = reply.json["state"].as_str().unwrap().to_owned();
        if state == "completed" || state == "failed" {
            return reply.json;
        }
        assert!(Instant::now() < deadline, "{reply:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn cancel_a_waiting_task() {
    let app = App::running();
    let (task, approval) = app.waiting_write("c.txt", "c\n").await;
    let reply = app
        .call(Method::POST, &format!("/api/tasks/{task}/cancel"))
        .await;
    reply.expect(200, None);
    assert_eq!(reply.json["state"], "cancelled");
    // The cancel won: a resolve after it is refused as `invalid_state` (finding 7), and
    // the approval is recorded cancelled.
    app.call_json(
        Method::POST,
        &format!("/api/approvals/{approval}/resolve"),
        &json!({"decision": "approve"}),
    )
    .await
    .expect(409, Some("invalid_state"));
    let card = app
        .call(Method::GET, &format!("/api/approvals/{approval}"))
        .await;
    assert_eq!(card.json["state"], "cancelled");
    assert!(!app.tree.exists("c.txt"));
}

/// Resolve latency through the router (approve, `wait=false`): run with
/// `cargo test -p pp-server --test it -- --ignored --nocapture resolve_latency`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "measurement, not a check"]
async fn resolve_latency() {
    let app = App::running();
    let mut approvals = Vec::new();
    for i in 0..200 {
        let task = app
            .create_task(crate::write_script(&format!("lat/{i}.txt"), "x\n"))
            .await;
        approvals.push(task.id);
    }
    let mut ids = Vec::new();
    for task in &approvals {
        app.wait_for(task, TaskState::WaitingApproval).await;
        let approval = app.service.approvals_for_task(task).await.unwrap();
        ids.push(approval[0].id.to_string());
    }
    let mut times = Vec::new();
    for id in &ids {
        let started = Instant::now();
        app.call_json(
            Method::POST,
            &format!("/api/approvals/{id}/resolve"),
            &json!({"decision": "approve"}),
        )
        .await
        .expect(202, None);
        times.push(started.elapsed());
    }
    times.sort();
    println!(
        "resolve (approve, wait=false) through the router, n={}: median {:?}, p90 {:?}, max {:?}",
        times.len(),
        times[times.len() / 2],
        times[times.len() * 9 / 10],
        times[times.len() - 1]
    );
    for task in &approvals {
        app.wait_for(task, TaskState::Completed).await;
    }
}
