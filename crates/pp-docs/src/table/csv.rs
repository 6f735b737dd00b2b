//! CSV (and TSV, `;`- or `|`-separated) with a header row, in UTF-8 or a legacy
//! encoding (GBK/GB18030 and others, detected).

use std::borrow::Cow;

use super::infer::{Fits, convert, unique_names};
use super::{Column, Table};
use crate::DocsError;

/// The delimiters tried, in order of preference on a tie.
const DELIMITERS: [u8; 4] = [b',', b';', b'\t', b'|'];

/// How many bytes of the start the delimiter is sniffed on.
const SNIFF_BYTES: usize = 64 * 1024;

/// Reads CSV `bytes`: the first row is the header.
pub(super) fn load(bytes: &[u8], max_rows: usize) -> Result<Table, DocsError> {
    let (text, encoding) = decode(bytes);
    let delimiter = sniff(text.as_bytes());
    let mut reader = ::csv::ReaderBuilder::new()
        .delimiter(delimiter)
        .has_headers(false)
        .flexible(true)
        .from_reader(text.as_bytes());
    let mut records = reader.byte_records();
    let header = match records.next() {
        Some(record) => record.map_err(csv_error)?,
        None => {
            return Err(DocsError::Malformed(
                "the CSV file is empty: no header row".to_owned(),
            ));
        }
    };
    let mut headers: Vec<String> = header
        .iter()
        .map(|field| String::from_utf8_lossy(field).into_owned())
        .collect();
    // Raw text per column: one buffer and the end offset of each cell.
    let mut buffers: Vec<(String, Vec<usize>)> = vec![(String::new(), Vec::new()); headers.len()];
    let mut row_count = 0;
    let mut truncated = false;
    for record in records {
        let record = record.map_err(csv_error)?;
        if record.iter().all(<[u8]>::is_empty) {
            continue;
        }
        if row_count == max_rows {
            truncated = true;
            break;
        }
        while buffers.len() < record.len() {
            // A row longer than the header: a new, unnamed column, empty above.
            headers.push(String::new());
            buffers.push((String::new(), vec![0; row_count]));
        }
        for (index, (buffer, ends)) in buffers.iter_mut().enumerate() {
            if let Some(field) = record.get(index) {
                // The text was decoded to UTF-8 and the delimiter is ASCII.
                buffer.push_str(&String::from_utf8_lossy(field));
            }
            ends.push(buffer.len());
        }
        row_count += 1;
    }
    let names = unique_names(headers);
    let columns = names
        .into_iter()
        .zip(buffers)
        .map(|(name, (buffer, ends))| {
            let buffer = buffer.as_str();
            let cells = || {
                let mut start = 0;
                ends.iter().map(move |&end| {
                    let cell = &buffer[start..end];
                    start = end;
                    cell
                })
            };
            let mut fits = Fits::default();
            for cell in cells() {
                let value = cell.trim();
                if !value.is_empty() {
                    fits.see(value);
                }
            }
            let kind = fits.kind();
            let values = cells().map(|cell| convert(cell, kind)).collect();
            Column { name, kind, values }
        })
        .collect();
    Ok(Table {
        columns,
        row_count,
        truncated,
        encoding: Some(encoding),
        delimiter: Some(char::from(delimiter)),
        ..Table::default()
    })
}

#[expect(clippy::needless_pass_by_value, reason = "used as map_err(csv_error)")]
fn csv_error(error: ::csv::Error) -> DocsError {
    DocsError::Malformed(format!("the CSV file cannot be read: {error}"))
}

/// The text of `bytes` and the name of its encoding: a BOM wins, then UTF-8, then the
/// encoding `chardetng` guesses (GBK/GB18030 for Chinese exports).
pub(super) fn decode(bytes: &[u8]) -> (Cow<'_, str>, String) {
    if let Some((encoding, bom)) = encoding_rs::Encoding::for_bom(bytes) {
        let (text, _) = encoding.decode_without_bom_handling(&bytes[bom..]);
        return (text, encoding.name().to_owned());
    }
    if let Ok(text) = std::str::from_utf8(bytes) {
        return (Cow::Borrowed(text), "UTF-8".to_owned());
    }
    let mut detector = chardetng::EncodingDetector::new();
    detector.feed(bytes, true);
    let encoding = detector.guess(None, true);
    let (text, _, _) = encoding.decode(bytes);
    (Cow::Owned(text.into_owned()), encoding.name().to_owned())
}

/// The delimiter of `text`: the candidate found the same (non-zero) number of times on
/// the most of the first lines (outside quotes), then the most often.
pub(super) fn sniff(text: &[u8]) -> u8 {
    let sample = &text[..text.len().min(SNIFF_BYTES)];
    let mut lines: Vec<[usize; 4]> = Vec::new();
    let mut counts = [0usize; 4];
    let mut quoted = false;
    for &byte in sample {
        match byte {
            b'"' => quoted = !quoted,
            b'\n' if !quoted => {
                lines.push(counts);
                counts = [0; 4];
                if lines.len() == 50 {
                    break;
                }
            }
            _ if !quoted => {
                if let Some(index) = DELIMITERS.iter().position(|&delimiter| delimiter == byte) {
                    counts[index] += 1;
                }
            }
            _ => {}
        }
    }
    if counts.iter().any(|&count| count > 0) {
        lines.push(counts);
    }
    let Some(first) = lines.first().copied() else {
        return b',';
    };
    let mut best = (0, 0, 0usize);
    let mut chosen = b',';
    for (index, &delimiter) in DELIMITERS.iter().enumerate() {
        if first[index] == 0 {
            continue;
        }
        let consistent = lines
            .iter()
            .filter(|line| line[index] == first[index])
            .count();
        let score = (consistent, first[index], usize::MAX - index);
        if score > best {
            best = score;
            chosen = delimiter;
        }
    }
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::{Cell, ColumnType};

    #[test]
    fn delimiters_are_sniffed() {
        assert_eq!(sniff(b"a,b,c\n1,2,3\n"), b',');
        assert_eq!(sniff(b"a;b;c\n1,5;2,5;3\n4;5;6\n"), b';');
        assert_eq!(sniff(b"a\tb\n\"x,y,z\"\t2\n"), b'\t');
        assert_eq!(sniff(b"a|b|c\n1|2|3"), b'|');
        assert_eq!(sniff(b"single\n1\n"), b',');
    }

    #[test]
    fn semicolon_csv_with_types_and_ragged_rows() {
        let table = load(
            b"name;qty;price;day;ok\nA;1;2.5;2024-01-02;true\nB;;3;2024-01-03;false;extra\n\n",
            100,
        )
        .unwrap();
        assert_eq!(table.delimiter, Some(';'));
        assert_eq!(table.row_count, 2);
        let kinds: Vec<_> = table.columns.iter().map(|column| column.kind).collect();
        assert_eq!(
            kinds,
            [
                ColumnType::Text,
                ColumnType::Integer,
                ColumnType::Float,
                ColumnType::Date,
                ColumnType::Boolean,
                ColumnType::Text
            ]
        );
        assert_eq!(table.columns[5].name, "column_6");
        assert_eq!(
            table.columns[5].values,
            [Cell::Null, Cell::Text("extra".to_owned())]
        );
        assert_eq!(table.columns[1].values, [Cell::Int(1), Cell::Null]);
        assert_eq!(
            table.columns[2].values,
            [Cell::Float(2.5), Cell::Float(3.0)]
        );
    }

    #[test]
    fn gbk_csv_is_decoded() {
        let text = "城市,销售额\n北京,100\n上海,200\n广州,300\n深圳,400\n";
        let (bytes, _, _) = encoding_rs::GBK.encode(text);
        assert!(std::str::from_utf8(&bytes).is_err());
        let table = load(&bytes, 10).unwrap();
        assert_eq!(table.encoding.as_deref(), Some("GBK"));
        assert_eq!(table.columns[0].name, "城市");
        assert_eq!(table.columns[0].values[1], Cell::Text("上海".to_owned()));
        assert_eq!(table.columns[1].kind, ColumnType::Integer);
    }

    #[test]
    fn rows_past_the_cap_are_cut_and_said_so() {
        let table = load(b"a\n1\n2\n3\n", 2).unwrap();
        assert_eq!(table.row_count, 2);
        assert!(table.truncated);
        let table = load(b"a\n1\n2\n", 2).unwrap();
        assert!(!table.truncated);
        assert!(load(b"", 2).is_err());
    }

    #[test]
    fn a_utf8_bom_is_dropped_and_quotes_hold_delimiters() {
        let table = load("\u{feff}a,b\n\"x, y\",2\n".as_bytes(), 10).unwrap();
        assert_eq!(table.columns[0].name, "a");
        assert_eq!(table.columns[0].values, [Cell::Text("x, y".to_owned())]);
    }
}
