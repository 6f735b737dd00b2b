//! OpenAI-compatible chat-completion replies for the [`crate::mock`] server, with the
//! `usage` fields real servers send: `prompt_tokens`, `completion_tokens`,
//! `total_tokens`, `prompt_tokens_details.cached_tokens` and
//! `completion_tokens_details.reasoning_tokens`.
//!
//! [`answer`] behaves like the OpenAI API: a streamed request gets its usage in a last
//! chunk with empty `choices` only when it asked for it (`stream_options.include_usage`),
//! so a client that forgets to ask records nothing.

use serde_json::{Value, json};

use crate::mock::{Recorded, Reply};

/// The usage one reply reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MockUsage {
    /// `prompt_tokens` (cached ones included).
    pub prompt: u64,
    /// `completion_tokens` (reasoning included).
    pub completion: u64,
    /// `prompt_tokens_details.cached_tokens`.
    pub cached: u64,
    /// `completion_tokens_details.reasoning_tokens`.
    pub reasoning: u64,
}

impl MockUsage {
    /// The `usage` object.
    pub fn json(&self) -> Value {
        json!({
            "prompt_tokens": self.prompt,
            "completion_tokens": self.completion,
            "total_tokens": self.prompt + self.completion,
            "prompt_tokens_details": {"cached_tokens": self.cached, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": self.reasoning, "audio_tokens": 0}
        })
    }
}

/// What the assistant says in one reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MockTurn {
    /// A final text answer.
    Text(String),
    /// One tool call: id, tool name, arguments as JSON text.
    Call {
        /// The call id.
        id: String,
        /// The tool's name.
        name: String,
        /// The arguments, as the JSON text the model writes.
        arguments: String,
    },
}

impl MockTurn {
    /// A text answer.
    pub fn text(text: &str) -> Self {
        Self::Text(text.to_owned())
    }

    /// A tool call.
    pub fn call(id: &str, name: &str, arguments: &Value) -> Self {
        Self::Call {
            id: id.to_owned(),
            name: name.to_owned(),
            arguments: arguments.to_string(),
        }
    }

    fn message(&self) -> Value {
        match self {
            Self::Text(text) => json!({"role": "assistant", "content": text}),
            Self::Call {
                id,
                name,
                arguments,
            } => json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}
            ]}),
        }
    }

    fn finish_reason(&self) -> &'static str {
        match self {
            Self::Text(_) => "stop",
            Self::Call { .. } => "tool_calls",
        }
    }
}

/// A whole (non-streamed) completion.
pub fn completion(turn: &MockTurn, usage: MockUsage) -> Reply {
    Reply::json(
        200,
        &json!({
            "id": "chatcmpl-mock", "object": "chat.completion", "created": 1, "model": "mock",
            "choices": [{"index": 0, "message": turn.message(),
                         "finish_reason": turn.finish_reason()}],
            "usage": usage.json()
        }),
    )
}

/// A streamed completion; the usage chunk is sent only when `include_usage`.
pub fn streamed(turn: &MockTurn, usage: MockUsage, include_usage: bool) -> Reply {
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 1,
               "model": "mock", "choices": [{"index": 0, "delta": delta,
               "finish_reason": finish}]})
        .to_string()
    };
    let mut items = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    match turn {
        MockTurn::Text(text) => {
            // Two pieces, as real servers split text.
            let middle = text.char_indices().nth(text.chars().count() / 2);
            let (head, tail) = text.split_at(middle.map_or(text.len(), |(index, _)| index));
            items.push(chunk(json!({"content": head}), Value::Null));
            items.push(chunk(json!({"content": tail}), Value::Null));
        }
        MockTurn::Call {
            id,
            name,
            arguments,
        } => {
            items.push(chunk(
                json!({"tool_calls": [{"index": 0, "id": id, "type": "function",
                       "function": {"name": name, "arguments": ""}}]}),
                Value::Null,
            ));
            items.push(chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]}),
                Value::Null,
            ));
        }
    }
    items.push(chunk(json!({}), json!(turn.finish_reason())));
    if include_usage {
        items.push(
            json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 1,
                   "model": "mock", "choices": [], "usage": usage.json()})
            .to_string(),
        );
    }
    items.push("[DONE]".to_owned());
    Reply::sse(&items)
}

/// Answers `request` as the OpenAI API would: streamed when it asked for a stream (with
/// the usage chunk only if it asked for `stream_options.include_usage`), whole otherwise.
pub fn answer(request: &Recorded, turn: &MockTurn, usage: MockUsage) -> Reply {
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    if body.get("stream").and_then(Value::as_bool) == Some(true) {
        let include_usage = body
            .pointer("/stream_options/include_usage")
            .and_then(Value::as_bool)
            == Some(true);
        streamed(turn, usage, include_usage)
    } else {
        completion(turn, usage)
    }
}
