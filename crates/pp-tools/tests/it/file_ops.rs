//! `move_file`, `delete_file` and `make_dir` against a real jail: what they do, what
//! they refuse, and what their approval cards show.

use pp_agent::ToolContext;
use pp_types::{FileOp, Prior, WriteLabel};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::Fixture;

/// A tool's approval card for `arguments`.
async fn card(
    fixture: &Fixture,
    name: &str,
    arguments: &serde_json::Value,
) -> Option<pp_types::EffectPreview> {
    fixture
        .tool(name)
        .preview(&ToolContext::default(), arguments)
        .await
}

#[tokio::test(flavor = "current_thread")]
async fn a_move_renames_and_refuses_to_overwrite_unless_asked() {
    let fixture = Fixture::new();
    fixture.tree.file("inbox/scan.pdf", "PDF");
    fixture.tree.file("invoices/acme.pdf", "OLD");
    fixture.tree.dir("archive");
    assert_eq!(
        fixture
            .err(
                "move_file",
                json!({"from": "inbox/scan.pdf", "to": "invoices/acme.pdf"})
            )
            .await,
        "`invoices/acme.pdf` already exists; pass \"overwrite\": true to replace it"
    );
    assert_eq!(fixture.tree.read("invoices/acme.pdf"), "OLD");
    let folder = fixture
        .err(
            "move_file",
            json!({"from": "inbox/scan.pdf", "to": "archive", "overwrite": true}),
        )
        .await;
    assert!(folder.contains("never replaces a folder"), "{folder}");
    assert_eq!(
        fixture
            .ok(
                "move_file",
                json!({"from": "inbox/scan.pdf", "to": "invoices/acme.pdf", "overwrite": true})
            )
            .await,
        "moved `inbox/scan.pdf` to `invoices/acme.pdf` (the file that was there is replaced)"
    );
    assert_eq!(fixture.tree.read("invoices/acme.pdf"), "PDF");
    assert!(!fixture.tree.workspace().join("inbox/scan.pdf").exists());
    let missing = fixture
        .err(
            "move_file",
            json!({"from": "invoices/acme.pdf", "to": "nowhere/acme.pdf"}),
        )
        .await;
    assert!(missing.contains("nowhere/acme.pdf"), "{missing}");
    assert_eq!(
        fixture
            .err("move_file", json!({"from": "gone.txt", "to": "x.txt"}))
            .await,
        "`gone.txt` does not exist"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_folder_moves_whole_and_never_onto_an_existing_path() {
    let fixture = Fixture::new();
    fixture.tree.file("2025/a.txt", "a");
    fixture.tree.file("2025/sub/b.txt", "b");
    fixture.tree.file("taken.txt", "t");
    let refused = fixture
        .err(
            "move_file",
            json!({"from": "2025", "to": "taken.txt", "overwrite": true}),
        )
        .await;
    assert!(refused.contains("already exists"), "{refused}");
    assert_eq!(
        fixture
            .ok("move_file", json!({"from": "2025", "to": "archive-2025"}))
            .await,
        "moved folder `2025` to `archive-2025`"
    );
    assert_eq!(fixture.tree.read("archive-2025/sub/b.txt"), "b");
    let into_itself = fixture
        .err(
            "move_file",
            json!({"from": "archive-2025", "to": "archive-2025/sub/x"}),
        )
        .await;
    assert!(into_itself.contains("into itself"), "{into_itself}");
    assert_eq!(fixture.tree.read("taken.txt"), "t");
}

#[cfg(unix)]
#[tokio::test(flavor = "current_thread")]
async fn a_link_is_moved_as_a_link() {
    let fixture = Fixture::new();
    fixture.tree.file("real.txt", "real");
    fixture.tree.symlink("alias.txt", "real.txt");
    fixture
        .ok(
            "move_file",
            json!({"from": "alias.txt", "to": "alias2.txt"}),
        )
        .await;
    let moved = fixture.tree.workspace().join("alias2.txt");
    assert!(
        std::fs::symlink_metadata(&moved)
            .expect("moved")
            .file_type()
            .is_symlink()
    );
    assert_eq!(fixture.tree.read("real.txt"), "real");
}

#[tokio::test(flavor = "current_thread")]
async fn the_move_card_names_both_paths_and_the_replaced_file() {
    let fixture = Fixture::new();
    fixture.tree.file("a.txt", "new content");
    fixture.tree.file("docs/b.txt", "twelve bytes");
    let preview = card(
        &fixture,
        "move_file",
        &json!({"from": "docs/../a.txt", "to": "docs/b.txt", "overwrite": true}),
    )
    .await
    .expect("a preview");
    assert_eq!(preview.label, WriteLabel::Move);
    assert_eq!(preview.target, "docs/../a.txt");
    assert_eq!(preview.resolved.as_deref(), Some("a.txt"));
    assert_eq!(preview.destination.as_deref(), Some("docs/b.txt"));
    assert_eq!(preview.destination_resolved.as_deref(), Some("docs/b.txt"));
    assert_eq!(preview.replaces.as_deref(), Some("docs/b.txt"));
    assert_eq!(preview.size, Some(12));
    assert!(
        preview.fingerprint.starts_with("from: dev="),
        "{}",
        preview.fingerprint
    );
    let plain = card(
        &fixture,
        "move_file",
        &json!({"from": "a.txt", "to": "c.txt"}),
    )
    .await
    .expect("a preview");
    assert_eq!((plain.replaces, plain.size), (None, None));
    assert!(plain.fingerprint.ends_with("; to: absent"));
    // A move that would fail says why on its card, and names no replaced file.
    let failing = card(
        &fixture,
        "move_file",
        &json!({"from": "a.txt", "to": "docs/b.txt"}),
    )
    .await
    .expect("a preview");
    assert!(failing.will_fail.is_some(), "{failing:?}");
    assert_eq!((failing.replaces, failing.size), (None, None));
    let gone = card(
        &fixture,
        "move_file",
        &json!({"from": "gone.txt", "to": "e.txt"}),
    )
    .await
    .expect("a preview");
    assert!(gone.will_fail.is_some(), "{gone:?}");
}

#[tokio::test(flavor = "current_thread")]
async fn the_move_fingerprint_changes_with_either_path() {
    let fixture = Fixture::new();
    fixture.tree.file("a.txt", "a");
    let arguments = json!({"from": "a.txt", "to": "b.txt"});
    let tool = fixture.tool("move_file");
    let context = ToolContext::default();
    let shown = tool
        .target_state(&context, &arguments)
        .await
        .expect("state");
    assert_eq!(shown.identity, "a.txt -> b.txt");
    fixture.tree.file("b.txt", "appeared");
    let now = tool
        .target_state(&context, &arguments)
        .await
        .expect("state");
    assert_ne!(now.fingerprint, shown.fingerprint, "the destination counts");
    std::fs::remove_file(fixture.tree.workspace().join("b.txt")).expect("rm");
    fixture.tree.file("a.txt", "changed");
    let now = tool
        .target_state(&context, &arguments)
        .await
        .expect("state");
    assert_ne!(now.fingerprint, shown.fingerprint, "the source counts");
}

#[tokio::test(flavor = "current_thread")]
async fn the_move_snapshot_keeps_what_an_overwrite_replaces() {
    let fixture = Fixture::new();
    fixture.tree.file("a.txt", "a");
    fixture.tree.file("b.txt", "bee");
    let tool = fixture.tool("move_file");
    let context = ToolContext::default();
    let over = json!({"from": "a.txt", "to": "b.txt", "overwrite": true});
    let snapshot = tool.snapshot(&context, &over, 100).await;
    assert_eq!(snapshot.len(), 1);
    assert_eq!(snapshot[0].path, "b.txt");
    assert_eq!(snapshot[0].op, FileOp::MoveFrom("a.txt".into()));
    assert_eq!(snapshot[0].prior, Prior::Content(b"bee".to_vec()));
    let measured = tool.snapshot(&context, &over, 0).await;
    assert_eq!(measured[0].prior, Prior::TooLarge { size: 3 });
    let free = tool
        .snapshot(&context, &json!({"from": "a.txt", "to": "c.txt"}), 0)
        .await;
    assert_eq!(free[0].prior, Prior::Absent);
}

#[tokio::test(flavor = "current_thread")]
async fn delete_removes_a_file_or_an_empty_folder_but_never_a_folder_with_content() {
    let fixture = Fixture::new();
    fixture.tree.file("full/keep.txt", "keep");
    fixture.tree.dir("empty");
    fixture.tree.file("old.txt", "bye\n");
    let refused = fixture.err("delete_file", json!({"path": "full"})).await;
    assert!(refused.contains("is not empty"), "{refused}");
    assert_eq!(fixture.tree.read("full/keep.txt"), "keep");
    assert_eq!(
        fixture.ok("delete_file", json!({"path": "empty"})).await,
        "deleted the empty folder `empty`"
    );
    assert_eq!(
        fixture.ok("delete_file", json!({"path": "old.txt"})).await,
        "deleted `old.txt`"
    );
    assert!(!fixture.tree.workspace().join("old.txt").exists());
    assert!(!fixture.tree.workspace().join("empty").exists());
    assert_eq!(
        fixture.err("delete_file", json!({"path": "old.txt"})).await,
        "`old.txt` does not exist"
    );
    let root = fixture.err("delete_file", json!({"path": "."})).await;
    assert!(root.contains("not a regular file"), "{root}");
}

#[cfg(unix)]
#[tokio::test(flavor = "current_thread")]
async fn delete_through_a_link_deletes_the_link_not_its_target() {
    let fixture = Fixture::new();
    fixture.tree.file("docs/real.txt", "precious");
    fixture.tree.symlink("alias.txt", "docs/real.txt");
    fixture.tree.symlink("folder-link", "docs");
    let card = card(&fixture, "delete_file", &json!({"path": "alias.txt"}))
        .await
        .expect("a preview");
    assert_eq!(card.label, WriteLabel::Delete);
    assert!(card.notice.as_deref().is_some_and(|n| n.contains("link")));
    assert_eq!(
        fixture
            .ok("delete_file", json!({"path": "alias.txt"}))
            .await,
        "deleted the link `alias.txt` (not what it points to)"
    );
    fixture
        .ok("delete_file", json!({"path": "folder-link"}))
        .await;
    assert!(!fixture.tree.workspace().join("alias.txt").exists());
    assert!(!fixture.tree.workspace().join("folder-link").exists());
    assert_eq!(fixture.tree.read("docs/real.txt"), "precious");
}

#[tokio::test(flavor = "current_thread")]
async fn the_delete_card_shows_size_and_the_first_lines() {
    let fixture = Fixture::new();
    let long: String = (1..=30).map(|n| format!("line {n}\n")).collect();
    fixture.tree.file("long.txt", &long);
    let long_card = card(&fixture, "delete_file", &json!({"path": "long.txt"}))
        .await
        .expect("a preview");
    assert_eq!(long_card.size, Some(long.len() as u64));
    let shown = long_card.content.expect("content");
    assert_eq!(shown.lines().count(), 20);
    assert!(shown.starts_with("line 1\n") && shown.ends_with("line 20\n"));
    std::fs::write(fixture.tree.workspace().join("blob.bin"), b"\0\x01\x02").expect("bin");
    let binary = card(&fixture, "delete_file", &json!({"path": "blob.bin"}))
        .await
        .expect("a preview");
    assert_eq!((binary.size, binary.content), (Some(3), None));
    assert!(binary.notice.is_some_and(|n| n.contains("binary")));
    let huge = "x".repeat(10_000);
    fixture.tree.file("one-line.txt", &huge);
    let capped = card(&fixture, "delete_file", &json!({"path": "one-line.txt"}))
        .await
        .expect("a preview");
    assert!(capped.content.expect("content").len() <= 2048);
}

#[tokio::test(flavor = "current_thread")]
async fn make_dir_creates_parents_and_refuses_an_existing_path() {
    let fixture = Fixture::new();
    fixture.tree.file("file.txt", "f");
    let card = card(&fixture, "make_dir", &json!({"path": "invoices/2026/q1"}))
        .await
        .expect("a preview");
    assert_eq!(card.label, WriteLabel::CreateFolder);
    assert_eq!(card.resolved.as_deref(), Some("invoices/2026/q1"));
    assert_eq!(
        card.notice.as_deref(),
        Some("also creates `invoices`, `invoices/2026`")
    );
    let tool = fixture.tool("make_dir");
    let snapshot = tool
        .snapshot(
            &ToolContext::default(),
            &json!({"path": "invoices/2026/q1"}),
            0,
        )
        .await;
    let created: Vec<(&str, &FileOp)> = snapshot
        .iter()
        .map(|entry| (entry.path.as_str(), &entry.op))
        .collect();
    assert_eq!(
        created,
        [
            ("invoices", &FileOp::CreateFolder),
            ("invoices/2026", &FileOp::CreateFolder),
            ("invoices/2026/q1", &FileOp::CreateFolder)
        ]
    );
    assert_eq!(
        fixture
            .ok("make_dir", json!({"path": "invoices/2026/q1"}))
            .await,
        "created folder `invoices/2026/q1` (and its parents `invoices`, `invoices/2026`)"
    );
    assert!(fixture.tree.workspace().join("invoices/2026/q1").is_dir());
    assert_eq!(
        fixture
            .err("make_dir", json!({"path": "invoices/2026"}))
            .await,
        "`invoices/2026` already exists; nothing was created"
    );
    let under_file = fixture.err("make_dir", json!({"path": "file.txt/x"})).await;
    assert!(under_file.contains("is a file"), "{under_file}");
}

#[tokio::test(flavor = "current_thread")]
async fn a_stopped_task_moves_deletes_and_creates_nothing() {
    let fixture = Fixture::new();
    fixture.tree.file("a.txt", "a");
    let context = ToolContext::default();
    context.interrupt.trigger();
    for (tool, arguments) in [
        ("move_file", json!({"from": "a.txt", "to": "b.txt"})),
        ("delete_file", json!({"path": "a.txt"})),
        ("make_dir", json!({"path": "d"})),
    ] {
        let output = fixture.tool(tool).execute(&context, &arguments).await;
        assert!(
            matches!(&output, pp_types::ToolOutput::Error { message } if message.contains("cancelled")),
            "{tool}: {output:?}"
        );
    }
    assert_eq!(fixture.tree.read("a.txt"), "a");
    assert!(!fixture.tree.workspace().join("d").exists());
}
