//! The approval card on a terminal, one window at a time.
//!
//! A card that fits the window is shown whole. A longer one keeps its pinned lines
//! (title, task, tool, risk, `now:`, target, the labels) on every page and pages the
//! rest: space shows the next page, `d` everything in `$PAGER`. The card remembers
//! which lines of the change have been on screen; the decision keys wait until every
//! one has ([`Paged::unseen`]), so nobody approves a change they were not shown.

use pp_tasks::ApprovalView;

use crate::output::errln;
use crate::render::{CardLine, Fold, Role, card_lines};
use crate::style::{Paint, Palette};

/// Rows kept free under a page: the question, and the line a refused key prints.
const BELOW: usize = 2;

/// Body lines a page shows however small the window.
const MIN_PAGE: usize = 3;

/// A card shown page by page in a window of a given size.
pub(crate) struct Paged {
    view: ApprovalView,
    palette: Palette,
    /// The window's columns and rows the lines were made for.
    size: (usize, usize),
    lines: Vec<CardLine>,
    /// The paged lines (every line that is not pinned), as indices into `lines`.
    paged: Vec<usize>,
    /// Which of the paged lines have been on screen (pinned lines always are). Only
    /// pinned lines wrap, so the paged lines stay the same lines at every size.
    seen: Vec<bool>,
    /// Where the current page starts in `paged`.
    first: usize,
}

impl Paged {
    /// The card of `view` for a window of `size` (columns, rows), at its first page;
    /// nothing is shown yet.
    pub(crate) fn new(view: &ApprovalView, palette: Palette, size: (usize, usize)) -> Self {
        let lines = card_lines(view, palette, Fold::Window(size.0));
        let paged = (0..lines.len())
            .filter(|&at| lines[at].role != Role::Pinned)
            .collect::<Vec<_>>();
        let seen = vec![false; paged.len()];
        Self {
            view: view.clone(),
            palette,
            size,
            lines,
            paged,
            seen,
            first: 0,
        }
    }

    /// The size the card is laid out for.
    pub(crate) fn size(&self) -> (usize, usize) {
        self.size
    }

    /// Lays the card out again for a window of `size`, keeping the current page's
    /// first line and what has been seen.
    pub(crate) fn resize(&mut self, size: (usize, usize)) {
        self.lines = card_lines(&self.view, self.palette, Fold::Window(size.0));
        self.paged = (0..self.lines.len())
            .filter(|&at| self.lines[at].role != Role::Pinned)
            .collect();
        // Cannot differ (only pinned lines wrap); kept in step all the same.
        self.seen.resize(self.paged.len(), false);
        self.first = self.first.min(self.paged.len().saturating_sub(1));
        self.size = size;
    }

    /// Paged lines per page; `None` when the whole card fits the window.
    fn page_size(&self) -> Option<usize> {
        let pinned = self.lines.len() - self.paged.len();
        if self.lines.len() + BELOW <= self.size.1 {
            return None;
        }
        // One more row for the `page X/Y` line.
        Some(self.size.1.saturating_sub(pinned + BELOW + 1).max(MIN_PAGE))
    }

    /// Whether the card takes more than one page.
    pub(crate) fn is_paged(&self) -> bool {
        self.page_size().is_some()
    }

    /// The lines of the current page (the whole card when it fits), followed by the
    /// `page X/Y` line when it is paged; marks what they show as seen.
    pub(crate) fn page(&mut self) -> Vec<String> {
        let Some(size) = self.page_size() else {
            self.seen.iter_mut().for_each(|seen| *seen = true);
            return self.lines.iter().map(|line| line.text.clone()).collect();
        };
        let end = (self.first + size).min(self.paged.len());
        let shown = self.first.min(end)..end;
        let mut out = Vec::new();
        for (at, line) in self.lines.iter().enumerate() {
            if line.role == Role::Pinned {
                out.push(line.text.clone());
            } else if let Some(index) = self.paged[shown.clone()].iter().position(|&i| i == at) {
                out.push(line.text.clone());
                self.seen[shown.start + index] = true;
            }
        }
        let total = self.paged.len().div_ceil(size);
        let number = (self.first.div_ceil(size) + 1).min(total);
        let unseen = self.unseen();
        let mut status =
            format!("page {number}/{total} · space: next page · d: everything in $PAGER");
        if unseen > 0 {
            status.push_str(&format!(" · {} not shown yet", changed_lines(unseen)));
        }
        out.push(crate::style::fit(
            &self.palette.paint(Paint::Yellow, &status),
            self.size.0,
        ));
        out
    }

    /// Moves to the next page (from the last one, back to the first).
    pub(crate) fn next(&mut self) {
        let Some(size) = self.page_size() else {
            return;
        };
        self.first += size;
        if self.first >= self.paged.len() {
            self.first = 0;
        }
    }

    /// Prints the current page on stderr.
    pub(crate) fn show(&mut self) {
        for line in self.page() {
            errln!("{line}");
        }
    }

    /// Lines of the change (and arguments) not on screen yet.
    pub(crate) fn unseen(&self) -> usize {
        self.paged
            .iter()
            .zip(&self.seen)
            .filter(|(at, seen)| self.lines[**at].role == Role::Change && !**seen)
            .count()
    }

    /// Everything counts as seen (the whole card went through the pager).
    pub(crate) fn saw_everything(&mut self) {
        self.seen.iter_mut().for_each(|seen| *seen = true);
    }
}

/// `1 changed line` / `N changed lines`.
pub(crate) fn changed_lines(count: usize) -> String {
    format!("{count} changed line{}", if count == 1 { "" } else { "s" })
}
