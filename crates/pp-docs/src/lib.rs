//! PocketPilot's document parsing: what `extract_document`, `analyze_table` and
//! `extract_invoice` (in `pp-tools`) understand of the bytes the workspace jail read.
//!
//! Parsers of hostile files must not be able to hurt the service (a loop, a stack
//! overflow on nested XML, a zip bomb), so parsing runs in a **child process**: the
//! [`runner::Parser`] starts `pocketpilot __parse` (whose body is [`child::main`]), feeds
//! it one [`job::Job`] and the file's bytes on stdin, and reads one [`job::JobOutput`]
//! from stdout, under CPU-time, memory, output and wall-clock limits; the child is killed
//! at the deadline and never outlives the call. The parsing itself ([`extract`],
//! [`table`], [`invoice`]) is plain synchronous code, testable in-process through
//! [`job::run_job`].
//!
//! `analyze_table`'s operations and SQL ([`table::analyze`], `Job::Analyze`) run in the
//! child too, on the table it just read: SQL on an in-memory SQLite database with every
//! door to files shut (authorizer, no `ATTACH`, `query_only`, row, time and size
//! limits), the answer cut to its size while the rows are read ([`table::bounded`]).
//! The parent kills the child soon after a query's time limit and when the caller's
//! stop check says so ([`Parser::run_until`]). This crate is rusqlite's second owner
//! for that reason only.
//!
//! Where it sits: depends on `pp-types` only; `pp-tools` builds the tools on it. It never
//! opens a path of the workspace itself: the tools read through the jail and hand bytes.

pub mod child;
pub mod error;
pub mod extract;
pub mod format;
pub mod invoice;
pub mod job;
pub mod layout;
pub mod runner;
pub mod table;

pub use error::DocsError;
pub use format::Format;
pub use job::{Job, JobOutput};
pub use runner::{Parser, ParserLimits};
