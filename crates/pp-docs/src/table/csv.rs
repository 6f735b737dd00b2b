//! CSV (and TSV, `;`- or `|`-separated) with a header row, in UTF-8 or a legacy
//! encoding (GBK/GB18030 and others, detected).

use std::borrow::Cow;

use super::Table;
use super::infer::{text_column, unique_names};
use crate::DocsError;

/// The delimiters tried, in order of preference on a tie.
const DELIMITERS: [u8; 4] = [b',', b';', b'\t', b'|'];

/// How many bytes of the start the delimiter is sniffed on.
const SNIFF_BYTES: usize = 64 * 1024;

/// Reads CSV `bytes`: the first row is the header.
///
/// One pass of the CSV reader copies each field's bytes into its column's buffer (one
/// reused record, no allocation per row or field); each buffer is checked as UTF-8
/// once, then typed and converted per column ([`text_column`]).
pub(super) fn load(bytes: &[u8], max_rows: usize) -> Result<Table, DocsError> {
    let (text, encoding) = decode(bytes);
    let delimiter = sniff(text.as_bytes());
    let mut reader = ::csv::ReaderBuilder::new()
        .delimiter(delimiter)
        .has_headers(false)
        .flexible(true)
        .buffer_capacity(BUFFER_BYTES)
        .from_reader(text.as_bytes());
    let mut record = ::csv::ByteRecord::new();
    if !reader.read_byte_record(&mut record).map_err(csv_error)? {
        return Err(DocsError::Malformed(
            "the CSV file is empty: no header row".to_owned(),
        ));
    }
    let mut headers: Vec<String> = record
        .iter()
        .map(|field| String::from_utf8_lossy(field).into_owned())
        .collect();
    // Raw bytes per column: one buffer and the end offset of each cell.
    let mut buffers: Vec<RawColumn> = headers.iter().map(|_| RawColumn::default()).collect();
    let mut row_count = 0;
    let mut truncated = false;
    while reader.read_byte_record(&mut record).map_err(csv_error)? {
        if record.as_slice().is_empty() {
            // Every field empty: a blank line.
            continue;
        }
        if row_count == max_rows {
            truncated = true;
            break;
        }
        while buffers.len() < record.len() {
            // A row longer than the header: a new, unnamed column, empty above.
            headers.push(String::new());
            buffers.push(RawColumn {
                bytes: Vec::new(),
                ends: vec![0; row_count],
            });
        }
        for (index, column) in buffers.iter_mut().enumerate() {
            if let Some(field) = record.get(index) {
                column.bytes.extend_from_slice(field);
            }
            column.ends.push(column.bytes.len());
        }
        row_count += 1;
    }
    let names = unique_names(headers);
    let columns = names
        .into_iter()
        .zip(buffers)
        .map(|(name, raw)| {
            let (buffer, ends) = raw.into_text();
            let buffer = buffer.as_str();
            let cells = || {
                let mut start = 0;
                ends.iter().map(move |&end| {
                    let cell = &buffer[start..end];
                    start = end;
                    cell
                })
            };
            text_column(name, cells, row_count)
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

/// The CSV reader's buffer: large enough that refills are rare.
const BUFFER_BYTES: usize = 256 * 1024;

/// One column's cells as read: their bytes end to end, and where each cell ends.
#[derive(Default)]
struct RawColumn {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl RawColumn {
    /// The cells as text. The file was decoded to UTF-8 and fields are split at ASCII
    /// delimiters and quotes, so the bytes are UTF-8 and every end is a character
    /// boundary; should that ever not hold, each cell is converted on its own, with
    /// replacement characters, and the ends follow.
    fn into_text(self) -> (String, Vec<usize>) {
        let RawColumn { bytes, ends } = self;
        match String::from_utf8(bytes) {
            Ok(text) if ends.iter().all(|&end| text.is_char_boundary(end)) => (text, ends),
            Ok(text) => lossy_cells(text.as_bytes(), &ends),
            Err(error) => lossy_cells(error.as_bytes(), &ends),
        }
    }
}

/// Cells of `bytes` (ending at `ends`), each converted with replacement characters.
fn lossy_cells(bytes: &[u8], ends: &[usize]) -> (String, Vec<usize>) {
    let mut text = String::with_capacity(bytes.len());
    let mut new_ends = Vec::with_capacity(ends.len());
    let mut start = 0;
    for &end in ends {
        text.push_str(&String::from_utf8_lossy(&bytes[start..end]));
        new_ends.push(text.len());
        start = end;
    }
    (text, new_ends)
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
    fn a_cell_past_the_type_sample_that_does_not_fit_widens_the_column() {
        // 2000 rows: the type is guessed on the first 1024 non-empty cells.
        let mut text = String::from("id,amount,day,flag,late\n");
        for row in 0..2000 {
            let amount = if row == 1500 {
                "2.5".to_owned()
            } else {
                row.to_string()
            };
            let day = if row == 1999 { "soon" } else { "2024-03-01" };
            let late = if row < 1500 { "" } else { "7" };
            text.push_str(&format!("{row},{amount},{day},true,{late}\n"));
        }
        let table = load(text.as_bytes(), usize::MAX).unwrap();
        let kinds: Vec<_> = table.columns.iter().map(|column| column.kind).collect();
        assert_eq!(
            kinds,
            [
                ColumnType::Integer,
                ColumnType::Float,
                ColumnType::Text,
                ColumnType::Boolean,
                ColumnType::Integer
            ]
        );
        let amounts = &table.columns[1].values;
        assert_eq!(amounts[0], Cell::Float(0.0));
        assert_eq!(amounts[1500], Cell::Float(2.5));
        assert_eq!(amounts[1999], Cell::Float(1999.0));
        let days = &table.columns[2].values;
        assert_eq!(days[0], Cell::Text("2024-03-01".to_owned()));
        assert_eq!(days[1999], Cell::Text("soon".to_owned()));
        let late = &table.columns[4].values;
        assert_eq!((&late[1499], &late[1500]), (&Cell::Null, &Cell::Int(7)));
    }

    #[test]
    fn dates_are_normalised_and_text_cells_keep_their_spaces() {
        let table = load(
            b"day,at,name\n2024/3/1,2024-03-01T10:30,\" padded \"\n2024-03-02,2024-03-02 08:00:05,x\n",
            10,
        )
        .unwrap();
        assert_eq!(table.columns[0].kind, ColumnType::Date);
        assert_eq!(
            table.columns[0].values,
            [
                Cell::Text("2024-03-01".to_owned()),
                Cell::Text("2024-03-02".to_owned())
            ]
        );
        assert_eq!(
            table.columns[1].values,
            [
                Cell::Text("2024-03-01 10:30:00".to_owned()),
                Cell::Text("2024-03-02 08:00:05".to_owned())
            ]
        );
        assert_eq!(
            table.columns[2].values[0],
            Cell::Text(" padded ".to_owned())
        );
    }

    #[test]
    fn a_utf8_bom_is_dropped_and_quotes_hold_delimiters() {
        let table = load("\u{feff}a,b\n\"x, y\",2\n".as_bytes(), 10).unwrap();
        assert_eq!(table.columns[0].name, "a");
        assert_eq!(table.columns[0].values, [Cell::Text("x, y".to_owned())]);
    }
}
