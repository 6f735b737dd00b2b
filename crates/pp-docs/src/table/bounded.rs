//! Answers of bounded size: rows and cells are measured and cut **while they are
//! gathered**, so a query that makes huge values or many rows never holds more than
//! the output cap (a 16 MB text of NULs, which JSON writes as 96 MB of `\u0000`, costs
//! the characters kept and no more).
//!
//! Sizes are counted in characters of compact JSON as `serde_json` writes it (quotes,
//! commas and escapes included), the unit of the tools' output cap.

use serde_json::Value as Json;

/// What a cut text ends with.
pub const CUT_MARK: char = '…';

/// The characters `value` takes as compact JSON.
pub fn json_chars(value: &Json) -> usize {
    match value {
        Json::Null | Json::Bool(true) => 4,
        Json::Bool(false) => 5,
        Json::Number(number) => number.to_string().len(),
        Json::String(text) => string_chars(text),
        Json::Array(items) => {
            2 + items.iter().map(json_chars).sum::<usize>() + items.len().saturating_sub(1)
        }
        Json::Object(map) => {
            2 + map
                .iter()
                .map(|(key, value)| string_chars(key) + 1 + json_chars(value))
                .sum::<usize>()
                + map.len().saturating_sub(1)
        }
    }
}

/// The characters `text` takes as a JSON string, quotes included.
pub fn string_chars(text: &str) -> usize {
    2 + text.chars().map(escaped_chars).sum::<usize>()
}

/// The characters `character` takes inside a JSON string (serde_json's escapes).
fn escaped_chars(character: char) -> usize {
    match character {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        control if u32::from(control) < 0x20 => 6,
        _ => 1,
    }
}

/// `text` as a JSON string of at most `max` characters: as is when it fits, else its
/// longest prefix that fits with [`CUT_MARK`] after it. The flag says whether it was cut.
pub fn cut_text(text: &str, max: usize) -> (String, bool) {
    if string_chars(text) <= max {
        return (text.to_owned(), false);
    }
    // Two quotes and the mark.
    let room = max.saturating_sub(3);
    let mut used = 0;
    let mut end = 0;
    for (at, character) in text.char_indices() {
        used += escaped_chars(character);
        if used > room {
            break;
        }
        end = at + character.len_utf8();
    }
    let mut kept = String::with_capacity(end + CUT_MARK.len_utf8());
    kept.push_str(&text[..end]);
    kept.push(CUT_MARK);
    (kept, true)
}

/// One cell as read, before it is measured.
#[derive(Debug, Clone, Copy)]
pub enum RawCell<'a> {
    /// A value already made (a number, a short text, the result of an operation).
    Json(&'a Json),
    /// Text as SQLite holds it (maybe megabytes, maybe not UTF-8): only the prefix that
    /// can be kept is decoded.
    Text(&'a [u8]),
}

impl RawCell<'_> {
    /// The cell as JSON of at most `max` characters, and whether it was cut.
    fn bounded(self, max: usize) -> (Json, bool) {
        match self {
            RawCell::Text(bytes) => {
                // A character takes at least one character of JSON and at most four
                // bytes: a prefix of `4 * max + 4` bytes holds more than can be kept.
                let prefix = &bytes[..bytes.len().min(max.saturating_mul(4).saturating_add(4))];
                let text = String::from_utf8_lossy(prefix);
                let (kept, cut) = cut_text(&text, max);
                (Json::String(kept), cut || prefix.len() < bytes.len())
            }
            RawCell::Json(Json::String(text)) => {
                let (kept, cut) = cut_text(text, max);
                (Json::String(kept), cut)
            }
            RawCell::Json(value) if json_chars(value) <= max => (value.clone(), false),
            // A big array or object (an operation's `top` values): its text, cut.
            RawCell::Json(value) => {
                let (kept, _) = cut_text(&value.to_string(), max);
                (Json::String(kept), true)
            }
        }
    }
}

/// Rows gathered under a character budget and a row cap.
#[derive(Debug)]
pub struct Gather {
    /// Characters left for rows (the `rows` array's brackets and commas included).
    room: usize,
    /// The most characters one cell keeps.
    max_cell: usize,
    /// The most rows kept.
    max_rows: usize,
    rows: Vec<Vec<Json>>,
    /// Cells cut to fit.
    cut_cells: usize,
    /// Whether a row was left out for lack of room (not for the row cap).
    out_of_room: bool,
}

impl Gather {
    /// At most `max_rows` rows whose JSON array takes at most `max_chars` characters;
    /// one cell keeps at most half of that.
    pub fn new(max_chars: usize, max_rows: usize) -> Self {
        Self {
            room: max_chars.saturating_sub(2),
            max_cell: (max_chars / 2).max(16),
            max_rows,
            rows: Vec::new(),
            cut_cells: 0,
            out_of_room: false,
        }
    }

    /// Whether no more rows are taken (the row cap, or the room is spent).
    pub fn is_full(&self) -> bool {
        self.rows.len() >= self.max_rows || self.out_of_room
    }

    /// Keeps `row`, its cells cut to fit, if it fits; `false` when it was left out
    /// (then no row after it is taken either).
    pub fn push(&mut self, row: &[RawCell<'_>]) -> bool {
        if self.is_full() {
            return false;
        }
        let comma = usize::from(!self.rows.is_empty());
        let room = self.room.saturating_sub(comma);
        let cap = self.max_cell.min(room);
        let (mut cells, mut cut, mut length) = measure(row, cap);
        if length > room && self.rows.is_empty() {
            // The first row alone is too wide: every cell gets an equal share.
            let share = room.saturating_sub(2 + row.len()) / row.len().max(1);
            (cells, cut, length) = measure(row, share.max(3));
        }
        if length > room {
            self.out_of_room = true;
            return false;
        }
        self.room = room - length;
        self.cut_cells += cut;
        self.rows.push(cells);
        true
    }

    /// The rows kept, the number of cells cut, and whether rows were left out for lack
    /// of room.
    pub fn finish(self) -> (Vec<Vec<Json>>, usize, bool) {
        (self.rows, self.cut_cells, self.out_of_room)
    }
}

/// `row`'s cells cut to `cap` characters each, how many were cut, and the row's length.
fn measure(row: &[RawCell<'_>], cap: usize) -> (Vec<Json>, usize, usize) {
    let mut cut_cells = 0;
    let mut length = 2 + row.len().saturating_sub(1);
    let cells = row
        .iter()
        .map(|raw| {
            let (cell, cut) = raw.bounded(cap);
            cut_cells += usize::from(cut);
            length += json_chars(&cell);
            cell
        })
        .collect();
    (cells, cut_cells, length)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    proptest! {
        #[test]
        fn json_chars_is_the_length_serde_json_writes(text in "\\PC*|[\\x00-\\x1f\"\\\\]*") {
            let value = json!([text, {"k": text}, 1.5, -3, null, true, false]);
            prop_assert_eq!(json_chars(&value), value.to_string().chars().count());
        }

        #[test]
        fn cut_text_fits_and_keeps_a_prefix(text in "(\\PC|[\\x00-\\x1f])*", max in 3usize..80) {
            let (kept, cut) = cut_text(&text, max);
            prop_assert!(string_chars(&kept) <= max, "{} > {}", string_chars(&kept), max);
            if cut {
                prop_assert!(text.starts_with(kept.trim_end_matches(CUT_MARK)));
            } else {
                prop_assert_eq!(kept, text);
            }
        }
    }

    #[test]
    fn a_huge_text_of_nuls_is_cut_without_being_decoded_whole() {
        let nuls = vec![0_u8; 16_000_000];
        let mut gather = Gather::new(1000, 100);
        let mut kept = 0;
        while gather.push(&[RawCell::Text(&nuls)]) {
            kept += 1;
        }
        let (rows, cut_cells, out_of_room) = gather.finish();
        assert_eq!(rows.len(), kept);
        assert!(kept >= 1, "the first row is kept, cut");
        assert_eq!(cut_cells, kept);
        assert!(out_of_room);
        assert!(json_chars(&json!(rows)) <= 1000);
        assert!(rows[0][0].as_str().unwrap().ends_with(CUT_MARK));
    }

    #[test]
    fn rows_stop_at_the_cap_and_the_room() {
        let value = json!("abcdefgh");
        let mut gather = Gather::new(10_000, 3);
        for _ in 0..5 {
            gather.push(&[RawCell::Json(&value)]);
        }
        let (rows, cut_cells, out_of_room) = gather.finish();
        assert_eq!((rows.len(), cut_cells, out_of_room), (3, 0, false));

        let mut gather = Gather::new(50, 100);
        let mut kept = 0;
        while gather.push(&[RawCell::Json(&value), RawCell::Json(&value)]) {
            kept += 1;
        }
        let (rows, _, out_of_room) = gather.finish();
        assert!(out_of_room);
        assert_eq!(rows.len(), kept);
        assert!(json_chars(&json!(rows)) <= 50, "{rows:?}");
    }

    #[test]
    fn a_wide_first_row_shares_the_room() {
        let long = json!("x".repeat(1000));
        let row = vec![RawCell::Json(&long); 10];
        let mut gather = Gather::new(500, 10);
        assert!(gather.push(&row));
        let (rows, cut_cells, _) = gather.finish();
        assert_eq!(cut_cells, 10);
        assert!(json_chars(&json!(rows)) <= 500);
    }
}
