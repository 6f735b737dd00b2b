//! The agent loop: asks the model for a turn, checks every tool call it requests through
//! an injected policy callback, runs what is allowed, and stops with a checkpoint before
//! anything that needs a person's approval.
//!
//! Main types: [`Agent`] (the loop), [`Model`] and [`Tool`] (the traits providers and
//! tools implement), [`ToolRegistry`], [`Outcome`]. This crate depends only on
//! `pp-types`: the gate arrives as a [`pp_types::Policy`] trait object and nothing here
//! persists anything; `pp-tasks` and `pp-cli` store checkpoints and call
//! [`Agent::resume_all`] (or [`Agent::resume`] for a single pending call).
//!
//! Changesets: when a turn's calls need approval, the run suspends once with all of them
//! ([`pp_types::Checkpoint::pending_calls`]), answering at once the calls that cannot
//! run and, with [`AFTER_EARLIER_MESSAGE`], those whose target is the same as or beneath
//! an earlier pending call's ([`same_or_beneath`]). [`Agent::resume_all`] takes one
//! [`Resolution`] per pending call and runs the rest of the turn in the model's order;
//! a [`BeforeApprovedCall`] hook, set with [`Agent::with_before_approved_call`], checks
//! each approved call right before it runs.
//!
//! ```
//! use pp_agent::schema;
//! use serde_json::json;
//! let schema = json!({"type": "object", "required": ["path"]});
//! assert!(schema::validate(&schema, &json!({})).is_err());
//! ```

mod agent;
mod budget;
mod changeset;
mod context;
mod invocation;
mod model;
mod outcome;
mod prompt;
pub mod schema;
mod sink;
mod tool;

pub use agent::{Agent, Limits, NOT_RUN_MESSAGE, check_edit};
pub use budget::estimate_next_call;
pub use changeset::{AFTER_EARLIER_MESSAGE, BeforeApprovedCall, same_or_beneath};
pub use context::{Trimmed, estimate_tokens, trim_to_window};
pub use invocation::{InFlight, Interrupt, ToolContext};
pub use model::{
    BoxFuture, Model, ModelError, ModelErrorKind, ModelRequest, ModelResponse, ToolDefinition,
};
pub use outcome::{DecisionProblem, Outcome, Resolution, ResumeError};
pub use prompt::{PromptContext, system_prompt};
pub use sink::{EventLog, EventSink, NoEvents};
pub use tool::{RegistryError, Tool, ToolRegistry};
