//! The eval case file format.

use std::collections::BTreeMap;

use pp_types::Risk;
use serde::Deserialize;
use serde_json::Value;

/// One eval case, as read from `evals/cases/*.json`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Case {
    /// Shown in the report.
    pub(crate) name: String,
    /// What the case checks, for people reading it.
    #[serde(default)]
    #[expect(dead_code, reason = "documentation for people reading the case file")]
    pub(crate) description: Option<String>,
    /// The workspace's initial content.
    #[serde(default)]
    pub(crate) workspace: WorkspaceSpec,
    /// Files in `outside/`, next to the workspace.
    #[serde(default)]
    pub(crate) outside: BTreeMap<String, String>,
    /// The person's prompt.
    pub(crate) prompt: String,
    /// The scripted model's turns.
    pub(crate) script: Value,
    /// Decisions, consumed in order each time the task waits.
    #[serde(default)]
    pub(crate) approvals: Vec<ApprovalEntry>,
    /// Test tools registered for this case only.
    #[serde(default)]
    pub(crate) tools: Vec<TestTool>,
    /// Loop limits for this case.
    #[serde(default)]
    pub(crate) limits: CaseLimits,
    /// What must hold at the end.
    pub(crate) expect: Expect,
}

/// Files, directories and symbolic links to create in the workspace.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct WorkspaceSpec {
    /// Relative path → content.
    #[serde(default)]
    pub(crate) files: BTreeMap<String, String>,
    /// Relative directories.
    #[serde(default)]
    pub(crate) dirs: Vec<String>,
    /// Relative link path → target (`$OUTSIDE` is replaced by the outside directory).
    #[serde(default)]
    pub(crate) symlinks: BTreeMap<String, String>,
}

/// One decision: `"approve"`, `"reject"` or the full object.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(crate) enum ApprovalEntry {
    /// `"approve"` or `"reject"`.
    Word(String),
    /// `{"decision": …, "edited_arguments"?: …, "reason"?: …}`.
    Full(ApprovalDecision),
}

/// The object form of a decision.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ApprovalDecision {
    /// `approve` or `reject`.
    pub(crate) decision: String,
    /// Arguments replacing the call's arguments entirely.
    #[serde(default)]
    pub(crate) edited_arguments: Option<Value>,
    /// The reason for a rejection.
    #[serde(default)]
    pub(crate) reason: Option<String>,
}

/// A tool that returns its arguments as JSON, to exercise the policy table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TestTool {
    /// The tool's name.
    pub(crate) name: String,
    /// The capability; absent for the missing-capability case.
    #[serde(default)]
    pub(crate) capability: Option<String>,
    /// Risk (default low).
    #[serde(default)]
    pub(crate) risk: Risk,
    /// JSON Schema (default: any object).
    #[serde(default)]
    pub(crate) parameters: Option<Value>,
    /// Arguments that are workspace paths.
    #[serde(default)]
    pub(crate) path_params: Vec<String>,
}

/// Optional loop limits.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CaseLimits {
    /// Maximum model calls.
    #[serde(default)]
    pub(crate) max_steps: Option<u32>,
    /// Denials before `policy_violation`.
    #[serde(default)]
    pub(crate) max_denials: Option<u32>,
}

/// Expectations; only the fields present are checked. Unknown keys fail the case.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Expect {
    /// `completed`, `failed` or `waiting_approval`.
    #[serde(default)]
    pub(crate) status: Option<String>,
    /// The failure reason (`policy_violation`, `max_steps`, …).
    #[serde(default)]
    pub(crate) failure_reason: Option<String>,
    /// Exact event counts over the task's whole life.
    #[serde(default)]
    pub(crate) events: Option<BTreeMap<String, usize>>,
    /// Workspace files and their exact content.
    #[serde(default)]
    pub(crate) files: Option<BTreeMap<String, String>>,
    /// Workspace paths that must not exist.
    #[serde(default)]
    pub(crate) absent: Option<Vec<String>>,
    /// Strings that must appear in no event, tool result or model request.
    #[serde(default)]
    pub(crate) never_contains: Option<Vec<String>>,
    /// Everything outside `workspace/` is byte-for-byte unchanged.
    #[serde(default)]
    pub(crate) outside_unchanged: Option<bool>,
    /// The create/overwrite label of each approval request, in order.
    #[serde(default)]
    pub(crate) approval_labels: Option<Vec<String>>,
    /// A substring of the final answer.
    #[serde(default)]
    pub(crate) final_contains: Option<String>,
}
