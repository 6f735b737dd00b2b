//! Colours and column widths for the terminal.
//!
//! Colours are on only when the stream they go to is a terminal, unless `NO_COLOR`
//! turns them off or `CLICOLOR_FORCE` on (`env.rs`). Widths count columns, not
//! characters: East Asian wide characters and most emoji take two, combining marks none,
//! so a table of CJK file names stays aligned and a fold never cuts past the edge.

use std::io::IsTerminal as _;

use crate::env;

/// Whether to colour, decided once per stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Palette {
    enabled: bool,
}

/// The colours PocketPilot uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Paint {
    /// Removed lines, denials, errors.
    Red,
    /// Added lines, success.
    Green,
    /// Hunk headers, tool names.
    Cyan,
    /// High risk, questions.
    Yellow,
    /// Line numbers, folds, secondary detail.
    Dim,
    /// Headings.
    Bold,
    /// The strongest warning: bold white on red ("NOT confined").
    Alarm,
}

impl Palette {
    /// Colours on.
    #[cfg(test)]
    pub(crate) const ON: Self = Self { enabled: true };
    /// Colours off.
    #[cfg(test)]
    pub(crate) const OFF: Self = Self { enabled: false };

    /// The palette for a stream that is (or is not) a terminal.
    pub(crate) fn for_stream(is_terminal: bool) -> Self {
        Self {
            enabled: decide(is_terminal, env::no_color(), env::clicolor_force()),
        }
    }

    /// The palette for stdout.
    pub(crate) fn stdout() -> Self {
        Self::for_stream(std::io::stdout().is_terminal())
    }

    /// The palette for stderr.
    pub(crate) fn stderr() -> Self {
        Self::for_stream(std::io::stderr().is_terminal())
    }

    /// `text` in `paint` (unchanged when colours are off). `text` must already be safe
    /// to print (escaped by `render`).
    pub(crate) fn paint(self, paint: Paint, text: &str) -> String {
        if !self.enabled || text.is_empty() {
            return text.to_owned();
        }
        let code = match paint {
            Paint::Red => "31",
            Paint::Green => "32",
            Paint::Cyan => "36",
            Paint::Yellow => "33",
            Paint::Dim => "2",
            Paint::Bold => "1",
            Paint::Alarm => "1;97;41",
        };
        format!("\x1b[{code}m{text}\x1b[0m")
    }
}

/// `NO_COLOR` wins, then `CLICOLOR_FORCE`, then whether the stream is a terminal.
fn decide(is_terminal: bool, no_color: bool, force: bool) -> bool {
    !no_color && (force || is_terminal)
}

/// Columns `c` takes on a terminal: 0 for combining marks and zero-width characters, 2
/// for East Asian wide and fullwidth characters and emoji, else 1.
pub(crate) fn char_width(c: char) -> usize {
    let code = u32::from(c);
    match code {
        0 => 0,
        // Combining marks, zero-width space/joiners, variation selectors.
        0x0300..=0x036f
        | 0x0483..=0x0489
        | 0x0591..=0x05bd
        | 0x0610..=0x061a
        | 0x064b..=0x065f
        | 0x0e31
        | 0x0e34..=0x0e3a
        | 0x1ab0..=0x1aff
        | 0x1dc0..=0x1dff
        | 0x200b..=0x200f
        | 0x20d0..=0x20ff
        | 0xfe00..=0xfe0f
        | 0xfe20..=0xfe2f
        | 0xe0100..=0xe01ef => 0,
        // Hangul Jamo, CJK radicals to Yi, Hangul syllables, CJK compatibility,
        // fullwidth forms, CJK extension planes, emoji.
        0x1100..=0x115f
        | 0x231a..=0x231b
        | 0x2329..=0x232a
        | 0x23e9..=0x23ec
        | 0x23f0
        | 0x23f3
        | 0x25fd..=0x25fe
        | 0x2614..=0x2615
        | 0x2648..=0x2653
        | 0x267f
        | 0x2693
        | 0x26a1
        | 0x26aa..=0x26ab
        | 0x26bd..=0x26be
        | 0x26c4..=0x26c5
        | 0x26ce
        | 0x26d4
        | 0x26ea
        | 0x26f2..=0x26f3
        | 0x26f5
        | 0x26fa
        | 0x26fd
        | 0x2705
        | 0x270a..=0x270b
        | 0x2728
        | 0x274c
        | 0x274e
        | 0x2753..=0x2755
        | 0x2757
        | 0x2795..=0x2797
        | 0x27b0
        | 0x27bf
        | 0x2b1b..=0x2b1c
        | 0x2b50
        | 0x2b55
        | 0x2e80..=0x303e
        | 0x3041..=0x33ff
        | 0x3400..=0x4dbf
        | 0x4e00..=0x9fff
        | 0xa000..=0xa4cf
        | 0xa960..=0xa97f
        | 0xac00..=0xd7a3
        | 0xf900..=0xfaff
        | 0xfe10..=0xfe19
        | 0xfe30..=0xfe6f
        | 0xff00..=0xff60
        | 0xffe0..=0xffe6
        | 0x1f300..=0x1f64f
        | 0x1f680..=0x1f6ff
        | 0x1f900..=0x1f9ff
        | 0x1fa70..=0x1faff
        | 0x20000..=0x3fffd => 2,
        _ => 1,
    }
}

/// Columns `text` takes (ANSI colour sequences count as zero).
pub(crate) fn width(text: &str) -> usize {
    let mut columns = 0;
    let mut in_escape = false;
    for c in text.chars() {
        if in_escape {
            in_escape = c != 'm';
        } else if c == '\x1b' {
            in_escape = true;
        } else {
            columns += char_width(c);
        }
    }
    columns
}

/// The longest prefix of `text` that fits in `columns`, and whether anything was cut.
/// Never splits a wide character across the edge, nor one of our colour sequences.
pub(crate) fn cut_to_width(text: &str, columns: usize) -> (&str, bool) {
    let mut used = 0;
    let mut in_escape = false;
    for (at, c) in text.char_indices() {
        if in_escape {
            in_escape = c != 'm';
            continue;
        }
        if c == '\x1b' {
            in_escape = true;
            continue;
        }
        let w = char_width(c);
        if used + w > columns {
            return (&text[..at], true);
        }
        used += w;
    }
    (text, false)
}

/// `text` followed by spaces up to `columns` (wide characters count twice).
pub(crate) fn pad_to_width(text: &str, columns: usize) -> String {
    let pad = columns.saturating_sub(width(text));
    format!("{text}{}", " ".repeat(pad))
}

/// `text` cut to `columns` with `…` where it was cut (a colour left open is closed
/// first); unchanged when it fits.
pub(crate) fn fit(text: &str, columns: usize) -> String {
    if width(text) <= columns {
        return text.to_owned();
    }
    let (cut, _) = cut_to_width(text, columns.saturating_sub(1));
    format!("{cut}{}…", reset_after(cut))
}

/// `head` then `tail` on one line of at most `columns`: `head` is cut (with `…`, unless
/// `tail` starts with one) so that `tail` (a size, an id) stays whole on the same line.
/// Only a `tail` that does not fit on its own is cut too.
pub(crate) fn fit_keeping(head: &str, tail: &str, columns: usize) -> String {
    let whole = format!("{head}{tail}");
    if width(&whole) <= columns {
        return whole;
    }
    let mark = if tail.starts_with('…') { "" } else { "…" };
    let room = columns.saturating_sub(width(tail) + width(mark));
    if room == 0 {
        return fit(&whole, columns);
    }
    let (cut, _) = cut_to_width(head, room);
    format!("{cut}{}{mark}{tail}", reset_after(cut))
}

/// `text` on rows of at most `columns`, each row after the first starting with
/// `indent`, and whether all of it is there: at most `rows` rows, the last one cut with
/// `…`. With `words`, rows break at a space near the edge (the spaces dropped); without,
/// exactly at the edge (every character kept). A colour open at a break is closed there
/// and opened again on the next row.
pub(crate) fn wrap(
    text: &str,
    columns: usize,
    indent: &str,
    rows: usize,
    words: bool,
) -> (Vec<String>, bool) {
    let mut out = Vec::new();
    let mut rest = text.to_owned();
    loop {
        if width(&rest) <= columns {
            out.push(rest);
            return (out, true);
        }
        if out.len() + 1 >= rows.max(1) {
            out.push(fit(&rest, columns));
            return (out, false);
        }
        let (cut, _) = cut_to_width(&rest, columns);
        let at = match cut.rfind(' ') {
            Some(at) if words && width(&cut[..at]) > width(indent) + columns / 3 => at,
            _ => cut.len(),
        };
        if at == 0 || width(&cut[..at]) <= width(indent) {
            out.push(fit(&rest, columns));
            return (out, false);
        }
        let (row, tail) = rest.split_at(at);
        let open = open_colour(row);
        out.push(format!(
            "{row}{}",
            if open.is_some() { "\x1b[0m" } else { "" }
        ));
        let tail = if words {
            tail.trim_start_matches(' ')
        } else {
            tail
        };
        rest = format!("{indent}{}{tail}", open.unwrap_or_default());
    }
}

/// The last colour sequence of `text` when no reset follows it.
fn open_colour(text: &str) -> Option<&str> {
    let at = text.rfind("\x1b[")?;
    let end = at + text[at..].find('m')? + 1;
    let sequence = &text[at..end];
    (sequence != "\x1b[0m").then_some(sequence)
}

/// The colour reset a cut needs when it may have left a colour open.
fn reset_after(cut: &str) -> &'static str {
    if cut.contains('\x1b') { "\x1b[0m" } else { "" }
}

/// The terminal's width in columns (stderr's, then stdout's), or 100.
pub(crate) fn terminal_columns() -> usize {
    terminal_size().0
}

/// The terminal's width and height (stderr's, then stdout's): 100 columns and 24 rows
/// when neither is a terminal or it reports no usable size.
pub(crate) fn terminal_size() -> (usize, usize) {
    #[cfg(unix)]
    {
        for size in [
            rustix::termios::tcgetwinsize(std::io::stderr()),
            rustix::termios::tcgetwinsize(std::io::stdout()),
        ]
        .into_iter()
        .flatten()
        {
            if size.ws_col >= 20 {
                let rows = if size.ws_row >= 8 {
                    usize::from(size.ws_row)
                } else {
                    24
                };
                return (usize::from(size.ws_col), rows);
            }
        }
    }
    (100, 24)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_color_wins_then_force_then_the_terminal() {
        assert!(decide(true, false, false));
        assert!(!decide(false, false, false), "off when not a terminal");
        assert!(decide(false, false, true), "CLICOLOR_FORCE");
        assert!(!decide(true, true, true), "NO_COLOR wins");
    }

    #[test]
    fn paint_is_plain_when_off() {
        assert_eq!(Palette::OFF.paint(Paint::Red, "-old"), "-old");
        assert_eq!(Palette::ON.paint(Paint::Red, "-old"), "\x1b[31m-old\x1b[0m");
    }

    #[test]
    fn wide_characters_count_twice_and_marks_not_at_all() {
        assert_eq!(width("notes.txt"), 9);
        assert_eq!(width("会议记录.md"), 11);
        assert_eq!(width("한국어"), 6);
        assert_eq!(width("ｆｕｌｌ"), 8);
        assert_eq!(width("e\u{301}"), 1);
        assert_eq!(width("🚀"), 2);
        assert_eq!(width("\x1b[31mred\x1b[0m"), 3);
    }

    #[test]
    fn cuts_never_split_a_wide_character() {
        assert_eq!(cut_to_width("会议记录", 5), ("会议", true));
        assert_eq!(cut_to_width("会议记录", 8), ("会议记录", false));
        assert_eq!(cut_to_width("abc", 2), ("ab", true));
        assert_eq!(pad_to_width("会议", 6), "会议  ");
        assert_eq!(
            cut_to_width("\x1b[31m-old line\x1b[0m", 4),
            ("\x1b[31m-old", true),
            "colour sequences take no room and are never cut"
        );
    }

    #[test]
    fn fitting_cuts_by_columns_and_keeps_the_tail() {
        assert_eq!(fit("abcdef", 6), "abcdef");
        assert_eq!(fit("abcdef", 4), "abc…");
        assert_eq!(fit("会议记录", 6), "会议…");
        assert_eq!(
            width(&fit("会议记录x", 6)),
            5,
            "a wide character is never split"
        );
        assert_eq!(fit("\x1b[31mredder\x1b[0m", 4), "\x1b[31mred\x1b[0m…");
        assert_eq!(fit_keeping("a/long/path", " (3 B)", 12), "a/lon… (3 B)");
        assert_eq!(
            fit_keeping("xxxxxxxx", "… (3004 bytes)\",", 20),
            "xxxx… (3004 bytes)\","
        );
        assert_eq!(fit_keeping("会议记录会议", " c_1", 9), "会议… c_1");
        assert_eq!(fit_keeping("ab", " c_1", 9), "ab c_1");
        assert_eq!(width(&fit_keeping("abc", &"x".repeat(30), 10)), 10);
    }

    #[test]
    fn wrapping_breaks_at_spaces_indents_and_carries_colours() {
        let owned = |rows: &[&str]| rows.iter().map(|row| (*row).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            wrap(
                "│ undo:   cannot be undone at all",
                20,
                "│         ",
                3,
                true
            ),
            (
                owned(&[
                    "│ undo:   cannot be",
                    "│         undone at",
                    "│         all"
                ]),
                true
            )
        );
        assert_eq!(wrap("short", 20, "  ", 3, true), (owned(&["short"]), true));
        let (wide, complete) = wrap(&"会".repeat(30), 20, "  ", 2, true);
        assert_eq!(wide.len(), 2);
        assert!(!complete, "cut after two rows");
        assert!(wide.iter().all(|row| width(row) <= 20), "{wide:?}");
        assert!(wide[1].ends_with('…'), "{wide:?}");
        assert_eq!(
            wrap("\x1b[33mab cd ef gh\x1b[0m", 8, " ", 3, true).0,
            ["\x1b[33mab cd\x1b[0m", " \x1b[33mef gh\x1b[0m"]
        );
        assert_eq!(
            wrap("+a  b  c", 4, "  ", 4, false),
            (owned(&["+a  ", "  b ", "   c"]), true),
            "exact rows keep every space"
        );
    }
}
