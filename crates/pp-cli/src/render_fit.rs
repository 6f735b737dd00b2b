//! The approval card fitted to a window: unchanged context folded around the changes
//! (never a changed line), each line cut or wrapped to the window's columns, and the
//! change's counts (`+A −R in N hunks`).

use super::{CONTEXT, CardLine, Role, hunk_starts, split_diff_headers};
use crate::style::{Paint, Palette};

/// Rows a pinned line (a warning, a target, the limits) may take before it is cut.
const PINNED_ROWS: usize = 3;

/// Rows a changed line may take before it is cut (and then shown whole only by the
/// pager).
const CHANGE_ROWS: usize = 8;

/// Where the rows after the first of a wrapped changed line start: under the text of a
/// numbered diff line.
const CHANGE_INDENT: &str = "│              ";

/// The card's rows for a window `columns` wide: the title and the task cut to one row,
/// other pinned lines wrapped under their label (up to [`PINNED_ROWS`]), changed lines
/// wrapped exactly as they are (up to [`CHANGE_ROWS`]), other lines cut with their
/// suffix (a size) kept.
pub(super) fn fit_window(lines: Vec<CardLine>, columns: usize) -> Vec<CardLine> {
    let mut fitted = Vec::with_capacity(lines.len());
    for (at, line) in lines.into_iter().enumerate() {
        let (rows, complete) = if at < 2 {
            (vec![fit_line(&line.text, columns)], true)
        } else if line.role == Role::Pinned {
            let indent = if is_labelled(&line.text) {
                "│             "
            } else {
                "│   "
            };
            crate::style::wrap(&line.text, columns, indent, PINNED_ROWS, true)
        } else if line.role == Role::Change && !is_folded_value(&line.text) {
            crate::style::wrap(&line.text, columns, CHANGE_INDENT, CHANGE_ROWS, false)
        } else {
            (vec![fit_line(&line.text, columns)], true)
        };
        let count = rows.len();
        for (index, text) in rows.into_iter().enumerate() {
            let last = index + 1 == count;
            fitted.push(CardLine {
                text,
                role: line.role,
                line: at,
                last,
                cut: last && !complete,
            });
        }
    }
    fitted
}

/// Whether a line ends with a value folded to its size (`… (3004 bytes)",`).
fn is_folded_value(text: &str) -> bool {
    text.rfind("… (")
        .is_some_and(|at| text[at..].contains(" bytes)"))
}

/// Whether a card line starts with a label padded to the value column (`│ undo:       `).
fn is_labelled(text: &str) -> bool {
    let head: String = text.chars().take(14).collect();
    head.chars().count() == 14
        && head.ends_with(' ')
        && head.trim_end().ends_with(':')
        && !head.contains('\x1b')
}

/// A card line cut to `columns`; a folded value's size (`… (3004 bytes)",`) stays on
/// the line.
fn fit_line(text: &str, columns: usize) -> String {
    match text.rfind("… (") {
        Some(at) if is_folded_value(text) => {
            crate::style::fit_keeping(&text[..at], &text[at..], columns)
        }
        _ => crate::style::fit(text, columns),
    }
}

/// Replaces each run of unchanged lines far from every change with one `… N unchanged
/// lines`: [`CONTEXT`] lines stay on each side of a change. Changed lines are never
/// folded.
pub(super) fn fold_context(lines: &[CardLine], palette: Palette) -> Vec<CardLine> {
    let mut folded = Vec::with_capacity(lines.len());
    let mut at = 0;
    while at < lines.len() {
        if lines[at].role != Role::Context {
            folded.push(lines[at].clone());
            at += 1;
            continue;
        }
        let start = at;
        while lines.get(at).is_some_and(|line| line.role == Role::Context) {
            at += 1;
        }
        let after_change = start > 0 && lines[start - 1].role == Role::Change;
        let before_change = lines.get(at).is_some_and(|line| line.role == Role::Change);
        let head = if after_change { CONTEXT } else { 0 };
        let tail = if before_change { CONTEXT } else { 0 };
        let run = at - start;
        // A fold that hides a single line saves nothing.
        if run <= head + tail + 1 {
            folded.extend_from_slice(&lines[start..at]);
            continue;
        }
        let hidden = run - head - tail;
        folded.extend_from_slice(&lines[start..start + head]);
        let text = format!(
            "│   {}",
            palette.paint(
                Paint::Dim,
                &format!(
                    "… {hidden} unchanged line{}",
                    if hidden == 1 { "" } else { "s" }
                )
            )
        );
        folded.push(CardLine::new(Role::Other, text));
        folded.extend_from_slice(&lines[at - tail..at]);
    }
    folded
}

/// Lines added and removed by a unified diff, and its hunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct ChangeCounts {
    pub(super) added: usize,
    pub(super) removed: usize,
    pub(super) hunks: usize,
}

impl ChangeCounts {
    /// `+A −R in N hunks`.
    pub(super) fn describe(self) -> String {
        format!(
            "+{} −{} in {} hunk{}",
            self.added,
            self.removed,
            self.hunks,
            if self.hunks == 1 { "" } else { "s" }
        )
    }
}

/// Counts the `+` and `-` lines and the `@@` hunks of `diff` (its headers not counted).
pub(super) fn change_counts(diff: &str) -> ChangeCounts {
    let (_, body) = split_diff_headers(diff);
    let mut counts = ChangeCounts::default();
    for line in body.lines() {
        if hunk_starts(line).is_some() {
            counts.hunks += 1;
        } else if line.starts_with('+') {
            counts.added += 1;
        } else if line.starts_with('-') {
            counts.removed += 1;
        }
    }
    counts
}
