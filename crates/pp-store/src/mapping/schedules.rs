//! Schedules and their history rows, read the same way by both backends (the column
//! lists are the same SQL on both).

use pp_types::{TaskId, Timestamp};

use super::columns::{Columns, FromColumns, decode_name};
use crate::error::Result;
use crate::types::{Schedule, ScheduleEvent, ScheduleEventKind, ScheduleSpec};

/// The columns of [`RawSchedule`], in order (with the last task's state: select
/// them `FROM` [`SCHEDULE_FROM`]).
pub(crate) const SCHEDULE_COLUMNS: &str = "schedules.id, schedules.name, schedules.cron, \
     schedules.time_zone, schedules.prompt, schedules.workspace, schedules.session, \
     schedules.overlap, schedules.enabled, schedules.paused_reason, schedules.created_by, \
     schedules.created_at, schedules.updated_at, schedules.last_fired_at, \
     schedules.next_fire_at, schedules.last_task_id, tasks.state";

/// Schedules joined with their last task.
pub(crate) const SCHEDULE_FROM: &str =
    "schedules LEFT JOIN tasks ON tasks.id = schedules.last_task_id";

/// The columns of [`RawScheduleEvent`], in order.
pub(crate) const HISTORY_COLUMNS: &str =
    "id, schedule_id, kind, occurrence, at, missed, task_id, detail";

/// A schedule row as read.
pub(crate) struct RawSchedule {
    id: String,
    name: String,
    cron: String,
    time_zone: String,
    prompt: String,
    workspace: String,
    session: Option<String>,
    overlap: String,
    enabled: bool,
    paused_reason: Option<String>,
    created_by: String,
    created_at: i64,
    updated_at: i64,
    last_fired_at: Option<i64>,
    next_fire_at: Option<i64>,
    last_task_id: Option<String>,
    last_task_state: Option<String>,
}

impl FromColumns for RawSchedule {
    fn read<C: Columns>(columns: &mut C) -> std::result::Result<Self, C::Error> {
        Ok(Self {
            id: columns.text()?,
            name: columns.text()?,
            cron: columns.text()?,
            time_zone: columns.text()?,
            prompt: columns.text()?,
            workspace: columns.text()?,
            session: columns.text_opt()?,
            overlap: columns.text()?,
            enabled: columns.flag()?,
            paused_reason: columns.text_opt()?,
            created_by: columns.text()?,
            created_at: columns.int()?,
            updated_at: columns.int()?,
            last_fired_at: columns.int_opt()?,
            next_fire_at: columns.int_opt()?,
            last_task_id: columns.text_opt()?,
            last_task_state: columns.text_opt()?,
        })
    }
}

impl RawSchedule {
    /// Decodes the row.
    pub(crate) fn decode(self) -> Result<Schedule> {
        let overlap = decode_name("schedules", "overlap", &self.id, self.overlap)?;
        let created_by = decode_name("schedules", "created_by", &self.id, self.created_by)?;
        let last_task_state = self
            .last_task_state
            .map(|state| decode_name("tasks", "state", &self.id, state))
            .transpose()?;
        Ok(Schedule {
            spec: ScheduleSpec {
                name: self.name,
                cron: self.cron,
                time_zone: self.time_zone,
                prompt: self.prompt,
                workspace: self.workspace,
                session: self.session,
                overlap,
            },
            enabled: self.enabled,
            paused_reason: self.paused_reason,
            created_by,
            created_at: Timestamp::from_millis(self.created_at),
            updated_at: Timestamp::from_millis(self.updated_at),
            last_fired_at: self.last_fired_at.map(Timestamp::from_millis),
            next_fire_at: self.next_fire_at.map(Timestamp::from_millis),
            last_task_id: self.last_task_id.map(TaskId),
            last_task_state,
            id: self.id,
        })
    }
}

/// A history row as read.
pub(crate) struct RawScheduleEvent {
    id: i64,
    schedule_id: String,
    kind: String,
    occurrence: Option<i64>,
    at: i64,
    missed: i64,
    task_id: Option<String>,
    detail: Option<String>,
}

impl FromColumns for RawScheduleEvent {
    fn read<C: Columns>(columns: &mut C) -> std::result::Result<Self, C::Error> {
        Ok(Self {
            id: columns.int()?,
            schedule_id: columns.text()?,
            kind: columns.text()?,
            occurrence: columns.int_opt()?,
            at: columns.int()?,
            missed: columns.int()?,
            task_id: columns.text_opt()?,
            detail: columns.text_opt()?,
        })
    }
}

impl RawScheduleEvent {
    /// Decodes the row.
    pub(crate) fn decode(self) -> Result<ScheduleEvent> {
        let kind = decode_name("schedule_history", "kind", &self.id.to_string(), self.kind)?;
        Ok(ScheduleEvent {
            id: self.id,
            schedule_id: self.schedule_id,
            kind,
            occurrence: self.occurrence.map(Timestamp::from_millis),
            at: Timestamp::from_millis(self.at),
            missed: u64::try_from(self.missed).unwrap_or(0),
            task_id: self.task_id.map(TaskId),
            detail: self.detail,
        })
    }
}

/// A history row to write.
pub(crate) struct History<'a> {
    pub(crate) schedule_id: &'a str,
    pub(crate) kind: ScheduleEventKind,
    pub(crate) occurrence: Option<Timestamp>,
    pub(crate) missed: u64,
    pub(crate) task_id: Option<TaskId>,
    pub(crate) detail: Option<String>,
}

impl<'a> History<'a> {
    /// A row of `kind` for `schedule_id`, the rest empty.
    pub(crate) fn new(schedule_id: &'a str, kind: ScheduleEventKind) -> Self {
        Self {
            schedule_id,
            kind,
            occurrence: None,
            missed: 0,
            task_id: None,
            detail: None,
        }
    }
}

/// `next_fire_at` as stored: none while disabled.
pub(crate) fn enabled_next(enabled: bool, next: Option<Timestamp>) -> Option<i64> {
    next.filter(|_| enabled).map(Timestamp::as_millis)
}
