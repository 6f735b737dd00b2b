//! Turning rows into records and values into columns, once for both backends.
//!
//! A backend reads a row's columns in order through [`Columns`] into a plain `Raw*`
//! struct (strings and integers: this fails only if the database itself does) and the
//! struct decodes itself here, so a row that does not decode becomes
//! [`crate::Error::Corrupt`] naming the table, column and row, never a panic, and the
//! two backends cannot drift apart in how they read a record.

mod changes;
mod columns;
pub(crate) mod inserted;
mod records;
mod schedules;

pub(crate) use changes::{RawChange, mode_columns};
pub(crate) use columns::{
    Columns, FromColumns, decode_json, decode_name, encode, encode_opt, int, limit, name_of,
};
pub(crate) use records::{RawApproval, RawAudit, RawEvent, RawTask, approval_state};
pub(crate) use schedules::{
    HISTORY_COLUMNS, History, RawSchedule, RawScheduleEvent, SCHEDULE_COLUMNS, SCHEDULE_FROM,
    enabled_next,
};
