//! Terminal rendering: the live view of a run and the approval card.

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
            let _ = writeln!(stderr, "{}", terminal_safe(&line));
        }
    }
}

/// Makes model- or file-controlled text safe to print on a terminal: every control
/// character except newline and tab, DEL, the C1 controls and the bidirectional
/// overrides are shown as visible escapes (`\x1b`, `\u{202e}`), so text cannot move the
/// cursor, clear the screen, rewrite an approval card or reorder what a person reads.
pub(crate) fn terminal_safe(text: &str) -> std::borrow::Cow<'_, str> {
    escape_unsafe(text, |c| {
        if u32::from(c) < 0x100 {
            format!("\\x{:02x}", u32::from(c))
        } else {
            format!("\\u{{{:04x}}}", u32::from(c))
        }
    })
}

/// Like [`terminal_safe`] for JSON text printed on a terminal: the characters serde
/// leaves raw (DEL, C1 controls, bidi overrides) become `\uXXXX` escapes, so the output
/// stays valid JSON with the same meaning.
pub(crate) fn json_safe(json: &str) -> std::borrow::Cow<'_, str> {
    escape_unsafe(json, |c| format!("\\u{:04x}", u32::from(c)))
}

fn escape_unsafe(text: &str, escape: impl Fn(char) -> String) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(
                c,
                '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}'
            )
    };
    if !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut safe = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if unsafe_char(c) {
            safe.push_str(&escape(c));
        } else {
            safe.push(c);
        }
    }
    std::borrow::Cow::Owned(safe)
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
pub(crate) fn approval_card(view: &ApprovalView) -> String {
    let mut card = String::new();
    let risk = match view.risk {
        Risk::High => "HIGH RISK",
        Risk::Medium => "medium risk",
        Risk::Low => "low risk",
    };
    card.push_str(&format!(
        "┌─ approval {} ({}) ─────────────────\n",
        view.id,
        view.state.as_str()
    ));
    card.push_str(&format!("│ task:       {}\n", shorten(&view.prompt, 70)));
    card.push_str(&format!(
        "│ tool:       {} ({})\n│ risk:       {risk}\n",
        view.tool, view.capability
    ));
    if let (Some(label), Some(target)) = (view.label, &view.target) {
        card.push_str(&format!("│ action:     {} {target}\n", label.as_str()));
    }
    let arguments = serde_json::to_string_pretty(&view.arguments)
        .unwrap_or_else(|_| view.arguments.to_string());
    card.push_str("│ arguments:\n");
    for line in arguments.lines() {
        card.push_str(&format!("│   {line}\n"));
    }
    if let Some(diff) = &view.diff {
        card.push_str("│ change:\n");
        for line in diff.lines() {
            card.push_str(&format!("│   {line}\n"));
        }
    } else if let Some(content) = &view.content {
        card.push_str("│ new content:\n");
        for line in content.lines() {
            card.push_str(&format!("│   {line}\n"));
        }
    }
    if let (Some(by), Some(at)) = (view.resolved_by, view.resolved_at) {
        card.push_str(&format!("│ resolved:   by {} at {at}\n", by.as_str()));
    }
    card.push_str("└───────────────────────────────────────────────");
    terminal_safe(&card).into_owned()
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
        assert_eq!(terminal_safe("cr\rover"), "cr\\x0dover");
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
}
