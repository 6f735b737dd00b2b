//! Integration tests of the HTTP providers against a local mock server.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test fixtures: a failed unwrap is a failed test"
)]

mod anthropic;
mod discovery;
mod openai;
mod resilience;
mod usage;

use std::time::Duration;

use pp_agent::{Model, ModelError, ModelRequest, ModelResponse, ToolDefinition};
use pp_model::{Backoff, HttpModel, ProviderKind, ProviderSettings, Timeouts};
use pp_types::{Message, ToolCall};
use serde_json::json;

/// Settings for a mock at `url` with tiny timeouts and backoff, so no test waits long.
pub(crate) fn settings(kind: ProviderKind, url: &str) -> ProviderSettings {
    let mut settings = ProviderSettings::new(kind, format!("{url}/v1"), "test-model")
        .with_api_key("sk-test-secret-123");
    settings.timeouts = Timeouts {
        connect: Duration::from_millis(500),
        first_byte: Duration::from_millis(1500),
        total: Duration::from_secs(5),
    };
    settings.backoff = Backoff {
        base: Duration::from_millis(1),
        max: Duration::from_millis(5),
    };
    settings.max_retries = 2;
    settings
}

/// Builds the model for `settings`.
pub(crate) fn model(settings: &ProviderSettings) -> HttpModel {
    HttpModel::new(settings).unwrap()
}

/// Runs one call.
pub(crate) async fn complete(
    model: &HttpModel,
    request: &ModelRequest,
) -> Result<ModelResponse, ModelError> {
    model.complete(request).await
}

/// A request with a system prompt, a user message and one tool.
pub(crate) fn simple_request() -> ModelRequest {
    ModelRequest {
        messages: vec![
            Message::system("you are a test"),
            Message::user("read a.txt"),
        ],
        tools: [read_file_tool()].into(),
    }
}

/// The `read_file` tool definition.
pub(crate) fn read_file_tool() -> ToolDefinition {
    ToolDefinition {
        name: "read_file".into(),
        description: "Reads a file".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }
}

/// A tool call value.
pub(crate) fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    }
}
