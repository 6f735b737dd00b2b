//! Notifications for people who are not at the console, and the expiry of approvals
//! nobody decided.
//!
//! [`Notifier`] runs an operator-configured command (`[notify] command = ["notify-send",
//! "PocketPilot"]`) **without a shell**: the argv comes from the configuration alone,
//! and the summary of what happened (which includes model-written text such as the
//! prompt or a target path) reaches it only as one JSON object on stdin. It runs when an
//! approval starts waiting (any task) and when an unattended task (created by the
//! scheduler or a webhook) completes or fails. A notifier that fails, hangs (killed after
//! [`Notifier::timeout`] and reaped) or cannot be started is reported to the caller's log
//! and changes nothing: it never approves, never fails a task.
//!
//! [`Notifications::watch`] finds those moments by reading the store's event log (so it also sees
//! tasks run by another process on the same data directory, such as `pocketpilot
//! approvals approve`), from the last event at the time it starts.
//!
//! [`Notifications::expire_approvals`] rejects approvals that have waited longer than `[approvals]
//! expire_after_secs`, with reason `expired` and actor `scheduler`, through the same
//! exactly-once resolve path a person's decision takes.
//!
//! It sits beside the scheduler and the webhook channels: it reaches tasks through the
//! task service ([`TaskService`]: a task's record, resolving an approval) and the store
//! only through its own narrow feed (the event log, an approval's row, the pending
//! approvals and the clock). `pocketpilot serve` builds one [`Notifications`].

use std::process::Stdio;
use std::time::Duration;

use pp_store::Store;
use pp_types::{
    Actor, ApprovalId, ApprovalRecord, ApprovalState, EventKind, StoredEvent, TaskRecord, Timestamp,
};
use serde_json::{Map, Value, json};
use tokio::io::AsyncWriteExt as _;

use pp_tasks::{Decision, Error, ResolveRequest, Result, TaskService};

/// The store as notifications see it: the event log, an approval's row, the pending
/// approvals and the clock; nothing else (tasks are read through the service).
#[derive(Clone)]
struct Feed(Store);

impl Feed {
    async fn last_seq(&self) -> pp_store::Result<i64> {
        self.0.last_seq().await
    }

    async fn events_after(&self, after: i64, limit: usize) -> pp_store::Result<Vec<StoredEvent>> {
        self.0.events_after(after, limit).await
    }

    async fn wait_for_events(&self, after: i64, at_most: Duration) {
        self.0.wait_for_events(after, at_most).await;
    }

    async fn approval(&self, id: &ApprovalId) -> pp_store::Result<ApprovalRecord> {
        self.0.approval(id).await
    }

    async fn pending_approvals(&self, limit: usize) -> pp_store::Result<Vec<ApprovalRecord>> {
        self.0
            .list_approvals(Some(ApprovalState::Pending), limit)
            .await
    }

    fn now(&self) -> Timestamp {
        self.0.clock().now()
    }
}

/// The reason recorded on an approval that expired.
const EXPIRED: &str = "expired";

/// How long a notifier may run before it is killed.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a notifier run failed (logged, never fatal).
#[derive(Debug, thiserror::Error)]
pub enum NotifyError {
    /// The command could not be started.
    #[error("notifier `{program}` could not be started: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// Why.
        source: std::io::Error,
    },
    /// Writing the summary to its stdin or waiting for it failed.
    #[error("notifier `{program}` failed: {source}")]
    Io {
        /// The program.
        program: String,
        /// Why.
        source: std::io::Error,
    },
    /// It exited unsuccessfully.
    #[error("notifier `{program}` exited with {status}")]
    Status {
        /// The program.
        program: String,
        /// The exit status.
        status: std::process::ExitStatus,
    },
    /// It ran longer than the timeout and was killed.
    #[error("notifier `{program}` ran longer than {seconds} s and was killed")]
    Timeout {
        /// The program.
        program: String,
        /// The timeout.
        seconds: u64,
    },
}

/// An operator-configured command that receives one JSON summary on stdin per
/// notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notifier {
    /// The argv: program and fixed arguments, from the configuration only.
    pub command: Vec<String>,
    /// How long one run may take before it is killed.
    pub timeout: Duration,
    /// `[notify] links` (single-user mode): the base URL of approval links; each
    /// `approval_waiting` summary then carries a `link` (`{base}/d/{token}`), made by the
    /// process that sends it with the default lifetime. `None`: no links.
    pub links: Option<String>,
}

impl Notifier {
    /// A notifier running `command` (`None` when it is empty) with `DEFAULT_TIMEOUT` (10 s).
    pub fn new(command: Vec<String>) -> Option<Self> {
        if command.first().is_none_or(String::is_empty) {
            return None;
        }
        Some(Self {
            command,
            timeout: DEFAULT_TIMEOUT,
            links: None,
        })
    }

    /// Runs the command once with `summary` as one line of JSON on stdin; waits for it to
    /// exit (killing and reaping it after the timeout). Output is discarded.
    pub async fn send(&self, summary: &Value) -> std::result::Result<(), NotifyError> {
        let program = self.command.first().cloned().unwrap_or_default();
        let mut command = tokio::process::Command::new(&program);
        command
            .args(self.command.iter().skip(1))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        let mut child =
            pp_types::open_files::spawn_with_original(|| command.spawn()).map_err(|source| {
                NotifyError::Spawn {
                    program: program.clone(),
                    source,
                }
            })?;
        let mut line = summary.to_string();
        line.push('\n');
        let run = async {
            if let Some(mut stdin) = child.stdin.take() {
                // A notifier that does not read its stdin is not an error.
                let _ = stdin.write_all(line.as_bytes()).await;
                drop(stdin);
            }
            child.wait().await
        };
        let status = match tokio::time::timeout(self.timeout, run).await {
            Ok(status) => status.map_err(|source| NotifyError::Io {
                program: program.clone(),
                source,
            })?,
            Err(_) => {
                let _ = child.kill().await;
                return Err(NotifyError::Timeout {
                    program,
                    seconds: self.timeout.as_secs(),
                });
            }
        };
        if status.success() {
            Ok(())
        } else {
            Err(NotifyError::Status { program, status })
        }
    }
}

/// Whether a task was started by nobody at a screen (a schedule or a webhook).
pub fn unattended(task: &TaskRecord) -> bool {
    matches!(task.created_by, Actor::Scheduler | Actor::Webhook)
}

/// The summary for one stored event, if it is one a notifier hears about:
/// `approval_waiting` (any task), `task_completed` and `task_failed` (unattended tasks).
/// Fields: `event`, `task_id`, `approval_id`, `tool`, `target` (approvals: the target
/// the tool reported, as the approval stores it), `prompt`, `created_by`, `origin`
/// (when the task has one), `state`.
pub fn summary(event: &StoredEvent, task: &TaskRecord, target: Option<&str>) -> Option<Value> {
    let mut fields = Map::new();
    match &event.event.kind {
        EventKind::ApprovalRequired {
            approval_id, name, ..
        } => {
            fields.insert("event".into(), json!("approval_waiting"));
            fields.insert("approval_id".into(), json!(approval_id));
            fields.insert("tool".into(), json!(name));
            if let Some(target) = target {
                fields.insert("target".into(), json!(target));
            }
        }
        EventKind::TaskCompleted { .. } if unattended(task) => {
            fields.insert("event".into(), json!("task_completed"));
        }
        EventKind::TaskFailed { .. } if unattended(task) => {
            fields.insert("event".into(), json!("task_failed"));
        }
        _ => return None,
    }
    fields.insert("task_id".into(), json!(task.id));
    fields.insert("prompt".into(), json!(task.prompt));
    fields.insert("created_by".into(), json!(task.created_by));
    if let Some(origin) = &task.origin {
        fields.insert("origin".into(), json!(origin));
    }
    fields.insert("state".into(), json!(task.state));
    Some(Value::Object(fields))
}

/// Adds `link` (`{base}/d/{token}`) to an `approval_waiting` summary: a single-use
/// approval link made now, as the operator (single-user mode), lasting the default 30
/// minutes. A link that cannot be made is logged and left out (the notification still
/// goes).
async fn add_link(
    service: &TaskService,
    summary: &mut Value,
    base: &str,
    log: &(impl Fn(&str) + Send + Sync),
) {
    let Some(approval) = summary
        .get("approval_id")
        .and_then(Value::as_str)
        .map(|id| ApprovalId(id.to_owned()))
    else {
        return;
    };
    match service
        .create_link(&approval, None, &pp_tasks::Caller::operator())
        .await
    {
        Ok(made) => {
            summary["link"] = json!(format!("{base}/d/{}", made.token));
        }
        Err(error) => log(&format!("notify: no link for {approval}: {error}")),
    }
}

/// Notifications and approval expiry over one task service: tasks through the service,
/// the store through the narrow feed of events and pending approvals. Cheap to clone.
#[derive(Clone)]
pub struct Notifications {
    service: TaskService,
    feed: Feed,
}

impl std::fmt::Debug for Notifications {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Notifications").finish_non_exhaustive()
    }
}

impl Notifications {
    /// Notifications of `service`'s tasks, reading events and pending approvals from
    /// `store` (the one the service runs on).
    pub fn new(service: TaskService, store: Store) -> Self {
        Self {
            service,
            feed: Feed(store),
        }
    }

    /// Reads the event log from its current end, every `poll` (or sooner on a store that
    /// announces new events: [`pp_store::Store::wait_for_events`]), and sends the notifier
    /// a summary ([`summary`]) for each event it hears about, one at a time, in order.
    /// Failures go to `log`. Runs for as long as the future is polled.
    pub async fn watch(
        &self,
        notifier: Notifier,
        poll: Duration,
        log: impl Fn(&str) + Send + Sync,
    ) {
        let (service, feed) = (&self.service, &self.feed);
        let mut after = feed.last_seq().await.unwrap_or(0);
        loop {
            let page = read_page(service, feed, after)
                .await
                .map_err(|error| error.to_string());
            let full = match page {
                Ok((last, count, wanted)) => {
                    after = last;
                    for (event, task, target) in wanted {
                        let Some(mut summary) = summary(&event, &task, target.as_deref()) else {
                            continue;
                        };
                        if let Some(base) = &notifier.links {
                            add_link(service, &mut summary, base, &log).await;
                        }
                        if let Err(error) = notifier.send(&summary).await {
                            log(&format!("notify: {error}"));
                        }
                    }
                    count >= PAGE
                }
                Err(error) => {
                    log(&format!("notify: reading events failed: {error}"));
                    false
                }
            };
            if !full {
                feed.wait_for_events(after, poll).await;
            }
        }
    }

    /// Rejects every approval still pending `after` its creation (at the store clock's
    /// now), with reason `EXPIRED` and actor `scheduler`, through
    /// [`TaskService::resolve`]: exactly once (a person's decision or another process's
    /// expiry that came first wins, and is not an error). Returns the approvals expired.
    pub async fn expire_approvals(&self, after: Duration) -> Result<Vec<ApprovalId>> {
        let (service, feed) = (&self.service, &self.feed);
        let pending = feed.pending_approvals(10_000).await?;
        let now = feed.now();
        let mut expired = Vec::new();
        for approval in pending {
            if approval.created_at.saturating_add(after) > now {
                continue;
            }
            let request = ResolveRequest {
                decision: Decision::Reject,
                edited_arguments: None,
                reason: Some(EXPIRED.into()),
                seen_fingerprint: None,
                actor: Actor::Scheduler,
                wait: false,
                via: None,
                remote_user: None,
            };
            match service.resolve(&approval.id, request).await {
                Ok(_) => expired.push(approval.id),
                Err(Error::AlreadyResolved { .. } | Error::InvalidState { .. }) => {}
                Err(error) => return Err(error),
            }
        }
        Ok(expired)
    }
}

/// The events after `from` (at most [`PAGE`]) and, for those a notification is about,
/// their tasks and targets.
async fn read_page(service: &TaskService, feed: &Feed, from: i64) -> Result<Page> {
    let events = feed.events_after(from, PAGE).await?;
    let last = events.last().map_or(from, |event| event.seq);
    let count = events.len();
    let mut wanted = Vec::new();
    for event in events {
        if matches!(
            event.event.kind,
            EventKind::ApprovalRequired { .. }
                | EventKind::TaskCompleted { .. }
                | EventKind::TaskFailed { .. }
        ) {
            let task = service.task(&event.task_id).await?;
            let target = match &event.event.kind {
                EventKind::ApprovalRequired {
                    approval_id: Some(id),
                    ..
                } => feed
                    .approval(&ApprovalId(id.clone()))
                    .await
                    .ok()
                    .and_then(|approval| approval.target),
                _ => None,
            };
            wanted.push((event, task, target));
        }
    }
    Ok((last, count, wanted))
}

/// One round of [`Notifications::watch`]: the last sequence read, how many events were read, and the
/// events a notification is about with their tasks.
type Page = (i64, usize, Vec<(StoredEvent, TaskRecord, Option<String>)>);

/// Events read per round of [`Notifications::watch`].
const PAGE: usize = 500;

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_hanging_notifier_is_killed_at_its_timeout() {
        let mut notifier = Notifier::new(vec!["sleep".into(), "30".into()]).unwrap();
        notifier.timeout = Duration::from_millis(200);
        let error = notifier.send(&json!({"event": "x"})).await.unwrap_err();
        assert!(matches!(error, NotifyError::Timeout { .. }), "{error}");
    }

    #[tokio::test]
    async fn a_missing_or_failing_notifier_is_an_error_not_a_panic() {
        let missing = Notifier::new(vec!["/nonexistent/notifier".into()]).unwrap();
        let error = missing.send(&json!({})).await.unwrap_err();
        assert!(matches!(error, NotifyError::Spawn { .. }), "{error}");
        let failing = Notifier::new(vec!["false".into()]).unwrap();
        let error = failing.send(&json!({})).await.unwrap_err();
        assert!(matches!(error, NotifyError::Status { .. }), "{error}");
        // One that does not read its stdin is fine.
        let ignoring = Notifier::new(vec!["true".into()]).unwrap();
        ignoring.send(&json!({"prompt": "x"})).await.unwrap();
    }

    #[test]
    fn an_empty_command_is_no_notifier() {
        assert!(Notifier::new(Vec::new()).is_none());
        assert!(Notifier::new(vec![String::new()]).is_none());
    }
}
