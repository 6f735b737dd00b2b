//! Escape attempts executed directly against the tools, bypassing the policy: the jail
//! inside each tool still refuses them as denials, and the outside tree is unchanged.

use pp_types::DenyRule;
use serde_json::{Value, json};

use crate::Fixture;

/// Arguments for each tool that touch `path`.
fn calls(path: &str) -> Vec<(&'static str, Value)> {
    vec![
        ("list_files", json!({"path": path})),
        (
            "list_files",
            json!({"path": ".", "recursive": true, "pattern": path}),
        ),
        ("read_file", json!({"path": path})),
        ("write_file", json!({"path": path, "content": "PWNED"})),
        (
            "edit_file",
            json!({"path": path, "old_text": "TOP-SECRET", "new_text": "PWNED"}),
        ),
        ("delete_file", json!({"path": path})),
        ("make_dir", json!({"path": path})),
        // Both paths of a move: out of the workspace, and into it (over a file there).
        ("move_file", json!({"from": path, "to": "stolen.txt"})),
        (
            "move_file",
            json!({"from": "mine.txt", "to": path, "overwrite": true}),
        ),
        ("move_file", json!({"from": "mine.txt", "to": path})),
    ]
}

fn escaping_fixture() -> Fixture {
    let fixture = Fixture::new();
    fixture.tree.outside_file("secret.txt", "TOP-SECRET");
    fixture.tree.outside_file("dir/inner.txt", "TOP-SECRET");
    fixture.tree.file("mine.txt", "mine");
    fixture
}

/// Nothing moved, deleted or created inside either.
fn inside_untouched(fixture: &Fixture) {
    assert_eq!(fixture.tree.read("mine.txt"), "mine");
    assert!(!fixture.tree.workspace().join("stolen.txt").exists());
}

#[tokio::test(flavor = "current_thread")]
async fn absolute_paths_are_denied() {
    let fixture = escaping_fixture();
    let before = fixture.tree.outside_snapshot();
    let target = fixture.tree.outside().join("secret.txt");
    let absolute = target.to_str().expect("utf-8 temp path");
    for (tool, arguments) in calls(absolute) {
        if arguments.get("pattern").is_some() {
            continue; // a pattern is not a path
        }
        assert_eq!(
            fixture.denied(tool, arguments).await,
            DenyRule::AbsolutePath,
            "{tool}"
        );
    }
    assert_eq!(fixture.tree.outside_snapshot(), before);
    inside_untouched(&fixture);
}

#[tokio::test(flavor = "current_thread")]
async fn dot_dot_escapes_are_denied() {
    let fixture = escaping_fixture();
    let before = fixture.tree.outside_snapshot();
    for path in [
        "../outside/secret.txt",
        "a/../../outside/secret.txt",
        "..",
        "../outside/new.txt",
    ] {
        for (tool, arguments) in calls(path) {
            if arguments.get("pattern").is_some() {
                continue;
            }
            assert_eq!(
                fixture.denied(tool, arguments).await,
                DenyRule::Escapes,
                "{tool} {path}"
            );
        }
    }
    assert_eq!(fixture.tree.outside_snapshot(), before);
    assert!(!fixture.tree.outside().join("new.txt").exists());
    inside_untouched(&fixture);
}

#[tokio::test(flavor = "current_thread")]
async fn invalid_paths_are_denied() {
    let fixture = escaping_fixture();
    for path in ["a\\..\\..\\outside", "bad\0name"] {
        for (tool, arguments) in calls(path) {
            if arguments.get("pattern").is_some() {
                continue;
            }
            assert_eq!(
                fixture.denied(tool, arguments).await,
                DenyRule::InvalidPath,
                "{tool}"
            );
        }
    }
}

#[cfg(unix)]
#[tokio::test(flavor = "current_thread")]
async fn symlinks_out_are_denied_for_every_tool() {
    let fixture = escaping_fixture();
    fixture
        .tree
        .symlink("out-file", fixture.tree.outside().join("secret.txt"));
    fixture.tree.symlink("out-dir", "../outside/dir");
    fixture.tree.symlink("chain", "out-file");
    let before = fixture.tree.outside_snapshot();
    for path in [
        "out-file",
        "out-dir",
        "out-dir/inner.txt",
        "out-dir/new.txt",
        "chain",
        "out-dir/sub/new",
    ] {
        for (tool, arguments) in calls(path) {
            if arguments.get("pattern").is_some() {
                continue;
            }
            assert_eq!(
                fixture.denied(tool, arguments).await,
                DenyRule::SymlinkEscape,
                "{tool} {path}"
            );
        }
    }
    assert_eq!(fixture.tree.outside_snapshot(), before);
    assert!(!fixture.tree.outside().join("dir/new.txt").exists());
    assert!(fixture.tree.outside().join("secret.txt").exists());
    inside_untouched(&fixture);
}

#[cfg(unix)]
#[tokio::test(flavor = "current_thread")]
async fn previews_never_reveal_or_touch_the_outside() {
    let fixture = escaping_fixture();
    fixture
        .tree
        .symlink("out-file", fixture.tree.outside().join("secret.txt"));
    for path in ["out-file", "../outside/secret.txt"] {
        let write = json!({"path": path, "content": "x"});
        let edit = json!({"path": path, "old_text": "TOP-SECRET", "new_text": "x"});
        let context = pp_agent::ToolContext::default();
        assert_eq!(
            fixture.tool("write_file").preview(&context, &write).await,
            None
        );
        assert_eq!(
            fixture.tool("edit_file").preview(&context, &edit).await,
            None
        );
    }
}

#[cfg(unix)]
#[tokio::test(flavor = "current_thread")]
async fn a_pattern_cannot_reach_outside() {
    let fixture = escaping_fixture();
    fixture.tree.file("inside.txt", "x");
    let listing = fixture
        .ok(
            "list_files",
            json!({"path": ".", "recursive": true, "pattern": "../outside/*"}),
        )
        .await;
    assert_eq!(listing, "(no entries match `../outside/*`)\n");
}

#[cfg(unix)]
#[tokio::test(flavor = "current_thread")]
async fn writing_through_an_inside_link_writes_its_target() {
    let fixture = Fixture::new();
    fixture.tree.file("docs/real.txt", "old\n");
    fixture.tree.symlink("alias.txt", "docs/real.txt");
    let result = fixture
        .ok(
            "write_file",
            json!({"path": "alias.txt", "content": "new\n"}),
        )
        .await;
    assert_eq!(result, "overwrote `alias.txt` (4 bytes)");
    assert_eq!(fixture.tree.read("docs/real.txt"), "new\n");
    assert_eq!(fixture.tree.read("alias.txt"), "new\n");

    fixture
        .ok(
            "edit_file",
            json!({"path": "alias.txt", "old_text": "new", "new_text": "edited"}),
        )
        .await;
    assert_eq!(fixture.tree.read("docs/real.txt"), "edited\n");
    assert_eq!(
        fixture.ok("read_file", json!({"path": "alias.txt"})).await,
        "edited\n"
    );
}
