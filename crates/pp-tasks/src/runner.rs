//! Runs one segment of a task (a fresh start or a resume) and stores how it ended.

use std::sync::Arc;
use std::time::{Duration, Instant};

use pp_agent::{Agent, Outcome, Resolution, ResumeError};
use pp_store::{NewApproval, TaskChange};
use pp_types::{
    ApprovalRecord, Checkpoint, Event, EventKind, FailureReason, NewAudit, TaskRecord, TaskState,
};

use crate::model::TaskModel;
use crate::resolve::stale_reason;
use crate::segment::{Segment, arguments_hash};
use crate::service::Inner;
use crate::sink::{StoreSink, Watched, ends_segment};
use crate::{Error, Result};

/// How a segment begins.
pub(crate) enum Start {
    /// From the prompt (a new task, or a retry with no checkpoint to return to).
    Fresh,
    /// From an approval's checkpoint, with the person's decision.
    Resume {
        /// The approval just resolved.
        approval: Box<ApprovalRecord>,
        /// What to do with its call.
        resolution: Resolution,
    },
}

/// How the loop future ended.
enum Ended {
    Outcome(Outcome),
    ResumeFailed(String),
    TimedOut,
    Cancelled,
}

/// Runs `task` (already `running` in the store) for one segment and persists the result.
/// Returns the task as stored afterwards.
pub(crate) async fn run_segment(inner: &Arc<Inner>, task: TaskRecord, start: Start) -> TaskRecord {
    let id = task.id.clone();
    match drive(inner, &task, start).await {
        Ok(record) => record,
        Err(error) => {
            // The service could not run the task at all (workspace gone, store failure):
            // fail it with that reason rather than leave it running.
            let change = failed_change(FailureReason::Internal, error.to_string(), 0, None);
            match inner.store.transition(&id, &[TaskState::Running], change) {
                Ok((record, _)) => record,
                Err(_) => inner.store.task(&id).unwrap_or(task),
            }
        }
    }
}

async fn drive(inner: &Arc<Inner>, task: &TaskRecord, start: Start) -> Result<TaskRecord> {
    let model = match TaskModel::for_task(&inner.models, task) {
        Ok(model) => model,
        Err(error) => {
            let change = failed_change(FailureReason::ModelError, error.to_string(), 0, None);
            return finish(inner, task, change);
        }
    };
    let segment = Segment::build(
        std::path::Path::new(&task.workspace_path),
        &inner.extra_tools,
    )?;
    let cancel = inner.cancellation(&task.id);
    // The run may have waited for a worker: make sure it is still ours to run (a cancel
    // from another process, or from here before the signal could reach us).
    let current = inner.store.task(&task.id)?;
    if current.state != TaskState::Running {
        inner.forget_cancellation(&task.id);
        return Ok(current);
    }
    let _heartbeat = Heartbeat::start(inner, &task.id);
    let start = recheck_staleness(inner, &segment, start);
    let watched = match &start {
        Start::Resume {
            approval,
            resolution: Resolution::Approve { edited_arguments },
        } => Some(Watched {
            call_id: approval.checkpoint.pending.call.id.clone(),
            approval_id: approval.id.clone(),
            target: target_of(edited_arguments.as_ref().unwrap_or(&approval.arguments))
                .or_else(|| approval.target.clone()),
            arguments_hash: arguments_hash(
                edited_arguments.as_ref().unwrap_or(&approval.arguments),
            ),
        }),
        Start::Resume { .. } | Start::Fresh => None,
    };
    let sink = StoreSink::new(
        Arc::clone(&inner.store),
        task.id.clone(),
        watched,
        inner.observer.clone(),
    );
    let agent = Agent::new(model.as_model(), &segment.registry, &segment.gate, &sink)
        .with_limits(inner.settings.limits());

    let remaining = inner
        .settings
        .timeout
        .saturating_sub(Duration::from_millis(task.running_ms));
    let began = Instant::now();
    let run = async {
        match start {
            Start::Fresh => {
                Ended::Outcome(agent.start(segment.system_prompt(), &task.prompt).await)
            }
            Start::Resume {
                approval,
                resolution,
            } => match agent.resume(approval.checkpoint, resolution).await {
                Ok(outcome) => Ended::Outcome(outcome),
                Err(ResumeError::InvalidEdit { message, .. }) => Ended::ResumeFailed(message),
                Err(error) => Ended::ResumeFailed(error.to_string()),
            },
        }
    };
    let ended = if cancel.is_cancelled() {
        Ended::Cancelled
    } else {
        tokio::select! {
            biased;
            () = cancel.cancelled() => Ended::Cancelled,
            ended = tokio::time::timeout(remaining, run) => ended.unwrap_or(Ended::TimedOut),
        }
    };
    inner.forget_cancellation(&task.id);
    let elapsed = u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX);
    let position = model.script_position();
    if let Some(failure) = sink.failure() {
        let change = failed_change(FailureReason::Internal, failure, elapsed, position);
        return finish(inner, task, change);
    }

    match ended {
        Ended::Outcome(Outcome::Completed {
            final_text, events, ..
        }) => {
            let mut change = TaskChange::to(TaskState::Completed);
            change.final_text = Some(final_text);
            change.events = closing_events(&events);
            change.add_running_ms = elapsed;
            change.script_position = position;
            finish(inner, task, change)
        }
        Ended::Outcome(Outcome::Failed {
            reason,
            message,
            events,
            ..
        }) => {
            let mut change = TaskChange::to(TaskState::Failed);
            change.failure_reason = Some(reason.as_str().to_owned());
            change.error = Some(message);
            change.events = closing_events(&events);
            change.add_running_ms = elapsed;
            change.script_position = position;
            finish(inner, task, change)
        }
        Ended::Outcome(Outcome::Suspended(checkpoint)) => {
            suspend(inner, task, *checkpoint, elapsed, position)
        }
        Ended::ResumeFailed(message) => {
            let change = failed_change(FailureReason::Internal, message, elapsed, position);
            finish(inner, task, change)
        }
        Ended::TimedOut => {
            let message = format!(
                "the task used its {} s of running time",
                inner.settings.timeout.as_secs()
            );
            let mut change = failed_change(FailureReason::Timeout, message, elapsed, position);
            change.to = TaskState::TimedOut;
            finish(inner, task, change)
        }
        Ended::Cancelled => {
            let event = Event {
                step: 0,
                kind: EventKind::TaskCancelled {
                    message: "cancelled by the operator while running".into(),
                },
            };
            let record = inner.store.cancel(
                &task.id,
                &[TaskState::Running],
                "cancelled by the operator",
                vec![event],
            );
            match record {
                Ok(record) => Ok(record),
                Err(_) => Ok(inner.store.task(&task.id)?),
            }
        }
    }
}

/// Tells the store this process is still running the task, until dropped.
struct Heartbeat(tokio::task::JoinHandle<()>);

impl Heartbeat {
    fn start(inner: &Arc<Inner>, task: &pp_types::TaskId) -> Self {
        let store = Arc::clone(&inner.store);
        let task = task.clone();
        let every = (inner.settings.lease / 3).max(Duration::from_millis(10));
        Self(tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let _ = store.heartbeat(&task);
            }
        }))
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Repeats the stale check right before an approved call runs: the run may have waited
/// for a worker, and the file may have changed after the decision. A changed target turns
/// the approval `stale` (audited) and the call is not run.
fn recheck_staleness(inner: &Arc<Inner>, segment: &Segment, start: Start) -> Start {
    let Start::Resume {
        approval,
        resolution: Resolution::Approve { edited_arguments },
    } = start
    else {
        return start;
    };
    let Some(message) = stale_reason(segment.jail(), &approval, edited_arguments.as_ref()) else {
        return Start::Resume {
            approval,
            resolution: Resolution::Approve { edited_arguments },
        };
    };
    let audit = NewAudit {
        actor: approval.resolved_by,
        action: "approval_stale".into(),
        tool: Some(approval.tool.clone()),
        target: approval.target.clone(),
        detail: Some(format!(
            "{message} (changed after the decision, before the call ran)"
        )),
        ..NewAudit::default()
    };
    // If the row is no longer `approved` something else decided; the call still does not run.
    let _ = inner.store.mark_stale(&approval.id, &message, audit);
    Start::Resume {
        approval,
        resolution: Resolution::Stale { message },
    }
}

/// Stores the checkpoint as a pending approval and the task as waiting, in one
/// transaction, before anything else happens.
fn suspend(
    inner: &Arc<Inner>,
    task: &TaskRecord,
    checkpoint: Checkpoint,
    elapsed: u64,
    position: Option<u64>,
) -> Result<TaskRecord> {
    let mut change = TaskChange::to(TaskState::WaitingApproval);
    change.events = closing_events(&checkpoint.events);
    change.add_running_ms = elapsed;
    change.script_position = position;
    let approval = new_approval(checkpoint);
    match inner.store.suspend(&task.id, approval, change) {
        Ok(_) => Ok(inner.store.task(&task.id)?),
        Err(pp_store::Error::Conflict { .. }) => Ok(inner.store.task(&task.id)?),
        Err(error) => Err(Error::Store(error)),
    }
}

/// The approval row for a checkpoint.
pub(crate) fn new_approval(checkpoint: Checkpoint) -> NewApproval {
    let pending = &checkpoint.pending;
    NewApproval {
        tool: pending.call.name.clone(),
        capability: pending.capability.clone(),
        risk: pending.risk,
        label: pending.preview.as_ref().map(|preview| preview.label),
        target: pending
            .preview
            .as_ref()
            .map(|preview| preview.target.clone())
            .or_else(|| target_of(&pending.arguments)),
        arguments: pending.arguments.clone(),
        fingerprint: pending
            .preview
            .as_ref()
            .map(|preview| preview.fingerprint.clone()),
        checkpoint,
    }
}

/// Moves the task from `running` to the change's state; if someone else changed it first
/// (a cancel from another process), keeps theirs.
fn finish(inner: &Arc<Inner>, task: &TaskRecord, change: TaskChange) -> Result<TaskRecord> {
    match inner
        .store
        .transition(&task.id, &[TaskState::Running], change)
    {
        Ok((record, _)) => Ok(record),
        Err(pp_store::Error::Conflict { .. }) => Ok(inner.store.task(&task.id)?),
        Err(error) => Err(Error::Store(error)),
    }
}

fn failed_change(
    reason: FailureReason,
    message: String,
    elapsed: u64,
    position: Option<u64>,
) -> TaskChange {
    let mut change = TaskChange::to(TaskState::Failed);
    change.failure_reason = Some(reason.as_str().to_owned());
    change.events = vec![Event {
        step: 0,
        kind: EventKind::TaskFailed {
            reason,
            message: message.clone(),
        },
    }];
    change.error = Some(message);
    change.add_running_ms = elapsed;
    change.script_position = position;
    change
}

/// The events the sink held back for the closing transaction.
fn closing_events(events: &[Event]) -> Vec<Event> {
    events
        .iter()
        .filter(|event| ends_segment(event))
        .cloned()
        .collect()
}

/// The `path` argument, when a call has one.
fn target_of(arguments: &serde_json::Value) -> Option<String> {
    arguments
        .get("path")
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned)
}
