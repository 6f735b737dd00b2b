//! JSON tables: an array of objects (the columns are the union of their keys, in
//! first-seen order) or an array of arrays (the first is the header).

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value as Json;

use super::infer::{Value, parse_date, typed_column, unique_names};
use super::{Table, csv};
use crate::DocsError;

/// Reads JSON `bytes` (UTF-8, or a detected legacy encoding).
pub(super) fn load(bytes: &[u8], max_rows: usize) -> Result<Table, DocsError> {
    let (text, _) = csv::decode(bytes);
    let top: Top = serde_json::from_str(&text).map_err(|error| {
        DocsError::Malformed(format!("the JSON file is not valid JSON: {error}"))
    })?;
    let Top::Array(items) = top else {
        return Err(DocsError::Unsupported(
            "a JSON table is an array of objects or an array of arrays; this file holds \
             something else"
                .to_owned(),
        ));
    };
    let truncated_rows = |count: usize| count > max_rows;
    let (headers, rows, truncated) = match items.first() {
        None => (Vec::new(), Vec::new(), false),
        Some(Item::Object(_)) => {
            let mut headers: Vec<String> = Vec::new();
            let mut index = std::collections::HashMap::new();
            let mut rows = Vec::new();
            let truncated = truncated_rows(items.len());
            for item in items.into_iter().take(max_rows) {
                let Item::Object(object) = item else {
                    return Err(mixed());
                };
                let mut row = vec![Json::Null; headers.len()];
                for (key, value) in object {
                    let at = match index.get(&key) {
                        Some(&at) => at,
                        None => {
                            index.insert(key.clone(), headers.len());
                            headers.push(key);
                            headers.len() - 1
                        }
                    };
                    if row.len() <= at {
                        row.resize(at + 1, Json::Null);
                    }
                    row[at] = value;
                }
                rows.push(row);
            }
            (headers, rows, truncated)
        }
        Some(Item::Array(_)) => {
            let mut items = items.into_iter();
            let Some(Item::Array(header)) = items.next() else {
                return Err(mixed());
            };
            let headers = header.into_iter().map(|cell| text_of(&cell)).collect();
            let truncated = truncated_rows(items.len());
            let mut rows = Vec::new();
            for item in items.take(max_rows) {
                let Item::Array(row) = item else {
                    return Err(mixed());
                };
                rows.push(row);
            }
            (headers, rows, truncated)
        }
        Some(_) => {
            return Err(DocsError::Unsupported(
                "a JSON table is an array of objects or an array of arrays; this array holds \
                 plain values"
                    .to_owned(),
            ));
        }
    };
    let mut headers = headers;
    let width = rows
        .iter()
        .map(Vec::len)
        .max()
        .unwrap_or(0)
        .max(headers.len());
    headers.resize(width, String::new());
    let row_count = rows.len();
    let mut columns: Vec<Vec<Value>> = vec![Vec::with_capacity(row_count); width];
    for row in rows {
        let mut row = row.into_iter();
        for column in &mut columns {
            column.push(row.next().map_or(Value::Null, value_of));
        }
    }
    let columns = unique_names(headers)
        .into_iter()
        .zip(columns)
        .map(|(name, values)| typed_column(name, values))
        .collect();
    Ok(Table {
        columns,
        row_count,
        truncated,
        ..Table::default()
    })
}

/// The document: an array of items, or anything else.
enum Top {
    Array(Vec<Item>),
    Other,
}

/// One item of the array, objects with their keys in file order.
enum Item {
    Object(Vec<(String, Json)>),
    Array(Vec<Json>),
    Other,
}

impl<'de> Deserialize<'de> for Top {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TopVisitor;
        impl<'de> Visitor<'de> for TopVisitor {
            type Value = Top;
            fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                formatter.write_str("a JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Top, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Top::Array(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Top, A::Error> {
                while map
                    .next_entry::<de::IgnoredAny, de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(Top::Other)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Top, E> {
                Ok(Top::Other)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Top, E> {
                Ok(Top::Other)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Top, E> {
                Ok(Top::Other)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Top, E> {
                Ok(Top::Other)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Top, E> {
                Ok(Top::Other)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Top, E> {
                Ok(Top::Other)
            }
        }
        deserializer.deserialize_any(TopVisitor)
    }
}

impl<'de> Deserialize<'de> for Item {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ItemVisitor;
        impl<'de> Visitor<'de> for ItemVisitor {
            type Value = Item;
            fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                formatter.write_str("a JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Item, A::Error> {
                let mut cells = Vec::new();
                while let Some(cell) = seq.next_element()? {
                    cells.push(cell);
                }
                Ok(Item::Array(cells))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Item, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    entries.push(entry);
                }
                Ok(Item::Object(entries))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Item, E> {
                Ok(Item::Other)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Item, E> {
                Ok(Item::Other)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Item, E> {
                Ok(Item::Other)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Item, E> {
                Ok(Item::Other)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Item, E> {
                Ok(Item::Other)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Item, E> {
                Ok(Item::Other)
            }
        }
        deserializer.deserialize_any(ItemVisitor)
    }
}

fn mixed() -> DocsError {
    DocsError::Unsupported(
        "a JSON table's items must all be objects or all be arrays; this array mixes them"
            .to_owned(),
    )
}

/// A JSON value as a cell: strings that are dates become dates; objects and arrays are
/// kept as their JSON text.
fn value_of(json: Json) -> Value {
    match json {
        Json::Null => Value::Null,
        Json::Bool(value) => Value::Bool(value),
        Json::Number(number) => match number.as_i64() {
            Some(value) => Value::Int(value),
            None => number.as_f64().map_or(Value::Null, Value::Float),
        },
        Json::String(text) => match parse_date(text.trim()) {
            Some(date) => Value::Date(date),
            None => Value::Text(text),
        },
        other => Value::Text(other.to_string()),
    }
}

/// A header cell as text.
fn text_of(json: &Json) -> String {
    match json {
        Json::String(text) => text.clone(),
        Json::Null => String::new(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::{Cell, ColumnType};

    #[test]
    fn objects_make_columns_from_the_union_of_their_keys() {
        let table = load(
            br#"[{"a": 1, "b": "x"}, {"c": 2.5, "a": 2}, {"b": null, "d": {"k": 1}}]"#,
            10,
        )
        .unwrap();
        let names: Vec<_> = table.column_names();
        assert_eq!(names, ["a", "b", "c", "d"]);
        assert_eq!(table.row_count, 3);
        assert_eq!(table.columns[0].kind, ColumnType::Integer);
        assert_eq!(
            table.columns[0].values,
            [Cell::Int(1), Cell::Int(2), Cell::Null]
        );
        assert_eq!(table.columns[2].kind, ColumnType::Float);
        assert_eq!(
            table.columns[3].values[2],
            Cell::Text(r#"{"k":1}"#.to_owned())
        );
    }

    #[test]
    fn arrays_of_arrays_have_a_header_row() {
        let table = load(
            br#"[["day", "n"], ["2024-03-01", 1], ["2024-03-02", 2]]"#,
            1,
        )
        .unwrap();
        assert_eq!(table.column_names(), ["day", "n"]);
        assert_eq!(table.columns[0].kind, ColumnType::Date);
        assert_eq!(table.row_count, 1);
        assert!(table.truncated);
    }

    #[test]
    fn other_json_is_refused_clearly() {
        assert!(matches!(
            load(b"{\"a\": 1}", 10),
            Err(DocsError::Unsupported(_))
        ));
        assert!(matches!(
            load(b"[1, 2]", 10),
            Err(DocsError::Unsupported(_))
        ));
        assert!(matches!(
            load(b"[{\"a\": 1}, [1]]", 10),
            Err(DocsError::Unsupported(_))
        ));
        assert!(matches!(
            load(b"[{\"a\": ", 10),
            Err(DocsError::Malformed(_))
        ));
    }
}
