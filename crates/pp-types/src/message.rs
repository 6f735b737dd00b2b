//! Conversation messages in the OpenAI chat shape.

use serde::{Deserialize, Serialize};

/// One message of a conversation (system / user / assistant with tool calls / tool).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// Instructions for the model: tools, skills and memory.
    System {
        /// The prompt text.
        content: String,
    },
    /// What the person asked.
    User {
        /// The prompt text.
        content: String,
    },
    /// A model turn: text, tool calls, or both.
    Assistant {
        /// Visible text, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<String>,
        /// Tool calls in the order the model asked for them.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
        /// Provider-specific reasoning text (DeepSeek's `reasoning_content`), kept so it
        /// can be sent back during tool-call loops.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reasoning_content: Option<String>,
    },
    /// The answer to one tool call.
    Tool {
        /// The id of the call this answers.
        tool_call_id: String,
        /// The tool's output or error text.
        content: String,
    },
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::System {
            content: content.into(),
        }
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::User {
            content: content.into(),
        }
    }

    /// A tool answer for the call `tool_call_id`.
    pub fn tool(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self::Tool {
            tool_call_id: tool_call_id.into(),
            content: content.into(),
        }
    }
}

/// A tool call as the model wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call id the answer must carry.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments as the raw JSON text the model produced (which may be malformed).
    pub arguments: String,
}

/// Tokens one model call used, as the provider reported them.
///
/// Normalised to the OpenAI meaning: `prompt_tokens` counts the whole request, cached
/// part included, and `completion_tokens` the whole answer, reasoning included, so
/// [`Usage::total`] is what the call cost in tokens. `cached_tokens` and
/// `reasoning_tokens` are parts of those two (0 when the provider does not report them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens in the request (cached ones included).
    pub prompt_tokens: u64,
    /// Tokens in the answer (reasoning included).
    pub completion_tokens: u64,
    /// Of `prompt_tokens`, those the provider served from its prompt cache.
    #[serde(default)]
    pub cached_tokens: u64,
    /// Of `completion_tokens`, those spent on hidden reasoning.
    #[serde(default)]
    pub reasoning_tokens: u64,
}

impl Usage {
    /// Prompt plus completion tokens.
    pub fn total(self) -> u64 {
        self.prompt_tokens.saturating_add(self.completion_tokens)
    }
}
