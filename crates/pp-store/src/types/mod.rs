//! What the store keeps and takes, named once for both backends: the inputs of its
//! operations ([`NewTask`], [`TaskChange`], [`NewApproval`], [`Resolve`], filters) and
//! the stored rows that are not wire records of `pp-types` ([`ChangeRow`], [`Schedule`],
//! [`Channel`], [`ChatSession`], …). Plain data: no backend, no I/O.

mod approvals;
mod audit;
mod changes;
mod channels;
mod chat;
mod model_calls;
mod prune;
mod schedules;
mod tasks;
mod users;
mod workers;

pub use approvals::{NewApproval, Resolve};
pub use audit::AuditFilter;
pub use changes::{Before, ChangeRow, ChangeState, NewChange};
pub use channels::{
    Channel, ChannelChange, DELIVERIES_KEPT, DeliveryRecord, DeliveryStatus, NewChannel,
};
pub use chat::{ACTIVE_TURN_STATES, ChatSession, ChatTurn, NewChatSession};
pub use model_calls::{ModelCallRow, NewModelCall};
pub use prune::PruneReport;
pub use schedules::{
    FireOccurrence, Fired, NewSchedule, Overlap, Schedule, ScheduleEvent, ScheduleEventKind,
    ScheduleSpec,
};
pub use tasks::{NewTask, TaskChange, TaskFilter};
pub use users::{LoginOwner, USER_TOKEN_PREFIX};
pub use workers::{NewWorker, WorkerRecord};
