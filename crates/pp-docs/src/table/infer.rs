//! Type inference: what a piece of text is (integer, float, boolean, date, text), the
//! narrowest type a column's cells fit, and column names made unique.

use super::{Cell, Column, ColumnType};

/// Which types every non-empty text of a column seen so far fits.
#[derive(Debug, Clone, Copy)]
pub(super) struct Fits {
    integer: bool,
    float: bool,
    boolean: bool,
    date: bool,
    /// Whether any non-empty value was seen.
    any: bool,
}

impl Default for Fits {
    fn default() -> Self {
        Self {
            integer: true,
            float: true,
            boolean: true,
            date: true,
            any: false,
        }
    }
}

impl Fits {
    /// Narrows by one value (trimmed, non-empty).
    pub(super) fn see(&mut self, value: &str) {
        self.any = true;
        if self.integer && parse_int(value).is_none() {
            self.integer = false;
        }
        if self.float && parse_float(value).is_none() {
            self.float = false;
        }
        if self.boolean && parse_bool(value).is_none() {
            self.boolean = false;
        }
        if self.date && date_parts(value).is_none() {
            self.date = false;
        }
    }

    /// Whether any non-empty value was seen.
    pub(super) fn seen_any(self) -> bool {
        self.any
    }

    /// The column type.
    pub(super) fn kind(self) -> ColumnType {
        if !self.any {
            ColumnType::Text
        } else if self.integer {
            ColumnType::Integer
        } else if self.float {
            ColumnType::Float
        } else if self.boolean {
            ColumnType::Boolean
        } else if self.date {
            ColumnType::Date
        } else {
            ColumnType::Text
        }
    }
}

/// The cell `raw` makes in a column of type `kind` (empty text is null; text cells keep
/// the text as written).
pub(super) fn convert(raw: &str, kind: ColumnType) -> Cell {
    try_convert(raw, kind).unwrap_or_else(|| Cell::Text(raw.to_owned()))
}

/// The cell `raw` makes in a column of type `kind`, or `None` when it is not empty and
/// does not fit `kind` (text fits every column).
pub(super) fn try_convert(raw: &str, kind: ColumnType) -> Option<Cell> {
    let value = raw.trim();
    if value.is_empty() {
        return Some(Cell::Null);
    }
    match kind {
        ColumnType::Integer => parse_int(value).map(Cell::Int),
        ColumnType::Float => parse_float(value).map(Cell::Float),
        ColumnType::Boolean => parse_bool(value).map(Cell::Bool),
        ColumnType::Date => date_parts(value).map(|parts| Cell::Text(parts.iso(value))),
        ColumnType::Text => Some(Cell::Text(raw.to_owned())),
    }
}

/// How many non-empty cells of a column the type is first guessed on.
const SAMPLE_CELLS: usize = 1024;

/// A column of text cells (`cells` yields each cell as written), typed: of the
/// narrowest type every non-empty cell fits, empty cells null.
///
/// The type is guessed on the first [`SAMPLE_CELLS`] non-empty cells and every cell is
/// converted once with it; only when a later cell does not fit is the whole column
/// inferred and converted again. The result is the same as inferring on every cell:
/// the sample's type is the narrowest the sample fits, and every cell fitting it means
/// no narrower type fits them all.
pub(super) fn text_column<'a, I>(name: String, cells: impl Fn() -> I, rows: usize) -> Column
where
    I: Iterator<Item = &'a str>,
{
    let mut sample = Fits::default();
    for value in cells()
        .map(str::trim)
        .filter(|value| !value.is_empty())
        .take(SAMPLE_CELLS)
    {
        sample.see(value);
    }
    if sample.seen_any() {
        let kind = sample.kind();
        let mut values = Vec::with_capacity(rows);
        let all_fit = cells().all(|cell| match try_convert(cell, kind) {
            Some(value) => {
                values.push(value);
                true
            }
            None => false,
        });
        if all_fit {
            return Column { name, kind, values };
        }
    }
    let mut fits = Fits::default();
    for value in cells().map(str::trim).filter(|value| !value.is_empty()) {
        fits.see(value);
    }
    let kind = fits.kind();
    let mut values = Vec::with_capacity(rows);
    values.extend(cells().map(|cell| convert(cell, kind)));
    Column { name, kind, values }
}

/// Whether the digits of a number have a leading zero that makes them an identifier
/// (`007`, `0123.5`) rather than a number.
fn leading_zero(digits: &str) -> bool {
    digits.len() > 1 && digits.starts_with('0')
}

/// An integer: optional sign, ASCII digits, no leading zero, fits in i64.
pub(super) fn parse_int(value: &str) -> Option<i64> {
    let digits = value.strip_prefix(['-', '+']).unwrap_or(value);
    if digits.is_empty()
        || !digits.bytes().all(|byte| byte.is_ascii_digit())
        || leading_zero(digits)
    {
        return None;
    }
    value.parse().ok()
}

/// A decimal number: sign, digits, one point, an exponent; no `inf`/`nan`, no leading
/// zero before other digits.
pub(super) fn parse_float(value: &str) -> Option<f64> {
    let unsigned = value.strip_prefix(['-', '+']).unwrap_or(value);
    let mantissa = unsigned
        .split_once(['e', 'E'])
        .map_or(unsigned, |(mantissa, _)| mantissa);
    let whole = mantissa
        .split_once('.')
        .map_or(mantissa, |(whole, _)| whole);
    if !unsigned
        .bytes()
        .next()
        .is_some_and(|byte| byte.is_ascii_digit() || byte == b'.')
        || !unsigned
            .bytes()
            .all(|byte| byte.is_ascii_digit() || matches!(byte, b'.' | b'e' | b'E' | b'-' | b'+'))
        || leading_zero(whole)
    {
        return None;
    }
    value
        .parse::<f64>()
        .ok()
        .filter(|number| number.is_finite())
}

/// `true` / `false` in any case.
pub(super) fn parse_bool(value: &str) -> Option<bool> {
    if value.eq_ignore_ascii_case("true") {
        Some(true)
    } else if value.eq_ignore_ascii_case("false") {
        Some(false)
    } else {
        None
    }
}

/// A date `YYYY-MM-DD` (or with `/` or `.`), optionally followed by a time
/// (` HH:MM[:SS]` or `THH:MM[:SS]`, fractions and a zone kept out), as ISO text:
/// `YYYY-MM-DD` or `YYYY-MM-DD HH:MM:SS`.
pub(super) fn parse_date(value: &str) -> Option<String> {
    date_parts(value).map(|parts| parts.iso(value))
}

/// A date (and time) read by [`date_parts`].
#[derive(Debug, Clone, Copy)]
pub(super) struct DateParts {
    year: u32,
    month: u32,
    day: u32,
    /// Hour, minute, second.
    time: Option<(u32, u32, u32)>,
}

impl DateParts {
    /// As ISO text; `value` (the text it was read from) is reused when it already is.
    fn iso(self, value: &str) -> String {
        let bytes = value.as_bytes();
        // A year of four digits is checked by `date_parts`.
        if self.time.is_none() && bytes.len() == 10 && bytes[4] == b'-' && bytes[7] == b'-' {
            return value.to_owned();
        }
        let date = format!("{:04}-{:02}-{:02}", self.year, self.month, self.day);
        match self.time {
            None => date,
            Some((hour, minute, second)) => {
                format!("{date} {hour:02}:{minute:02}:{second:02}")
            }
        }
    }
}

/// The parts of a date as [`parse_date`] reads it, without making its text.
pub(super) fn date_parts(value: &str) -> Option<DateParts> {
    let bytes = value.as_bytes();
    if bytes.len() < 8 || !bytes[0..4].iter().all(u8::is_ascii_digit) {
        return None;
    }
    let separator = bytes[4];
    if !matches!(separator, b'-' | b'/' | b'.') {
        return None;
    }
    let (date, time) = match value.find([' ', 'T']) {
        Some(at) => (&value[..at], Some(value[at + 1..].trim())),
        None => (value, None),
    };
    let mut parts = date.split(char::from(separator));
    let year: u32 = parts.next()?.parse().ok()?;
    let month = small_number(parts.next()?)?;
    let day = small_number(parts.next()?)?;
    if parts.next().is_some() || !(1..=12).contains(&month) || day == 0 {
        return None;
    }
    let leap = year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
    let days = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    if day > days {
        return None;
    }
    let date = DateParts {
        year,
        month,
        day,
        time: None,
    };
    let Some(time) = time else {
        return Some(date);
    };
    // Drop fractions and a zone: `10:30:00.5Z`, `10:30+08:00`.
    let clock = time
        .split(['.', 'Z', '+'])
        .next()
        .unwrap_or(time)
        .trim_end_matches('-');
    let mut fields = clock.split(':');
    let hour = small_number(fields.next()?)?;
    let minute = small_number(fields.next()?)?;
    let second = match fields.next() {
        Some(second) => small_number(second)?,
        None => 0,
    };
    if fields.next().is_some() || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    Some(DateParts {
        time: Some((hour, minute, second)),
        ..date
    })
}

/// One or two ASCII digits.
fn small_number(text: &str) -> Option<u32> {
    if text.is_empty() || text.len() > 2 || !text.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// A value of a typed source (JSON, XLSX) before its column's type is known.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Value {
    /// Empty.
    Null,
    /// A boolean.
    Bool(bool),
    /// A whole number.
    Int(i64),
    /// A number with a fraction.
    Float(f64),
    /// A date as ISO text.
    Date(String),
    /// Text.
    Text(String),
}

/// A column of typed values: integers and floats make `float`, a single kind makes its
/// own type, any other mix is text (every value as its text).
pub(super) fn typed_column(name: String, values: Vec<Value>) -> Column {
    let mut seen = [false; 5];
    for value in &values {
        match value {
            Value::Null => {}
            Value::Bool(_) => seen[0] = true,
            Value::Int(_) => seen[1] = true,
            Value::Float(_) => seen[2] = true,
            Value::Date(_) => seen[3] = true,
            Value::Text(_) => seen[4] = true,
        }
    }
    let kind = match seen {
        [true, false, false, false, false] => ColumnType::Boolean,
        [false, true, false, false, false] => ColumnType::Integer,
        [false, _, true, false, false] => ColumnType::Float,
        [false, false, false, true, false] => ColumnType::Date,
        _ => ColumnType::Text,
    };
    let values = values
        .into_iter()
        .map(|value| match (value, kind) {
            (Value::Null, _) => Cell::Null,
            (Value::Bool(value), ColumnType::Boolean) => Cell::Bool(value),
            (Value::Int(value), ColumnType::Integer) => Cell::Int(value),
            #[expect(clippy::cast_precision_loss, reason = "a float column")]
            (Value::Int(value), ColumnType::Float) => Cell::Float(value as f64),
            (Value::Float(value), _) if kind != ColumnType::Text => Cell::Float(value),
            (Value::Bool(value), _) => Cell::Text(value.to_string()),
            (Value::Int(value), _) => Cell::Text(value.to_string()),
            (Value::Float(value), _) => Cell::Text(value.to_string()),
            (Value::Date(text) | Value::Text(text), _) => Cell::Text(text),
        })
        .collect();
    Column { name, kind, values }
}

/// Header names made usable: trimmed, `column_N` (1-based) for an empty one, `name_2`,
/// `name_3`… for repeats.
pub(super) fn unique_names(headers: Vec<String>) -> Vec<String> {
    let mut names: Vec<String> = Vec::with_capacity(headers.len());
    for (index, header) in headers.into_iter().enumerate() {
        let header = header.trim();
        let base = if header.is_empty() {
            format!("column_{}", index + 1)
        } else {
            header.to_owned()
        };
        let mut name = base.clone();
        let mut suffix = 2;
        while names.contains(&name) {
            name = format!("{base}_{suffix}");
            suffix += 1;
        }
        names.push(name);
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_booleans_and_dates_are_recognised_strictly() {
        assert_eq!(parse_int("-42"), Some(-42));
        assert_eq!(parse_int("007"), None, "an identifier, not a number");
        assert_eq!(parse_int("0"), Some(0));
        assert_eq!(parse_int("99999999999999999999"), None);
        assert_eq!(parse_float("1.5e3"), Some(1500.0));
        assert_eq!(parse_float(".5"), Some(0.5));
        assert_eq!(parse_float("0.25"), Some(0.25));
        assert_eq!(parse_float("inf"), None);
        assert_eq!(parse_float("NaN"), None);
        assert_eq!(parse_float("1,5"), None);
        assert_eq!(parse_bool("TRUE"), Some(true));
        assert_eq!(parse_bool("yes"), None);
        assert_eq!(parse_date("2024/2/29").as_deref(), Some("2024-02-29"));
        assert_eq!(parse_date("2023-02-29"), None);
        assert_eq!(
            parse_date("2024-01-05T10:30:00.25Z").as_deref(),
            Some("2024-01-05 10:30:00")
        );
        assert_eq!(parse_date("2024-13-01"), None);
        assert_eq!(parse_date("20240101"), None);
    }

    #[test]
    fn a_column_is_of_the_narrowest_type_all_its_cells_fit() {
        let kind = |values: &[&str]| {
            let mut fits = Fits::default();
            values.iter().for_each(|value| fits.see(value));
            fits.kind()
        };
        assert_eq!(kind(&["1", "2"]), ColumnType::Integer);
        assert_eq!(kind(&["1", "2.5"]), ColumnType::Float);
        assert_eq!(kind(&["true", "False"]), ColumnType::Boolean);
        assert_eq!(kind(&["2024-01-01", "2024-02-01 08:00"]), ColumnType::Date);
        assert_eq!(kind(&["1", "x"]), ColumnType::Text);
        assert_eq!(kind(&[]), ColumnType::Text);
        assert_eq!(
            convert("007", ColumnType::Text),
            Cell::Text("007".to_owned())
        );
        assert_eq!(convert("  ", ColumnType::Integer), Cell::Null);
    }

    #[test]
    fn typed_values_unify_into_one_column_type() {
        let column = typed_column("a".to_owned(), vec![Value::Int(1), Value::Float(0.5)]);
        assert_eq!(column.kind, ColumnType::Float);
        assert_eq!(column.values, vec![Cell::Float(1.0), Cell::Float(0.5)]);
        let column = typed_column(
            "b".to_owned(),
            vec![Value::Int(1), Value::Text("x".to_owned()), Value::Null],
        );
        assert_eq!(column.kind, ColumnType::Text);
        assert_eq!(
            column.values,
            vec![
                Cell::Text("1".to_owned()),
                Cell::Text("x".to_owned()),
                Cell::Null
            ]
        );
    }

    #[test]
    fn header_names_are_made_unique() {
        let names = unique_names(vec![
            "a".to_owned(),
            " ".to_owned(),
            "a".to_owned(),
            "a".to_owned(),
        ]);
        assert_eq!(names, ["a", "column_2", "a_2", "a_3"]);
    }
}
