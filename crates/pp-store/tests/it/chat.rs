//! Chat sessions and their turns; the migration that renamed the login table.

use std::time::Duration;

use pp_store::{Error, NewChatSession, Store, TaskChange};
use pp_types::{Actor, Message, TaskState};
use pretty_assertions::assert_eq;

use crate::{TestDb, new_task};

async fn session(db: &TestDb) -> pp_store::ChatSession {
    db.store
        .create_chat_session(
            NewChatSession {
                title: Some("Notes".into()),
                workspace: "home".into(),
                created_by: Actor::Operator,
            },
            None,
        )
        .await
        .unwrap()
}

async fn complete(store: &Store, task: &pp_types::TaskId) {
    store.claim(task, &[TaskState::Queued]).await.unwrap();
    store
        .transition(
            task,
            &[TaskState::Running],
            TaskChange::to(TaskState::Completed),
        )
        .await
        .unwrap();
}

both!(turns_are_numbered_and_a_new_one_waits_for_the_last_to_end);
async fn turns_are_numbered_and_a_new_one_waits_for_the_last_to_end(db: TestDb) {
    let session = session(&db).await;
    assert!(session.id.starts_with("s_"), "{}", session.id);
    let first = db
        .store
        .add_chat_turn(&session.id, new_task("one"), None)
        .await
        .unwrap();
    assert_eq!(first.index, 1);
    assert_eq!(first.task.state, TaskState::Queued);

    let busy = db
        .store
        .add_chat_turn(&session.id, new_task("two"), None)
        .await
        .unwrap_err();
    assert!(
        matches!(&busy, Error::SessionBusy { id, task_id }
            if *id == session.id && *task_id == first.task.id.to_string()),
        "{busy:?}"
    );
    complete(&db.store, &first.task.id).await;
    let second = db
        .store
        .add_chat_turn(&session.id, new_task("two"), None)
        .await
        .unwrap();
    assert_eq!(second.index, 2);

    let messages = vec![
        Message::user("one"),
        Message::Assistant {
            content: Some("done".into()),
            tool_calls: Vec::new(),
            reasoning_content: None,
        },
    ];
    db.store
        .set_turn_messages(&first.task.id, &messages)
        .await
        .unwrap();
    let turns = db.store.chat_turns(&session.id).await.unwrap();
    assert_eq!(turns.len(), 2);
    assert_eq!(turns[0].messages.as_deref(), Some(&messages[..]));
    assert_eq!(turns[1].messages, None);
    assert_eq!(
        db.store.turn_of_task(&second.task.id).await.unwrap(),
        Some((session.id, 2))
    );
    // A task that is no turn: nothing to record.
    let plain = db.create("plain").await;
    assert_eq!(db.store.turn_of_task(&plain.id).await.unwrap(), None);
    db.store
        .set_turn_messages(&plain.id, &messages)
        .await
        .unwrap();
}

both!(a_session_with_an_active_turn_is_not_deleted_and_tasks_outlive_it);
async fn a_session_with_an_active_turn_is_not_deleted_and_tasks_outlive_it(db: TestDb) {
    let session = session(&db).await;
    let turn = db
        .store
        .add_chat_turn(&session.id, new_task("one"), None)
        .await
        .unwrap();
    assert!(matches!(
        db.store.delete_chat_session(&session.id, None).await,
        Err(Error::SessionBusy { .. })
    ));
    complete(&db.store, &turn.task.id).await;
    db.store
        .delete_chat_session(&session.id, None)
        .await
        .unwrap();
    assert!(matches!(
        db.store.chat_session(&session.id).await,
        Err(Error::NotFound {
            what: "session",
            ..
        })
    ));
    assert!(matches!(
        db.store.delete_chat_session(&session.id, None).await,
        Err(Error::NotFound { .. })
    ));
    assert_eq!(
        db.store.task(&turn.task.id).await.unwrap().state,
        TaskState::Completed
    );
    assert_eq!(db.store.turn_of_task(&turn.task.id).await.unwrap(), None);
}

both!(sessions_list_most_recently_active_first_and_keep_their_summary);
async fn sessions_list_most_recently_active_first_and_keep_their_summary(db: TestDb) {
    let older = session(&db).await;
    db.clock.advance(Duration::from_secs(1));
    let newer = session(&db).await;
    let listed: Vec<String> = db
        .store
        .chat_sessions(100)
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(listed, [newer.id.clone(), older.id.clone()]);
    db.clock.advance(Duration::from_secs(1));
    db.store
        .add_chat_turn(&older.id, new_task("again"), None)
        .await
        .unwrap();
    let listed: Vec<String> = db
        .store
        .chat_sessions(100)
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(listed, [older.id.clone(), newer.id]);

    db.store
        .set_session_summary(&older.id, "They talked.", 1)
        .await
        .unwrap();
    let stored = db.open_again().await.chat_session(&older.id).await.unwrap();
    assert_eq!(
        (stored.summary.as_deref(), stored.summarised_through),
        (Some("They talked."), 1)
    );
}

both!(prune_keeps_the_conversation_of_a_session);
async fn prune_keeps_the_conversation_of_a_session(db: TestDb) {
    let session = session(&db).await;
    let turn = db
        .store
        .add_chat_turn(&session.id, new_task("one"), None)
        .await
        .unwrap();
    complete(&db.store, &turn.task.id).await;
    let messages = vec![
        Message::user("one"),
        Message::Assistant {
            content: Some("done".into()),
            tool_calls: Vec::new(),
            reasoning_content: None,
        },
    ];
    db.store
        .set_turn_messages(&turn.task.id, &messages)
        .await
        .unwrap();
    db.clock.advance(Duration::from_secs(40 * 86_400));
    let report = db
        .store
        .prune(Duration::from_secs(30 * 86_400))
        .await
        .unwrap();
    assert!(report.audit > 0, "{report:?}");
    let turns = db.store.chat_turns(&session.id).await.unwrap();
    assert_eq!(turns[0].messages.as_deref(), Some(&messages[..]));
    assert_eq!(turns[0].task.id, turn.task.id);
}

both!(creating_and_deleting_a_session_are_in_the_ledger);
async fn creating_and_deleting_a_session_are_in_the_ledger(db: TestDb) {
    let session = db
        .store
        .create_chat_session(
            NewChatSession {
                title: None,
                workspace: "home".into(),
                created_by: Actor::Webhook,
            },
            None,
        )
        .await
        .unwrap();
    let turn = db
        .store
        .add_chat_turn(&session.id, new_task("one"), None)
        .await
        .unwrap();
    let rows = async |action: &str| {
        db.store
            .list_audit(&pp_store::AuditFilter {
                action: Some(action.into()),
                ..pp_store::AuditFilter::default()
            })
            .await
            .unwrap()
    };
    let created = rows("session_created").await;
    assert_eq!(created.len(), 1);
    assert_eq!(created[0].actor, Actor::Webhook, "who started it");
    assert_eq!(created[0].target.as_deref(), Some(session.id.as_str()));
    assert_eq!(created[0].detail.as_deref(), Some("workspace home"));

    // A refused delete leaves no row.
    assert!(
        db.store
            .delete_chat_session(&session.id, None)
            .await
            .is_err()
    );
    assert!(rows("session_deleted").await.is_empty());
    complete(&db.store, &turn.task.id).await;
    db.store
        .delete_chat_session(&session.id, None)
        .await
        .unwrap();
    let deleted = rows("session_deleted").await;
    assert_eq!(deleted.len(), 1);
    assert_eq!(deleted[0].actor, Actor::Operator);
    assert_eq!(deleted[0].target.as_deref(), Some(session.id.as_str()));
    assert_eq!(deleted[0].detail.as_deref(), Some("1 turn; its task stays"));
}
