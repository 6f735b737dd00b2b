//! Result lines under the caps, and the `grep-searcher` sink that produces them.
//!
//! A file's lines are gathered by a [`FileSink`] and only added to the [`Output`] when
//! the file was searched to the end without turning out binary, so a binary file never
//! contributes half its matches.

use std::io;
use std::time::Duration;

use grep_searcher::{Searcher, Sink, SinkContext, SinkMatch};
use pp_agent::ToolContext;

use crate::files::common::truncation_marker;

/// Longest part of one line shown, in characters; a longer line ends with `…`.
pub(super) const MAX_LINE_CHARS: usize = 300;

/// Why a search stopped before the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cut {
    /// `max_results` matches were shown and there was at least one more.
    Results(usize),
    /// The result lines reached the byte cap.
    Bytes(usize),
    /// The time budget ran out.
    Time(Duration),
    /// The task was cancelled or timed out.
    Interrupted,
}

impl Cut {
    /// The last line of the output: `[truncated: …]`.
    pub(super) fn marker(self) -> String {
        truncation_marker(&match self {
            Self::Results(count) => format!(
                "stopped at {count} matches (max_results); more exist — narrow the \
                 pattern, path or glob, or raise max_results"
            ),
            Self::Bytes(bytes) => format!(
                "results reached the {bytes}-byte limit; narrow the pattern, path or \
                 glob, or ask for less context"
            ),
            Self::Time(budget) => format!(
                "search stopped after {} s; files not reached were not searched — \
                 narrow the path or glob",
                budget.as_secs_f64()
            ),
            Self::Interrupted => "the task was stopped; the search did not finish".to_owned(),
        })
    }
}

/// The time a search may take, on an injected clock.
pub(super) struct Budget {
    /// Time spent so far; a real clock in the tool, a ticking one in tests.
    elapsed: Box<dyn FnMut() -> Duration + Send>,
    max: Duration,
}

impl Budget {
    pub(super) fn new(max: Duration, elapsed: Box<dyn FnMut() -> Duration + Send>) -> Self {
        Self { elapsed, max }
    }

    /// Why the search must stop now, if it must: the task's interrupt or the budget.
    pub(super) fn check(&mut self, context: &ToolContext) -> Option<Cut> {
        if context.should_stop() {
            Some(Cut::Interrupted)
        } else if (self.elapsed)() >= self.max {
            Some(Cut::Time(self.max))
        } else {
            None
        }
    }
}

/// The result lines of a whole call.
pub(super) struct Output {
    pub(super) text: String,
    /// Matching lines shown.
    pub(super) matches: usize,
    pub(super) max_results: usize,
    pub(super) max_bytes: usize,
    /// Print `--` between groups (context was asked for).
    pub(super) separate: bool,
    /// Set once; nothing is added after.
    pub(super) cut: Option<Cut>,
}

impl Output {
    /// Matches still allowed.
    pub(super) fn remaining(&self) -> usize {
        self.max_results.saturating_sub(self.matches)
    }

    /// Adds the lines of one file (stopping at the byte cap) and records `more` (the
    /// file had a match past `max_results`).
    pub(super) fn commit(&mut self, file: FileSink<'_>) {
        if file.lines.is_empty() {
            return;
        }
        if self.separate && !self.text.is_empty() {
            self.text.push_str("--\n");
        }
        for line in file.lines {
            if self.text.len() + line.text.len() + 1 > self.max_bytes {
                self.cut = Some(Cut::Bytes(self.max_bytes));
                return;
            }
            self.text.push_str(&line.text);
            self.text.push('\n');
            self.matches += usize::from(line.is_match);
        }
        if file.more {
            self.cut = Some(Cut::Results(self.matches));
        }
    }
}

/// One line gathered for a file.
pub(super) struct Line {
    text: String,
    is_match: bool,
}

/// Collects one file's lines for the searcher.
pub(super) struct FileSink<'a> {
    /// The workspace-relative path shown before each line.
    pub(super) path: &'a str,
    pub(super) lines: Vec<Line>,
    /// Matches this file may still add.
    pub(super) remaining: usize,
    /// A match past `remaining` was seen (the search of this file stopped there).
    pub(super) more: bool,
    /// The file has a NUL byte: it is skipped.
    pub(super) binary: bool,
    /// Set when the budget or the interrupt stopped this file.
    pub(super) stopped: Option<Cut>,
    pub(super) budget: &'a mut Budget,
    pub(super) context: &'a ToolContext,
}

impl FileSink<'_> {
    fn push(&mut self, separator: char, line_number: Option<u64>, bytes: &[u8], is_match: bool) {
        let number = line_number.unwrap_or(0);
        let text = display_line(bytes);
        self.lines.push(Line {
            text: format!("{}{separator}{number}{separator} {text}", self.path),
            is_match,
        });
    }
}

impl Sink for FileSink<'_> {
    type Error = io::Error;

    fn matched(&mut self, _searcher: &Searcher, found: &SinkMatch<'_>) -> io::Result<bool> {
        if let Some(cut) = self.budget.check(self.context) {
            self.stopped = Some(cut);
            return Ok(false);
        }
        if self.remaining == 0 {
            self.more = true;
            return Ok(false);
        }
        self.remaining -= 1;
        self.push(':', found.line_number(), found.bytes(), true);
        Ok(true)
    }

    fn context(&mut self, _searcher: &Searcher, context: &SinkContext<'_>) -> io::Result<bool> {
        self.push('-', context.line_number(), context.bytes(), false);
        Ok(true)
    }

    fn context_break(&mut self, _searcher: &Searcher) -> io::Result<bool> {
        self.lines.push(Line {
            text: "--".to_owned(),
            is_match: false,
        });
        Ok(true)
    }

    fn binary_data(&mut self, _searcher: &Searcher, _offset: u64) -> io::Result<bool> {
        self.binary = true;
        Ok(false)
    }
}

/// A line as shown: without its line terminator, invalid UTF-8 replaced, at most
/// [`MAX_LINE_CHARS`] characters.
fn display_line(bytes: &[u8]) -> String {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    let text = String::from_utf8_lossy(bytes);
    match text.char_indices().nth(MAX_LINE_CHARS) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_lose_their_terminator_and_long_ones_are_cut() {
        assert_eq!(display_line(b"abc\r\n"), "abc");
        assert_eq!(display_line(b"abc"), "abc");
        assert_eq!(display_line(b"a\xffb\n"), "a\u{fffd}b");
        let long = "é".repeat(MAX_LINE_CHARS + 5);
        let shown = display_line(long.as_bytes());
        assert_eq!(shown.chars().count(), MAX_LINE_CHARS + 1);
        assert!(shown.ends_with('…'));
    }

    #[test]
    fn markers_name_the_cap() {
        assert!(
            Cut::Results(5)
                .marker()
                .starts_with("[truncated: stopped at 5 matches")
        );
        assert!(Cut::Bytes(10).marker().contains("10-byte limit"));
        assert!(
            Cut::Time(Duration::from_secs(10))
                .marker()
                .contains("after 10 s")
        );
    }
}
