//! The approval card in windows of 70×24 and 110×40 (sizes set inside the pseudo-terminal
//! with `stty`): no card line is wider than the window, CJK included; the tool, target
//! and question stay on screen; a change longer than the window is paged, and `a` does
//! not approve until every changed line has been shown.

use pp_test_support::TempTree;
use serde_json::json;

use crate::terminal::{PROMPT, Terminal};
use crate::write_script;

/// `pocketpilot run PROMPT` on `script` in a pseudo-terminal of `columns`×`rows`.
fn start(
    tree: &TempTree,
    script: &serde_json::Value,
    prompt: &str,
    (columns, rows): (usize, usize),
) -> Terminal {
    let script_path = write_script(tree.base(), script);
    let command = format!(
        "stty rows {rows} cols {columns}; exec {} run --workspace '{}' --script '{}' '{prompt}'",
        env!("CARGO_BIN_EXE_pocketpilot"),
        tree.workspace().display(),
        script_path.display()
    );
    Terminal::spawn(&command, &tree.base().join("home"), &[])
}

/// The screen as lines without colour or other escape sequences.
fn screen_lines(screen: &str) -> Vec<String> {
    let mut plain = String::new();
    let mut chars = screen.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            // CSI: up to a final byte in @..~; other escapes: one more character.
            if chars.peek() == Some(&'[') {
                chars.next();
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            } else {
                chars.next();
            }
        } else if c != '\r' {
            plain.push(c);
        }
    }
    plain.lines().map(str::to_owned).collect()
}

/// Columns a line takes: 2 for CJK and other wide characters, else 1.
fn columns_of(line: &str) -> usize {
    line.chars()
        .map(|c| match u32::from(c) {
            0x1100..=0x115f | 0x2e80..=0xa4cf | 0xac00..=0xd7a3 | 0xf900..=0xfaff => 2,
            0xfe30..=0xfe4f | 0xff00..=0xff60 | 0xffe0..=0xffe6 | 0x20000..=0x3fffd => 2,
            _ => 1,
        })
        .sum()
}

/// The card's lines on `screen`: its edges, its `│` lines, the page line.
fn card_lines(screen: &str) -> Vec<String> {
    screen_lines(screen)
        .into_iter()
        .filter(|line| {
            line.starts_with('│')
                || line.starts_with('┌')
                || line.starts_with('└')
                || line.starts_with("page ")
        })
        .collect()
}

/// A file of 60 lines, and the same with five lines twelve apart changed (five hunks):
/// long CJK lines among them.
fn five_hunks() -> (String, String) {
    let old: String = (1..=60)
        .map(|n| format!("line {n}: 会议记录第{n}条，内容需要整理成摘要并写入文件以便之后查阅和分享给所有参会人员\n"))
        .collect();
    let new: String = old
        .lines()
        .enumerate()
        .map(|(at, line)| {
            if at % 12 == 4 {
                format!("{line}（已更新）\n")
            } else {
                format!("{line}\n")
            }
        })
        .collect();
    (old, new)
}

fn five_hunk_script(new: &str) -> serde_json::Value {
    json!([{"tool_calls": [{"name": "write_file", "arguments": {"path": "notes.md", "content": new}}]},
           {"content": "all done"}])
}

const PROMPT_TEXT: &str = "把会议记录整理成摘要并写入文件，然后通知所有参会人员和相关负责人，再把摘要发到团队频道并在周五之前跟进所有未完成的事项";

#[test]
fn no_card_line_is_wider_than_the_window_and_the_pinned_lines_stay_in_view() {
    for (columns, rows) in [(70, 24), (110, 40)] {
        let tree = TempTree::new();
        let (old, new) = five_hunks();
        tree.file("notes.md", &old);
        let mut terminal = start(&tree, &five_hunk_script(&new), PROMPT_TEXT, (columns, rows));
        terminal.wait_for_prompt(1);
        let screen = terminal.screen();
        terminal.type_text("\u{3}");
        let (code, _) = terminal.finish();
        assert_eq!(code, 130, "{screen}");

        let card = card_lines(&screen);
        assert!(card.len() > 5, "{screen}");
        for line in &card {
            assert!(
                columns_of(line) <= columns,
                "{} columns > {columns}: {line}\n{screen}",
                columns_of(line)
            );
        }
        let task = card
            .iter()
            .find(|line| line.starts_with("│ task:"))
            .unwrap();
        assert!(task.ends_with('…'), "the task cut by columns: {task}");
        assert!(columns_of(task) >= columns - 2, "{task}");

        // What was on screen when the question was asked: the last `rows` lines.
        let lines = screen_lines(&screen);
        let question = lines
            .iter()
            .rposition(|line| line.starts_with(PROMPT.trim_end()))
            .unwrap();
        let visible = &lines[(question + 1).saturating_sub(rows)..=question];
        for pinned in [
            "┌─ approval",
            "│ tool:       write_file",
            "│ risk:",
            "│ action:     overwrite notes.md",
            "│ change:     +5 −5 in 5 hunks",
        ] {
            assert!(
                visible.iter().any(|line| line.starts_with(pinned)),
                "`{pinned}` in view at {columns}×{rows}:\n{}",
                visible.join("\n")
            );
        }
    }
}

#[test]
fn a_change_longer_than_the_window_is_approved_only_after_every_page() {
    let tree = TempTree::new();
    let (old, new) = five_hunks();
    tree.file("notes.md", &old);
    let mut terminal = start(&tree, &five_hunk_script(&new), "update the notes", (70, 24));
    terminal.wait_for_prompt(1);
    assert!(
        terminal.screen().contains("page 1/"),
        "{}",
        terminal.screen()
    );

    // Too early: `a` says what is missing and approves nothing.
    terminal.type_text("a");
    terminal.wait_for_prompt(2);
    let screen = terminal.screen();
    assert!(
        screen.contains("not yet: 8 changed lines not shown yet"),
        "{screen}"
    );
    assert!(!screen.contains("decision: approved"), "{screen}");
    assert_eq!(tree.read("notes.md"), old, "nothing written yet");

    // Space through the pages until every changed line has been on screen.
    let mut questions = 2;
    loop {
        terminal.type_text(" ");
        questions += 1;
        terminal.wait_for_prompt(questions);
        let screen = screen_lines(&terminal.screen());
        let page = screen
            .iter()
            .rev()
            .find(|line| line.starts_with("page "))
            .unwrap()
            .clone();
        if !page.contains("not shown yet") {
            break;
        }
        assert!(questions < 12, "paging never ends: {}", screen.join("\n"));
    }
    assert_eq!(tree.read("notes.md"), old, "paging decides nothing");
    let screen = terminal.screen();
    for hunk in 0..5 {
        let line = 5 + hunk * 12;
        assert!(
            screen.contains(&format!("+line {line}: ")),
            "changed line {line} shown: {screen}"
        );
    }

    terminal.type_text("a");
    let (code, screen) = terminal.finish();
    assert_eq!(code, 0, "{screen}");
    assert_eq!(screen.matches("decision: approved").count(), 1, "{screen}");
    assert_eq!(tree.read("notes.md"), new);

    // The summary line and "Changes on disk" fit the 70 columns too; a change keeps
    // its id (for `pocketpilot revert`) and state.
    let lines = screen_lines(&screen);
    let summary = lines
        .iter()
        .find(|line| line.starts_with("completed · "))
        .unwrap();
    assert!(columns_of(summary) <= 70, "{summary}");
    let change = lines
        .iter()
        .find(|line| line.trim_start().starts_with("overwritten "))
        .unwrap();
    assert!(columns_of(change) <= 70, "{change}");
    assert!(
        change.ends_with("  revertible") && change.contains("  c_"),
        "{change}"
    );
}

/// Resized while the question waits, the card is drawn again at the new size (the
/// window is resized from inside the pseudo-terminal once a file appears, which the test
/// creates after the first card is on screen).
#[test]
fn a_resized_window_gets_the_card_again_at_its_new_size() {
    let tree = TempTree::new();
    let (old, new) = five_hunks();
    tree.file("notes.md", &old);
    let signal = tree.base().join("resize-now");
    let script_path = write_script(tree.base(), &five_hunk_script(&new));
    let command = format!(
        "stty rows 24 cols 70; (while [ ! -e '{signal}' ]; do sleep 0.05; done; \
         stty rows 40 cols 110 < /dev/tty) & exec {} run --workspace '{}' --script '{}' 'update'",
        env!("CARGO_BIN_EXE_pocketpilot"),
        tree.workspace().display(),
        script_path.display(),
        signal = signal.display(),
    );
    let mut terminal = Terminal::spawn(&command, &tree.base().join("home"), &[]);
    terminal.wait_for_prompt(1);
    let before = pages(&terminal.screen());
    assert!(before > 1, "{}", terminal.screen());
    std::fs::write(&signal, "").unwrap();
    terminal.wait_for_prompt(2);
    let screen = terminal.screen();
    terminal.type_text("\u{3}");
    let (code, _) = terminal.finish();
    assert_eq!(code, 130, "{screen}");

    // The second drawing: 40 rows hold more of the change, 110 columns more of a line.
    let redrawn = &screen[screen.rfind("┌─ approval").unwrap()..];
    assert!(redrawn.contains("page 1/"), "{redrawn}");
    assert!(pages(redrawn) < before, "fewer pages at 110×40: {redrawn}");
    let lines = card_lines(redrawn);
    assert!(lines.iter().any(|line| columns_of(line) > 70), "{redrawn}");
    assert!(
        lines.iter().all(|line| columns_of(line) <= 110),
        "{redrawn}"
    );
}

/// The page count of the last `page X/Y` line on `screen`.
fn pages(screen: &str) -> usize {
    let line = screen_lines(screen)
        .into_iter()
        .rev()
        .find(|line| line.starts_with("page "))
        .unwrap();
    let total = line["page ".len()..].split_once('/').unwrap().1;
    total
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap()
}

/// In a changeset, `A` waits until every call has been shown whole: a long call left
/// with `n` before its last page does not count as shown.
#[test]
fn a_changeset_is_approved_with_a_only_once_every_page_of_every_call_was_shown() {
    let tree = TempTree::new();
    let (old, new) = five_hunks();
    tree.file("notes.md", &old);
    let script = json!([{"tool_calls": [
            {"name": "write_file", "arguments": {"path": "notes.md", "content": new}},
            {"name": "write_file", "arguments": {"path": "two.txt", "content": "2\n"}}]},
        {"content": "all done"}]);
    let mut terminal = start(&tree, &script, "two changes", (70, 24));
    // Call 1 (paged): `n` on its first page; call 2 fits and is shown whole.
    terminal.wait_for_prompt(1);
    assert!(
        terminal.screen().contains("page 1/"),
        "{}",
        terminal.screen()
    );
    terminal.type_text("n");
    terminal.wait_for("call 2 of 2", 1);
    terminal.wait_for_prompt(2);
    terminal.type_text("A");
    terminal.wait_for("once each was shown; n: next call", 1);
    terminal.wait_for_prompt(3);
    terminal.type_text("n");
    // Call 1 again: `A` before its last page says what is missing.
    terminal.wait_for("call 1 of 2", 2);
    terminal.wait_for_prompt(4);
    terminal.type_text("A");
    terminal.wait_for("not yet: ", 1);
    let mut questions = 5;
    terminal.wait_for_prompt(questions);
    loop {
        let screen = screen_lines(&terminal.screen());
        let page = screen
            .iter()
            .rev()
            .find(|line| line.starts_with("page "))
            .unwrap();
        if !page.contains("not shown yet") {
            break;
        }
        terminal.type_text(" ");
        questions += 1;
        terminal.wait_for_prompt(questions);
        assert!(questions < 15, "paging never ends: {}", screen.join("\n"));
    }
    assert_eq!(tree.read("notes.md"), old, "nothing decided yet");
    terminal.type_text("A");
    let (code, screen) = terminal.finish();
    assert_eq!(code, 0, "{screen}");
    assert_eq!(tree.read("notes.md"), new, "{screen}");
    assert_eq!(tree.read("two.txt"), "2\n");
}
