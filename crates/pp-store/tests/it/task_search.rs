//! Finding tasks: prompt substring, state, workspace, paging backwards.

use std::time::Duration;

use pp_store::{NewTask, TaskFilter};
use pp_types::{TaskId, TaskState};
use pretty_assertions::assert_eq;

use crate::{TestDb, ids, new_task};

fn search(db: &TestDb, filter: TaskFilter) -> Vec<TaskId> {
    ids(&db.store.search_tasks(&filter).unwrap())
}

fn query(text: &str) -> TaskFilter {
    TaskFilter {
        query: Some(text.into()),
        ..TaskFilter::default()
    }
}

#[test]
fn the_prompt_is_searched_case_insensitively_with_wildcards_taken_literally() {
    let db = TestDb::new();
    let invoice = db.create("Summarise the INVOICES from March");
    let discount = db.create("Find the 50% discount in offers_2026.csv");
    let other = db.create("Tidy notes: 50 percent done, offers 2026");
    let path = db.create("Rename C:\\reports\\old");

    assert_eq!(search(&db, query("invoices")), [invoice.id.clone()]);
    assert_eq!(search(&db, query("MARCH")), [invoice.id]);
    assert_eq!(search(&db, query("50%")), [discount.id.clone()]);
    assert_eq!(search(&db, query("offers_")), [discount.id.clone()]);
    assert_eq!(search(&db, query("%")), [discount.id.clone()]);
    assert_eq!(search(&db, query("_")), [discount.id]);
    assert_eq!(search(&db, query("\\reports\\")), [path.id]);
    assert_eq!(
        search(&db, query("nothing like this")),
        Vec::<TaskId>::new()
    );
    assert_eq!(
        search(&db, query("")).len(),
        4,
        "an empty query matches everything"
    );
    assert_eq!(search(&db, query("percent")), [other.id]);
}

#[test]
fn state_workspace_and_query_combine() {
    let db = TestDb::new();
    let home = db.create("report for home");
    let work = db
        .store
        .create_task(NewTask {
            workspace: "work".into(),
            workspace_path: "/srv/work".into(),
            ..new_task("report for work")
        })
        .unwrap();
    let running = db.create("report, running");
    db.store.claim(&running.id, &[TaskState::Queued]).unwrap();

    let in_work = TaskFilter {
        workspace: Some("work".into()),
        ..TaskFilter::default()
    };
    assert_eq!(search(&db, in_work), [work.id.clone()]);
    let queued_reports_at_home = TaskFilter {
        state: Some(TaskState::Queued),
        workspace: Some("home".into()),
        ..query("report")
    };
    assert_eq!(search(&db, queued_reports_at_home), [home.id.clone()]);
    let running_reports = TaskFilter {
        state: Some(TaskState::Running),
        ..query("REPORT")
    };
    assert_eq!(search(&db, running_reports), [running.id]);
    assert_eq!(
        search(
            &db,
            TaskFilter {
                workspace: Some("elsewhere".into()),
                ..TaskFilter::default()
            }
        ),
        Vec::<TaskId>::new()
    );
}

#[test]
fn pages_go_backwards_from_the_last_id_of_the_previous_page() {
    let db = TestDb::new();
    let mut created = Vec::new();
    for index in 0..5 {
        created.push(db.create(&format!("task {index}")).id);
        db.clock.advance(Duration::from_millis(5));
    }
    let page = |before: Option<TaskId>| {
        search(
            &db,
            TaskFilter {
                before,
                limit: 2,
                ..TaskFilter::default()
            },
        )
    };
    let first = page(None);
    assert_eq!(first, [created[4].clone(), created[3].clone()]);
    let second = page(first.last().cloned());
    assert_eq!(second, [created[2].clone(), created[1].clone()]);
    let third = page(second.last().cloned());
    assert_eq!(third, [created[0].clone()]);
    assert_eq!(page(third.last().cloned()), Vec::<TaskId>::new());

    // A `before` that is no longer stored (pruned) pages from where its id sorts: after
    // task 2 (same millisecond, larger random part), before task 3.
    let time_of_task_2 = &created[2].as_str()[..12];
    let gone = TaskId(format!("{time_of_task_2}zzzzzzzzzz"));
    assert_eq!(page(Some(gone)), [created[2].clone(), created[1].clone()]);
    assert_eq!(
        page(Some(TaskId("t_zzzzzzzzzzzzzzzzzzzz".into()))),
        [created[4].clone(), created[3].clone()],
        "an id after every task pages from the newest"
    );
    assert_eq!(
        page(Some(TaskId("t_".into()))),
        Vec::<TaskId>::new(),
        "an id before every task has nothing before it"
    );
}
