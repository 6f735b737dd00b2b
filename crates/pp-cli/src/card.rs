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
    /// The window's columns and rows the rows were made for.
    size: (usize, usize),
    /// The card's rows at this width.
    rows: Vec<CardLine>,
    /// The paged rows (every row that is not pinned), as indices into `rows`.
    paged: Vec<usize>,
    /// Which lines of the card (by [`CardLine::line`], the same at every width) have
    /// been on screen whole.
    seen: Vec<bool>,
    /// Where the current page starts in `paged`.
    first: usize,
    /// Lines printed under the card (and its page line), already escaped.
    footer: Vec<String>,
}

impl Paged {
    /// The card of `view` for a window of `size` (columns, rows), at its first page;
    /// nothing is shown yet.
    pub(crate) fn new(view: &ApprovalView, palette: Palette, size: (usize, usize)) -> Self {
        let rows = card_lines(view, palette, Fold::Window(size.0));
        let lines = rows.iter().map(|row| row.line + 1).max().unwrap_or(0);
        let mut paged = Self {
            view: view.clone(),
            palette,
            size,
            rows,
            paged: Vec::new(),
            seen: vec![false; lines],
            first: 0,
            footer: Vec::new(),
        };
        paged.index();
        paged
    }

    /// With `line` under the card on every page (what `a` does, say).
    pub(crate) fn with_footer(mut self, line: Option<String>) -> Self {
        self.footer.extend(line);
        self
    }

    fn index(&mut self) {
        self.paged = (0..self.rows.len())
            .filter(|&at| self.rows[at].role != Role::Pinned)
            .collect();
    }

    /// The size the card is laid out for.
    pub(crate) fn size(&self) -> (usize, usize) {
        self.size
    }

    /// Lays the card out again for a window of `size`, from the line the current page
    /// starts with, keeping what has been seen.
    pub(crate) fn resize(&mut self, size: (usize, usize)) {
        let line = self
            .paged
            .get(self.first)
            .map_or(0, |&at| self.rows[at].line);
        self.rows = card_lines(&self.view, self.palette, Fold::Window(size.0));
        self.index();
        self.first = self
            .paged
            .iter()
            .position(|&at| self.rows[at].line >= line)
            .unwrap_or(0);
        self.size = size;
    }

    /// Paged rows per page; `None` when the whole card fits the window.
    fn page_size(&self) -> Option<usize> {
        let pinned = self.rows.len() - self.paged.len() + self.footer.len();
        if self.rows.len() + self.footer.len() + BELOW <= self.size.1 {
            return None;
        }
        // One more row for the `page X/Y` line.
        Some(self.size.1.saturating_sub(pinned + BELOW + 1).max(MIN_PAGE))
    }

    /// Whether the card takes more than one page.
    pub(crate) fn is_paged(&self) -> bool {
        self.page_size().is_some()
    }

    /// Marks the line of `row` seen when `row` completes it.
    fn saw(&mut self, row: usize) {
        let row = &self.rows[row];
        if row.last && !row.cut {
            self.seen[row.line] = true;
        }
    }

    /// The rows of the current page (the whole card when it fits), followed by the
    /// `page X/Y` line when it is paged; marks what they show as seen.
    pub(crate) fn page(&mut self) -> Vec<String> {
        let footer: Vec<String> = self
            .footer
            .iter()
            .map(|line| crate::style::fit(line, self.size.0))
            .collect();
        let Some(size) = self.page_size() else {
            (0..self.rows.len()).for_each(|row| self.saw(row));
            let card = self.rows.iter().map(|row| row.text.clone());
            return card.chain(footer).collect();
        };
        let end = (self.first + size).min(self.paged.len());
        let shown: Vec<usize> = self.paged[self.first.min(end)..end].to_vec();
        let mut out = Vec::new();
        for at in 0..self.rows.len() {
            if self.rows[at].role == Role::Pinned || shown.contains(&at) {
                out.push(self.rows[at].text.clone());
                self.saw(at);
            }
        }
        let total = self.paged.len().div_ceil(size);
        let number = (self.first.div_ceil(size) + 1).min(total);
        let unseen = self.unseen();
        let status = if unseen > 0 {
            format!(
                "page {number}/{total} ({} not shown yet) · space: next page · d: all in $PAGER",
                changed_lines(unseen)
            )
        } else {
            format!(
                "page {number}/{total} (every changed line shown) · space: next page · d: $PAGER"
            )
        };
        out.push(crate::style::fit(
            &self.palette.paint(Paint::Yellow, &status),
            self.size.0,
        ));
        out.extend(footer);
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

    /// Changed lines (and a command's arguments, a tool's arguments) not yet on screen
    /// whole.
    pub(crate) fn unseen(&self) -> usize {
        self.unseen_where(|_| true)
    }

    /// Of those, the lines too long for the window: only the pager shows them.
    pub(crate) fn too_long(&self) -> usize {
        self.unseen_where(|row| row.cut)
    }

    fn unseen_where(&self, filter: impl Fn(&CardLine) -> bool) -> usize {
        self.rows
            .iter()
            .filter(|row| row.last && row.role == Role::Change && !self.seen[row.line])
            .filter(|row| filter(row))
            .count()
    }

    /// Everything counts as seen (the whole card went through the pager).
    pub(crate) fn saw_everything(&mut self) {
        self.seen.iter_mut().for_each(|seen| *seen = true);
    }

    /// What `a`, `r` or `e` says while changed lines have not been on screen: on the
    /// question's line (which it replaces), cut to the window.
    pub(crate) fn not_yet(&self) -> String {
        let (unseen, too_long) = (self.unseen(), self.too_long());
        let text = if unseen == too_long {
            format!(
                "not yet: {} too long for the window; d shows {} in $PAGER",
                changed_lines(unseen),
                if unseen == 1 { "it" } else { "them" }
            )
        } else {
            format!(
                "not yet: {} not shown yet; space: next page, d: all in $PAGER",
                changed_lines(unseen)
            )
        };
        format!("\r\x1b[K{}", crate::style::fit(&text, self.size.0))
    }
}

/// `1 changed line` / `N changed lines`.
pub(crate) fn changed_lines(count: usize) -> String {
    format!("{count} changed line{}", if count == 1 { "" } else { "s" })
}
