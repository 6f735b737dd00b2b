//! The service: creating tasks, the worker pool, cancel, retry and recovery.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use pp_agent::{EventSink, Tool};
use pp_store::{NewTask, Store, TaskChange};
use pp_types::{Actor, ApprovalState, Event, EventKind, NewAudit, TaskId, TaskRecord, TaskState};
use serde_json::Value;
use tokio::sync::{Notify, Semaphore, oneshot};
use tokio::task::JoinSet;

use crate::runner::{Start, new_approval, run_segment};
use crate::{Error, ModelSource, Result, TaskSettings, Workspaces};

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

/// Shared state of the service.
pub(crate) struct Inner {
    /// The database every state change goes through.
    pub(crate) store: Arc<Store>,
    /// Limits, pool size, timeout.
    pub(crate) settings: TaskSettings,
    /// Where tasks may run.
    pub(crate) workspaces: Workspaces,
    /// Where tasks get their model.
    pub(crate) models: ModelSource,
    /// Extra tools registered without the capability check (evals only).
    pub(crate) extra_tools: Vec<Arc<dyn Tool>>,
    /// Sees every event as it happens (the CLI's live view).
    pub(crate) observer: Option<Arc<dyn EventSink>>,
    /// One permit per worker; fresh runs and resumed runs both take one.
    pub(crate) workers: Arc<Semaphore>,
    /// Wakes the dispatcher when a task is queued in this process.
    pub(crate) wake: Notify,
    /// Cancellation signals of the segments running in this process.
    cancellations: Mutex<HashMap<TaskId, Arc<Cancellation>>>,
    /// Owns every spawned run and the dispatcher: dropping the service aborts them.
    tasks: Mutex<JoinSet<()>>,
}

/// A cancellation signal for one task run, registered before the run waits for a worker
/// so a cancel that arrives meanwhile is never lost.
#[derive(Default)]
pub(crate) struct Cancellation {
    /// Set once cancelled; checked before anything runs.
    flag: AtomicBool,
    /// Wakes a running segment.
    notify: Notify,
}

impl Cancellation {
    fn cancel(&self) {
        self.flag.store(true, Ordering::SeqCst);
        self.notify.notify_one();
    }

    /// Whether the run was cancelled.
    pub(crate) fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    /// Completes once the run is cancelled.
    pub(crate) async fn cancelled(&self) {
        if !self.is_cancelled() {
            self.notify.notified().await;
        }
    }
}

impl Inner {
    /// The cancellation signal of `task`'s run in this process (created on first use).
    pub(crate) fn cancellation(&self, task: &TaskId) -> Arc<Cancellation> {
        match self.cancellations.lock() {
            Ok(mut map) => Arc::clone(map.entry(task.clone()).or_default()),
            Err(_) => Arc::new(Cancellation::default()),
        }
    }

    /// Forgets a finished run's signal.
    pub(crate) fn forget_cancellation(&self, task: &TaskId) {
        if let Ok(mut map) = self.cancellations.lock() {
            map.remove(task);
        }
    }

    fn signal_cancel(&self, task: &TaskId) -> bool {
        self.cancellations
            .lock()
            .ok()
            .and_then(|map| map.get(task).cloned())
            .map(|cancellation| cancellation.cancel())
            .is_some()
    }
}

impl TaskService {
    /// A service over `store`. Nothing runs until [`TaskService::start_workers`] or
    /// [`TaskService::run_now`].
    pub fn new(
        store: Arc<Store>,
        settings: TaskSettings,
        workspaces: Workspaces,
        models: ModelSource,
    ) -> Self {
        Self::build(store, settings, workspaces, models, Vec::new(), None)
    }

    /// A service with extra tools (evals) and an observer of every event (live views).
    pub fn build(
        store: Arc<Store>,
        settings: TaskSettings,
        workspaces: Workspaces,
        models: ModelSource,
        extra_tools: Vec<Arc<dyn Tool>>,
        observer: Option<Arc<dyn EventSink>>,
    ) -> Self {
        let workers = Arc::new(Semaphore::new(settings.workers.max(1)));
        Self {
            inner: Arc::new(Inner {
                store,
                settings,
                workspaces,
                models,
                extra_tools,
                observer,
                workers,
                wake: Notify::new(),
                cancellations: Mutex::new(HashMap::new()),
                tasks: Mutex::new(JoinSet::new()),
            }),
        }
    }

    /// The store.
    pub fn store(&self) -> &Arc<Store> {
        &self.inner.store
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
            ModelSource::Provider(_) => Ok(()),
            ModelSource::Scripted => Err("scripted tasks only".into()),
            ModelSource::Unconfigured(message) => Err(message.clone()),
        }
    }

    /// Stores a new `queued` task and wakes the workers.
    pub fn create(&self, request: CreateTask) -> Result<TaskRecord> {
        let prompt = request.prompt.trim();
        if prompt.is_empty() {
            return Err(Error::BadRequest("the prompt is empty".into()));
        }
        let workspace = self
            .inner
            .workspaces
            .find(request.workspace.as_deref())
            .ok_or_else(|| Error::NotFound {
                what: "workspace",
                id: request
                    .workspace
                    .clone()
                    .unwrap_or_else(|| "(default)".into()),
            })?;
        let task = self.inner.store.create_task(NewTask {
            prompt: prompt.to_owned(),
            workspace: workspace.name.clone(),
            workspace_path: workspace.path.display().to_string(),
            created_by: request.actor,
            script: request.script,
        })?;
        self.inner.wake.notify_one();
        Ok(task)
    }

    /// Starts the dispatcher: claims queued tasks (also those queued by other processes,
    /// noticed by polling) whenever a worker is free.
    pub fn start_workers(&self) {
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
                    let _ = service.recover();
                    last_recovery = tokio::time::Instant::now();
                }
                match service.inner.store.claim_queued() {
                    Ok(Some(task)) => {
                        service.inner.cancellation(&task.id);
                        let run_inner = Arc::clone(&service.inner);
                        service.spawn(async move {
                            let _permit = permit;
                            run_segment(&run_inner, task, Start::Fresh).await;
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
        let task = self
            .inner
            .store
            .claim(task, &[TaskState::Queued])
            .map_err(Error::from_store)?;
        let record = run_segment(&self.inner, task, Start::Fresh).await;
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
        let inner = Arc::clone(&self.inner);
        self.spawn(async move {
            let Ok(_permit) = Arc::clone(&inner.workers).acquire_owned().await else {
                return;
            };
            let record = run_segment(&inner, task, start).await;
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

    /// Cancels a task that has not ended: a queued or waiting task at once (its pending
    /// approval is cancelled), a running one as soon as its segment notices.
    pub async fn cancel(&self, id: &TaskId) -> Result<TaskRecord> {
        let record = self.cancel_quietly(id).await?;
        self.inner.store.append_audit(NewAudit {
            actor: Some(Actor::Operator),
            action: "task_cancelled".into(),
            task_id: Some(id.clone()),
            ..NewAudit::default()
        })?;
        Ok(record)
    }

    async fn cancel_quietly(&self, id: &TaskId) -> Result<TaskRecord> {
        let task = self.inner.store.task(id).map_err(Error::from_store)?;
        if task.state == TaskState::Running && self.inner.signal_cancel(id) {
            // Our own worker stores the cancellation; wait until it has.
            for _ in 0..200 {
                let current = self.inner.store.task(id)?;
                if current.state != TaskState::Running {
                    return Ok(current);
                }
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            return Ok(self.inner.store.task(id)?);
        }
        let from = [
            TaskState::Queued,
            TaskState::WaitingApproval,
            TaskState::Running,
            TaskState::Interrupted,
        ];
        if !from.contains(&task.state) {
            return Err(Error::InvalidState {
                id: id.to_string(),
                state: task.state,
                action: "cancel",
            });
        }
        let event = Event {
            step: 0,
            kind: EventKind::TaskCancelled {
                message: "cancelled by the operator".into(),
            },
        };
        self.inner
            .store
            .cancel(id, &from, "cancelled by the operator", vec![event])
            .map_err(|error| match error {
                pp_store::Error::Conflict { current, .. } => Error::InvalidState {
                    id: id.to_string(),
                    state: current,
                    action: "cancel",
                },
                other => Error::from_store(other),
            })
    }

    /// Retries an interrupted task from its last checkpoint. If the interruption fell
    /// between an approval and its result, the approval is asked again (never re-run
    /// blind); otherwise the task starts again from its prompt (reads are safe to repeat
    /// and every write still asks).
    pub fn retry(&self, id: &TaskId) -> Result<TaskRecord> {
        let task = self.inner.store.task(id).map_err(Error::from_store)?;
        if task.state != TaskState::Interrupted {
            return Err(Error::InvalidState {
                id: id.to_string(),
                state: task.state,
                action: "retry",
            });
        }
        let last = self.inner.store.approvals_for_task(id)?.into_iter().last();
        let audit = |detail: &str| NewAudit {
            actor: Some(Actor::Operator),
            action: "task_retried".into(),
            task_id: Some(id.clone()),
            detail: Some(detail.to_owned()),
            ..NewAudit::default()
        };
        if let Some(approval) = last.filter(|a| a.state == ApprovalState::Approved) {
            let message = format!(
                "the process stopped after `{}` was approved and before its result was \
                 recorded; asking for that approval again",
                approval.tool
            );
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
            self.inner
                .store
                .reopen_approval(
                    id,
                    &[TaskState::Interrupted],
                    new_approval(checkpoint),
                    events,
                )
                .map_err(Error::from_store)?;
            self.inner.store.append_audit(audit(&message))?;
            return Ok(self.inner.store.task(id)?);
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
        let (record, _) = self
            .inner
            .store
            .transition(id, &[TaskState::Interrupted], change)
            .map_err(Error::from_store)?;
        self.inner.store.append_audit(audit(&message))?;
        self.inner.wake.notify_one();
        Ok(record)
    }

    /// Tasks whose process stopped (no heartbeat for [`TaskSettings::lease`]) become
    /// `interrupted` — never re-run blindly. Tasks a live process is running (a CLI `run`,
    /// another server) are left alone. `serve` calls it at start-up, and the workers call
    /// it as they poll.
    pub fn recover(&self) -> Result<Vec<TaskId>> {
        let ids = self.inner.store.interrupt_stale(
            "the process running this task stopped",
            self.inner.settings.lease,
        )?;
        for id in &ids {
            self.inner.store.append_events(
                id,
                &[Event {
                    step: 0,
                    kind: EventKind::TaskInterrupted {
                        message: "the process running this task stopped; retry to continue".into(),
                    },
                }],
            )?;
        }
        Ok(ids)
    }
}
