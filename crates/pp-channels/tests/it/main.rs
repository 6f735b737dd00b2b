//! Integration tests of the webhook channels over a real task service and store, on a
//! manual clock.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    reason = "tests set up fixtures with std::fs and panic on broken fixtures"
)]

mod channels;
mod team_key;
