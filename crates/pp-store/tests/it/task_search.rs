//! Finding tasks: prompt substring, state, workspace, paging backwards.

use std::time::Duration;

use pp_store::{NewTask, TaskFilter};
use pp_types::{Actor, TaskId, TaskState};
use pretty_assertions::assert_eq;

use crate::{TestDb, ids, new_task};

async fn search(db: &TestDb, filter: &TaskFilter) -> Vec<String> {
    ids(&db.store.search_tasks(filter).await.unwrap())
        .into_iter()
        .map(|id| id.to_string())
        .collect()
}

fn query(text: &str) -> TaskFilter {
    TaskFilter {
        query: Some(text.into()),
        ..TaskFilter::default()
    }
}

both!(the_prompt_is_searched_case_insensitively_with_wildcards_taken_literally);
async fn the_prompt_is_searched_case_insensitively_with_wildcards_taken_literally(db: TestDb) {
    let invoice = db.create("Summarise the INVOICES from March").await;
    let discount = db.create("Find the 50% discount in offers_2026.csv").await;
    let other = db.create("Tidy notes: 50 percent done, offers 2026").await;
    let path = db.create("Rename C:\\reports\\old").await;

    assert_eq!(search(&db, &query("invoices")).await, [invoice.id.as_str()]);
    assert_eq!(search(&db, &query("MARCH")).await, [invoice.id.as_str()]);
    assert_eq!(search(&db, &query("50%")).await, [discount.id.as_str()]);
    assert_eq!(search(&db, &query("offers_")).await, [discount.id.as_str()]);
    assert_eq!(search(&db, &query("%")).await, [discount.id.as_str()]);
    assert_eq!(search(&db, &query("_")).await, [discount.id.as_str()]);
    assert_eq!(search(&db, &query("\\reports\\")).await, [path.id.as_str()]);
    assert_eq!(
        search(&db, &query("nothing like this")).await,
        Vec::<String>::new()
    );
    assert_eq!(
        search(&db, &query("")).await.len(),
        4,
        "an empty query matches everything"
    );
    assert_eq!(search(&db, &query("percent")).await, [other.id.as_str()]);
}

both!(state_workspace_and_query_combine);
async fn state_workspace_and_query_combine(db: TestDb) {
    let home = db.create("report for home").await;
    let work = db
        .store
        .create_task(NewTask {
            workspace: "work".into(),
            workspace_path: "/srv/work".into(),
            ..new_task("report for work")
        })
        .await
        .unwrap();
    let running = db.create("report, running").await;
    db.store
        .claim(&running.id, &[TaskState::Queued])
        .await
        .unwrap();

    let in_work = TaskFilter {
        workspace: Some("work".into()),
        ..TaskFilter::default()
    };
    assert_eq!(search(&db, &in_work).await, [work.id.as_str()]);
    let queued_reports_at_home = TaskFilter {
        state: Some(TaskState::Queued),
        workspace: Some("home".into()),
        ..query("report")
    };
    assert_eq!(
        search(&db, &queued_reports_at_home).await,
        [home.id.as_str()]
    );
    let running_reports = TaskFilter {
        state: Some(TaskState::Running),
        ..query("REPORT")
    };
    assert_eq!(search(&db, &running_reports).await, [running.id.as_str()]);
    assert_eq!(
        search(
            &db,
            &TaskFilter {
                workspace: Some("elsewhere".into()),
                ..TaskFilter::default()
            }
        )
        .await,
        Vec::<String>::new()
    );
}

both!(tasks_are_found_by_who_started_them);
async fn tasks_are_found_by_who_started_them(db: TestDb) {
    let operator = db.create("report by hand").await;
    let client = db
        .store
        .create_task(NewTask {
            created_by: Actor::McpClient,
            ..new_task("report for an MCP client")
        })
        .await
        .unwrap();
    let by = |actor| TaskFilter {
        created_by: Some(actor),
        ..query("report")
    };
    assert_eq!(
        search(&db, &by(Actor::McpClient)).await,
        [client.id.as_str()]
    );
    assert_eq!(
        search(&db, &by(Actor::Operator)).await,
        [operator.id.as_str()]
    );
    assert_eq!(search(&db, &by(Actor::Webhook)).await, Vec::<String>::new());
}

both!(pages_go_backwards_from_the_last_id_of_the_previous_page);
async fn pages_go_backwards_from_the_last_id_of_the_previous_page(db: TestDb) {
    let mut created = Vec::new();
    for index in 0..5 {
        created.push(db.create(&format!("task {index}")).await.id.to_string());
        db.clock.advance(Duration::from_millis(5));
    }
    let created: Vec<&str> = created.iter().map(String::as_str).collect();
    let page = async |before: Option<&str>| {
        search(
            &db,
            &TaskFilter {
                before: before.map(|id| TaskId(id.to_owned())),
                limit: 2,
                ..TaskFilter::default()
            },
        )
        .await
    };
    let first = page(None).await;
    assert_eq!(first, [created[4], created[3]]);
    let second = page(first.last().map(String::as_str)).await;
    assert_eq!(second, [created[2], created[1]]);
    let third = page(second.last().map(String::as_str)).await;
    assert_eq!(third, [created[0]]);
    assert_eq!(
        page(third.last().map(String::as_str)).await,
        Vec::<String>::new()
    );

    // A `before` that is no longer stored (pruned) pages from where its id sorts: after
    // task 2 (same millisecond, larger random part), before task 3.
    let gone = format!("{}zzzzzzzzzz", &created[2][..12]);
    assert_eq!(page(Some(&gone)).await, [created[2], created[1]]);
    assert_eq!(
        page(Some("t_zzzzzzzzzzzzzzzzzzzz")).await,
        [created[4], created[3]],
        "an id after every task pages from the newest"
    );
    assert_eq!(
        page(Some("t_")).await,
        Vec::<String>::new(),
        "an id before every task has nothing before it"
    );
}
