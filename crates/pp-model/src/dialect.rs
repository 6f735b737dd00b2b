//! What a wire protocol must provide so [`crate::HttpModel`] can speak it: one small
//! [`Dialect`] trait, the [`Context`] a dialect reads while building a request and parsing
//! an answer, and the [`StreamDelta`]s it reports while a stream arrives.
//!
//! The sequence itself (post → stream or whole body → finish) is written once, in
//! `http_model.rs`; the dialects (`openai.rs`, `anthropic.rs`) only translate.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use pp_agent::{ModelError, ModelRequest, ModelResponse, ToolDefinition};
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::value::RawValue;

use crate::error::SettingsError;

/// A piece of a streamed answer, handed to the observer as it arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamDelta<'a> {
    /// Visible text.
    Text(&'a str),
    /// Reasoning text (DeepSeek `reasoning_content`, Anthropic thinking).
    Reasoning(&'a str),
    /// A tool call started; its arguments are still arriving.
    ToolCall {
        /// The call's position in the turn.
        index: usize,
        /// The tool's name.
        name: &'a str,
    },
}

/// Receives [`StreamDelta`]s while a streamed answer arrives (the CLI prints them).
/// Called on the task that awaits [`pp_agent::Model::complete`]; keep it quick.
pub type DeltaObserver = Arc<dyn Fn(StreamDelta<'_>) + Send + Sync>;

/// What a dialect may read from the model it serves, for one call.
pub(crate) struct Context<'a> {
    /// The model name sent to the server.
    pub(crate) model: &'a str,
    /// Output token cap from the settings.
    pub(crate) max_tokens: Option<u32>,
    /// Sampling temperature from the settings.
    pub(crate) temperature: Option<f32>,
    /// Whether to ask for a streamed answer.
    pub(crate) stream: bool,
    /// The base URL, for messages.
    pub(crate) base_url: &'a str,
    /// Where streamed pieces go, if anywhere.
    pub(crate) observer: Option<&'a DeltaObserver>,
    /// Numbers the ids generated for tool calls a server sent without one; shared by
    /// every call of one model so the ids stay unique across the conversation.
    pub(crate) generated_ids: &'a AtomicU64,
}

impl Context<'_> {
    /// Hands `delta` to the observer.
    pub(crate) fn observe(&self, delta: StreamDelta<'_>) {
        if let Some(observer) = self.observer {
            observer(delta);
        }
    }

    /// An id for a tool call the server sent without one.
    pub(crate) fn generate_id(&self) -> String {
        let number = self.generated_ids.fetch_add(1, Ordering::Relaxed);
        format!("call_pp_{number}")
    }
}

/// One wire protocol: how a request is written and how its answer is read.
pub(crate) trait Dialect {
    /// The endpoint under the base URL (`chat/completions`, `messages`).
    const PATH: &'static str;

    /// Whether a body without the event-stream content type that starts with `data:` is
    /// read as a stream anyway (some OpenAI-compatible servers label streams wrongly).
    const SNIFFS_UNLABELLED_STREAMS: bool;

    /// Assembles a streamed answer, one Server-Sent Event's data at a time.
    type Stream: StreamAccumulator + Default;

    /// The headers sent with every request: authentication with `key` (already trimmed,
    /// never empty) and any version header.
    fn headers(key: Option<&str>) -> Result<HeaderMap, SettingsError>;

    /// The tool definitions as this dialect sends them: the JSON array of a request's
    /// `tools`. Encoded once per set of tools ([`crate::HttpModel`] keeps it while the
    /// set lives) instead of once per call: it is most of a request's bytes.
    fn encode_tools(tools: &[ToolDefinition]) -> Result<Box<RawValue>, ModelError>;

    /// The JSON body for `request`, with `tools` (from [`Dialect::encode_tools`]; `None`:
    /// no tools) as its tool definitions.
    fn request_body(
        context: &Context<'_>,
        request: &ModelRequest,
        tools: Option<&RawValue>,
    ) -> Result<Vec<u8>, ModelError>;

    /// Parses a whole, non-streamed answer.
    fn parse_body(context: &Context<'_>, body: &[u8]) -> Result<ModelResponse, ModelError>;
}

/// The state of one streamed answer.
pub(crate) trait StreamAccumulator {
    /// Takes the data of one event. `Ok(true)` means the stream is complete and nothing
    /// after it is read.
    fn push(&mut self, context: &Context<'_>, data: &str) -> Result<bool, ModelError>;

    /// The assembled turn, or an error when the stream carried nothing.
    fn finish(self, context: &Context<'_>) -> Result<ModelResponse, ModelError>;
}

/// `value` as JSON, or the error a request that cannot be encoded gets.
pub(crate) fn encode<T: serde::Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, ModelError> {
    serde_json::to_vec(value).map_err(|error| cannot_encode(&error))
}

/// `value` as a raw JSON value (for [`Dialect::encode_tools`]).
pub(crate) fn encode_raw<T: serde::Serialize + ?Sized>(
    value: &T,
) -> Result<Box<RawValue>, ModelError> {
    serde_json::to_string(value)
        .and_then(RawValue::from_string)
        .map_err(|error| cannot_encode(&error))
}

/// The error of a request that could not be encoded.
fn cannot_encode(error: &serde_json::Error) -> ModelError {
    ModelError::new(
        pp_agent::ModelErrorKind::InvalidResponse,
        format!("cannot encode the request: {error}"),
    )
}

/// A header value that is never printed (it carries a secret).
pub(crate) fn secret_header(text: &str) -> Result<HeaderValue, SettingsError> {
    let mut value = HeaderValue::from_str(text).map_err(|_| SettingsError::ApiKeyNotAHeader)?;
    value.set_sensitive(true);
    Ok(value)
}

#[cfg(test)]
#[path = "dialect_tests.rs"]
mod tests;
