//! `/api/schedules`: CRUD, errors with their codes, run now, the schedule's tasks; a
//! scheduled write waits for a person with nothing on disk.

use axum::http::Method;
use pp_schedules::Scheduler;
use pp_server::ServerSettings;
use pp_tasks::TaskService;
use pp_types::TaskState;
use serde_json::json;

use crate::openapi::assert_documented;
use crate::{App, Store, write_script};

/// The scheduler every fixture sets, over `tasks` and its `store`, attaching `script`
/// (the server's `default_script`) to the tasks it creates, as `serve` does.
pub(crate) fn scheduler(
    tasks: &TaskService,
    store: &Store,
    script: Option<serde_json::Value>,
) -> Scheduler {
    Scheduler::new(tasks.clone(), store.clone()).with_script(script)
}

fn body(name: &str) -> serde_json::Value {
    json!({
        "name": name,
        "cron": "0 9 * * 1",
        "time_zone": "Europe/Berlin",
        "prompt": "summarise last week's invoices",
    })
}

#[tokio::test]
async fn create_list_show_edit_disable_remove() {
    let app = App::idle();
    let reply = app
        .call_json(Method::POST, "/api/schedules", &body("invoices"))
        .await;
    reply.expect(201, None);
    let created = reply.json.clone();
    let id = created["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("sc_"), "{created}");
    assert_eq!(created["name"], "invoices");
    assert_eq!(created["cron"], "0 9 * * 1");
    assert_eq!(created["time_zone"], "Europe/Berlin");
    assert_eq!(created["workspace"], "main");
    assert_eq!(created["overlap"], "skip");
    assert_eq!(created["enabled"], true);
    assert_eq!(created["created_by"], "operator");
    assert!(created["last_fired_at"].is_null());
    // Monday 09:00 in Berlin is 07:00 or 08:00 UTC.
    let next = created["next_fire_at"].as_str().unwrap();
    assert!(
        next.contains("T07:00:00") || next.contains("T08:00:00"),
        "{next}"
    );

    let list = app.call(Method::GET, "/api/schedules").await;
    list.expect(200, None);
    assert_eq!(list.json["schedules"].as_array().unwrap().len(), 1);

    // Found by id and by name.
    for key in [id.as_str(), "invoices"] {
        let shown = app
            .call(Method::GET, &format!("/api/schedules/{key}"))
            .await;
        shown.expect(200, None);
        assert_eq!(shown.json["id"], id.as_str());
        assert!(shown.json["history"].as_array().unwrap().is_empty());
    }

    let edited = app
        .call_json(
            Method::PUT,
            &format!("/api/schedules/{id}"),
            &json!({"cron": "@daily", "overlap": "queue"}),
        )
        .await;
    edited.expect(200, None);
    assert_eq!(edited.json["cron"], "@daily");
    assert_eq!(edited.json["overlap"], "queue");
    assert_eq!(edited.json["prompt"], "summarise last week's invoices");

    let disabled = app
        .call_json(
            Method::PUT,
            &format!("/api/schedules/{id}"),
            &json!({"enabled": false}),
        )
        .await;
    disabled.expect(200, None);
    assert_eq!(disabled.json["enabled"], false);
    assert!(disabled.json["next_fire_at"].is_null());
    let enabled = app
        .call_json(
            Method::PUT,
            &format!("/api/schedules/{id}"),
            &json!({"enabled": true}),
        )
        .await;
    assert_eq!(enabled.json["enabled"], true);
    assert!(enabled.json["next_fire_at"].is_string());

    app.call(Method::DELETE, &format!("/api/schedules/{id}"))
        .await
        .expect(204, None);
    app.call(Method::GET, &format!("/api/schedules/{id}"))
        .await
        .expect(404, Some("not_found"));
}

#[tokio::test]
async fn refusals_name_the_field_and_token_and_are_documented() {
    let app = App::idle();
    let doc = app.call(Method::GET, "/api/openapi.json").await.json;
    let mut bad_cron = body("a");
    bad_cron["cron"] = json!("0,15,99 * * * *");
    let reply = app
        .call_json(Method::POST, "/api/schedules", &bad_cron)
        .await;
    reply.expect(400, Some("invalid_cron"));
    assert_eq!(reply.json["error"]["field"], "minute");
    assert_eq!(reply.json["error"]["token"], "99");
    let message = reply.json["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("minute") && message.contains("99"),
        "{message}"
    );
    assert_documented(&doc, "POST", "/api/schedules", &reply, "bad cron");

    let mut bad_zone = body("a");
    bad_zone["time_zone"] = json!("Mars/Olympus");
    let reply = app
        .call_json(Method::POST, "/api/schedules", &bad_zone)
        .await;
    reply.expect(400, Some("unknown_time_zone"));
    assert_documented(&doc, "POST", "/api/schedules", &reply, "bad zone");

    let mut bad_overlap = body("a");
    bad_overlap["overlap"] = json!("sometimes");
    let reply = app
        .call_json(Method::POST, "/api/schedules", &bad_overlap)
        .await;
    reply.expect(400, Some("bad_request"));

    let mut no_workspace = body("a");
    no_workspace["workspace"] = json!("nope");
    let reply = app
        .call_json(Method::POST, "/api/schedules", &no_workspace)
        .await;
    reply.expect(404, Some("not_found"));
    assert_documented(&doc, "POST", "/api/schedules", &reply, "no workspace");

    let mut no_session = body("a");
    no_session["session"] = json!("s_nope");
    let reply = app
        .call_json(Method::POST, "/api/schedules", &no_session)
        .await;
    reply.expect(404, Some("not_found"));
    assert_documented(&doc, "POST", "/api/schedules", &reply, "no session");

    app.call_json(Method::POST, "/api/schedules", &body("a"))
        .await
        .expect(201, None);
    let reply = app
        .call_json(Method::POST, "/api/schedules", &body("a"))
        .await;
    reply.expect(409, Some("exists"));
    assert_documented(&doc, "POST", "/api/schedules", &reply, "name taken");

    let reply = app
        .call_json(
            Method::PUT,
            "/api/schedules/a",
            &json!({"cron": "0 9 * * MON-FOO"}),
        )
        .await;
    reply.expect(400, Some("invalid_cron"));
    assert_eq!(reply.json["error"]["field"], "day_of_week");
    assert_eq!(reply.json["error"]["token"], "MON-FOO");
    assert_documented(&doc, "PUT", "/api/schedules/{id}", &reply, "bad cron edit");

    for (method, path) in [
        (Method::POST, "/api/schedules/nope/run"),
        (Method::GET, "/api/schedules/nope/tasks"),
        (Method::DELETE, "/api/schedules/nope"),
    ] {
        let reply = app.call(method.clone(), path).await;
        reply.expect(404, Some("not_found"));
    }
}

/// Run now creates a task started by `scheduler` with the schedule's name as origin; its
/// write stops in `waiting_approval` and nothing is on disk until a person approves.
#[tokio::test]
async fn run_now_starts_a_task_that_waits_for_a_person() {
    let app = App::with_settings(ServerSettings {
        default_script: Some(write_script("report.txt", "invoices\n")),
        ..ServerSettings::default()
    });
    app.service.start_workers();
    app.call_json(Method::POST, "/api/schedules", &body("invoices"))
        .await
        .expect(201, None);
    let reply = app.call(Method::POST, "/api/schedules/invoices/run").await;
    reply.expect(202, None);
    let task_id = pp_types::TaskId(reply.json["task_id"].as_str().unwrap().to_owned());
    assert_eq!(reply.json["task"]["created_by"], "scheduler");
    assert_eq!(reply.json["task"]["origin"], "invoices");
    app.wait_for(&task_id, TaskState::WaitingApproval).await;
    assert!(!app.tree.workspace().join("report.txt").exists());

    let created = app.audit("task_created", Some(&task_id)).await;
    assert_eq!(created.len(), 1);
    assert_eq!(created[0].actor, pp_types::Actor::Scheduler);

    // The ledger's rows for the task say where it came from.
    let audit = app
        .call(Method::GET, &format!("/api/audit?task_id={task_id}"))
        .await;
    audit.expect(200, None);
    let rows = audit.json["entries"].as_array().unwrap();
    assert!(!rows.is_empty());
    assert!(
        rows.iter().all(|row| row["origin"] == "invoices"),
        "{rows:?}"
    );

    let tasks = app.call(Method::GET, "/api/schedules/invoices/tasks").await;
    tasks.expect(200, None);
    assert_eq!(tasks.json["tasks"][0]["id"], task_id.as_str());
    let shown = app.call(Method::GET, "/api/schedules/invoices").await;
    assert_eq!(shown.json["last_task_id"], task_id.as_str());
    assert_eq!(shown.json["last_task_state"], "waiting_approval");
    assert_eq!(shown.json["history"][0]["kind"], "schedule_fired");

    // The approval says where it came from; a person approves, then the file exists.
    let approvals = app.call(Method::GET, "/api/approvals").await;
    let approval = approvals.json["approvals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["task_id"] == task_id.as_str())
        .unwrap()
        .clone();
    assert_eq!(approval["origin"], "invoices");
    assert_eq!(approval["created_by"], "scheduler");
    app.call_json(
        Method::POST,
        &format!(
            "/api/approvals/{}/resolve?wait=true",
            approval["id"].as_str().unwrap()
        ),
        &json!({"decision": "approve"}),
    )
    .await
    .expect(200, None);
    app.wait_for(&task_id, TaskState::Completed).await;
    assert!(app.tree.workspace().join("report.txt").exists());
}
