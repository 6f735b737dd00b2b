//! Reverts that give a file back its mode and owner, and reverts refused because the
//! place is no longer what the change left (a folder where the file was, a folder
//! swapped for a link): `changed_since`, nothing written, never an internal error.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use pp_tasks::RevertRefusal;
use pp_types::{Actor, ChangeKind};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::fixture::{Fixture, call_then_done, changes, run_approving, write_then_done};

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn mode_of(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

/// Whether this process may give a file to another user (root).
fn may_chown() -> bool {
    let probe = tempfile::NamedTempFile::new().unwrap();
    std::os::unix::fs::chown(probe.path(), Some(4242), Some(4242)).is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_0600_file_comes_back_0600_with_its_owner() {
    let fixture = Fixture::new();
    let secret = fixture.tree.file("keys/secret.txt", "hunter2\n");
    set_mode(&secret, 0o600);
    let chown = may_chown();
    if chown {
        std::os::unix::fs::chown(&secret, Some(4242), Some(4343)).unwrap();
    }
    let task = run_approving(
        &fixture,
        call_then_done("delete_file", &json!({"path": "keys/secret.txt"})),
    )
    .await;
    assert!(!fixture.tree.exists("keys/secret.txt"));
    let deleted = changes(&fixture, &task).await.remove(0);
    assert_eq!(deleted.kind, ChangeKind::Deleted);
    fixture
        .service
        .changes()
        .revert(&deleted.id, Actor::Operator)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(fixture.tree.read("keys/secret.txt"), "hunter2\n");
    assert_eq!(
        mode_of(&secret),
        0o600,
        "the deleted file's mode, not a new file's"
    );
    if chown {
        let metadata = std::fs::metadata(&secret).unwrap();
        assert_eq!((metadata.uid(), metadata.gid()), (4242, 4343));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reverts_of_an_overwrite_and_an_overwriting_move_restore_the_old_mode() {
    let fixture = Fixture::new();
    let report = fixture.tree.file("report.txt", "old report\n");
    set_mode(&report, 0o640);
    let task = run_approving(&fixture, write_then_done("report.txt", "new report\n")).await;
    let overwritten = changes(&fixture, &task).await.remove(0);
    assert_eq!(overwritten.kind, ChangeKind::Overwritten);
    fixture
        .service
        .changes()
        .revert(&overwritten.id, Actor::Operator)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(fixture.tree.read("report.txt"), "old report\n");
    assert_eq!(mode_of(&report), 0o640);

    // The file an overwriting move replaced comes back with its own mode.
    fixture.tree.file("draft.txt", "draft\n");
    let target = fixture.tree.file("final.txt", "final\n");
    set_mode(&target, 0o600);
    let task = run_approving(
        &fixture,
        call_then_done(
            "move_file",
            &json!({"from": "draft.txt", "to": "final.txt", "overwrite": true}),
        ),
    )
    .await;
    let moved = changes(&fixture, &task).await.remove(0);
    fixture
        .service
        .changes()
        .revert(&moved.id, Actor::Operator)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(fixture.tree.read("draft.txt"), "draft\n");
    assert_eq!(fixture.tree.read("final.txt"), "final\n");
    assert_eq!(mode_of(&target), 0o600);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_that_became_a_folder_is_changed_since_and_nothing_is_written() {
    let fixture = Fixture::new();
    fixture.tree.file("b.txt", "before\n");
    let task = run_approving(
        &fixture,
        json!([
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "new\n"}}]},
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "b.txt", "content": "after\n"}}]},
            {"content": "done"}
        ]),
    )
    .await;
    let logged = changes(&fixture, &task).await;
    assert_eq!(
        logged.iter().map(|change| change.kind).collect::<Vec<_>>(),
        [ChangeKind::Created, ChangeKind::Overwritten]
    );
    for (change, name) in logged.iter().zip(["a.txt", "b.txt"]) {
        std::fs::remove_file(fixture.tree.workspace().join(name)).unwrap();
        fixture
            .tree
            .file(&format!("{name}/inside.txt"), "someone's\n");
        let refused = fixture
            .service
            .changes()
            .revert(&change.id, Actor::Operator)
            .await
            .unwrap()
            .unwrap_err();
        assert!(
            matches!(&refused, RevertRefusal::ChangedSince { .. }),
            "{name}: {refused:?}"
        );
        assert_eq!(
            fixture.tree.read(&format!("{name}/inside.txt")),
            "someone's\n"
        );
        assert!(
            changes(&fixture, &task)
                .await
                .iter()
                .all(|change| change.reverted_by.is_none())
        );
    }
    assert_eq!(fixture.audit_count("change_reverted").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_swapped_for_a_link_outside_is_changed_since_and_nothing_is_written() {
    let fixture = Fixture::new();
    fixture.tree.file("sub/old.txt", "old\n");
    fixture.tree.file("sub/gone.txt", "deleted by the agent\n");
    let task = run_approving(
        &fixture,
        json!([
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "sub/new.txt", "content": "new\n"}}]},
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "sub/old.txt", "content": "agent\n"}}]},
            {"tool_calls": [{"name": "delete_file", "arguments": {"path": "sub/gone.txt"}}]},
            {"content": "done"}
        ]),
    )
    .await;
    let logged = changes(&fixture, &task).await;
    assert_eq!(
        logged.iter().map(|change| change.kind).collect::<Vec<_>>(),
        [
            ChangeKind::Created,
            ChangeKind::Overwritten,
            ChangeKind::Deleted
        ]
    );
    // The folder goes away and a link to a folder outside takes its name, holding files
    // of the same names with the very contents the agent left.
    let workspace = fixture.tree.workspace();
    std::fs::rename(workspace.join("sub"), workspace.join("sub.moved")).unwrap();
    fixture.tree.outside_file("twin/new.txt", "new\n");
    fixture.tree.outside_file("twin/old.txt", "agent\n");
    fixture
        .tree
        .symlink("sub", fixture.tree.outside().join("twin"));
    let outside = fixture.tree.outside_snapshot();
    for change in &logged {
        let refused = fixture
            .service
            .changes()
            .revert(&change.id, Actor::Operator)
            .await
            .unwrap()
            .unwrap_err();
        assert!(
            matches!(&refused, RevertRefusal::ChangedSince { .. }),
            "{:?}: {refused:?}",
            change.kind
        );
    }
    assert_eq!(
        fixture.tree.outside_snapshot(),
        outside,
        "nothing written outside"
    );
    assert_eq!(fixture.tree.read("sub.moved/new.txt"), "new\n");
    assert_eq!(fixture.tree.read("sub.moved/old.txt"), "agent\n");
    assert!(!fixture.tree.exists("sub.moved/gone.txt"));
    assert_eq!(fixture.audit_count("change_reverted").await, 0);

    // A link inside the workspace in the folder's place is refused the same way: the
    // change's path no longer leads to the place the agent changed.
    std::fs::remove_file(workspace.join("sub")).unwrap();
    fixture.tree.symlink("sub", "sub.moved");
    let refused = fixture
        .service
        .changes()
        .revert(&logged[0].id, Actor::Operator)
        .await
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(&refused, RevertRefusal::ChangedSince { .. }),
        "{refused:?}"
    );
    assert_eq!(fixture.tree.read("sub.moved/new.txt"), "new\n");
}
