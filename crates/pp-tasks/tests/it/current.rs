//! What a card shows of the change's size, and its target checked again at read time.

use pp_tasks::CurrentTarget;
use pp_types::{ApprovalState, EffectScope, TaskState};
use pretty_assertions::assert_eq;

use crate::fixture::{Fixture, approve, write_then_done};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_card_shows_the_scope_and_line_counts_of_the_preview() {
    let fixture = Fixture::new();
    fixture.tree.file("notes.txt", "keep\nold\n");
    let task = fixture
        .run(write_then_done("notes.txt", "keep\nnew\nmore\n"))
        .await;
    let view = fixture
        .service
        .approval_view(&fixture.pending(&task.id).await.id)
        .await
        .unwrap();
    assert_eq!(
        (view.scope, view.added, view.removed),
        (Some(EffectScope::ReplacesWholeFile), Some(2), Some(1))
    );
    let json = serde_json::to_value(&view).unwrap();
    assert_eq!(json["scope"], "replaces_whole_file");
    assert_eq!(
        (json["added"].as_u64(), json["removed"].as_u64()),
        (Some(2), Some(1))
    );

    let created = fixture
        .run(write_then_done("fresh.md", "# Title\n\nbody\n"))
        .await;
    let view = fixture
        .service
        .approval_view(&fixture.pending(&created.id).await.id)
        .await
        .unwrap();
    assert_eq!(
        (view.scope, view.added, view.removed),
        (Some(EffectScope::NewFile), Some(3), Some(0))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_target_is_checked_again_when_a_card_is_read() {
    let fixture = Fixture::new();
    fixture.tree.file("todo.md", "- milk\n");
    let task = fixture
        .run(write_then_done("todo.md", "- milk\n- eggs\n"))
        .await;
    let pending = fixture.pending(&task.id).await;

    let unchanged = fixture
        .service
        .approval_view_checked(&pending.id)
        .await
        .unwrap();
    assert_eq!(
        unchanged.current,
        Some(CurrentTarget {
            changed: false,
            diff: None
        })
    );

    fixture
        .tree
        .file("todo.md", "- milk\n- bread (added by hand)\n");
    let changed = fixture
        .service
        .approval_view_checked(&pending.id)
        .await
        .unwrap();
    let current = changed.current.clone().expect("the target is checked");
    assert!(current.changed);
    let diff = current.diff.expect("a diff against the current file");
    assert!(diff.contains("-- bread (added by hand)"), "{diff}");
    assert!(diff.contains("+- eggs"), "{diff}");
    assert_eq!(
        changed.diff, unchanged.diff,
        "the diff first shown is kept next to the current one"
    );
    let json = serde_json::to_value(&changed).unwrap();
    assert_eq!(json["current"]["changed"], true);

    // The inbox does not check targets; only a single card does.
    let listed = fixture.service.approval_views(None, 10).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].current, None);
    assert_eq!(
        serde_json::to_value(&listed[0]).unwrap().get("current"),
        None
    );

    // Approving now refuses the call, as the card warned; a resolved card is not checked.
    let done = fixture
        .service
        .resolve(&pending.id, approve())
        .await
        .unwrap();
    assert_eq!(done.state, TaskState::Completed);
    let resolved = fixture
        .service
        .approval_view_checked(&pending.id)
        .await
        .unwrap();
    assert_eq!(resolved.state, ApprovalState::Stale);
    assert_eq!(resolved.current, None);
    assert_eq!(
        fixture.tree.read("todo.md"),
        "- milk\n- bread (added by hand)\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_created_meanwhile_is_a_change_with_a_diff() {
    let fixture = Fixture::new();
    let task = fixture.run(write_then_done("report.md", "agent\n")).await;
    let pending = fixture.pending(&task.id).await;
    fixture.tree.file("report.md", "mine\n");
    let current = fixture
        .service
        .approval_view_checked(&pending.id)
        .await
        .unwrap()
        .current
        .expect("checked");
    assert!(current.changed);
    assert_eq!(
        current.diff.as_deref(),
        Some("--- a/report.md\n+++ b/report.md\n@@ -1 +1 @@\n-mine\n+agent\n")
    );
}
