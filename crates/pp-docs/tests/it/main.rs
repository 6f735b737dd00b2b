//! Integration tests of pp-docs (one binary, see STYLE T2).
#![allow(
    clippy::disallowed_methods,
    reason = "tests read the crate's own committed fixtures with std::fs, never workspace paths"
)]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers panic on setup failure, like the #[test] functions they serve"
)]

mod extract;
mod fixture_text;
mod fixtures_listed;
mod invoices;
mod support;
