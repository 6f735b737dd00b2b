//! The audit ledger: defaults and filters.

use pp_store::AuditFilter;
use pp_types::{Actor, NewAudit, TaskId};
use pretty_assertions::assert_eq;

use crate::TestDb;

fn row(actor: Option<Actor>, action: &str, task: Option<&TaskId>) -> NewAudit {
    NewAudit {
        actor,
        task_id: task.cloned(),
        ..NewAudit::new(pp_types::AuditAction::parse(action).expect("a known action"))
    }
}

both!(a_row_without_an_actor_is_the_operators);
async fn a_row_without_an_actor_is_the_operators(db: TestDb) {
    let entry = db
        .store
        .append_audit(NewAudit {
            target: Some("inbox/invoice.pdf".into()),
            arguments_hash: Some("sha256:abc".into()),
            detail: Some("12 KiB".into()),
            ..NewAudit::new(pp_types::AuditAction::FileUploaded)
        })
        .await
        .unwrap();
    assert_eq!(entry.actor, Actor::Operator);
    assert_eq!(
        db.store.list_audit(&AuditFilter::default()).await.unwrap(),
        [entry]
    );
}

both!(filters_combine_and_rows_come_newest_first);
async fn filters_combine_and_rows_come_newest_first(db: TestDb) {
    let task_a = TaskId::from("t_a");
    let task_b = TaskId::from("t_b");
    let rows = [
        row(Some(Actor::Agent), "tool_executed", Some(&task_a)),
        row(None, "file_uploaded", None),
        row(Some(Actor::Agent), "tool_executed", Some(&task_b)),
        row(Some(Actor::Scheduler), "task_created", Some(&task_b)),
        row(Some(Actor::Agent), "tool_executed", Some(&task_a)),
    ];
    let mut stored = Vec::new();
    for row in rows {
        stored.push(db.store.append_audit(row).await.unwrap());
    }
    let ids = async |filter: AuditFilter| -> Vec<i64> {
        db.store
            .list_audit(&filter)
            .await
            .unwrap()
            .into_iter()
            .map(|entry| entry.id)
            .collect()
    };
    let id = |index: usize| stored[index].id;

    assert_eq!(
        ids(AuditFilter::default()).await,
        [id(4), id(3), id(2), id(1), id(0)]
    );
    let agent = AuditFilter {
        actor: Some(Actor::Agent),
        ..AuditFilter::default()
    };
    assert_eq!(ids(agent.clone()).await, [id(4), id(2), id(0)]);
    assert_eq!(
        ids(AuditFilter {
            task_id: Some(task_a),
            ..agent.clone()
        })
        .await,
        [id(4), id(0)]
    );
    assert_eq!(
        ids(AuditFilter {
            action: Some("task_created".into()),
            ..AuditFilter::default()
        })
        .await,
        [id(3)]
    );
    // Paging: two at a time.
    let first_page = ids(AuditFilter {
        limit: 2,
        ..agent.clone()
    })
    .await;
    assert_eq!(first_page, [id(4), id(2)]);
    assert_eq!(
        ids(AuditFilter {
            before_id: Some(id(2)),
            limit: 2,
            ..agent
        })
        .await,
        [id(0)]
    );
    assert!(
        ids(AuditFilter {
            actor: Some(Actor::Webhook),
            ..AuditFilter::default()
        })
        .await
        .is_empty()
    );
}

both!(excluded_actions_are_left_out_and_the_rest_pages_normally);
async fn excluded_actions_are_left_out_and_the_rest_pages_normally(db: TestDb) {
    use pp_types::AuditAction::{ConsoleLogin, FileUploaded};
    let actions = [
        "console_login",
        "task_created",
        "console_login",
        "file_uploaded",
        "console_login",
        "tool_executed",
    ];
    let mut stored: Vec<i64> = Vec::new();
    for action in actions {
        stored.push(
            db.store
                .append_audit(row(None, action, None))
                .await
                .unwrap()
                .id,
        );
    }
    let ids = async |filter: AuditFilter| -> Vec<i64> {
        db.store
            .list_audit(&filter)
            .await
            .unwrap()
            .into_iter()
            .map(|entry| entry.id)
            .collect()
    };
    let without_logins = AuditFilter {
        exclude: vec![ConsoleLogin],
        ..AuditFilter::default()
    };
    assert_eq!(
        ids(without_logins.clone()).await,
        [stored[5], stored[3], stored[1]]
    );
    assert_eq!(
        ids(AuditFilter {
            limit: 1,
            before_id: Some(stored[5]),
            ..without_logins
        })
        .await,
        [stored[3]],
        "paging skips the excluded rows too"
    );
    assert_eq!(
        ids(AuditFilter {
            exclude: vec![ConsoleLogin, FileUploaded],
            ..AuditFilter::default()
        })
        .await,
        [stored[5], stored[1]]
    );
    assert_eq!(
        ids(AuditFilter {
            action: Some("console_login".into()),
            exclude: vec![ConsoleLogin],
            ..AuditFilter::default()
        })
        .await,
        Vec::<i64>::new()
    );
}
