//! Schedules, their occurrences and their history.

use pp_types::{Actor, TaskId, TaskRecord, TaskState, Timestamp};

use super::NewTask;

pp_types::wire_enum! {
    /// What a schedule does when its previous task is still active at the next occurrence.
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
    pub enum Overlap {
        /// Skip the occurrence (recorded as `schedule_skipped`) while the previous task is
        /// `queued`, `running` or `waiting_approval`.
        #[default]
        Skip => "skip",
        /// Create the task anyway; it waits its turn like any queued task.
        Queue => "queue",
    }
}

/// What a schedule is: the fields a person sets (create and edit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleSpec {
    /// Unique among schedules.
    pub name: String,
    /// The cron expression as the person wrote it (5 fields or an `@` alias).
    pub cron: String,
    /// The IANA time zone the expression is read in (`Europe/Berlin`).
    pub time_zone: String,
    /// The prompt every fire's task gets.
    pub prompt: String,
    /// The configured workspace's name.
    pub workspace: String,
    /// A chat session each fire continues (as a new turn), if any.
    pub session: Option<String>,
    /// The overlap policy.
    pub overlap: Overlap,
}

/// A schedule to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSchedule {
    /// What it is.
    pub spec: ScheduleSpec,
    /// Whether it fires.
    pub enabled: bool,
    /// Who created it.
    pub created_by: Actor,
    /// Its first occurrence (computed by the caller from `cron` and `time_zone`); `None`
    /// when disabled or when the expression has no future occurrence.
    pub next_fire_at: Option<Timestamp>,
}

/// A schedule as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    /// `sc_…`.
    pub id: String,
    /// What it is.
    pub spec: ScheduleSpec,
    /// Whether it fires (a paused schedule is disabled with a `paused_reason`).
    pub enabled: bool,
    /// Why the scheduler paused it (its workspace or chat session went away); `None`
    /// when it is enabled or a person disabled it.
    pub paused_reason: Option<String>,
    /// Who created it.
    pub created_by: Actor,
    /// When it was created.
    pub created_at: Timestamp,
    /// When a person last changed it (creation, edit, enable, disable).
    pub updated_at: Timestamp,
    /// When it last created a task.
    pub last_fired_at: Option<Timestamp>,
    /// The occurrence it fires next, if any.
    pub next_fire_at: Option<Timestamp>,
    /// The task its latest fire created.
    pub last_task_id: Option<TaskId>,
    /// That task's state now (`None` if there is none or it was pruned).
    pub last_task_state: Option<TaskState>,
}

pp_types::wire_enum! {
    /// The kinds of rows in a schedule's history.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum ScheduleEventKind {
        /// An occurrence created a task (`task_id`).
        ScheduleFired => "schedule_fired",
        /// An occurrence was skipped: the previous task (`task_id`) was still active, or the
        /// chat session's latest turn had not ended (`detail`).
        ScheduleSkipped => "schedule_skipped",
        /// `missed` occurrences passed while no scheduler ran; they were not fired (the
        /// latest due one fires once instead).
        ScheduleMissed => "schedule_missed",
        /// The scheduler paused the schedule (`detail`: why).
        SchedulePaused => "schedule_paused",
    }
}

/// One row of a schedule's history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleEvent {
    /// Ascending in the order rows were written.
    pub id: i64,
    /// The schedule.
    pub schedule_id: String,
    /// What happened.
    pub kind: ScheduleEventKind,
    /// The planned time it concerns (for `schedule_missed`: the first missed one).
    pub occurrence: Option<Timestamp>,
    /// When it was recorded.
    pub at: Timestamp,
    /// How many occurrences were missed (`schedule_missed` only; 0 otherwise).
    pub missed: u64,
    /// The task created (`schedule_fired`) or still active (`schedule_skipped`).
    pub task_id: Option<TaskId>,
    /// More, for people (why a schedule was paused or skipped).
    pub detail: Option<String>,
}

/// One occurrence to fire, as [`crate::Store::fire_schedule`] takes it.
#[derive(Debug, Clone, PartialEq)]
pub struct FireOccurrence {
    /// The schedule.
    pub schedule_id: String,
    /// The `next_fire_at` the caller read: the compare-and-set's expected value.
    pub expected_next: Timestamp,
    /// The `updated_at` the caller read: an edit since then makes the fire lose (the
    /// next tick reads the edited schedule).
    pub expected_updated: Timestamp,
    /// The occurrence fired: the latest one due (equal to `expected_next` unless some
    /// were missed).
    pub occurrence: Timestamp,
    /// Occurrences before it that were due and are not fired (recorded once as
    /// `schedule_missed`).
    pub missed: u64,
    /// The occurrence after `occurrence` (`None`: there is none).
    pub next_fire_at: Option<Timestamp>,
    /// The task to create (its `created_by` is the scheduler).
    pub task: NewTask,
}

/// What [`crate::Store::fire_schedule`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum Fired {
    /// The task was created (`queued`).
    Task(Box<TaskRecord>),
    /// The occurrence was claimed and skipped by the overlap policy (`task`: the
    /// previous task, still active) or because the chat session was busy.
    Skipped {
        /// The task still active.
        task: TaskId,
    },
    /// The occurrence was claimed and the schedule paused (its chat session is gone).
    Paused {
        /// Why.
        reason: String,
    },
    /// Another process fired this occurrence, or the schedule was edited, disabled or
    /// removed meanwhile: nothing was written.
    Lost,
}
