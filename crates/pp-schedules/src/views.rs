//! Schedules and their history on the wire (`/api/schedules`, `pocketpilot schedules
//! … --json`).

use pp_store::{Overlap, Schedule, ScheduleEvent, ScheduleEventKind};
use pp_types::{Actor, TaskId, Timestamp};

/// A schedule on the wire (`/api/schedules`, `pocketpilot schedules list --json`): the
/// stored fields, flat, times as RFC 3339 instants.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ScheduleView {
    /// `sc_…`.
    pub id: String,
    /// Unique among schedules.
    pub name: String,
    /// The cron expression as given.
    pub cron: String,
    /// The IANA zone it is read in.
    pub time_zone: String,
    /// The prompt each fire's task gets.
    pub prompt: String,
    /// The workspace's configured name.
    pub workspace: String,
    /// The chat session each fire continues, if any.
    pub session: Option<String>,
    /// `skip` or `queue`.
    pub overlap: Overlap,
    /// Whether it fires.
    pub enabled: bool,
    /// Why the scheduler paused it, if it did.
    pub paused_reason: Option<String>,
    /// Who created it.
    pub created_by: Actor,
    /// When it was created.
    pub created_at: Timestamp,
    /// When a person last changed it.
    pub updated_at: Timestamp,
    /// When it last created a task.
    pub last_fired_at: Option<Timestamp>,
    /// The occurrence it fires next (none while disabled).
    pub next_fire_at: Option<Timestamp>,
    /// The task its latest fire created.
    pub last_task_id: Option<TaskId>,
    /// That task's state now.
    pub last_task_state: Option<pp_types::TaskState>,
}

impl From<&Schedule> for ScheduleView {
    fn from(schedule: &Schedule) -> Self {
        let spec = &schedule.spec;
        Self {
            id: schedule.id.clone(),
            name: spec.name.clone(),
            cron: spec.cron.clone(),
            time_zone: spec.time_zone.clone(),
            prompt: spec.prompt.clone(),
            workspace: spec.workspace.clone(),
            session: spec.session.clone(),
            overlap: spec.overlap,
            enabled: schedule.enabled,
            paused_reason: schedule.paused_reason.clone(),
            created_by: schedule.created_by,
            created_at: schedule.created_at,
            updated_at: schedule.updated_at,
            last_fired_at: schedule.last_fired_at,
            next_fire_at: schedule.next_fire_at,
            last_task_id: schedule.last_task_id.clone(),
            last_task_state: schedule.last_task_state,
        }
    }
}

/// A history row on the wire.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ScheduleEventView {
    /// `schedule_fired`, `schedule_skipped`, `schedule_missed`, `schedule_paused`.
    pub kind: ScheduleEventKind,
    /// The planned time it concerns.
    pub occurrence: Option<Timestamp>,
    /// When it was recorded.
    pub at: Timestamp,
    /// Missed occurrences (`schedule_missed`).
    pub missed: u64,
    /// The task created or still active.
    pub task_id: Option<TaskId>,
    /// More, for people.
    pub detail: Option<String>,
}

impl From<&ScheduleEvent> for ScheduleEventView {
    fn from(event: &ScheduleEvent) -> Self {
        Self {
            kind: event.kind,
            occurrence: event.occurrence,
            at: event.at,
            missed: event.missed,
            task_id: event.task_id.clone(),
            detail: event.detail.clone(),
        }
    }
}
