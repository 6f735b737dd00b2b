//! Plain data shared by every PocketPilot crate: messages in the OpenAI chat shape, tool
//! specifications and capabilities, policy decisions, events and checkpoints.
//!
//! This crate sits at the bottom of the workspace: it depends on no other PocketPilot
//! crate and on nothing heavier than `serde` (and `rustix` for one thing). It holds no
//! IO and no async code, with one exception: [`open_files`], the process's open-file
//! limit, recorded here because every crate that starts a child can reach this one. The
//! one trait here, [`Policy`], is the callback the agent loop receives so that the loop
//! never depends on the gate that implements it.
//!
//! ```
//! use pp_types::{Capability, Decision};
//! let capability = Capability::new("mcp:files:read_text:READ");
//! assert_eq!(capability.action(), Some("read"));
//! assert!(matches!(Decision::Allow, Decision::Allow));
//! ```

mod audit;
mod capability;
mod change;
mod checkpoint;
mod decision;
mod event;
mod mcp;
mod message;
pub mod open_files;
mod prices;
mod task;
mod time;
mod tool;
mod usage;
mod user;
mod wire;

pub use audit::AuditAction;
pub use capability::{Capability, Risk};
pub use change::{Change, ChangeCounts, ChangeKind, ChangeRoot, FileMode, FileOp, Prior, Snapshot};
pub use checkpoint::{CHECKPOINT_VERSION, Checkpoint, OLDEST_CHECKPOINT_VERSION, PendingCall};
pub use decision::{Decision, Denial, DenyRule, Policy};
pub use event::{Event, EventKind, EventType, FailureReason, ResolutionKind};
pub use mcp::{
    McpCallPreview, McpReport, McpSandbox, McpServerReport, McpToolReport, McpUnregistered,
};
pub use message::{Message, ToolCall, Usage};
pub use prices::{DEFAULT_CURRENCY, ModelPrice, Prices};
pub use task::{
    Actor, ApprovalId, ApprovalRecord, ApprovalState, AuditEntry, ChangeId, NewAudit, StoredEvent,
    TaskId, TaskRecord, TaskState, Via,
};
pub use time::{Clock, ManualClock, SystemClock, Timestamp};
pub use tool::{
    CommandLimits, CommandPreview, EffectPreview, EffectScope, NotAPath, PathRoot, TargetState,
    ToolOutput, ToolSpec, Uncovered, WriteLabel, pointer_paths, pointer_property,
};
pub use usage::{Cost, TaskUsage};
pub use user::{Role, UserRecord, valid_user_name};
pub use wire::UnknownName;
