//! Tests of `render.rs`: escaping, the card, the live view.
use super::*;

#[test]
fn terminal_safe_escapes_controls_and_bidi_but_keeps_lines() {
    assert_eq!(
        terminal_safe("plain\ntext\twith tab"),
        "plain\ntext\twith tab"
    );
    assert_eq!(terminal_safe("a\x1b[40Ab"), "a\\x1b[40Ab");
    assert_eq!(terminal_safe("cr\rover"), "cr\\rover");
    assert_eq!(terminal_safe("line\u{2028}sep"), "line\\u{2028}sep");
    assert_eq!(terminal_safe("emoji 👩\u{200d}💻"), "emoji 👩\u{200d}💻");
    assert_eq!(terminal_safe("c1\u{9b}2J"), "c1\\x9b2J");
    assert_eq!(terminal_safe("evil\u{202e}txt.exe"), "evil\\u{202e}txt.exe");
    assert_eq!(terminal_safe("del\u{7f}"), "del\\x7f");
}

#[test]
fn json_safe_keeps_json_valid() {
    let json = serde_json::json!({"content": "x\u{9b}2J\u{202e}y\u{1b}[A"}).to_string();
    let safe = json_safe(&json);
    assert!(
        !safe.chars().any(|c| c.is_control() || c == '\u{202e}'),
        "{safe}"
    );
    let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
    assert_eq!(back["content"], "x\u{9b}2J\u{202e}y\u{1b}[A");
}

/// The path from issue 8, finding 4: it resolves to `notes.txt`.
const FORGED: &str = "drafts\n│ (new file; nothing existing is replaced)\n│/../notes.txt";

#[test]
fn one_line_escapes_line_breaks_tabs_controls_bidi_and_zero_width() {
    assert_eq!(one_line("plain/path.txt"), "plain/path.txt");
    assert_eq!(one_line("a\nb\tc\rd"), "a\\nb\\tc\\rd");
    assert_eq!(one_line("x\u{1b}[2J"), "x\\x1b[2J");
    assert_eq!(one_line("evil\u{202e}txt.exe"), "evil\\u{202e}txt.exe");
    assert_eq!(
        one_line("iso\u{2066}late\u{2069}"),
        "iso\\u{2066}late\\u{2069}"
    );
    assert_eq!(one_line("zw\u{200d}j\u{2028}"), "zw\\u{200d}j\\u{2028}");
    assert!(!one_line(FORGED).contains('\n'));
}

fn view(diff: Option<String>, content: Option<String>) -> ApprovalView {
    ApprovalView {
        id: "ap-1".to_owned(),
        task_id: pp_types::TaskId("t-1".to_owned()),
        prompt: "tidy\nup".to_owned(),
        state: pp_types::ApprovalState::Pending,
        tool: "write\u{202e}_file".to_owned(),
        capability: "file:write".to_owned(),
        risk: Risk::High,
        label: Some(pp_types::WriteLabel::Overwrite),
        target: Some(FORGED.to_owned()),
        resolved: Some("notes.txt".to_owned()),
        arguments: serde_json::json!({"path": FORGED, "content": "new\n"}),
        diff,
        content,
        notice: None,
        scope: None,
        added: None,
        removed: None,
        destination: None,
        destination_resolved: None,
        replaces: None,
        size: None,
        command: None,
        current: None,
        created_at: pp_types::Timestamp::from_millis(0),
        resolved_at: None,
        resolved_by: None,
        reason: None,
        edited_arguments: None,
        revertible: Some(true),
        outcome: None,
    }
}

#[test]
fn a_forged_path_stays_on_the_action_line_and_the_resolved_path_is_shown() {
    let card = approval_card(
        &view(None, Some("new\n".to_owned())),
        Palette::OFF,
        Fold::Lines(CARD_LINES, 200),
    );
    let lines: Vec<&str> = card.lines().collect();
    assert_eq!(
        lines[4],
        "│ action:     overwrite drafts\\n│ (new file; nothing existing is replaced)\\n│/../notes.txt → resolves to notes.txt"
    );
    assert_eq!(lines[2], "│ tool:       write\\u{202e}_file (file:write)");
    assert!(
        !lines.iter().any(|line| line.starts_with("│ (new file")),
        "no forged line: {card}"
    );
}

#[test]
fn diff_headers_holding_newlines_are_printed_on_one_line_each() {
    let diff = format!("--- a/{FORGED}\n+++ b/{FORGED}\n@@ -1 +1 @@\n-old\n+new\n");
    let card = approval_card(&view(Some(diff), None), Palette::OFF, Fold::Nothing);
    let change: Vec<&str> = card
        .lines()
        .skip_while(|line| *line != "│ change:")
        .collect();
    let header = "drafts\\n│ (new file; nothing existing is replaced)\\n│/../notes.txt";
    assert_eq!(
        change,
        [
            "│ change:".to_owned(),
            format!("│   --- a/{header}"),
            format!("│   +++ b/{header}"),
            "│   @@ -1 +1 @@".to_owned(),
            "│      1      -old".to_owned(),
            "│           1 +new".to_owned(),
            "│ arguments:".to_owned(),
            "│   {".to_owned(),
            "│     \"content\": \"new\\n\",".to_owned(),
            format!("│     \"path\": \"{}\"", FORGED.replace('\n', "\\n")),
            "│   }".to_owned(),
            "└───────────────────────────────────────────────".to_owned(),
        ]
    );
}

#[test]
fn the_resolved_path_is_shown_only_when_it_differs() {
    assert_eq!(target_text("notes.txt", Some("notes.txt")), "notes.txt");
    assert_eq!(target_text("a/../b.txt", None), "a/../b.txt");
    assert_eq!(
        target_text("a/../b.txt", Some("b.txt")),
        "a/../b.txt → resolves to b.txt"
    );
}

#[test]
fn live_lines_name_tools_on_one_line() {
    let event: Event = serde_json::from_value(serde_json::json!({
        "step": 0, "type": "approval_required", "call_id": "c", "name": "write\nfake line",
        "capability": "file:write", "risk": "high", "arguments": {}
    }))
    .unwrap();
    let lines = live_lines(&event, Palette::OFF, 80);
    assert_eq!(lines, ["[step 1] ⏸ write\\nfake line needs your approval"]);
}

fn plain_view() -> ApprovalView {
    let mut view = view(None, None);
    view.tool = "write_file".to_owned();
    view.prompt = "tidy up".to_owned();
    view.target = Some("notes.txt".to_owned());
    view.resolved = Some("notes.txt".to_owned());
    view
}

/// A golden card: a numbered diff folded after two lines; no arguments JSON for a
/// file tool.
#[test]
fn the_card_shows_the_target_a_numbered_diff_and_a_fold() {
    let mut view = plain_view();
    view.diff = Some(
        "--- a/notes.txt\n+++ b/notes.txt\n@@ -1,3 +1,3 @@\n keep\n-old\n+new\n same\n".to_owned(),
    );
    let card = approval_card(&view, Palette::OFF, Fold::Lines(5, 80));
    assert_eq!(
        card,
        "┌─ approval ap-1 (pending) ─────────────────
│ task:       tidy up
│ tool:       write_file (file:write)
│ risk:       HIGH RISK
│ action:     overwrite notes.txt
│ change:
│   --- a/notes.txt
│   +++ b/notes.txt
│   @@ -1,3 +1,3 @@
│      1    1  keep
│      2      -old
│   … 2 more lines (press d to see everything)
└───────────────────────────────────────────────"
    );
}

/// A new file shows its numbered content; a tool without a preview shows its
/// arguments, long values folded with their size.
#[test]
fn new_content_is_numbered_and_other_tools_show_folded_arguments() {
    let mut view = plain_view();
    view.label = Some(pp_types::WriteLabel::Create);
    view.content = Some("# Summary\n\nBuy milk.\n".to_owned());
    view.notice = Some("the target could not be read".to_owned());
    let card = approval_card(&view, Palette::OFF, Fold::Lines(CARD_LINES, 80));
    let body: Vec<&str> = card.lines().skip(4).collect();
    assert_eq!(
        body,
        [
            "│ action:     create notes.txt",
            "│ notice:     the target could not be read",
            "│ new content (3 lines, 21 bytes):",
            "│      1 # Summary",
            "│      2 ",
            "│      3 Buy milk.",
            "└───────────────────────────────────────────────",
        ]
    );

    let mut view = plain_view();
    view.label = None;
    view.target = None;
    view.tool = "send_mail".to_owned();
    view.arguments = serde_json::json!({"to": "a@b.c", "body": "x".repeat(100)});
    let card = approval_card(&view, Palette::OFF, Fold::Lines(CARD_LINES, 80));
    assert!(card.contains("│ arguments:"), "{card}");
    assert!(
        card.contains(&format!("\"body\": \"{}… (100 bytes)\"", "x".repeat(60))),
        "{card}"
    );
}

#[test]
fn colours_mark_removed_and_added_lines_only_when_on() {
    let mut view = plain_view();
    view.diff = Some("--- a/n\n+++ b/n\n@@ -1 +1 @@\n-old\n+new\n".to_owned());
    let plain = approval_card(&view, Palette::OFF, Fold::Nothing);
    assert!(!plain.contains('\x1b'), "{plain}");
    let coloured = approval_card(&view, Palette::ON, Fold::Nothing);
    assert!(coloured.contains("\x1b[31m-old\x1b[0m"), "{coloured}");
    assert!(coloured.contains("\x1b[32m+new\x1b[0m"), "{coloured}");
}

/// A listing and a read in the live view, as a person sees them.
#[test]
fn results_are_a_table_and_a_fold_under_their_call() {
    let event = |kind: serde_json::Value| -> Event { serde_json::from_value(kind).unwrap() };
    let listing = event(serde_json::json!({
        "step": 0, "type": "tool_result", "call_id": "c", "name": "list_files",
        "content": "file         176 2026-11-30T14:20:51Z notes.md\ndir            - 2026-11-30T14:20:51Z 草稿/\n"
    }));
    assert_eq!(
        live_lines(&listing, Palette::OFF, 80),
        [
            "         type   size  modified          name",
            "         file  176 B  2026-11-30 14:20  notes.md",
            "         dir       -  2026-11-30 14:20  草稿/",
        ]
    );
    let denied = event(serde_json::json!({
        "step": 1, "type": "tool_denied", "call_id": "c", "name": "read_file",
        "rule": "escapes", "message": "outside the workspace", "denials": 1
    }));
    assert_eq!(
        live_lines(&denied, Palette::OFF, 80),
        ["         ⛔ denied by rule escapes (denial 1): outside the workspace"]
    );
    let error = event(serde_json::json!({
        "step": 1, "type": "tool_error", "call_id": "c", "name": "read_file",
        "message": "no such file"
    }));
    assert_eq!(
        live_lines(&error, Palette::OFF, 80),
        ["         ✗ error: no such file"]
    );
}

#[test]
fn a_change_that_cannot_be_undone_says_so_on_the_card() {
    let mut too_large = view(None, Some("new\n".to_owned()));
    too_large.revertible = Some(false);
    let card = approval_card(&too_large, Palette::OFF, Fold::Lines(CARD_LINES, 200));
    assert!(card.contains("│ undo:       cannot be undone"), "{card}");
    let card = approval_card(
        &view(None, Some("new\n".to_owned())),
        Palette::OFF,
        Fold::Lines(CARD_LINES, 200),
    );
    assert!(!card.contains("undo:"), "{card}");
}
