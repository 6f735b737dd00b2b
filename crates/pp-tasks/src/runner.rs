//! Runs one segment of a task (a fresh start or a resume) and stores how it ended.

use std::sync::Arc;
use std::time::Duration;

use pp_agent::{
    Agent, BeforeApprovedCall, BoxFuture, Interrupt, Outcome, Resolution, ResumeError, ToolContext,
    ToolRegistry,
};
use pp_store::{NewApproval, TaskChange};
use pp_types::{
    ApprovalRecord, AuditAction, Checkpoint, Event, EventKind, FailureReason, NewAudit, TaskRecord,
    TaskState,
};
use serde_json::Value;
use tokio::time::Instant;

use crate::checks::{recheck, target_of, target_of_in};
use crate::conversation;
use crate::error::{Error, Result};
use crate::keep::{keep, measure};
use crate::model::TaskModel;
use crate::segment::{Segment, arguments_hash};
use crate::shared::{Cancellation, Shared};
use crate::sink::{Pricing, QueueingSink, StoreSink, Watched, ends_segment};

/// How a segment begins.
pub(crate) enum Start {
    /// From the prompt (a new task, or a retry with no checkpoint to return to).
    Fresh,
    /// From a changeset's checkpoint, once every call of it is decided.
    Resume {
        /// The changeset's approvals, in the model's order, each as decided (the
        /// checkpoint to resume from is theirs; every one carries the same).
        approvals: Vec<ApprovalRecord>,
        /// What to do with each approval's call: `(call_id, resolution)`.
        decisions: Vec<(String, Resolution)>,
        /// The segment built when the last person decided (to check the call), which
        /// runs the calls too if a worker takes the run at once; `None`: the run builds
        /// its own (also when it had to wait for a worker).
        segment: Option<Box<Segment>>,
    },
}

/// How the loop future ended.
enum Ended {
    Outcome(Outcome),
    /// The segment could not start or resume (an invalid checkpoint, a store failure
    /// while building a chat turn's conversation).
    ResumeFailed(String),
    TimedOut,
    Cancelled,
}

/// Runs `task` (already `running` in the store) for one segment and persists the result.
/// Returns the task as stored afterwards. `recheck`: the run waited (for a worker) since
/// `task` was read, so it reads the task again and runs only if it is still `running`;
/// otherwise `task` is as current as a read would be.
pub(crate) async fn run_segment(
    shared: &Arc<Shared>,
    task: TaskRecord,
    start: Start,
    recheck: bool,
) -> TaskRecord {
    let id = task.id.clone();
    let result = drive(shared, &task, start, recheck).await;
    shared.forget_cancellation(&id);
    match result {
        Ok(record) => record,
        Err(error) => {
            // The service could not run the task at all (workspace gone, store failure):
            // fail it with that reason rather than leave it running.
            let change = failed_change(FailureReason::Internal, error.to_string(), 0, None);
            match finish(shared, &task, change).await {
                Ok(record) => record,
                Err(_) => task,
            }
        }
    }
}

async fn drive(
    shared: &Arc<Shared>,
    task: &TaskRecord,
    start: Start,
    recheck: bool,
) -> Result<TaskRecord> {
    let model = match TaskModel::for_task(&shared.models, task) {
        Ok(model) => model,
        Err(error) => {
            let change = failed_change(FailureReason::ModelError, error.to_string(), 0, None);
            return finish(shared, task, change).await;
        }
    };
    let root = shared.workspace_root(task)?;
    let (segment, start) = match start {
        Start::Resume {
            approvals,
            decisions,
            segment: Some(segment),
        } => (
            *segment,
            Start::Resume {
                approvals,
                decisions,
                segment: None,
            },
        ),
        start => (shared.segment(&root).await?, start),
    };
    let cancel = shared.cancellation(&task.id);
    // A run that waited for a worker makes sure it is still ours to run (a cancel from
    // another process, or from here before the signal could reach us).
    let current = if recheck {
        let current = shared.store.task(&task.id).await?;
        if current.state != TaskState::Running {
            return Ok(current);
        }
        current
    } else {
        task.clone()
    };
    let _heartbeat = Heartbeat::start(shared, &task.id);
    let sink = StoreSink::new(
        shared.store.clone(),
        task.id.clone(),
        shared.observer.clone(),
        Pricing {
            model: model.as_model().name(),
            prices: shared.settings.prices.clone(),
        },
    );
    let queueing = QueueingSink(Arc::clone(&sink));
    let remaining = shared
        .settings
        .timeout
        .saturating_sub(Duration::from_millis(task.running_ms));
    let context = ToolContext::for_task(
        task.id.as_str(),
        std::time::Instant::now().checked_add(remaining),
    )
    .with_actor(task.created_by);
    let interrupt = context.interrupt.clone();
    let mut agent = Agent::new(
        model.as_model(),
        &segment.registry,
        &segment.gate,
        &queueing,
    )
    .with_limits(shared.settings.limits())
    .with_context(context)
    // A start from the prompt (a retry) counts what earlier attempts used; a resume
    // counts from its checkpoint.
    .with_tokens_used(current.usage.total_tokens);
    if let Start::Resume { approvals, .. } = &start {
        agent = agent.with_before_approved_call(Arc::new(BeforeRun {
            shared: Arc::clone(shared),
            registry: segment.registry.clone(),
            workspace_path: root.clone(),
            approvals: approvals.clone(),
            sink: Arc::clone(&sink),
        }));
    }

    // A chat session's turn starts with the session's history (and stores its own
    // messages when it ends, for the turns after it).
    let turn = shared.store.turn_of_task(&task.id).await?;
    let began = Instant::now();
    let run = async {
        match start {
            Start::Fresh => match &turn {
                None => {
                    Ended::Outcome(agent.start(segment.system_prompt(None), &task.prompt).await)
                }
                Some((session, index)) => {
                    match conversation::prepare(
                        shared,
                        task,
                        session,
                        *index,
                        &segment,
                        model.as_model(),
                        &queueing,
                    )
                    .await
                    {
                        Ok(conversation) => Ended::Outcome(
                            agent
                                .start_with_history(
                                    segment.system_prompt(conversation.summary.as_deref()),
                                    conversation.history,
                                    &task.prompt,
                                )
                                .await,
                        ),
                        Err(error) => Ended::ResumeFailed(error.to_string()),
                    }
                }
            },
            Start::Resume {
                mut approvals,
                decisions,
                ..
            } => match approvals.pop() {
                None => Ended::ResumeFailed("a changeset with no approvals".to_owned()),
                Some(approval) => match agent.resume_all(approval.checkpoint, decisions).await {
                    Ok(outcome) => Ended::Outcome(outcome),
                    Err(ResumeError::InvalidEdit { message, .. }) => Ended::ResumeFailed(message),
                    Err(error) => Ended::ResumeFailed(error.to_string()),
                },
            },
        }
    };
    let ended = run_interruptibly(run, &cancel, remaining, &interrupt).await;
    sink.flush().await;
    let elapsed = u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX);
    let position = model.script_position();
    if let Some(failure) = sink.failure() {
        let change = failed_change(FailureReason::Internal, failure, elapsed, position);
        return finish(shared, task, change).await;
    }

    if turn.is_some()
        && let Ended::Outcome(
            Outcome::Completed { messages, .. } | Outcome::Failed { messages, .. },
        ) = &ended
    {
        // Before the state change, so the next turn (allowed once this one has ended)
        // finds it. A failure here only costs the next turns this turn's detail.
        let own = conversation::own_messages(messages.clone());
        let _ = shared.store.set_turn_messages(&task.id, &own).await;
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
            finish(shared, task, change).await
        }
        Ended::Outcome(Outcome::Failed {
            reason,
            message,
            events,
            ..
        }) => {
            let mut change = TaskChange::to(TaskState::Failed);
            change.failure_reason = Some(reason);
            change.error = Some(message);
            change.events = closing_events(&events);
            change.add_running_ms = elapsed;
            change.script_position = position;
            finish(shared, task, change).await
        }
        Ended::Outcome(Outcome::Suspended(checkpoint)) => {
            let mut calls = Vec::new();
            for pending in checkpoint.pending_calls() {
                let target = pending
                    .preview
                    .as_ref()
                    .map(|preview| preview.target.clone())
                    .or_else(|| target_of(&segment, &pending.call.name, &pending.arguments));
                let revertible = measure(
                    shared.settings.revert.max_bytes,
                    &segment,
                    &task.id,
                    &pending.call.name,
                    &pending.arguments,
                )
                .await;
                calls.push((pending.call.id.clone(), target, revertible));
            }
            suspend(shared, task, *checkpoint, calls, elapsed, position).await
        }
        Ended::ResumeFailed(message) => {
            let change = failed_change(FailureReason::Internal, message, elapsed, position);
            finish(shared, task, change).await
        }
        Ended::TimedOut => {
            let message = format!(
                "the task used its {} s of running time",
                shared.settings.timeout.as_secs()
            );
            let mut change = failed_change(FailureReason::Timeout, message, elapsed, position);
            change.to = TaskState::TimedOut;
            finish(shared, task, change).await
        }
        Ended::Cancelled => {
            let event = Event {
                step: 0,
                kind: EventKind::TaskCancelled {
                    message: "cancelled by the operator while running".into(),
                },
            };
            let mut change = TaskChange::to(TaskState::Cancelled);
            change.error = Some("cancelled by the operator".into());
            change.events = vec![event];
            change.add_running_ms = elapsed;
            change.script_position = position;
            let audit = cancel_audit(&task.id, cancel.by());
            match shared
                .store
                .cancel_task(&task.id, &[TaskState::Running], change, audit)
                .await
            {
                Ok(record) => Ok(record),
                Err(_) => Ok(shared.store.task(&task.id).await?),
            }
        }
    }
}

/// The audit row of a cancellation the operator (or the team user `user`) asked for;
/// written in the same transaction as the state change, so the ledger never records a
/// cancel that did not happen.
pub(crate) fn cancel_audit(task: &pp_types::TaskId, user: Option<String>) -> NewAudit {
    NewAudit {
        actor: Some(pp_types::Actor::Operator),
        task_id: Some(task.clone()),
        user,
        ..NewAudit::new(AuditAction::TaskCancelled)
    }
}

/// Drives `run` until it ends, the task is cancelled or its running time is used up.
///
/// On cancel or timeout the segment's interrupt is triggered, so tool work on blocking
/// threads stops at its next check (a write never lands after it), and a tool call that is
/// running is allowed to finish, so its outcome reaches the events and the audit ledger.
async fn run_interruptibly(
    run: impl Future<Output = Ended>,
    cancel: &Cancellation,
    remaining: Duration,
    interrupt: &Interrupt,
) -> Ended {
    if cancel.is_cancelled() {
        interrupt.trigger();
        return Ended::Cancelled;
    }
    let mut run = std::pin::pin!(run);
    let stopped = tokio::select! {
        biased;
        () = cancel.cancelled() => Ended::Cancelled,
        () = tokio::time::sleep(remaining) => Ended::TimedOut,
        ended = &mut run => return ended,
    };
    interrupt.trigger();
    while interrupt.tool_in_flight() {
        tokio::select! {
            _ = &mut run => break,
            () = tokio::time::sleep(Duration::from_millis(5)) => {}
        }
    }
    stopped
}

/// Tells the store this process is still running the task, until dropped. Beats on its
/// own task, so tool work on blocking threads never delays it.
struct Heartbeat(tokio::task::JoinHandle<()>);

impl Heartbeat {
    fn start(shared: &Arc<Shared>, task: &pp_types::TaskId) -> Self {
        let shared = Arc::clone(shared);
        let task = task.clone();
        let every = (shared.settings.lease / 3).max(Duration::from_millis(10));
        Self(tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let _ = shared.store.heartbeat(&task).await;
            }
        }))
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Repeats the pre-execution checks right before each approved call of a changeset runs
/// (the agent's [`BeforeApprovedCall`] hook): the run may have waited for a worker, and
/// the file may have changed after the decision, or while earlier calls of the turn ran.
/// A changed target turns the approval `stale` (audited) and the call is not run.
///
/// A call that will run has its snapshot kept ([`keep`]) and a `tool_started` row
/// written, before the side effect (so a crash between the effect and its recorded
/// result still leaves a trace); the sink records the kept snapshot with the call's
/// outcome.
struct BeforeRun {
    shared: Arc<Shared>,
    registry: ToolRegistry,
    workspace_path: String,
    approvals: Vec<ApprovalRecord>,
    sink: Arc<StoreSink>,
}

impl BeforeApprovedCall for BeforeRun {
    fn check<'a>(
        &'a self,
        call_id: &'a str,
        arguments: &'a Value,
    ) -> BoxFuture<'a, std::result::Result<(), String>> {
        Box::pin(async move {
            let Some(approval) = self.approvals.iter().find(|a| a.call_id == call_id) else {
                return Err(format!("not run: call `{call_id}` has no approval"));
            };
            self.check_approval(approval, arguments).await
        })
    }
}

impl BeforeRun {
    async fn check_approval(
        &self,
        approval: &ApprovalRecord,
        executed: &Value,
    ) -> std::result::Result<(), String> {
        let shared = &self.shared;
        // The workspace is held from before the checks until the call's changes are
        // recorded (the guard goes with what is kept): a command alone, so its
        // before/after difference is its own; other calls together.
        let exclusive = approval.tool == crate::keep::workspace::COMMAND_TOOL;
        let guard = shared.hold_workspace(&self.workspace_path, exclusive).await;
        let context = ToolContext::for_task(approval.task_id.as_str(), None);
        let edited = approval.edited_arguments.as_ref();
        let verdict = recheck(&self.registry, approval, edited, &context).await;
        let target = target_of_in(&self.registry, &approval.tool, executed)
            .or_else(|| approval.target.clone());
        let message = match verdict {
            Ok(()) => {
                let kept = keep(
                    &shared.settings,
                    shared.data_dir(),
                    shared.memory(),
                    &self.registry,
                    approval,
                    &self.workspace_path,
                    executed,
                )
                .await
                .map_err(|error| format!("not run: {error}"))?
                .holding(guard);
                let started = NewAudit {
                    actor: Some(pp_types::Actor::Agent),
                    task_id: Some(approval.task_id.clone()),
                    approval_id: Some(approval.id.clone()),
                    tool: Some(approval.tool.clone()),
                    target: target.clone(),
                    arguments_hash: Some(arguments_hash(executed)),
                    ..NewAudit::new(AuditAction::ToolStarted)
                };
                // What the targets held before the call goes with its `tool_started`
                // row: a retry after a crash between the two shows it on the card that
                // asks the call again ("this call may already have run").
                let call = pp_store::NewStartedCall {
                    approval_id: approval.id.clone(),
                    task_id: approval.task_id.clone(),
                    tool: approval.tool.clone(),
                    target: approval.target.clone(),
                    files: kept.started_files(),
                };
                shared
                    .store
                    .call_started(call, started)
                    .await
                    .map_err(|error| format!("not run: {error}"))?;
                self.sink.watch(Watched {
                    call_id: approval.call_id.clone(),
                    approval_id: approval.id.clone(),
                    target,
                    arguments_hash: arguments_hash(executed),
                    kept: Some(kept),
                });
                return Ok(());
            }
            Err(message) => message,
        };
        let audit = NewAudit {
            actor: approval.resolved_by,
            task_id: Some(approval.task_id.clone()),
            tool: Some(approval.tool.clone()),
            target: approval.target.clone(),
            detail: Some(format!(
                "{message} (changed after the decision, before the call ran)"
            )),
            ..NewAudit::new(AuditAction::ApprovalStale)
        };
        // If the row is no longer `approved` something else decided; the call still does
        // not run.
        let _ = shared.store.mark_stale(&approval.id, &message, audit).await;
        Err(message)
    }
}

/// Stores the checkpoint as a pending approval and the task as waiting, in one
/// transaction, before anything else happens.
async fn suspend(
    shared: &Arc<Shared>,
    task: &TaskRecord,
    checkpoint: Checkpoint,
    calls: Vec<(String, Option<String>, Option<bool>)>,
    elapsed: u64,
    position: Option<u64>,
) -> Result<TaskRecord> {
    let mut change = TaskChange::to(TaskState::WaitingApproval);
    change.events = closing_events(&checkpoint.events);
    change.add_running_ms = elapsed;
    change.script_position = position;
    let approvals = calls
        .into_iter()
        .map(|(call_id, target, revertible)| {
            new_approval(checkpoint.clone(), &call_id, target, revertible)
        })
        .collect();
    // The task is read after the suspend: the transaction moved it, so this read sees
    // it waiting (or whatever a later change made of it, which is as good).
    let suspended = match shared.store.suspend(&task.id, approvals, change).await {
        Ok((approvals, _)) => {
            crate::retry::ask_again(&shared.store, &approvals).await;
            shared.store.task(&task.id).await
        }
        Err(error) => Err(error),
    };
    match suspended {
        Ok(record) => Ok(record),
        Err(pp_store::Error::Conflict { .. }) => Ok(shared.store.task(&task.id).await?),
        Err(error) => Err(Error::Store(error)),
    }
}

/// The approval row for the pending call `call_id` of `checkpoint` (which every approval
/// of its changeset carries whole); `target` is what the stale check and the audit
/// name (the preview's target, or the tool's first path parameter); `revertible`
/// whether what the call would replace can be kept (`None`: no file effect).
pub(crate) fn new_approval(
    checkpoint: Checkpoint,
    call_id: &str,
    target: Option<String>,
    revertible: Option<bool>,
) -> NewApproval {
    let pending = checkpoint
        .pending_call(call_id)
        .unwrap_or(&checkpoint.pending);
    NewApproval {
        tool: pending.call.name.clone(),
        capability: pending.capability.clone(),
        risk: pending.risk,
        label: pending.preview.as_ref().map(|preview| preview.label),
        target,
        arguments: pending.arguments.clone(),
        fingerprint: pending
            .preview
            .as_ref()
            .map(|preview| preview.fingerprint.clone()),
        call_id: pending.call.id.clone(),
        changeset_id: None,
        checkpoint,
        revertible,
    }
}

/// Moves the task from `running` to the change's state; if someone else changed it first
/// (a cancel from another process), keeps theirs.
async fn finish(shared: &Arc<Shared>, task: &TaskRecord, change: TaskChange) -> Result<TaskRecord> {
    let result = shared
        .store
        .transition(&task.id, &[TaskState::Running], change)
        .await;
    match result {
        Ok((record, _)) => Ok(record),
        Err(pp_store::Error::Conflict { .. }) => Ok(shared.store.task(&task.id).await?),
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
    change.failure_reason = Some(reason);
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
