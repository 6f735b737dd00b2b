//! The column-level rules: reading a row in order ([`Columns`]), decoding JSON and
//! snake-case enum columns with an error that names the row, and encoding values.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{Error, Result};

/// A row read column by column, in the order of the query's column list. Each backend
/// implements it over its own row type; the `Raw*` structs read themselves through it.
pub(crate) trait Columns {
    /// The backend's error for a column that cannot be read as asked.
    type Error;

    /// The next column, as text.
    fn text(&mut self) -> std::result::Result<String, Self::Error>;
    /// The next column, nullable text.
    fn text_opt(&mut self) -> std::result::Result<Option<String>, Self::Error>;
    /// The next column, as an integer.
    fn int(&mut self) -> std::result::Result<i64, Self::Error>;
    /// The next column, a nullable integer.
    fn int_opt(&mut self) -> std::result::Result<Option<i64>, Self::Error>;
    /// The next column, as a boolean.
    fn flag(&mut self) -> std::result::Result<bool, Self::Error>;
    /// The next column, a nullable boolean.
    fn flag_opt(&mut self) -> std::result::Result<Option<bool>, Self::Error>;
}

/// A `Raw*` row struct: reads its columns in order (the order of both backends'
/// column lists for it).
pub(crate) trait FromColumns: Sized {
    /// Reads one row.
    fn read<C: Columns>(columns: &mut C) -> std::result::Result<Self, C::Error>;
}

/// One snake-case enum column of `table`'s row `id`, decoded as [`Decoder`] does.
pub(crate) fn decode_name<T: DeserializeOwned>(
    table: &'static str,
    column: &'static str,
    id: &str,
    text: String,
) -> Result<T> {
    Decoder { table, id }.name(column, text)
}

/// One JSON column of `table`'s row `id`, decoded as [`Decoder`] does.
pub(crate) fn decode_json<T: DeserializeOwned>(
    table: &'static str,
    column: &'static str,
    id: &str,
    text: &str,
) -> Result<T> {
    Decoder { table, id }.json(column, text)
}

/// Decodes the columns of one row, naming it in errors.
pub(super) struct Decoder<'a> {
    pub(super) table: &'static str,
    pub(super) id: &'a str,
}

impl Decoder<'_> {
    /// The corrupt-row error for `column`.
    pub(super) fn corrupt(&self, column: &'static str, source: serde_json::Error) -> Error {
        Error::Corrupt {
            table: self.table,
            column,
            id: self.id.to_owned(),
            source,
        }
    }

    /// A JSON column.
    pub(super) fn json<T: DeserializeOwned>(&self, column: &'static str, text: &str) -> Result<T> {
        serde_json::from_str(text).map_err(|source| self.corrupt(column, source))
    }

    /// A nullable JSON column.
    pub(super) fn json_opt<T: DeserializeOwned>(
        &self,
        column: &'static str,
        text: Option<&str>,
    ) -> Result<Option<T>> {
        text.map(|text| self.json(column, text)).transpose()
    }

    /// A snake-case enum column (`running`, `operator`, `high`, …), decoded with the same
    /// serde names the wire uses.
    pub(super) fn name<T: DeserializeOwned>(
        &self,
        column: &'static str,
        text: String,
    ) -> Result<T> {
        serde_json::from_value(Value::String(text)).map_err(|source| self.corrupt(column, source))
    }

    /// A nullable snake-case enum column.
    pub(super) fn name_opt<T: DeserializeOwned>(
        &self,
        column: &'static str,
        text: Option<String>,
    ) -> Result<Option<T>> {
        text.map(|text| self.name(column, text)).transpose()
    }

    /// A non-negative integer column (the schema's CHECKs keep it so).
    pub(super) fn count(&self, column: &'static str, value: i64) -> Result<u64> {
        serde_json::from_value(Value::from(value)).map_err(|source| self.corrupt(column, source))
    }
}

/// JSON text for a column.
pub(crate) fn encode<T: Serialize + ?Sized>(what: &'static str, value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(|source| Error::Encode { what, source })
}

/// A nullable JSON column.
pub(crate) fn encode_opt<T: Serialize>(
    what: &'static str,
    value: Option<&T>,
) -> Result<Option<String>> {
    value.map(|value| encode(what, value)).transpose()
}

/// The snake-case name of an enum, as its serde form (`"high"` → `high`).
pub(crate) fn name_of<T: Serialize>(what: &'static str, value: &T) -> Result<String> {
    match serde_json::to_value(value).map_err(|source| Error::Encode { what, source })? {
        Value::String(name) => Ok(name),
        other => Ok(other.to_string()),
    }
}

/// `usize` limits as database integers.
pub(crate) fn limit(value: usize) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// `u64` counters as database integers.
pub(crate) fn int(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}
