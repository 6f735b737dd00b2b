//! What the service and its runs share: the store (async: its SQLite calls run on the
//! blocking pool inside `pp_store`), settings, workspaces, the model source, the worker
//! permits and the cancellation signals of the runs in this process.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use pp_agent::EventSink;
use pp_store::Store;
use pp_types::TaskId;
use tokio::sync::{Notify, Semaphore};

use crate::blocking::blocking;
use crate::error::Result;
use crate::model::ModelSource;
use crate::segment::Segment;
use crate::settings::{TaskSettings, Workspaces};

/// Most decisions checked at once; the others wait their turn, in order. Each one builds
/// a segment (the tools, their schemas and a gate: tens of kilobytes) and checks the
/// call on the blocking pool: a thousand decisions arriving together used to make a
/// thousand segments and a hundred threads at once, for no more throughput than the
/// cores give.
pub(crate) const DECISIONS_IN_FLIGHT: usize = 16;

/// State shared by the service and every run it starts.
pub(crate) struct Shared {
    /// The database every state change goes through (cheap to clone; its methods are
    /// async and never block the runtime threads).
    pub(crate) store: Store,
    /// Limits, pool size, timeout.
    pub(crate) settings: TaskSettings,
    /// Where tasks may run.
    pub(crate) workspaces: Workspaces,
    /// Where tasks get their model.
    pub(crate) models: ModelSource,
    /// The tool providers every segment is equipped from.
    pub(crate) toolbox: Arc<pp_tools::Toolbox>,
    /// Sees every event as it happens (the CLI's live view).
    pub(crate) observer: Option<Arc<dyn EventSink>>,
    /// One permit per worker; fresh runs and resumed runs both take one.
    pub(crate) workers: Arc<Semaphore>,
    /// One permit per decision being checked and recorded ([`DECISIONS_IN_FLIGHT`]).
    pub(crate) decisions: Semaphore,
    /// Wakes the dispatcher when a task is queued in this process.
    pub(crate) wake: Notify,
    /// Cancellation signals of the segments running in this process.
    cancellations: Mutex<HashMap<TaskId, Arc<Cancellation>>>,
    /// One lock per workspace root: an approved command holds its workspace alone
    /// from its snapshot to its recorded changes, other approved calls hold it
    /// together ([`Shared::hold_workspace`]).
    workspace_locks: WorkspaceLocks,
    /// This process's entry in the worker registry (team mode).
    pub(crate) registration: Registration,
    /// The data directory when the front end names it ([`crate::TaskService::with_data_dir`]);
    /// otherwise the SQLite database's folder. Set once, before any run needs it.
    data_dir: std::sync::OnceLock<PathBuf>,
    /// The memory when the front end names it ([`crate::TaskService::with_memory`]: the
    /// team's, in the database); else the memory file in the data directory.
    memory: std::sync::OnceLock<pp_tools::memory::Memory>,
    /// How long a cancel waits for a running call to stop before it answers that the
    /// cancel is under way ([`crate::TaskService::with_cancel_wait`]).
    cancel_wait: std::sync::OnceLock<std::time::Duration>,
}

/// This process's entry in the worker registry, once registered (team mode,
/// `workers.rs`).
#[derive(Debug, Default)]
pub(crate) struct Registration {
    id: Mutex<Option<String>>,
    /// Set by [`crate::TaskService::leave`]: no heartbeat registers the process again.
    pub(crate) left: AtomicBool,
}

impl Registration {
    pub(crate) fn get(&self) -> Option<String> {
        self.id.lock().ok().and_then(|id| id.clone())
    }

    pub(crate) fn set(&self, id: Option<String>) {
        if let Ok(mut slot) = self.id.lock() {
            *slot = id;
        }
    }
}

/// How long a cancel waits for a running call to stop, unless the front end says.
const CANCEL_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// A cancellation signal for one task run, registered before the run waits for a worker
/// so a cancel that arrives meanwhile is never lost.
#[derive(Default)]
pub(crate) struct Cancellation {
    /// Set once cancelled; checked before anything runs.
    flag: AtomicBool,
    /// Wakes a running segment.
    notify: Notify,
    /// The team user who asked for the cancel (for its audit row), if any.
    by: std::sync::Mutex<Option<String>>,
}

impl Cancellation {
    fn cancel(&self, by: Option<String>) {
        if let Ok(mut slot) = self.by.lock() {
            *slot = by;
        }
        self.flag.store(true, Ordering::SeqCst);
        self.notify.notify_one();
    }

    /// The team user who asked for the cancel, if any.
    pub(crate) fn by(&self) -> Option<String> {
        self.by.lock().ok().and_then(|by| by.clone())
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

/// The per-workspace locks of this process.
#[derive(Debug, Default)]
pub(crate) struct WorkspaceLocks(Mutex<HashMap<String, Arc<tokio::sync::RwLock<()>>>>);

/// A workspace held by an approved call until its changes are recorded.
#[derive(Debug)]
pub(crate) enum WorkspaceGuard {
    /// A file tool's or an MCP tool's call: others of those may run beside it.
    Shared(#[expect(dead_code, reason = "held, never read")] tokio::sync::OwnedRwLockReadGuard<()>),
    /// A command: nothing else approved runs in the workspace meanwhile, so the
    /// difference before/after is its own.
    Exclusive(
        #[expect(dead_code, reason = "held, never read")] tokio::sync::OwnedRwLockWriteGuard<()>,
    ),
}

impl WorkspaceLocks {
    /// Waits until the workspace `root` can be held (`exclusive`: alone) and holds it.
    pub(crate) async fn hold(&self, root: &str, exclusive: bool) -> WorkspaceGuard {
        let lock = match self.0.lock() {
            Ok(mut locks) => Arc::clone(locks.entry(root.to_owned()).or_default()),
            // A poisoned map (a panic while inserting) still gives a lock: this call's own.
            Err(_) => Arc::new(tokio::sync::RwLock::new(())),
        };
        if exclusive {
            WorkspaceGuard::Exclusive(lock.write_owned().await)
        } else {
            WorkspaceGuard::Shared(lock.read_owned().await)
        }
    }
}

impl Shared {
    /// Holds the workspace `root` for an approved call (see [`WorkspaceLocks::hold`]).
    pub(crate) async fn hold_workspace(&self, root: &str, exclusive: bool) -> WorkspaceGuard {
        self.workspace_locks.hold(root, exclusive).await
    }

    pub(crate) fn new(
        store: Store,
        settings: TaskSettings,
        workspaces: Workspaces,
        models: ModelSource,
        toolbox: pp_tools::Toolbox,
        observer: Option<Arc<dyn EventSink>>,
    ) -> Self {
        let workers = Arc::new(Semaphore::new(settings.workers.max(1)));
        Self {
            store,
            settings,
            workspaces,
            models,
            toolbox: Arc::new(toolbox),
            observer,
            workers,
            decisions: Semaphore::new(DECISIONS_IN_FLIGHT),
            wake: Notify::new(),
            cancellations: Mutex::new(HashMap::new()),
            workspace_locks: WorkspaceLocks::default(),
            registration: Registration::default(),
            data_dir: std::sync::OnceLock::new(),
            memory: std::sync::OnceLock::new(),
            cancel_wait: std::sync::OnceLock::new(),
        }
    }

    /// The data directory: where the snapshot store and the memory file live. The one
    /// named with [`crate::TaskService::with_data_dir`], else the SQLite database's
    /// folder; `None` on a server database (PostgreSQL) without one named.
    pub(crate) fn data_dir(&self) -> Option<PathBuf> {
        if let Some(dir) = self.data_dir.get() {
            return Some(dir.clone());
        }
        self.store.path().map(|database| {
            database
                .parent()
                .unwrap_or_else(|| Path::new("."))
                .to_path_buf()
        })
    }

    /// The memory a change log entry of the memory root is in: the one named with
    /// [`crate::TaskService::with_memory`], else the file in the data directory.
    pub(crate) fn memory(&self) -> Option<pp_tools::memory::Memory> {
        if let Some(memory) = self.memory.get() {
            return Some(memory.clone());
        }
        self.data_dir().map(pp_tools::memory::Memory::file)
    }

    /// Names the memory (the first call wins).
    pub(crate) fn set_memory(&self, memory: pp_tools::memory::Memory) {
        let _ = self.memory.set(memory);
    }

    /// Names the data directory (the first call wins).
    pub(crate) fn set_data_dir(&self, dir: PathBuf) {
        let _ = self.data_dir.set(dir);
    }

    /// Builds a fresh jail, tools and gate on `workspace_path`, off the async threads
    /// (opening the workspace and the providers' folders touches the disk).
    pub(crate) async fn segment(&self, workspace_path: &str) -> Result<Segment> {
        let root = PathBuf::from(workspace_path);
        let toolbox = Arc::clone(&self.toolbox);
        let limits = self.settings.tool_limits();
        blocking(move || Segment::build(&root, &toolbox, limits)).await?
    }

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

    /// How long a cancel waits for a running call to stop.
    pub(crate) fn cancel_wait(&self) -> std::time::Duration {
        self.cancel_wait.get().copied().unwrap_or(CANCEL_WAIT)
    }

    /// Sets [`Shared::cancel_wait`] (the first call wins).
    pub(crate) fn set_cancel_wait(&self, wait: std::time::Duration) {
        let _ = self.cancel_wait.set(wait);
    }

    /// Whether the run of `task` in this process was told to cancel and has not ended
    /// yet (its signal is forgotten once the run has stored how it ended).
    pub(crate) fn cancel_pending(&self, task: &TaskId) -> bool {
        self.cancellations
            .lock()
            .ok()
            .and_then(|map| {
                map.get(task)
                    .map(|cancellation| cancellation.is_cancelled())
            })
            .unwrap_or(false)
    }

    /// Signals the run of `task` in this process, asked for by the team user `by` (if
    /// any); `false` when none runs here.
    pub(crate) fn signal_cancel(&self, task: &TaskId, by: Option<&str>) -> bool {
        self.cancellations
            .lock()
            .ok()
            .and_then(|map| map.get(task).cloned())
            .map(|cancellation| cancellation.cancel(by.map(str::to_owned)))
            .is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// While a command holds its workspace, another approved call there waits; it
    /// runs once the command's changes are recorded (the guard dropped). Another
    /// workspace is not held up.
    #[tokio::test]
    async fn an_approved_call_waits_while_a_command_holds_the_workspace() {
        let locks = Arc::new(WorkspaceLocks::default());
        let command = locks.hold("/w", true).await;
        let waiting = {
            let locks = Arc::clone(&locks);
            tokio::spawn(async move { locks.hold("/w", false).await })
        };
        let elsewhere = locks.hold("/other", false).await;
        for _ in 0..50 {
            tokio::task::yield_now().await;
        }
        assert!(!waiting.is_finished(), "the second call must wait");
        drop(command);
        let second = waiting.await.unwrap();
        assert!(matches!(second, WorkspaceGuard::Shared(_)));
        // File tools share: a second one does not wait for the first.
        let third = locks.hold("/w", false).await;
        // And a command waits for both.
        let command = {
            let locks = Arc::clone(&locks);
            tokio::spawn(async move { locks.hold("/w", true).await })
        };
        for _ in 0..50 {
            tokio::task::yield_now().await;
        }
        assert!(
            !command.is_finished(),
            "a command waits for the calls in flight"
        );
        drop((second, third, elsewhere));
        assert!(matches!(
            command.await.unwrap(),
            WorkspaceGuard::Exclusive(_)
        ));
    }
}
