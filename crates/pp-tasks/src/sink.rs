//! Persists the loop's events as they happen and audits what the agent did.

use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use pp_agent::EventSink;
use pp_store::Store;
use pp_types::{Actor, ApprovalId, AuditAction, Event, EventKind, NewAudit, TaskId};

use crate::blocking::blocking;
use crate::keep::Kept;
use pp_types::Prices;

/// The approved call whose outcome must reach the audit ledger.
#[derive(Debug, Clone)]
pub(crate) struct Watched {
    /// The call id.
    pub(crate) call_id: String,
    /// The approval that allowed it.
    pub(crate) approval_id: ApprovalId,
    /// The target path, if any.
    pub(crate) target: Option<String>,
    /// Hash of the exact arguments executed.
    pub(crate) arguments_hash: String,
    /// What the call is about to change, kept before it runs: recorded in the change
    /// log with its `tool_executed` row.
    pub(crate) kept: Option<Kept>,
}

/// Appends every event to the store as it happens, so other processes can stream it,
/// except the events that end a segment (`approval_required`, `task_completed`,
/// `task_failed`): those are written in the same transaction as the task's state change.
///
/// `emit` is synchronous (the loop calls it inline), so it never waits for the store: it
/// queues the event, and one writer task at a time (spawned on the runtime by the first
/// `emit` that finds none running) awaits the store to append whatever is queued, in
/// order, one transaction per batch. [`StoreSink::flush`] waits until every queued event
/// is stored; the runner calls it before the transaction that ends the segment, so no
/// event is lost or reordered behind the segment's closing events.
pub(crate) struct StoreSink {
    store: Store,
    task: TaskId,
    /// The approved calls about to run (added by the before-run check, one by one); each
    /// is taken by the first outcome of its call, so no later event (whatever id the
    /// model gives it) can be recorded under the approval.
    watched: Mutex<Vec<Watched>>,
    observer: Option<Arc<dyn EventSink>>,
    /// The first store error, reported by the runner after the segment.
    failure: Mutex<Option<String>>,
    /// Events (with their audit rows) waiting for the writer, and whether one runs.
    queue: Mutex<Queue>,
    /// Wakes [`StoreSink::flush`] when the writer has drained the queue.
    drained: Notify,
    /// Where the writer task runs (`None` outside a runtime: events then fail to store,
    /// and the runner reports it).
    runtime: Option<tokio::runtime::Handle>,
    /// The model of this segment and the price table: every `assistant_message` is a
    /// model call, recorded with its usage and estimated cost.
    pricing: Pricing,
}

/// The segment's model name and the prices its calls are estimated with.
#[derive(Debug, Clone, Default)]
pub(crate) struct Pricing {
    /// The model's display name (`openai-compatible:gpt-4o-mini`, `scripted`).
    pub(crate) model: String,
    /// `[model] prices`.
    pub(crate) prices: Prices,
}

impl Pricing {
    /// The model call an event records, if it records one: the loop's own calls
    /// (`assistant_message`) and a chat turn's summarising call (`session_summarised`).
    fn call(&self, event: &Event) -> Option<pp_store::NewModelCall> {
        let (EventKind::AssistantMessage { usage, .. }
        | EventKind::SessionSummarised { usage, .. }) = &event.kind
        else {
            return None;
        };
        Some(pp_store::NewModelCall {
            step: event.step,
            model: self.model.clone(),
            usage: *usage,
            cost: self.prices.cost(&self.model, *usage),
        })
    }
}

#[derive(Default)]
struct Queue {
    pending: Vec<(Event, Option<NewAudit>, Option<Kept>)>,
    writing: bool,
}

impl StoreSink {
    pub(crate) fn new(
        store: Store,
        task: TaskId,
        observer: Option<Arc<dyn EventSink>>,
        pricing: Pricing,
    ) -> Arc<Self> {
        Arc::new(Self {
            store,
            task,
            watched: Mutex::new(Vec::new()),
            observer,
            failure: Mutex::new(None),
            queue: Mutex::new(Queue::default()),
            drained: Notify::new(),
            runtime: tokio::runtime::Handle::try_current().ok(),
            pricing,
        })
    }

    /// Waits until every event emitted so far is stored (or failed to be).
    pub(crate) async fn flush(&self) {
        loop {
            let drained = self.drained.notified();
            let idle = self
                .queue
                .lock()
                .map(|queue| queue.pending.is_empty() && !queue.writing)
                .unwrap_or(true);
            if idle {
                return;
            }
            drained.await;
        }
    }

    /// Appends what is queued until the queue is empty; the one writer task (see
    /// [`QueueingSink`]'s `emit`, which sets `writing` before spawning it).
    async fn drain(&self) {
        loop {
            let batch = match self.queue.lock() {
                Ok(mut queue) if queue.pending.is_empty() => {
                    queue.writing = false;
                    break;
                }
                Ok(mut queue) => std::mem::take(&mut queue.pending),
                Err(_) => break,
            };
            let (mut events, mut audits, mut kept) = (Vec::new(), Vec::new(), Vec::new());
            let mut calls = Vec::new();
            for (event, audit, kept_files) in batch {
                calls.extend(self.pricing.call(&event));
                events.push(event);
                audits.extend(audit);
                kept.extend(kept_files);
            }
            let changes = match record_changes(kept).await {
                Ok(changes) => changes,
                Err(error) => {
                    self.record_failure(format!("cannot record the call's changes: {error}"));
                    Vec::new()
                }
            };
            if let Err(error) = self
                .store
                .append_events_with_calls(&self.task, &events, audits, changes, calls)
                .await
            {
                self.record_failure(format!("cannot store events and their audit rows: {error}"));
            }
        }
        self.drained.notify_waiters();
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

    /// The audit row of `event`, and for the approved call's success what it kept (its
    /// change rows are recorded with the row).
    fn audit(&self, event: &Event) -> (Option<NewAudit>, Option<Kept>) {
        let (action, call_id, name, detail) = match &event.kind {
            EventKind::ToolDenied {
                call_id,
                name,
                message,
                ..
            } => (
                AuditAction::ToolDenied,
                call_id,
                name,
                Some(message.clone()),
            ),
            EventKind::ToolResult { call_id, name, .. } => {
                (AuditAction::ToolExecuted, call_id, name, None)
            }
            EventKind::ToolError {
                call_id,
                name,
                message,
            } => (
                AuditAction::ToolFailed,
                call_id,
                name,
                Some(message.clone()),
            ),
            _ => return (None, None),
        };
        let watched = self.take_watched(call_id);
        if watched.is_none() && action != AuditAction::ToolDenied {
            // Only the approved call's outcome and denials are side effects or decisions.
            return (None, None);
        }
        let mut entry = NewAudit {
            actor: Some(Actor::Agent),
            task_id: Some(self.task.clone()),
            tool: Some(name.clone()),
            detail,
            ..NewAudit::new(action)
        };
        let mut kept = None;
        if let Some(watched) = watched {
            entry.approval_id = Some(watched.approval_id);
            entry.target = watched.target;
            entry.arguments_hash = Some(watched.arguments_hash);
            // A command that failed still ran: what it changed is recorded too.
            kept = watched.kept.filter(|kept| {
                action == AuditAction::ToolExecuted
                    || (action == AuditAction::ToolFailed && kept.is_command())
            });
        }
        (Some(entry), kept)
    }

    /// Records that the approved call `watched` is about to run.
    pub(crate) fn watch(&self, watched: Watched) {
        if let Ok(mut all) = self.watched.lock() {
            all.push(watched);
        }
    }

    /// An approved call's details, once, for the first outcome carrying its id.
    fn take_watched(&self, call_id: &str) -> Option<Watched> {
        let mut watched = self.watched.lock().ok()?;
        let index = watched.iter().position(|w| w.call_id == call_id)?;
        Some(watched.swap_remove(index))
    }
}

/// The change rows of the approved calls in `kept`: reads the files they changed, so it
/// runs on the blocking pool (nothing to do, and no hop, for the usual batch without one).
async fn record_changes(kept: Vec<Kept>) -> crate::error::Result<Vec<pp_store::NewChange>> {
    if kept.is_empty() {
        return Ok(Vec::new());
    }
    blocking(move || kept.into_iter().flat_map(Kept::record).collect()).await
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

/// The sink the loop sees: queues into the shared [`StoreSink`] and starts its writer.
pub(crate) struct QueueingSink(pub(crate) Arc<StoreSink>);

impl EventSink for QueueingSink {
    fn emit(&self, event: &Event) {
        let sink = &self.0;
        if let Some(observer) = &sink.observer {
            observer.emit(event);
        }
        if ends_segment(event) {
            return;
        }
        let (audit, kept) = sink.audit(event);
        let start_writer = match sink.queue.lock() {
            Ok(mut queue) => {
                queue.pending.push((event.clone(), audit, kept));
                !std::mem::replace(&mut queue.writing, true)
            }
            Err(_) => false,
        };
        if start_writer {
            let writer = Arc::clone(sink);
            match &sink.runtime {
                // The writer ends once the queue is empty; the runner's `flush` waits for
                // that before the segment's closing transaction, so it never outlives
                // its segment by more than the batch it is writing.
                Some(runtime) => {
                    runtime.spawn(async move { writer.drain().await });
                }
                // No runtime (a synchronous caller): nothing can await the store.
                None => {
                    writer.record_failure("events emitted outside an async runtime".to_owned());
                    if let Ok(mut queue) = writer.queue.lock() {
                        queue.pending.clear();
                        queue.writing = false;
                    }
                    writer.drained.notify_waiters();
                }
            }
        }
    }
}
