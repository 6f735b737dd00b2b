//! The loop itself: model turn → tool calls through the policy → next turn.

use std::collections::HashMap;
use std::sync::Arc;

use pp_types::{
    CHECKPOINT_VERSION, Checkpoint, Decision, Denial, Event, EventKind, FailureReason, Message,
    OLDEST_CHECKPOINT_VERSION, PendingCall, Policy, ResolutionKind, ToolCall, ToolOutput,
};
use serde_json::Value;

use crate::changeset::{AFTER_EARLIER_MESSAGE, BeforeApprovedCall, same_or_beneath};
use crate::outcome::{DecisionProblem, Outcome, Resolution, ResumeError};
use crate::{
    EventSink, Model, ModelRequest, Tool, ToolContext, ToolDefinition, ToolRegistry,
    estimate_next_call, estimate_tokens, trim_to_window,
};

/// Limits that end a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Model calls per task (default 24).
    pub max_steps: u32,
    /// Denials before the task fails with `policy_violation` (default 3).
    pub max_denials: u32,
    /// Total tokens per task (`[tasks] max_tokens`; default: none). The loop stops
    /// with `token_budget` before a model call whose estimate (see
    /// [`crate::estimate_next_call`]) would take the task past it.
    pub token_budget: Option<u64>,
    /// The model's context window in tokens: older turns are left out of requests that
    /// would not fit (default: none, send everything).
    pub context_window: Option<u64>,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_steps: 24,
            max_denials: 3,
            token_budget: None,
            context_window: None,
        }
    }
}

/// Text given to the model, on resume, for a call after one that waited for approval
/// that is not run: every later call of a version-1 checkpoint, and a later call the
/// policy allowed at suspension but would now ask about.
pub const NOT_RUN_MESSAGE: &str =
    "not run: an earlier call was waiting for approval; ask again if it is still needed";

/// The agent loop for one run segment.
///
/// Built fresh for every run and every resume: the tools (and the jail inside them) and
/// the policy are the caller's newly built values, never state kept from an earlier run.
///
/// # One turn's calls
///
/// The calls of a model turn are handled in the model's order: each is announced
/// (`tool_call`), then answered with an error (unknown tool, arguments that are not JSON
/// or fail the schema), denied (`tool_denied`; the denial cap ends the run with
/// `policy_violation`), run (the policy allows it) — until the first call the policy
/// asks about. Then the loop looks at all the turn's remaining calls before it suspends
/// (the changeset):
/// - each is announced once; errors and denials are answered at once, as above;
/// - a call the policy allows is not run yet: it waits in
///   [`Checkpoint::later_calls`] and runs after the decisions, in the model's order;
/// - a call the policy asks about joins the changeset ([`Checkpoint::more_pending`],
///   with its preview), unless its target ([`Tool::target`]) is the same as, or lies
///   beneath ([`crate::same_or_beneath`]), the target of an earlier call of the
///   changeset: then it is answered [`AFTER_EARLIER_MESSAGE`] at once.
///
/// The run then suspends with one `approval_required` event per pending call, in the
/// model's order; [`Agent::resume_all`] continues it.
pub struct Agent<'a> {
    model: &'a dyn Model,
    tools: &'a ToolRegistry,
    policy: &'a dyn Policy,
    sink: &'a dyn EventSink,
    limits: Limits,
    context: ToolContext,
    /// Tokens the task used in earlier segments that left no checkpoint to count them.
    tokens_before: u64,
    /// Checks each approved call right before it runs (none: every approved call runs).
    before_approved: Option<Arc<dyn BeforeApprovedCall>>,
}

/// Mutable state of one run segment.
struct RunState {
    messages: Vec<Message>,
    step: u32,
    denials: u32,
    tokens_used: u64,
    /// The usage the last model call reported, the base of the next call's estimate.
    last_usage: Option<pp_types::Usage>,
    events: Vec<Event>,
}

/// What handling one call led to.
enum CallResult {
    /// The call was answered (result, error or denial); go on.
    Answered,
    /// The call needs approval.
    Suspend(Box<PendingCall>),
    /// The denial cap was reached.
    PolicyViolation,
}

/// What the gate made of a call before anything ran.
enum Gated {
    /// The call was answered (unknown tool, bad arguments, denial); go on.
    Answered,
    /// A denial reached the denial cap.
    PolicyViolation,
    /// The policy allows the call: its tool and parsed arguments.
    Allow(Arc<dyn Tool>, Value),
    /// The policy asks a person: the call's tool and parsed arguments.
    Ask(Arc<dyn Tool>, Value),
}

/// One call still to be handled on resume.
enum Planned<'c> {
    /// A pending call with the person's decision.
    Decided {
        pending: &'c PendingCall,
        tool: Arc<dyn Tool>,
        resolution: Resolution,
    },
    /// A later call of a version-1 checkpoint: answered [`NOT_RUN_MESSAGE`].
    NotRun(&'c ToolCall),
    /// A later call the policy allowed at suspension: gated again and run.
    Later(&'c ToolCall),
}

/// Why the decisions could not be matched to the checkpoint's calls.
enum PlanError {
    Decisions(DecisionProblem),
    UnknownTool(String),
}

impl<'a> Agent<'a> {
    /// A loop over `model` and `tools`, checking every call with `policy` and reporting
    /// events to `sink`, with default [`Limits`].
    pub fn new(
        model: &'a dyn Model,
        tools: &'a ToolRegistry,
        policy: &'a dyn Policy,
        sink: &'a dyn EventSink,
    ) -> Self {
        Self {
            model,
            tools,
            policy,
            sink,
            limits: Limits::default(),
            context: ToolContext::default(),
            tokens_before: 0,
            before_approved: None,
        }
    }

    /// Sets the hook that checks each approved call right before it runs (see
    /// [`BeforeApprovedCall`] for exactly when); without one every approved call runs.
    pub fn with_before_approved_call(mut self, hook: Arc<dyn BeforeApprovedCall>) -> Self {
        self.before_approved = Some(hook);
        self
    }

    /// Starts the token count of [`Agent::start`] and [`Agent::run`] at `tokens`: what
    /// the task used before (a retry from the prompt), so the budget spans attempts.
    /// A resume counts from its checkpoint instead.
    pub fn with_tokens_used(mut self, tokens: u64) -> Self {
        self.tokens_before = tokens;
        self
    }

    /// Replaces the context every tool call receives (task id, deadline, interrupt).
    pub fn with_context(mut self, context: ToolContext) -> Self {
        self.context = context;
        self
    }

    /// Replaces the limits.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Starts a task: emits `task_started` and runs from step 0 with the system prompt
    /// and the person's prompt.
    pub async fn start(&self, system_prompt: String, prompt: &str) -> Outcome {
        self.start_with_history(system_prompt, Vec::new(), prompt)
            .await
    }

    /// Like [`Agent::start`], with earlier turns of a conversation (a chat session)
    /// between the system prompt and the person's new message. `history` must keep every
    /// assistant tool call together with its results.
    pub async fn start_with_history(
        &self,
        system_prompt: String,
        history: Vec<Message>,
        prompt: &str,
    ) -> Outcome {
        let mut messages = Vec::with_capacity(history.len() + 2);
        messages.push(Message::system(system_prompt));
        messages.extend(history);
        messages.push(Message::user(prompt));
        let mut state = RunState::new(messages, 0, self.tokens_before);
        self.emit(
            &mut state,
            EventKind::TaskStarted {
                prompt: prompt.to_owned(),
            },
        );
        self.drive(state).await
    }

    /// Runs the loop on `messages` from `start_step` with a fresh denial count (and the
    /// token count of [`Agent::with_tokens_used`]).
    pub async fn run(&self, messages: Vec<Message>, start_step: u32) -> Outcome {
        self.drive(RunState::new(messages, start_step, self.tokens_before))
            .await
    }

    /// Continues a suspended run after a person's decision on its one pending call.
    ///
    /// [`Agent::resume_all`] with one decision, for `checkpoint.pending`. A checkpoint
    /// whose changeset holds more calls ([`Checkpoint::more_pending`]) needs
    /// [`Agent::resume_all`]: here it is refused with [`ResumeError::Decisions`]
    /// ([`DecisionProblem::Missing`]) and nothing runs.
    pub async fn resume(
        &self,
        checkpoint: Checkpoint,
        resolution: Resolution,
    ) -> Result<Outcome, ResumeError> {
        let call_id = checkpoint.pending.call.id.clone();
        self.resume_all(checkpoint, vec![(call_id, resolution)])
            .await
    }

    /// Continues a suspended run once every call of its changeset is decided.
    ///
    /// `decisions` pairs a call id with its [`Resolution`]; every pending call
    /// ([`Checkpoint::pending_calls`]) needs exactly one. Before anything runs, the
    /// resume refuses, handing the checkpoint back untouched:
    /// - a checkpoint of an unsupported version ([`ResumeError::UnsupportedVersion`]) or
    ///   one that contradicts itself ([`ResumeError::InvalidCheckpoint`]);
    /// - decisions that do not match the pending calls one to one
    ///   ([`ResumeError::Decisions`]: a pending call without one, one for a call that is
    ///   not pending, two for the same call);
    /// - a pending call whose tool is not in the registry ([`ResumeError::UnknownTool`]);
    /// - edited arguments of any approved call that fail the tool's schema or the policy
    ///   ([`ResumeError::InvalidEdit`], after an `approval_edit_rejected` event; the
    ///   first such call in the model's order is named). So nothing of a changeset runs
    ///   when one of its edits is invalid.
    ///
    /// Then the turn's remaining calls are handled in the model's order: `pending`, then
    /// [`Checkpoint::later_calls`].
    /// - A pending call gets its `approval_resolved` event. Approved, its arguments (the
    ///   edited ones, if any; the event then carries them, their preview and the editor)
    ///   are checked by the fresh policy (a denial answers it as denied), then by the
    ///   [`BeforeApprovedCall`] hook if one is set (an `Err` answers it with the message,
    ///   unrun), and it runs; the model's result of an edited call starts with a note of
    ///   what the person changed. Rejected, the model is told so (with the reason);
    ///   stale, it gets the stale message.
    /// - In a version-2 checkpoint, any other later call (one the policy allowed at
    ///   suspension) goes through the fresh policy like any call and runs if allowed; if
    ///   the policy would now ask, it is answered [`NOT_RUN_MESSAGE`] instead of
    ///   suspending again. In a version-1 checkpoint every later call is answered
    ///   [`NOT_RUN_MESSAGE`].
    /// - When the denial cap is reached, the calls after it are answered "not run" (a
    ///   pending one still gets its `approval_resolved` event) and the run fails with
    ///   `policy_violation`.
    ///
    /// The answers to the turn's calls are then put in the model's order in the
    /// conversation (calls answered at suspension came first) and the loop continues
    /// at `step + 1`.
    pub async fn resume_all(
        &self,
        checkpoint: Checkpoint,
        decisions: Vec<(String, Resolution)>,
    ) -> Result<Outcome, ResumeError> {
        if !(OLDEST_CHECKPOINT_VERSION..=CHECKPOINT_VERSION).contains(&checkpoint.version) {
            return Err(ResumeError::UnsupportedVersion {
                found: checkpoint.version,
                expected: CHECKPOINT_VERSION,
            });
        }
        if let Err(message) = check_shape(&checkpoint) {
            return Err(ResumeError::InvalidCheckpoint {
                message,
                checkpoint: Box::new(checkpoint),
            });
        }
        let plan = match self.plan(&checkpoint, decisions) {
            Ok(plan) => plan,
            Err(PlanError::Decisions(problem)) => {
                return Err(ResumeError::Decisions {
                    problem,
                    checkpoint: Box::new(checkpoint),
                });
            }
            Err(PlanError::UnknownTool(name)) => {
                return Err(ResumeError::UnknownTool {
                    name,
                    checkpoint: Box::new(checkpoint),
                });
            }
        };
        let mut state = RunState {
            messages: checkpoint.messages.clone(),
            step: checkpoint.step,
            denials: checkpoint.denials,
            tokens_used: checkpoint.tokens_used,
            last_usage: checkpoint.last_usage,
            events: Vec::new(),
        };
        // Every edit is checked before anything runs: one refused edit stops the whole
        // changeset.
        let refused = plan.iter().find_map(|planned| match planned {
            Planned::Decided {
                pending,
                tool,
                resolution:
                    Resolution::Approve {
                        edited_arguments: Some(arguments),
                        ..
                    },
            } => check_edit(tool.as_ref(), self.policy, arguments)
                .err()
                .map(|message| (pending.call.id.clone(), message)),
            _ => None,
        });
        if let Some((call_id, message)) = refused {
            self.emit(
                &mut state,
                EventKind::ApprovalEditRejected {
                    call_id: call_id.clone(),
                    message: message.clone(),
                },
            );
            return Err(ResumeError::InvalidEdit {
                call_id,
                message,
                checkpoint: Box::new(checkpoint),
            });
        }
        let mut stopped = false;
        for planned in plan {
            let result = match planned {
                Planned::Decided {
                    pending,
                    tool,
                    resolution,
                } => {
                    self.resolve_pending(&mut state, pending, tool.as_ref(), resolution, stopped)
                        .await
                }
                Planned::NotRun(call) => {
                    self.announce(&mut state, call);
                    self.answer_error(&mut state, call, NOT_RUN_MESSAGE.to_owned());
                    CallResult::Answered
                }
                Planned::Later(call) if stopped => {
                    let message = stopped_message(&state);
                    self.answer_error(&mut state, call, message);
                    CallResult::Answered
                }
                Planned::Later(call) => self.run_later(&mut state, call).await,
            };
            if matches!(result, CallResult::PolicyViolation) {
                stopped = true;
            }
        }
        order_turn_answers(&mut state.messages);
        if stopped {
            return Ok(self.policy_violation(state));
        }
        state.step += 1;
        Ok(self.drive(state).await)
    }

    /// The turn's remaining calls of `checkpoint` in the model's order, each pending one
    /// with its decision and tool.
    fn plan<'c>(
        &self,
        checkpoint: &'c Checkpoint,
        decisions: Vec<(String, Resolution)>,
    ) -> Result<Vec<Planned<'c>>, PlanError> {
        let ids = checkpoint.pending_ids();
        let mut decided: HashMap<String, Resolution> = HashMap::with_capacity(decisions.len());
        for (call_id, resolution) in decisions {
            if !ids.contains(&call_id.as_str()) {
                return Err(PlanError::Decisions(DecisionProblem::Unknown { call_id }));
            }
            if decided.contains_key(&call_id) {
                return Err(PlanError::Decisions(DecisionProblem::Duplicate { call_id }));
            }
            decided.insert(call_id, resolution);
        }
        let calls = std::iter::once(&checkpoint.pending.call).chain(&checkpoint.later_calls);
        let mut plan = Vec::with_capacity(checkpoint.later_calls.len() + 1);
        for call in calls {
            let planned = match checkpoint.pending_call(&call.id) {
                Some(pending) => {
                    let Some(resolution) = decided.remove(&call.id) else {
                        return Err(PlanError::Decisions(DecisionProblem::Missing {
                            call_id: call.id.clone(),
                        }));
                    };
                    let Some(tool) = self.tools.get(&pending.call.name) else {
                        return Err(PlanError::UnknownTool(pending.call.name.clone()));
                    };
                    Planned::Decided {
                        pending,
                        tool: Arc::clone(tool),
                        resolution,
                    }
                }
                None if checkpoint.version == 1 => Planned::NotRun(call),
                None => Planned::Later(call),
            };
            plan.push(planned);
        }
        Ok(plan)
    }

    /// Carries out a person's decision on `pending` (see [`Agent::resume_all`]); when
    /// `stopped` (the denial cap was reached), an approved call is answered unrun.
    async fn resolve_pending(
        &self,
        state: &mut RunState,
        pending: &PendingCall,
        tool: &dyn Tool,
        resolution: Resolution,
        stopped: bool,
    ) -> CallResult {
        let call = &pending.call;
        match resolution {
            Resolution::Approve {
                edited_arguments,
                edited_by,
            } => {
                // Edited arguments were checked (schema and policy) before anything ran.
                let edited = edited_arguments.is_some();
                let arguments = edited_arguments.unwrap_or_else(|| pending.arguments.clone());
                // An edited call is recorded as what runs: its arguments, and its effect
                // described right before it runs.
                let preview = if edited {
                    tool.preview(&self.context, &arguments).await.map(Box::new)
                } else {
                    None
                };
                self.emit(
                    state,
                    EventKind::ApprovalResolved {
                        call_id: call.id.clone(),
                        decision: ResolutionKind::Approved,
                        edited,
                        reason: None,
                        arguments: edited.then(|| arguments.clone()),
                        preview,
                        edited_by: if edited { edited_by } else { None },
                    },
                );
                if stopped {
                    let message = stopped_message(state);
                    self.answer_error(state, call, message);
                    return CallResult::Answered;
                }
                // The model is told the person changed its call, and how.
                let note = edited.then(|| describe_edit(&pending.arguments, &arguments));
                // The approval covers this one call; the freshly built policy still
                // checks its paths (the tree may have changed while we waited).
                match self.policy.evaluate(tool.spec(), &arguments) {
                    Decision::Deny(denial) => self.deny(state, call, &denial),
                    Decision::Allow | Decision::Ask { .. } => {
                        if let Some(hook) = &self.before_approved
                            && let Err(message) = hook.check(&call.id, &arguments).await
                        {
                            self.answer_error(state, call, message);
                            return CallResult::Answered;
                        }
                        self.execute_noted(state, call, tool, &arguments, note.as_deref())
                            .await
                    }
                }
            }
            Resolution::Stale { message } => {
                self.emit(
                    state,
                    EventKind::ApprovalResolved {
                        call_id: call.id.clone(),
                        decision: ResolutionKind::Stale,
                        edited: false,
                        reason: Some(message.clone()),
                        arguments: None,
                        preview: None,
                        edited_by: None,
                    },
                );
                self.answer_error(state, call, message);
                CallResult::Answered
            }
            Resolution::Recorded { content, failed } => {
                // Decided and run before the process stopped: the recorded answer.
                if failed {
                    self.answer_error(state, call, content);
                } else {
                    self.answer_ok(state, call, content);
                }
                CallResult::Answered
            }
            Resolution::Reject { reason } => {
                self.emit(
                    state,
                    EventKind::ApprovalResolved {
                        call_id: call.id.clone(),
                        decision: ResolutionKind::Rejected,
                        edited: false,
                        reason: reason.clone(),
                        arguments: None,
                        preview: None,
                        edited_by: None,
                    },
                );
                let message = match reason.as_deref().map(str::trim) {
                    Some(reason) if !reason.is_empty() => {
                        format!("rejected by the operator: {reason}")
                    }
                    _ => "rejected by the operator".to_owned(),
                };
                self.answer_error(state, call, message);
                CallResult::Answered
            }
        }
    }

    /// A later call of a changeset's turn that the policy allowed at suspension (already
    /// announced then): the fresh policy decides again; a call it would now ask for is
    /// answered [`NOT_RUN_MESSAGE`] rather than suspending again.
    async fn run_later(&self, state: &mut RunState, call: &ToolCall) -> CallResult {
        match self.gate(state, call) {
            Gated::Answered => CallResult::Answered,
            Gated::PolicyViolation => CallResult::PolicyViolation,
            Gated::Allow(tool, arguments) => {
                self.execute(state, call, tool.as_ref(), &arguments).await
            }
            Gated::Ask(..) => {
                self.answer_error(state, call, NOT_RUN_MESSAGE.to_owned());
                CallResult::Answered
            }
        }
    }

    async fn drive(&self, mut state: RunState) -> Outcome {
        let definitions: Arc<[ToolDefinition]> = self.tools.definitions().into();
        loop {
            if state.step >= self.limits.max_steps {
                let message = format!("the task used all {} steps", self.limits.max_steps);
                return self.fail(state, FailureReason::MaxSteps, message);
            }
            let messages = self.fit_to_window(&mut state);
            if let Some(budget) = self.limits.token_budget {
                let next =
                    estimate_next_call(&messages, &definitions, &state.messages, state.last_usage);
                let projected = state.tokens_used.saturating_add(next);
                if projected > budget {
                    let message = format!(
                        "stopped before the next model call: the task used {} tokens and the \
                         call would need about {next} more, past its budget of {budget}",
                        state.tokens_used
                    );
                    return self.fail(state, FailureReason::TokenBudget, message);
                }
            }
            let request = ModelRequest {
                messages,
                tools: Arc::clone(&definitions),
            };
            self.emit(
                &mut state,
                EventKind::ModelRequest {
                    message_count: request.messages.len(),
                    tool_count: request.tools.len(),
                },
            );
            let mut response = match self.model.complete(&request).await {
                Ok(response) => response,
                Err(error) => {
                    return self.fail(state, FailureReason::ModelError, error.to_string());
                }
            };
            if let Some(usage) = response.usage {
                state.tokens_used = state.tokens_used.saturating_add(usage.total());
                state.last_usage = Some(usage);
            }
            unique_call_ids(&mut response.tool_calls, &state.messages, state.step);
            self.emit(
                &mut state,
                EventKind::AssistantMessage {
                    content: response.content.clone(),
                    tool_calls: response.tool_calls.clone(),
                    usage: response.usage,
                },
            );
            let calls = response.tool_calls.clone();
            state.messages.push(Message::Assistant {
                content: response.content.clone(),
                tool_calls: response.tool_calls,
                reasoning_content: response.reasoning_content,
            });
            // A call that went past the budget (its answer was longer than estimated)
            // leaves no room for another: its tool calls would run for nothing. A final
            // answer is kept; the task is done.
            if let Some(budget) = self.limits.token_budget
                && state.tokens_used > budget
                && !calls.is_empty()
            {
                let message = format!(
                    "the task used {} tokens, past its budget of {budget}; its last tool \
                     calls were not run",
                    state.tokens_used
                );
                return self.fail(state, FailureReason::TokenBudget, message);
            }
            if calls.is_empty() {
                let final_text = response.content.unwrap_or_default();
                self.emit(
                    &mut state,
                    EventKind::TaskCompleted {
                        final_text: final_text.clone(),
                    },
                );
                return Outcome::Completed {
                    final_text,
                    messages: state.messages,
                    events: state.events,
                };
            }
            for (index, call) in calls.iter().enumerate() {
                match self.handle_call(&mut state, call).await {
                    CallResult::Answered => {}
                    CallResult::PolicyViolation => return self.policy_violation(state),
                    CallResult::Suspend(pending) => {
                        let rest = calls.get(index + 1..).unwrap_or_default();
                        return self.suspend_turn(state, *pending, rest).await;
                    }
                }
            }
            state.step += 1;
        }
    }

    /// Emits the `tool_call` event every call the model made gets, run or not.
    fn announce(&self, state: &mut RunState, call: &ToolCall) {
        self.emit(
            state,
            EventKind::ToolCall {
                call_id: call.id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
            },
        );
    }

    /// The messages to send: everything, or — with a context window — the newest turns
    /// that fit (the full history stays in the state and the checkpoint).
    fn fit_to_window(&self, state: &mut RunState) -> Vec<Message> {
        let Some(window) = self.limits.context_window else {
            return state.messages.clone();
        };
        let trimmed = trim_to_window(state.messages.clone(), window, estimate_tokens);
        if !trimmed.dropped.is_empty() {
            self.emit(
                state,
                EventKind::ContextTrimmed {
                    dropped_messages: trimmed.dropped.len(),
                    kept_tokens: trimmed.kept_tokens,
                    window,
                },
            );
        }
        trimmed.kept
    }

    async fn handle_call(&self, state: &mut RunState, call: &ToolCall) -> CallResult {
        self.announce(state, call);
        match self.gate(state, call) {
            Gated::Answered => CallResult::Answered,
            Gated::PolicyViolation => CallResult::PolicyViolation,
            Gated::Allow(tool, arguments) => {
                self.execute(state, call, tool.as_ref(), &arguments).await
            }
            Gated::Ask(tool, arguments) => CallResult::Suspend(Box::new(
                self.pending_call(call, tool.as_ref(), arguments).await,
            )),
        }
    }

    /// Looks the call's tool up, parses and validates its arguments and asks the policy;
    /// answers the call itself when it cannot run (unknown tool, bad arguments, denial).
    fn gate(&self, state: &mut RunState, call: &ToolCall) -> Gated {
        let Some(tool) = self.tools.get(&call.name).map(Arc::clone) else {
            let known: Vec<&str> = self.tools.specs().map(|spec| spec.name.as_str()).collect();
            let message = format!(
                "unknown tool `{}`; available tools: {}",
                call.name,
                known.join(", ")
            );
            self.answer_error(state, call, message);
            return Gated::Answered;
        };
        let arguments = match parse_arguments(&call.arguments) {
            Ok(arguments) => arguments,
            Err(message) => {
                self.answer_error(state, call, message);
                return Gated::Answered;
            }
        };
        if let Err(message) = tool.validate(&arguments) {
            self.answer_error(state, call, format!("invalid arguments: {message}"));
            return Gated::Answered;
        }
        match self.policy.evaluate(tool.spec(), &arguments) {
            Decision::Allow => Gated::Allow(tool, arguments),
            Decision::Deny(denial) => match self.deny(state, call, &denial) {
                CallResult::PolicyViolation => Gated::PolicyViolation,
                CallResult::Answered | CallResult::Suspend(_) => Gated::Answered,
            },
            Decision::Ask { .. } => Gated::Ask(tool, arguments),
        }
    }

    /// The pending call for a call the policy asks about, with its preview.
    async fn pending_call(
        &self,
        call: &ToolCall,
        tool: &dyn Tool,
        arguments: Value,
    ) -> PendingCall {
        let spec = tool.spec();
        PendingCall {
            call: call.clone(),
            preview: tool.preview(&self.context, &arguments).await,
            arguments,
            capability: spec
                .capability
                .as_ref()
                .map(|capability| capability.as_str().to_owned())
                .unwrap_or_default(),
            risk: spec.risk,
        }
    }

    /// Suspends the turn at its first call that needs approval, `first`, after going
    /// through the turn's `rest` (see [`Agent`]'s changeset rules): each is announced;
    /// unknown, unparsable, invalid and denied calls are answered now; allowed ones wait
    /// in `later_calls`; calls that need approval join the changeset, or are answered
    /// [`AFTER_EARLIER_MESSAGE`] when their target is the same as, or lies beneath, an
    /// earlier pending call's target.
    async fn suspend_turn(
        &self,
        mut state: RunState,
        first: PendingCall,
        rest: &[ToolCall],
    ) -> Outcome {
        let mut targets: Vec<String> = self
            .tools
            .get(&first.call.name)
            .and_then(|tool| tool.target(&first.arguments))
            .into_iter()
            .collect();
        let mut more_pending = Vec::new();
        let mut later_calls = Vec::new();
        for call in rest {
            self.announce(&mut state, call);
            match self.gate(&mut state, call) {
                Gated::Answered => {}
                Gated::PolicyViolation => return self.policy_violation(state),
                Gated::Allow(..) => later_calls.push(call.clone()),
                Gated::Ask(tool, arguments) => {
                    let target = tool.target(&arguments);
                    if let Some(target) = &target
                        && targets
                            .iter()
                            .any(|earlier| same_or_beneath(target, earlier))
                    {
                        self.answer_error(&mut state, call, AFTER_EARLIER_MESSAGE.to_owned());
                        continue;
                    }
                    targets.extend(target);
                    later_calls.push(call.clone());
                    more_pending.push(self.pending_call(call, tool.as_ref(), arguments).await);
                }
            }
        }
        self.suspend(state, first, more_pending, later_calls)
    }

    async fn execute(
        &self,
        state: &mut RunState,
        call: &ToolCall,
        tool: &dyn Tool,
        arguments: &Value,
    ) -> CallResult {
        self.execute_noted(state, call, tool, arguments, None).await
    }

    /// Runs the call; `note` (a person's edit, described) is put before what the model
    /// reads of the result, success or error.
    async fn execute_noted(
        &self,
        state: &mut RunState,
        call: &ToolCall,
        tool: &dyn Tool,
        arguments: &Value,
        note: Option<&str>,
    ) -> CallResult {
        let output = {
            let _in_flight = self.context.interrupt.enter();
            tool.execute(&self.context, arguments).await
        };
        let output = match (note, output) {
            (Some(note), ToolOutput::Success { content }) => ToolOutput::Success {
                content: format!("{note}\n{content}"),
            },
            (Some(note), ToolOutput::Error { message }) => ToolOutput::Error {
                message: format!("{note}\n{message}"),
            },
            (_, output) => output,
        };
        match output {
            ToolOutput::Success { content } => {
                self.answer_ok(state, call, content);
                CallResult::Answered
            }
            ToolOutput::Error { message } => {
                self.answer_error(state, call, message);
                CallResult::Answered
            }
            ToolOutput::Denied(denial) => self.deny(state, call, &denial),
        }
    }

    fn deny(&self, state: &mut RunState, call: &ToolCall, denial: &Denial) -> CallResult {
        state.denials = state.denials.saturating_add(1);
        self.emit(state, EventKind::denied(call, denial, state.denials));
        state.messages.push(Message::tool(
            &call.id,
            format!("denied by policy: {denial}"),
        ));
        if state.denials >= self.limits.max_denials {
            CallResult::PolicyViolation
        } else {
            CallResult::Answered
        }
    }

    /// Answers `call` with the tool's output `content` (and records it).
    fn answer_ok(&self, state: &mut RunState, call: &ToolCall, content: String) {
        self.emit(
            state,
            EventKind::ToolResult {
                call_id: call.id.clone(),
                name: call.name.clone(),
                content: content.clone(),
            },
        );
        state.messages.push(Message::tool(&call.id, content));
    }

    fn answer_error(&self, state: &mut RunState, call: &ToolCall, message: String) {
        let answer = format!("error: {message}");
        self.emit(
            state,
            EventKind::ToolError {
                call_id: call.id.clone(),
                name: call.name.clone(),
                message,
            },
        );
        state.messages.push(Message::tool(&call.id, answer));
    }

    fn suspend(
        &self,
        mut state: RunState,
        pending: PendingCall,
        more_pending: Vec<PendingCall>,
        later_calls: Vec<ToolCall>,
    ) -> Outcome {
        for call in std::iter::once(&pending).chain(&more_pending) {
            self.emit(&mut state, EventKind::approval_required(call));
        }
        Outcome::Suspended(Box::new(Checkpoint {
            version: CHECKPOINT_VERSION,
            pending,
            more_pending,
            later_calls,
            messages: state.messages,
            step: state.step,
            denials: state.denials,
            tokens_used: state.tokens_used,
            last_usage: state.last_usage,
            events: state.events,
        }))
    }

    fn policy_violation(&self, state: RunState) -> Outcome {
        let message = format!("the task was stopped after {} denied calls", state.denials);
        self.fail(state, FailureReason::PolicyViolation, message)
    }

    fn fail(&self, mut state: RunState, reason: FailureReason, message: String) -> Outcome {
        self.emit(
            &mut state,
            EventKind::TaskFailed {
                reason,
                message: message.clone(),
            },
        );
        Outcome::Failed {
            reason,
            message,
            messages: state.messages,
            events: state.events,
        }
    }

    fn emit(&self, state: &mut RunState, kind: EventKind) {
        let event = Event {
            step: state.step,
            kind,
        };
        self.sink.emit(&event);
        state.events.push(event);
    }
}

impl RunState {
    fn new(messages: Vec<Message>, step: u32, tokens_used: u64) -> Self {
        Self {
            messages,
            step,
            denials: 0,
            tokens_used,
            last_usage: None,
            events: Vec::new(),
        }
    }
}

/// Checks edited arguments against the tool's schema ([`Tool::validate`]) and the policy, as a resume would;
/// callers use it to refuse an edit (HTTP 422) before recording any decision.
pub fn check_edit(tool: &dyn Tool, policy: &dyn Policy, arguments: &Value) -> Result<(), String> {
    tool.validate(arguments)?;
    match policy.evaluate(tool.spec(), arguments) {
        Decision::Deny(denial) => Err(format!("denied by policy: {denial}")),
        Decision::Allow | Decision::Ask { .. } => Ok(()),
    }
}

/// Whether `checkpoint` is one a resume can follow: a version-1 checkpoint has no
/// `more_pending`; the turn's remaining calls (`pending`, then `later_calls`) have
/// distinct ids; every `more_pending` call is among `later_calls`.
fn check_shape(checkpoint: &Checkpoint) -> Result<(), String> {
    if checkpoint.version == 1 && !checkpoint.more_pending.is_empty() {
        return Err("a version-1 checkpoint has more than one pending call".to_owned());
    }
    let mut seen = std::collections::HashSet::new();
    for call in std::iter::once(&checkpoint.pending.call).chain(&checkpoint.later_calls) {
        if !seen.insert(call.id.as_str()) {
            return Err(format!("call `{}` appears twice", call.id));
        }
    }
    for pending in &checkpoint.more_pending {
        if !checkpoint
            .later_calls
            .iter()
            .any(|call| call.id == pending.call.id)
        {
            return Err(format!(
                "pending call `{}` is not among the later calls",
                pending.call.id
            ));
        }
    }
    Ok(())
}

/// What the model is told for a call left unrun because the denial cap ended the run.
fn stopped_message(state: &RunState) -> String {
    format!(
        "not run: the task was stopped after {} denied calls",
        state.denials
    )
}

/// Puts the answers after the last assistant turn in the order of its calls (answers
/// given at suspension came before those given on resume). Stable; does nothing if
/// anything but tool answers follows the turn.
fn order_turn_answers(messages: &mut [Message]) {
    let Some(turn) = messages
        .iter()
        .rposition(|message| matches!(message, Message::Assistant { .. }))
    else {
        return;
    };
    let (head, answers) = messages.split_at_mut(turn + 1);
    let Some(Message::Assistant { tool_calls, .. }) = head.last() else {
        return;
    };
    if !answers
        .iter()
        .all(|message| matches!(message, Message::Tool { .. }))
    {
        return;
    }
    answers.sort_by_key(|message| match message {
        Message::Tool { tool_call_id, .. } => tool_calls
            .iter()
            .position(|call| &call.id == tool_call_id)
            .unwrap_or(usize::MAX),
        _ => usize::MAX,
    });
}

/// Gives every call an id no earlier call in the conversation (or in this turn) has:
/// the model chooses ids, and an empty or repeated one would let a later call's answer or
/// event be mistaken for an earlier one's (an approved call's audit row, say).
fn unique_call_ids(calls: &mut [ToolCall], messages: &[Message], step: u32) {
    let mut seen: std::collections::HashSet<String> = messages
        .iter()
        .filter_map(|message| match message {
            Message::Assistant { tool_calls, .. } => Some(tool_calls.iter().map(|c| c.id.clone())),
            _ => None,
        })
        .flatten()
        .collect();
    for (index, call) in calls.iter_mut().enumerate() {
        if call.id.trim().is_empty() || seen.contains(&call.id) {
            let mut candidate = format!("call_{step}_{index}");
            let mut suffix = 1;
            while seen.contains(&candidate) {
                candidate = format!("call_{step}_{index}_{suffix}");
                suffix += 1;
            }
            call.id = candidate;
        }
        seen.insert(call.id.clone());
    }
}

/// Parses the model's raw argument text; empty text means no arguments.
fn parse_arguments(raw: &str) -> Result<Value, String> {
    if raw.trim().is_empty() {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    serde_json::from_str(raw).map_err(|error| format!("arguments are not valid JSON: {error}"))
}

/// What the model is told when a person edited its call before approving it: which
/// arguments changed (short text values quoted, old → new; longer ones named), and that
/// the edited call is what ran.
pub(crate) fn describe_edit(original: &Value, edited: &Value) -> String {
    const SHORT: usize = 80;
    let quote = |value: Option<&Value>| match value {
        None => "(absent)".to_owned(),
        Some(Value::String(text)) => format!("{text:?}"),
        Some(other) => other.to_string(),
    };
    let short = |value: Option<&Value>| {
        value.is_none_or(|value| value.to_string().chars().count() <= SHORT)
    };
    let mut keys: Vec<&String> = original
        .as_object()
        .into_iter()
        .chain(edited.as_object())
        .flat_map(|object| object.keys())
        .collect();
    keys.sort();
    keys.dedup();
    let changes: Vec<String> = keys
        .into_iter()
        .filter_map(|key| {
            let (before, after) = (original.get(key), edited.get(key));
            if before == after {
                return None;
            }
            Some(if short(before) && short(after) {
                format!("`{key}` {} → {}", quote(before), quote(after))
            } else {
                format!("`{key}` changed")
            })
        })
        .collect();
    let what = if changes.is_empty() {
        "no argument changed".to_owned()
    } else {
        changes.join(", ")
    };
    format!(
        "[the person edited this call before approving it ({what}); what follows is the \
         result of the edited call]"
    )
}

#[cfg(test)]
mod edit_note_tests {
    use super::describe_edit;
    use serde_json::json;

    #[test]
    fn short_values_are_quoted_and_long_ones_named() {
        let long = "x".repeat(200);
        let note = describe_edit(
            &json!({"path": "a.md", "content": long, "keep": true}),
            &json!({"path": "b.md", "content": "short", "keep": true, "extra": 1}),
        );
        assert_eq!(
            note,
            "[the person edited this call before approving it (`content` changed, \
             `extra` (absent) → 1, `path` \"a.md\" → \"b.md\"); what follows is the result \
             of the edited call]"
        );
        assert!(describe_edit(&json!({"a": 1}), &json!({"a": 1})).contains("no argument changed"));
    }
}
