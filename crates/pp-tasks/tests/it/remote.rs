//! Decisions from a link or a chat app (`via` link or telegram): they reject anything,
//! approve only `[remote] approve_capabilities`, never edit, and every decision records
//! where it came from.

use pp_tasks::{Decision, RemoteSettings, ResolveRequest, TaskSettings};
use pp_types::{ApprovalState, Via};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::fixture::{Fixture, approve, audit_rows, call_then_done, write_then_done};

fn by(via: Via, decision: Decision) -> ResolveRequest {
    ResolveRequest {
        decision,
        via: Some(via),
        remote_user: Some("telegram:42 (@ana)".into()),
        ..approve()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_approve_of_a_delete_is_refused_and_records_nothing() {
    let fixture = Fixture::new();
    fixture.tree.file("old.txt", "keep me\n");
    let task = fixture
        .run(call_then_done("delete_file", &json!({"path": "old.txt"})))
        .await;
    let pending = fixture.pending(&task.id).await;
    assert!(fixture.service.remote_refusal(&pending).is_some());
    for via in [Via::Link, Via::Telegram] {
        let refused = fixture
            .service
            .resolve(&pending.id, by(via, Decision::Approve))
            .await
            .unwrap_err();
        let pp_tasks::Error::NotRemotelyApprovable(message) = refused else {
            panic!("{refused:?}");
        };
        assert!(message.contains("file:delete"), "{message}");
        assert!(
            message.ends_with("approve this in the console or the terminal"),
            "{message}"
        );
    }
    // Nothing was recorded: the approval still waits and the file is there.
    let still = fixture.store().approval(&pending.id).await.unwrap();
    assert_eq!(still.state, ApprovalState::Pending);
    assert_eq!(fixture.audit_count("approval_approved").await, 0);
    assert_eq!(fixture.tree.read("old.txt"), "keep me\n");
    // A reject from the same place is always allowed, and says where it came from.
    fixture
        .service
        .resolve(&pending.id, by(Via::Telegram, Decision::Reject))
        .await
        .unwrap();
    let decided = fixture.store().approval(&pending.id).await.unwrap();
    assert_eq!(decided.state, ApprovalState::Rejected);
    assert_eq!(decided.resolved_via, Some(Via::Telegram));
    assert_eq!(
        decided.resolved_by_user.as_deref(),
        Some("telegram:42 (@ana)")
    );
    let rows = audit_rows(&fixture.service, "approval_rejected").await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].via, Some(Via::Telegram));
    assert_eq!(rows[0].user.as_deref(), Some("telegram:42 (@ana)"));
    assert_eq!(fixture.tree.read("old.txt"), "keep me\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_approves_a_write_as_shown_but_never_an_edited_one() {
    let fixture = Fixture::new();
    let task = fixture.run(write_then_done("notes.md", "hello\n")).await;
    let pending = fixture.pending(&task.id).await;
    assert_eq!(fixture.service.remote_refusal(&pending), None);
    let edited = ResolveRequest {
        edited_arguments: Some(json!({"path": "notes.md", "content": "other\n"})),
        ..by(Via::Link, Decision::Approve)
    };
    let refused = fixture
        .service
        .resolve(&pending.id, edited)
        .await
        .unwrap_err();
    assert!(
        matches!(refused, pp_tasks::Error::BadRequest(_)),
        "{refused:?}"
    );
    fixture
        .service
        .resolve(&pending.id, by(Via::Link, Decision::Approve))
        .await
        .unwrap();
    assert_eq!(fixture.tree.read("notes.md"), "hello\n");
    let decided = fixture.store().approval(&pending.id).await.unwrap();
    assert_eq!(decided.resolved_via, Some(Via::Link));
    let rows = audit_rows(&fixture.service, "approval_approved").await;
    assert_eq!(rows[0].via, Some(Via::Link));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_and_the_terminal_approve_what_links_may_not() {
    let fixture = Fixture::with(TaskSettings {
        remote: RemoteSettings {
            approve_capabilities: vec!["file:delete".into()],
        },
        ..TaskSettings::default()
    });
    let task = fixture.run(write_then_done("a.md", "x\n")).await;
    let pending = fixture.pending(&task.id).await;
    // Named capabilities only: with `file:delete` alone, a write is not approvable remotely.
    assert!(fixture.service.remote_refusal(&pending).is_some());
    let refused = fixture
        .service
        .resolve(&pending.id, by(Via::Link, Decision::Approve))
        .await
        .unwrap_err();
    assert!(matches!(refused, pp_tasks::Error::NotRemotelyApprovable(_)));
    let at_the_terminal = ResolveRequest {
        via: Some(Via::Cli),
        remote_user: None,
        ..approve()
    };
    fixture
        .service
        .resolve(&pending.id, at_the_terminal)
        .await
        .unwrap();
    assert_eq!(fixture.tree.read("a.md"), "x\n");
    let decided = fixture.store().approval(&pending.id).await.unwrap();
    assert_eq!(decided.resolved_via, Some(Via::Cli));
    assert_eq!(decided.resolved_by_user, None);
}
