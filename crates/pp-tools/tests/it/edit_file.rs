use pp_tools::Limits;
use pp_types::{EffectScope, WriteLabel};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::Fixture;

const CONFIG: &str = "[server]\nhost = \"localhost\"\nport = 8080\n\n[client]\nport = 8080\n";

#[tokio::test(flavor = "current_thread")]
async fn replaces_one_exact_occurrence() {
    let fixture = Fixture::new();
    fixture.tree.file("config.toml", CONFIG);
    let result = fixture
        .ok(
            "edit_file",
            json!({
                "path": "config.toml",
                "old_text": "[server]\nhost = \"localhost\"\nport = 8080",
                "new_text": "[server]\nhost = \"localhost\"\nport = 9090",
            }),
        )
        .await;
    assert_eq!(
        result,
        "edited `config.toml`: replaced 1 occurrence (39 → 39 characters)"
    );
    assert_eq!(
        fixture.tree.read("config.toml"),
        "[server]\nhost = \"localhost\"\nport = 9090\n\n[client]\nport = 8080\n"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn empty_new_text_deletes() {
    let fixture = Fixture::new();
    fixture.tree.file("a.txt", "keep\ndrop me\nkeep too\n");
    fixture
        .ok(
            "edit_file",
            json!({"path": "a.txt", "old_text": "drop me\n", "new_text": ""}),
        )
        .await;
    assert_eq!(fixture.tree.read("a.txt"), "keep\nkeep too\n");
}

#[tokio::test(flavor = "current_thread")]
async fn absent_text_is_a_clear_error_and_changes_nothing() {
    let fixture = Fixture::new();
    fixture.tree.file("config.toml", CONFIG);
    let message = fixture
        .err(
            "edit_file",
            json!({"path": "config.toml", "old_text": "port = 7070", "new_text": "x"}),
        )
        .await;
    assert!(
        message.starts_with("old_text was not found in `config.toml`"),
        "{message}"
    );
    assert_eq!(fixture.tree.read("config.toml"), CONFIG);
}

#[tokio::test(flavor = "current_thread")]
async fn ambiguous_text_says_how_many_matches() {
    let fixture = Fixture::new();
    fixture.tree.file("config.toml", CONFIG);
    let message = fixture
        .err(
            "edit_file",
            json!({"path": "config.toml", "old_text": "port = 8080", "new_text": "port = 1"}),
        )
        .await;
    assert_eq!(
        message,
        "old_text matches more than one place in `config.toml`; it must match exactly one — include more surrounding lines to make it unique"
    );
    assert_eq!(fixture.tree.read("config.toml"), CONFIG);
}

#[tokio::test(flavor = "current_thread")]
async fn empty_old_text_is_refused() {
    let fixture = Fixture::new();
    fixture.tree.file("a.txt", "a");
    let message = fixture
        .err(
            "edit_file",
            json!({"path": "a.txt", "old_text": "", "new_text": "b"}),
        )
        .await;
    assert_eq!(
        message,
        "old_text must not be empty; to create or replace a whole file use write_file"
    );
    assert_eq!(fixture.tree.read("a.txt"), "a");
}

#[tokio::test(flavor = "current_thread")]
async fn missing_binary_and_oversized_files_are_errors() {
    let fixture = Fixture::with_limits(Limits {
        max_read_bytes: 8,
        ..Limits::default()
    });
    fixture.tree.file("big.txt", "0123456789");
    fixture.tree.file("blob.bin", "a\0b");
    let missing = fixture
        .err(
            "edit_file",
            json!({"path": "nope.txt", "old_text": "a", "new_text": "b"}),
        )
        .await;
    assert!(missing.contains("nope.txt"), "{missing}");
    assert!(
        !fixture.tree.exists("nope.txt"),
        "a failed edit never creates"
    );
    let binary = fixture
        .err(
            "edit_file",
            json!({"path": "blob.bin", "old_text": "a", "new_text": "b"}),
        )
        .await;
    assert!(binary.contains("binary"), "{binary}");
    let big = fixture
        .err(
            "edit_file",
            json!({"path": "big.txt", "old_text": "0", "new_text": "b"}),
        )
        .await;
    assert!(big.contains("larger than the 8-byte limit"), "{big}");
    assert_eq!(fixture.tree.read("big.txt"), "0123456789");
}

#[test]
fn preview_is_an_overwrite_with_the_diff_of_the_edit() {
    let fixture = Fixture::new();
    fixture.tree.file("a.txt", "one\ntwo\nthree\n");
    let shown = fixture
        .preview(
            "edit_file",
            &json!({"path": "a.txt", "old_text": "two", "new_text": "2"}),
        )
        .expect("a preview");
    assert_eq!(shown.label, WriteLabel::Overwrite);
    assert_eq!(shown.target, "a.txt");
    assert_eq!(shown.content, None);
    assert_eq!(
        shown.diff.as_deref(),
        Some("--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n")
    );
    assert!(
        shown.fingerprint.contains(" sha256="),
        "{}",
        shown.fingerprint
    );
    assert_eq!(
        fixture.tree.read("a.txt"),
        "one\ntwo\nthree\n",
        "a preview never writes"
    );
    assert_eq!(
        (shown.scope, shown.added, shown.removed),
        (Some(EffectScope::Edit), Some(1), Some(1))
    );
}

#[test]
fn preview_counts_the_lines_an_edit_adds_and_removes() {
    let fixture = Fixture::new();
    fixture.tree.file(
        "a.txt",
        "title
old one
old two
end
",
    );
    let shown = fixture
        .preview(
            "edit_file",
            &json!({"path": "a.txt", "old_text": "old one\nold two\n", "new_text": "new 1\nnew 2\nnew 3\n"}),
        )
        .expect("a preview");
    assert_eq!(
        (shown.scope, shown.added, shown.removed),
        (Some(EffectScope::Edit), Some(3), Some(2))
    );
    let removal = fixture
        .preview(
            "edit_file",
            &json!({"path": "a.txt", "old_text": "title\n", "new_text": ""}),
        )
        .expect("a preview");
    assert_eq!((removal.added, removal.removed), (Some(0), Some(1)));
}

#[test]
fn an_edit_that_cannot_apply_says_why_on_its_card() {
    let fixture = Fixture::new();
    fixture.tree.file("a.txt", "x x");
    let why = |arguments: serde_json::Value| {
        let preview = fixture.preview("edit_file", &arguments).expect("a preview");
        assert_eq!((preview.diff, preview.no_change), (None, false));
        preview.will_fail.expect("it says it would fail")
    };
    let ambiguous = why(json!({"path": "a.txt", "old_text": "x", "new_text": "y"}));
    assert!(ambiguous.contains("more than one place"), "{ambiguous}");
    let absent = why(json!({"path": "a.txt", "old_text": "z", "new_text": "y"}));
    assert!(absent.contains("was not found"), "{absent}");
    let missing = why(json!({"path": "none", "old_text": "x", "new_text": "y"}));
    assert!(missing.contains("none"), "{missing}");
}

#[test]
fn replacing_a_text_with_itself_changes_nothing() {
    let fixture = Fixture::new();
    fixture.tree.file("a.txt", "one two");
    let same = fixture
        .preview(
            "edit_file",
            &json!({"path": "a.txt", "old_text": "one", "new_text": "one"}),
        )
        .expect("a preview");
    assert!(same.no_change);
    assert_eq!(
        (
            same.will_fail,
            same.diff.as_deref(),
            same.added,
            same.removed
        ),
        (None, Some(""), Some(0), Some(0))
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_pathological_ambiguous_edit_is_answered_without_counting_every_match() {
    let fixture = Fixture::new();
    fixture.tree.file("spaces.txt", &" ".repeat(200_000));
    let message = fixture
        .err(
            "edit_file",
            json!({"path": "spaces.txt", "old_text": " ".repeat(100_000), "new_text": "x"}),
        )
        .await;
    assert!(message.contains("more than one place"), "{message}");
}
