//! Schedules and their history. Firing an occurrence is one transaction whose first
//! statement is a compare-and-set on `next_fire_at` (`UPDATE … WHERE next_fire_at = …`):
//! of two processes firing one occurrence, the second waits for the first's row lock,
//! re-checks the condition against the committed row and changes nothing
//! ([`Fired::Lost`]). So each occurrence fires once across processes.

use deadpool_postgres::GenericClient;
use pp_types::{Actor, TaskId, TaskRecord, Timestamp};
use tokio_postgres::Row;

use super::rows;
use super::{PgStore, chat, execute, is_unique_violation, query, query_opt, tasks};
use crate::error::{Error, Result};
use crate::ids;
use crate::mapping::{
    HISTORY_COLUMNS, History, RawSchedule, RawScheduleEvent, SCHEDULE_COLUMNS, SCHEDULE_FROM,
    enabled_next, int, limit as row_limit,
};
use crate::types::{
    ACTIVE_TURN_STATES, FireOccurrence, Fired, NewSchedule, NewTask, Overlap, Schedule,
    ScheduleEvent, ScheduleEventKind, ScheduleSpec,
};

impl PgStore {
    /// Creates a schedule. [`Error::NameTaken`] when another schedule has the name.
    pub(crate) async fn create_schedule(&self, new: &NewSchedule) -> Result<Schedule> {
        let now = self.now();
        let id = ids::new_id("sc_", now)?;
        let spec = &new.spec;
        let client = self.client().await?;
        let statement = client
            .prepare_cached(
                "INSERT INTO schedules (id, name, cron, time_zone, prompt, workspace, \
                 session, overlap, enabled, created_by, created_at, updated_at, \
                 next_fire_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11, $12)",
            )
            .await?;
        let inserted = client
            .execute(
                &statement,
                &[
                    &id,
                    &spec.name,
                    &spec.cron,
                    &spec.time_zone,
                    &spec.prompt,
                    &spec.workspace,
                    &spec.session,
                    &spec.overlap.as_str(),
                    &new.enabled,
                    &new.created_by.as_str(),
                    &now.as_millis(),
                    &enabled_next(new.enabled, new.next_fire_at),
                ],
            )
            .await;
        name_taken(inserted, &spec.name)?;
        load(&client, &id).await
    }

    /// One schedule by id ([`Error::NotFound`] with `what = "schedule"` if none).
    pub(crate) async fn schedule(&self, id: &str) -> Result<Schedule> {
        load(&self.client().await?, id).await
    }

    /// One schedule by id or, failing that, by name ([`Error::NotFound`] if neither).
    pub(crate) async fn find_schedule(&self, id_or_name: &str) -> Result<Schedule> {
        let found = query_opt(
            &self.client().await?,
            &format!(
                "SELECT {SCHEDULE_COLUMNS} FROM {SCHEDULE_FROM} \
                 WHERE schedules.id = $1 OR schedules.name = $1 \
                 ORDER BY (schedules.id = $1) DESC LIMIT 1"
            ),
            &[&id_or_name],
        )
        .await?;
        found
            .ok_or_else(|| Error::not_found("schedule", id_or_name))
            .and_then(|row| decode(&row))
    }

    /// Every schedule, by name.
    pub(crate) async fn schedules(&self) -> Result<Vec<Schedule>> {
        let found = query(
            &self.client().await?,
            &format!("SELECT {SCHEDULE_COLUMNS} FROM {SCHEDULE_FROM} ORDER BY schedules.name"),
            &[],
        )
        .await?;
        found.iter().map(decode).collect()
    }

    /// Enabled schedules whose `next_fire_at` is at or before `now`, earliest first, at
    /// most `limit`.
    pub(crate) async fn due_schedules(
        &self,
        now: Timestamp,
        limit: usize,
    ) -> Result<Vec<Schedule>> {
        let found = query(
            &self.client().await?,
            &format!(
                "SELECT {SCHEDULE_COLUMNS} FROM {SCHEDULE_FROM} \
                 WHERE schedules.enabled AND schedules.next_fire_at <= $1 \
                 ORDER BY schedules.next_fire_at, schedules.id LIMIT $2"
            ),
            &[&now.as_millis(), &row_limit(limit)],
        )
        .await?;
        found.iter().map(decode).collect()
    }

    /// The earliest `next_fire_at` of the enabled schedules (`None`: nothing planned).
    pub(crate) async fn earliest_fire_at(&self) -> Result<Option<Timestamp>> {
        let row = query_opt(
            &self.client().await?,
            "SELECT MIN(next_fire_at) FROM schedules WHERE enabled",
            &[],
        )
        .await?;
        let earliest = match row {
            Some(row) => row.try_get::<_, Option<i64>>(0)?,
            None => None,
        };
        Ok(earliest.map(Timestamp::from_millis))
    }

    /// Replaces what a schedule is, with its next occurrence recomputed by the caller
    /// (kept `None` while it is disabled). [`Error::NotFound`], [`Error::NameTaken`].
    pub(crate) async fn update_schedule(
        &self,
        id: &str,
        spec: &ScheduleSpec,
        next_fire_at: Option<Timestamp>,
    ) -> Result<Schedule> {
        let now = self.now();
        let client = self.client().await?;
        let statement = client
            .prepare_cached(
                "UPDATE schedules SET name = $2, cron = $3, time_zone = $4, prompt = $5, \
                 workspace = $6, session = $7, overlap = $8, updated_at = $9, \
                 next_fire_at = CASE WHEN enabled THEN $10::BIGINT ELSE NULL END \
                 WHERE id = $1",
            )
            .await?;
        let updated = client
            .execute(
                &statement,
                &[
                    &id,
                    &spec.name,
                    &spec.cron,
                    &spec.time_zone,
                    &spec.prompt,
                    &spec.workspace,
                    &spec.session,
                    &spec.overlap.as_str(),
                    &now.as_millis(),
                    &next_fire_at.map(Timestamp::as_millis),
                ],
            )
            .await;
        if name_taken(updated, &spec.name)? == 0 {
            return Err(Error::not_found("schedule", id));
        }
        load(&client, id).await
    }

    /// Enables a schedule from `next_fire_at` on, or disables it; either clears a pause
    /// reason. [`Error::NotFound`].
    pub(crate) async fn set_schedule_enabled(
        &self,
        id: &str,
        enabled: bool,
        next_fire_at: Option<Timestamp>,
    ) -> Result<Schedule> {
        let now = self.now();
        let client = self.client().await?;
        let changed = execute(
            &client,
            "UPDATE schedules SET enabled = $2, paused_reason = NULL, \
             next_fire_at = $3, updated_at = $4 WHERE id = $1",
            &[
                &id,
                &enabled,
                &enabled_next(enabled, next_fire_at),
                &now.as_millis(),
            ],
        )
        .await?;
        if changed == 0 {
            return Err(Error::not_found("schedule", id));
        }
        load(&client, id).await
    }

    /// Removes a schedule and its history (its tasks and their audit rows stay).
    /// [`Error::NotFound`].
    pub(crate) async fn delete_schedule(&self, id: &str) -> Result<()> {
        let deleted = execute(
            &self.client().await?,
            "DELETE FROM schedules WHERE id = $1",
            &[&id],
        )
        .await?;
        if deleted == 0 {
            return Err(Error::not_found("schedule", id));
        }
        Ok(())
    }

    /// Fires one occurrence, all in one transaction (see the module docs).
    /// [`Fired::Lost`] when the compare-and-set did not match.
    pub(crate) async fn fire_schedule(&self, fire: FireOccurrence) -> Result<Fired> {
        let now = self.now();
        let mut client = self.client().await?;
        let transaction = client.transaction().await?;
        let fired = fire_in(&transaction, fire, now).await?;
        transaction.commit().await?;
        Ok(fired)
    }

    /// Fires a schedule now, at a person's request (`actor`), outside its timetable, in
    /// one transaction. [`Error::NotFound`]; [`Error::SessionBusy`].
    pub(crate) async fn run_schedule_now(
        &self,
        id: &str,
        task: NewTask,
        actor: Actor,
    ) -> Result<TaskRecord> {
        let now = self.now();
        let mut client = self.client().await?;
        let transaction = client.transaction().await?;
        query_opt(
            &transaction,
            "SELECT 1 FROM schedules WHERE id = $1 FOR NO KEY UPDATE",
            &[&id],
        )
        .await?;
        let schedule = load(&transaction, id).await?;
        let task = match &schedule.spec.session {
            None => tasks::insert(&transaction, task, now).await?,
            Some(session) => {
                chat::add_turn(&transaction, session, task, None, now)
                    .await?
                    .task
            }
        };
        execute(
            &transaction,
            "UPDATE schedules SET last_fired_at = $2, last_task_id = $3 WHERE id = $1",
            &[&id, &now.as_millis(), &task.id.as_str()],
        )
        .await?;
        let row = History {
            task_id: Some(task.id.clone()),
            detail: Some(format!("run now by {}", actor.as_str())),
            ..History::new(id, ScheduleEventKind::ScheduleFired)
        };
        insert_history(&transaction, row, now).await?;
        transaction.commit().await?;
        Ok(task)
    }

    /// Pauses a schedule whose occurrence `expected_next` could not fire, if its
    /// `next_fire_at` is still `expected_next`. Returns whether this call paused it.
    pub(crate) async fn pause_schedule(
        &self,
        id: &str,
        expected_next: Timestamp,
        reason: &str,
    ) -> Result<bool> {
        let now = self.now();
        let mut client = self.client().await?;
        let transaction = client.transaction().await?;
        let paused = pause_in(&transaction, id, Some(expected_next), reason, now).await?;
        transaction.commit().await?;
        Ok(paused)
    }

    /// A schedule's history, newest first, at most `limit` rows.
    pub(crate) async fn schedule_history(
        &self,
        id: &str,
        limit: usize,
    ) -> Result<Vec<ScheduleEvent>> {
        let found = query(
            &self.client().await?,
            &format!(
                "SELECT {HISTORY_COLUMNS} FROM schedule_history WHERE schedule_id = $1 \
                 ORDER BY id DESC LIMIT $2"
            ),
            &[&id, &row_limit(limit)],
        )
        .await?;
        found.iter().map(decode_history).collect()
    }
}

/// Maps a unique-constraint failure on `schedules.name` to [`Error::NameTaken`].
fn name_taken(result: std::result::Result<u64, tokio_postgres::Error>, name: &str) -> Result<u64> {
    match result {
        Err(error) if is_unique_violation(&error) => Err(Error::NameTaken {
            what: "schedule",
            name: name.to_owned(),
        }),
        other => Ok(other?),
    }
}

async fn fire_in(db: &impl GenericClient, fire: FireOccurrence, now: Timestamp) -> Result<Fired> {
    let claimed = execute(
        db,
        "UPDATE schedules SET next_fire_at = $4 \
         WHERE id = $1 AND enabled AND next_fire_at = $2 AND updated_at = $3",
        &[
            &fire.schedule_id,
            &fire.expected_next.as_millis(),
            &fire.expected_updated.as_millis(),
            &fire.next_fire_at.map(Timestamp::as_millis),
        ],
    )
    .await?;
    if claimed == 0 {
        return Ok(Fired::Lost);
    }
    let id = fire.schedule_id.as_str();
    let schedule = load(db, id).await?;
    if fire.missed > 0 {
        let row = History {
            occurrence: Some(fire.expected_next),
            missed: fire.missed,
            ..History::new(id, ScheduleEventKind::ScheduleMissed)
        };
        insert_history(db, row, now).await?;
    }
    let occurrence = Some(fire.occurrence);
    if schedule.spec.overlap == Overlap::Skip
        && let (Some(task), Some(state)) = (&schedule.last_task_id, schedule.last_task_state)
        && ACTIVE_TURN_STATES.contains(&state)
    {
        let detail = format!("the previous task is still {}", state.as_str());
        return skip(db, id, occurrence, task.clone(), Some(detail), now).await;
    }
    let task = match &schedule.spec.session {
        None => tasks::insert(db, fire.task, now).await?,
        Some(session) => match chat::add_turn(db, session, fire.task, None, now).await {
            Ok(turn) => turn.task,
            Err(Error::SessionBusy { task_id, .. }) => {
                let detail = format!("chat session {session} has a turn that has not ended");
                return skip(db, id, occurrence, TaskId(task_id), Some(detail), now).await;
            }
            Err(Error::NotFound {
                what: "session", ..
            }) => {
                let reason = format!("chat session {session} no longer exists");
                pause_in(db, id, None, &reason, now).await?;
                return Ok(Fired::Paused { reason });
            }
            Err(other) => return Err(other),
        },
    };
    execute(
        db,
        "UPDATE schedules SET last_fired_at = $2, last_task_id = $3 WHERE id = $1",
        &[&id, &now.as_millis(), &task.id.as_str()],
    )
    .await?;
    let row = History {
        occurrence,
        task_id: Some(task.id.clone()),
        ..History::new(id, ScheduleEventKind::ScheduleFired)
    };
    insert_history(db, row, now).await?;
    Ok(Fired::Task(Box::new(task)))
}

/// Records `schedule_skipped` for the occurrence (the previous task `task` is active).
async fn skip(
    db: &impl GenericClient,
    id: &str,
    occurrence: Option<Timestamp>,
    task: TaskId,
    detail: Option<String>,
    now: Timestamp,
) -> Result<Fired> {
    let row = History {
        occurrence,
        task_id: Some(task.clone()),
        detail,
        ..History::new(id, ScheduleEventKind::ScheduleSkipped)
    };
    insert_history(db, row, now).await?;
    Ok(Fired::Skipped { task })
}

/// Disables the schedule with `reason` and records `schedule_paused`; with
/// `expected_next`, only if `next_fire_at` still is that (a compare-and-set).
async fn pause_in(
    db: &impl GenericClient,
    id: &str,
    expected_next: Option<Timestamp>,
    reason: &str,
    now: Timestamp,
) -> Result<bool> {
    let paused = execute(
        db,
        "UPDATE schedules SET enabled = FALSE, paused_reason = $3, next_fire_at = NULL \
         WHERE id = $1 AND ($2::BIGINT IS NULL OR next_fire_at = $2::BIGINT)",
        &[&id, &expected_next.map(Timestamp::as_millis), &reason],
    )
    .await?;
    if paused == 0 {
        return Ok(false);
    }
    let row = History {
        occurrence: expected_next,
        detail: Some(reason.to_owned()),
        ..History::new(id, ScheduleEventKind::SchedulePaused)
    };
    insert_history(db, row, now).await?;
    Ok(true)
}

/// Writes a history row inside the caller's transaction.
async fn insert_history(db: &impl GenericClient, row: History<'_>, now: Timestamp) -> Result<()> {
    execute(
        db,
        "INSERT INTO schedule_history (schedule_id, kind, occurrence, at, missed, \
         task_id, detail) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        &[
            &row.schedule_id,
            &row.kind.as_str(),
            &row.occurrence.map(Timestamp::as_millis),
            &now.as_millis(),
            &int(row.missed),
            &row.task_id.as_ref().map(TaskId::as_str),
            &row.detail,
        ],
    )
    .await?;
    Ok(())
}

async fn load(db: &impl GenericClient, id: &str) -> Result<Schedule> {
    let row = query_opt(
        db,
        &format!("SELECT {SCHEDULE_COLUMNS} FROM {SCHEDULE_FROM} WHERE schedules.id = $1"),
        &[&id],
    )
    .await?
    .ok_or_else(|| Error::not_found("schedule", id))?;
    decode(&row)
}

/// Decodes a row selected with [`SCHEDULE_COLUMNS`].
fn decode(row: &Row) -> Result<Schedule> {
    rows::raw::<RawSchedule>(row)?.decode()
}

/// Decodes a row selected with [`HISTORY_COLUMNS`].
fn decode_history(row: &Row) -> Result<ScheduleEvent> {
    rows::raw::<RawScheduleEvent>(row)?.decode()
}
