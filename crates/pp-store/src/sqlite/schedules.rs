//! Schedules and their history (`schedules`, `schedule_history`; see
//! `migrations/sqlite/0008_schedules.sql`).
//!
//! The store keeps what a schedule is and when it fires next; it does not read cron
//! expressions (pp-tasks does, and hands the times in). Firing an occurrence is one
//! transaction ([`crate::Store::fire_schedule`]): a compare-and-set moves `next_fire_at` from the
//! occurrence the caller saw to the one after it, and only the process whose
//! compare-and-set matched goes on to apply the overlap policy, create the task and write
//! the history. So two processes sharing the database never fire one occurrence twice,
//! and an occurrence is never claimed without its task (or its `schedule_skipped` row)
//! being written with it.

use pp_types::{Actor, TaskId, TaskRecord, Timestamp};
use rusqlite::{Connection, ErrorCode, OptionalExtension, params};

use super::chat;
use super::{SqliteStore as Store, rows, tasks};
use crate::error::{Error, Result};
use crate::ids;
use crate::mapping::{
    self, HISTORY_COLUMNS, History, RawSchedule, RawScheduleEvent, SCHEDULE_COLUMNS, SCHEDULE_FROM,
    enabled_next,
};
use crate::types::{
    ACTIVE_TURN_STATES, FireOccurrence, Fired, NewSchedule, NewTask, Overlap, Schedule,
    ScheduleEvent, ScheduleEventKind, ScheduleSpec,
};

impl Store {
    /// Creates a schedule. [`Error::NameTaken`] when another schedule has the name.
    pub(crate) fn create_schedule(&self, new: &NewSchedule) -> Result<Schedule> {
        let now = self.now();
        let id = ids::new_id("sc_", now)?;
        self.write(|transaction| {
            let spec = &new.spec;
            let inserted = transaction
                .prepare_cached(
                    "INSERT INTO schedules (id, name, cron, time_zone, prompt, workspace, \
                     session, overlap, enabled, created_by, created_at, updated_at, \
                     next_fire_at) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?11, ?12)",
                )?
                .execute(params![
                    id,
                    spec.name,
                    spec.cron,
                    spec.time_zone,
                    spec.prompt,
                    spec.workspace,
                    spec.session,
                    spec.overlap.as_str(),
                    new.enabled,
                    new.created_by.as_str(),
                    now.as_millis(),
                    enabled_next(new.enabled, new.next_fire_at),
                ]);
            name_taken(inserted, &spec.name)?;
            load(transaction, &id)
        })
    }

    /// One schedule by id ([`Error::NotFound`] with `what = "schedule"` if none).
    pub(crate) fn schedule(&self, id: &str) -> Result<Schedule> {
        self.read(|connection| load(connection, id))
    }

    /// One schedule by id or, failing that, by name ([`Error::NotFound`] if neither).
    pub(crate) fn find_schedule(&self, id_or_name: &str) -> Result<Schedule> {
        self.read(|connection| {
            let found = connection
                .prepare_cached(&format!(
                    "SELECT {SCHEDULE_COLUMNS} FROM {SCHEDULE_FROM} \
                     WHERE schedules.id = ?1 OR schedules.name = ?1 \
                     ORDER BY schedules.id = ?1 DESC LIMIT 1"
                ))?
                .query_row([id_or_name], rows::raw::<RawSchedule>)
                .optional()?;
            found
                .ok_or_else(|| Error::not_found("schedule", id_or_name))
                .and_then(RawSchedule::decode)
        })
    }

    /// Every schedule, by name.
    pub(crate) fn schedules(&self) -> Result<Vec<Schedule>> {
        self.read(|connection| {
            connection
                .prepare_cached(&format!(
                    "SELECT {SCHEDULE_COLUMNS} FROM {SCHEDULE_FROM} ORDER BY schedules.name"
                ))?
                .query_map([], rows::raw::<RawSchedule>)?
                .collect::<rusqlite::Result<Vec<_>>>()?
                .into_iter()
                .map(RawSchedule::decode)
                .collect()
        })
    }

    /// Enabled schedules whose `next_fire_at` is at or before `now`, earliest first, at
    /// most `limit`.
    pub(crate) fn due_schedules(&self, now: Timestamp, limit: usize) -> Result<Vec<Schedule>> {
        self.read(|connection| {
            connection
                .prepare_cached(&format!(
                    "SELECT {SCHEDULE_COLUMNS} FROM {SCHEDULE_FROM} \
                     WHERE schedules.enabled = 1 AND schedules.next_fire_at <= ?1 \
                     ORDER BY schedules.next_fire_at, schedules.id LIMIT ?2"
                ))?
                .query_map(
                    params![now.as_millis(), mapping::limit(limit)],
                    rows::raw::<RawSchedule>,
                )?
                .collect::<rusqlite::Result<Vec<_>>>()?
                .into_iter()
                .map(RawSchedule::decode)
                .collect()
        })
    }

    /// The earliest `next_fire_at` of the enabled schedules (`None`: nothing planned), so
    /// a scheduler can sleep until then.
    pub(crate) fn earliest_fire_at(&self) -> Result<Option<Timestamp>> {
        self.read(|connection| {
            let earliest: Option<i64> = connection
                .prepare_cached("SELECT min(next_fire_at) FROM schedules WHERE enabled = 1")?
                .query_row([], |row| row.get(0))?;
            Ok(earliest.map(Timestamp::from_millis))
        })
    }

    /// Replaces what a schedule is, with its next occurrence recomputed by the caller
    /// (kept `None` while it is disabled). [`Error::NotFound`], [`Error::NameTaken`].
    pub(crate) fn update_schedule(
        &self,
        id: &str,
        spec: &ScheduleSpec,
        next_fire_at: Option<Timestamp>,
    ) -> Result<Schedule> {
        let now = self.now();
        self.write(|transaction| {
            let updated = transaction
                .prepare_cached(
                    "UPDATE schedules SET name = ?2, cron = ?3, time_zone = ?4, prompt = ?5, \
                     workspace = ?6, session = ?7, overlap = ?8, updated_at = ?9, \
                     next_fire_at = CASE WHEN enabled = 1 THEN ?10 ELSE NULL END \
                     WHERE id = ?1",
                )?
                .execute(params![
                    id,
                    spec.name,
                    spec.cron,
                    spec.time_zone,
                    spec.prompt,
                    spec.workspace,
                    spec.session,
                    spec.overlap.as_str(),
                    now.as_millis(),
                    next_fire_at.map(Timestamp::as_millis),
                ]);
            if name_taken(updated, &spec.name)? == 0 {
                return Err(Error::not_found("schedule", id));
            }
            load(transaction, id)
        })
    }

    /// Enables a schedule from `next_fire_at` on (computed by the caller from now: the
    /// occurrences while it was disabled are not caught up), or disables it; either
    /// clears a pause reason. [`Error::NotFound`].
    pub(crate) fn set_schedule_enabled(
        &self,
        id: &str,
        enabled: bool,
        next_fire_at: Option<Timestamp>,
    ) -> Result<Schedule> {
        let now = self.now();
        self.write(|transaction| {
            let changed = transaction
                .prepare_cached(
                    "UPDATE schedules SET enabled = ?2, paused_reason = NULL, \
                     next_fire_at = ?3, updated_at = ?4 WHERE id = ?1",
                )?
                .execute(params![
                    id,
                    enabled,
                    enabled_next(enabled, next_fire_at),
                    now.as_millis()
                ])?;
            if changed == 0 {
                return Err(Error::not_found("schedule", id));
            }
            load(transaction, id)
        })
    }

    /// Removes a schedule and its history (its tasks and their audit rows stay).
    /// [`Error::NotFound`].
    pub(crate) fn delete_schedule(&self, id: &str) -> Result<()> {
        self.write(|transaction| {
            let deleted = transaction
                .prepare_cached("DELETE FROM schedules WHERE id = ?1")?
                .execute([id])?;
            if deleted == 0 {
                return Err(Error::not_found("schedule", id));
            }
            Ok(())
        })
    }

    /// Fires one occurrence, all in one transaction: claims it with a compare-and-set on
    /// `next_fire_at` (and `updated_at`), records `schedule_missed` when occurrences were
    /// missed, then applies the overlap policy and either creates the task (recording
    /// `schedule_fired`, setting `last_fired_at` and `last_task_id`) or records
    /// `schedule_skipped`. [`Fired::Lost`] when the compare-and-set did not match.
    pub(crate) fn fire_schedule(&self, fire: FireOccurrence) -> Result<Fired> {
        let now = self.now();
        self.write(|transaction| fire_in(transaction, fire, now))
    }

    /// Fires a schedule now, at a person's request (`actor`), outside its timetable:
    /// creates its task (or its chat session's next turn) and records `schedule_fired`
    /// with no occurrence and the detail `run now by ACTOR`, in one transaction. `next_fire_at` is
    /// left alone, and so is the overlap policy: the person asked for this run.
    /// [`Error::NotFound`]; [`Error::SessionBusy`] while the session's turn is active.
    pub(crate) fn run_schedule_now(
        &self,
        id: &str,
        task: NewTask,
        actor: Actor,
    ) -> Result<TaskRecord> {
        let now = self.now();
        self.write(|transaction| {
            let schedule = load(transaction, id)?;
            let task = match &schedule.spec.session {
                None => tasks::insert(transaction, task, now)?,
                Some(session) => chat::add_turn(transaction, session, task, None, now)?.task,
            };
            transaction
                .prepare_cached(
                    "UPDATE schedules SET last_fired_at = ?2, last_task_id = ?3 WHERE id = ?1",
                )?
                .execute(params![id, now.as_millis(), task.id.as_str()])?;
            let row = History {
                task_id: Some(task.id.clone()),
                detail: Some(format!("run now by {}", actor.as_str())),
                ..History::new(id, ScheduleEventKind::ScheduleFired)
            };
            insert_history(transaction, &row, now)?;
            Ok(task)
        })
    }

    /// Pauses a schedule whose occurrence `expected_next` could not fire (its workspace
    /// is gone): disables it with `reason` and records `schedule_paused`, if its
    /// `next_fire_at` is still `expected_next`. Returns whether this call paused it.
    pub(crate) fn pause_schedule(
        &self,
        id: &str,
        expected_next: Timestamp,
        reason: &str,
    ) -> Result<bool> {
        let now = self.now();
        self.write(|transaction| pause_in(transaction, id, Some(expected_next), reason, now))
    }

    /// A schedule's history, newest first, at most `limit` rows.
    pub(crate) fn schedule_history(&self, id: &str, limit: usize) -> Result<Vec<ScheduleEvent>> {
        self.read(|connection| {
            connection
                .prepare_cached(&format!(
                    "SELECT {HISTORY_COLUMNS} FROM schedule_history WHERE schedule_id = ?1 \
                     ORDER BY id DESC LIMIT ?2"
                ))?
                .query_map(
                    params![id, mapping::limit(limit)],
                    rows::raw::<RawScheduleEvent>,
                )?
                .collect::<rusqlite::Result<Vec<_>>>()?
                .into_iter()
                .map(RawScheduleEvent::decode)
                .collect()
        })
    }
}

/// Maps a unique-constraint failure on `schedules.name` to [`Error::NameTaken`].
fn name_taken(result: rusqlite::Result<usize>, name: &str) -> Result<usize> {
    match result {
        Err(rusqlite::Error::SqliteFailure(failure, _))
            if failure.code == ErrorCode::ConstraintViolation =>
        {
            Err(Error::NameTaken {
                what: "schedule",
                name: name.to_owned(),
            })
        }
        other => Ok(other?),
    }
}

fn fire_in(transaction: &Connection, fire: FireOccurrence, now: Timestamp) -> Result<Fired> {
    let claimed = transaction
        .prepare_cached(
            "UPDATE schedules SET next_fire_at = ?4 \
             WHERE id = ?1 AND enabled = 1 AND next_fire_at = ?2 AND updated_at = ?3",
        )?
        .execute(params![
            fire.schedule_id,
            fire.expected_next.as_millis(),
            fire.expected_updated.as_millis(),
            fire.next_fire_at.map(Timestamp::as_millis),
        ])?;
    if claimed == 0 {
        return Ok(Fired::Lost);
    }
    let id = fire.schedule_id.as_str();
    let schedule = load(transaction, id)?;
    if fire.missed > 0 {
        let row = History {
            occurrence: Some(fire.expected_next),
            missed: fire.missed,
            ..History::new(id, ScheduleEventKind::ScheduleMissed)
        };
        insert_history(transaction, &row, now)?;
    }
    let occurrence = Some(fire.occurrence);
    let skip = |task: TaskId, detail: Option<String>| -> Result<Fired> {
        let row = History {
            occurrence,
            task_id: Some(task.clone()),
            detail,
            ..History::new(id, ScheduleEventKind::ScheduleSkipped)
        };
        insert_history(transaction, &row, now)?;
        Ok(Fired::Skipped { task })
    };
    if schedule.spec.overlap == Overlap::Skip
        && let (Some(task), Some(state)) = (&schedule.last_task_id, schedule.last_task_state)
        && ACTIVE_TURN_STATES.contains(&state)
    {
        return skip(
            task.clone(),
            Some(format!("the previous task is still {}", state.as_str())),
        );
    }
    let task = match &schedule.spec.session {
        None => tasks::insert(transaction, fire.task, now)?,
        Some(session) => match chat::add_turn(transaction, session, fire.task, None, now) {
            Ok(turn) => turn.task,
            Err(Error::SessionBusy { task_id, .. }) => {
                let detail = format!("chat session {session} has a turn that has not ended");
                return skip(TaskId(task_id), Some(detail));
            }
            Err(Error::NotFound {
                what: "session", ..
            }) => {
                let reason = format!("chat session {session} no longer exists");
                pause_in(transaction, id, None, &reason, now)?;
                return Ok(Fired::Paused { reason });
            }
            Err(other) => return Err(other),
        },
    };
    transaction
        .prepare_cached("UPDATE schedules SET last_fired_at = ?2, last_task_id = ?3 WHERE id = ?1")?
        .execute(params![id, now.as_millis(), task.id.as_str()])?;
    let row = History {
        occurrence,
        task_id: Some(task.id.clone()),
        ..History::new(id, ScheduleEventKind::ScheduleFired)
    };
    insert_history(transaction, &row, now)?;
    Ok(Fired::Task(Box::new(task)))
}

/// Disables the schedule with `reason` and records `schedule_paused`; with
/// `expected_next`, only if `next_fire_at` still is that (a compare-and-set).
fn pause_in(
    transaction: &Connection,
    id: &str,
    expected_next: Option<Timestamp>,
    reason: &str,
    now: Timestamp,
) -> Result<bool> {
    let paused = transaction
        .prepare_cached(
            "UPDATE schedules SET enabled = 0, paused_reason = ?3, next_fire_at = NULL \
             WHERE id = ?1 AND (?2 IS NULL OR next_fire_at = ?2)",
        )?
        .execute(params![id, expected_next.map(Timestamp::as_millis), reason])?;
    if paused == 0 {
        return Ok(false);
    }
    let row = History {
        occurrence: expected_next,
        detail: Some(reason.to_owned()),
        ..History::new(id, ScheduleEventKind::SchedulePaused)
    };
    insert_history(transaction, &row, now)?;
    Ok(true)
}

/// Writes a history row inside the caller's transaction.
fn insert_history(connection: &Connection, row: &History<'_>, now: Timestamp) -> Result<()> {
    connection
        .prepare_cached(
            "INSERT INTO schedule_history (schedule_id, kind, occurrence, at, missed, \
             task_id, detail) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )?
        .execute(params![
            row.schedule_id,
            row.kind.as_str(),
            row.occurrence.map(Timestamp::as_millis),
            now.as_millis(),
            mapping::int(row.missed),
            row.task_id.as_ref().map(TaskId::as_str),
            row.detail,
        ])?;
    Ok(())
}

fn load(connection: &Connection, id: &str) -> Result<Schedule> {
    connection
        .prepare_cached(&format!(
            "SELECT {SCHEDULE_COLUMNS} FROM {SCHEDULE_FROM} WHERE schedules.id = ?1"
        ))?
        .query_row([id], rows::raw::<RawSchedule>)
        .optional()?
        .ok_or_else(|| Error::not_found("schedule", id))?
        .decode()
}
