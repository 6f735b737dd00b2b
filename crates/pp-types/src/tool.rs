//! Tool specifications, outputs and approval previews.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Capability, Denial, Risk};

/// Everything the gate and the model know about a tool.
///
/// The policy engine reads only `capability` and `path_params`; it never looks at `name`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The name the model calls the tool by.
    pub name: String,
    /// The short description the model sees.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
    /// The declared capability; a tool without one is always denied.
    pub capability: Option<Capability>,
    /// How dangerous the tool is; shown in approval cards.
    pub risk: Risk,
    /// Names of top-level arguments that are workspace paths; each is checked by the
    /// workspace jail before the capability is considered.
    pub path_params: Vec<String>,
}

/// What a tool returned to the model.
///
/// `Err` in a tool's signature would mean our infrastructure broke; everything the model
/// should see — success, an ordinary failure, a refusal by the jail — is data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ToolOutput {
    /// The tool ran; `content` is what the model reads.
    Success {
        /// Output text (size-capped by the tool, with a visible truncation marker).
        content: String,
    },
    /// An ordinary failure: missing file, bad arguments, ambiguous edit.
    Error {
        /// What went wrong, for the model.
        message: String,
    },
    /// The workspace jail refused a path while the tool ran; counts as a denial.
    Denied(Denial),
}

impl ToolOutput {
    /// A successful result.
    pub fn success(content: impl Into<String>) -> Self {
        Self::Success {
            content: content.into(),
        }
    }

    /// An ordinary failure.
    pub fn error(message: impl Into<String>) -> Self {
        Self::Error {
            message: message.into(),
        }
    }
}

/// Whether a write creates a new file or replaces an existing one.
///
/// The label is for the person approving; it is not a second policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WriteLabel {
    /// The target does not exist yet.
    Create,
    /// The target exists and will be replaced or edited.
    Overwrite,
}

impl WriteLabel {
    /// The lower-case name used on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Overwrite => "overwrite",
        }
    }
}

/// What a person sees before approving a call: the target, the label and the change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EffectPreview {
    /// The workspace path as the model wrote it.
    pub target: String,
    /// The workspace-relative path it designates after `..` and links inside the
    /// workspace are resolved; shown next to `target` so a forged-looking path cannot
    /// hide which file changes. `None` in checkpoints written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved: Option<String>,
    /// Create or overwrite, decided when the approval was requested.
    pub label: WriteLabel,
    /// A unified diff for overwrites and edits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// The new content for creates (capped for display).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Why part of the preview cannot be shown, e.g. "cannot show the current content:
    /// permission denied" for an overwrite of an unreadable file. The label still comes
    /// from whether the target exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
    /// A fingerprint of the target as shown (hash of its bytes, or `absent`), so a
    /// change between request and approval can be noticed.
    pub fingerprint: String,
}
