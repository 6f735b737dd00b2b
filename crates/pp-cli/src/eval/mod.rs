//! The eval runner: JSON cases run through the real loop, gate and tools against a
//! scripted model in a throw-away workspace, then checked.
//!
//! The case format is documented in `docs/evals.md`.

mod case;
mod mcp;
mod runner;
mod tree;

pub(crate) use case::Case;
pub(crate) use runner::run_case;
pub(crate) use tree::resolve_fixtures;
