//! Ctrl+C while `run`'s task works (at a card it is a key instead, `run::ask`).
//!
//! While the task runs here the terminal does not echo what is typed (it would land on
//! the spinner's line) and the spinner says "Ctrl+C to stop". The first Ctrl+C asks the
//! task service to cancel ([`TaskService::cancel_as`], for the caller: in team mode their
//! role is checked as the API checks it) and the run goes on until the running call has
//! stopped: the spinner says "stopping…", and an approved call that has started is let
//! finish first (its outcome is shown), then the task is cancelled. A second Ctrl+C
//! within [`AGAIN_WITHIN`] records the cancel request in the store
//! ([`TaskService::request_cancel_and_leave`]) and exits at once with 130; recovery then
//! ends the task `cancelled`.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use pp_tasks::{Action, Caller, TaskService};
use pp_types::{TaskId, TaskRecord, TaskState};

use crate::exit;
use crate::live::LiveView;
use crate::output::errln;
use crate::report::{Interrupted, JsonFeed};

/// A second Ctrl+C this soon after the first leaves at once.
pub(crate) const AGAIN_WITHIN: Duration = Duration::from_secs(1);

/// How often a cancel refused because an approved call is running is asked again (the
/// call's end is not announced to this module).
const ASK_AGAIN: Duration = Duration::from_millis(100);

/// What Ctrl+C does while a task runs in this command, and whether it was pressed.
pub(crate) struct Stop {
    /// `None`: Ctrl+C keeps its ordinary meaning here (`chat` has a watcher of its own,
    /// `approvals approve` stops as any program does).
    active: Option<Active>,
    /// Presses so far.
    state: Mutex<Presses>,
}

/// What an active [`Stop`] reports through and acts for.
struct Active {
    live: Arc<LiveView>,
    caller: Caller,
}

#[derive(Debug, Default)]
struct Presses {
    /// When Ctrl+C was last pressed while the task ran.
    last: Option<Instant>,
    /// Whether a cancel was asked for.
    requested: bool,
}

/// The future asking for the cancel, polled beside the run.
type Request<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

impl Stop {
    /// Ctrl+C stops the task (`run`), reporting on `live` and cancelling as `caller`.
    pub(crate) fn active(live: &Arc<LiveView>, caller: &Caller) -> Self {
        live.show_stop_hint();
        Self {
            active: Some(Active {
                live: Arc::clone(live),
                caller: caller.clone(),
            }),
            state: Mutex::new(Presses::default()),
        }
    }

    /// Ctrl+C is left alone.
    pub(crate) fn inactive() -> Self {
        Self {
            active: None,
            state: Mutex::new(Presses::default()),
        }
    }

    fn presses(&self) -> std::sync::MutexGuard<'_, Presses> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether Ctrl+C asked for the cancel.
    pub(crate) fn requested(&self) -> bool {
        self.presses().requested
    }

    /// How `record` was interrupted here, for `run --json`'s result line: `None` unless
    /// Ctrl+C asked for the cancel and the task is `cancelled`.
    pub(crate) fn interrupted(&self, record: &TaskRecord) -> Option<Interrupted> {
        (self.requested() && record.state == TaskState::Cancelled)
            .then_some(Interrupted::TaskCancelled)
    }

    /// The exit code of a run that ended in `record`'s state other than `completed`:
    /// 130 for a task Ctrl+C cancelled, 1 otherwise.
    pub(crate) fn exit_code(&self, record: &TaskRecord) -> u8 {
        match self.interrupted(record) {
            Some(_) => exit::INTERRUPTED,
            None => exit::FAILED,
        }
    }

    /// Runs `work` (the task `task` running in this process) with Ctrl+C handled as the
    /// module says, and the terminal quiet.
    pub(crate) async fn guarded<T>(
        &self,
        service: &TaskService,
        task: &TaskId,
        feed: Option<&JsonFeed>,
        work: impl Future<Output = T>,
    ) -> T {
        let Some(active) = &self.active else {
            return work.await;
        };
        let quiet = Quiet::enter();
        let mut signals = Signals::listen();
        let mut work = std::pin::pin!(work);
        let mut request: Option<Request<'_>> = None;
        loop {
            tokio::select! {
                out = &mut work => return out,
                () = signals.next() => {
                    let again = {
                        let mut presses = self.presses();
                        let now = Instant::now();
                        let again = presses
                            .last
                            .is_some_and(|last| now.duration_since(last) <= AGAIN_WITHIN);
                        presses.last = Some(now);
                        presses.requested = true;
                        again
                    };
                    if again {
                        leave(service, active, task, feed, quiet).await;
                    }
                    active.live.stopping();
                    if request.is_none() {
                        request = Some(Box::pin(ask_to_cancel(service, active, task)));
                    }
                }
                () = async {
                    match request.as_mut() {
                        Some(request) => request.await,
                        None => std::future::pending().await,
                    }
                }, if request.is_some() => {
                    request = None;
                }
            }
        }
    }

    /// Cancels `record` when Ctrl+C asked for it and the run has stopped at an approval
    /// (the call that was let finish was followed by another that needs one): nothing more
    /// is asked. Returns the task as it is now.
    pub(crate) async fn settle(
        &self,
        service: &TaskService,
        record: TaskRecord,
    ) -> anyhow::Result<TaskRecord> {
        let Some(active) = &self.active else {
            return Ok(record);
        };
        if !self.requested() || record.state != TaskState::WaitingApproval {
            return Ok(record);
        }
        if service
            .authorize(&active.caller, Action::Cancel(&record))
            .await
            .is_err()
        {
            return Ok(record);
        }
        match service.cancel_as(&record.id, &active.caller).await {
            Ok(cancelled) => Ok(cancelled),
            // Resolved elsewhere first: follow the task as it is now.
            Err(pp_tasks::Error::InvalidState { .. }) => Ok(service.task(&record.id).await?),
            Err(error) => Err(error.into()),
        }
    }
}

/// Asks the service to cancel `task` until it is cancelled, the cancel is under way (the
/// run here stores it once the running call has stopped), or the task ended otherwise.
/// While an approved call runs the cancel is refused: it is asked again once that call
/// has its outcome.
async fn ask_to_cancel(service: &TaskService, active: &Active, task: &TaskId) {
    let record = match service.task(task).await {
        Ok(record) => record,
        Err(error) => {
            active
                .live
                .note(&format!("cannot cancel the task: {error}"));
            return;
        }
    };
    // Team mode: the cancel is the caller's, with the API's checks.
    if let Err(error) = service
        .authorize(&active.caller, Action::Cancel(&record))
        .await
    {
        active.live.note(&format!(
            "cannot cancel the task: {error}; it goes on (Ctrl+C again to leave it)"
        ));
        return;
    }
    let mut told = false;
    loop {
        match service.cancel_as(task, &active.caller).await {
            Ok(_) => return,
            Err(pp_tasks::Error::InvalidState {
                state: TaskState::Running,
                ..
            }) => {
                if !told {
                    active.live.note(
                        "an approved call is running: it is let finish and its outcome \
                         shown, then the task is cancelled",
                    );
                    told = true;
                }
                tokio::time::sleep(ASK_AGAIN).await;
            }
            // It ended some other way meanwhile (or waits at a card: `settle`).
            Err(pp_tasks::Error::InvalidState { .. }) => return,
            Err(error) => {
                active
                    .live
                    .note(&format!("cannot cancel the task: {error}"));
                return;
            }
        }
    }
}

/// The second Ctrl+C: records the cancel request (when the caller may cancel), says
/// what happens to the task, restores the terminal and exits with 130 at once.
#[expect(
    clippy::exit,
    reason = "leaving at once is what a second Ctrl+C asks for: the running call is not awaited"
)]
async fn leave(
    service: &TaskService,
    active: &Active,
    task: &TaskId,
    feed: Option<&JsonFeed>,
    quiet: Quiet,
) -> ! {
    active.live.pause();
    let record = service.task(task).await.ok();
    let allowed = match &record {
        Some(record) => service
            .authorize(&active.caller, Action::Cancel(record))
            .await
            .is_ok(),
        None => false,
    };
    let recorded = if allowed {
        service
            .request_cancel_and_leave(task, &active.caller)
            .await
            .map_err(|error| error.to_string())
    } else {
        Err("you may not cancel it".to_owned())
    };
    let id = crate::render::one_line(task.as_str());
    match recorded {
        Ok(true) => errln!(
            "\nleft at once: the cancel of task {id} is recorded; it ends `cancelled` when \
             it is recovered (`pocketpilot serve` or a worker does that as it starts)"
        ),
        Ok(false) => {
            errln!("\nleft at once: task {id} had already ended (pocketpilot tasks show {id})");
        }
        Err(why) => errln!(
            "\nleft at once; the cancel of task {id} was not recorded ({why}): it becomes \
             `interrupted` once its lease is over"
        ),
    }
    if let (Some(feed), Some(record)) = (feed, &record) {
        let record = service.task(task).await.unwrap_or_else(|_| record.clone());
        // Best effort: the exit code says the same.
        let _ = feed
            .finish(&record, None, Some(Interrupted::CancelRequested))
            .await;
    }
    drop(quiet);
    std::process::exit(i32::from(exit::INTERRUPTED))
}

/// SIGINT as a stream while the task runs (registered when the run starts; a Ctrl+C
/// before that keeps its ordinary meaning).
struct Signals {
    #[cfg(unix)]
    signal: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    fn listen() -> Self {
        #[cfg(unix)]
        {
            let kind = tokio::signal::unix::SignalKind::interrupt();
            Self {
                signal: tokio::signal::unix::signal(kind).ok(),
            }
        }
        #[cfg(not(unix))]
        {
            Self {}
        }
    }

    /// The next Ctrl+C (never, when none can be received).
    async fn next(&mut self) {
        #[cfg(unix)]
        {
            if let Some(signal) = self.signal.as_mut()
                && signal.recv().await.is_some()
            {
                return;
            }
            std::future::pending::<()>().await;
        }
        #[cfg(not(unix))]
        {
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }
}

/// The terminal on stdin without echo and line editing while the task runs (Ctrl+C
/// stays a signal); the previous mode comes back on drop, and what was typed meanwhile
/// is thrown away then, so it answers nothing later (a card, the shell).
struct Quiet {
    #[cfg(unix)]
    saved: Option<rustix::termios::Termios>,
}

impl Quiet {
    fn enter() -> Self {
        #[cfg(unix)]
        {
            use rustix::termios::{LocalModes, OptionalActions, tcgetattr, tcsetattr};
            let stdin = std::io::stdin();
            if !std::io::IsTerminal::is_terminal(&stdin) {
                return Self { saved: None };
            }
            let Ok(saved) = tcgetattr(&stdin) else {
                return Self { saved: None };
            };
            let mut quiet = saved.clone();
            quiet.local_modes.remove(
                LocalModes::ECHO | LocalModes::ECHONL | LocalModes::ICANON | LocalModes::IEXTEN,
            );
            // Best effort: a terminal that refuses keeps echoing, nothing worse.
            match tcsetattr(&stdin, OptionalActions::Now, &quiet) {
                Ok(()) => Self { saved: Some(saved) },
                Err(_) => Self { saved: None },
            }
        }
        #[cfg(not(unix))]
        {
            Self {}
        }
    }
}

impl Drop for Quiet {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Some(saved) = &self.saved {
            // `Flush`: the keys typed during the run are discarded as the mode changes.
            let _ = rustix::termios::tcsetattr(
                std::io::stdin(),
                rustix::termios::OptionalActions::Flush,
                saved,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(state: TaskState) -> TaskRecord {
        let mut record: TaskRecord = serde_json::from_value(serde_json::json!({
            "id": "t_1", "prompt": "p", "workspace": "w", "workspace_path": "/w",
            "state": "running", "created_by": "operator", "script_position": 0,
            "running_ms": 0, "created_at": "2026-12-02T18:00:00Z",
            "updated_at": "2026-12-02T18:00:00Z"
        }))
        .unwrap();
        record.state = state;
        record
    }

    #[test]
    fn only_a_task_ctrl_c_cancelled_exits_130_and_says_so() {
        let stop = Stop::inactive();
        let cancelled = record(TaskState::Cancelled);
        // Cancelled elsewhere (`tasks cancel`, the console): an ordinary failure.
        assert_eq!(stop.interrupted(&cancelled), None);
        assert_eq!(stop.exit_code(&cancelled), exit::FAILED);
        stop.presses().requested = true;
        assert_eq!(
            stop.interrupted(&cancelled),
            Some(Interrupted::TaskCancelled)
        );
        assert_eq!(stop.exit_code(&cancelled), exit::INTERRUPTED);
        // The approved call that was let finish ended the task first.
        let failed = record(TaskState::Failed);
        assert_eq!(stop.interrupted(&failed), None);
        assert_eq!(stop.exit_code(&failed), exit::FAILED);
    }
}
