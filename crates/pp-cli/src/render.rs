//! Terminal rendering: the live view of a run and the approval card.

use std::borrow::Cow;
use std::io::Write as _;

use pp_agent::EventSink;
use pp_tasks::ApprovalView;
use pp_types::{Event, EventKind, ResolutionKind, Risk};

/// Longest tool output shown in the live view, in characters.
const SHOWN_OUTPUT: usize = 200;

/// Prints each event as one or two short lines on stderr while the task runs.
pub(crate) struct LiveView;

impl EventSink for LiveView {
    fn emit(&self, event: &Event) {
        if let Some(line) = live_line(event) {
            let mut stderr = std::io::stderr().lock();
            let _ = writeln!(stderr, "{}", one_line(&line));
        }
    }
}

/// Makes model- or file-controlled text safe to print on a terminal: every control
/// character except newline and tab, DEL, the C1 controls, the bidirectional overrides
/// and the Unicode line separators are shown as visible escapes (`\x1b`, `\u{202e}`), so
/// text cannot move the cursor, clear the screen, rewrite an approval card or reorder
/// what a person reads. For multi-line text (answers, file content, diff bodies).
pub(crate) fn terminal_safe(text: &str) -> Cow<'_, str> {
    escape_unsafe(text, Kind::Text, visible_escape)
}

/// Like [`terminal_safe`], and newlines, tabs and the invisible zero-width characters
/// are escaped too (`\n`, `\t`, `\u{200b}`): for anything that must stay on its one line
/// and read as what it is — paths, targets, tool names, list rows — so a model-written
/// name cannot print a line that looks like part of the card, nor hide a character.
pub(crate) fn one_line(text: &str) -> Cow<'_, str> {
    escape_unsafe(text, Kind::Name, visible_escape)
}

/// Like [`terminal_safe`] for JSON text printed on a terminal: the characters serde
/// leaves raw (DEL, C1 controls, bidi overrides, line separators) become `\uXXXX`
/// escapes, so the output stays valid JSON with the same meaning. (serde already escapes
/// newlines inside strings; the newlines left are the layout's.)
pub(crate) fn json_safe(json: &str) -> Cow<'_, str> {
    escape_unsafe(json, Kind::Text, |c| format!("\\u{:04x}", u32::from(c)))
}

/// What is being printed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Multi-line text: newlines, tabs and zero-width joiners (emoji) pass through.
    Text,
    /// A name on one line: those are escaped too.
    Name,
}

/// `\n`, `\r`, `\t`, `\x1b` or `\u{202e}`.
fn visible_escape(c: char) -> String {
    match c {
        '\n' => "\\n".to_owned(),
        '\r' => "\\r".to_owned(),
        '\t' => "\\t".to_owned(),
        c if u32::from(c) < 0x100 => format!("\\x{:02x}", u32::from(c)),
        c => format!("\\u{{{:04x}}}", u32::from(c)),
    }
}

/// Characters that change what a terminal shows without being seen themselves.
fn is_unsafe(c: char, kind: Kind) -> bool {
    match c {
        '\n' | '\t' => kind == Kind::Name,
        // Bidirectional embeddings, overrides and isolates; marks.
        '\u{202a}'..='\u{202e}'
        | '\u{2066}'..='\u{2069}'
        | '\u{200e}'
        | '\u{200f}'
        | '\u{061c}' => true,
        // The line and paragraph separators some terminals break lines on.
        '\u{2028}' | '\u{2029}' => true,
        // Zero-width space and joiners, word joiner, invisible operators, byte-order mark.
        '\u{200b}'..='\u{200d}' | '\u{2060}'..='\u{2064}' | '\u{feff}' => kind == Kind::Name,
        c => c.is_control(),
    }
}

fn escape_unsafe(text: &str, kind: Kind, escape: impl Fn(char) -> String) -> Cow<'_, str> {
    if !text.chars().any(|c| is_unsafe(c, kind)) {
        return Cow::Borrowed(text);
    }
    let mut safe = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_unsafe(c, kind) {
            safe.push_str(&escape(c));
        } else {
            safe.push(c);
        }
    }
    Cow::Owned(safe)
}

/// The live-view line for an event, if it gets one.
pub(crate) fn live_line(event: &Event) -> Option<String> {
    let step = event.step + 1;
    Some(match &event.kind {
        EventKind::TaskStarted { .. } | EventKind::ModelRequest { .. } => return None,
        EventKind::ContextTrimmed {
            dropped_messages,
            window,
            ..
        } => format!(
            "[step {step}] left {dropped_messages} older message(s) out to fit the {window}-token window"
        ),
        EventKind::AssistantMessage { content, .. } => {
            let text = content
                .as_deref()
                .map(str::trim)
                .filter(|t| !t.is_empty())?;
            format!("[step {step}] model: {}", shorten(text, SHOWN_OUTPUT))
        }
        EventKind::ToolCall {
            name, arguments, ..
        } => format!(
            "[step {step}] → {name} {}",
            shorten(arguments, SHOWN_OUTPUT)
        ),
        EventKind::ToolResult { content, .. } => {
            format!("           ✓ {}", shorten(content, SHOWN_OUTPUT))
        }
        EventKind::ToolError { message, .. } => format!("           ✗ {message}"),
        EventKind::ToolDenied {
            message,
            rule,
            denials,
            ..
        } => format!(
            "           ⛔ denied ({}, denial {denials}): {message}",
            rule.as_str()
        ),
        EventKind::ApprovalRequired { name, .. } => {
            format!("[step {step}] ⏸ {name} needs your approval")
        }
        EventKind::ApprovalResolved {
            decision, edited, ..
        } => {
            let decision = match decision {
                ResolutionKind::Approved if *edited => "approved (edited arguments)",
                ResolutionKind::Approved => "approved",
                ResolutionKind::Rejected => "rejected",
                ResolutionKind::Stale => "not run: the target changed since it was shown",
            };
            format!("           decision: {decision}")
        }
        EventKind::ApprovalEditRejected { message, .. } => {
            format!("           edit refused: {message}")
        }
        EventKind::TaskCompleted { .. } => format!("[step {step}] completed"),
        EventKind::TaskCancelled { message } => format!("[step {step}] cancelled: {message}"),
        EventKind::TaskInterrupted { message } => {
            format!("[step {step}] interrupted: {message}")
        }
        EventKind::TaskRetried { message } => format!("[step {step}] retried: {message}"),
        EventKind::TaskFailed { reason, message } => {
            format!("[step {step}] failed ({}): {message}", reason.as_str())
        }
    })
}

/// The approval card: tool, capability, risk, label, arguments and the change.
///
/// Every name on the card (tool, capability, target, diff headers) is printed with
/// [`one_line`], so a model-written path cannot add lines that look like the card's own;
/// when the target resolves to a different workspace path, that path is shown too.
pub(crate) fn approval_card(view: &ApprovalView) -> String {
    let mut card = String::new();
    let risk = match view.risk {
        Risk::High => "HIGH RISK",
        Risk::Medium => "medium risk",
        Risk::Low => "low risk",
    };
    card.push_str(&format!(
        "┌─ approval {} ({}) ─────────────────\n",
        one_line(&view.id),
        view.state.as_str()
    ));
    card.push_str(&format!(
        "│ task:       {}\n",
        one_line(&shorten(&view.prompt, 70))
    ));
    card.push_str(&format!(
        "│ tool:       {} ({})\n│ risk:       {risk}\n",
        one_line(&view.tool),
        one_line(&view.capability)
    ));
    if let (Some(label), Some(target)) = (view.label, &view.target) {
        card.push_str(&format!(
            "│ action:     {} {}\n",
            label.as_str(),
            target_text(target, view.resolved.as_deref())
        ));
    }
    let arguments = serde_json::to_string_pretty(&view.arguments)
        .unwrap_or_else(|_| view.arguments.to_string());
    card.push_str("│ arguments:\n");
    for line in arguments.lines() {
        card.push_str(&format!("│   {}\n", terminal_safe(line)));
    }
    if let Some(diff) = &view.diff {
        card.push_str("│ change:\n");
        let (headers, body) = split_diff_headers(diff);
        for header in headers {
            card.push_str(&format!("│   {header}\n"));
        }
        for line in body.lines() {
            card.push_str(&format!("│   {}\n", terminal_safe(line)));
        }
    } else if let Some(content) = &view.content {
        card.push_str("│ new content:\n");
        for line in content.lines() {
            card.push_str(&format!("│   {}\n", terminal_safe(line)));
        }
    }
    if let (Some(by), Some(at)) = (view.resolved_by, view.resolved_at) {
        card.push_str(&format!("│ resolved:   by {} at {at}\n", by.as_str()));
    }
    card.push_str("└───────────────────────────────────────────────");
    card
}

/// A target as the model wrote it, on one line, followed by `→ resolves to PATH` when
/// the workspace path it designates reads differently.
pub(crate) fn target_text(target: &str, resolved: Option<&str>) -> String {
    match resolved {
        Some(resolved) if resolved != target => {
            format!("{} → resolves to {}", one_line(target), one_line(resolved))
        }
        _ => one_line(target).into_owned(),
    }
}

/// Splits a unified diff's `--- a/PATH` / `+++ b/PATH` headers (rendered on one line
/// each, however many newlines PATH holds) from its body.
fn split_diff_headers(diff: &str) -> (Vec<String>, &str) {
    let Some(rest) = diff.strip_prefix("--- a/") else {
        return (Vec::new(), diff);
    };
    // PATH is the same in both headers: find the `+++ b/` line that repeats it.
    for (at, _) in rest.match_indices("\n+++ b/") {
        let path = &rest[..at];
        let after = &rest[at + "\n+++ b/".len()..];
        let Some(body) = after.strip_prefix(path) else {
            continue;
        };
        if body.is_empty() || body.starts_with('\n') {
            let headers = vec![
                format!("--- a/{}", one_line(path)),
                format!("+++ b/{}", one_line(path)),
            ];
            return (headers, body.strip_prefix('\n').unwrap_or(body));
        }
    }
    (Vec::new(), diff)
}

/// `text` on one line, cut to `limit` characters with `…`.
pub(crate) fn shorten(text: &str, limit: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c == '\n' { ' ' } else { c })
        .collect();
    if flat.chars().count() <= limit {
        flat
    } else {
        let cut: String = flat.chars().take(limit).collect();
        format!("{cut}…")
    }
}

#[cfg(test)]
mod tests {
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
            created_at: pp_types::Timestamp::from_millis(0),
            resolved_at: None,
            resolved_by: None,
            reason: None,
            edited_arguments: None,
        }
    }

    #[test]
    fn a_forged_path_stays_on_the_action_line_and_the_resolved_path_is_shown() {
        let card = approval_card(&view(None, Some("new\n".to_owned())));
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
        let card = approval_card(&view(Some(diff), None));
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
                "│   -old".to_owned(),
                "│   +new".to_owned(),
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
        let line = live_line(&event).unwrap();
        assert_eq!(
            one_line(&line),
            "[step 1] ⏸ write\\nfake line needs your approval"
        );
    }
}
