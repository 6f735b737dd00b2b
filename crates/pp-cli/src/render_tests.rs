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

pub(super) fn view(diff: Option<String>, content: Option<String>) -> ApprovalView {
    ApprovalView {
        id: "ap-1".to_owned(),
        task_id: pp_types::TaskId("t-1".to_owned()),
        changeset_id: None,
        prompt: "tidy\nup".to_owned(),
        created_by: None,
        origin: None,
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
        mcp: None,
        precheck: None,
        current: None,
        created_at: pp_types::Timestamp::from_millis(0),
        resolved_at: None,
        resolved_by: None,
        resolved_by_user: None,
        resolved_via: None,
        reason: None,
        edited_arguments: None,
        edited: None,
        revertible: Some(true),
        outcome: None,
        provenance: pp_tasks::Provenance::default(),
        may_have_run: None,
    }
}

#[test]
fn a_forged_path_stays_on_the_action_line_and_the_resolved_path_is_shown() {
    let card = approval_card(
        &view(None, Some("new\n".to_owned())),
        Palette::OFF,
        Fold::Window(200),
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
        .skip_while(|line| !line.starts_with("│ change:"))
        .collect();
    let header = "drafts\\n│ (new file; nothing existing is replaced)\\n│/../notes.txt";
    assert_eq!(
        change,
        [
            "│ change:     +1 −1 in 1 hunk".to_owned(),
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

/// A golden card: what the change adds and removes up front, then a numbered diff;
/// no arguments JSON for a file tool.
#[test]
fn the_card_shows_the_target_a_numbered_diff_and_its_counts() {
    let mut view = plain_view();
    view.diff = Some(
        "--- a/notes.txt\n+++ b/notes.txt\n@@ -1,3 +1,3 @@\n keep\n-old\n+new\n same\n".to_owned(),
    );
    let card = approval_card(&view, Palette::OFF, Fold::Window(200));
    assert_eq!(
        card,
        "┌─ approval ap-1 (pending) ─────────────────
│ task:       tidy up
│ tool:       write_file (file:write)
│ risk:       HIGH RISK
│ action:     overwrite notes.txt
│ change:     +1 −1 in 1 hunk
│   --- a/notes.txt
│   +++ b/notes.txt
│   @@ -1,3 +1,3 @@
│      1    1  keep
│      2      -old
│           2 +new
│      3    3  same
└───────────────────────────────────────────────"
    );
}

/// A diff of `hunks` hunks over a file of `lines` lines, each hunk changing one line
/// and the hunks `gap` unchanged lines apart (the whole file as context).
fn long_diff(hunks: usize, gap: usize) -> String {
    let mut diff = String::from("--- a/notes.txt\n+++ b/notes.txt\n@@ -1,100 +1,100 @@\n");
    for hunk in 0..hunks {
        for line in 0..gap {
            diff.push_str(&format!(" same {hunk}.{line}\n"));
        }
        diff.push_str(&format!("-old {hunk}\n+new {hunk}\n"));
    }
    for line in 0..gap {
        diff.push_str(&format!(" tail {line}\n"));
    }
    diff
}

/// Unchanged runs fold to two lines each side of a change; every changed line stays,
/// and the counts say how much changes before the diff.
#[test]
fn context_is_folded_but_never_a_changed_line() {
    let mut view = plain_view();
    view.diff = Some(long_diff(5, 10));
    let card = approval_card(&view, Palette::OFF, Fold::Window(200));
    for hunk in 0..5 {
        assert!(card.contains(&format!("-old {hunk}\n")), "{card}");
        assert!(card.contains(&format!("+new {hunk}\n")), "{card}");
    }
    assert!(card.contains("│ change:     +5 −5 in 1 hunk\n"), "{card}");
    // Before the first change: only the two lines next to it.
    assert!(card.contains("│   … 8 unchanged lines\n"), "{card}");
    // Between two changes: two after the first, two before the next.
    assert!(card.contains("│   … 6 unchanged lines\n"), "{card}");
    assert!(!card.contains("same 1.2\n"), "{card}");
    assert!(
        card.contains("same 1.1\n") && card.contains("same 1.8\n"),
        "{card}"
    );
    // Nothing is folded for the pager.
    let everything = approval_card(&view, Palette::OFF, Fold::Nothing);
    assert!(!everything.contains("unchanged line"), "{everything}");
    assert!(everything.contains("same 1.2\n"), "{everything}");
}

#[test]
fn the_counts_name_added_removed_and_hunks() {
    let diff = "--- a/n\n+++ b/n\n@@ -1,2 +1,3 @@\n-a\n+b\n+c\n x\n@@ -9 +10 @@\n-y\n";
    assert_eq!(change_counts(diff).describe(), "+2 −2 in 2 hunks");
    assert_eq!(
        change_counts("--- a/+x\n+++ b/+x\n@@ -1 +1 @@\n+z\n").describe(),
        "+1 −0 in 1 hunk",
        "the headers are not counted"
    );
}

/// Every line fits the window by columns, wide characters included; a long task is
/// cut by columns; a folded value keeps its size on its line.
#[test]
fn every_line_is_cut_by_columns_with_its_suffix_kept() {
    let mut view = plain_view();
    view.prompt = "把会议记录整理成摘要并写入文件，然后通知所有参会人员".repeat(3);
    view.diff = Some(format!(
        "--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1 @@\n-{}\n+{}\n",
        "旧".repeat(60),
        "新".repeat(60)
    ));
    for columns in [40, 70, 110] {
        let card = approval_card(&view, Palette::ON, Fold::Window(columns));
        for line in card.lines() {
            assert!(
                crate::style::width(line) <= columns,
                "{} > {columns}: {line}",
                crate::style::width(line)
            );
        }
        let task = card.lines().nth(1).unwrap_or_default();
        assert!(
            task.starts_with("│ task:       把会议") && task.ends_with('…'),
            "{task}"
        );
        assert!(
            crate::style::width(task) >= columns - 1,
            "cut by columns: {task}"
        );
    }

    let mut view = plain_view();
    view.label = None;
    view.target = None;
    view.tool = "send_mail".to_owned();
    view.arguments = serde_json::json!({"to": "a@b.c", "body": "x".repeat(3004)});
    let card = approval_card(&view, Palette::OFF, Fold::Window(70));
    let body = card
        .lines()
        .find(|line| line.contains("\"body\""))
        .unwrap_or_default();
    assert_eq!(
        body,
        format!("│     \"body\": \"{}… (3004 bytes)\",", "x".repeat(39)),
        "the size on the same line, within 70 columns"
    );
    assert_eq!(crate::style::width(body), 70);
}

/// A long change is paged: the pinned lines (tool, risk, target, `now:`) are on every
/// page, each page fits the window with the question, and every changed line must have
/// been on a page (or in the pager) before the card counts as seen.
#[test]
fn a_change_longer_than_the_window_is_paged_and_tracked() {
    let mut view = plain_view();
    view.diff = Some(long_diff(5, 10));
    view.precheck = Some(pp_tasks::Precheck {
        status: PrecheckStatus::Unavailable,
        message: Some("no fingerprint".to_owned()),
        fingerprint: None,
        diff: None,
        content: None,
        label: None,
        scope: None,
        added: None,
        removed: None,
    });
    let (columns, rows) = (70, 24);
    let mut card = crate::card::Paged::new(&view, Palette::OFF, (columns, rows));
    assert!(card.is_paged());
    assert_eq!(card.unseen(), 10);
    let mut pages = 0;
    let mut seen_on_pages = Vec::new();
    while card.unseen() > 0 {
        let page = card.page();
        pages += 1;
        assert!(page.len() + 2 <= rows, "{} rows: {page:#?}", page.len());
        for pinned in [
            "│ tool:",
            "│ risk:",
            "│ now:",
            "│ action:",
            "│ change:     +5 −5",
        ] {
            assert!(
                page.iter().any(|line| line.starts_with(pinned)),
                "{pinned} on page {pages}: {page:#?}"
            );
        }
        assert!(
            page.last()
                .is_some_and(|line| line.starts_with(&format!("page {pages}/"))),
            "{page:#?}"
        );
        seen_on_pages.extend(page.into_iter().filter(|line| line.contains("+new")));
        card.next();
        assert!(pages < 10, "never done");
    }
    assert!(pages >= 2, "{pages}");
    assert_eq!(seen_on_pages.len(), 5, "{seen_on_pages:#?}");

    // The pager shows everything at once.
    let mut card = crate::card::Paged::new(&view, Palette::OFF, (columns, rows));
    card.page();
    assert!(card.unseen() > 0);
    card.saw_everything();
    assert_eq!(card.unseen(), 0);

    // A taller window: one page, all seen, no page line.
    let mut card = crate::card::Paged::new(&view, Palette::OFF, (110, 60));
    assert!(!card.is_paged());
    let page = card.page();
    assert!(
        !page.iter().any(|line| line.starts_with("page ")),
        "{page:#?}"
    );
    assert_eq!(card.unseen(), 0);

    // A resize keeps what was seen and lays the page out anew.
    let mut card = crate::card::Paged::new(&view, Palette::OFF, (110, 20));
    card.page();
    let unseen = card.unseen();
    card.resize((40, 20));
    assert_eq!(card.unseen(), unseen);
    assert!(
        card.page()
            .iter()
            .all(|line| crate::style::width(line) <= 40)
    );
}

/// Overwriting a file with the content it already has: the diff is empty, and the card
/// says there is no change instead of an empty `change:` label.
#[test]
fn an_identical_overwrite_says_there_is_no_change() {
    let mut view = plain_view();
    view.diff = Some(String::new());
    let card = approval_card(&view, Palette::OFF, Fold::Window(200));
    assert!(
        card.contains("│ change:     none: the file already has exactly this content\n"),
        "{card}"
    );
    assert!(!card.contains("│ change:\n"), "{card}");
}

/// A new file shows its numbered content; a tool without a preview shows its
/// arguments, long values folded with their size.
#[test]
fn new_content_is_numbered_and_other_tools_show_folded_arguments() {
    let mut view = plain_view();
    view.label = Some(pp_types::WriteLabel::Create);
    view.content = Some("# Summary\n\nBuy milk.\n".to_owned());
    view.notice = Some("the target could not be read".to_owned());
    let card = approval_card(&view, Palette::OFF, Fold::Window(200));
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
    let card = approval_card(&view, Palette::OFF, Fold::Window(200));
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
    let card = approval_card(&too_large, Palette::OFF, Fold::Window(200));
    assert!(card.contains("│ undo:       cannot be undone"), "{card}");
    let card = approval_card(
        &view(None, Some("new\n".to_owned())),
        Palette::OFF,
        Fold::Window(200),
    );
    assert!(!card.contains("undo:"), "{card}");
}

/// A view of `tool` with `label` on `target` (resolved the same), nothing else.
fn effect_view(tool: &str, label: pp_types::WriteLabel, target: &str) -> ApprovalView {
    let mut view = plain_view();
    view.tool = tool.to_owned();
    view.label = Some(label);
    view.target = Some(target.to_owned());
    view.resolved = Some(target.to_owned());
    view.arguments = serde_json::json!({});
    view
}

/// The card's lines after the header (approval, task, tool, risk).
fn body_of(card: &str) -> Vec<&str> {
    card.lines().skip(4).collect()
}

#[test]
fn a_move_in_the_same_folder_is_a_rename_and_a_move_elsewhere_says_move() {
    let mut view = effect_view("move_file", pp_types::WriteLabel::Move, "invoices/a.pdf");
    view.destination = Some("invoices/2026-11 acme.pdf".to_owned());
    view.destination_resolved = Some("invoices/2026-11 acme.pdf".to_owned());
    let card = approval_card(&view, Palette::OFF, Fold::Window(200));
    assert_eq!(
        body_of(&card),
        [
            "│ action:     rename invoices/a.pdf → invoices/2026-11 acme.pdf",
            "└───────────────────────────────────────────────",
        ]
    );

    view.destination = Some("archive/a.pdf".to_owned());
    view.destination_resolved = Some("archive/a.pdf".to_owned());
    let card = approval_card(&view, Palette::OFF, Fold::Window(200));
    assert_eq!(
        body_of(&card)[0],
        "│ action:     move invoices/a.pdf → archive/a.pdf"
    );
}

#[test]
fn an_overwriting_move_names_the_replaced_file_and_its_size_and_resolved_paths() {
    let mut view = effect_view("move_file", pp_types::WriteLabel::Move, "drafts/../a.txt");
    view.resolved = Some("a.txt".to_owned());
    view.destination = Some("link/b.txt".to_owned());
    view.destination_resolved = Some("real/b.txt".to_owned());
    view.replaces = Some("real/b.txt".to_owned());
    view.size = Some(3 * 1024);
    view.revertible = Some(false);
    let card = approval_card(&view, Palette::OFF, Fold::Window(200));
    assert_eq!(
        body_of(&card),
        [
            "│ action:     move drafts/../a.txt → link/b.txt",
            "│ resolves:   a.txt → real/b.txt",
            "│ replaces:   `real/b.txt` (3.0 KiB), which is overwritten",
            "│ undo:       cannot be undone (the file it replaces is larger than [revert] max_bytes)",
            "└───────────────────────────────────────────────",
        ]
    );
}

#[test]
fn a_move_with_a_forged_destination_stays_on_its_line() {
    let mut view = effect_view("move_file", pp_types::WriteLabel::Move, "a.txt");
    view.destination = Some(FORGED.to_owned());
    view.destination_resolved = Some("notes.txt".to_owned());
    let card = approval_card(&view, Palette::OFF, Fold::Window(200));
    assert!(
        !card.lines().any(|line| line.starts_with("│ (new file")),
        "{card}"
    );
    // Same folder once resolved: a rename.
    assert!(
        body_of(&card)[0].starts_with("│ action:     rename a.txt → drafts\\n│ (new file"),
        "{card}"
    );
    assert_eq!(body_of(&card)[1], "│ resolves:   a.txt → notes.txt");
}

#[test]
fn a_delete_shows_size_first_lines_and_when_it_cannot_be_undone() {
    let mut view = effect_view("delete_file", pp_types::WriteLabel::Delete, "old/todo.md");
    view.size = Some(1500);
    view.content = Some("# Todo\n- [ ] milk\n".to_owned());
    let card = approval_card(&view, Palette::OFF, Fold::Window(200));
    assert_eq!(
        body_of(&card),
        [
            "│ action:     delete old/todo.md",
            "│ size:       1.5 KiB",
            "│ first lines of the file (2 lines shown):",
            "│      1 # Todo",
            "│      2 - [ ] milk",
            "└───────────────────────────────────────────────",
        ]
    );
    view.revertible = Some(false);
    let card = approval_card(&view, Palette::OFF, Fold::Window(200));
    assert!(
        card.contains("│ undo:       cannot be undone (the file is larger than [revert] max_bytes: no copy is kept)"),
        "{card}"
    );
}

#[test]
fn a_new_folder_says_create_folder() {
    let view = effect_view(
        "make_dir",
        pp_types::WriteLabel::CreateFolder,
        "reports/2026",
    );
    let card = approval_card(&view, Palette::OFF, Fold::Window(200));
    assert_eq!(
        body_of(&card),
        [
            "│ action:     create folder reports/2026",
            "└───────────────────────────────────────────────",
        ]
    );
}

fn command_view(argv: &[&str], confined: bool) -> ApprovalView {
    let mut view = effect_view("run_command", pp_types::WriteLabel::Run, argv[0]);
    view.risk = Risk::High;
    view.capability = "shell:execute".to_owned();
    view.revertible = None;
    view.command = Some(pp_types::CommandPreview {
        argv: argv.iter().map(|argument| (*argument).to_owned()).collect(),
        cwd: "data".to_owned(),
        shell: argv.get(1) == Some(&"-c"),
        confined,
        limits: pp_types::CommandLimits {
            timeout_secs: 60,
            cpu_secs: 60,
            memory_mb: 1024,
            processes: 64,
            file_size_mb: 256,
            output_bytes: 65536,
            network: false,
        },
        stdin_bytes: None,
        containment: Some("a PID namespace: every process it starts ends with the call".to_owned()),
        uncovered: Some(pp_types::Uncovered {
            files: 2,
            bytes: 3 * 1024 * 1024,
        }),
    });
    view
}

/// A golden command card: each argument on its own line (an argument with a space and
/// an empty one stay distinguishable; a newline and an escape sequence are escaped).
#[test]
fn a_command_shows_each_argument_the_cwd_the_sandbox_and_the_limits() {
    let view = command_view(&["python3", "sum.py", "a b", "", "x\n\x1b[2Jy"], true);
    let card = approval_card(&view, Palette::OFF, Fold::Window(200));
    assert_eq!(
        card,
        "┌─ approval ap-1 (pending) ─────────────────
│ task:       tidy up
│ tool:       run_command (shell:execute)
│ risk:       HIGH RISK
│ action:     run python3
│ argv:       5 arguments, one per line, exactly as passed to the program:
│   [0] \"python3\"
│   [1] \"sum.py\"
│   [2] \"a b\"
│   [3] \"\"
│   [4] \"x\\n\\x1b[2Jy\"
│ cwd:        data
│ sandbox:    confined (Landlock): reads and writes only in the workspace, no network
│ processes:  a PID namespace: every process it starts ends with the call
│ limits:     timeout 60 s · CPU 60 s · memory 1024 MiB · 64 processes · files ≤ 256 MiB · output ≤ 64.0 KiB per stream · no network
│ revert:     a revert could not cover 2 files (3.0 MiB): too large, beyond the snapshot budget, or ignored
└───────────────────────────────────────────────"
    );
}

#[test]
fn a_shell_script_is_named_and_shown_line_by_line() {
    let mut view = command_view(&["sh", "-c", "ls\nrm -rf \x1b[8mout"], true);
    if let Some(command) = view.command.as_mut() {
        command.cwd = String::new();
        command.stdin_bytes = Some(12);
    }
    let card = approval_card(&view, Palette::OFF, Fold::Window(200));
    let body = body_of(&card);
    assert_eq!(
        body[..9],
        [
            "│ action:     run sh",
            "│ argv:       3 arguments, one per line, exactly as passed to the program:",
            "│   [0] \"sh\"",
            "│   [1] \"-c\"",
            "│   [2] \"ls\\nrm -rf \\x1b[8mout\"",
            "│ shell:      runs a shell script; the script:",
            "│      1 ls",
            "│      2 rm -rf \\x1b[8mout",
            "│ cwd:        . (the workspace's root)",
        ]
    );
    assert!(card.contains("│ stdin:      12 B\n"), "{card}");
}

#[test]
fn an_unconfined_command_says_not_confined_first_and_in_the_strongest_style() {
    let view = command_view(&["python3", "sum.py"], false);
    let card = approval_card(&view, Palette::OFF, Fold::Window(200));
    let body = body_of(&card);
    assert_eq!(
        body[0],
        "│ !! NOT confined !! this command runs with all of your user's rights: every file you can reach, the data directory"
    );
    assert!(card.contains("│ sandbox:    NOT confined\n"), "{card}");
    let coloured = approval_card(&view, Palette::ON, Fold::Window(200));
    assert!(
        coloured.contains("\x1b[1;97;41m!! NOT confined !!\x1b[0m"),
        "{coloured}"
    );
    let confined = approval_card(
        &command_view(&["python3", "sum.py"], true),
        Palette::OFF,
        Fold::Window(200),
    );
    assert!(!confined.contains("NOT confined"), "{confined}");
}

#[test]
fn parents_and_scripts() {
    assert_eq!(effects::parent("a/b/c.txt"), "a/b");
    assert_eq!(effects::parent("c.txt"), "");
    assert_eq!(effects::parent("a/dir/"), "a");
    let argv = |args: &[&str]| args.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>();
    assert_eq!(
        effects::shell_script(&argv(&["bash", "-c", "echo hi"])),
        Some("echo hi")
    );
    assert_eq!(effects::shell_script(&argv(&["python3", "x.py"])), None);
}

#[test]
fn list_rows_name_the_destination_and_an_unconfined_command() {
    let mut view = effect_view("move_file", pp_types::WriteLabel::Move, "a.txt");
    view.destination = Some("b\nc.txt".to_owned());
    assert_eq!(approval_row_target(&view), "a.txt → b\\nc.txt");
    let view = command_view(&["python3", "x.py"], false);
    assert_eq!(approval_row_target(&view), "python3 (NOT confined)");
    let view = command_view(&["python3", "x.py"], true);
    assert_eq!(approval_row_target(&view), "python3");
}

/// A golden MCP card: the server, the tool on it and the resolved action, the path as
/// written and where it resolves, the arguments always, and that nothing can be undone.
#[test]
fn an_mcp_call_shows_server_tool_action_and_arguments() {
    let mut view = effect_view(
        "fs__write_file",
        pp_types::WriteLabel::Run,
        "notes/../a.txt",
    );
    view.capability = "mcp:fs:write_file:write".to_owned();
    view.risk = Risk::High;
    view.resolved = Some("a.txt".to_owned());
    view.revertible = None;
    view.arguments = serde_json::json!({"path": "notes/../a.txt", "content": "hi\n"});
    view.mcp = Some(pp_types::McpCallPreview {
        server: "fs".to_owned(),
        tool: "write_file".to_owned(),
        action: "write".to_owned(),
        sandbox: None,
    });
    let card = approval_card(&view, Palette::OFF, Fold::Window(200));
    assert_eq!(
        card,
        "┌─ approval ap-1 (pending) ─────────────────
│ task:       tidy up
│ tool:       fs__write_file (mcp:fs:write_file:write)
│ risk:       HIGH RISK
│ MCP server: fs (tool write_file on it, resolved action write)
│ the server runs as its own process in its sandbox: path arguments are checked against the workspace; it reaches only the system folders and what it needs to start
│ action:     write notes/../a.txt → resolves to a.txt
│ undo:       cannot be undone (PocketPilot does not see what an MCP server changes)
│ arguments:
│   {
│     \"content\": \"hi\\n\",
│     \"path\": \"notes/../a.txt\"
│   }
└───────────────────────────────────────────────"
    );
}

#[test]
fn a_card_asking_again_a_cut_call_says_it_may_already_have_run() {
    let mut card_view = view(None, Some("new\n".to_owned()));
    card_view.may_have_run = Some(pp_tasks::MayHaveRun {
        message: "this call may already have run: the process stopped\nforged".to_owned(),
        approval_id: "a_1".to_owned(),
        started_at: pp_types::Timestamp::from_millis(0),
        targets: vec![pp_tasks::CutTarget {
            path: "notes.txt".to_owned(),
            root: pp_types::ChangeRoot::Workspace,
            before: pp_tasks::PathState::Absent,
            before_size: None,
            now: pp_tasks::PathState::File,
            now_size: Some(4),
            changed: Some(true),
            diff: Some(
                "--- before the call/notes.txt\n+++ now/notes.txt\n@@ -0,0 +1 @@\n+new\n"
                    .to_owned(),
            ),
        }],
    });
    let card = approval_card(&card_view, Palette::OFF, Fold::Nothing);
    let lines: Vec<&str> = card.lines().collect();
    let at = lines
        .iter()
        .position(|line| line.starts_with("│ may have run: this call may already have run"))
        .unwrap_or_else(|| panic!("{card}"));
    // The model-reachable text stays on its line.
    assert!(
        !lines.iter().any(|line| line.starts_with("forged")),
        "{card}"
    );
    assert_eq!(
        lines[at + 1],
        "│   `notes.txt`: before the call absent, now file (4 B): changed since the call started"
    );
    assert!(
        lines[at + 2..].iter().any(|line| line.contains("+new")),
        "{card}"
    );
}

/// A changed line longer than the window wraps, every character kept (the change at its
/// end is on screen); one too long even for that is cut and only the pager shows it.
#[test]
fn a_long_changed_line_wraps_and_one_too_long_needs_the_pager() {
    let mut view = plain_view();
    let old = "会议记录第5条，内容需要整理成摘要并写入文件以便之后查阅";
    view.diff = Some(format!(
        "--- a/n.md\n+++ b/n.md\n@@ -1 +1 @@\n-{old}\n+{old}（已更新）\n"
    ));
    let card = approval_card(&view, Palette::OFF, Fold::Window(40));
    assert!(
        card.lines().all(|line| crate::style::width(line) <= 40),
        "{card}"
    );
    let joined: String = card
        .lines()
        .map(|line| line.trim_start_matches(['│', ' ']))
        .collect();
    assert!(
        joined.contains("（已更新）"),
        "the end of the change is shown: {card}"
    );
    let mut paged = crate::card::Paged::new(&view, Palette::OFF, (40, 24));
    paged.page();
    assert_eq!(paged.unseen(), 0, "{card}");

    view.diff = Some(format!(
        "--- a/n.md\n+++ b/n.md\n@@ -1 +1 @@\n-a\n+{}\n",
        "x".repeat(2000)
    ));
    let mut paged = crate::card::Paged::new(&view, Palette::OFF, (70, 24));
    let page = paged.page();
    assert!(
        page.iter().all(|line| crate::style::width(line) <= 70),
        "{page:#?}"
    );
    assert_eq!(paged.unseen(), 1, "cut, so not seen: {page:#?}");
    assert_eq!(paged.too_long(), 1);
    assert!(
        paged
            .not_yet()
            .contains("too long for the window; d shows it")
    );
    paged.saw_everything();
    assert_eq!(paged.unseen(), 0);
}
