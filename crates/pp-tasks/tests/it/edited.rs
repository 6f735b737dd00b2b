//! An approval with edited arguments is recorded as what ran: the card, the timeline,
//! the outcome, the change log and the model's tool result all name the edited call.

use pp_tasks::{Error, ResolveRequest};
use pp_types::{ApprovalState, EventKind, TaskState};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::fixture::{Fixture, approve, write_then_done};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_call_is_recorded_as_what_ran() {
    let fixture = Fixture::new();
    fixture.tree.file("other.md", "other\n");
    let task = fixture.run(write_then_done("old.md", "asked\n")).await;
    let pending = fixture.pending(&task.id).await;
    let edited = json!({"path": "other.md", "content": "edited\n"});
    let done = fixture
        .service
        .resolve(
            &pending.id,
            ResolveRequest {
                edited_arguments: Some(edited.clone()),
                ..approve()
            },
        )
        .await
        .unwrap();
    assert_eq!(done.state, TaskState::Completed);
    assert_eq!(fixture.tree.read("other.md"), "edited\n");
    assert!(!fixture.tree.exists("old.md"));

    // The card: the call that ran, its diff, who edited it.
    let view = fixture.service.approval_view(&pending.id).await.unwrap();
    let ran = view.edited.clone().expect("the edited call");
    assert_eq!(ran.arguments, edited);
    assert_eq!(ran.by.as_deref(), Some("operator"));
    let preview = ran.preview.expect("its effect");
    assert_eq!(preview.target, "other.md");
    let diff = preview.diff.expect("a diff against the file it replaced");
    assert!(
        diff.contains("-other") && diff.contains("+edited"),
        "{diff}"
    );
    // The outcome and the change log name the file written.
    let outcome = view.outcome.expect("an outcome");
    assert!(outcome.message.contains("other.md"), "{outcome:?}");
    let changes = fixture.service.changes().of_task(&task.id).await.unwrap();
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0].path.as_deref(), Some("other.md"));
    assert_eq!(changes[0].approval_id.as_ref(), Some(&pending.id));

    // The timeline: the decision carries the arguments that ran, their effect, and who.
    let events = fixture.service.task_events(&task.id, 0).await.unwrap();
    let resolved = events
        .iter()
        .find_map(|stored| match &stored.event.kind {
            EventKind::ApprovalResolved {
                edited: true,
                arguments,
                preview,
                edited_by,
                ..
            } => Some((arguments.clone(), preview.clone(), edited_by.clone())),
            _ => None,
        })
        .expect("an edited approval_resolved event");
    assert_eq!(resolved.0, Some(edited));
    assert_eq!(
        resolved.1.map(|preview| preview.target),
        Some("other.md".into())
    );
    assert_eq!(resolved.2.as_deref(), Some("operator"));

    // The model is told the person edited its call, and how.
    let told = events
        .iter()
        .find_map(|stored| match &stored.event.kind {
            EventKind::ToolResult { content, .. } => Some(content.clone()),
            _ => None,
        })
        .expect("the edited call's result");
    assert!(
        told.starts_with("[the person edited this call before approving it"),
        "{told}"
    );
    assert!(told.contains(r#"`path` "old.md" → "other.md""#), "{told}");
    assert!(
        told.contains("`content` \"asked\\n\" → \"edited\\n\""),
        "{told}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_cannot_change_which_tool_runs() {
    let fixture = Fixture::new();
    fixture.tree.file("keep.md", "keep\n");
    let task = fixture.run(write_then_done("new.md", "x\n")).await;
    let pending = fixture.pending(&task.id).await;
    // Naming another tool in the arguments is only an unknown argument of this one.
    for sneaky in [
        json!({"tool": "delete_file", "path": "keep.md"}),
        json!({"name": "delete_file", "path": "keep.md", "content": ""}),
    ] {
        let refused = fixture
            .service
            .resolve(
                &pending.id,
                ResolveRequest {
                    edited_arguments: Some(sneaky),
                    ..approve()
                },
            )
            .await
            .unwrap_err();
        assert!(matches!(refused, Error::InvalidArguments(_)), "{refused:?}");
    }
    let still = fixture.store().approval(&pending.id).await.unwrap();
    assert_eq!(
        (still.state, still.tool.as_str()),
        (ApprovalState::Pending, "write_file")
    );
    assert_eq!(fixture.tree.read("keep.md"), "keep\n");
}
