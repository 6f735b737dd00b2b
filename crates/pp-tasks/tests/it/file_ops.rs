//! `move_file`, `delete_file` and `make_dir` through the task service: approve, reject,
//! edit and stale; what the change log records; and reverting a move, a delete and a
//! created folder.

use pp_tasks::{
    Decision, OutcomeStatus, ResolveRequest, RevertRefusal, RevertSettings, TaskSettings,
};
use pp_types::{Actor, ApprovalState, Change, ChangeKind, TaskState, WriteLabel};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::fixture::{Fixture, approve, call_then_done, changes, run_approving};

fn summary(changes: &[Change]) -> Vec<(ChangeKind, Option<&str>, Option<&str>, bool)> {
    changes
        .iter()
        .map(|change| {
            (
                change.kind,
                change.from_path.as_deref(),
                change.path.as_deref(),
                change.revertible,
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approved_moves_deletes_and_folders_are_logged_counted_and_described() {
    let fixture = Fixture::new();
    fixture.tree.file("inbox/scan.pdf", "PDF bytes");
    fixture.tree.file("old.txt", "obsolete\n");
    let task = run_approving(
        &fixture,
        json!([
            {"tool_calls": [{"name": "make_dir", "arguments": {"path": "invoices/2026"}}]},
            {"tool_calls": [{"name": "move_file", "arguments": {"from": "inbox/scan.pdf", "to": "invoices/2026/acme.pdf"}}]},
            {"tool_calls": [{"name": "delete_file", "arguments": {"path": "old.txt"}}]},
            {"content": "tidied"}
        ]),
    )
    .await;
    assert_eq!(fixture.tree.read("invoices/2026/acme.pdf"), "PDF bytes");
    assert!(!fixture.tree.exists("inbox/scan.pdf") && !fixture.tree.exists("old.txt"));
    let logged = changes(&fixture, &task).await;
    assert_eq!(
        summary(&logged),
        vec![
            (ChangeKind::FolderCreated, None, Some("invoices"), true),
            (ChangeKind::FolderCreated, None, Some("invoices/2026"), true),
            (
                ChangeKind::Moved,
                Some("inbox/scan.pdf"),
                Some("invoices/2026/acme.pdf"),
                true
            ),
            (ChangeKind::Deleted, None, Some("old.txt"), true),
        ]
    );
    assert_eq!(logged[3].bytes, Some(9), "the size of what was deleted");
    let counts = fixture.service.task(&task).await.unwrap().changes;
    assert_eq!(
        (counts.folder_created, counts.moved, counts.deleted),
        (2, 1, 1)
    );
    let views = fixture
        .service
        .approval_views(Some(ApprovalState::Approved), 10)
        .await
        .unwrap();
    let mut messages: Vec<(Option<WriteLabel>, String)> = views
        .iter()
        .map(|view| {
            let outcome = view.outcome.clone().unwrap();
            assert_eq!(outcome.status, OutcomeStatus::Done);
            assert_eq!(view.revertible, Some(true), "{}", view.tool);
            (view.label, outcome.message)
        })
        .collect();
    messages.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!(
        messages,
        [
            (
                Some(WriteLabel::CreateFolder),
                "Created folder `invoices`; Created folder `invoices/2026`".to_owned()
            ),
            (
                Some(WriteLabel::Delete),
                "Deleted `old.txt` (9 B)".to_owned()
            ),
            (
                Some(WriteLabel::Move),
                "Moved `inbox/scan.pdf` → `invoices/2026/acme.pdf`".to_owned()
            ),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_move_or_delete_changes_nothing() {
    let fixture = Fixture::new();
    fixture.tree.file("a.txt", "a");
    let script = json!([
        {"tool_calls": [{"name": "move_file", "arguments": {"from": "a.txt", "to": "b.txt"}}]},
        {"tool_calls": [{"name": "delete_file", "arguments": {"path": "a.txt"}}]},
        {"content": "ok"}
    ]);
    let task = fixture.run(script).await;
    let reject = || ResolveRequest {
        decision: Decision::Reject,
        reason: Some("no".into()),
        seen_fingerprint: None,
        ..approve()
    };
    for _ in 0..2 {
        let pending = fixture.pending(&task.id).await;
        fixture
            .service
            .resolve(&pending.id, reject())
            .await
            .unwrap();
    }
    assert_eq!(fixture.tree.read("a.txt"), "a");
    assert!(!fixture.tree.exists("b.txt"));
    assert!(changes(&fixture, &task.id).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_move_runs_with_the_edited_destination_and_an_escape_is_refused() {
    let fixture = Fixture::new();
    fixture.tree.file("a.txt", "a");
    fixture.tree.outside_file("keep.txt", "outside");
    let task = fixture
        .run(call_then_done(
            "move_file",
            &json!({"from": "a.txt", "to": "b.txt"}),
        ))
        .await;
    let pending = fixture.pending(&task.id).await;
    let view = fixture.service.approval_view(&pending.id).await.unwrap();
    assert_eq!(view.label, Some(WriteLabel::Move));
    assert_eq!(view.destination.as_deref(), Some("b.txt"));
    assert_eq!(view.destination_resolved.as_deref(), Some("b.txt"));
    let escape = ResolveRequest {
        edited_arguments: Some(
            json!({"from": "a.txt", "to": "../outside/keep.txt", "overwrite": true}),
        ),
        ..approve()
    };
    let error = fixture
        .service
        .resolve(&pending.id, escape)
        .await
        .unwrap_err();
    assert!(
        matches!(error, pp_tasks::Error::InvalidArguments(_)),
        "{error}"
    );
    let edited = ResolveRequest {
        edited_arguments: Some(json!({"from": "a.txt", "to": "renamed.txt"})),
        ..approve()
    };
    let done = fixture.service.resolve(&pending.id, edited).await.unwrap();
    assert_eq!(done.state, TaskState::Completed);
    assert_eq!(fixture.tree.read("renamed.txt"), "a");
    assert!(!fixture.tree.exists("b.txt"));
    assert_eq!(fixture.tree.outside_snapshot()[0].1, b"outside");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_destination_or_a_file_that_changed_makes_the_approval_stale() {
    let fixture = Fixture::new();
    fixture.tree.file("a.txt", "a");
    fixture.tree.file("gone.txt", "v1");
    let task = fixture
        .run(json!([
            {"tool_calls": [{"name": "move_file", "arguments": {"from": "a.txt", "to": "b.txt"}}]},
            {"tool_calls": [{"name": "delete_file", "arguments": {"path": "gone.txt"}}]},
            {"content": "done"}
        ]))
        .await;
    let pending = fixture.pending(&task.id).await;
    // The destination appears after the person saw the card.
    fixture.tree.file("b.txt", "someone else's");
    fixture
        .service
        .resolve(&pending.id, approve())
        .await
        .unwrap();
    let approval = fixture.store().approval(&pending.id).await.unwrap();
    assert_eq!(approval.state, ApprovalState::Stale);
    assert_eq!(fixture.tree.read("a.txt"), "a");
    assert_eq!(fixture.tree.read("b.txt"), "someone else's");

    let pending = fixture.pending(&task.id).await;
    fixture.tree.file("gone.txt", "v2, edited since");
    fixture
        .service
        .resolve(&pending.id, approve())
        .await
        .unwrap();
    let approval = fixture.store().approval(&pending.id).await.unwrap();
    assert_eq!(approval.state, ApprovalState::Stale);
    assert_eq!(fixture.tree.read("gone.txt"), "v2, edited since");
    assert_eq!(fixture.audit_count("approval_stale").await, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reverting_an_overwriting_move_moves_back_and_restores_the_replaced_file() {
    let fixture = Fixture::new();
    fixture.tree.file("draft.txt", "new version\n");
    fixture.tree.file("final.txt", "old version\n");
    let task = run_approving(
        &fixture,
        call_then_done(
            "move_file",
            &json!({"from": "draft.txt", "to": "final.txt", "overwrite": true}),
        ),
    )
    .await;
    let moved = changes(&fixture, &task).await.remove(0);
    assert_eq!(moved.kind, ChangeKind::Moved);
    // Something at the old place again: moving back would replace it.
    fixture.tree.file("draft.txt", "someone's new draft\n");
    let refused = fixture
        .service
        .changes()
        .revert(&moved.id, Actor::Operator)
        .await
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(&refused, RevertRefusal::ChangedSince { message, .. } if message.contains("`draft.txt`")),
        "{refused:?}"
    );
    assert_eq!(fixture.tree.read("draft.txt"), "someone's new draft\n");
    std::fs::remove_file(fixture.tree.workspace().join("draft.txt")).unwrap();

    let revert = fixture
        .service
        .changes()
        .revert(&moved.id, Actor::Operator)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(revert.kind, ChangeKind::Reverted);
    assert_eq!(fixture.tree.read("draft.txt"), "new version\n");
    assert_eq!(fixture.tree.read("final.txt"), "old version\n");
    let after = changes(&fixture, &task).await;
    assert_eq!(after[0].reverted_by.as_ref(), Some(&revert.id));
    let row = &crate::fixture::audit_rows(&fixture.service, "change_reverted").await[0];
    assert!(
        row.detail
            .as_deref()
            .is_some_and(|detail| detail.contains("moved `final.txt` back to `draft.txt`")),
        "{:?}",
        row.detail
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_moved_file_changed_since_is_not_moved_back() {
    let fixture = Fixture::new();
    fixture.tree.file("a.txt", "a\n");
    let task = run_approving(
        &fixture,
        call_then_done("move_file", &json!({"from": "a.txt", "to": "b.txt"})),
    )
    .await;
    let moved = changes(&fixture, &task).await.remove(0);
    fixture.tree.file("b.txt", "a\nedited after the move\n");
    let refused = fixture
        .service
        .changes()
        .revert(&moved.id, Actor::Operator)
        .await
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(&refused, RevertRefusal::ChangedSince { .. }),
        "{refused:?}"
    );
    assert!(!fixture.tree.exists("a.txt"));
    assert_eq!(fixture.tree.read("b.txt"), "a\nedited after the move\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reverting_a_delete_restores_the_file_and_the_empty_folder() {
    let fixture = Fixture::new();
    fixture.tree.file("notes/keep.md", "precious\n");
    fixture.tree.dir("empty");
    let task = run_approving(
        &fixture,
        json!([
            {"tool_calls": [{"name": "delete_file", "arguments": {"path": "notes/keep.md"}}]},
            {"tool_calls": [{"name": "delete_file", "arguments": {"path": "empty"}}]},
            {"content": "done"}
        ]),
    )
    .await;
    assert!(!fixture.tree.exists("notes/keep.md") && !fixture.tree.exists("empty"));
    let logged = changes(&fixture, &task).await;
    for change in &logged {
        fixture
            .service
            .changes()
            .revert(&change.id, Actor::Operator)
            .await
            .unwrap()
            .unwrap();
    }
    assert_eq!(fixture.tree.read("notes/keep.md"), "precious\n");
    assert!(fixture.tree.workspace().join("empty").is_dir());
    assert_eq!(fixture.audit_count("change_reverted").await, 2);
    // Reverting again is refused: it is already reverted.
    let again = fixture
        .service
        .changes()
        .revert(&logged[0].id, Actor::Operator)
        .await
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(again, RevertRefusal::NotRevertible(_)),
        "{again:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_file_is_not_restored_over_a_new_one() {
    let fixture = Fixture::new();
    fixture.tree.file("a.txt", "old\n");
    let task = run_approving(
        &fixture,
        call_then_done("delete_file", &json!({"path": "a.txt"})),
    )
    .await;
    let deleted = changes(&fixture, &task).await.remove(0);
    fixture.tree.file("a.txt", "a new one\n");
    let refused = fixture
        .service
        .changes()
        .revert(&deleted.id, Actor::Operator)
        .await
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(&refused, RevertRefusal::ChangedSince { .. }),
        "{refused:?}"
    );
    assert_eq!(fixture.tree.read("a.txt"), "a new one\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_too_large_to_keep_says_so_before_approval() {
    let fixture = Fixture::with(TaskSettings {
        revert: RevertSettings {
            max_bytes: 8,
            ..RevertSettings::default()
        },
        ..TaskSettings::default()
    });
    fixture.tree.file("big.txt", "more than eight bytes\n");
    let task = fixture
        .run(call_then_done("delete_file", &json!({"path": "big.txt"})))
        .await;
    let pending = fixture.pending(&task.id).await;
    assert_eq!(pending.revertible, Some(false));
    let view = fixture.service.approval_view(&pending.id).await.unwrap();
    assert_eq!(view.size, Some(22));
    fixture
        .service
        .resolve(&pending.id, approve())
        .await
        .unwrap();
    let deleted = changes(&fixture, &task.id).await.remove(0);
    assert_eq!(
        (deleted.kind, deleted.revertible),
        (ChangeKind::Deleted, false)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reverting_a_created_folder_removes_it_only_while_empty() {
    let fixture = Fixture::new();
    let task = run_approving(
        &fixture,
        call_then_done("make_dir", &json!({"path": "a/b"})),
    )
    .await;
    let logged = changes(&fixture, &task).await;
    let (outer, inner) = (&logged[0], &logged[1]);
    // The outer folder holds the inner one: not empty, not removed.
    let refused = fixture
        .service
        .changes()
        .revert(&outer.id, Actor::Operator)
        .await
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(&refused, RevertRefusal::ChangedSince { message, .. } if message.contains("not empty")),
        "{refused:?}"
    );
    assert!(fixture.tree.workspace().join("a/b").is_dir());
    fixture
        .service
        .changes()
        .revert(&inner.id, Actor::Operator)
        .await
        .unwrap()
        .unwrap();
    fixture
        .service
        .changes()
        .revert(&outer.id, Actor::Operator)
        .await
        .unwrap()
        .unwrap();
    assert!(!fixture.tree.exists("a"));
}

/// A crash between a revert's file operation and its record: the intent is resolved by
/// looking at the workspace — a move back that happened, a folder created again, are
/// recorded done; a folder removal that never happened is abandoned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_in_the_middle_of_an_entry_revert_loses_nothing() {
    use pp_store::{Before, ChangeState, NewChange};
    let fixture = Fixture::new();
    fixture.tree.file("a.txt", "a\n");
    fixture.tree.dir("empty");
    let task = run_approving(
        &fixture,
        json!([
            {"tool_calls": [{"name": "move_file", "arguments": {"from": "a.txt", "to": "b.txt"}}]},
            {"tool_calls": [{"name": "delete_file", "arguments": {"path": "empty"}}]},
            {"tool_calls": [{"name": "make_dir", "arguments": {"path": "made"}}]},
            {"content": "done"}
        ]),
    )
    .await;
    let logged = changes(&fixture, &task).await;
    let store = fixture.store();
    let intent = |change: &Change| NewChange {
        task_id: task.clone(),
        approval_id: None,
        tool: "revert".into(),
        kind: ChangeKind::Reverted,
        path: change.path.clone(),
        from_path: None,
        root: change.root,
        bytes: None,
        before: Before::Unknown,
        before_mode: None,
        after_fingerprint: None,
        after_sha256: None,
    };
    let mut intents = Vec::new();
    for change in &logged {
        intents.push(
            store
                .begin_revert(&change.id, intent(change))
                .await
                .unwrap()
                .unwrap(),
        );
    }
    // The move back and the folder's re-creation happened; the removal did not.
    std::fs::rename(
        fixture.tree.workspace().join("b.txt"),
        fixture.tree.workspace().join("a.txt"),
    )
    .unwrap();
    fixture.tree.dir("empty");

    let restarted = fixture.another_process();
    assert_eq!(
        restarted
            .changes()
            .recover(std::time::Duration::ZERO)
            .await
            .unwrap(),
        3
    );
    let mut states: Vec<ChangeState> = Vec::new();
    for intent in &intents {
        states.push(store.change(&intent.change.id).await.unwrap().state);
    }
    assert_eq!(
        states,
        [ChangeState::Done, ChangeState::Done, ChangeState::Abandoned]
    );
    // The created folder's revert can still happen.
    restarted
        .changes()
        .revert(&logged[2].id, Actor::Operator)
        .await
        .unwrap()
        .unwrap();
    assert!(!fixture.tree.exists("made"));
    assert_eq!(fixture.tree.read("a.txt"), "a\n");
}
