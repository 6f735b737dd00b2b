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
            let _ = writeln!(stderr, "{line}");
        }
    }
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
    card
}

fn shorten(text: &str, limit: usize) -> String {
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
