//! Persists the loop's events as they happen and audits what the agent did.

use std::sync::{Arc, Mutex};

use pp_agent::EventSink;
use pp_store::Store;
use pp_types::{Actor, ApprovalId, Event, EventKind, NewAudit, TaskId};

/// The approved call whose outcome must reach the audit ledger.
#[derive(Debug, Clone)]
pub(crate) struct Watched {
    /// The call id.
    pub(crate) call_id: String,
    /// The approval that allowed it.
    pub(crate) approval_id: ApprovalId,
    /// The tool.
    pub(crate) tool: String,
    /// The target path, if any.
    pub(crate) target: Option<String>,
    /// Hash of the exact arguments executed.
    pub(crate) arguments_hash: String,
}

/// Appends every event to the store at once, so other processes can stream it, except the
/// events that end a segment (`approval_required`, `task_completed`, `task_failed`): those
/// are written in the same transaction as the task's state change.
pub(crate) struct StoreSink {
    store: Arc<Store>,
    task: TaskId,
    watched: Option<Watched>,
    observer: Option<Arc<dyn EventSink>>,
    /// The first store error, reported by the runner after the segment.
    failure: Mutex<Option<String>>,
}

impl StoreSink {
    pub(crate) fn new(
        store: Arc<Store>,
        task: TaskId,
        watched: Option<Watched>,
        observer: Option<Arc<dyn EventSink>>,
    ) -> Self {
        Self {
            store,
            task,
            watched,
            observer,
            failure: Mutex::new(None),
        }
    }

    /// The first error met while persisting, if any.
    pub(crate) fn failure(&self) -> Option<String> {
        self.failure.lock().ok().and_then(|failure| failure.clone())
    }

    fn record_failure(&self, message: String) {
        if let Ok(mut failure) = self.failure.lock()
            && failure.is_none()
        {
            *failure = Some(message);
        }
    }

    fn audit(&self, event: &Event) -> Option<NewAudit> {
        let base = |action: &str, tool: &str| NewAudit {
            actor: Some(Actor::Agent),
            action: action.to_owned(),
            task_id: Some(self.task.clone()),
            tool: Some(tool.to_owned()),
            ..NewAudit::default()
        };
        match &event.kind {
            EventKind::ToolDenied {
                name,
                message,
                call_id,
                ..
            } => {
                let mut entry = base("tool_denied", name);
                entry.detail = Some(message.clone());
                self.fill_watched(&mut entry, call_id);
                Some(entry)
            }
            EventKind::ToolResult { call_id, name, .. } => {
                let watched = self.watched.as_ref()?;
                (watched.call_id == *call_id).then(|| {
                    let mut entry = base("tool_executed", name);
                    self.fill_watched(&mut entry, call_id);
                    entry
                })
            }
            EventKind::ToolError {
                call_id,
                name,
                message,
            } => {
                let watched = self.watched.as_ref()?;
                (watched.call_id == *call_id).then(|| {
                    let mut entry = base("tool_failed", name);
                    entry.detail = Some(message.clone());
                    self.fill_watched(&mut entry, call_id);
                    entry
                })
            }
            _ => None,
        }
    }

    fn fill_watched(&self, entry: &mut NewAudit, call_id: &str) {
        if let Some(watched) = self.watched.as_ref().filter(|w| w.call_id == call_id) {
            entry.approval_id = Some(watched.approval_id.clone());
            entry.target.clone_from(&watched.target);
            entry.arguments_hash = Some(watched.arguments_hash.clone());
            entry.tool = Some(watched.tool.clone());
        }
    }
}

/// Whether an event is persisted with the transaction that ends the segment.
pub(crate) fn ends_segment(event: &Event) -> bool {
    matches!(
        event.kind,
        EventKind::ApprovalRequired { .. }
            | EventKind::TaskCompleted { .. }
            | EventKind::TaskFailed { .. }
    )
}

impl EventSink for StoreSink {
    fn emit(&self, event: &Event) {
        if let Some(observer) = &self.observer {
            observer.emit(event);
        }
        if ends_segment(event) {
            return;
        }
        if let Err(error) = self
            .store
            .append_events(&self.task, std::slice::from_ref(event))
        {
            self.record_failure(format!("cannot store an event: {error}"));
        }
        if let Some(entry) = self.audit(event)
            && let Err(error) = self.store.append_audit(entry)
        {
            self.record_failure(format!("cannot write the audit ledger: {error}"));
        }
    }
}
