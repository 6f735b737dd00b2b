//! Integration tests of the agent loop with a fake model, fake tools and a fake policy.

mod fakes;
mod loop_tests;
mod resume_tests;
