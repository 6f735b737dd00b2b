//! The change log, snapshots and revert (issue 11): what approved calls did to disk,
//! what a card says happened, and undoing a change without clobbering anything.

use std::sync::Arc;
use std::time::Duration;

use pp_store::{Before, NewChange};
use pp_tasks::{
    CreateTask, Decision, ModelSource, OutcomeStatus, ResolveRequest, RevertRefusal,
    RevertSettings, TaskService, TaskSettings, Workspaces,
};
use pp_tools::{MemoryProvider, MemorySettings, Toolbox};
use pp_types::{Actor, ApprovalState, Change, ChangeKind, ChangeRoot, TaskState};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::fixture::{
    Fixture, approve, audit_rows, changes, pending_approval, run_approving, write_then_done,
};

fn kinds(changes: &[Change]) -> Vec<(ChangeKind, Option<&str>, Option<u64>, bool)> {
    changes
        .iter()
        .map(|change| {
            (
                change.kind,
                change.path.as_deref(),
                change.bytes,
                change.revertible,
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approved_writes_and_edits_are_logged_and_counted() {
    let fixture = Fixture::new();
    fixture.tree.file("notes/todo.md", "one\ntwo\n");
    fixture.tree.file("old.txt", "old content\n");
    let task = run_approving(
        &fixture,
        json!([
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "reports/x.md", "content": "hello\n"}}]},
            {"tool_calls": [{"name": "edit_file", "arguments": {"path": "notes/todo.md", "old_text": "two", "new_text": "three"}}]},
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "old.txt", "content": "new\n"}}]},
            {"content": "done"}
        ]),
    )
    .await;
    let logged = changes(&fixture, &task).await;
    assert_eq!(
        kinds(&logged),
        vec![
            (ChangeKind::Created, Some("reports/x.md"), Some(6), true),
            (ChangeKind::Edited, Some("notes/todo.md"), Some(10), true),
            (ChangeKind::Overwritten, Some("old.txt"), Some(4), true),
        ]
    );
    assert!(logged.iter().all(|change| change.approval_id.is_some()));
    let record = fixture.service.task(&task).await.unwrap();
    assert_eq!(
        (
            record.changes.created,
            record.changes.edited,
            record.changes.overwritten,
            record.changes.reverted
        ),
        (1, 1, 1, 0)
    );
    // The cards say what was written, never just "approved".
    let views = fixture
        .service
        .approval_views(Some(ApprovalState::Approved), 10)
        .await
        .unwrap();
    let mut messages: Vec<String> = views
        .iter()
        .map(|view| {
            let outcome = view.outcome.clone().unwrap();
            assert_eq!(outcome.status, OutcomeStatus::Done);
            assert_eq!(view.revertible, Some(true));
            outcome.message
        })
        .collect();
    messages.sort();
    assert_eq!(
        messages,
        [
            "Edited `notes/todo.md` (10 B)",
            "Written `old.txt` (4 B)",
            "Written `reports/x.md` (6 B)"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reverting_a_create_deletes_it_and_an_overwrite_restores_it() {
    let fixture = Fixture::new();
    fixture.tree.file("old.txt", "precious\n");
    let task = run_approving(
        &fixture,
        json!([
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "new.txt", "content": "agent\n"}}]},
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "old.txt", "content": "clobbered\n"}}]},
            {"content": "done"}
        ]),
    )
    .await;
    let logged = changes(&fixture, &task).await;
    let (created, overwritten) = (&logged[0], &logged[1]);

    let revert = fixture
        .service
        .changes()
        .revert(&overwritten.id, Actor::Operator)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(revert.kind, ChangeKind::Reverted);
    assert_eq!(revert.path.as_deref(), Some("old.txt"));
    assert_eq!(revert.bytes, Some(9));
    assert!(!revert.revertible, "a revert is not itself revertible");
    assert_eq!(fixture.tree.read("old.txt"), "precious\n");

    fixture
        .service
        .changes()
        .revert(&created.id, Actor::Operator)
        .await
        .unwrap()
        .unwrap();
    assert!(!fixture.tree.exists("new.txt"), "the created file is gone");

    let after = changes(&fixture, &task).await;
    assert_eq!(after.len(), 4);
    assert_eq!(after[1].reverted_by.as_ref(), Some(&revert.id));
    assert!(!after[0].revertible && !after[1].revertible);
    assert_eq!(fixture.audit_count("change_reverted").await, 2);
    let row = &crate::fixture::audit_rows(&fixture.service, "change_reverted").await[1];
    assert_eq!(row.actor, Actor::Operator);
    assert_eq!(row.task_id.as_ref(), Some(&task));

    // A second revert of the same change is refused and writes nothing.
    fixture.tree.file("old.txt", "precious\n");
    let again = fixture
        .service
        .changes()
        .revert(&overwritten.id, Actor::Operator)
        .await
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(&again, RevertRefusal::NotRevertible(message) if message.contains("already reverted")),
        "{again:?}"
    );
    let counts = fixture.service.task(&task).await.unwrap().changes;
    assert_eq!(
        (counts.created, counts.overwritten, counts.reverted),
        (1, 1, 2)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_changed_since_the_agents_write_is_never_clobbered() {
    let fixture = Fixture::new();
    fixture.tree.file("plan.md", "a\nb\n");
    let task = run_approving(&fixture, write_then_done("plan.md", "a\nagent\n")).await;
    let change = changes(&fixture, &task).await.remove(0);
    fixture.tree.file("plan.md", "a\nagent\nperson\n");
    let refused = fixture
        .service
        .changes()
        .revert(&change.id, Actor::Operator)
        .await
        .unwrap()
        .unwrap_err();
    let RevertRefusal::ChangedSince { message, diff } = refused else {
        panic!("expected changed_since, got {refused:?}");
    };
    assert!(
        message.contains("changed after the agent's write"),
        "{message}"
    );
    assert_eq!(
        diff.as_deref(),
        Some("--- a/plan.md\n+++ b/plan.md\n@@ -1,2 +1,3 @@\n a\n agent\n+person\n")
    );
    assert_eq!(fixture.tree.read("plan.md"), "a\nagent\nperson\n");
    assert_eq!(fixture.audit_count("change_reverted").await, 0);
    assert!(
        changes(&fixture, &task).await[0].revertible,
        "still revertible later"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn too_large_to_keep_is_said_before_approval_and_refused_after() {
    let fixture = Fixture::with(TaskSettings {
        revert: RevertSettings {
            max_bytes: 8,
            ..RevertSettings::default()
        },
        ..TaskSettings::default()
    });
    fixture.tree.file("big.txt", "more than eight bytes\n");
    let task = fixture.run(write_then_done("big.txt", "small\n")).await;
    let pending = fixture.pending(&task.id).await;
    assert_eq!(
        pending.revertible,
        Some(false),
        "known before the person approves"
    );
    let view = fixture.service.approval_view(&pending.id).await.unwrap();
    assert_eq!((view.revertible, view.outcome), (Some(false), None));
    fixture
        .service
        .resolve(&pending.id, approve())
        .await
        .unwrap();
    let change = changes(&fixture, &task.id).await.remove(0);
    assert_eq!(
        (change.kind, change.revertible),
        (ChangeKind::Overwritten, false)
    );
    let refused = fixture
        .service
        .changes()
        .revert(&change.id, Actor::Operator)
        .await
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(&refused, RevertRefusal::NotRevertible(message) if message.contains("max_bytes")),
        "{refused:?}"
    );
    assert_eq!(fixture.tree.read("big.txt"), "small\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outcomes_say_what_really_happened() {
    let fixture = Fixture::new();
    let outcome = |fixture: &Fixture, approval| {
        let service = fixture.service.clone();
        async move {
            let view = service.approval_view(&approval).await.unwrap();
            let outcome = view.outcome.unwrap();
            (outcome.status, outcome.message)
        }
    };

    // Stale: the file changed after the card was shown.
    fixture.tree.file("todo.md", "v1\n");
    let task = fixture.run(write_then_done("todo.md", "mine\n")).await;
    let stale = fixture.pending(&task.id).await;
    fixture.tree.file("todo.md", "v2\n");
    fixture.service.resolve(&stale.id, approve()).await.unwrap();
    assert_eq!(
        outcome(&fixture, stale.id.clone()).await,
        (
            OutcomeStatus::NotRun,
            "Not run — the file changed since you saw it".into()
        )
    );
    assert!(
        changes(&fixture, &task.id).await.is_empty(),
        "nothing logged"
    );

    // Rejected.
    let task = fixture.run(write_then_done("a.txt", "x")).await;
    let rejected = fixture.pending(&task.id).await;
    let reject = ResolveRequest {
        decision: Decision::Reject,
        ..approve()
    };
    fixture.service.resolve(&rejected.id, reject).await.unwrap();
    assert_eq!(
        outcome(&fixture, rejected.id).await,
        (OutcomeStatus::NotRun, "Not run — rejected".into())
    );

    // Cancelled while waiting.
    let task = fixture.run(write_then_done("b.txt", "x")).await;
    let cancelled = fixture.pending(&task.id).await;
    fixture.service.cancel(&task.id).await.unwrap();
    assert_eq!(
        outcome(&fixture, cancelled.id).await,
        (OutcomeStatus::NotRun, "Not run — task cancelled".into())
    );

    // Failed: an edit whose text is not in the file (no preview, so no stale check)
    // fails when it runs.
    fixture.tree.file(
        "c.txt",
        "something else
",
    );
    let task = fixture
        .run(json!([
            {"tool_calls": [{"name": "edit_file", "arguments": {"path": "c.txt", "old_text": "absent", "new_text": "x"}}]},
            {"content": "done"}
        ]))
        .await;
    let failed = fixture.pending(&task.id).await;
    fixture
        .service
        .resolve(&failed.id, approve())
        .await
        .unwrap();
    let (status, message) = outcome(&fixture, failed.id).await;
    assert_eq!(status, OutcomeStatus::Failed, "{message}");
    assert!(message.starts_with("Failed: "), "{message}");
    assert!(changes(&fixture, &task.id).await.is_empty());

    // A tool without snapshots: effects unknown.
    fixture.tree.file("s.txt", "");
    let task = fixture
        .run(json!([
            {"tool_calls": [{"name": "stamp_files", "arguments": {"paths": ["s.txt"], "stamp": "x"}}]},
            {"content": "done"}
        ]))
        .await;
    let stamp = fixture.pending(&task.id).await;
    assert_eq!(stamp.revertible, None);
    fixture.service.resolve(&stamp.id, approve()).await.unwrap();
    let logged = changes(&fixture, &task.id).await;
    assert_eq!(
        kinds(&logged),
        vec![(ChangeKind::EffectsUnknown, None, None, false)]
    );
    assert_eq!(
        outcome(&fixture, stamp.id).await,
        (
            OutcomeStatus::Done,
            "Ran `stamp_files` — effects unknown to PocketPilot".into()
        )
    );
}

/// A crash between a revert's file write and its done row loses nothing: the intent
/// (written before the write) is resolved on the next read by looking at the file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_between_the_revert_write_and_its_record_loses_nothing() {
    let fixture = Fixture::new();
    fixture.tree.file("a.txt", "original\n");
    fixture.tree.file("b.txt", "original b\n");
    let task = run_approving(
        &fixture,
        json!([
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "agent\n"}}]},
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "b.txt", "content": "agent b\n"}}]},
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
        before: Before::Absent,
        before_mode: None,
        after_fingerprint: None,
        after_sha256: None,
    };
    // Crash 1: the intent is recorded and the file written, then the process dies.
    let written = store
        .begin_revert(&logged[0].id, intent(&logged[0]))
        .await
        .unwrap()
        .unwrap();
    fixture.tree.file("a.txt", "original\n");
    // Crash 2: the intent is recorded, the process dies before the write.
    let unwritten = store
        .begin_revert(&logged[1].id, intent(&logged[1]))
        .await
        .unwrap()
        .unwrap();

    // A restarted process reads the task's changes after the grace period.
    let restarted = fixture.another_process();
    let count = restarted.changes().recover(Duration::ZERO).await.unwrap();
    assert_eq!(count, 2);
    let after = restarted.changes().of_task(&task).await.unwrap();
    assert_eq!(
        kinds(&after),
        vec![
            (ChangeKind::Overwritten, Some("a.txt"), Some(6), false),
            (ChangeKind::Overwritten, Some("b.txt"), Some(8), true),
            (ChangeKind::Reverted, Some("a.txt"), Some(9), false),
        ],
        "the written revert is done, the unwritten one abandoned (hidden)"
    );
    assert_eq!(after[0].reverted_by.as_ref(), Some(&written.change.id));
    assert_eq!(
        store.change(&unwritten.change.id).await.unwrap().state,
        pp_store::ChangeState::Abandoned
    );
    let audit = crate::fixture::audit_rows(&fixture.service, "change_reverted").await;
    assert_eq!(audit.len(), 1);
    assert!(
        audit[0]
            .detail
            .as_deref()
            .unwrap()
            .contains("completed after an interruption")
    );
    // The change whose revert never happened can still be reverted.
    restarted
        .changes()
        .revert(&logged[1].id, Actor::Operator)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(fixture.tree.read("b.txt"), "original b\n");
}

/// A service whose toolbox has the memory tool, its memory file in the data directory
/// beside the database (as `pocketpilot` lays it out).
fn memory_service() -> (pp_test_support::TempTree, tempfile::TempDir, TaskService) {
    let tree = pp_test_support::TempTree::new();
    let data = tempfile::tempdir().unwrap();
    let store = pp_test_support::sqlite_store_with_clock(
        &data.path().join("test.db"),
        Arc::new(pp_types::ManualClock::new(pp_types::Timestamp::now())),
    );
    let service = TaskService::build(
        store,
        TaskSettings::default(),
        Workspaces::single("test", tree.workspace()),
        ModelSource::Scripted,
        Toolbox::files().with(Arc::new(MemoryProvider::new(MemorySettings::new(
            data.path(),
        )))),
        None,
    );
    (tree, data, service)
}

#[expect(
    clippy::disallowed_methods,
    reason = "the test edits the memory file behind PocketPilot's back, as a person would"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_memory_write_is_logged_and_reverts_like_a_file_write() {
    let (_tree, data, service) = memory_service();
    let memory_file = data.path().join("memory.md");
    let memory = || std::fs::read_to_string(&memory_file).ok();
    let task = service
        .create(CreateTask {
            prompt: "remember".into(),
            workspace: None,
            actor: Actor::Operator,
            script: Some(json!([
                {"tool_calls": [{"name": "memory_write", "arguments": {"mode": "append", "content": "one\n"}}]},
                {"tool_calls": [{"name": "memory_write", "arguments": {"mode": "append", "content": "two\n"}}]},
                {"tool_calls": [{"name": "memory_write", "arguments": {"mode": "replace", "content": "fresh\n"}}]},
                {"content": "done"}
            ])),
        })
        .await
        .unwrap();
    let mut state = service.run_now(&task.id).await.unwrap().state;
    while state == TaskState::WaitingApproval {
        let pending = pending_approval(&service, &task.id).await;
        assert_eq!(pending.revertible, Some(true), "known before approval");
        state = service.resolve(&pending.id, approve()).await.unwrap().state;
    }
    assert_eq!(state, TaskState::Completed);
    assert_eq!(memory().as_deref(), Some("fresh\n"));

    let logged = service.changes().of_task(&task.id).await.unwrap();
    assert_eq!(
        kinds(&logged),
        vec![
            (ChangeKind::Created, Some("memory.md"), Some(4), true),
            (ChangeKind::Edited, Some("memory.md"), Some(8), true),
            (ChangeKind::Overwritten, Some("memory.md"), Some(6), true),
        ]
    );
    assert!(
        logged
            .iter()
            .all(|change| change.root == ChangeRoot::Memory)
    );
    let (created, edited, overwritten) = (&logged[0], &logged[1], &logged[2]);

    // Undo the replace: the memory the agent replaced comes back.
    let revert = service
        .changes()
        .revert(&overwritten.id, Actor::Operator)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (revert.kind, revert.root, revert.path.as_deref()),
        (ChangeKind::Reverted, ChangeRoot::Memory, Some("memory.md"))
    );
    assert_eq!(memory().as_deref(), Some("one\ntwo\n"));

    // A person edits the memory: reverting the append would clobber it, so it is refused.
    std::fs::write(&memory_file, "one\ntwo\nperson\n").unwrap();
    let refused = service
        .changes()
        .revert(&edited.id, Actor::Operator)
        .await
        .unwrap()
        .unwrap_err();
    let RevertRefusal::ChangedSince { diff, .. } = refused else {
        panic!("expected changed_since, got {refused:?}");
    };
    assert_eq!(
        diff.as_deref(),
        Some("--- a/memory.md\n+++ b/memory.md\n@@ -1,2 +1,3 @@\n one\n two\n+person\n")
    );
    assert_eq!(memory().as_deref(), Some("one\ntwo\nperson\n"), "untouched");

    // Back to what the agent wrote: the append and then the first write revert.
    std::fs::write(&memory_file, "one\ntwo\n").unwrap();
    service
        .changes()
        .revert(&edited.id, Actor::Operator)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(memory().as_deref(), Some("one\n"));
    service
        .changes()
        .revert(&created.id, Actor::Operator)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(memory(), None, "the memory the agent created is gone");
    assert_eq!(audit_rows(&service, "change_reverted").await.len(), 3);
    let after = service.changes().of_task(&task.id).await.unwrap();
    assert!(after[..3].iter().all(|change| change.reverted_by.is_some()));
}

/// The team's memory in the store, as `pp-knowledge` keeps it in team mode (this crate
/// cannot reach that one: the same few calls, waited on from the blocking pool).
#[derive(Debug)]
struct StoreMemory {
    store: pp_store::Store,
    runtime: tokio::runtime::Handle,
}

impl pp_tools::SharedMemory for StoreMemory {
    fn load(&self) -> Result<Option<String>, pp_tools::memory::MemoryError> {
        let memory = self.runtime.block_on(self.store.team_memory()).unwrap();
        Ok(memory.map(|memory| memory.content))
    }
    fn swap(
        &self,
        expected: &str,
        content: &str,
        version: &str,
    ) -> Result<bool, pp_tools::memory::MemoryError> {
        let expected = (expected != pp_tools::memory::ABSENT_VERSION).then_some(expected);
        Ok(self
            .runtime
            .block_on(self.store.replace_team_memory(expected, content, version))
            .unwrap())
    }
    fn remove(&self, expected: &str) -> Result<bool, pp_tools::memory::MemoryError> {
        Ok(self
            .runtime
            .block_on(self.store.remove_team_memory(expected))
            .unwrap())
    }
}

/// Issue 29, item 5: in team mode the memory is the team's, in the database: an approved
/// `memory_write` changes it there (not the data directory's file), and its revert is a
/// compare-and-swap there, refused when a person changed the memory meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_teams_memory_is_written_and_reverted_in_the_database() {
    let tree = pp_test_support::TempTree::new();
    let data = tempfile::tempdir().unwrap();
    let store = pp_test_support::sqlite_store_with_clock(
        &data.path().join("test.db"),
        Arc::new(pp_types::ManualClock::new(pp_types::Timestamp::now())),
    );
    let mirror = data.path().join("mirror");
    std::fs::create_dir_all(&mirror).unwrap();
    let settings = MemorySettings {
        shared: Some(Arc::new(StoreMemory {
            store: store.clone(),
            runtime: tokio::runtime::Handle::current(),
        })),
        ..MemorySettings::new(&mirror)
    };
    let service = TaskService::build(
        store.clone(),
        TaskSettings::default(),
        Workspaces::single("test", tree.workspace()),
        ModelSource::Scripted,
        Toolbox::files().with(Arc::new(MemoryProvider::new(settings.clone()))),
        None,
    )
    .with_data_dir(data.path().to_owned())
    .with_memory(settings.memory());
    let team_memory = || async {
        store
            .team_memory()
            .await
            .unwrap()
            .map(|memory| memory.content)
    };
    let task = service
        .create(CreateTask {
            prompt: "remember".into(),
            workspace: None,
            actor: Actor::Operator,
            script: Some(json!([
                {"tool_calls": [{"name": "memory_write", "arguments": {"mode": "append", "content": "one\n"}}]},
                {"tool_calls": [{"name": "memory_write", "arguments": {"mode": "replace", "content": "fresh\n"}}]},
                {"content": "done"}
            ])),
        })
        .await
        .unwrap();
    let mut state = service.run_now(&task.id).await.unwrap().state;
    while state == TaskState::WaitingApproval {
        let pending = pending_approval(&service, &task.id).await;
        state = service.resolve(&pending.id, approve()).await.unwrap().state;
    }
    assert_eq!(state, TaskState::Completed);
    assert_eq!(team_memory().await.as_deref(), Some("fresh\n"));
    assert!(
        !data.path().join("memory.md").exists(),
        "the file is not the memory"
    );
    let logged = service.changes().of_task(&task.id).await.unwrap();
    assert_eq!(
        kinds(&logged),
        vec![
            (ChangeKind::Created, Some("memory.md"), Some(4), true),
            (ChangeKind::Overwritten, Some("memory.md"), Some(6), true),
        ]
    );
    // Another process of the team changes the memory: the revert is refused.
    let fresh = pp_tools::memory::version_of(b"fresh\n");
    let person = pp_tools::memory::version_of(b"person\n");
    assert!(
        store
            .replace_team_memory(Some(&fresh), "person\n", &person)
            .await
            .unwrap()
    );
    let refused = service
        .changes()
        .revert(&logged[1].id, Actor::Operator)
        .await
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(refused, RevertRefusal::ChangedSince { .. }),
        "{refused:?}"
    );
    assert_eq!(team_memory().await.as_deref(), Some("person\n"));
    // Back to what the agent left: the revert lands in the database.
    assert!(
        store
            .replace_team_memory(Some(&person), "fresh\n", &fresh)
            .await
            .unwrap()
    );
    service
        .changes()
        .revert(&logged[1].id, Actor::Operator)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(team_memory().await.as_deref(), Some("one\n"));
    service
        .changes()
        .revert(&logged[0].id, Actor::Operator)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        team_memory().await,
        None,
        "the memory the agent created is gone"
    );
}
