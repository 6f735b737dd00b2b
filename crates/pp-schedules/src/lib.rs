//! The scheduler: schedules that create tasks at the times of a cron expression, and
//! nothing more (SPEC §1.7). A fired task is an ordinary `queued` task created by
//! [`Actor::Scheduler`](pp_types::Actor::Scheduler); its writes stop in
//! `waiting_approval` like anyone's. Nothing here approves anything, and there is no
//! switch for it.
//!
//! [`Scheduler::tick`] does one round on the store's clock (an injectable
//! [`pp_types::Clock`], so tests move a [`pp_types::ManualClock`] instead of waiting):
//! for each enabled schedule whose next occurrence is due it computes, with
//! [`Timetable`], the latest due occurrence, how many before it were missed and the one
//! after it, and hands them to the store's `fire_schedule`, whose compare-and-set makes
//! each occurrence fire once across every process sharing the database. A schedule whose
//! workspace is no longer configured, or whose folder is gone, is paused with the reason
//! recorded (outside team mode a schedule may store a folder's canonical path instead of
//! a workspace name, `folder.rs`); an error on one schedule never stops the others.
//!
//! The scheduler reaches tasks through the task service ([`pp_tasks::TaskService`]:
//! workspaces, task lookups, waking the workers) and the store only through its own
//! narrow book of schedules (`book.rs`). [`Scheduler::run`] is the loop `pocketpilot
//! serve` spawns; the API (`/api/schedules`), the CLI (`pocketpilot schedules`) and the
//! console call the other methods.
//!
//! ```
//! use pp_schedules::Timetable;
//! let timetable = Timetable::parse("@daily", "UTC").unwrap();
//! let midnight = timetable.next_after(pp_types::Timestamp::from_millis(1_000)).unwrap();
//! assert_eq!(midnight.as_millis(), 86_400_000);
//! ```

mod book;
mod error;
mod folder;
mod scheduler;
mod tick;
mod timetable;
mod views;

pub use error::{Result, SchedulerError};
pub use pp_store::{Overlap, Schedule, ScheduleEvent, ScheduleEventKind};
pub use scheduler::{ScheduleRequest, Scheduler};
pub use tick::{TICK_LIMIT, TickOutcome, TickReport};
pub use timetable::{
    ALIASES, Due, FIELDS, MISSED_COUNT_LIMIT, Timetable, WHOLE_EXPRESSION, machine_time_zone,
};
pub use views::{ScheduleEventView, ScheduleView};
