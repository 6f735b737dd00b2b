//! Anthropic Messages: `system` at the top level, `tool_use` / `tool_result` blocks,
//! consecutive same-role turns merged (all tool results of one assistant turn go back
//! in one user message), `max_tokens` always sent, streamed `content_block_*` events
//! assembled by block index.

use std::collections::BTreeMap;

use pp_agent::{ModelError, ModelErrorKind, ModelRequest, ModelResponse};
use pp_types::{Message, ToolCall, Usage};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::http_model::{ANTHROPIC_DEFAULT_MAX_TOKENS, HttpModel, StreamDelta};
use crate::transport::{is_event_stream, json_message, shorten};

// ---------------------------------------------------------------------------------------
// Request

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "String::is_empty")]
    system: String,
    messages: Vec<OutMessage>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<OutTool<'a>>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
}

#[derive(Serialize)]
struct OutMessage {
    role: &'static str,
    content: Vec<Value>,
}

#[derive(Serialize)]
struct OutTool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
}

/// The input object of a `tool_use` block: the arguments when they are a JSON object,
/// otherwise the raw text wrapped so the model can see what it sent.
fn tool_input(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(value @ Value::Object(_)) => value,
        Ok(Value::Null) | Err(_) if arguments.trim().is_empty() => Value::Object(Map::new()),
        _ => json!({ "_unparsed_arguments": arguments }),
    }
}

/// The JSON body of a Messages request.
pub(crate) fn request_body(
    model: &HttpModel,
    request: &ModelRequest,
) -> Result<Vec<u8>, ModelError> {
    let mut system = Vec::new();
    let mut messages: Vec<OutMessage> = Vec::new();
    for message in &request.messages {
        let (role, blocks) = match message {
            Message::System { content } => {
                system.push(content.as_str());
                continue;
            }
            Message::User { content } => ("user", vec![json!({"type": "text", "text": content})]),
            Message::Tool {
                tool_call_id,
                content,
            } => (
                "user",
                vec![
                    json!({"type": "tool_result", "tool_use_id": tool_call_id, "content": content}),
                ],
            ),
            Message::Assistant {
                content,
                tool_calls,
                reasoning_content: _,
            } => {
                let mut blocks = Vec::new();
                if let Some(text) = content.as_deref().filter(|text| !text.trim().is_empty()) {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                for call in tool_calls {
                    blocks.push(json!({
                        "type": "tool_use",
                        "id": call.id,
                        "name": call.name,
                        "input": tool_input(&call.arguments),
                    }));
                }
                ("assistant", blocks)
            }
        };
        if blocks.is_empty() {
            continue;
        }
        match messages.last_mut() {
            Some(last) if last.role == role => {
                // Tool results must come first in a user turn: a user text block that
                // follows them stays after them, which keeps that order.
                last.content.extend(blocks);
            }
            _ => messages.push(OutMessage {
                role,
                content: blocks,
            }),
        }
    }
    let body = Body {
        model: &model.model,
        max_tokens: model.max_tokens.unwrap_or(ANTHROPIC_DEFAULT_MAX_TOKENS),
        system: system.join("\n\n"),
        messages,
        tools: request
            .tools
            .iter()
            .map(|tool| OutTool {
                name: &tool.name,
                description: &tool.description,
                input_schema: &tool.parameters,
            })
            .collect(),
        stream: model.stream,
        temperature: model.temperature,
    };
    serde_json::to_vec(&body).map_err(|error| {
        ModelError::new(
            ModelErrorKind::InvalidResponse,
            format!("cannot encode the request: {error}"),
        )
    })
}

// ---------------------------------------------------------------------------------------
// Response

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WireMessage {
    content: Vec<Value>,
    usage: Option<WireUsage>,
    error: Option<Value>,
}

#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(default)]
struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
}

fn invalid(message: impl Into<String>) -> ModelError {
    ModelError::new(ModelErrorKind::InvalidResponse, message)
}

fn server_error(value: &Value) -> ModelError {
    let text = json_message(&json!({ "error": value })).unwrap_or_else(|| value.to_string());
    let kind = match value.get("type").and_then(Value::as_str) {
        Some("overloaded_error" | "api_error" | "timeout_error") => ModelErrorKind::Unreachable,
        _ => ModelErrorKind::Refused,
    };
    ModelError::new(
        kind,
        format!("the server answered with an error: {}", shorten(&text)),
    )
}

/// One content block being assembled.
#[derive(Debug, Default)]
struct Block {
    kind: String,
    text: String,
    id: Option<String>,
    name: String,
    /// `input` from `content_block_start` (used when no `input_json_delta` follows).
    input: Option<Value>,
    partial_json: String,
}

/// Collects a Messages answer, whole or streamed, into one [`ModelResponse`].
#[derive(Debug, Default)]
pub(crate) struct Assembler {
    blocks: BTreeMap<usize, Block>,
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    events: usize,
}

impl Assembler {
    fn usage(&mut self, usage: WireUsage) {
        if usage.input_tokens.is_some() {
            self.prompt_tokens = usage.input_tokens;
        }
        if usage.output_tokens.is_some() {
            self.completion_tokens = usage.output_tokens;
        }
    }

    fn start_block(&mut self, model: &HttpModel, index: usize, block: &Value) {
        let kind = block
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let text = block
            .get("text")
            .or_else(|| block.get("thinking"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let entry = Block {
            id: block.get("id").and_then(Value::as_str).map(str::to_owned),
            name: block
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            input: block.get("input").cloned(),
            kind,
            text,
            partial_json: String::new(),
        };
        if entry.kind == "tool_use" && !entry.name.is_empty() {
            let position = self
                .blocks
                .values()
                .filter(|block| block.kind == "tool_use")
                .count();
            model.observe(StreamDelta::ToolCall {
                index: position,
                name: &entry.name,
            });
        }
        self.blocks.insert(index, entry);
    }

    fn delta(&mut self, model: &HttpModel, index: usize, delta: &Value) {
        let block = self.blocks.entry(index).or_default();
        let text = |key: &str| delta.get(key).and_then(Value::as_str).unwrap_or_default();
        match delta
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
        {
            "text_delta" => {
                model.observe(StreamDelta::Text(text("text")));
                block.text.push_str(text("text"));
            }
            "thinking_delta" => {
                model.observe(StreamDelta::Reasoning(text("thinking")));
                block.text.push_str(text("thinking"));
            }
            "input_json_delta" => block.partial_json.push_str(text("partial_json")),
            _ => {}
        }
    }

    /// Takes one streamed event. Returns `Ok(true)` at `message_stop`.
    pub(crate) fn push_event(&mut self, model: &HttpModel, data: &str) -> Result<bool, ModelError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(false);
        }
        let event: Value = serde_json::from_str(data).map_err(|error| {
            invalid(format!(
                "{} streamed an event that is not json ({error}): {}",
                model.base_url(),
                shorten(data)
            ))
        })?;
        self.events += 1;
        let index = event
            .get("index")
            .and_then(Value::as_u64)
            .and_then(|index| usize::try_from(index).ok())
            .unwrap_or(0);
        let usage_of = |value: Option<&Value>| {
            value
                .and_then(|usage| serde_json::from_value::<WireUsage>(usage.clone()).ok())
                .unwrap_or_default()
        };
        match event
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
        {
            "message_start" => {
                let message = event.get("message");
                self.usage(usage_of(message.and_then(|message| message.get("usage"))));
            }
            "content_block_start" => {
                let block = event.get("content_block").cloned().unwrap_or_default();
                self.start_block(model, index, &block);
            }
            "content_block_delta" => {
                let delta = event.get("delta").cloned().unwrap_or_default();
                self.delta(model, index, &delta);
            }
            "message_delta" => self.usage(usage_of(event.get("usage"))),
            "message_stop" => return Ok(true),
            "error" => {
                return Err(server_error(event.get("error").unwrap_or(&Value::Null)));
            }
            _ => {}
        }
        Ok(false)
    }

    /// The assembled turn.
    pub(crate) fn finish(self, model: &HttpModel) -> ModelResponse {
        let mut content = String::new();
        let mut reasoning = String::new();
        let mut tool_calls = Vec::new();
        for block in self.blocks.into_values() {
            match block.kind.as_str() {
                "text" => content.push_str(&block.text),
                "thinking" => reasoning.push_str(&block.text),
                "tool_use" if !block.name.is_empty() => {
                    let arguments = if block.partial_json.is_empty() {
                        match block.input {
                            Some(Value::Null) | None => "{}".to_owned(),
                            Some(input) => input.to_string(),
                        }
                    } else {
                        block.partial_json
                    };
                    tool_calls.push(ToolCall {
                        id: block
                            .id
                            .filter(|id| !id.is_empty())
                            .unwrap_or_else(|| model.generate_id()),
                        name: block.name,
                        arguments,
                    });
                }
                _ => {}
            }
        }
        let usage =
            (self.prompt_tokens.is_some() || self.completion_tokens.is_some()).then(|| Usage {
                prompt_tokens: self.prompt_tokens.unwrap_or(0),
                completion_tokens: self.completion_tokens.unwrap_or(0),
            });
        ModelResponse {
            content: Some(content).filter(|text| !text.is_empty()),
            tool_calls,
            reasoning_content: Some(reasoning).filter(|text| !text.is_empty()),
            usage,
        }
    }
}

/// Parses a whole (non-streamed) Messages answer.
pub(crate) fn parse_message(model: &HttpModel, body: &[u8]) -> Result<ModelResponse, ModelError> {
    let message: WireMessage = serde_json::from_slice(body).map_err(|error| {
        invalid(format!(
            "{} answered something that is not a message ({error}): {}",
            model.base_url(),
            shorten(&String::from_utf8_lossy(body))
        ))
    })?;
    if let Some(error) = message.error.as_ref().filter(|error| !error.is_null()) {
        return Err(server_error(error));
    }
    let mut assembler = Assembler::default();
    if let Some(usage) = message.usage {
        assembler.usage(usage);
    }
    for (index, block) in message.content.iter().enumerate() {
        assembler.start_block(model, index, block);
    }
    Ok(assembler.finish(model))
}

/// One Messages call.
pub(crate) async fn complete(
    model: &HttpModel,
    request: &ModelRequest,
) -> Result<ModelResponse, ModelError> {
    let body = request_body(model, request)?;
    let answer = model
        .transport
        .post("messages", body, &|status, quoted| {
            model.refusal(status, quoted)
        })
        .await?;
    let is_sse = is_event_stream(&answer.response);
    if !is_sse {
        let bytes = model
            .transport
            .read_to_end(answer.response, answer.deadline)
            .await?;
        return parse_message(model, &bytes);
    }
    let mut assembler = Assembler::default();
    model
        .transport
        .read_events(answer.response, answer.deadline, |event| {
            assembler.push_event(model, &event.data)
        })
        .await?;
    if assembler.events == 0 {
        return Err(invalid(format!(
            "{} ended the stream before sending any event",
            model.base_url()
        )));
    }
    Ok(assembler.finish(model))
}
