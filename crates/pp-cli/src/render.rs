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
    /// For a terminal this many columns wide: unchanged context folded to [`CONTEXT`]
    /// lines around each change (a changed line is never folded), every line cut to the
    /// width with its suffix (a size) kept, long argument values folded.
    Window(usize),
    /// Everything, and the arguments JSON even for file tools (the pager, `approvals
    /// show`).
    Nothing,
}

/// Unchanged lines kept on each side of a change when context is folded.
pub(crate) const CONTEXT: usize = 2;

/// What a line of the card is, for folding and paging.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// On every page: the title, task, tool, risk, `now:`, target, the labels, the
    /// bottom edge.
    Pinned,
    /// What is decided on (a changed line, a new file's line, an argument, a command's
    /// argument): the decision keys wait until each has been on screen.
    Change,
    /// An unchanged line of a diff: folded away when it is far from every change.
    Context,
    /// Anything else (diff and hunk headers, folds, a deleted file's first lines):
    /// paged, but neither required nor folded.
    Other,
}

/// One row of the card (no newline in it) and what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CardLine {
    pub(crate) text: String,
    pub(crate) role: Role,
    /// Which line of the card this row belongs to: a line wrapped to fit the window
    /// takes several rows, all with the same `line` (the same at every width).
    pub(crate) line: usize,
    /// The last row of its line.
    pub(crate) last: bool,
    /// A changed line too long to show whole even wrapped: only the pager shows it.
    pub(crate) cut: bool,
}

impl CardLine {
    fn new(role: Role, text: String) -> Self {
        Self {
            text,
            role,
            line: 0,
            last: true,
            cut: false,
        }
    }
}

/// The card's lines as they are built.
#[derive(Default)]
struct Lines(Vec<CardLine>);

impl Lines {
    fn push(&mut self, role: Role, text: impl Into<String>) {
        self.0.push(CardLine::new(role, text.into()));
    }

    /// Each line of `block` (lines ended by `\n`), pinned.
    fn pin(&mut self, block: &str) {
        for line in block.lines() {
            self.push(Role::Pinned, line);
        }
    }
}

/// The card's `now:` line: what deciding would do as the target is now — apply the call
/// as shown (`ready`), or fail, change nothing, apply to a target that changed, or
/// cannot be checked here.
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
    Some(format!("│ now:        {text}"))
}

/// The card's `may have run:` lines when it asks again a call a crash cut after it
/// started: the notice, then each target before that call and now, with the diff.
fn may_have_run_lines(card: &mut Lines, view: &ApprovalView, palette: Palette) {
    let Some(notice) = &view.may_have_run else {
        return;
    };
    card.push(
        Role::Pinned,
        format!(
            "│ may have run: {}",
            palette.paint(Paint::Red, &one_line(&notice.message))
        ),
    );
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
        card.push(
            Role::Other,
            format!(
                "│   `{}`: before the call {}{}, now {}{}: {changed} the call started",
                one_line(&target.path),
                target.before.as_str(),
                size(target.before_size),
                target.now.as_str(),
                size(target.now_size),
            ),
        );
        if let Some(diff) = &target.diff {
            push_body(card, diff_lines(diff, palette));
        }
    }
}

/// The approval card: tool, capability, risk, the target with its create / overwrite /
/// edit label, a numbered diff (or the new file's content), and the arguments JSON for
/// tools without a preview.
///
/// Every name on the card (tool, capability, target, diff headers) is printed with
/// [`one_line`], so a model-written path cannot add lines that look like the card's own;
/// when the target resolves to a different workspace path, that path is shown too.
pub(crate) fn approval_card(view: &ApprovalView, palette: Palette, fold: Fold) -> String {
    card_lines(view, palette, fold)
        .into_iter()
        .map(|line| line.text)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The card as lines with their roles (see [`approval_card`]), folded and cut as `fold`
/// says; the pages of [`crate::card`] are made of these.
pub(crate) fn card_lines(view: &ApprovalView, palette: Palette, fold: Fold) -> Vec<CardLine> {
    let mut card = Lines::default();
    let risk = match view.risk {
        Risk::High => palette.paint(Paint::Red, "HIGH RISK"),
        Risk::Medium => palette.paint(Paint::Yellow, "medium risk"),
        Risk::Low => "low risk".to_owned(),
    };
    card.push(
        Role::Pinned,
        format!(
            "┌─ approval {} ({}) ─────────────────",
            one_line(&view.id),
            view.state.as_str()
        ),
    );
    // The prompt on one line; cut to the window's columns below (Fold::Window).
    let prompt = match fold {
        Fold::Window(_) => one_line(&view.prompt).into_owned(),
        Fold::Nothing => one_line(&shorten(&view.prompt, 70)).into_owned(),
    };
    card.push(Role::Pinned, format!("│ task:       {prompt}"));
    card.pin(&effects::provenance_lines(view, palette));
    card.push(
        Role::Pinned,
        format!(
            "│ tool:       {} ({})",
            palette.paint(Paint::Bold, &one_line(&view.tool)),
            one_line(&view.capability)
        ),
    );
    card.push(Role::Pinned, format!("│ risk:       {risk}"));
    if let Some(line) = precheck_line(view, palette) {
        card.push(Role::Pinned, line);
    }
    may_have_run_lines(&mut card, view, palette);
    if let Some(edited) = &view.edited {
        let by = edited.by.as_deref().map(one_line).unwrap_or_default();
        let ran = edited
            .preview
            .as_ref()
            .map(|preview| format!("; ran on `{}`", one_line(&preview.target)))
            .unwrap_or_default();
        card.push(
            Role::Pinned,
            format!(
                "│ edited:     {}",
                palette.paint(Paint::Yellow, &format!("by {by} before approving{ran}"))
            ),
        );
    }
    if let Some(mcp) = &view.mcp {
        card.pin(&effects::mcp_lines(mcp, palette));
    }
    if let Some(command) = view.command.as_ref().filter(|command| !command.confined) {
        card.pin(&effects::unconfined_banner(command, palette));
    }
    if let Some(target) = &view.target {
        card.pin(&effects::action_lines(view, target, palette));
    }
    if let Some(command) = &view.command {
        // The arguments and the script's lines (indented) are what is decided on.
        for line in effects::command_lines(command, palette).lines() {
            let role = if line.starts_with("│   ") {
                Role::Change
            } else {
                Role::Pinned
            };
            card.push(role, line);
        }
    }
    if let Some(notice) = &view.notice {
        card.push(
            Role::Pinned,
            format!(
                "│ notice:     {}",
                palette.paint(Paint::Yellow, &one_line(notice))
            ),
        );
    }
    if let Some(undo) = effects::undo_text(view) {
        card.push(
            Role::Pinned,
            format!("│ undo:       {}", palette.paint(Paint::Yellow, undo)),
        );
    }
    // A file tool is one whose call came with a preview: its change says everything
    // the arguments do. Other tools (MCP tools among them) show their arguments.
    let previewed = view.mcp.is_none()
        && (view.diff.is_some() || view.content.is_some() || view.label.is_some());
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
        let body = diff_lines(diff, palette);
        if body.is_empty() {
            // Identical content: an empty diff, said in words rather than a bare label.
            card.push(
                Role::Pinned,
                format!(
                    "│ change:     {}",
                    palette.paint(
                        Paint::Yellow,
                        "none: the file already has exactly this content"
                    )
                ),
            );
        } else {
            card.push(
                Role::Pinned,
                format!("│ change:     {}", change_counts(diff).describe()),
            );
        }
        push_body(&mut card, body);
    } else if let Some(content) = &view.content {
        let lines = content.lines().count();
        let plural = if lines == 1 { "" } else { "s" };
        // A new file's lines are what is written; a deleted file's first lines only
        // say which file it is.
        let role = if view.label == Some(WriteLabel::Delete) {
            card.push(
                Role::Pinned,
                format!("│ first lines of the file ({lines} line{plural} shown):"),
            );
            Role::Other
        } else {
            card.push(
                Role::Pinned,
                format!(
                    "│ new content ({lines} line{plural}, {} bytes):",
                    content.len()
                ),
            );
            Role::Change
        };
        let body = content
            .lines()
            .enumerate()
            .map(|(index, line)| {
                CardLine::new(
                    role,
                    format!(
                        "{} {}",
                        palette.paint(Paint::Dim, &format!("{:>4}", index + 1)),
                        terminal_safe(line)
                    ),
                )
            })
            .collect();
        push_body(&mut card, body);
    }
    if !previewed || fold == Fold::Nothing {
        let arguments = match fold {
            Fold::Nothing => view.arguments.clone(),
            Fold::Window(_) => crate::results::folded_json(&view.arguments),
        };
        let arguments =
            serde_json::to_string_pretty(&arguments).unwrap_or_else(|_| arguments.to_string());
        card.push(Role::Pinned, "│ arguments:");
        for line in arguments.lines() {
            card.push(Role::Change, format!("│   {}", terminal_safe(line)));
        }
    }
    if let (Some(by), Some(at)) = (view.resolved_by, view.resolved_at) {
        let user = view
            .resolved_by_user
            .as_deref()
            .map(|user| format!(" {}", terminal_safe(user)))
            .unwrap_or_default();
        card.push(
            Role::Pinned,
            format!("│ resolved:   by {}{user} at {at}", by.as_str()),
        );
    }
    card.push(
        Role::Pinned,
        "└───────────────────────────────────────────────",
    );
    match fold {
        Fold::Nothing => card
            .0
            .into_iter()
            .enumerate()
            .map(|(at, line)| CardLine { line: at, ..line })
            .collect(),
        Fold::Window(columns) => fit_window(fold_context(&card.0, palette), columns.max(20)),
    }
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

/// Appends the change's lines to the card, indented under its label.
fn push_body(card: &mut Lines, body: Vec<CardLine>) {
    for line in body {
        card.push(line.role, format!("│   {}", line.text));
    }
}

/// A unified diff as card lines: headers on one line each, then every line numbered
/// with its old and new line number and coloured by kind.
fn diff_lines(diff: &str, palette: Palette) -> Vec<CardLine> {
    let (headers, body) = split_diff_headers(diff);
    let line = CardLine::new;
    let mut lines: Vec<CardLine> = headers
        .iter()
        .map(|header| line(Role::Other, palette.paint(Paint::Bold, header)))
        .collect();
    let (mut old, mut new) = (0_usize, 0_usize);
    let number = |n: Option<usize>| match n {
        Some(n) => palette.paint(Paint::Dim, &format!("{n:>4}")),
        None => "    ".to_owned(),
    };
    for text in body.lines() {
        let safe = terminal_safe(text);
        if let Some((old_start, new_start)) = hunk_starts(text) {
            old = old_start;
            new = new_start;
            lines.push(line(Role::Other, palette.paint(Paint::Cyan, &safe)));
        } else if let Some(text) = text.strip_prefix('-') {
            lines.push(line(
                Role::Change,
                format!(
                    "{} {} {}",
                    number(Some(old)),
                    number(None),
                    palette.paint(Paint::Red, &format!("-{}", terminal_safe(text)))
                ),
            ));
            old += 1;
        } else if let Some(text) = text.strip_prefix('+') {
            lines.push(line(
                Role::Change,
                format!(
                    "{} {} {}",
                    number(None),
                    number(Some(new)),
                    palette.paint(Paint::Green, &format!("+{}", terminal_safe(text)))
                ),
            ));
            new += 1;
        } else if let Some(text) = text.strip_prefix(' ') {
            lines.push(line(
                Role::Context,
                format!(
                    "{} {}  {}",
                    number(Some(old)),
                    number(Some(new)),
                    terminal_safe(text)
                ),
            ));
            old += 1;
            new += 1;
        } else {
            lines.push(line(Role::Other, palette.paint(Paint::Dim, &safe)));
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

#[path = "render_fit.rs"]
mod fit;
use fit::{change_counts, fit_window, fold_context};

#[cfg(test)]
#[path = "render_tests.rs"]
mod tests;
