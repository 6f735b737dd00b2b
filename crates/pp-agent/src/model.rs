//! The model interface the loop talks to; providers live in `pp-model`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use pp_types::{Message, ToolCall, Usage};
use serde::{Deserialize, Serialize};

/// A boxed, sendable future, so the traits here stay object-safe.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A tool as offered to the model: name, description and argument schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// The tool's name.
    pub name: String,
    /// The short description the model sees.
    pub description: String,
    /// JSON Schema of the arguments.
    pub parameters: serde_json::Value,
}

/// One request to a model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelRequest {
    /// The whole conversation so far, system prompt first.
    pub messages: Vec<Message>,
    /// The tools the model may call: the same for every call of a task, so shared
    /// rather than copied with their schemas into each request.
    #[serde(with = "shared_slice")]
    pub tools: Arc<[ToolDefinition]>,
}

/// Serde for a shared slice, as the list it holds (serde's own `Arc` support is a cargo
/// feature that would change every dependent crate's build).
mod shared_slice {
    use std::sync::Arc;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(super) fn serialize<T: Serialize, S: Serializer>(
        value: &Arc<[T]>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        value.as_ref().serialize(serializer)
    }

    pub(super) fn deserialize<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Arc<[T]>, D::Error> {
        Vec::<T>::deserialize(deserializer).map(Arc::from)
    }
}

/// One model turn.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelResponse {
    /// Visible text, if any.
    pub content: Option<String>,
    /// Tool calls, in order.
    pub tool_calls: Vec<ToolCall>,
    /// Provider-specific reasoning text to send back later (DeepSeek).
    pub reasoning_content: Option<String>,
    /// Tokens used, when reported.
    pub usage: Option<Usage>,
}

/// Why a model call failed; the task fails with reason `model_error`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind}: {message}")]
pub struct ModelError {
    /// The class of failure.
    pub kind: ModelErrorKind,
    /// Detail for the operator (never contains an API key).
    pub message: String,
}

impl ModelError {
    /// Builds an error of `kind`.
    pub fn new(kind: ModelErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }
}

/// Classes of model failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ModelErrorKind {
    /// A scripted model ran out of turns.
    #[error("script exhausted")]
    ScriptExhausted,
    /// The server could not be reached or timed out.
    #[error("unreachable")]
    Unreachable,
    /// The server refused the request (bad key, unknown model, bad request).
    #[error("refused")]
    Refused,
    /// The server answered something we could not understand.
    #[error("invalid response")]
    InvalidResponse,
}

/// A language model: given the conversation and the tools, produce one turn.
pub trait Model: Send + Sync {
    /// A short name for people, `<provider>:<model>` (`openai-compatible:gpt-4o-mini`)
    /// or `scripted`; shown by front ends, so it never contains a key or a URL.
    fn name(&self) -> String {
        "unnamed".to_owned()
    }

    /// Produces the next assistant turn.
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_serialises_its_shared_tools_as_a_list_and_back() {
        let request = ModelRequest {
            messages: vec![Message::user("hi")],
            tools: [ToolDefinition {
                name: "read_file".into(),
                description: "Reads a file".into(),
                parameters: serde_json::json!({"type": "object"}),
            }]
            .into(),
        };
        let json = serde_json::to_value(&request).unwrap();
        assert_eq!(
            json["tools"],
            serde_json::json!([{"name": "read_file", "description": "Reads a file",
                                "parameters": {"type": "object"}}])
        );
        let back: ModelRequest = serde_json::from_value(json).unwrap();
        assert_eq!(back, request);
    }
}
