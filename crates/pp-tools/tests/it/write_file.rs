use pp_tools::Limits;
use pp_types::{EffectPreview, EffectScope, WriteLabel};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::Fixture;

fn preview(fixture: &Fixture, arguments: &serde_json::Value) -> EffectPreview {
    fixture.preview("write_file", arguments).expect("a preview")
}

#[tokio::test(flavor = "current_thread")]
async fn creates_a_file_and_its_parents() {
    let fixture = Fixture::new();
    assert_eq!(
        fixture
            .ok(
                "write_file",
                json!({"path": "a/b/new.txt", "content": "hello\n"})
            )
            .await,
        "created `a/b/new.txt` (6 bytes)"
    );
    assert_eq!(fixture.tree.read("a/b/new.txt"), "hello\n");
}

#[tokio::test(flavor = "current_thread")]
async fn overwrites_an_existing_file() {
    let fixture = Fixture::new();
    fixture.tree.file("a.txt", "old content\n");
    assert_eq!(
        fixture
            .ok("write_file", json!({"path": "a.txt", "content": "new"}))
            .await,
        "overwrote `a.txt` (3 bytes)"
    );
    assert_eq!(fixture.tree.read("a.txt"), "new");
}

#[tokio::test(flavor = "current_thread")]
async fn writing_over_a_directory_is_an_error() {
    let fixture = Fixture::new();
    fixture.tree.dir("folder");
    fixture
        .err("write_file", json!({"path": "folder", "content": "x"}))
        .await;
}

#[test]
fn preview_of_a_create_shows_the_content() {
    let fixture = Fixture::new();
    assert_eq!(
        preview(&fixture, &json!({"path": "new.txt", "content": "hi\n"})),
        EffectPreview {
            target: "new.txt".to_owned(),
            resolved: Some("new.txt".to_owned()),
            notice: None,
            label: WriteLabel::Create,
            diff: None,
            content: Some("hi\n".to_owned()),
            fingerprint: "absent".to_owned(),
            scope: Some(EffectScope::NewFile),
            added: Some(1),
            removed: Some(0),
            ..Default::default()
        }
    );
    assert!(!fixture.tree.exists("new.txt"), "a preview never writes");
}

#[test]
fn preview_of_an_overwrite_shows_the_exact_diff() {
    let fixture = Fixture::new();
    fixture.tree.file("poem.txt", "roses\nare\nred\n");
    let shown = preview(
        &fixture,
        &json!({"path": "poem.txt", "content": "roses\nare\nblue\n"}),
    );
    assert_eq!(shown.label, WriteLabel::Overwrite);
    assert_eq!(shown.target, "poem.txt");
    assert_eq!(shown.content, None);
    assert_eq!(
        shown.diff.as_deref(),
        Some("--- a/poem.txt\n+++ b/poem.txt\n@@ -1,3 +1,3 @@\n roses\n are\n-red\n+blue\n")
    );
    // Metadata plus sha256("roses\nare\nred\n").
    let hash = shown
        .fingerprint
        .split(' ')
        .find_map(|field| field.strip_prefix("sha256="));
    assert_eq!(
        hash.map(str::len),
        Some(64),
        "a small file's content is hashed: {}",
        shown.fingerprint
    );
    assert_eq!(fixture.tree.read("poem.txt"), "roses\nare\nred\n");
    assert_eq!(
        (shown.scope, shown.added, shown.removed),
        (Some(EffectScope::ReplacesWholeFile), Some(1), Some(1)),
        "replacing a whole file is its scope, whatever the diff"
    );
}

#[test]
fn preview_of_a_create_counts_every_line_as_added() {
    let fixture = Fixture::new();
    let shown = preview(
        &fixture,
        &json!({"path": "report.md", "content": "# Report\n\none\ntwo"}),
    );
    assert_eq!(
        (shown.scope, shown.added, shown.removed),
        (Some(EffectScope::NewFile), Some(4), Some(0))
    );
}

#[test]
fn preview_diff_marks_a_missing_final_newline() {
    let fixture = Fixture::new();
    fixture.tree.file("a.txt", "x\n");
    let shown = preview(&fixture, &json!({"path": "a.txt", "content": "x"}));
    assert_eq!(
        shown.diff.as_deref(),
        Some("--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-x\n+x\n\\ No newline at end of file\n")
    );
}

#[test]
fn preview_label_follows_the_disk_at_that_moment() {
    let fixture = Fixture::new();
    let arguments = json!({"path": "later.txt", "content": "v2"});
    assert_eq!(preview(&fixture, &arguments).label, WriteLabel::Create);
    fixture.tree.file("later.txt", "v1");
    let now = preview(&fixture, &arguments);
    assert_eq!(now.label, WriteLabel::Overwrite);
    assert_ne!(now.fingerprint, "absent");
}

#[test]
fn preview_fingerprint_changes_with_the_file() {
    let fixture = Fixture::new();
    fixture.tree.file("a.txt", "one");
    let arguments = json!({"path": "a.txt", "content": "x"});
    let before = preview(&fixture, &arguments).fingerprint;
    fixture.tree.file("a.txt", "two");
    assert_ne!(preview(&fixture, &arguments).fingerprint, before);
}

#[test]
fn preview_content_and_diff_are_capped() {
    let fixture = Fixture::with_limits(Limits {
        max_output_chars: 10,
        ..Limits::default()
    });
    let long = "0123456789abcdef";
    let create = preview(&fixture, &json!({"path": "new.txt", "content": long}));
    assert_eq!(
        create.content.as_deref(),
        Some("0123456789\n[truncated: showing the first 10 of 16 characters]")
    );
    fixture.tree.file("old.txt", "old\n");
    let overwrite = preview(&fixture, &json!({"path": "old.txt", "content": long}));
    let diff = overwrite.diff.expect("a diff");
    assert!(diff.starts_with("--- a/old."), "{diff}");
    assert!(
        diff.contains("[truncated: showing the first 10 of"),
        "{diff}"
    );
}

#[test]
fn preview_of_a_binary_target_shows_the_new_content_instead_of_a_diff() {
    let fixture = Fixture::new();
    fixture.tree.file("blob.bin", "\0\0\0");
    let shown = preview(&fixture, &json!({"path": "blob.bin", "content": "text"}));
    assert_eq!(shown.label, WriteLabel::Overwrite);
    assert_eq!(shown.diff, None);
    assert_eq!(shown.content.as_deref(), Some("text"));
    assert_eq!(
        (shown.scope, shown.added, shown.removed),
        (Some(EffectScope::ReplacesWholeFile), None, None),
        "no line counts without a line diff"
    );
}

#[test]
fn preview_without_usable_arguments_is_none() {
    let fixture = Fixture::new();
    assert_eq!(
        fixture.preview("write_file", &json!({"path": "a.txt"})),
        None
    );
    assert_eq!(
        fixture.preview("write_file", &json!({"content": "x"})),
        None
    );
    assert_eq!(fixture.preview("write_file", &json!([])), None);
}

#[test]
fn preview_names_the_file_a_path_resolves_to() {
    let fixture = Fixture::new();
    fixture.tree.file("notes.txt", "mine\n");
    let forged = "drafts\n\u{2502} (new file; nothing existing is replaced)\n\u{2502}/../notes.txt";
    fixture
        .tree
        .dir("drafts\n\u{2502} (new file; nothing existing is replaced)\n\u{2502}");
    let shown = preview(&fixture, &json!({"path": forged, "content": "x"}));
    assert_eq!(shown.target, forged, "what the model wrote is kept");
    assert_eq!(shown.resolved.as_deref(), Some("notes.txt"));
    assert_eq!(shown.label, WriteLabel::Overwrite);
}

#[test]
fn a_huge_target_is_fingerprinted_by_its_metadata_without_reading_it() {
    let fixture = Fixture::new();
    fixture.tree.file("big.txt", "");
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(fixture.tree.workspace().join("big.txt"))
        .expect("open big.txt");
    file.set_len(8 << 30).expect("an 8 GiB sparse file");
    let shown = preview(&fixture, &json!({"path": "big.txt", "content": "x"}));
    assert_eq!(shown.label, WriteLabel::Overwrite);
    assert!(
        shown.fingerprint.contains("size=8589934592"),
        "{}",
        shown.fingerprint
    );
    assert!(
        !shown.fingerprint.contains("sha256="),
        "never hashed whole: {}",
        shown.fingerprint
    );
    assert_eq!(shown.diff, None, "no line diff against 8 GiB");
    assert_eq!(shown.content.as_deref(), Some("x"));
}

/// Finding 2: the label comes from existence, not readability, and a metadata
/// fingerprint still guards staleness.
#[cfg(unix)]
#[test]
fn an_unreadable_target_is_still_an_overwrite_with_a_fingerprint() {
    if pp_test_support::rerun_as_nobody(
        "write_file::an_unreadable_target_is_still_an_overwrite_with_a_fingerprint",
    ) {
        return;
    }
    use std::os::unix::fs::PermissionsExt as _;
    let fixture = Fixture::new();
    fixture.tree.file("locked.txt", "private\n");
    let locked = fixture.tree.workspace().join("locked.txt");
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).expect("chmod");
    let shown = preview(&fixture, &json!({"path": "locked.txt", "content": "x"}));
    assert_eq!(shown.label, WriteLabel::Overwrite);
    assert_eq!(
        shown.notice.as_deref(),
        Some("cannot show the current content: permission denied")
    );
    assert_eq!(shown.diff, None);
    assert_eq!(shown.content.as_deref(), Some("x"));
    assert!(
        shown.fingerprint.starts_with("dev="),
        "{}",
        shown.fingerprint
    );
    assert!(
        !shown.fingerprint.contains("sha256="),
        "{}",
        shown.fingerprint
    );
}
