//! The scheduler: schedules that create tasks at the times of a cron expression, and
//! nothing more (SPEC §1.7). A fired task is an ordinary `queued` task created by
//! [`Actor::Scheduler`]; its writes stop in `waiting_approval` like anyone's. Nothing
//! here approves anything, and there is no switch for it.
//!
//! [`Scheduler::tick`] does one round on the store's clock (an injectable
//! [`pp_types::Clock`], so tests move a [`pp_types::ManualClock`] instead of waiting):
//! for each enabled schedule whose next occurrence is due it computes, with
//! [`Timetable`], the latest due occurrence, how many before it were missed and the one
//! after it, and hands them to [`pp_store::Store::fire_schedule`], whose compare-and-set
//! makes each occurrence fire once across every process sharing the database. A
//! schedule whose workspace is no longer configured, or whose folder is gone, is paused
//! with the reason recorded; an error on one schedule never stops the others.
//!
//! [`Scheduler::run`] is the loop `pocketpilot serve` spawns; the API (`/api/schedules`),
//! the CLI (`pocketpilot schedules`) and the console call the other methods.

mod timetable;

use std::time::Duration;

use pp_store::{FireOccurrence, Fired, NewSchedule, NewTask, Schedule, ScheduleSpec, Store};
use pp_types::{Actor, TaskId, TaskRecord, Timestamp};

pub use pp_store::{Overlap, ScheduleEvent, ScheduleEventKind};
pub use timetable::{
    ALIASES, Due, FIELDS, MISSED_COUNT_LIMIT, Timetable, WHOLE_EXPRESSION, machine_time_zone,
};

use crate::blocking::blocking;
use crate::{TaskService, Workspaces};

/// At most this many due schedules are fired per tick; the rest wait for the next one.
pub const TICK_LIMIT: usize = 1000;

/// How soon [`Scheduler::run`] ticks again when something is still due after a tick.
const RETRY: Duration = Duration::from_secs(1);

/// Why a scheduler call failed.
#[derive(Debug, thiserror::Error)]
pub enum SchedulerError {
    /// The cron expression is not valid: `field` is one of [`FIELDS`] or
    /// [`WHOLE_EXPRESSION`], `token` the part at fault. API code `invalid_cron`.
    #[error("invalid cron expression: {field} `{token}`: {reason}")]
    InvalidCron {
        /// The field at fault (`minute`, …, `day_of_week`, or `expression`).
        field: &'static str,
        /// The token at fault (or the whole expression).
        token: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The time zone is not an IANA name this build knows. API code `unknown_time_zone`.
    #[error("unknown time zone `{zone}`")]
    UnknownTimeZone {
        /// The name given.
        zone: String,
    },
    /// A field is empty or malformed (name, prompt). API code `bad_request`.
    #[error("{0}")]
    BadRequest(String),
    /// No such schedule, workspace or chat session. API code `not_found`.
    #[error("{what} `{id}` not found")]
    NotFound {
        /// What was looked up.
        what: &'static str,
        /// The id or name.
        id: String,
    },
    /// The schedule's chat session has a turn that has not ended (run now). API code
    /// `session_busy`.
    #[error("session {id} is busy: turn task {task_id} has not ended")]
    SessionBusy {
        /// The session.
        id: String,
        /// The task of the active turn.
        task_id: String,
    },
    /// Another schedule has the name. API code `conflict`.
    #[error("a schedule named `{0}` already exists")]
    NameTaken(String),
    /// The store failed.
    #[error(transparent)]
    Store(pp_store::Error),
    /// Work handed to a blocking thread did not finish.
    #[error("internal error: {0}")]
    Internal(String),
}

impl SchedulerError {
    /// The API's error code for this error.
    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidCron { .. } => "invalid_cron",
            Self::UnknownTimeZone { .. } => "unknown_time_zone",
            Self::BadRequest(_) => "bad_request",
            Self::NotFound { .. } => "not_found",
            Self::SessionBusy { .. } => "session_busy",
            Self::NameTaken(_) => "conflict",
            Self::Store(_) | Self::Internal(_) => "internal",
        }
    }
}

impl From<pp_store::Error> for SchedulerError {
    fn from(error: pp_store::Error) -> Self {
        match error {
            pp_store::Error::NotFound { what, id } => Self::NotFound { what, id },
            pp_store::Error::NameTaken { name, .. } => Self::NameTaken(name),
            pp_store::Error::SessionBusy { id, task_id } => Self::SessionBusy { id, task_id },
            other => Self::Store(other),
        }
    }
}

impl From<crate::Error> for SchedulerError {
    fn from(error: crate::Error) -> Self {
        Self::Internal(error.to_string())
    }
}

/// Result type of the scheduler.
pub type Result<T> = std::result::Result<T, SchedulerError>;

/// A schedule as a person asks for it (create and edit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleRequest {
    /// Unique among schedules.
    pub name: String,
    /// Five fields or an alias ([`ALIASES`]).
    pub cron: String,
    /// An IANA zone; `None` for the machine's ([`machine_time_zone`]).
    pub time_zone: Option<String>,
    /// The prompt each fire's task gets.
    pub prompt: String,
    /// A configured workspace's name; `None` for the default.
    pub workspace: Option<String>,
    /// A chat session each fire continues, if any.
    pub session: Option<String>,
    /// The overlap policy (default `skip`).
    pub overlap: Overlap,
    /// Whether it fires.
    pub enabled: bool,
}

/// What one tick did to one due schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TickOutcome {
    /// A task was created (`missed`: occurrences before this one that did not fire).
    Fired {
        /// The task.
        task: TaskId,
        /// The occurrence fired.
        occurrence: Timestamp,
        /// Missed occurrences recorded with it.
        missed: u64,
    },
    /// The occurrence was skipped: the previous task (or the chat session's turn) is
    /// still active.
    Skipped {
        /// The task still active.
        task: TaskId,
    },
    /// The schedule was paused (its workspace or chat session is gone).
    Paused {
        /// Why.
        reason: String,
    },
    /// Another process fired this occurrence first (or the schedule changed meanwhile).
    Lost,
    /// Firing failed (the store failed); the next tick tries again.
    Failed {
        /// What went wrong.
        error: String,
    },
}

/// What one tick did, per due schedule, in the order they were due.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TickReport {
    /// `(schedule id, outcome)`.
    pub outcomes: Vec<(String, TickOutcome)>,
}

impl TickReport {
    /// The tasks this tick created.
    pub fn fired(&self) -> Vec<TaskId> {
        self.outcomes
            .iter()
            .filter_map(|(_, outcome)| match outcome {
                TickOutcome::Fired { task, .. } => Some(task.clone()),
                _ => None,
            })
            .collect()
    }
}

/// The scheduler over one task service (its store, workspaces and workers). Cheap to
/// clone.
#[derive(Clone)]
pub struct Scheduler {
    tasks: TaskService,
    /// A script every created task carries (`pocketpilot serve --script FILE`).
    script: Option<serde_json::Value>,
}

impl std::fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scheduler").finish_non_exhaustive()
    }
}

impl Scheduler {
    /// A scheduler creating its tasks in `tasks`.
    pub fn new(tasks: TaskService) -> Self {
        Self {
            tasks,
            script: None,
        }
    }

    /// The same scheduler, attaching `script` to every task it creates (as `pocketpilot
    /// serve --script FILE` does for the tasks of `POST /api/tasks`); `None` runs them on
    /// the configured model.
    #[must_use]
    pub fn with_script(mut self, script: Option<serde_json::Value>) -> Self {
        self.script = script;
        self
    }

    /// The tasks a schedule's fires created (from its history), newest first: at most
    /// `limit`; tasks pruned since are left out.
    pub async fn tasks(&self, id_or_name: &str, limit: usize) -> Result<Vec<TaskRecord>> {
        let current = self.find(id_or_name).await?;
        let store = self.store();
        let mut tasks = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let history = store
            .schedule_history(&current.id, limit.saturating_mul(4).max(limit))
            .await?;
        for event in history {
            let Some(task_id) = event.task_id else {
                continue;
            };
            if event.kind != ScheduleEventKind::ScheduleFired || !seen.insert(task_id.clone()) {
                continue;
            }
            match store.task(&task_id).await {
                Ok(task) => tasks.push(task),
                Err(pp_store::Error::NotFound { .. }) => {}
                Err(error) => return Err(error.into()),
            }
            if tasks.len() >= limit {
                break;
            }
        }
        Ok(tasks)
    }

    fn store(&self) -> &Store {
        self.tasks.store()
    }

    fn now(&self) -> Timestamp {
        self.tasks.store().clock().now()
    }

    /// Validates and stores a new schedule; its first occurrence is the first after now.
    pub async fn create(&self, request: ScheduleRequest, actor: Actor) -> Result<Schedule> {
        let (spec, timetable) = self.validate(request.clone())?;
        let new = NewSchedule {
            next_fire_at: timetable.next_after(self.now()),
            spec,
            enabled: request.enabled,
            created_by: actor,
        };
        Ok(self.store().create_schedule(&new).await?)
    }

    /// Replaces a schedule's definition (found by id or name); its next occurrence is
    /// recomputed from now.
    pub async fn edit(&self, id_or_name: &str, request: ScheduleRequest) -> Result<Schedule> {
        let current = self.find(id_or_name).await?;
        let (spec, timetable) = self.validate(request)?;
        let next = timetable.next_after(self.now());
        Ok(self
            .store()
            .update_schedule(&current.id, &spec, next)
            .await?)
    }

    /// Enables (from the next occurrence after now: nothing missed while disabled is
    /// caught up) or disables a schedule; clears a pause reason.
    pub async fn set_enabled(&self, id_or_name: &str, enabled: bool) -> Result<Schedule> {
        let current = self.find(id_or_name).await?;
        let timetable = Timetable::parse(&current.spec.cron, &current.spec.time_zone)?;
        let next = timetable.next_after(self.now());
        Ok(self
            .store()
            .set_schedule_enabled(&current.id, enabled, next)
            .await?)
    }

    /// Fires a schedule now at a person's request (`actor`, recorded in its history):
    /// creates its task (`created_by: scheduler`, like every fire) and wakes the
    /// workers. Its timetable and overlap policy are left alone. A schedule whose
    /// workspace is gone is refused with [`SchedulerError::NotFound`] (and not paused:
    /// the person is told).
    pub async fn run_now(&self, id_or_name: &str, actor: Actor) -> Result<TaskRecord> {
        let current = self.find(id_or_name).await?;
        let workspace = self
            .tasks
            .workspaces()
            .find(Some(&current.spec.workspace))
            .ok_or_else(|| SchedulerError::NotFound {
                what: "workspace",
                id: current.spec.workspace.clone(),
            })?;
        let task = NewTask {
            prompt: current.spec.prompt.clone(),
            workspace: workspace.name.clone(),
            workspace_path: workspace.path.display().to_string(),
            created_by: Actor::Scheduler,
            origin: Some(current.spec.name.clone()),
            script: self.script.clone(),
        };
        let task = self
            .store()
            .run_schedule_now(&current.id, task, actor)
            .await?;
        self.tasks.inner.wake.notify_one();
        Ok(task)
    }

    /// Removes a schedule and its history (its tasks stay).
    pub async fn remove(&self, id_or_name: &str) -> Result<()> {
        let current = self.find(id_or_name).await?;
        Ok(self.store().delete_schedule(&current.id).await?)
    }

    /// One schedule, by id or name.
    pub async fn find(&self, id_or_name: &str) -> Result<Schedule> {
        Ok(self.store().find_schedule(id_or_name).await?)
    }

    /// Every schedule, by name.
    pub async fn list(&self) -> Result<Vec<Schedule>> {
        Ok(self.store().schedules().await?)
    }

    /// A schedule's history, newest first.
    pub async fn history(&self, id_or_name: &str, limit: usize) -> Result<Vec<ScheduleEvent>> {
        let current = self.find(id_or_name).await?;
        Ok(self.store().schedule_history(&current.id, limit).await?)
    }

    /// One round at the store clock's now: fires every due schedule (at most
    /// [`TICK_LIMIT`]) and wakes the workers if a task was created.
    pub async fn tick(&self) -> Result<TickReport> {
        let now = self.now();
        self.tick_at(now).await
    }

    /// One round as if it were `now` (the store still stamps its rows with its clock).
    pub async fn tick_at(&self, now: Timestamp) -> Result<TickReport> {
        let report = tick_once(
            self.store(),
            self.tasks.workspaces(),
            self.script.as_ref(),
            now,
        )
        .await?;
        if report
            .outcomes
            .iter()
            .any(|(_, outcome)| matches!(outcome, TickOutcome::Fired { .. }))
        {
            self.tasks.inner.wake.notify_one();
        }
        Ok(report)
    }

    /// Ticks for as long as the returned future is polled (`serve` will spawn it):
    /// right away, then whenever the earliest planned occurrence comes, and at least
    /// every `poll` (schedules created, edited or fired by another process are noticed
    /// then). Each tick's report, or its error, goes to `on_tick` (for the log); an
    /// error never stops the loop. Sleeps on tokio's timer, so a test on paused time
    /// runs it without waiting.
    pub async fn run(&self, poll: Duration, mut on_tick: impl FnMut(Result<TickReport>)) {
        loop {
            on_tick(self.tick().await);
            let earliest = self.store().earliest_fire_at().await;
            let now = self.now();
            let wait = match earliest {
                // Still due after the tick: more than TICK_LIMIT were due, or one failed.
                // Go again soon, not at once.
                Ok(Some(at)) if at <= now => RETRY.min(poll),
                Ok(Some(at)) => {
                    let millis = u64::try_from(at.as_millis().saturating_sub(now.as_millis()));
                    Duration::from_millis(millis.unwrap_or(0)).min(poll)
                }
                Ok(None) | Err(_) => poll,
            };
            tokio::time::sleep(wait).await;
        }
    }

    /// Checks a request: a name and a prompt, a cron expression and zone that parse, a
    /// configured workspace (stored by name).
    fn validate(&self, request: ScheduleRequest) -> Result<(ScheduleSpec, Timetable)> {
        let name = request.name.trim();
        if name.is_empty() || name.chars().any(char::is_control) {
            return Err(SchedulerError::BadRequest(
                "a schedule needs a name without control characters".into(),
            ));
        }
        let prompt = request.prompt.trim();
        if prompt.is_empty() {
            return Err(SchedulerError::BadRequest("the prompt is empty".into()));
        }
        let time_zone = request.time_zone.unwrap_or_else(machine_time_zone);
        let timetable = Timetable::parse(&request.cron, &time_zone)?;
        let workspace = self
            .tasks
            .workspaces()
            .find(request.workspace.as_deref())
            .ok_or_else(|| SchedulerError::NotFound {
                what: "workspace",
                id: request.workspace.unwrap_or_else(|| "(default)".into()),
            })?;
        let spec = ScheduleSpec {
            name: name.to_owned(),
            cron: request.cron.trim().to_owned(),
            time_zone,
            prompt: prompt.to_owned(),
            workspace: workspace.name.clone(),
            session: request.session,
            overlap: request.overlap,
        };
        Ok((spec, timetable))
    }
}

/// One tick's work: fires the due schedules one after the other.
async fn tick_once(
    store: &Store,
    workspaces: &Workspaces,
    script: Option<&serde_json::Value>,
    now: Timestamp,
) -> Result<TickReport> {
    let due = store.due_schedules(now, TICK_LIMIT).await?;
    // Which workspace folders are there, looked at once per tick on the blocking pool
    // (not once per schedule: a tick may fire a thousand).
    let folders: Vec<std::path::PathBuf> = due
        .iter()
        .filter_map(|schedule| workspaces.find(Some(&schedule.spec.workspace)))
        .map(|workspace| workspace.path.clone())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let present: std::collections::HashSet<std::path::PathBuf> = blocking(move || {
        folders
            .into_iter()
            .filter(|folder| folder.is_dir())
            .collect()
    })
    .await?;
    let mut outcomes = Vec::with_capacity(due.len());
    for schedule in due {
        let outcome = fire_one(store, workspaces, &present, script, &schedule, now)
            .await
            .unwrap_or_else(|error| TickOutcome::Failed {
                error: error.to_string(),
            });
        outcomes.push((schedule.id, outcome));
    }
    Ok(TickReport { outcomes })
}

/// Fires one due schedule, or pauses it when it cannot fire any more (`present`: the
/// workspace folders that exist).
async fn fire_one(
    store: &Store,
    workspaces: &Workspaces,
    present: &std::collections::HashSet<std::path::PathBuf>,
    script: Option<&serde_json::Value>,
    schedule: &Schedule,
    now: Timestamp,
) -> Result<TickOutcome> {
    let Some(expected_next) = schedule.next_fire_at else {
        return Ok(TickOutcome::Lost);
    };
    let pause = async |reason: String| -> Result<TickOutcome> {
        Ok(
            if store
                .pause_schedule(&schedule.id, expected_next, &reason)
                .await?
            {
                TickOutcome::Paused { reason }
            } else {
                TickOutcome::Lost
            },
        )
    };
    let spec = &schedule.spec;
    let timetable = match Timetable::parse(&spec.cron, &spec.time_zone) {
        Ok(timetable) => timetable,
        // Stored schedules were valid when created; a newer build may know fewer zones.
        Err(error) => return pause(format!("it can no longer be read: {error}")).await,
    };
    let Some(workspace) = workspaces.find(Some(&spec.workspace)) else {
        return pause(format!(
            "workspace `{}` is no longer configured",
            spec.workspace
        ))
        .await;
    };
    if !present.contains(&workspace.path) {
        return pause(format!(
            "the folder of workspace `{}` ({}) is gone",
            spec.workspace,
            workspace.path.display()
        ))
        .await;
    }
    let Some(due) = timetable.due(expected_next, now) else {
        return Ok(TickOutcome::Lost);
    };
    let fired = store
        .fire_schedule(FireOccurrence {
            schedule_id: schedule.id.clone(),
            expected_next,
            expected_updated: schedule.updated_at,
            occurrence: due.occurrence,
            missed: due.missed,
            next_fire_at: due.next,
            task: NewTask {
                prompt: spec.prompt.clone(),
                workspace: workspace.name.clone(),
                workspace_path: workspace.path.display().to_string(),
                created_by: Actor::Scheduler,
                origin: Some(spec.name.clone()),
                script: script.cloned(),
            },
        })
        .await?;
    Ok(match fired {
        Fired::Task(task) => TickOutcome::Fired {
            task: task.id,
            occurrence: due.occurrence,
            missed: due.missed,
        },
        Fired::Skipped { task } => TickOutcome::Skipped { task },
        Fired::Paused { reason } => TickOutcome::Paused { reason },
        Fired::Lost => TickOutcome::Lost,
    })
}

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
    pub overlap: &'static str,
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
            overlap: spec.overlap.as_str(),
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
