//! Tool results at a glance: a listing as an aligned table; a listing or anything else
//! longer than a few rows or lines folded with "… N more entries" / "… N more lines",
//! long values cut with their byte count.
//!
//! Everything returned here is already escaped for the terminal (`escape::one_line`);
//! nothing looks at tool names: a listing is recognised by its rows.

use serde_json::Value;

use crate::escape::{one_line, shorten, terminal_safe};
use crate::style::{Paint, Palette, cut_to_width, pad_to_width};

/// Lines of a result shown before the fold.
pub(crate) const SHOWN_LINES: usize = 6;

/// Longest string value shown inside arguments, in characters.
const SHOWN_VALUE: usize = 60;

/// One row of a `list_files` listing: `kind size modified path`.
#[derive(Debug, PartialEq, Eq)]
struct Row<'a> {
    kind: &'a str,
    size: &'a str,
    modified: &'a str,
    name: &'a str,
}

fn parse_row(line: &str) -> Option<Row<'_>> {
    let (kind, rest) = line.split_once(' ')?;
    if !matches!(kind, "file" | "dir" | "link" | "other") {
        return None;
    }
    let (size, rest) = rest.trim_start().split_once(' ')?;
    if size != "-" && !size.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (modified, name) = rest.split_once(' ')?;
    let timestamp = modified.len() == 20 && modified.ends_with('Z') && modified.contains('T');
    if modified != "-" && !timestamp {
        return None;
    }
    Some(Row {
        kind,
        size,
        modified,
        name,
    })
}

/// `176 B`, `4.2 KiB`, `1.0 MiB`.
fn human_size(size: &str) -> String {
    let Ok(bytes) = size.parse::<u64>() else {
        return size.to_owned();
    };
    #[expect(
        clippy::cast_precision_loss,
        reason = "one decimal of a size shown to a person"
    )]
    let value = bytes as f64;
    match bytes {
        0..1024 => format!("{bytes} B"),
        1024..1_048_576 => format!("{:.1} KiB", value / 1024.0),
        1_048_576..1_073_741_824 => format!("{:.1} MiB", value / 1_048_576.0),
        _ => format!("{:.1} GiB", value / 1_073_741_824.0),
    }
}

/// `2026-11-30 14:20` from `2026-11-30T14:20:51Z`.
fn short_time(modified: &str) -> String {
    if modified.len() == 20 {
        format!("{} {}", &modified[..10], &modified[11..16])
    } else {
        modified.to_owned()
    }
}

/// A listing as a table with a header, when every line is a listing row (or one of the
/// listing's notes: `(empty directory)`, `[truncated: …]`): its first `shown` rows, then
/// `… N more entries` for the rest (the notes are always kept).
pub(crate) fn listing_table(
    content: &str,
    palette: Palette,
    columns: usize,
    shown: usize,
) -> Option<Vec<String>> {
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    for line in content.lines().filter(|line| !line.trim().is_empty()) {
        match parse_row(line) {
            Some(row) => rows.push(row),
            None if line.starts_with('(') || line.starts_with("[truncated") => notes.push(line),
            None => return None,
        }
    }
    if rows.is_empty() {
        return None;
    }
    let left_out = rows.len().saturating_sub(shown);
    rows.truncate(shown);
    let sizes: Vec<String> = rows.iter().map(|row| human_size(row.size)).collect();
    let times: Vec<String> = rows.iter().map(|row| short_time(row.modified)).collect();
    let size_width = sizes.iter().map(|s| s.len()).max().unwrap_or(0).max(4);
    let time_width = times.iter().map(|t| t.len()).max().unwrap_or(0).max(8);
    let name_room = columns
        .saturating_sub(6 + size_width + 2 + time_width + 2)
        .max(12);
    let mut lines = vec![palette.paint(
        Paint::Dim,
        &format!(
            "{:<5} {:>size_width$}  {:<time_width$}  name",
            "type", "size", "modified"
        ),
    )];
    for ((row, size), time) in rows.iter().zip(&sizes).zip(&times) {
        let name = one_line(row.name);
        let (shown, cut) = cut_to_width(&name, name_room.saturating_sub(1));
        let name = if cut {
            format!("{shown}…")
        } else {
            shown.to_owned()
        };
        let name = if row.kind == "dir" {
            palette.paint(Paint::Cyan, &name)
        } else {
            name
        };
        lines.push(format!(
            "{} {size:>size_width$}  {}  {name}",
            pad_to_width(row.kind, 5),
            pad_to_width(time, time_width),
        ));
    }
    if left_out > 0 {
        lines.push(palette.paint(
            Paint::Dim,
            &format!(
                "… {left_out} more entr{}",
                if left_out == 1 { "y" } else { "ies" }
            ),
        ));
    }
    for note in notes {
        lines.push(palette.paint(Paint::Dim, &one_line(note)));
    }
    Some(lines)
}

/// The first [`SHOWN_LINES`] lines of `text`, each cut to `columns`, then
/// `… N more lines`; a single long line is cut with its size in bytes.
pub(crate) fn folded_text(
    text: &str,
    palette: Palette,
    columns: usize,
    shown: usize,
) -> Vec<String> {
    let all: Vec<&str> = text.trim_end_matches('\n').lines().collect();
    let mut lines = Vec::new();
    for line in all.iter().take(shown) {
        let safe = terminal_safe(line).replace('\t', "    ");
        let (cut_line, cut) = cut_to_width(&safe, columns.saturating_sub(1).max(10));
        if cut && all.len() == 1 {
            // The size stays on the line: the text is cut shorter to make room for it.
            let size = format!("… ({} bytes)", text.len());
            let room = columns.saturating_sub(crate::style::width(&size)).max(10);
            let (cut_line, _) = cut_to_width(&safe, room);
            lines.push(format!("{cut_line}{}", palette.paint(Paint::Dim, &size)));
        } else if cut {
            lines.push(format!("{cut_line}…"));
        } else {
            lines.push(cut_line.to_owned());
        }
    }
    if all.len() > shown {
        let more = all.len() - shown;
        lines.push(palette.paint(
            Paint::Dim,
            &format!("… {more} more line{}", if more == 1 { "" } else { "s" }),
        ));
    }
    lines
}

/// A tool's output for the live view: a listing as a table, both folded after
/// [`SHOWN_LINES`] rows or lines.
pub(crate) fn tool_output(content: &str, palette: Palette, columns: usize) -> Vec<String> {
    if content.trim().is_empty() {
        return vec![palette.paint(Paint::Dim, "(no output)")];
    }
    listing_table(content, palette, columns, SHOWN_LINES)
        .unwrap_or_else(|| folded_text(content, palette, columns, SHOWN_LINES))
}

/// `value` with every long string cut to its first characters and its size in bytes:
/// arguments stay readable when one of them is a whole file.
pub(crate) fn folded_json(value: &Value) -> Value {
    match value {
        Value::String(text) if text.chars().count() > SHOWN_VALUE => {
            let head: String = text.chars().take(SHOWN_VALUE).collect();
            Value::String(format!("{head}… ({} bytes)", text.len()))
        }
        Value::Array(items) => Value::Array(items.iter().map(folded_json).collect()),
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(key, value)| (key.clone(), folded_json(value)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A call's raw arguments text, compact and with long values folded.
pub(crate) fn folded_arguments(arguments: &str) -> String {
    match serde_json::from_str::<Value>(arguments) {
        Ok(value) => folded_json(&value).to_string(),
        Err(_) => shorten(arguments, 200),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LISTING: &str = "file         176 2026-11-30T14:20:51Z meeting-2026-11-02.md\n\
                           dir            - 2026-11-29T09:00:00Z drafts/\n\
                           file        4300 2026-11-30T14:21:00Z 会议记录.md\n\
                           file          12 - todo list.txt\n";

    #[test]
    fn a_listing_is_an_aligned_table() {
        let table = listing_table(LISTING, Palette::OFF, 100, SHOWN_LINES).unwrap();
        assert_eq!(
            table,
            [
                "type     size  modified          name",
                "file    176 B  2026-11-30 14:20  meeting-2026-11-02.md",
                "dir         -  2026-11-29 09:00  drafts/",
                "file  4.2 KiB  2026-11-30 14:21  会议记录.md",
                "file     12 B  -                 todo list.txt",
            ]
        );
    }

    /// Wide names are cut to the room left, by columns, and stay aligned.
    #[test]
    fn wide_names_are_cut_by_columns() {
        let listing = format!(
            "file 1 2026-11-30T14:20:51Z {}\nfile 2 2026-11-30T14:20:51Z {}\n",
            "会".repeat(40),
            "a".repeat(80)
        );
        let table = listing_table(&listing, Palette::OFF, 60, SHOWN_LINES).unwrap();
        let widths: Vec<usize> = table[1..]
            .iter()
            .map(|row| crate::style::width(row))
            .collect();
        // A wide character never straddles the edge, so a row may end one column short.
        assert_eq!(widths[1], 60, "{table:#?}");
        assert_eq!(widths[0], 59, "{table:#?}");
    }

    /// A long listing folds like other long output: the first rows, the count of the
    /// entries left out, and the listing's own notes.
    #[test]
    fn a_long_listing_is_folded_with_a_count() {
        let listing: String = (1..=80)
            .map(|n| format!("file 1 2026-11-30T14:20:51Z f{n:02}.txt\n"))
            .chain(["[truncated: 80 of 95 entries]\n".to_owned()])
            .collect();
        let table = tool_output(&listing, Palette::OFF, 80);
        assert_eq!(table.len(), 1 + SHOWN_LINES + 2, "{table:#?}");
        assert!(table[SHOWN_LINES].ends_with("f06.txt"), "{table:#?}");
        assert_eq!(table[SHOWN_LINES + 1], "… 74 more entries");
        assert_eq!(table[SHOWN_LINES + 2], "[truncated: 80 of 95 entries]");
    }

    #[test]
    fn text_that_is_not_a_listing_is_folded() {
        assert!(listing_table("hello\nfile 1 x y\n", Palette::OFF, 80, SHOWN_LINES).is_none());
        let text: String = (1..=10).map(|n| format!("line {n}\n")).collect();
        assert_eq!(
            tool_output(&text, Palette::OFF, 80),
            [
                "line 1",
                "line 2",
                "line 3",
                "line 4",
                "line 5",
                "line 6",
                "… 4 more lines"
            ]
        );
    }

    #[test]
    fn a_long_line_is_cut_with_its_byte_count_and_wide_characters_fit() {
        let long = "x".repeat(500);
        assert_eq!(
            tool_output(&long, Palette::OFF, 41),
            [format!("{}… (500 bytes)", "x".repeat(28))],
            "the size stays on the line, within the 41 columns"
        );
        let wide = "会".repeat(30);
        let lines = folded_text(&format!("{wide}\nb\n"), Palette::OFF, 21, 6);
        assert_eq!(lines[0], format!("{}…", "会".repeat(10)));
    }

    #[test]
    fn long_argument_values_are_folded_with_their_size() {
        let content = "a".repeat(100);
        let arguments = serde_json::json!({"path": "a.txt", "content": content}).to_string();
        assert_eq!(
            folded_arguments(&arguments),
            format!(
                "{{\"content\":\"{}… (100 bytes)\",\"path\":\"a.txt\"}}",
                "a".repeat(60)
            )
        );
    }
}
