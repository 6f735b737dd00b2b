//! The SQLite-only tests, each inherently about SQLite: file modes and WAL files, rows
//! damaged or inspected by hand through `rusqlite`, old schema versions, backup and
//! restore of the file, several processes opening one fresh file. Everything else is
//! generic and runs on both backends (`both!`).

mod backup;
mod corrupt;
mod open;
mod raw_rows;
