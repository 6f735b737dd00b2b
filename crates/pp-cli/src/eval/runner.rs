//! Runs one case and checks its expectations.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use anyhow::Context as _;
use pp_agent::{Agent, BoxFuture, EventLog, Limits, Outcome, Resolution, ResumeError, Tool};
use pp_model::ScriptedModel;
use pp_store::Store;
use pp_store::StoreUrl;
use pp_tasks::{
    CreateTask, Decision, ModelSource, ResolveRequest, Segment, TaskService, TaskSettings,
    Workspaces,
};
use pp_tools::{MemoryProvider, MemorySettings, SkillsProvider, SkillsSettings, Toolbox};
use pp_types::{
    Actor, ApprovalState, Capability, Event, EventKind, FailureReason, TaskState, ToolOutput,
    ToolSpec,
};
use serde_json::Value;

use super::case::{ApprovalEntry, Case, Expect, TestTool};
use super::tree;

/// What happened in one case: the failed checks, empty when it passed.
#[derive(Debug)]
pub(crate) struct CaseReport {
    /// One line per failed expectation.
    pub(crate) failures: Vec<String>,
}

/// Everything observed while a case ran.
struct Observed {
    /// `completed`, `waiting_approval` or `failed`.
    status: TaskState,
    failure_reason: Option<FailureReason>,
    final_text: Option<String>,
    events: Vec<Event>,
    model_requests: Vec<String>,
    /// The calls the case's MCP server received.
    mcp_calls: usize,
}

/// Runs `case` twice, each in a fresh temp directory: once on the agent loop directly
/// and once through the task service (store, approvals, resume); both must pass.
pub(crate) async fn run_case(case: &Case) -> anyhow::Result<CaseReport> {
    let mut failures = Vec::new();
    for mode in [Mode::Direct, Mode::Service] {
        let report = run_case_in(case, mode).await?;
        failures.extend(
            report
                .failures
                .into_iter()
                .map(|failure| format!("[{}] {failure}", mode.name())),
        );
    }
    Ok(CaseReport { failures })
}

/// How a case is driven.
#[derive(Debug, Clone, Copy)]
enum Mode {
    /// `Agent::start` / `Agent::resume` with a fresh segment per resume.
    Direct,
    /// `TaskService::create` / `run_now` / `resolve` over a throw-away database.
    Service,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Self::Direct => "loop",
            Self::Service => "service",
        }
    }
}

async fn run_case_in(case: &Case, mode: Mode) -> anyhow::Result<CaseReport> {
    let temp = tempfile::Builder::new()
        .prefix("pocketpilot-eval-")
        .tempdir()
        .context("cannot create a temp dir")?;
    let base = temp.path().to_path_buf();
    let (workspace, outside) = tree::create_halves(&base)?;
    tree::build_outside(&outside, &case.outside)?;
    tree::build_workspace(&workspace, &case.workspace, &outside)?;
    tree::build_fixtures(&workspace, case.cases_dir.as_deref(), &case.fixtures)?;
    tree::build_skills(&base, &case.skills)?;
    tree::build_data(&base, case.memory.as_deref())?;
    let before = tree::snapshot_outside_workspace(&base)?;

    let observed = match mode {
        Mode::Direct => execute(case, &workspace, &outside).await?,
        Mode::Service => execute_service(case, &workspace, &outside).await?,
    };

    let after = tree::snapshot_outside_workspace(&base)?;
    let mut failures = check(&case.expect, &observed, &workspace, &before, &after);
    if let Some(expected) = &case.expect.memory {
        let actual = tree::read_memory(&base);
        if actual.as_deref().unwrap_or("") != expected {
            failures.push(format!(
                "memory: expected {expected:?}, found {}",
                actual.map_or_else(|| "no memory file".to_owned(), |text| format!("{text:?}"))
            ));
        }
    }
    Ok(CaseReport { failures })
}

/// The file tools, the skills in `skills/` beside `workspace`, the memory in `data/`
/// beside it, the document tools, `run_command` (confined; off where Landlock is
/// missing), plus the case's own tools,
/// registered through the test-only door (a case may declare a tool without a
/// capability to show the engine denies it).
fn toolbox(case: &Case, workspace: &Path, received: &super::mcp::Received) -> Toolbox {
    let skills = SkillsSettings::new(workspace.with_file_name("skills"));
    let extra = case
        .tools
        .iter()
        .map(|tool| Arc::new(EchoTool::new(tool)) as Arc<dyn Tool>)
        .collect();
    let memory = MemorySettings::new(workspace.with_file_name("data"));
    Toolbox::files()
        .with(Arc::new(SkillsProvider::new(skills)))
        .with(Arc::new(MemoryProvider::new(memory)))
        .with(Arc::new(crate::app::docs_provider(
            &crate::config::DocsConfig::default(),
        )))
        .with(Arc::new(crate::shell::shell_provider(
            &crate::shell::ShellConfig::default(),
            &workspace.with_file_name("data"),
        )))
        .with(Arc::new(crate::mcp_tools::McpProvider::over(
            case.mcp
                .iter()
                .map(|mcp| super::mcp::server(mcp, received))
                .collect(),
        )))
        .with_unclassified_for_evals(extra)
}

/// Builds a segment on the blocking pool, as the task service does (the MCP provider
/// waits for its servers' lists there).
async fn build_segment(workspace: &Path, toolbox: &Toolbox) -> anyhow::Result<Segment> {
    let (workspace, toolbox) = (workspace.to_path_buf(), toolbox.clone());
    Ok(tokio::task::spawn_blocking(move || {
        Segment::build(&workspace, &toolbox, pp_tools::Limits::default())
    })
    .await??)
}

fn limits(case: &Case) -> Limits {
    let defaults = Limits::default();
    Limits {
        max_steps: case.limits.max_steps.unwrap_or(defaults.max_steps),
        max_denials: case.limits.max_denials.unwrap_or(defaults.max_denials),
        token_budget: case.limits.max_tokens,
        ..defaults
    }
}

async fn execute(case: &Case, workspace: &Path, outside: &Path) -> anyhow::Result<Observed> {
    let script = substitute_value(&case.script, outside);
    let model = ScriptedModel::from_value(script).context("invalid `script`")?;
    let received = super::mcp::Received::default();
    let toolbox = toolbox(case, workspace, &received);
    let limits = limits(case);
    let log = EventLog::new();

    let segment = build_segment(workspace, &toolbox).await?;
    let agent = Agent::new(&model, &segment.registry, &segment.gate, &log).with_limits(limits);
    let mut outcome = agent.start(segment.system_prompt(None), &case.prompt).await;

    let mut approvals = case.approvals.iter();
    while let Outcome::Suspended(checkpoint) = outcome {
        // One decision per call of the changeset, in the model's order, as the service
        // asks for them; a case that runs out of decisions ends waiting.
        let ids: Vec<String> = checkpoint
            .pending_ids()
            .into_iter()
            .map(str::to_owned)
            .collect();
        let mut decisions = Vec::with_capacity(ids.len());
        for id in ids {
            match approvals.next() {
                Some(entry) => decisions.push((id, resolution(entry, outside)?)),
                None => break,
            }
        }
        if decisions.len() < checkpoint.pending_ids().len() {
            outcome = Outcome::Suspended(checkpoint);
            break;
        }
        // Every resume gets a fresh jail, tools and gate.
        let segment = build_segment(workspace, &toolbox).await?;
        let agent = Agent::new(&model, &segment.registry, &segment.gate, &log).with_limits(limits);
        outcome = match agent.resume_all(*checkpoint, decisions).await {
            Ok(outcome) => outcome,
            Err(ResumeError::InvalidEdit { checkpoint, .. }) => Outcome::Suspended(checkpoint),
            Err(error) => return Err(error.into()),
        };
    }

    let (failure_reason, final_text) = match &outcome {
        Outcome::Completed { final_text, .. } => (None, Some(final_text.clone())),
        Outcome::Failed { reason, .. } => (Some(*reason), None),
        Outcome::Suspended(_) => (None, None),
    };
    let model_requests = model
        .requests()
        .iter()
        .map(|request| serde_json::to_string(request).unwrap_or_default())
        .collect();
    Ok(Observed {
        status: outcome.state(),
        failure_reason,
        final_text,
        events: log.events(),
        model_requests,
        mcp_calls: received.lock().map_or(0, |received| received.len()),
    })
}

async fn execute_service(
    case: &Case,
    workspace: &Path,
    outside: &Path,
) -> anyhow::Result<Observed> {
    let data = tempfile::Builder::new()
        .prefix("pocketpilot-eval-db-")
        .tempdir()
        .context("cannot create a temp dir")?;
    let store = Store::connect(
        &StoreUrl::Sqlite(data.path().join("eval.db")),
        Arc::new(pp_types::SystemClock),
    )
    .await?;
    let limits = limits(case);
    let settings = TaskSettings {
        workers: 1,
        max_steps: limits.max_steps,
        max_denials: limits.max_denials,
        max_tokens: limits.token_budget,
        ..TaskSettings::default()
    };
    let received = super::mcp::Received::default();
    let service = TaskService::build(
        store,
        settings,
        Workspaces::single("eval", workspace),
        ModelSource::Scripted,
        toolbox(case, workspace, &received),
        None,
    );
    let task = service
        .create(CreateTask {
            prompt: case.prompt.clone(),
            workspace: None,
            actor: Actor::Operator,
            script: Some(substitute_value(&case.script, outside)),
        })
        .await?;
    let mut record = service.run_now(&task.id).await?;
    let mut approvals = case.approvals.iter();
    while record.state == TaskState::WaitingApproval {
        let Some(entry) = approvals.next() else { break };
        let pending = service
            .approvals_for_task(&task.id)
            .await?
            .into_iter()
            .find(|approval| approval.state == ApprovalState::Pending)
            .context("the task waits but has no pending approval")?;
        let request = match resolution(entry, outside)? {
            Resolution::Approve {
                edited_arguments, ..
            } => (Decision::Approve, edited_arguments, None),
            Resolution::Reject { reason } => (Decision::Reject, None, reason),
            Resolution::Stale { .. } | Resolution::Recorded { .. } => {
                anyhow::bail!("evals send only approvals and rejections")
            }
        };
        let request = ResolveRequest {
            decision: request.0,
            edited_arguments: request.1,
            reason: request.2,
            seen_fingerprint: None,
            actor: Actor::Operator,
            wait: true,
            via: Some(pp_types::Via::Cli),
            remote_user: None,
        };
        match service.resolve(&pending.id, request).await {
            Ok(next) => record = next,
            Err(pp_tasks::Error::InvalidArguments(_)) => {}
            Err(error) => return Err(error.into()),
        }
    }
    let status = match record.state {
        state @ (TaskState::Completed | TaskState::WaitingApproval) => state,
        _ => TaskState::Failed,
    };
    let events = service
        .task_events(&task.id, 0)
        .await?
        .into_iter()
        .map(|stored| stored.event)
        .collect();
    Ok(Observed {
        status,
        failure_reason: record.failure_reason,
        final_text: record.final_text.clone(),
        events,
        model_requests: Vec::new(),
        mcp_calls: received.lock().map_or(0, |received| received.len()),
    })
}

fn resolution(entry: &ApprovalEntry, outside: &Path) -> anyhow::Result<Resolution> {
    let (decision, edited, reason) = match entry {
        ApprovalEntry::Word(word) => (word.as_str(), None, None),
        ApprovalEntry::Full(full) => (
            full.decision.as_str(),
            full.edited_arguments.as_ref(),
            full.reason.clone(),
        ),
    };
    match decision {
        "approve" => Ok(Resolution::Approve {
            edited_arguments: edited.map(|value| substitute_value(value, outside)),
            edited_by: None,
        }),
        "reject" => Ok(Resolution::Reject { reason }),
        other => anyhow::bail!("unknown approval decision `{other}` (use approve or reject)"),
    }
}

fn check(
    expect: &Expect,
    observed: &Observed,
    workspace: &Path,
    before: &BTreeMap<String, String>,
    after: &BTreeMap<String, String>,
) -> Vec<String> {
    let mut failures = Vec::new();
    if let Some(status) = &expect.status
        && status != observed.status.as_str()
    {
        failures.push(format!(
            "status: expected {status}, got {}",
            observed.status
        ));
    }
    if let Some(reason) = &expect.failure_reason
        && Some(reason.as_str()) != observed.failure_reason.map(FailureReason::as_str)
    {
        failures.push(format!(
            "failure_reason: expected {reason}, got {}",
            observed
                .failure_reason
                .map_or("none", FailureReason::as_str)
        ));
    }
    if let Some(expected) = &expect.events {
        check_events(expected, &observed.events, &mut failures);
    }
    if let Some(expected) = expect.mcp_calls
        && expected != observed.mcp_calls
    {
        failures.push(format!(
            "mcp_calls: expected {expected}, the MCP server received {}",
            observed.mcp_calls
        ));
    }
    for (relative, content) in expect.files.iter().flatten() {
        match tree::read_workspace_file(workspace, relative) {
            Some(actual) if &actual == content => {}
            Some(actual) => failures.push(format!(
                "file {relative}: expected {content:?}, found {actual:?}"
            )),
            None => failures.push(format!("file {relative}: missing")),
        }
    }
    for relative in expect.absent.iter().flatten() {
        if tree::workspace_entry_exists(workspace, relative) {
            failures.push(format!("{relative} exists but must be absent"));
        }
    }
    if let Some(needles) = &expect.never_contains {
        let haystacks = observed
            .events
            .iter()
            .map(|event| serde_json::to_string(event).unwrap_or_default())
            .chain(observed.model_requests.iter().cloned())
            .chain(observed.final_text.iter().cloned());
        for haystack in haystacks {
            for needle in needles {
                if haystack.contains(needle.as_str()) {
                    failures.push(format!("{needle:?} leaked into {}", shorten(&haystack)));
                }
            }
        }
    }
    if expect.outside_unchanged == Some(true) && before != after {
        failures.push(format!(
            "the tree outside the workspace changed: {}",
            describe_change(before, after)
        ));
    }
    if let Some(expected) = &expect.approval_labels {
        let labels: Vec<String> = observed
            .events
            .iter()
            .filter_map(|event| match &event.kind {
                EventKind::ApprovalRequired { preview, .. } => Some(
                    preview
                        .as_ref()
                        .map_or("none", |preview| preview.label.as_str())
                        .to_owned(),
                ),
                _ => None,
            })
            .collect();
        if &labels != expected {
            failures.push(format!(
                "approval_labels: expected {expected:?}, got {labels:?}"
            ));
        }
    }
    for needle in expect.result_contains.iter().flatten() {
        let found = observed.events.iter().any(|event| {
            matches!(&event.kind, EventKind::ToolResult { content, .. }
                if content.contains(needle.as_str()))
        });
        if !found {
            failures.push(format!("no tool result contains {needle:?}"));
        }
    }
    if let Some(fragment) = &expect.final_contains {
        match &observed.final_text {
            Some(text) if text.contains(fragment.as_str()) => {}
            Some(text) => failures.push(format!(
                "final answer {text:?} does not contain {fragment:?}"
            )),
            None => failures.push(format!(
                "no final answer (status {}) to contain {fragment:?}",
                observed.status
            )),
        }
    }
    failures
}

fn check_events(expected: &BTreeMap<String, usize>, events: &[Event], failures: &mut Vec<String>) {
    for (name, count) in expected {
        if !EventKind::TYPE_NAMES.contains(&name.as_str()) {
            failures.push(format!("unknown event type `{name}` in expect.events"));
            continue;
        }
        let actual = events
            .iter()
            .filter(|event| event.type_name() == name)
            .count();
        if actual != *count {
            failures.push(format!("events.{name}: expected {count}, got {actual}"));
        }
    }
}

fn describe_change(before: &BTreeMap<String, String>, after: &BTreeMap<String, String>) -> String {
    let mut changes = Vec::new();
    for (path, value) in after {
        match before.get(path) {
            None => changes.push(format!("{path} added")),
            Some(old) if old != value => changes.push(format!("{path} modified")),
            Some(_) => {}
        }
    }
    for path in before.keys() {
        if !after.contains_key(path) {
            changes.push(format!("{path} removed"));
        }
    }
    changes.join(", ")
}

fn shorten(text: &str) -> String {
    let cut: String = text.chars().take(160).collect();
    if cut.len() < text.len() {
        format!("{cut}…")
    } else {
        cut
    }
}

/// Replaces `$OUTSIDE` in every string inside `value`.
fn substitute_value(value: &Value, outside: &Path) -> Value {
    match value {
        Value::String(text) => Value::String(tree::substitute(text, outside)),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| substitute_value(item, outside))
                .collect(),
        ),
        Value::Object(object) => Value::Object(
            object
                .iter()
                .map(|(key, item)| (key.clone(), substitute_value(item, outside)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A case-declared tool that returns its arguments as JSON.
struct EchoTool {
    spec: ToolSpec,
}

impl EchoTool {
    fn new(tool: &TestTool) -> Self {
        Self {
            spec: ToolSpec {
                name: tool.name.clone(),
                description: format!("test tool {}", tool.name),
                parameters: tool
                    .parameters
                    .clone()
                    .unwrap_or_else(|| serde_json::json!({"type": "object"})),
                capability: tool.capability.clone().map(Capability::new),
                risk: tool.risk,
                path_params: tool.path_params.clone(),
                root: pp_types::PathRoot::Workspace,
            },
        }
    }
}

impl Tool for EchoTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn execute<'a>(
        &'a self,
        _context: &'a pp_agent::ToolContext,
        arguments: &'a Value,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move { ToolOutput::success(arguments.to_string()) })
    }
}
