//! Integration tests of the agent loop with a fake model, fake tools and a fake policy.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code panics on broken fixtures"
)]

mod budget_tests;
mod changeset_tests;
mod fakes;
mod loop_tests;
mod props;
mod resume_tests;
