//! Anthropic Messages: `system` at the top level, `tool_use` / `tool_result` blocks,
//! consecutive same-role turns merged (all tool results of one assistant turn go back
//! in one user message), `max_tokens` always sent, streamed `content_block_*` events
//! assembled by block index.

use std::collections::BTreeMap;

use pp_agent::{ModelError, ModelErrorKind, ModelRequest, ModelResponse, ToolDefinition};
use pp_types::{Message, ToolCall, Usage};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::dialect::{
    Context, Dialect, StreamAccumulator, StreamDelta, encode, encode_raw, secret_header,
};
use crate::error::SettingsError;
use crate::transport::{json_message, shorten};

/// The `anthropic-version` header value sent with every Anthropic request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Anthropic's required `max_tokens` when the settings leave it open.
pub const ANTHROPIC_DEFAULT_MAX_TOKENS: u32 = 4096;

/// The Anthropic Messages dialect.
pub(crate) struct Messages;

impl Dialect for Messages {
    const PATH: &'static str = "messages";
    const SNIFFS_UNLABELLED_STREAMS: bool = false;
    type Stream = Assembler;

    fn headers(key: Option<&str>) -> Result<HeaderMap, SettingsError> {
        let mut headers = HeaderMap::new();
        if let Some(key) = key {
            headers.insert(HeaderName::from_static("x-api-key"), secret_header(key)?);
        }
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(ANTHROPIC_VERSION),
        );
        Ok(headers)
    }

    fn encode_tools(tools: &[ToolDefinition]) -> Result<Box<RawValue>, ModelError> {
        let tools: Vec<OutTool<'_>> = tools
            .iter()
            .map(|tool| OutTool {
                name: &tool.name,
                description: &tool.description,
                input_schema: &tool.parameters,
            })
            .collect();
        encode_raw(&tools)
    }

    fn request_body(
        context: &Context<'_>,
        request: &ModelRequest,
        tools: Option<&RawValue>,
    ) -> Result<Vec<u8>, ModelError> {
        request_body(context, request, tools)
    }

    fn parse_body(context: &Context<'_>, body: &[u8]) -> Result<ModelResponse, ModelError> {
        parse_message(context, body)
    }
}

// ---------------------------------------------------------------------------------------
// Request

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "String::is_empty")]
    system: String,
    messages: Vec<OutMessage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<&'a RawValue>,
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

/// The JSON body of a Messages request, with `tools` as encoded by
/// [`Dialect::encode_tools`].
fn request_body(
    context: &Context<'_>,
    request: &ModelRequest,
    tools: Option<&RawValue>,
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
        model: context.model,
        max_tokens: context.max_tokens.unwrap_or(ANTHROPIC_DEFAULT_MAX_TOKENS),
        system: system.join("\n\n"),
        messages,
        tools,
        stream: context.stream,
        temperature: context.temperature,
    };
    encode(&body)
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

/// Anthropic's `usage`: `input_tokens` counts only the uncached part of the request;
/// `cache_read_input_tokens` (served from the cache) and `cache_creation_input_tokens`
/// (written to it) come on top. [`Usage`] counts the whole request as `prompt_tokens`
/// and the cache reads as `cached_tokens`. Thinking is part of `output_tokens` and not
/// reported apart, so `reasoning_tokens` stays 0.
#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(default)]
struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
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
    cache_read_tokens: Option<u64>,
    cache_creation_tokens: Option<u64>,
    events: usize,
}

impl Assembler {
    /// Takes the latest figure of each field (`message_start` reports the input,
    /// `message_delta` the output so far).
    fn usage(&mut self, usage: WireUsage) {
        if usage.input_tokens.is_some() {
            self.prompt_tokens = usage.input_tokens;
        }
        if usage.output_tokens.is_some() {
            self.completion_tokens = usage.output_tokens;
        }
        if usage.cache_read_input_tokens.is_some() {
            self.cache_read_tokens = usage.cache_read_input_tokens;
        }
        if usage.cache_creation_input_tokens.is_some() {
            self.cache_creation_tokens = usage.cache_creation_input_tokens;
        }
    }

    /// The call's usage, when the server reported any.
    fn total_usage(&self) -> Option<Usage> {
        if self.prompt_tokens.is_none() && self.completion_tokens.is_none() {
            return None;
        }
        let cached = self.cache_read_tokens.unwrap_or(0);
        Some(Usage {
            prompt_tokens: self
                .prompt_tokens
                .unwrap_or(0)
                .saturating_add(cached)
                .saturating_add(self.cache_creation_tokens.unwrap_or(0)),
            completion_tokens: self.completion_tokens.unwrap_or(0),
            cached_tokens: cached,
            reasoning_tokens: 0,
        })
    }

    fn start_block(&mut self, context: &Context<'_>, index: usize, block: &Value) {
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
            context.observe(StreamDelta::ToolCall {
                index: position,
                name: &entry.name,
            });
        }
        self.blocks.insert(index, entry);
    }

    fn delta(&mut self, context: &Context<'_>, index: usize, delta: &Value) {
        let block = self.blocks.entry(index).or_default();
        let text = |key: &str| delta.get(key).and_then(Value::as_str).unwrap_or_default();
        match delta
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
        {
            "text_delta" => {
                context.observe(StreamDelta::Text(text("text")));
                block.text.push_str(text("text"));
            }
            "thinking_delta" => {
                context.observe(StreamDelta::Reasoning(text("thinking")));
                block.text.push_str(text("thinking"));
            }
            "input_json_delta" => block.partial_json.push_str(text("partial_json")),
            _ => {}
        }
    }

    /// Takes one streamed event. Returns `Ok(true)` at `message_stop`.
    fn push_event(&mut self, context: &Context<'_>, data: &str) -> Result<bool, ModelError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(false);
        }
        let event: Value = serde_json::from_str(data).map_err(|error| {
            invalid(format!(
                "{} streamed an event that is not json ({error}): {}",
                context.base_url,
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
                self.start_block(context, index, &block);
            }
            "content_block_delta" => {
                let delta = event.get("delta").cloned().unwrap_or_default();
                self.delta(context, index, &delta);
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
    fn into_response(self, context: &Context<'_>) -> ModelResponse {
        let usage = self.total_usage();
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
                            .unwrap_or_else(|| context.generate_id()),
                        name: block.name,
                        arguments,
                    });
                }
                _ => {}
            }
        }
        ModelResponse {
            content: Some(content).filter(|text| !text.is_empty()),
            tool_calls,
            reasoning_content: Some(reasoning).filter(|text| !text.is_empty()),
            usage,
        }
    }
}

impl StreamAccumulator for Assembler {
    fn push(&mut self, context: &Context<'_>, data: &str) -> Result<bool, ModelError> {
        self.push_event(context, data)
    }

    fn finish(self, context: &Context<'_>) -> Result<ModelResponse, ModelError> {
        if self.events == 0 {
            return Err(invalid(format!(
                "{} ended the stream before sending any event",
                context.base_url
            )));
        }
        Ok(self.into_response(context))
    }
}

/// Parses a whole (non-streamed) Messages answer.
fn parse_message(context: &Context<'_>, body: &[u8]) -> Result<ModelResponse, ModelError> {
    let message: WireMessage = serde_json::from_slice(body).map_err(|error| {
        invalid(format!(
            "{} answered something that is not a message ({error}): {}",
            context.base_url,
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
        assembler.start_block(context, index, block);
    }
    Ok(assembler.into_response(context))
}
