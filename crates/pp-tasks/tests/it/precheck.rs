//! What a card shows of the change's size, its target checked at read time (the
//! precheck, every status), and approving only what the person saw (`seen_fingerprint`).

use pp_tasks::{CurrentTarget, Decision, Error, Precheck, PrecheckStatus, ResolveRequest};
use pp_types::{ApprovalId, ApprovalState, EffectScope, TaskState};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::fixture::{Fixture, approve, write_then_done};

/// A task that asks for one call of `tool` with `arguments`, then says "done".
fn call_then_done(tool: &str, arguments: &Value) -> Value {
    json!([{"tool_calls": [{"name": tool, "arguments": arguments}]}, {"content": "done"}])
}

/// The precheck of the pending card of `script`'s task.
async fn precheck_of(fixture: &Fixture, script: Value) -> (ApprovalId, Precheck) {
    let task = fixture.run(script).await;
    let pending = fixture.pending(&task.id).await;
    let view = fixture
        .service
        .approval_view_checked(&pending.id)
        .await
        .unwrap();
    (
        pending.id,
        view.precheck.expect("the tool reports a target"),
    )
}

fn approve_seen(fingerprint: Option<String>) -> ResolveRequest {
    ResolveRequest {
        seen_fingerprint: fingerprint,
        ..approve()
    }
}

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
async fn the_target_is_checked_when_a_card_is_read() {
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
    let ready = unchanged.precheck.clone().expect("checked");
    assert_eq!(ready.status, PrecheckStatus::Ready);
    assert_eq!(
        ready.fingerprint, pending.fingerprint,
        "the request's state"
    );
    assert_eq!(ready.diff, unchanged.diff);
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
    let precheck = changed.precheck.clone().expect("the target is checked");
    assert_eq!(precheck.status, PrecheckStatus::Changed);
    assert_ne!(precheck.fingerprint, ready.fingerprint);
    let diff = precheck
        .diff
        .clone()
        .expect("a diff against the current file");
    assert!(diff.contains("-- bread (added by hand)"), "{diff}");
    assert!(diff.contains("+- eggs"), "{diff}");
    assert_eq!(
        changed.diff, unchanged.diff,
        "the diff first shown is kept next to the current one"
    );
    // The deprecated field, derived from the precheck.
    let json = serde_json::to_value(&changed).unwrap();
    assert_eq!(json["current"]["changed"], true);
    assert_eq!(json["current"]["diff"], json["precheck"]["diff"]);
    assert_eq!(json["precheck"]["status"], "changed");

    // The inbox rows carry the status (no diff), computed once per workspace.
    let listed = fixture
        .service
        .approval_views_checked(None, 10)
        .await
        .unwrap();
    assert_eq!(listed.len(), 1);
    let row = listed[0]
        .precheck
        .clone()
        .expect("a pending row is checked");
    assert_eq!(
        (row.status, row.diff, row.fingerprint),
        (PrecheckStatus::Changed, None, precheck.fingerprint.clone())
    );
    // The plain list does not check targets.
    let plain = fixture.service.approval_views(None, 10).await.unwrap();
    assert_eq!(
        serde_json::to_value(&plain[0]).unwrap()["precheck"],
        Value::Null
    );

    // Approving without a seen fingerprint refuses the call, as the card warned; a
    // resolved card is not checked.
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
    assert_eq!((resolved.precheck, resolved.current), (None, None));
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
    let precheck = fixture
        .service
        .approval_view_checked(&pending.id)
        .await
        .unwrap()
        .precheck
        .expect("checked");
    assert_eq!(precheck.status, PrecheckStatus::Changed);
    assert_eq!(
        precheck.diff.as_deref(),
        Some("--- a/report.md\n+++ b/report.md\n@@ -1 +1 @@\n-mine\n+agent\n")
    );
    // The badge comes from the precheck: an overwrite now, not the new file it was.
    assert_eq!(
        (precheck.scope, precheck.added, precheck.removed),
        (Some(EffectScope::ReplacesWholeFile), Some(1), Some(1))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_certain_to_fail_say_why() {
    let fixture = Fixture::new();
    fixture.tree.file("a.txt", "alpha\n");
    // An edit whose text is gone.
    let (_, gone) = precheck_of(
        &fixture,
        call_then_done(
            "edit_file",
            &json!({"path": "a.txt", "old_text": "beta", "new_text": "gamma"}),
        ),
    )
    .await;
    assert_eq!(gone.status, PrecheckStatus::WillFail);
    assert!(
        gone.message
            .as_deref()
            .unwrap()
            .contains("old_text was not found"),
        "{gone:?}"
    );
    assert_eq!(gone.diff, None);
    // A move whose source is gone.
    let (_, moved) = precheck_of(
        &fixture,
        call_then_done("move_file", &json!({"from": "nothing.txt", "to": "b.txt"})),
    )
    .await;
    assert_eq!(moved.status, PrecheckStatus::WillFail);
    assert!(moved.message.is_some());
    // A move into a folder that is not there: still described, and said to fail.
    let (_, nowhere) = precheck_of(
        &fixture,
        call_then_done(
            "move_file",
            &json!({"from": "a.txt", "to": "missing/dir/a.txt"}),
        ),
    )
    .await;
    assert_eq!(nowhere.status, PrecheckStatus::WillFail, "{nowhere:?}");
    assert!(
        nowhere.message.as_deref().unwrap().contains("missing"),
        "{nowhere:?}"
    );
    assert!(nowhere.fingerprint.is_some(), "{nowhere:?}");
    // A delete in a folder that is not there.
    let (_, orphan) = precheck_of(
        &fixture,
        call_then_done("delete_file", &json!({"path": "missing/a.txt"})),
    )
    .await;
    assert_eq!(orphan.status, PrecheckStatus::WillFail, "{orphan:?}");
    // A delete of nothing.
    let (_, deleted) = precheck_of(
        &fixture,
        call_then_done("delete_file", &json!({"path": "missing.txt"})),
    )
    .await;
    assert_eq!(
        (deleted.status, deleted.message.as_deref()),
        (
            PrecheckStatus::WillFail,
            Some("`missing.txt` does not exist")
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_that_became_impossible_fails_before_anyone_decides() {
    let fixture = Fixture::new();
    fixture.tree.file("a.txt", "alpha\nbeta\n");
    let (id, ready) = precheck_of(
        &fixture,
        call_then_done(
            "edit_file",
            &json!({"path": "a.txt", "old_text": "beta", "new_text": "gamma"}),
        ),
    )
    .await;
    assert_eq!(ready.status, PrecheckStatus::Ready);
    // Someone removes the text: will_fail wins over changed.
    fixture.tree.file("a.txt", "alpha\n");
    let precheck = fixture.service.precheck(&id, None).await.unwrap().unwrap();
    assert_eq!(precheck.status, PrecheckStatus::WillFail);
    assert_eq!(precheck.diff, None, "no old diff under a failing card");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_that_change_nothing_say_so() {
    let fixture = Fixture::new();
    fixture.tree.file("same.txt", "same\n");
    fixture.tree.dir("there");
    let (_, write) = precheck_of(&fixture, write_then_done("same.txt", "same\n")).await;
    assert_eq!(write.status, PrecheckStatus::NoChange);
    assert_eq!((write.added, write.removed), (Some(0), Some(0)));
    assert_ne!(write.scope, Some(EffectScope::ReplacesWholeFile));
    let (_, folder) = precheck_of(
        &fixture,
        call_then_done("make_dir", &json!({"path": "there"})),
    )
    .await;
    assert_eq!(folder.status, PrecheckStatus::NoChange);
    let (_, edit) = precheck_of(
        &fixture,
        call_then_done(
            "edit_file",
            &json!({"path": "same.txt", "old_text": "same", "new_text": "same"}),
        ),
    )
    .await;
    assert_eq!(edit.status, PrecheckStatus::NoChange);
    // The text the edit names must be there once for "no change"; otherwise it fails.
    let (_, absent) = precheck_of(
        &fixture,
        call_then_done(
            "edit_file",
            &json!({"path": "same.txt", "old_text": "other", "new_text": "other"}),
        ),
    )
    .await;
    assert_eq!(absent.status, PrecheckStatus::WillFail);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approving_what_was_seen_runs_against_the_state_seen() {
    let fixture = Fixture::new();
    fixture.tree.file("todo.md", "- milk\n");
    let task = fixture
        .run(write_then_done("todo.md", "- milk\n- eggs\n"))
        .await;
    let pending = fixture.pending(&task.id).await;
    let first = fixture
        .service
        .precheck(&pending.id, None)
        .await
        .unwrap()
        .unwrap();

    // The file changes after the person looked: their fingerprint no longer matches.
    fixture.tree.file("todo.md", "- milk\n- bread\n");
    let refused = fixture
        .service
        .resolve(&pending.id, approve_seen(first.fingerprint.clone()))
        .await
        .unwrap_err();
    assert!(matches!(refused, Error::ChangedSinceSeen(_)), "{refused:?}");
    assert_eq!(
        fixture.store().approval(&pending.id).await.unwrap().state,
        ApprovalState::Pending,
        "nothing recorded"
    );
    assert_eq!(fixture.tree.read("todo.md"), "- milk\n- bread\n");
    assert_eq!(fixture.audit_count("approval_approved").await, 0);

    // They look again (changed) and approve against the file as it is now: it runs.
    let second = fixture
        .service
        .precheck(&pending.id, None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(second.status, PrecheckStatus::Changed);
    let done = fixture
        .service
        .resolve(&pending.id, approve_seen(second.fingerprint.clone()))
        .await
        .unwrap();
    assert_eq!(done.state, TaskState::Completed);
    assert_eq!(fixture.tree.read("todo.md"), "- milk\n- eggs\n");
    let approval = fixture.store().approval(&pending.id).await.unwrap();
    assert_eq!(approval.state, ApprovalState::Approved);
    assert_eq!(
        approval.fingerprint, second.fingerprint,
        "approved against what was seen"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_call_is_approved_against_its_own_precheck() {
    let fixture = Fixture::new();
    fixture.tree.file("old.md", "old\n");
    fixture.tree.file("other.md", "other\n");
    let task = fixture.run(write_then_done("old.md", "new\n")).await;
    let pending = fixture.pending(&task.id).await;
    let edited = json!({"path": "other.md", "content": "edited\n"});
    let precheck = fixture
        .service
        .precheck(&pending.id, Some(&edited))
        .await
        .unwrap()
        .unwrap();
    // Another target: nothing to compare with, so ready, with the edit's own diff.
    assert_eq!(precheck.status, PrecheckStatus::Ready);
    assert!(
        precheck.diff.as_deref().unwrap().contains("-other"),
        "{precheck:?}"
    );
    // The original call's fingerprint is not the edited target's.
    let wrong = fixture
        .service
        .resolve(
            &pending.id,
            ResolveRequest {
                edited_arguments: Some(edited.clone()),
                ..approve_seen(pending.fingerprint.clone())
            },
        )
        .await
        .unwrap_err();
    assert!(matches!(wrong, Error::ChangedSinceSeen(_)), "{wrong:?}");
    // An invalid edit is refused by the precheck as by the resolve.
    let invalid = fixture
        .service
        .precheck(
            &pending.id,
            Some(&json!({"path": "../escape.md", "content": "x"})),
        )
        .await
        .unwrap_err();
    assert!(matches!(invalid, Error::InvalidArguments(_)), "{invalid:?}");
    let done = fixture
        .service
        .resolve(
            &pending.id,
            ResolveRequest {
                edited_arguments: Some(edited),
                ..approve_seen(precheck.fingerprint.clone())
            },
        )
        .await
        .unwrap();
    assert_eq!(done.state, TaskState::Completed);
    assert_eq!(
        (fixture.tree.read("old.md"), fixture.tree.read("other.md")),
        ("old\n".to_owned(), "edited\n".to_owned())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reject_needs_no_fingerprint_and_a_decided_card_has_no_precheck() {
    let fixture = Fixture::new();
    let task = fixture.run(write_then_done("n.md", "x\n")).await;
    let pending = fixture.pending(&task.id).await;
    fixture
        .service
        .resolve(
            &pending.id,
            ResolveRequest {
                decision: Decision::Reject,
                ..approve_seen(Some("whatever".into()))
            },
        )
        .await
        .unwrap();
    assert_eq!(
        fixture.service.precheck(&pending.id, None).await.unwrap(),
        None
    );
    let edit = fixture
        .service
        .precheck(&pending.id, Some(&json!({"path": "n.md", "content": "y"})))
        .await
        .unwrap_err();
    assert!(matches!(edit, Error::AlreadyResolved { .. }), "{edit:?}");
}
