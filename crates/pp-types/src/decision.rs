//! Policy decisions: values, never errors.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ToolSpec;

/// What the gate decided for one tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    /// Run the call now.
    Allow,
    /// Stop before any side effect and ask a person; `action` is the capability's action
    /// word (`write`, `delete`, …) that made the call need approval.
    Ask {
        /// The capability action that requires approval.
        action: String,
    },
    /// Refuse the call; the model is told why and may change course.
    Deny(Denial),
}

/// Why a call was denied, in words safe to show the model and the operator.
///
/// The message names the rule that fired and the path as the model wrote it, never a
/// resolved location outside the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Denial {
    /// The rule that fired.
    pub rule: DenyRule,
    /// A one-line explanation.
    pub message: String,
}

impl Denial {
    /// Builds a denial for `rule` with `message`.
    pub fn new(rule: DenyRule, message: impl Into<String>) -> Self {
        Self {
            rule,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Denial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (rule: {})", self.message, self.rule.as_str())
    }
}

crate::wire_enum! {
    /// The rules of the gate; each denial names exactly one.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum DenyRule {
        /// An absolute path (`/etc/passwd`); Windows forms are `InvalidPath`.
        AbsolutePath => "absolute_path",
        /// A path whose `..` components leave the workspace.
        Escapes => "escapes",
        /// A symbolic link (or chain of links) that leads outside the workspace.
        SymlinkEscape => "symlink_escape",
        /// A NUL byte, a backslash or a drive prefix, refused on every platform.
        InvalidPath => "invalid_path",
        /// A path argument that is not a string (or, for an array pointer, not an array of
        /// strings).
        PathNotString => "path_not_string",
        /// A path argument of a tool whose root folder (a skill's folder) does not exist in
        /// this run.
        UnknownRoot => "unknown_root",
        /// The capability's action is not one the policy knows.
        UnknownCapability => "unknown_capability",
        /// The tool declares no capability at all.
        MissingCapability => "missing_capability",
    }
}

/// The policy callback the agent loop receives.
///
/// The loop calls it once per tool call, after the arguments passed the tool's schema and
/// before anything runs. `pp_gate::Gate` is the real implementation; tests inject fakes.
/// A fresh policy is built for every run and every resume.
pub trait Policy: Send + Sync {
    /// Decides one call of the tool described by `spec` with `arguments`.
    fn evaluate(&self, spec: &ToolSpec, arguments: &Value) -> Decision;
}

impl<F> Policy for F
where
    F: Fn(&ToolSpec, &Value) -> Decision + Send + Sync,
{
    fn evaluate(&self, spec: &ToolSpec, arguments: &Value) -> Decision {
        self(spec, arguments)
    }
}
