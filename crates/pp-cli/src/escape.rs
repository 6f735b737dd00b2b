//! Making model- and file-controlled text safe to print on a terminal.

use std::borrow::Cow;

/// Makes model- or file-controlled text safe to print on a terminal: every control
/// character except newline and tab, DEL, the C1 controls, the bidirectional overrides
/// and the Unicode line separators are shown as visible escapes (`\x1b`, `\u{202e}`), so
/// text cannot move the cursor, clear the screen, rewrite an approval card or reorder
/// what a person reads. For multi-line text (answers, file content, diff bodies).
pub(crate) fn terminal_safe(text: &str) -> Cow<'_, str> {
    escape_unsafe(text, Kind::Text, visible_escape)
}

/// Like [`terminal_safe`], and newlines, tabs and the invisible zero-width characters
/// are escaped too (`\n`, `\t`, `\u{200b}`): for anything that must stay on its one line
/// and read as what it is — paths, targets, tool names, list rows — so a model-written
/// name cannot print a line that looks like part of the card, nor hide a character.
pub(crate) fn one_line(text: &str) -> Cow<'_, str> {
    escape_unsafe(text, Kind::Name, visible_escape)
}

/// Like [`terminal_safe`] for JSON text printed on a terminal: the characters serde
/// leaves raw (DEL, C1 controls, bidi overrides, line separators) become `\uXXXX`
/// escapes, so the output stays valid JSON with the same meaning. (serde already escapes
/// newlines inside strings; the newlines left are the layout's.)
pub(crate) fn json_safe(json: &str) -> Cow<'_, str> {
    escape_unsafe(json, Kind::Text, |c| format!("\\u{:04x}", u32::from(c)))
}

/// What is being printed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Multi-line text: newlines, tabs and zero-width joiners (emoji) pass through.
    Text,
    /// A name on one line: those are escaped too.
    Name,
}

/// `\n`, `\r`, `\t`, `\x1b` or `\u{202e}`.
fn visible_escape(c: char) -> String {
    match c {
        '\n' => "\\n".to_owned(),
        '\r' => "\\r".to_owned(),
        '\t' => "\\t".to_owned(),
        c if u32::from(c) < 0x100 => format!("\\x{:02x}", u32::from(c)),
        c => format!("\\u{{{:04x}}}", u32::from(c)),
    }
}

/// Characters that change what a terminal shows without being seen themselves.
fn is_unsafe(c: char, kind: Kind) -> bool {
    match c {
        '\n' | '\t' => kind == Kind::Name,
        // Bidirectional embeddings, overrides and isolates; marks.
        '\u{202a}'..='\u{202e}'
        | '\u{2066}'..='\u{2069}'
        | '\u{200e}'
        | '\u{200f}'
        | '\u{061c}' => true,
        // The line and paragraph separators some terminals break lines on.
        '\u{2028}' | '\u{2029}' => true,
        // Zero-width space and joiners, word joiner, invisible operators, byte-order mark.
        '\u{200b}'..='\u{200d}' | '\u{2060}'..='\u{2064}' | '\u{feff}' => kind == Kind::Name,
        c => c.is_control(),
    }
}

fn escape_unsafe(text: &str, kind: Kind, escape: impl Fn(char) -> String) -> Cow<'_, str> {
    if !text.chars().any(|c| is_unsafe(c, kind)) {
        return Cow::Borrowed(text);
    }
    let mut safe = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_unsafe(c, kind) {
            safe.push_str(&escape(c));
        } else {
            safe.push(c);
        }
    }
    Cow::Owned(safe)
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
