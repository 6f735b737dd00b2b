//! Terminal rendering: the live view of a run and the approval card.

use pp_tasks::{ApprovalView, PrecheckStatus};
use pp_types::{Event, EventKind, ResolutionKind, Risk, WriteLabel};

pub(crate) use crate::escape::{json_safe, one_line, shorten, terminal_safe};
use crate::style::{Paint, Palette};

/// Indent of the lines under a step's line.
const INDENT: &str = "         ";

/// The live-view lines for an event (none for some), already escaped: one line per
/// step event, and under a tool call its result (a listing as a table, text folded), its
/// error or its denial with the rule that fired, each on a line of its own.
pub(crate) fn live_lines(event: &Event, palette: Palette, columns: usize) -> Vec<String> {
    let step = event.step + 1;
    let room = columns.saturating_sub(INDENT.len());
    let line = match &event.kind {
        EventKind::TaskStarted { .. } | EventKind::ModelRequest { .. } => return Vec::new(),
        EventKind::ContextTrimmed {
            dropped_messages,
            window,
            ..
        } => format!(
            "[step {step}] left {dropped_messages} older message(s) out to fit the {window}-token window"
        ),
        EventKind::AssistantMessage { content, .. } => {
            let Some(text) = content.as_deref().map(str::trim).filter(|t| !t.is_empty()) else {
                return Vec::new();
            };
            let mut lines = vec![format!("[step {step}] model:")];
            lines.extend(
                crate::results::folded_text(text, palette, room, crate::results::SHOWN_LINES)
                    .into_iter()
                    .map(|line| format!("{INDENT}{line}")),
            );
            return lines;
        }
        EventKind::ToolCall {
            name, arguments, ..
        } => {
            let arguments = crate::results::folded_arguments(arguments);
            let used = crate::style::width(&format!("[step {step}] → {} ", one_line(name)));
            let (arguments, cut) =
                crate::style::cut_to_width(&arguments, columns.saturating_sub(used + 1).max(20));
            format!(
                "[step {step}] → {} {}{}",
                palette.paint(Paint::Bold, &one_line(name)),
                one_line(arguments),
                if cut { "…" } else { "" }
            )
        }
        EventKind::ToolResult { content, .. } => {
            return crate::results::tool_output(content, palette, room)
                .into_iter()
                .map(|line| format!("{INDENT}{line}"))
                .collect();
        }
        EventKind::ToolError { message, .. } => format!(
            "{INDENT}{} {}",
            palette.paint(Paint::Red, "✗ error:"),
            one_line(message)
        ),
        EventKind::ToolDenied {
            message,
            rule,
            denials,
            ..
        } => format!(
            "{INDENT}{} {}",
            palette.paint(
                Paint::Red,
                &format!("⛔ denied by rule {} (denial {denials}):", rule.as_str())
            ),
            one_line(message)
        ),
        EventKind::ApprovalRequired { name, .. } => format!(
            "[step {step}] ⏸ {} needs your approval",
            palette.paint(Paint::Bold, &one_line(name))
        ),
        EventKind::ApprovalResolved {
            decision, edited, ..
        } => {
            let decision = match decision {
                ResolutionKind::Approved if *edited => {
                    palette.paint(Paint::Green, "approved (edited arguments)")
                }
                ResolutionKind::Approved => palette.paint(Paint::Green, "approved"),
                ResolutionKind::Rejected => palette.paint(Paint::Red, "rejected"),
                ResolutionKind::Stale => palette.paint(
                    Paint::Yellow,
                    "not run: the target changed since it was shown",
                ),
            };
            format!("{INDENT}decision: {decision}")
        }
        EventKind::ApprovalEditRejected { message, .. } => {
            format!("{INDENT}edit refused: {}", one_line(message))
        }
        EventKind::TaskCompleted { .. } => {
            format!("[step {step}] {}", palette.paint(Paint::Green, "completed"))
        }
        EventKind::TaskCancelled { message } => {
            format!("[step {step}] cancelled: {}", one_line(message))
        }
        EventKind::TaskInterrupted { message } => {
            format!("[step {step}] interrupted: {}", one_line(message))
        }
        EventKind::TaskRetried { message } => {
            format!("[step {step}] retried: {}", one_line(message))
        }
        EventKind::SessionSummarised {
            through_turn,
            turns,
            tokens_before,
            tokens_after,
            ..
        } => format!(
            "[step {step}] summarised {turns} earlier turn(s) (the summary now covers turns \
             1-{through_turn}): ~{tokens_before} -> ~{tokens_after} tokens"
        ),
        EventKind::TaskFailed { reason, message } => format!(
            "[step {step}] {} {}",
            palette.paint(Paint::Red, &format!("failed ({}):", reason.as_str())),
            one_line(message)
        ),
    };
    vec![line]
}

/// How much of a change the card shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fold {
    /// The first this many lines of the change, then `… N more lines (d shows all)`;
    /// lines are cut to the terminal's width.
    Lines(usize, usize),
    /// Everything, and the arguments JSON even for file tools (the pager, `approvals
    /// show`).
    Nothing,
}

/// Lines of a change the card shows before the fold.
pub(crate) const CARD_LINES: usize = 20;

/// The approval card: tool, capability, risk, the target with its create / overwrite /
/// edit label, a numbered diff (or the new file's content), and the arguments JSON for
/// tools without a preview.
///
/// Every name on the card (tool, capability, target, diff headers) is printed with
/// [`one_line`], so a model-written path cannot add lines that look like the card's own;
/// when the target resolves to a different workspace path, that path is shown too.
/// The card's `now:` line: what deciding would do as the target is now — apply the call as
/// shown (`ready`), or
/// fail, change nothing, apply to a target that changed, or cannot be checked here.
fn precheck_line(view: &ApprovalView, palette: Palette) -> Option<String> {
    let precheck = view.precheck.as_ref()?;
    let why = precheck
        .message
        .as_deref()
        .map(one_line)
        .unwrap_or_default();
    let text = match precheck.status {
        PrecheckStatus::Ready => "ready: deciding applies the call as shown".to_owned(),
        PrecheckStatus::WillFail => palette.paint(Paint::Red, &format!("WILL FAIL: {why}")),
        PrecheckStatus::NoChange => {
            palette.paint(Paint::Yellow, &format!("changes nothing: {why}"))
        }
        PrecheckStatus::Changed => palette.paint(
            Paint::Yellow,
            "changed since the request; the change below is against it as it is now",
        ),
        PrecheckStatus::Unavailable => format!("cannot be checked here: {why}"),
    };
    Some(format!("│ now:        {text}\n"))
}

/// The card's `may have run:` lines when it asks again a call a crash cut after it
/// started: the notice, then each target before that call and now, with the diff.
fn may_have_run_lines(card: &mut String, view: &ApprovalView, palette: Palette, fold: Fold) {
    let Some(notice) = &view.may_have_run else {
        return;
    };
    card.push_str(&format!(
        "│ may have run: {}\n",
        palette.paint(Paint::Red, &one_line(&notice.message))
    ));
    let size = |size: Option<u64>| {
        size.map(|bytes| format!(" ({})", pp_tasks::format_size(bytes)))
            .unwrap_or_default()
    };
    for target in &notice.targets {
        let changed = match target.changed {
            Some(true) => "changed since",
            Some(false) => "unchanged since",
            None => "cannot tell whether it changed since",
        };
        card.push_str(&format!(
            "│   `{}`: before the call {}{}, now {}{}: {changed} the call started\n",
            one_line(&target.path),
            target.before.as_str(),
            size(target.before_size),
            target.now.as_str(),
            size(target.now_size),
        ));
        if let Some(diff) = &target.diff {
            push_folded(card, &diff_lines(diff, palette), palette, fold);
        }
    }
}

pub(crate) fn approval_card(view: &ApprovalView, palette: Palette, fold: Fold) -> String {
    let mut card = String::new();
    let risk = match view.risk {
        Risk::High => palette.paint(Paint::Red, "HIGH RISK"),
        Risk::Medium => palette.paint(Paint::Yellow, "medium risk"),
        Risk::Low => "low risk".to_owned(),
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
    card.push_str(&effects::provenance_lines(view, palette));
    card.push_str(&format!(
        "│ tool:       {} ({})\n│ risk:       {risk}\n",
        palette.paint(Paint::Bold, &one_line(&view.tool)),
        one_line(&view.capability)
    ));
    if let Some(line) = precheck_line(view, palette) {
        card.push_str(&line);
    }
    may_have_run_lines(&mut card, view, palette, fold);
    if let Some(edited) = &view.edited {
        let by = edited.by.as_deref().map(one_line).unwrap_or_default();
        let ran = edited
            .preview
            .as_ref()
            .map(|preview| format!("; ran on `{}`", one_line(&preview.target)))
            .unwrap_or_default();
        card.push_str(&format!(
            "│ edited:     {}\n",
            palette.paint(Paint::Yellow, &format!("by {by} before approving{ran}"))
        ));
    }
    if let Some(mcp) = &view.mcp {
        card.push_str(&effects::mcp_lines(mcp, palette));
    }
    if let Some(command) = view.command.as_ref().filter(|command| !command.confined) {
        card.push_str(&effects::unconfined_banner(command, palette));
    }
    if let Some(target) = &view.target {
        card.push_str(&effects::action_lines(view, target, palette));
    }
    if let Some(command) = &view.command {
        card.push_str(&effects::command_lines(command, palette));
    }
    if let Some(notice) = &view.notice {
        card.push_str(&format!(
            "│ notice:     {}\n",
            palette.paint(Paint::Yellow, &one_line(notice))
        ));
    }
    if let Some(undo) = effects::undo_text(view) {
        card.push_str(&format!(
            "│ undo:       {}\n",
            palette.paint(Paint::Yellow, undo)
        ));
    }
    // A file tool is one whose call came with a preview: its change says everything
    // the arguments do. Other tools (MCP tools among them) show their arguments.
    let previewed = view.mcp.is_none()
        && (view.diff.is_some() || view.content.is_some() || view.label.is_some());
    let mut body = Vec::new();
    // A target that changed since the request: the change against it as it is now.
    let now_diff = view
        .precheck
        .as_ref()
        .filter(|precheck| precheck.status == PrecheckStatus::Changed)
        .and_then(|precheck| precheck.diff.as_ref());
    // An edited call that ran: its own change, not the one the model asked for.
    let edited_diff = view
        .edited
        .as_ref()
        .and_then(|edited| edited.preview.as_ref())
        .and_then(|preview| preview.diff.as_ref());
    if let Some(diff) = edited_diff.or(now_diff).or(view.diff.as_ref()) {
        body = diff_lines(diff, palette);
        if body.is_empty() {
            // Identical content: an empty diff, said in words rather than a bare label.
            card.push_str(&format!(
                "│ change:     {}\n",
                palette.paint(
                    Paint::Yellow,
                    "none: the file already has exactly this content"
                )
            ));
        } else {
            card.push_str("│ change:\n");
        }
    } else if let Some(content) = &view.content {
        let lines = content.lines().count();
        let plural = if lines == 1 { "" } else { "s" };
        if view.label == Some(WriteLabel::Delete) {
            card.push_str(&format!(
                "│ first lines of the file ({lines} line{plural} shown):\n"
            ));
        } else {
            card.push_str(&format!(
                "│ new content ({lines} line{plural}, {} bytes):\n",
                content.len()
            ));
        }
        body = content
            .lines()
            .enumerate()
            .map(|(index, line)| {
                format!(
                    "{} {}",
                    palette.paint(Paint::Dim, &format!("{:>4}", index + 1)),
                    terminal_safe(line)
                )
            })
            .collect();
    }
    push_folded(&mut card, &body, palette, fold);
    if !previewed || fold == Fold::Nothing {
        let arguments = match fold {
            Fold::Nothing => view.arguments.clone(),
            Fold::Lines(..) => crate::results::folded_json(&view.arguments),
        };
        let arguments =
            serde_json::to_string_pretty(&arguments).unwrap_or_else(|_| arguments.to_string());
        card.push_str("│ arguments:\n");
        for line in arguments.lines() {
            card.push_str(&format!("│   {}\n", terminal_safe(line)));
        }
    }
    if let (Some(by), Some(at)) = (view.resolved_by, view.resolved_at) {
        let user = view
            .resolved_by_user
            .as_deref()
            .map(|user| format!(" {}", terminal_safe(user)))
            .unwrap_or_default();
        card.push_str(&format!("│ resolved:   by {}{user} at {at}\n", by.as_str()));
    }
    card.push_str("└───────────────────────────────────────────────");
    card
}

/// The target of an approval on one list row (`approvals list`): the path as written
/// (`→ resolves to` when it differs), `→ DESTINATION` for a move, and `(NOT confined)`
/// for a command that runs without its sandbox.
pub(crate) fn approval_row_target(view: &ApprovalView) -> String {
    let mut text = view.target.as_deref().map_or_else(String::new, |target| {
        target_text(target, view.resolved.as_deref())
    });
    if let Some(destination) = &view.destination {
        text.push_str(&format!(" → {}", one_line(destination)));
    }
    if view
        .command
        .as_ref()
        .is_some_and(|command| !command.confined)
    {
        text.push_str(" (NOT confined)");
    }
    text
}

/// Appends the change's lines to the card, folded as asked.
fn push_folded(card: &mut String, body: &[String], palette: Palette, fold: Fold) {
    let (shown, columns) = match fold {
        Fold::Lines(lines, columns) => (lines, Some(columns)),
        Fold::Nothing => (body.len(), None),
    };
    for line in body.iter().take(shown) {
        match columns {
            Some(columns) => {
                let room = columns.saturating_sub(5).max(20);
                let (cut, was_cut) = crate::style::cut_to_width(line, room);
                let end = if was_cut && line.contains('\x1b') {
                    "\x1b[0m…"
                } else if was_cut {
                    "…"
                } else {
                    ""
                };
                card.push_str(&format!("│   {cut}{end}\n"));
            }
            None => card.push_str(&format!("│   {line}\n")),
        }
    }
    if body.len() > shown {
        let more = body.len() - shown;
        card.push_str(&format!(
            "│   {}\n",
            palette.paint(
                Paint::Dim,
                &format!(
                    "… {more} more line{} (press d to see everything)",
                    if more == 1 { "" } else { "s" }
                )
            )
        ));
    }
}

/// A unified diff as card lines: headers on one line each, then every line numbered
/// with its old and new line number and coloured by kind.
fn diff_lines(diff: &str, palette: Palette) -> Vec<String> {
    let (headers, body) = split_diff_headers(diff);
    let mut lines: Vec<String> = headers
        .iter()
        .map(|header| palette.paint(Paint::Bold, header))
        .collect();
    let (mut old, mut new) = (0_usize, 0_usize);
    let number = |n: Option<usize>| match n {
        Some(n) => palette.paint(Paint::Dim, &format!("{n:>4}")),
        None => "    ".to_owned(),
    };
    for line in body.lines() {
        let safe = terminal_safe(line);
        if let Some((old_start, new_start)) = hunk_starts(line) {
            old = old_start;
            new = new_start;
            lines.push(palette.paint(Paint::Cyan, &safe));
        } else if let Some(text) = line.strip_prefix('-') {
            lines.push(format!(
                "{} {} {}",
                number(Some(old)),
                number(None),
                palette.paint(Paint::Red, &format!("-{}", terminal_safe(text)))
            ));
            old += 1;
        } else if let Some(text) = line.strip_prefix('+') {
            lines.push(format!(
                "{} {} {}",
                number(None),
                number(Some(new)),
                palette.paint(Paint::Green, &format!("+{}", terminal_safe(text)))
            ));
            new += 1;
        } else if let Some(text) = line.strip_prefix(' ') {
            lines.push(format!(
                "{} {}  {}",
                number(Some(old)),
                number(Some(new)),
                terminal_safe(text)
            ));
            old += 1;
            new += 1;
        } else {
            lines.push(palette.paint(Paint::Dim, &safe));
        }
    }
    lines
}

/// The old and new start lines of a hunk header `@@ -a,b +c,d @@`.
fn hunk_starts(line: &str) -> Option<(usize, usize)> {
    let rest = line.strip_prefix("@@ -")?;
    let (old, rest) = rest.split_once(" +")?;
    let (new, _) = rest.split_once(" @@")?;
    let start = |range: &str| range.split(',').next()?.parse::<usize>().ok();
    Some((start(old)?, start(new)?))
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

#[path = "render_effects.rs"]
mod effects;

#[cfg(test)]
#[path = "render_tests.rs"]
mod tests;
