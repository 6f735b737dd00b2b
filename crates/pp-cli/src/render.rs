//! Terminal rendering: the live view of a run and the approval card.

use std::io::Write as _;

use pp_agent::EventSink;
use pp_types::{Checkpoint, Event, EventKind, ResolutionKind, Risk};

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
        EventKind::TaskFailed { reason, message } => {
            format!("[step {step}] failed ({}): {message}", reason.as_str())
        }
    })
}

/// The approval card: tool, capability, risk, label, arguments and the change.
pub(crate) fn approval_card(checkpoint: &Checkpoint) -> String {
    let pending = &checkpoint.pending;
    let mut card = String::new();
    let risk = match pending.risk {
        Risk::High => "HIGH RISK",
        Risk::Medium => "medium risk",
        Risk::Low => "low risk",
    };
    card.push_str("┌─ approval needed ─────────────────────────────\n");
    card.push_str(&format!(
        "│ tool:       {} ({})\n│ risk:       {risk}\n",
        pending.call.name, pending.capability
    ));
    if let Some(preview) = &pending.preview {
        card.push_str(&format!(
            "│ action:     {} {}\n",
            preview.label.as_str(),
            preview.target
        ));
    }
    let arguments = serde_json::to_string_pretty(&pending.arguments)
        .unwrap_or_else(|_| pending.arguments.to_string());
    card.push_str("│ arguments:\n");
    for line in arguments.lines() {
        card.push_str(&format!("│   {line}\n"));
    }
    if let Some(preview) = &pending.preview {
        if let Some(diff) = &preview.diff {
            card.push_str("│ change:\n");
            for line in diff.lines() {
                card.push_str(&format!("│   {line}\n"));
            }
        } else if let Some(content) = &preview.content {
            card.push_str("│ new content:\n");
            for line in content.lines() {
                card.push_str(&format!("│   {line}\n"));
            }
        }
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
