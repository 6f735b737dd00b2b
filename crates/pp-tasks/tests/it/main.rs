//! Integration tests of the task service over a real store, jail, tools and scripted model.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    reason = "tests set up fixtures with std::fs and panic on broken fixtures"
)]

mod acted_by;
mod changes;
mod changesets;
mod client;
mod commands;
mod edited;
mod file_ops;
mod fixture;
mod hardening;
mod lifecycle;
mod memory;
mod postgres;
mod precheck;
mod remote;
mod resolve;
mod restart;
mod revert_places;
mod seam;
mod sessions;
mod skills;
mod team;
mod usage;
