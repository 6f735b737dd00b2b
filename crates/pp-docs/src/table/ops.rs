//! The operations of `analyze_table` on a loaded [`Table`]: `schema`, `describe`,
//! `head`, `filter`, `sort`, `group_by` (a hash-map engine), each answering a
//! [`ResultSet`]. `sql` runs elsewhere ([`super::sql`]).
//!
//! Conditions (`where`, all must hold): `=` (also `==`), `!=`, `<`, `<=`, `>`, `>=`
//! compare with the column's type (a numeric column needs a number, a boolean one
//! `true`/`false`, a date column an ISO date or its prefix, compared as text);
//! `contains` and `starts_with` match the cell's text ignoring case; `in` takes an array;
//! `is_null` and `not_null` take no value. A null cell matches only `is_null` (and
//! `!=`, never: like SQL, nulls compare as unknown).

use std::cmp::Ordering;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value as Json;

use super::bounded::{Gather, RawCell};
use super::infer::{parse_bool, parse_date, parse_float, parse_int};
use super::{Cell, ColumnType, Table};
use crate::DocsError;

/// Rows returned when the call names no `limit` (`head` returns 10).
pub const DEFAULT_LIMIT: usize = 200;

/// The most rows one call returns.
pub const MAX_LIMIT: usize = 1000;

/// What to do with the table: the arguments of `analyze_table` (unknown fields, like
/// `path`, are ignored). Serialised too: it travels to the parser child in a job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Query {
    /// The operation.
    pub op: Op,
    /// The columns to show (all when absent).
    #[serde(default)]
    pub columns: Option<Vec<String>>,
    /// Conditions every row kept must meet.
    #[serde(default, rename = "where")]
    pub conditions: Vec<Condition>,
    /// `group_by`: the key columns (a name or a list).
    #[serde(default, deserialize_with = "one_or_many")]
    pub by: Vec<String>,
    /// `group_by`: what to compute per group (default: `count`).
    #[serde(default)]
    pub aggregates: Vec<Aggregate>,
    /// The column to sort by (for `group_by`, any output column).
    #[serde(default)]
    pub order_by: Option<String>,
    /// Sort from the largest.
    #[serde(default)]
    pub descending: bool,
    /// The most rows to return (capped at [`MAX_LIMIT`]).
    #[serde(default)]
    pub limit: Option<usize>,
    /// `sql`: one `SELECT` on the table `t`.
    #[serde(default)]
    pub sql: Option<String>,
}

pp_types::wire_enum! {
    /// An operation.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Op {
        /// Columns, types, null counts.
        Schema => "schema",
        /// Per column statistics.
        Describe => "describe",
        /// The first rows.
        Head => "head",
        /// The rows meeting `where`.
        Filter => "filter",
        /// The rows sorted by `order_by`.
        Sort => "sort",
        /// Aggregates per group of `by`.
        GroupBy => "group_by",
        /// A SQL `SELECT` on the table `t`.
        Sql => "sql",
    }
}

/// The names of the operations, for schemas and messages.
pub const OPS: [&str; 7] = Op::NAMES;

/// One condition of `where`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Condition {
    /// The column.
    pub column: String,
    /// The comparison.
    pub op: CondOp,
    /// What to compare with (an array for `in`; none for `is_null`/`not_null`).
    #[serde(default)]
    pub value: Json,
}

pp_types::wire_enum! {
    /// A comparison of a condition.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum CondOp {
        /// Equal.
        #[serde(alias = "==")]
        Eq => "=",
        /// Not equal.
        #[serde(alias = "<>")]
        Ne => "!=",
        /// Less than.
        Lt => "<",
        /// At most.
        Le => "<=",
        /// Greater than.
        Gt => ">",
        /// At least.
        Ge => ">=",
        /// The text contains the value (ignoring case).
        Contains => "contains",
        /// The text starts with the value (ignoring case).
        StartsWith => "starts_with",
        /// Equal to one of the values of an array.
        In => "in",
        /// Empty.
        IsNull => "is_null",
        /// Not empty.
        NotNull => "not_null",
    }
}

/// The names of the comparisons, for schemas and messages.
pub const CONDITION_OPS: [&str; 11] = CondOp::NAMES;

/// One aggregate of `group_by`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Aggregate {
    /// The column (optional for `count`: then rows are counted).
    #[serde(default)]
    pub column: Option<String>,
    /// The function.
    #[serde(rename = "fn")]
    pub function: AggregateFn,
}

pp_types::wire_enum! {
    /// An aggregate function.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum AggregateFn {
        /// Non-null values (rows without a column).
        Count => "count",
        /// Sum of a numeric column.
        Sum => "sum",
        /// Mean of a numeric column.
        Mean => "mean",
        /// Smallest value.
        Min => "min",
        /// Largest value.
        Max => "max",
    }
}

/// The names of the aggregate functions, for schemas and messages.
pub const AGGREGATE_FNS: [&str; 5] = AggregateFn::NAMES;

/// What an operation answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultSet {
    /// The result's column names.
    pub columns: Vec<String>,
    /// The rows returned.
    pub rows: Vec<Vec<Json>>,
    /// Whether there were more rows than returned.
    pub truncated: bool,
    /// How many rows the operation produced before the limit.
    pub total_rows: usize,
    /// How many cells were cut to fit the answer's size ([`super::bounded`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cut_cells: usize,
    /// Whether rows were left out to fit the answer's size (not only the `limit`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cut_for_size: bool,
}

fn is_zero(count: &usize) -> bool {
    *count == 0
}

impl ResultSet {
    /// The same result with its rows and cells cut to fit `max_chars` characters of
    /// JSON ([`super::bounded::Gather`]).
    pub fn bounded(self, max_chars: usize) -> ResultSet {
        let mut gather = Gather::new(max_chars, usize::MAX);
        let mut all_in = true;
        for row in &self.rows {
            let cells: Vec<RawCell<'_>> = row.iter().map(RawCell::Json).collect();
            if !gather.push(&cells) {
                all_in = false;
                break;
            }
        }
        let (rows, cut_cells, cut_for_size) = gather.finish();
        ResultSet {
            columns: self.columns,
            rows,
            truncated: self.truncated || !all_in,
            total_rows: self.total_rows,
            cut_cells: self.cut_cells + cut_cells,
            cut_for_size: self.cut_for_size || cut_for_size,
        }
    }
}

fn one_or_many<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match Option::<OneOrMany>::deserialize(deserializer)? {
        None => Vec::new(),
        Some(OneOrMany::One(one)) => vec![one],
        Some(OneOrMany::Many(many)) => many,
    })
}

/// Runs `query` (any op but `sql`) on `table`.
pub fn run(table: &Table, query: &Query) -> Result<ResultSet, DocsError> {
    if query.sql.is_some() && query.op != Op::Sql {
        return Err(bad("`sql` is only for op \"sql\""));
    }
    let default_limit = if query.op == Op::Head {
        10
    } else {
        DEFAULT_LIMIT
    };
    let limit = query.limit.unwrap_or(default_limit).min(MAX_LIMIT);
    match query.op {
        Op::Schema => schema(table, query, limit),
        Op::Describe => describe(table, query, limit),
        Op::Head | Op::Filter | Op::Sort => rows(table, query, limit),
        Op::GroupBy => group_by(table, query, limit),
        Op::Sql => Err(bad("op \"sql\" runs on the SQL engine, not here")),
    }
}

fn bad(message: &str) -> DocsError {
    DocsError::BadRequest(message.to_owned())
}

/// The indices of the selected columns (all when `columns` is absent).
fn selected(table: &Table, query: &Query) -> Result<Vec<usize>, DocsError> {
    match &query.columns {
        None => Ok((0..table.columns.len()).collect()),
        Some(names) if names.is_empty() => Err(bad(
            "`columns` is empty; name at least one column or leave it out for all",
        )),
        Some(names) => names.iter().map(|name| table.column_index(name)).collect(),
    }
}

/// A result of at most `limit` of `rows`.
fn finish(columns: Vec<String>, mut rows: Vec<Vec<Json>>, limit: usize) -> ResultSet {
    let total_rows = rows.len();
    rows.truncate(limit);
    ResultSet {
        columns,
        truncated: total_rows > rows.len(),
        rows,
        total_rows,
        cut_cells: 0,
        cut_for_size: false,
    }
}

fn schema(table: &Table, query: &Query, limit: usize) -> Result<ResultSet, DocsError> {
    let columns = selected(table, query)?;
    let rows = columns
        .into_iter()
        .map(|index| {
            let column = &table.columns[index];
            let nulls = column
                .values
                .iter()
                .filter(|cell| **cell == Cell::Null)
                .count();
            let example = column
                .values
                .iter()
                .find(|cell| **cell != Cell::Null)
                .map_or(Json::Null, Cell::to_json);
            vec![
                Json::from(column.name.as_str()),
                Json::from(column.kind.as_str()),
                Json::from(column.values.len() - nulls),
                Json::from(nulls),
                example,
            ]
        })
        .collect();
    Ok(finish(
        names(&["column", "type", "non_null", "nulls", "example"]),
        rows,
        limit.max(MAX_LIMIT),
    ))
}

fn names(names: &[&str]) -> Vec<String> {
    names.iter().map(|name| (*name).to_owned()).collect()
}

/// The rows meeting every condition of `query`.
fn matching(table: &Table, query: &Query) -> Result<Vec<usize>, DocsError> {
    let conditions: Vec<Compiled> = query
        .conditions
        .iter()
        .map(|condition| Compiled::new(table, condition))
        .collect::<Result<_, _>>()?;
    Ok((0..table.row_count)
        .filter(|&row| {
            conditions
                .iter()
                .all(|condition| condition.holds(table, row))
        })
        .collect())
}

fn describe(table: &Table, query: &Query, limit: usize) -> Result<ResultSet, DocsError> {
    let columns = selected(table, query)?;
    let rows_kept = matching(table, query)?;
    let mut out = Vec::new();
    for index in columns {
        let column = &table.columns[index];
        let cells = || rows_kept.iter().map(|&row| &column.values[row]);
        let count = cells().filter(|cell| **cell != Cell::Null).count();
        let nulls = rows_kept.len() - count;
        let mut min: Option<&Cell> = None;
        let mut max: Option<&Cell> = None;
        let mut counts: HashMap<Key<'_>, (usize, &Cell), Fx> = HashMap::default();
        let mut sum = 0.0;
        for cell in cells().filter(|cell| **cell != Cell::Null) {
            if min.is_none_or(|min| compare(cell, min) == Ordering::Less) {
                min = Some(cell);
            }
            if max.is_none_or(|max| compare(cell, max) == Ordering::Greater) {
                max = Some(cell);
            }
            sum += cell.as_f64().unwrap_or(0.0);
            counts.entry(Key::of(cell)).or_insert((0, cell)).0 += 1;
        }
        let mean = if column.kind.is_numeric() && count > 0 {
            #[expect(clippy::cast_precision_loss, reason = "a statistic")]
            let mean = sum / count as f64;
            Cell::Float(mean).to_json()
        } else {
            Json::Null
        };
        let top = if column.kind.is_numeric() {
            Json::Null
        } else {
            let mut top: Vec<(usize, &Cell)> = counts.values().copied().collect();
            top.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| compare(a.1, b.1)));
            let text: Vec<String> = top
                .iter()
                .take(5)
                .map(|(count, cell)| format!("{} ({count})", cell.to_text()))
                .collect();
            Json::from(text.join(", "))
        };
        out.push(vec![
            Json::from(column.name.as_str()),
            Json::from(column.kind.as_str()),
            Json::from(count),
            Json::from(nulls),
            Json::from(counts.len()),
            min.map_or(Json::Null, Cell::to_json),
            max.map_or(Json::Null, Cell::to_json),
            mean,
            top,
        ]);
    }
    Ok(finish(
        names(&[
            "column", "type", "count", "nulls", "distinct", "min", "max", "mean", "top",
        ]),
        out,
        limit.max(MAX_LIMIT),
    ))
}

fn rows(table: &Table, query: &Query, limit: usize) -> Result<ResultSet, DocsError> {
    let columns = selected(table, query)?;
    if !query.by.is_empty() || !query.aggregates.is_empty() {
        return Err(bad("`by` and `aggregates` are for op \"group_by\""));
    }
    let mut kept = matching(table, query)?;
    match (&query.order_by, query.op) {
        (None, Op::Sort) => {
            return Err(DocsError::BadRequest(format!(
                "op \"sort\" needs `order_by`, one of the columns: {}",
                table.column_names().join(", ")
            )));
        }
        (Some(name), _) => {
            let values = &table.columns[table.column_index(name)?].values;
            kept.sort_by(|&a, &b| ordered(&values[a], &values[b], query.descending));
        }
        (None, _) => {}
    }
    let total_rows = kept.len();
    let rows = kept
        .into_iter()
        .take(limit)
        .map(|row| {
            columns
                .iter()
                .map(|&column| table.columns[column].values[row].to_json())
                .collect()
        })
        .collect::<Vec<Vec<Json>>>();
    Ok(ResultSet {
        columns: columns
            .iter()
            .map(|&column| table.columns[column].name.clone())
            .collect(),
        truncated: total_rows > rows.len(),
        rows,
        total_rows,
        cut_cells: 0,
        cut_for_size: false,
    })
}

/// The order of two cells for sorting: nulls last in both directions.
fn ordered(a: &Cell, b: &Cell, descending: bool) -> Ordering {
    match (a, b) {
        (Cell::Null, Cell::Null) => Ordering::Equal,
        (Cell::Null, _) => Ordering::Greater,
        (_, Cell::Null) => Ordering::Less,
        _ if descending => compare(b, a),
        _ => compare(a, b),
    }
}

/// A total order on cells: null, booleans, numbers (integers and floats together),
/// text.
pub(super) fn compare(a: &Cell, b: &Cell) -> Ordering {
    fn rank(cell: &Cell) -> u8 {
        match cell {
            Cell::Null => 0,
            Cell::Bool(_) => 1,
            Cell::Int(_) | Cell::Float(_) => 2,
            Cell::Text(_) => 3,
        }
    }
    match (a, b) {
        (Cell::Bool(a), Cell::Bool(b)) => a.cmp(b),
        (Cell::Int(a), Cell::Int(b)) => a.cmp(b),
        (Cell::Text(a), Cell::Text(b)) => a.cmp(b),
        (Cell::Int(_) | Cell::Float(_), Cell::Int(_) | Cell::Float(_)) => a
            .as_f64()
            .unwrap_or(0.0)
            .total_cmp(&b.as_f64().unwrap_or(0.0)),
        _ => rank(a).cmp(&rank(b)),
    }
}

/// A condition checked against the column's type.
struct Compiled {
    column: usize,
    op: CondOp,
    /// The operands (one; several for `in`; none for the null tests).
    operands: Vec<Cell>,
    /// `contains` / `starts_with`: the lower-case text.
    needle: String,
}

impl Compiled {
    fn new(table: &Table, condition: &Condition) -> Result<Self, DocsError> {
        let column = table.column_index(&condition.column)?;
        let kind = table.columns[column].kind;
        let name = &condition.column;
        let mut operands = Vec::new();
        let mut needle = String::new();
        match condition.op {
            CondOp::IsNull | CondOp::NotNull => {}
            CondOp::Contains | CondOp::StartsWith => {
                needle = match &condition.value {
                    Json::String(text) => text.to_lowercase(),
                    Json::Null => {
                        return Err(DocsError::BadRequest(format!(
                            "condition on {name:?}: `contains`/`starts_with` need a `value`"
                        )));
                    }
                    other => other.to_string().to_lowercase(),
                };
            }
            CondOp::In => {
                let Json::Array(values) = &condition.value else {
                    return Err(DocsError::BadRequest(format!(
                        "condition on {name:?}: `in` needs an array `value`, e.g. [\"a\", \"b\"]"
                    )));
                };
                for value in values {
                    operands.push(operand(name, kind, value)?);
                }
            }
            _ => operands.push(operand(name, kind, &condition.value)?),
        }
        Ok(Self {
            column,
            op: condition.op,
            operands,
            needle,
        })
    }

    fn holds(&self, table: &Table, row: usize) -> bool {
        let cell = &table.columns[self.column].values[row];
        match self.op {
            CondOp::IsNull => return *cell == Cell::Null,
            CondOp::NotNull => return *cell != Cell::Null,
            _ if *cell == Cell::Null => return false,
            _ => {}
        }
        let first = || {
            self.operands
                .first()
                .map_or(Ordering::Equal, |operand| compare(cell, operand))
        };
        match self.op {
            CondOp::Eq => first() == Ordering::Equal,
            CondOp::Ne => first() != Ordering::Equal,
            CondOp::Lt => first() == Ordering::Less,
            CondOp::Le => first() != Ordering::Greater,
            CondOp::Gt => first() == Ordering::Greater,
            CondOp::Ge => first() != Ordering::Less,
            CondOp::In => self
                .operands
                .iter()
                .any(|operand| compare(cell, operand) == Ordering::Equal),
            CondOp::Contains => lower_text(cell).contains(&self.needle),
            CondOp::StartsWith => lower_text(cell).starts_with(&self.needle),
            CondOp::IsNull | CondOp::NotNull => false,
        }
    }
}

fn lower_text(cell: &Cell) -> String {
    match cell {
        Cell::Text(text) => text.to_lowercase(),
        other => other.to_text().to_lowercase(),
    }
}

/// A condition's value as a cell of the column's type, or a clear error.
fn operand(name: &str, kind: ColumnType, value: &Json) -> Result<Cell, DocsError> {
    let wrong = |expected: &str| {
        DocsError::BadRequest(format!(
            "condition on {name:?}: the column is {}, so `value` must be {expected}, not {value}",
            kind.as_str()
        ))
    };
    match kind {
        ColumnType::Integer | ColumnType::Float => match value {
            Json::Number(number) => Ok(number
                .as_i64()
                .map(Cell::Int)
                .or_else(|| number.as_f64().map(Cell::Float))
                .unwrap_or(Cell::Null)),
            Json::String(text) => parse_int(text.trim())
                .map(Cell::Int)
                .or_else(|| parse_float(text.trim()).map(Cell::Float))
                .ok_or_else(|| wrong("a number")),
            _ => Err(wrong("a number")),
        },
        ColumnType::Boolean => match value {
            Json::Bool(value) => Ok(Cell::Bool(*value)),
            Json::String(text) => parse_bool(text.trim())
                .map(Cell::Bool)
                .ok_or_else(|| wrong("true or false")),
            _ => Err(wrong("true or false")),
        },
        ColumnType::Date => match value {
            Json::String(text) => Ok(Cell::Text(
                parse_date(text.trim()).unwrap_or_else(|| text.trim().to_owned()),
            )),
            _ => Err(wrong("an ISO date such as \"2024-03-31\"")),
        },
        ColumnType::Text => match value {
            Json::String(text) => Ok(Cell::Text(text.clone())),
            Json::Null | Json::Array(_) | Json::Object(_) => Err(wrong("a string")),
            other => Ok(Cell::Text(other.to_string())),
        },
    }
}

/// A hashable view of a cell (floats by their bits, `-0.0` as `0.0`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Key<'a> {
    Null,
    Bool(bool),
    Int(i64),
    Float(u64),
    Text(&'a str),
}

impl<'a> Key<'a> {
    fn of(cell: &'a Cell) -> Self {
        match cell {
            Cell::Null => Key::Null,
            Cell::Bool(value) => Key::Bool(*value),
            Cell::Int(value) => Key::Int(*value),
            Cell::Float(value) => Key::Float(if *value == 0.0 { 0 } else { value.to_bits() }),
            Cell::Text(text) => Key::Text(text),
        }
    }
}

/// A fast, non-cryptographic hasher (FxHash): group keys come from the table, and a
/// crafted file can at worst slow its own query down.
#[derive(Default, Clone, Copy)]
struct FxHasher(u64);

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FxHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let mut rest = [0; 8];
        let remainder = chunks.remainder();
        rest[..remainder.len()].copy_from_slice(remainder);
        self.add(u64::from_le_bytes(rest));
    }
    fn write_u8(&mut self, value: u8) {
        self.add(u64::from(value));
    }
    fn write_u64(&mut self, value: u64) {
        self.add(value);
    }
    fn write_i64(&mut self, value: i64) {
        self.add(value.cast_unsigned());
    }
    fn write_usize(&mut self, value: usize) {
        self.add(value as u64);
    }
}

type Fx = BuildHasherDefault<FxHasher>;

/// Numbers each group in first-seen order: the group of every kept row, and one row
/// of each group (for its key).
fn number_groups<K: Hash + Eq>(kept: &[usize], key: impl Fn(usize) -> K) -> (Vec<u32>, Vec<usize>) {
    let mut ids: HashMap<K, u32, Fx> = HashMap::default();
    let mut group_of = Vec::with_capacity(kept.len());
    let mut first_rows = Vec::new();
    for &row in kept {
        let next = u32::try_from(first_rows.len()).unwrap_or(u32::MAX);
        let id = *ids.entry(key(row)).or_insert_with(|| {
            first_rows.push(row);
            next
        });
        group_of.push(id);
    }
    (group_of, first_rows)
}

fn group_by(table: &Table, query: &Query, limit: usize) -> Result<ResultSet, DocsError> {
    if query.by.is_empty() {
        return Err(DocsError::BadRequest(format!(
            "op \"group_by\" needs `by`: one or more of the columns: {}",
            table.column_names().join(", ")
        )));
    }
    let keys: Vec<usize> = query
        .by
        .iter()
        .map(|name| table.column_index(name))
        .collect::<Result<_, _>>()?;
    let default = [Aggregate {
        column: None,
        function: AggregateFn::Count,
    }];
    let aggregates = if query.aggregates.is_empty() {
        &default[..]
    } else {
        &query.aggregates[..]
    };
    let mut targets = Vec::with_capacity(aggregates.len());
    for aggregate in aggregates {
        let target = match &aggregate.column {
            None if aggregate.function == AggregateFn::Count => None,
            None => {
                return Err(DocsError::BadRequest(format!(
                    "aggregate {:?} needs a `column`",
                    aggregate.function.as_str()
                )));
            }
            Some(name) => {
                let index = table.column_index(name)?;
                let kind = table.columns[index].kind;
                if matches!(aggregate.function, AggregateFn::Sum | AggregateFn::Mean)
                    && !kind.is_numeric()
                {
                    return Err(DocsError::BadRequest(format!(
                        "{} needs a numeric column; {name:?} is {} (use count, min or max)",
                        aggregate.function.as_str(),
                        kind.as_str()
                    )));
                }
                Some(index)
            }
        };
        targets.push(target);
    }
    let kept = matching(table, query)?;
    let (group_of, first_rows) = if let [only] = keys[..] {
        let values = &table.columns[only].values;
        number_groups(&kept, |row| Key::of(&values[row]))
    } else {
        number_groups(&kept, |row| {
            keys.iter()
                .map(|&column| Key::of(&table.columns[column].values[row]))
                .collect::<Vec<_>>()
        })
    };
    let groups = first_rows.len();
    let mut output_columns: Vec<String> = query.by.clone();
    let mut results: Vec<Vec<Json>> = Vec::with_capacity(aggregates.len());
    for (aggregate, target) in aggregates.iter().zip(&targets) {
        output_columns.push(match target {
            None => AggregateFn::Count.as_str().to_owned(),
            Some(index) => format!(
                "{}({})",
                aggregate.function.as_str(),
                table.columns[*index].name
            ),
        });
        results.push(aggregate_column(
            table,
            aggregate.function,
            *target,
            &kept,
            &group_of,
            groups,
        ));
    }
    let mut rows: Vec<Vec<Json>> = first_rows
        .iter()
        .enumerate()
        .map(|(group, &row)| {
            let mut out: Vec<Json> = keys
                .iter()
                .map(|&column| table.columns[column].values[row].to_json())
                .collect();
            out.extend(results.iter().map(|result| result[group].clone()));
            out
        })
        .collect();
    let sort_at = match &query.order_by {
        None => None,
        Some(name) => Some(
            output_columns
                .iter()
                .position(|column| column == name)
                .ok_or_else(|| {
                    DocsError::BadRequest(format!(
                        "`order_by` {name:?} is not a column of the result; its columns are: {}",
                        output_columns.join(", ")
                    ))
                })?,
        ),
    };
    match sort_at {
        Some(at) => {
            rows.sort_by(|a, b| ordered(&json_cell(&a[at]), &json_cell(&b[at]), query.descending))
        }
        None => rows.sort_by(|a, b| {
            (0..keys.len())
                .map(|at| ordered(&json_cell(&a[at]), &json_cell(&b[at]), query.descending))
                .find(|order| *order != Ordering::Equal)
                .unwrap_or(Ordering::Equal)
        }),
    }
    Ok(finish(output_columns, rows, limit))
}

/// A result value back as a cell, to sort by.
fn json_cell(value: &Json) -> Cell {
    match value {
        Json::Bool(value) => Cell::Bool(*value),
        Json::Number(number) => number
            .as_i64()
            .map(Cell::Int)
            .or_else(|| number.as_f64().map(Cell::Float))
            .unwrap_or(Cell::Null),
        Json::String(text) => Cell::Text(text.clone()),
        _ => Cell::Null,
    }
}

/// One aggregate for every group.
fn aggregate_column(
    table: &Table,
    function: AggregateFn,
    target: Option<usize>,
    kept: &[usize],
    group_of: &[u32],
    groups: usize,
) -> Vec<Json> {
    let Some(column) = target else {
        let mut counts = vec![0u64; groups];
        for &group in group_of {
            counts[group as usize] += 1;
        }
        return counts.into_iter().map(Json::from).collect();
    };
    let values = &table.columns[column].values;
    let rows = kept.iter().zip(group_of).filter_map(|(&row, &group)| {
        let cell = &values[row];
        (*cell != Cell::Null).then_some((group as usize, cell))
    });
    match function {
        AggregateFn::Count => {
            let mut counts = vec![0u64; groups];
            for (group, _) in rows {
                counts[group] += 1;
            }
            counts.into_iter().map(Json::from).collect()
        }
        AggregateFn::Sum | AggregateFn::Mean => {
            let mut counts = vec![0u64; groups];
            let mut integers = vec![0i128; groups];
            let mut floats = vec![0f64; groups];
            for (group, cell) in rows {
                counts[group] += 1;
                match cell {
                    Cell::Int(value) => integers[group] += i128::from(*value),
                    Cell::Float(value) => floats[group] += value,
                    _ => {}
                }
            }
            let integer = table.columns[column].kind == ColumnType::Integer;
            (0..groups)
                .map(|group| {
                    #[expect(clippy::cast_precision_loss, reason = "statistics")]
                    let total = integers[group] as f64 + floats[group];
                    match function {
                        AggregateFn::Mean if counts[group] == 0 => Json::Null,
                        #[expect(clippy::cast_precision_loss, reason = "statistics")]
                        AggregateFn::Mean => Cell::Float(total / counts[group] as f64).to_json(),
                        _ if integer => i64::try_from(integers[group])
                            .map_or_else(|_| Cell::Float(total).to_json(), Json::from),
                        _ => Cell::Float(total).to_json(),
                    }
                })
                .collect()
        }
        AggregateFn::Min | AggregateFn::Max => {
            let wanted = if function == AggregateFn::Min {
                Ordering::Less
            } else {
                Ordering::Greater
            };
            let mut best: Vec<Option<&Cell>> = vec![None; groups];
            for (group, cell) in rows {
                if best[group].is_none_or(|best| compare(cell, best) == wanted) {
                    best[group] = Some(cell);
                }
            }
            best.into_iter()
                .map(|cell| cell.map_or(Json::Null, Cell::to_json))
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Format;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn table() -> Table {
        crate::table::load(
            b"region,product,amount,qty,day,paid\n\
              north,apple,10.5,1,2024-01-03,true\n\
              south,pear,4,2,2024-02-01,false\n\
              north,pear,,3,2024-01-20,true\n\
              east,Apple pie,7.25,,2024-03-05,\n\
              south,apple,1,5,2024-02-10,true\n",
            Format::Csv,
            None,
            100,
        )
        .unwrap()
    }

    fn query(value: Json) -> Query {
        serde_json::from_value(value).unwrap()
    }

    fn run_json(value: Json) -> Result<ResultSet, DocsError> {
        run(&table(), &query(value))
    }

    #[test]
    fn schema_lists_types_and_nulls() {
        let result = run_json(json!({"op": "schema"})).unwrap();
        assert_eq!(
            result.columns,
            ["column", "type", "non_null", "nulls", "example"]
        );
        let types: Vec<_> = result.rows.iter().map(|row| row[1].clone()).collect();
        assert_eq!(
            types,
            [
                json!("text"),
                json!("text"),
                json!("float"),
                json!("integer"),
                json!("date"),
                json!("boolean")
            ]
        );
        assert_eq!(
            result.rows[2],
            vec![
                json!("amount"),
                json!("float"),
                json!(4),
                json!(1),
                json!(10.5)
            ]
        );
    }

    #[test]
    fn describe_gives_numbers_and_top_values() {
        let result = run_json(json!({"op": "describe", "columns": ["amount", "region"]})).unwrap();
        assert_eq!(result.rows[0][2], json!(4));
        assert_eq!(result.rows[0][3], json!(1));
        assert_eq!(result.rows[0][5], json!(1.0));
        assert_eq!(result.rows[0][6], json!(10.5));
        assert_eq!(result.rows[0][7], json!(5.6875));
        assert_eq!(result.rows[1][8], json!("north (2), south (2), east (1)"));
        assert_eq!(result.rows[1][4], json!(3));
    }

    #[test]
    fn filter_sort_and_head() {
        let result = run_json(json!({
            "op": "filter",
            "where": [{"column": "product", "op": "contains", "value": "APPLE"},
                      {"column": "day", "op": ">=", "value": "2024-02"}],
            "columns": ["region", "amount"],
            "order_by": "amount",
            "descending": true
        }))
        .unwrap();
        assert_eq!(
            result.rows,
            vec![
                vec![json!("east"), json!(7.25)],
                vec![json!("south"), json!(1.0)]
            ]
        );
        assert!(!result.truncated);

        let result = run_json(json!({"op": "sort", "order_by": "amount", "limit": 2})).unwrap();
        assert_eq!(result.total_rows, 5);
        assert!(result.truncated);
        assert_eq!(result.rows[0][2], json!(1.0));

        let result =
            run_json(json!({"op": "sort", "order_by": "amount", "descending": true})).unwrap();
        assert_eq!(result.rows[4][2], json!(null), "nulls last");

        let result = run_json(json!({"op": "head", "limit": 1})).unwrap();
        assert_eq!(result.rows[0][0], json!("north"));
        assert_eq!(result.rows.len(), 1);
    }

    #[test]
    fn every_condition_op_works() {
        let count = |condition: Json| {
            run_json(json!({"op": "filter", "where": [condition]}))
                .unwrap()
                .total_rows
        };
        assert_eq!(count(json!({"column": "qty", "op": "=", "value": 2})), 1);
        assert_eq!(count(json!({"column": "qty", "op": "!=", "value": 2})), 3);
        assert_eq!(count(json!({"column": "qty", "op": "<", "value": "3"})), 2);
        assert_eq!(count(json!({"column": "qty", "op": "<=", "value": 3})), 3);
        assert_eq!(count(json!({"column": "amount", "op": ">", "value": 4})), 2);
        assert_eq!(
            count(json!({"column": "amount", "op": ">=", "value": 4})),
            3
        );
        assert_eq!(
            count(json!({"column": "product", "op": "starts_with", "value": "ap"})),
            3
        );
        assert_eq!(
            count(json!({"column": "region", "op": "in", "value": ["east", "south"]})),
            3
        );
        assert_eq!(count(json!({"column": "paid", "op": "is_null"})), 1);
        assert_eq!(count(json!({"column": "paid", "op": "not_null"})), 4);
        assert_eq!(
            count(json!({"column": "paid", "op": "=", "value": true})),
            3
        );
        assert_eq!(
            count(json!({"column": "day", "op": "<", "value": "2024/2/1"})),
            2
        );
    }

    #[test]
    fn bad_requests_name_the_valid_choices() {
        let message = |value: Json| run_json(value).unwrap_err().to_string();
        let unknown =
            message(json!({"op": "filter", "where": [{"column": "nope", "op": "=", "value": 1}]}));
        assert!(unknown.contains("region, product, amount"), "{unknown}");
        let typed = message(
            json!({"op": "filter", "where": [{"column": "qty", "op": "=", "value": "many"}]}),
        );
        assert!(
            typed.contains("integer") && typed.contains("a number"),
            "{typed}"
        );
        let sum = message(
            json!({"op": "group_by", "by": "region", "aggregates": [{"column": "product", "fn": "sum"}]}),
        );
        assert!(sum.contains("numeric"), "{sum}");
        assert!(message(json!({"op": "group_by"})).contains("needs `by`"));
        assert!(message(json!({"op": "sort"})).contains("order_by"));
        let bad_op = serde_json::from_value::<Query>(json!({"op": "pivot"}))
            .unwrap_err()
            .to_string();
        assert!(bad_op.contains("group_by"), "{bad_op}");
        let bad_fn = serde_json::from_value::<Query>(
            json!({"op": "group_by", "aggregates": [{"fn": "median"}]}),
        )
        .unwrap_err()
        .to_string();
        assert!(bad_fn.contains("mean"), "{bad_fn}");
        let bad_cond = serde_json::from_value::<Query>(
            json!({"op": "filter", "where": [{"column": "a", "op": "~"}]}),
        )
        .unwrap_err()
        .to_string();
        assert!(bad_cond.contains("starts_with"), "{bad_cond}");
    }

    #[test]
    fn group_by_aggregates_per_group() {
        let result = run_json(json!({
            "op": "group_by",
            "by": "region",
            "aggregates": [{"fn": "count"}, {"column": "amount", "fn": "sum"},
                           {"column": "amount", "fn": "mean"}, {"column": "qty", "fn": "sum"},
                           {"column": "day", "fn": "max"}, {"column": "amount", "fn": "count"}]
        }))
        .unwrap();
        assert_eq!(
            result.columns,
            [
                "region",
                "count",
                "sum(amount)",
                "mean(amount)",
                "sum(qty)",
                "max(day)",
                "count(amount)"
            ]
        );
        assert_eq!(
            result.rows,
            vec![
                vec![
                    json!("east"),
                    json!(1),
                    json!(7.25),
                    json!(7.25),
                    json!(0),
                    json!("2024-03-05"),
                    json!(1)
                ],
                vec![
                    json!("north"),
                    json!(2),
                    json!(10.5),
                    json!(10.5),
                    json!(4),
                    json!("2024-01-20"),
                    json!(1)
                ],
                vec![
                    json!("south"),
                    json!(2),
                    json!(5.0),
                    json!(2.5),
                    json!(7),
                    json!("2024-02-10"),
                    json!(2)
                ],
            ]
        );
        let result = run_json(json!({
            "op": "group_by", "by": ["region", "paid"],
            "order_by": "count", "descending": true, "limit": 1
        }))
        .unwrap();
        assert_eq!(
            result.rows,
            vec![vec![json!("north"), json!(true), json!(2)]]
        );
        assert_eq!(result.total_rows, 4);
        assert!(result.truncated);
    }
}
