//! The service: creating tasks, the worker pool, cancel, retry and recovery.

use std::ops::Deref;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use pp_agent::EventSink;
use pp_store::{NewTask, Recovered, Store, TaskChange, WorkerRecord};
use pp_tools::Toolbox;
use pp_types::{
    Actor, ApprovalState, AuditAction, Event, EventKind, NewAudit, TaskId, TaskRecord, TaskState,
};
use serde_json::Value;
use tokio::sync::{TryAcquireError, oneshot};
use tokio::task::JoinSet;

use crate::access::Caller;
use crate::error::{Error, Result};
use crate::model::ModelSource;
use crate::runner::{Start, cancel_audit, new_approval, run_segment};
use crate::settings::{TaskSettings, Workspaces};
use crate::shared::Shared;
use crate::workers::{REMEMBER_LEASES, heartbeat_every, serves, waiting_reason};

/// A request to create a task.
#[derive(Debug, Clone)]
pub struct CreateTask {
    /// What the person wants done.
    pub prompt: String,
    /// A configured workspace's name; `None` for the default.
    pub workspace: Option<String>,
    /// Who asked (operator, scheduler, webhook).
    pub actor: Actor,
    /// A script for the scripted model (tests, demos, `--script`).
    pub script: Option<Value>,
}

/// The task service. Cheap to clone; all clones share one worker pool.
#[derive(Clone)]
pub struct TaskService {
    pub(crate) inner: Arc<Inner>,
}

/// The service's own state: what its runs share, plus the set that owns them.
pub(crate) struct Inner {
    /// What every run of this service shares (store, settings, workers, cancellations).
    pub(crate) shared: Arc<Shared>,
    /// Owns every spawned run and the dispatcher: dropping the service aborts them.
    tasks: Mutex<JoinSet<()>>,
}

impl Deref for Inner {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.shared
    }
}

impl TaskService {
    /// A service over `store`. Nothing runs until [`TaskService::start_workers`] or
    /// [`TaskService::run_now`].
    pub fn new(
        store: Store,
        settings: TaskSettings,
        workspaces: Workspaces,
        models: ModelSource,
    ) -> Self {
        Self::build(store, settings, workspaces, models, Toolbox::files(), None)
    }

    /// A service whose segments are equipped from `toolbox` (files, memory, skills, ...),
    /// with an optional observer of every event (live views).
    pub fn build(
        store: Store,
        settings: TaskSettings,
        workspaces: Workspaces,
        models: ModelSource,
        toolbox: Toolbox,
        observer: Option<Arc<dyn EventSink>>,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                shared: Arc::new(Shared::new(
                    store, settings, workspaces, models, toolbox, observer,
                )),
                tasks: Mutex::new(JoinSet::new()),
            }),
        }
    }

    /// The same service, keeping revert snapshots in `data_dir` and reaching the memory
    /// file there (the folder `[memory]` uses). Without it they live beside the SQLite
    /// database; a service on a server database (PostgreSQL) needs it for reverts and
    /// the memory's change log. Call it before the service runs anything.
    #[must_use]
    pub fn with_data_dir(self, data_dir: std::path::PathBuf) -> Self {
        self.inner.set_data_dir(data_dir);
        self
    }

    /// The same service, its memory change log (the approved `memory_write`s and their
    /// reverts) in `memory`: the `[memory]` folder's file, or the team's memory in the
    /// database. Without it, the memory file in the data directory. Call it before the
    /// service runs anything.
    #[must_use]
    pub fn with_memory(self, memory: pp_tools::memory::Memory) -> Self {
        self.inner.set_memory(memory);
        self
    }

    /// The same service, with a cancel of a running task waiting at most `wait` (default
    /// 5 s) for the running call to stop before answering that the cancel is under way
    /// ([`TaskService::cancel`]). Call it before the service runs anything.
    #[must_use]
    pub fn with_cancel_wait(self, wait: std::time::Duration) -> Self {
        self.inner.set_cancel_wait(wait);
        self
    }

    /// Whether a cancel of `task` was asked for in this process and it still runs,
    /// because its current call has not stopped yet: `cancel_requested` in the task's
    /// view. False once the task is no longer `running`.
    pub fn cancel_requested(&self, task: &TaskRecord) -> bool {
        task.state == TaskState::Running && self.inner.cancel_pending(&task.id)
    }

    /// The store, for the narrow views the modules beside the service build over it (the
    /// change log's `ChangeBook`, the access checks' `CallerBook`) and for the
    /// maintenance calls (`admin.rs`). Never public: front ends go through the service,
    /// and the crates beside it are handed the store by the binary.
    pub(crate) fn store(&self) -> &Store {
        &self.inner.store
    }

    /// The data directory (snapshots, the memory file), if there is one.
    pub(crate) fn data_dir(&self) -> Option<std::path::PathBuf> {
        self.inner.data_dir()
    }

    /// The memory (the file or the team's), if it can be reached.
    pub(crate) fn memory(&self) -> Option<pp_tools::memory::Memory> {
        self.inner.memory()
    }

    /// The folder `task` runs in here ([`Shared::workspace_root`]).
    pub(crate) fn workspace_root(&self, task: &TaskRecord) -> Result<String> {
        self.inner.workspace_root(task)
    }

    /// The configured workspaces.
    pub fn workspaces(&self) -> &Workspaces {
        &self.inner.workspaces
    }

    /// The settings.
    pub fn settings(&self) -> &TaskSettings {
        &self.inner.settings
    }

    /// Whether tasks without a script can run.
    pub fn model_status(&self) -> std::result::Result<(), String> {
        match &self.inner.models {
            ModelSource::Provider(_) | ModelSource::Driven(_) => Ok(()),
            ModelSource::Scripted => Err("scripted tasks only".into()),
            ModelSource::Unconfigured(message) => Err(message.clone()),
        }
    }

    /// The model tasks without a script run on, for people: `<provider>:<model>`
    /// ([`pp_agent::Model::name`]), `scripted` when every task carries its script, or
    /// `none` when nothing is configured.
    pub fn model_name(&self) -> String {
        match &self.inner.models {
            ModelSource::Provider(model) | ModelSource::Driven(model) => model.name(),
            ModelSource::Scripted => "scripted".to_owned(),
            ModelSource::Unconfigured(_) => "none".to_owned(),
        }
    }

    /// Stores a new `queued` task and wakes the workers.
    pub async fn create(&self, request: CreateTask) -> Result<TaskRecord> {
        self.create_from(request, None).await
    }

    /// Like [`TaskService::create`], naming the schedule, webhook channel or MCP client
    /// that started the task (`TaskRecord::origin`).
    pub async fn create_from(
        &self,
        request: CreateTask,
        origin: Option<String>,
    ) -> Result<TaskRecord> {
        self.create_recorded(request, origin, None).await
    }

    /// Like [`TaskService::create`], recording `user` (team mode) as the task's creator
    /// (`TaskRecord::created_by_user`) and on its `task_created` audit row.
    pub async fn create_as_user(
        &self,
        request: CreateTask,
        user: Option<String>,
    ) -> Result<TaskRecord> {
        self.create_recorded(request, None, user).await
    }

    /// Records `user` as the creator of task `id` if none is recorded (chat turns).
    pub async fn set_task_user(&self, id: &TaskId, user: &str) -> Result<()> {
        Ok(self.inner.store.set_task_user(id, user).await?)
    }

    /// Creates a task with its origin and the team user who asked.
    pub(crate) async fn create_recorded(
        &self,
        request: CreateTask,
        origin: Option<String>,
        user: Option<String>,
    ) -> Result<TaskRecord> {
        let prompt = request.prompt.trim();
        if prompt.is_empty() {
            return Err(Error::BadRequest("the prompt is empty".into()));
        }
        let (workspace, workspace_path) = self.workspace_for(request.workspace.as_deref()).await?;
        let new = NewTask {
            prompt: prompt.to_owned(),
            workspace,
            workspace_path,
            created_by: request.actor,
            origin,
            script: request.script,
        };
        let task = self
            .inner
            .store
            .create_task_as(new, user.as_deref())
            .await?;
        self.inner.wake.notify_one();
        Ok(task)
    }

    /// Wakes the workers to claim queued tasks now: for tasks created in a store
    /// transaction of their own (a schedule's fire, a chat turn), not by `create`.
    pub fn wake_workers(&self) {
        self.inner.wake.notify_one();
    }

    /// The workspace a new task names and its path here: a configured one (the default
    /// when `name` is `None`), or in team mode also one only another worker has, or had
    /// within ten leases ([`TaskSettings::lease`]) (stored without a path:
    /// workers run tasks at their own folder for the name; while no live worker has it,
    /// the task waits and says why, [`TaskService::waiting_reason`]).
    async fn workspace_for(&self, name: Option<&str>) -> Result<(String, String)> {
        if let Some(workspace) = self.inner.workspaces.find(name) {
            return Ok((workspace.name.clone(), workspace.path.display().to_string()));
        }
        let missing = || Error::NotFound {
            what: "workspace",
            id: name.unwrap_or("(default)").to_owned(),
        };
        let (Some(name), Some(_)) = (name, &self.inner.settings.team) else {
            return Err(missing());
        };
        if serves(&self.recent_workers().await?, name) {
            Ok((name.to_owned(), String::new()))
        } else {
            Err(missing())
        }
    }

    /// Starts the dispatcher: claims queued tasks (also those queued by other processes,
    /// noticed by polling) whenever a worker is free. In team mode the process also
    /// registers in the worker registry and sends heartbeats there, and claims only
    /// tasks of the workspaces it has (`workers.rs`).
    pub fn start_workers(&self) {
        if let Some(team) = self.inner.settings.team.clone() {
            let weak = Arc::downgrade(&self.inner);
            let every = heartbeat_every(self.inner.settings.lease);
            self.spawn(async move {
                loop {
                    let Some(inner) = weak.upgrade() else { return };
                    // A failed heartbeat is retried at the next beat; the tasks' own
                    // heartbeats (not this one) decide what is interrupted.
                    let _ = inner.shared.worker_heartbeat(&team).await;
                    drop(inner);
                    tokio::time::sleep(every).await;
                }
            });
        }
        // The dispatcher holds the service weakly: it lives in the service's own task
        // set, and a strong reference would keep the service (and itself) alive forever.
        let weak = Arc::downgrade(&self.inner);
        let (workers, poll, lease) = (
            Arc::clone(&self.inner.workers),
            self.inner.settings.poll_interval,
            self.inner.settings.lease,
        );
        self.spawn(async move {
            let mut last_recovery = tokio::time::Instant::now();
            loop {
                let Ok(permit) = Arc::clone(&workers).acquire_owned().await else {
                    return;
                };
                let Some(inner) = weak.upgrade() else { return };
                let service = TaskService { inner };
                if last_recovery.elapsed() >= lease {
                    let _ = service.recover().await;
                    last_recovery = tokio::time::Instant::now();
                }
                match service.inner.claim_next().await {
                    Ok(Some(task)) => {
                        service.inner.cancellation(&task.id);
                        let shared = Arc::clone(&service.inner.shared);
                        service.spawn(async move {
                            let _permit = permit;
                            // A retry that continues resumes its changeset's checkpoint.
                            let start = crate::retry::start_of(&shared.store, &task).await;
                            run_segment(&shared, task, start, true).await;
                        });
                    }
                    Ok(None) | Err(_) => {
                        drop(permit);
                        let wake = async { service.inner.wake.notified().await };
                        tokio::select! {
                            () = wake => {}
                            () = tokio::time::sleep(poll) => {}
                        }
                    }
                }
            }
        });
    }

    /// Claims `task` (which must be `queued`) and runs it here until it finishes or
    /// waits for approval; used by `pocketpilot run` and the eval runner.
    pub async fn run_now(&self, task: &TaskId) -> Result<TaskRecord> {
        let permit = Arc::clone(&self.inner.workers)
            .acquire_owned()
            .await
            .map_err(|_| Error::BadRequest("the service is shutting down".into()))?;
        let task = self.inner.store.claim(task, &[TaskState::Queued]).await?;
        self.inner.cancellation(&task.id);
        let start = crate::retry::start_of(&self.inner.store, &task).await;
        let record = run_segment(&self.inner.shared, task, start, true).await;
        drop(permit);
        Ok(record)
    }

    /// Spawns a resumed or fresh segment on the pool; the receiver gets the task as stored
    /// when the segment ends.
    pub(crate) fn spawn_segment(
        &self,
        task: TaskRecord,
        start: Start,
    ) -> oneshot::Receiver<TaskRecord> {
        let (sender, receiver) = oneshot::channel();
        // Registered now, so a cancel while the run waits for a worker is not lost.
        self.inner.cancellation(&task.id);
        let shared = Arc::clone(&self.inner.shared);
        self.spawn(async move {
            let mut start = start;
            // A run that gets a worker at once starts from `task` as the caller stored it;
            // one that had to wait reads it again first.
            let (_permit, waited) = match Arc::clone(&shared.workers).try_acquire_owned() {
                Ok(permit) => (permit, false),
                Err(TryAcquireError::NoPermits) => {
                    // A run that waits for a worker keeps no segment built for it (the
                    // tools, their schemas and the gate: tens of kilobytes, for each of
                    // hundreds of resumes waiting under load); it builds a fresh one when
                    // a worker takes it, and every approved call is checked again right
                    // before it runs, against that segment.
                    if let Start::Resume { segment, .. } = &mut start {
                        *segment = None;
                    }
                    match Arc::clone(&shared.workers).acquire_owned().await {
                        Ok(permit) => (permit, true),
                        Err(_) => return,
                    }
                }
                Err(TryAcquireError::Closed) => return,
            };
            // Boxed: a run's future is kilobytes, and a run waiting for a worker should
            // not hold that much before it starts.
            let record = Box::pin(run_segment(&shared, task, start, waited)).await;
            let _ = sender.send(record);
        });
        receiver
    }

    fn spawn(&self, future: impl Future<Output = ()> + Send + 'static) {
        if let Ok(mut tasks) = self.inner.tasks.lock() {
            // Reap finished runs so the set does not grow without bound.
            while tasks.try_join_next().is_some() {}
            tasks.spawn(future);
        }
    }

    /// Cancels a task that has not ended: a queued, waiting or interrupted task at once
    /// (its pending approval is cancelled), a running one as soon as its segment notices.
    ///
    /// The task returned says what happened: `cancelled` (also when it already was), or
    /// still `running` when its run in this process was told to stop but its current
    /// call has not stopped within the wait ([`TaskService::with_cancel_wait`]): the
    /// cancel is under way ([`TaskService::cancel_requested`]) and the task becomes
    /// `cancelled` once the call has stopped.
    ///
    /// Exactly one of a cancel and a racing resolve wins: if the person's approval was
    /// recorded first, or the task is about to run a call they approved, the cancel is
    /// refused with [`Error::InvalidState`]; a running task that ends some other way
    /// before the cancel reaches it is reported the same way. The audit row is written in
    /// the transaction that cancels, so the ledger never records a cancel that did not
    /// happen.
    pub async fn cancel(&self, id: &TaskId) -> Result<TaskRecord> {
        self.cancel_as(id, &Caller::operator()).await
    }

    /// [`TaskService::cancel`] for `caller`, whose team user the audit row names
    /// (whether they may is the caller's check: [`TaskService::authorize`]).
    pub async fn cancel_as(&self, id: &TaskId, caller: &Caller) -> Result<TaskRecord> {
        let by = caller.user.as_deref();
        let refused = |state| Error::InvalidState {
            id: id.to_string(),
            state,
            action: "cancel",
        };
        let task = self.inner.store.task(id).await?;
        if task.state == TaskState::Cancelled {
            return Ok(task);
        }
        if task.state == TaskState::Running {
            if self.inner.store.approved_call_pending(id).await? {
                return Err(refused(TaskState::Running));
            }
            if self.inner.signal_cancel(id, by) {
                // Our own worker stores the cancellation once the running call has
                // stopped: wait for it a while, then say it is under way.
                let current = self.wait_until_not_running(id).await?;
                return match current.state {
                    TaskState::Cancelled | TaskState::Running => Ok(current),
                    other => Err(refused(other)),
                };
            }
        }
        let from = [
            TaskState::Queued,
            TaskState::WaitingApproval,
            TaskState::Running,
            TaskState::Interrupted,
        ];
        if !from.contains(&task.state) {
            return Err(refused(task.state));
        }
        let mut change = TaskChange::to(TaskState::Cancelled);
        change.error = Some("cancelled by the operator".into());
        change.events = vec![Event {
            step: 0,
            kind: EventKind::TaskCancelled {
                message: "cancelled by the operator".into(),
            },
        }];
        match self
            .inner
            .store
            .cancel_task(id, &from, change, cancel_audit(id, by.map(str::to_owned)))
            .await
        {
            Ok(record) => Ok(record),
            // Cancelled meanwhile (another tab, another process): what was asked is done.
            Err(pp_store::Error::Conflict {
                current: TaskState::Cancelled,
                ..
            }) => Ok(self.inner.store.task(id).await?),
            Err(pp_store::Error::Conflict { current, .. }) => Err(refused(current)),
            Err(pp_store::Error::ApprovedCallPending { .. }) => Err(refused(TaskState::Running)),
            Err(other) => Err(Error::from_store(other)),
        }
    }

    /// Polls the store until `id` is no longer `running` (our own worker is storing its
    /// end); gives the state as found after at most the cancel wait.
    async fn wait_until_not_running(&self, id: &TaskId) -> Result<TaskRecord> {
        let deadline = tokio::time::Instant::now() + self.inner.cancel_wait();
        loop {
            let current = self.inner.store.task(id).await?;
            if current.state != TaskState::Running || tokio::time::Instant::now() >= deadline {
                return Ok(current);
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }

    /// Retries an interrupted task from its last checkpoint. If the interruption fell
    /// between an approval and its result, the approval is asked again (never re-run
    /// blind); otherwise the task starts again from its prompt (reads are safe to repeat
    /// and every write still asks).
    pub async fn retry(&self, id: &TaskId) -> Result<TaskRecord> {
        self.retry_as(id, &Caller::operator()).await
    }

    /// [`TaskService::retry`] for `caller`, whose team user the audit row names
    /// (whether they may is the caller's check: [`TaskService::authorize`]).
    pub async fn retry_as(&self, id: &TaskId, caller: &Caller) -> Result<TaskRecord> {
        let record = retry_in(&self.inner.store, id, caller.user.as_deref())
            .await
            .map_err(Error::from_store)
            .map_err(|error| match error {
                Error::Store(pp_store::Error::Conflict { current, .. }) => Error::InvalidState {
                    id: id.to_string(),
                    state: current,
                    action: "retry",
                },
                other => other,
            })?;
        if record.state == TaskState::Queued {
            self.inner.wake.notify_one();
        }
        Ok(record)
    }

    /// The worker processes that sent a heartbeat within two leases (team mode; every
    /// process registers itself when its workers start).
    pub async fn live_workers(&self) -> Result<Vec<WorkerRecord>> {
        let within = self.inner.settings.lease.saturating_mul(2);
        Ok(self.inner.store.live_workers(within).await?)
    }

    /// The workers that sent a heartbeat within ten leases ([`TaskSettings::lease`]):
    /// the live ones and those that died recently, whose workspace
    /// names new tasks may still name (they wait until a worker that has it starts).
    pub async fn recent_workers(&self) -> Result<Vec<WorkerRecord>> {
        let within = self.inner.settings.lease.saturating_mul(REMEMBER_LEASES);
        Ok(self.inner.store.live_workers(within).await?)
    }

    /// Why `task` is still queued, when it is because no live worker has its workspace
    /// (team mode): such a task waits, and says so, until one that has it starts.
    pub async fn waiting_reason(&self, task: &TaskRecord) -> Result<Option<String>> {
        if self.inner.settings.team.is_none() || task.state != TaskState::Queued {
            return Ok(None);
        }
        let workers = self.live_workers().await?;
        Ok(waiting_reason(task, &workers))
    }

    /// Removes this process from the worker registry for good (a clean shutdown; a
    /// process that dies is forgotten when its heartbeats stop). Later heartbeats do not
    /// register it again.
    pub async fn leave(&self) -> Result<()> {
        self.inner.registration.left.store(true, Ordering::SeqCst);
        if let Some(id) = self.inner.registration.get() {
            self.inner.store.remove_worker(&id).await?;
            self.inner.registration.set(None);
        }
        Ok(())
    }

    /// Tasks whose process stopped (no heartbeat for [`TaskSettings::lease`]) become
    /// `interrupted` — never re-run blindly. A task whose cancel was requested before its
    /// process stopped ([`TaskService::request_cancel_and_leave`]) ends `cancelled`
    /// instead. Tasks a live process is running (a CLI `run`, another server) are left
    /// alone. `serve` calls it at start-up, and the workers call it as they poll.
    pub async fn recover(&self) -> Result<Recovered> {
        let lease = self.inner.settings.lease;
        let store = &self.inner.store;
        let recovered = store
            .interrupt_stale("the process running this task stopped", lease)
            .await?;
        for id in &recovered.interrupted {
            store
                .append_events(
                    id,
                    &[Event {
                        step: 0,
                        kind: EventKind::TaskInterrupted {
                            message: "the process running this task stopped; retry to continue"
                                .into(),
                        },
                    }],
                )
                .await?;
        }
        Ok(recovered)
    }

    /// Records durably that `caller` asked to cancel the running task `id` and that this
    /// process leaves it now, without waiting for its running call to stop (a second
    /// Ctrl+C in `pocketpilot run`, just before the process exits). The task gets no more
    /// heartbeats, and the next recovery ([`TaskService::recover`], in any process) ends
    /// it `cancelled`, not `interrupted`. `false` when the task is not running (nothing
    /// is recorded). Whether the caller may cancel is the caller's check
    /// ([`TaskService::authorize`]).
    pub async fn request_cancel_and_leave(&self, id: &TaskId, caller: &Caller) -> Result<bool> {
        Ok(self
            .inner
            .store
            .request_cancel(id, caller.user.as_deref())
            .await?)
    }
}

/// [`TaskService::retry`]'s store work. A task that is not `interrupted` is a
/// [`pp_store::Error::Conflict`]. Several calls, not one transaction: the compare-and-set
/// of `reopen_approval` / `transition` (from `interrupted` only) is what makes a racing
/// second retry lose.
async fn retry_in(store: &Store, id: &TaskId, user: Option<&str>) -> pp_store::Result<TaskRecord> {
    let task = store.task(id).await?;
    if task.state != TaskState::Interrupted {
        return Err(pp_store::Error::Conflict {
            id: id.to_string(),
            current: task.state,
            expected: vec![TaskState::Interrupted],
        });
    }
    // Nothing of the task runs now: an approved call that started and has no result
    // may or may not have run. The approval that asks it again says so.
    let cut = store.mark_cut_calls(id).await?;
    let approvals = store.approvals_for_task(id).await?;
    let last = approvals.last().cloned();
    let audit = |detail: &str| NewAudit {
        actor: Some(Actor::Operator),
        task_id: Some(id.clone()),
        detail: Some(detail.to_owned()),
        user: user.map(str::to_owned),
        ..NewAudit::new(AuditAction::TaskRetried)
    };
    // Ask again only for an approved call whose outcome never reached the ledger; one
    // that ran (its result is recorded) is never offered for approval a second time.
    let unfinished = last.filter(|a| a.state == ApprovalState::Approved);
    // A changeset of several calls is not asked again call by call (some of its calls
    // may have run, and the model must see every result of its turn): the task starts
    // again from the prompt, and every side effect is asked for again.
    let unfinished = match unfinished {
        Some(approval)
            if approval.checkpoint.more_pending.is_empty()
                && store.approved_call_pending(id).await? =>
        {
            Some(approval)
        }
        _ => None,
    };
    if let Some(approval) = unfinished {
        let message = if cut > 0 {
            format!(
                "the process stopped after `{}` started and before its result was \
                 recorded: this call may already have run; asking for it again",
                approval.tool
            )
        } else {
            format!(
                "the process stopped after `{}` was approved and before its result was \
                 recorded; asking for that approval again",
                approval.tool
            )
        };
        let event = |kind| Event {
            step: approval.checkpoint.step,
            kind,
        };
        let mut checkpoint = approval.checkpoint.clone();
        checkpoint.events.clear();
        let events = vec![
            event(EventKind::TaskRetried {
                message: message.clone(),
            }),
            event(EventKind::approval_required(&checkpoint.pending)),
        ];
        let asked = store
            .reopen_approval(
                id,
                &[TaskState::Interrupted],
                new_approval(
                    checkpoint,
                    &approval.call_id,
                    approval.target.clone(),
                    approval.revertible,
                ),
                events,
            )
            .await?;
        crate::retry::ask_again(store, std::slice::from_ref(&asked)).await;
        store.append_audit(audit(&message)).await?;
        return store.task(id).await;
    }
    // Otherwise continue after the newest changeset whose calls all have an answer on
    // record (a chat turn starts again: its history is rebuilt from the session).
    if store.turn_of_task(id).await?.is_none() {
        let events = store.task_events(id, 0).await?;
        if let Some(continuation) = crate::retry::continuation(&approvals, &events) {
            let message = continuation.describe();
            let step = continuation
                .approvals
                .first()
                .map_or(0, |approval| approval.checkpoint.step);
            let mut change = TaskChange::to(TaskState::Queued);
            change.events = vec![Event {
                step,
                kind: EventKind::TaskRetried {
                    message: message.clone(),
                },
            }];
            // The worker that claims it resumes the changeset's checkpoint
            // (`retry::start_of`); a scripted model goes on from there.
            change.script_position = Some(continuation.model_calls().max(1));
            let (record, _) = store
                .transition(id, &[TaskState::Interrupted], change)
                .await?;
            store.append_audit(audit(&message)).await?;
            return Ok(record);
        }
    }
    let message = "starting again from the prompt".to_owned();
    let mut change = TaskChange::to(TaskState::Queued);
    change.events = vec![Event {
        step: 0,
        kind: EventKind::TaskRetried {
            message: message.clone(),
        },
    }];
    change.script_position = Some(0);
    let (record, _) = store
        .transition(id, &[TaskState::Interrupted], change)
        .await?;
    store.append_audit(audit(&message)).await?;
    Ok(record)
}
