//! A tiny request for `doctor`: one trivial tool, latency, and whether the model called
//! it.

use std::time::{Duration, Instant};

use pp_agent::{Model, ModelError, ModelRequest, ToolDefinition};
use pp_types::{Message, Usage};
use serde_json::json;

/// The name of the one tool offered by [`ping`].
pub const PING_TOOL: &str = "ping";

/// What [`ping`] saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PingReport {
    /// Wall time of the one call, retries included.
    pub latency: Duration,
    /// Whether the model answered with a call to the `ping` tool.
    pub tool_call_worked: bool,
    /// Whether that call's arguments were a JSON object.
    pub arguments_valid: bool,
    /// The model's text, if it wrote some instead of (or besides) calling the tool.
    pub text: Option<String>,
    /// Tokens used, when reported.
    pub usage: Option<Usage>,
}

/// The request [`ping`] sends.
pub fn ping_request() -> ModelRequest {
    ModelRequest {
        messages: vec![
            Message::system(
                "You are a connectivity check. Call the `ping` tool exactly once with \
                 {\"message\": \"pong\"}. Do not write anything else.",
            ),
            Message::user("Call the ping tool now."),
        ],
        tools: vec![ToolDefinition {
            name: PING_TOOL.to_owned(),
            description: "Answers pong. Call it when asked to.".to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {"message": {"type": "string"}},
                "required": ["message"],
            }),
        }]
        .into(),
    }
}

/// Sends [`ping_request`] once and reports. `Err` means the call itself failed (the
/// error says why: key, model name, unreachable server…).
pub async fn ping(model: &dyn Model) -> Result<PingReport, ModelError> {
    let request = ping_request();
    let start = Instant::now();
    let response = model.complete(&request).await?;
    let latency = start.elapsed();
    let call = response
        .tool_calls
        .iter()
        .find(|call| call.name == PING_TOOL);
    Ok(PingReport {
        latency,
        tool_call_worked: call.is_some(),
        arguments_valid: call.is_some_and(|call| {
            serde_json::from_str::<serde_json::Value>(&call.arguments)
                .is_ok_and(|value| value.is_object())
        }),
        text: response.content,
        usage: response.usage,
    })
}
