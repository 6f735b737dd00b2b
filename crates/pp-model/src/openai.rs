//! OpenAI-compatible chat completions: request shape, lenient response parsing, and the
//! assembly of streamed tool-call fragments.
//!
//! Leniency, from servers met in the wild: no `created`/`id`/`object` needed;
//! `finish_reason` is ignored (`eos`, `""`, `null`); `content` may be a string, `null`
//! or a list of text parts; `arguments` may be a string or an object; a tool call may
//! come without an `id` (one is generated) or, when streamed, with an `index` only;
//! the legacy `function_call` is used only when `tool_calls` is absent; a server that
//! ignores `"stream": true` and answers plain JSON is accepted. DeepSeek's
//! `reasoning_content` (also read from `reasoning`) is kept and sent back.

use pp_agent::{ModelError, ModelErrorKind, ModelRequest, ModelResponse, ToolDefinition};
use pp_types::{Message, ToolCall, Usage};
use reqwest::header::{AUTHORIZATION, HeaderMap};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::dialect::{
    Context, Dialect, StreamAccumulator, StreamDelta, encode, encode_raw, secret_header,
};
use crate::error::SettingsError;
use crate::transport::{json_message, shorten};

/// The OpenAI-compatible chat-completions dialect.
pub(crate) struct ChatCompletions;

impl Dialect for ChatCompletions {
    const PATH: &'static str = "chat/completions";
    const SNIFFS_UNLABELLED_STREAMS: bool = true;
    type Stream = StreamAssembler;

    fn headers(key: Option<&str>) -> Result<HeaderMap, SettingsError> {
        let mut headers = HeaderMap::new();
        if let Some(key) = key {
            headers.insert(AUTHORIZATION, secret_header(&format!("Bearer {key}"))?);
        }
        Ok(headers)
    }

    fn encode_tools(tools: &[ToolDefinition]) -> Result<Box<RawValue>, ModelError> {
        let tools: Vec<OutTool<'_>> = tools
            .iter()
            .map(|tool| OutTool {
                r#type: "function",
                function: OutToolFunction {
                    name: &tool.name,
                    description: &tool.description,
                    parameters: &tool.parameters,
                },
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
        parse_completion(context, body)
    }
}

// ---------------------------------------------------------------------------------------
// Request

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    messages: Vec<OutMessage<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<&'a RawValue>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
#[serde(tag = "role", rename_all = "snake_case")]
enum OutMessage<'a> {
    System {
        content: &'a str,
    },
    User {
        content: &'a str,
    },
    Assistant {
        /// Always a string: llama.cpp's Python server answers 500 to `null`.
        content: &'a str,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<OutCall<'a>>,
        /// DeepSeek requires its reasoning back during tool-call loops.
        #[serde(skip_serializing_if = "Option::is_none")]
        reasoning_content: Option<&'a str>,
    },
    Tool {
        tool_call_id: &'a str,
        content: &'a str,
    },
}

#[derive(Serialize)]
struct OutCall<'a> {
    id: &'a str,
    r#type: &'static str,
    function: OutFunction<'a>,
}

#[derive(Serialize)]
struct OutFunction<'a> {
    name: &'a str,
    arguments: &'a str,
}

#[derive(Serialize)]
struct OutTool<'a> {
    r#type: &'static str,
    function: OutToolFunction<'a>,
}

#[derive(Serialize)]
struct OutToolFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

/// The JSON body of a chat-completions request, with `tools` as encoded by
/// [`Dialect::encode_tools`].
fn request_body(
    context: &Context<'_>,
    request: &ModelRequest,
    tools: Option<&RawValue>,
) -> Result<Vec<u8>, ModelError> {
    let messages = request
        .messages
        .iter()
        .map(|message| match message {
            Message::System { content } => OutMessage::System { content },
            Message::User { content } => OutMessage::User { content },
            Message::Assistant {
                content,
                tool_calls,
                reasoning_content,
            } => OutMessage::Assistant {
                content: content.as_deref().unwrap_or(""),
                tool_calls: tool_calls
                    .iter()
                    .map(|call| OutCall {
                        id: &call.id,
                        r#type: "function",
                        function: OutFunction {
                            name: &call.name,
                            arguments: &call.arguments,
                        },
                    })
                    .collect(),
                reasoning_content: reasoning_content.as_deref(),
            },
            Message::Tool {
                tool_call_id,
                content,
            } => OutMessage::Tool {
                tool_call_id,
                content,
            },
        })
        .collect();
    let body = Body {
        model: context.model,
        messages,
        tools,
        stream: context.stream,
        stream_options: context.stream.then_some(StreamOptions {
            include_usage: true,
        }),
        max_tokens: context.max_tokens,
        temperature: context.temperature,
    };
    encode(&body)
}

// ---------------------------------------------------------------------------------------
// Response

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Completion {
    choices: Option<Vec<Choice>>,
    usage: Option<WireUsage>,
    error: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Choice {
    index: Option<Value>,
    message: Option<WireMessage>,
    delta: Option<WireMessage>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WireMessage {
    content: Option<Value>,
    reasoning_content: Option<Value>,
    reasoning: Option<Value>,
    tool_calls: Option<Vec<WireCall>>,
    function_call: Option<WireFunction>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WireCall {
    index: Option<Value>,
    id: Option<String>,
    function: Option<WireFunction>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WireFunction {
    name: Option<String>,
    arguments: Option<Value>,
}

/// `usage` of a completion or of the last streamed chunk (sent because the request asks
/// for `stream_options.include_usage`). The cached and reasoning parts come from
/// `prompt_tokens_details.cached_tokens` and `completion_tokens_details.reasoning_tokens`
/// (OpenAI, and servers that copy it); a top-level `cached_tokens`/`reasoning_tokens` is
/// read too, as some compatible servers send it there, and DeepSeek's
/// `prompt_cache_hit_tokens`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WireUsage {
    #[serde(alias = "input_tokens")]
    prompt_tokens: Option<u64>,
    #[serde(alias = "output_tokens")]
    completion_tokens: Option<u64>,
    prompt_tokens_details: Option<WireDetails>,
    completion_tokens_details: Option<WireDetails>,
    cached_tokens: Option<u64>,
    reasoning_tokens: Option<u64>,
    prompt_cache_hit_tokens: Option<u64>,
}

/// `prompt_tokens_details` / `completion_tokens_details` (each may be `null`).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WireDetails {
    cached_tokens: Option<u64>,
    reasoning_tokens: Option<u64>,
}

impl WireUsage {
    fn usage(&self) -> Option<Usage> {
        if self.prompt_tokens.is_none() && self.completion_tokens.is_none() {
            return None;
        }
        let prompt_tokens = self.prompt_tokens.unwrap_or(0);
        let completion_tokens = self.completion_tokens.unwrap_or(0);
        let cached = self
            .prompt_tokens_details
            .as_ref()
            .and_then(|details| details.cached_tokens)
            .or(self.cached_tokens)
            .or(self.prompt_cache_hit_tokens)
            .unwrap_or(0);
        let reasoning = self
            .completion_tokens_details
            .as_ref()
            .and_then(|details| details.reasoning_tokens)
            .or(self.reasoning_tokens)
            .unwrap_or(0);
        Some(Usage {
            prompt_tokens,
            completion_tokens,
            // Parts of the totals: a server reporting more than the total is clamped.
            cached_tokens: cached.min(prompt_tokens),
            reasoning_tokens: reasoning.min(completion_tokens),
        })
    }
}

/// Text from a string, a list of `{"type": "text", "text": …}` parts, or nothing.
fn text_of(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(text) => Some(text.clone()),
        Value::Array(parts) => {
            let text: String = parts
                .iter()
                .filter_map(|part| match part {
                    Value::String(text) => Some(text.as_str()),
                    other => other.get("text").and_then(Value::as_str),
                })
                .collect();
            Some(text)
        }
        _ => None,
    }
}

/// Arguments as raw text: a string verbatim, anything else serialised.
fn arguments_of(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
    }
}

fn index_of(value: Option<&Value>) -> Option<usize> {
    match value? {
        Value::Number(number) => number.as_u64().and_then(|n| usize::try_from(n).ok()),
        Value::String(text) => text.trim().parse().ok(),
        _ => None,
    }
}

fn non_empty(text: Option<String>) -> Option<String> {
    text.filter(|text| !text.is_empty())
}

fn invalid(message: impl Into<String>) -> ModelError {
    ModelError::new(ModelErrorKind::InvalidResponse, message)
}

/// An error object inside a 200 answer (some proxies do this).
fn body_error(value: &Value) -> ModelError {
    let text =
        json_message(&serde_json::json!({ "error": value })).unwrap_or_else(|| value.to_string());
    ModelError::new(
        ModelErrorKind::Refused,
        format!("the server answered with an error: {}", shorten(&text)),
    )
}

/// Parses a whole (non-streamed) chat completion.
fn parse_completion(context: &Context<'_>, body: &[u8]) -> Result<ModelResponse, ModelError> {
    let completion: Completion = serde_json::from_slice(body).map_err(|error| {
        let snippet = shorten(&String::from_utf8_lossy(body));
        invalid(format!(
            "{} answered something that is not a chat completion ({error}): {snippet}",
            context.base_url
        ))
    })?;
    if let Some(error) = completion.error.as_ref().filter(|error| !error.is_null()) {
        return Err(body_error(error));
    }
    let Some(message) = completion
        .choices
        .unwrap_or_default()
        .into_iter()
        .find_map(|choice| choice.message.or(choice.delta))
    else {
        return Err(invalid(format!(
            "{} answered a chat completion without any choice",
            context.base_url
        )));
    };
    let mut tool_calls: Vec<ToolCall> = message
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .filter_map(|call| {
            let function = call.function.unwrap_or_default();
            let name = non_empty(function.name)?;
            Some(ToolCall {
                id: non_empty(call.id).unwrap_or_else(|| context.generate_id()),
                name,
                arguments: arguments_of(function.arguments.as_ref()),
            })
        })
        .collect();
    if tool_calls.is_empty()
        && let Some(function) = message.function_call
        && let Some(name) = non_empty(function.name)
    {
        tool_calls.push(ToolCall {
            id: context.generate_id(),
            name,
            arguments: arguments_of(function.arguments.as_ref()),
        });
    }
    Ok(ModelResponse {
        content: non_empty(text_of(message.content.as_ref())),
        tool_calls,
        reasoning_content: non_empty(
            text_of(message.reasoning_content.as_ref()).or(text_of(message.reasoning.as_ref())),
        ),
        usage: completion.usage.as_ref().and_then(WireUsage::usage),
    })
}

// ---------------------------------------------------------------------------------------
// Streaming

/// One tool call being assembled from fragments.
#[derive(Debug, Default)]
struct Partial {
    index: Option<usize>,
    id: Option<String>,
    name: String,
    arguments: String,
}

/// Collects the chunks of a streamed completion into one [`ModelResponse`].
#[derive(Debug, Default)]
pub(crate) struct StreamAssembler {
    content: String,
    reasoning: String,
    calls: Vec<Partial>,
    legacy: Option<Partial>,
    usage: Option<Usage>,
    chunks: usize,
}

impl StreamAccumulator for StreamAssembler {
    /// Takes one `data:` payload. Returns `Ok(true)` at `[DONE]`.
    fn push(&mut self, context: &Context<'_>, data: &str) -> Result<bool, ModelError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(false);
        }
        if data == "[DONE]" {
            return Ok(true);
        }
        let chunk: Completion = serde_json::from_str(data).map_err(|error| {
            invalid(format!(
                "{} streamed a chunk that is not json ({error}): {}",
                context.base_url,
                shorten(data)
            ))
        })?;
        if let Some(error) = chunk.error.as_ref().filter(|error| !error.is_null()) {
            return Err(body_error(error));
        }
        self.chunks += 1;
        if let Some(usage) = chunk.usage.as_ref().and_then(WireUsage::usage) {
            self.usage = Some(usage);
        }
        for choice in chunk.choices.unwrap_or_default() {
            if index_of(choice.index.as_ref()).unwrap_or(0) != 0 {
                continue;
            }
            if let Some(delta) = choice.delta.or(choice.message) {
                self.delta(context, delta);
            }
        }
        Ok(false)
    }

    /// The assembled turn.
    fn finish(self, context: &Context<'_>) -> Result<ModelResponse, ModelError> {
        if self.chunks == 0 {
            return Err(invalid(format!(
                "{} ended the stream before sending any chunk",
                context.base_url
            )));
        }
        let mut calls: Vec<Partial> = self
            .calls
            .into_iter()
            .filter(|partial| !partial.name.is_empty())
            .collect();
        if calls.is_empty()
            && let Some(legacy) = self.legacy.filter(|legacy| !legacy.name.is_empty())
        {
            calls.push(legacy);
        }
        Ok(ModelResponse {
            content: non_empty(Some(self.content)),
            tool_calls: calls
                .into_iter()
                .map(|partial| ToolCall {
                    id: partial.id.unwrap_or_else(|| context.generate_id()),
                    name: partial.name,
                    arguments: partial.arguments,
                })
                .collect(),
            reasoning_content: non_empty(Some(self.reasoning)),
            usage: self.usage,
        })
    }
}

impl StreamAssembler {
    fn delta(&mut self, context: &Context<'_>, delta: WireMessage) {
        if let Some(text) = text_of(delta.content.as_ref()).filter(|text| !text.is_empty()) {
            context.observe(StreamDelta::Text(&text));
            self.content.push_str(&text);
        }
        let reasoning =
            text_of(delta.reasoning_content.as_ref()).or(text_of(delta.reasoning.as_ref()));
        if let Some(text) = reasoning.filter(|text| !text.is_empty()) {
            context.observe(StreamDelta::Reasoning(&text));
            self.reasoning.push_str(&text);
        }
        for call in delta.tool_calls.unwrap_or_default() {
            self.fragment(context, call);
        }
        if let Some(function) = delta.function_call {
            let legacy = self.legacy.get_or_insert_with(Partial::default);
            merge_name(&mut legacy.name, function.name);
            legacy
                .arguments
                .push_str(&arguments_of(function.arguments.as_ref()));
        }
    }

    /// Adds one tool-call fragment to the call it belongs to: the one with the same id;
    /// else the latest one with the same index (that has no other id); else — with
    /// neither id nor index — the latest call; else a new call.
    fn fragment(&mut self, context: &Context<'_>, call: WireCall) {
        let index = index_of(call.index.as_ref());
        let id = non_empty(call.id);
        let found = match &id {
            Some(id) => self
                .calls
                .iter()
                .rposition(|partial| partial.id.as_deref() == Some(id.as_str()))
                .or_else(|| {
                    self.calls.iter().rposition(|partial| {
                        index.is_some() && partial.index == index && partial.id.is_none()
                    })
                }),
            None => match index {
                Some(_) => self
                    .calls
                    .iter()
                    .rposition(|partial| partial.index == index),
                None => self.calls.len().checked_sub(1),
            },
        };
        let position = match found {
            Some(position) => position,
            None => {
                self.calls.push(Partial {
                    index,
                    ..Partial::default()
                });
                self.calls.len() - 1
            }
        };
        let Some(partial) = self.calls.get_mut(position) else {
            return;
        };
        if partial.id.is_none() {
            partial.id = id;
        }
        let function = call.function.unwrap_or_default();
        let had_name = !partial.name.is_empty();
        merge_name(&mut partial.name, function.name);
        if !had_name && !partial.name.is_empty() {
            context.observe(StreamDelta::ToolCall {
                index: position,
                name: &partial.name,
            });
        }
        partial
            .arguments
            .push_str(&arguments_of(function.arguments.as_ref()));
    }
}

/// Names normally arrive whole, once; some servers repeat them in every fragment and
/// a few split them. Repeats are ignored, pieces appended.
fn merge_name(name: &mut String, piece: Option<String>) {
    let Some(piece) = non_empty(piece) else {
        return;
    };
    if *name != piece {
        name.push_str(&piece);
    }
}
