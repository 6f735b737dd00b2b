//! [`Scheduler`]: create, edit, enable, run now, remove, list and tick schedules, over a
//! task service (workspaces, workers, task lookups) and the store's schedules
//! ([`ScheduleBook`]).

use std::collections::HashSet;
use std::time::Duration;

use pp_store::{NewSchedule, NewTask, Overlap, Schedule, ScheduleEvent, ScheduleEventKind};
use pp_store::{ScheduleSpec, Store};
use pp_tasks::TaskService;
use pp_types::{Actor, AuditAction, NewAudit, TaskRecord, Timestamp};

use crate::book::ScheduleBook;
use crate::error::{Result, SchedulerError};
use crate::folder::{is_folder_path, stored_workspace};
use crate::tick::{TickOutcome, TickReport, tick_once};
use crate::timetable::{Timetable, machine_time_zone};

/// How soon [`Scheduler::run`] ticks again when something is still due after a tick.
const RETRY: Duration = Duration::from_secs(1);

/// A schedule as a person asks for it (create and edit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleRequest {
    /// Unique among schedules.
    pub name: String,
    /// Five fields or an alias ([`ALIASES`](crate::ALIASES)).
    pub cron: String,
    /// An IANA zone; `None` for the machine's ([`machine_time_zone`]).
    pub time_zone: Option<String>,
    /// The prompt each fire's task gets.
    pub prompt: String,
    /// A configured workspace's name; `None` for the default. Outside team mode, for a
    /// scheduler [`Scheduler::with_folders`], also a folder's canonical absolute path;
    /// and on edit the path the schedule already stores.
    pub workspace: Option<String>,
    /// A chat session each fire continues, if any.
    pub session: Option<String>,
    /// The overlap policy (default `skip`).
    pub overlap: Overlap,
    /// Whether it fires.
    pub enabled: bool,
}

/// The scheduler over one task service (its workspaces and workers) and the schedules of
/// its store. Cheap to clone.
#[derive(Clone)]
pub struct Scheduler {
    tasks: TaskService,
    book: ScheduleBook,
    /// A script every created task carries (`pocketpilot serve --script FILE`).
    script: Option<serde_json::Value>,
    /// The team user the audit rows of changes name (team mode; `None`: the operator).
    user: Option<String>,
    /// Whether a request may name a folder by its canonical absolute path (the CLI,
    /// outside team mode, after its own checks); never the API.
    folders: bool,
}

impl std::fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scheduler").finish_non_exhaustive()
    }
}

impl Scheduler {
    /// A scheduler keeping its schedules in `store` (the database `tasks` works on) and
    /// creating its tasks there for `tasks` to run.
    pub fn new(tasks: TaskService, store: Store) -> Self {
        Self {
            tasks,
            book: ScheduleBook::new(store),
            script: None,
            user: None,
            folders: false,
        }
    }

    /// The same scheduler, accepting (outside team mode) a folder's canonical absolute
    /// path as a request's workspace: stored as the path, it resolves in every process
    /// sharing the store. The caller has checked the folder (`pocketpilot schedules
    /// add --workspace DIR` does, as for `serve --workspace DIR`).
    #[must_use]
    pub fn with_folders(mut self) -> Self {
        self.folders = true;
        self
    }

    /// Whether stored folders resolve here: outside team mode (in team mode a workspace
    /// is a name each worker maps to its own folder).
    fn folders_resolve(&self) -> bool {
        self.tasks.settings().team.is_none()
    }

    /// The same scheduler, its audit rows (`schedule_created`, `schedule_updated`,
    /// `schedule_removed`, `schedule_run`) naming the team user `user` (team mode: who
    /// acts; `None`: the operator).
    #[must_use]
    pub fn as_user(&self, user: Option<&str>) -> Self {
        Self {
            user: user.map(str::to_owned),
            ..self.clone()
        }
    }

    /// Appends the audit row of a person's change to `schedule`.
    async fn audit(
        &self,
        action: AuditAction,
        actor: Actor,
        schedule: &Schedule,
        detail: String,
        task: Option<&TaskRecord>,
    ) -> Result<()> {
        self.book
            .audit(NewAudit {
                actor: Some(actor),
                task_id: task.map(|task| task.id.clone()),
                target: Some(schedule.spec.name.clone()),
                detail: Some(detail),
                user: self.user.clone(),
                ..NewAudit::new(action)
            })
            .await?;
        Ok(())
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
        let mut tasks = Vec::new();
        let mut seen = HashSet::new();
        let history = self
            .book
            .history(&current.id, limit.saturating_mul(4).max(limit))
            .await?;
        for event in history {
            let Some(task_id) = event.task_id else {
                continue;
            };
            if event.kind != ScheduleEventKind::ScheduleFired || !seen.insert(task_id.clone()) {
                continue;
            }
            match self.tasks.task(&task_id).await {
                Ok(task) => tasks.push(task),
                Err(pp_tasks::Error::NotFound { .. }) => {}
                Err(error) => return Err(error.into()),
            }
            if tasks.len() >= limit {
                break;
            }
        }
        Ok(tasks)
    }

    fn now(&self) -> Timestamp {
        self.book.now()
    }

    /// Validates and stores a new schedule; its first occurrence is the first after now.
    pub async fn create(&self, request: ScheduleRequest, actor: Actor) -> Result<Schedule> {
        let (spec, timetable) = self.validate(request.clone(), None)?;
        let new = NewSchedule {
            next_fire_at: timetable.next_after(self.now()),
            spec,
            enabled: request.enabled,
            created_by: actor,
        };
        let schedule = self.book.create(&new).await?;
        let detail = format!(
            "{} `{}` in workspace `{}`{}",
            schedule.id,
            schedule.spec.cron,
            schedule.spec.workspace,
            if schedule.enabled { "" } else { " (disabled)" }
        );
        self.audit(AuditAction::ScheduleCreated, actor, &schedule, detail, None)
            .await?;
        Ok(schedule)
    }

    /// Replaces a schedule's definition (found by id or name); its next occurrence is
    /// recomputed from now.
    pub async fn edit(&self, id_or_name: &str, request: ScheduleRequest) -> Result<Schedule> {
        let current = self.find(id_or_name).await?;
        let (spec, timetable) = self.validate(request, Some(&current.spec.workspace))?;
        let next = timetable.next_after(self.now());
        let schedule = self.book.update(&current.id, &spec, next).await?;
        let detail = format!(
            "{} edited: `{}` in workspace `{}`",
            schedule.id, schedule.spec.cron, schedule.spec.workspace
        );
        self.audit(
            AuditAction::ScheduleUpdated,
            Actor::Operator,
            &schedule,
            detail,
            None,
        )
        .await?;
        Ok(schedule)
    }

    /// Enables (from the next occurrence after now: nothing missed while disabled is
    /// caught up) or disables a schedule; clears a pause reason.
    pub async fn set_enabled(&self, id_or_name: &str, enabled: bool) -> Result<Schedule> {
        let current = self.find(id_or_name).await?;
        let timetable = Timetable::parse(&current.spec.cron, &current.spec.time_zone)?;
        let next = timetable.next_after(self.now());
        let schedule = self.book.set_enabled(&current.id, enabled, next).await?;
        let detail = format!(
            "{} {}",
            schedule.id,
            if enabled { "enabled" } else { "disabled" }
        );
        self.audit(
            AuditAction::ScheduleUpdated,
            Actor::Operator,
            &schedule,
            detail,
            None,
        )
        .await?;
        Ok(schedule)
    }

    /// Fires a schedule now at a person's request (`actor`, recorded in its history):
    /// creates its task (`created_by: scheduler`, like every fire) and wakes the
    /// workers. Its timetable and overlap policy are left alone. A schedule whose
    /// workspace is gone is refused with [`SchedulerError::NotFound`] (and not paused:
    /// the person is told).
    pub async fn run_now(&self, id_or_name: &str, actor: Actor) -> Result<TaskRecord> {
        let current = self.find(id_or_name).await?;
        let workspace = stored_workspace(
            self.tasks.workspaces(),
            self.folders_resolve(),
            &current.spec.workspace,
        )
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
        let task = self.book.run_now(&current.id, task, actor).await?;
        self.tasks.wake_workers();
        let detail = format!("{} run now: task {}", current.id, task.id);
        self.audit(
            AuditAction::ScheduleRun,
            actor,
            &current,
            detail,
            Some(&task),
        )
        .await?;
        Ok(task)
    }

    /// Removes a schedule and its history (its tasks stay).
    pub async fn remove(&self, id_or_name: &str) -> Result<()> {
        let current = self.find(id_or_name).await?;
        self.book.delete(&current.id).await?;
        let detail = format!("{} removed (its tasks stay)", current.id);
        self.audit(
            AuditAction::ScheduleRemoved,
            Actor::Operator,
            &current,
            detail,
            None,
        )
        .await
    }

    /// One schedule, by id or name.
    pub async fn find(&self, id_or_name: &str) -> Result<Schedule> {
        Ok(self.book.find(id_or_name).await?)
    }

    /// Every schedule, by name.
    pub async fn list(&self) -> Result<Vec<Schedule>> {
        Ok(self.book.list().await?)
    }

    /// A schedule's history, newest first.
    pub async fn history(&self, id_or_name: &str, limit: usize) -> Result<Vec<ScheduleEvent>> {
        let current = self.find(id_or_name).await?;
        Ok(self.book.history(&current.id, limit).await?)
    }

    /// One round at the store clock's now: fires every due schedule (at most
    /// [`TICK_LIMIT`](crate::TICK_LIMIT)) and wakes the workers if a task was created.
    pub async fn tick(&self) -> Result<TickReport> {
        let now = self.now();
        self.tick_at(now).await
    }

    /// One round as if it were `now` (the store still stamps its rows with its clock).
    pub async fn tick_at(&self, now: Timestamp) -> Result<TickReport> {
        let report = tick_once(
            &self.book,
            self.tasks.workspaces(),
            self.folders_resolve(),
            self.script.as_ref(),
            now,
        )
        .await?;
        if report
            .outcomes
            .iter()
            .any(|(_, outcome)| matches!(outcome, TickOutcome::Fired { .. }))
        {
            self.tasks.wake_workers();
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
            let earliest = self.book.earliest_fire_at().await;
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
    /// configured workspace (stored by name) or, outside team mode, a folder's canonical
    /// path ([`Scheduler::with_folders`], or the one `current` already stores).
    fn validate(
        &self,
        request: ScheduleRequest,
        current: Option<&str>,
    ) -> Result<(ScheduleSpec, Timetable)> {
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
        let workspaces = self.tasks.workspaces();
        let workspace = match request.workspace.as_deref() {
            Some(folder)
                if workspaces.find(Some(folder)).is_none()
                    && is_folder_path(folder)
                    && self.folders_resolve()
                    && (self.folders || current == Some(folder)) =>
            {
                folder.to_owned()
            }
            wanted => workspaces
                .find(wanted)
                .ok_or_else(|| SchedulerError::NotFound {
                    what: "workspace",
                    id: wanted.unwrap_or("(default)").to_owned(),
                })?
                .name
                .clone(),
        };
        let spec = ScheduleSpec {
            name: name.to_owned(),
            cron: request.cron.trim().to_owned(),
            time_zone,
            prompt: prompt.to_owned(),
            workspace,
            session: request.session,
            overlap: request.overlap,
        };
        Ok((spec, timetable))
    }
}
