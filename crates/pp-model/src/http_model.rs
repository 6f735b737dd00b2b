//! [`HttpModel`]: one provider behind [`pp_agent::Model`], speaking either dialect.
//!
//! The one sequence every call follows lives here ([`HttpModel::call`]): write the body,
//! post it, then read the answer as a stream or as a whole body and finish it. What
//! differs between the wire protocols is behind [`Dialect`]; the dialects never reach
//! back into this file.

use std::fmt;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use pp_agent::{BoxFuture, Model, ModelError, ModelRequest, ModelResponse, ToolDefinition};
use reqwest::StatusCode;
use serde_json::value::RawValue;

use crate::anthropic::Messages;
use crate::dialect::{Context, DeltaObserver, Dialect, StreamAccumulator};
use crate::error::Result;
use crate::openai::ChatCompletions;
use crate::settings::{ProviderKind, ProviderSettings};
use crate::sse::SseParser;
use crate::transport::{Transport, is_event_stream, quote};

/// A model reached over HTTP: OpenAI-compatible chat completions or Anthropic Messages.
pub struct HttpModel {
    kind: ProviderKind,
    model: String,
    max_tokens: Option<u32>,
    temperature: Option<f32>,
    stream: bool,
    has_key: bool,
    transport: Transport,
    observer: Option<DeltaObserver>,
    /// Numbers the ids generated for tool calls a server sent without one, so they stay
    /// unique across the conversation.
    generated_ids: AtomicU64,
    /// The tool definitions of the requests in flight, as the dialect encodes them:
    /// every call of a task sends the same set (one [`ModelRequest::tools`]), and its
    /// encoding was most of each request's work. Kept while the set lives (a weak
    /// reference: a set no task holds any more is dropped at the next call).
    encoded_tools: Mutex<Vec<EncodedTools>>,
}

/// One set of tool definitions and its encoding.
struct EncodedTools {
    tools: Weak<[ToolDefinition]>,
    json: Arc<RawValue>,
}

/// Most sets of tools kept encoded: more than a service runs at once (its workers and
/// chat turns); beyond it the oldest goes.
const MOST_ENCODED_TOOLS: usize = 32;

impl HttpModel {
    /// Validates `settings` and builds the client.
    pub fn new(settings: &ProviderSettings) -> Result<Self> {
        settings.validate()?;
        let key = settings
            .api_key
            .as_deref()
            .map(str::trim)
            .filter(|key| !key.is_empty());
        let headers = match settings.kind {
            ProviderKind::OpenAi => ChatCompletions::headers(key)?,
            ProviderKind::Anthropic => Messages::headers(key)?,
        };
        Ok(Self {
            kind: settings.kind,
            model: settings.model.trim().to_owned(),
            max_tokens: settings.max_tokens,
            temperature: settings.temperature,
            stream: settings.stream,
            has_key: key.is_some(),
            transport: Transport::new(settings, headers)?,
            observer: None,
            generated_ids: AtomicU64::new(0),
            encoded_tools: Mutex::new(Vec::new()),
        })
    }

    /// `tools` as dialect `D` sends them (`None` when there are none): encoded on the
    /// first call with this set, then reused.
    fn encoded_tools<D: Dialect>(
        &self,
        tools: &Arc<[ToolDefinition]>,
    ) -> std::result::Result<Option<Arc<RawValue>>, ModelError> {
        if tools.is_empty() {
            return Ok(None);
        }
        let mut kept = self
            .encoded_tools
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // A live set at the same address is this set; a dead one goes.
        kept.retain(|entry| entry.tools.strong_count() > 0);
        if let Some(entry) = kept
            .iter()
            .find(|entry| std::ptr::addr_eq(entry.tools.as_ptr(), Arc::as_ptr(tools)))
        {
            return Ok(Some(Arc::clone(&entry.json)));
        }
        let json: Arc<RawValue> = Arc::from(D::encode_tools(tools)?);
        if kept.len() >= MOST_ENCODED_TOOLS {
            kept.remove(0);
        }
        kept.push(EncodedTools {
            tools: Arc::downgrade(tools),
            json: Arc::clone(&json),
        });
        Ok(Some(json))
    }

    /// Sends streamed text and tool-call starts to `observer` as they arrive.
    pub fn with_observer(mut self, observer: DeltaObserver) -> Self {
        self.observer = Some(observer);
        self
    }

    /// The wire protocol.
    pub fn kind(&self) -> ProviderKind {
        self.kind
    }

    /// The model name sent to the server.
    pub fn model_name(&self) -> &str {
        &self.model
    }

    /// The base URL requests go to (without a trailing `/`).
    pub fn base_url(&self) -> &str {
        self.transport.base_url()
    }

    /// What a dialect reads for one call.
    fn context(&self) -> Context<'_> {
        Context {
            model: &self.model,
            max_tokens: self.max_tokens,
            temperature: self.temperature,
            stream: self.stream,
            base_url: self.transport.base_url(),
            observer: self.observer.as_ref(),
            generated_ids: &self.generated_ids,
        }
    }

    /// One call in dialect `D`: post the body, then read the answer as an event stream
    /// (or as a body that is one, when the dialect sniffs for that) or as a whole body.
    async fn call<D: Dialect>(
        &self,
        request: &ModelRequest,
    ) -> std::result::Result<ModelResponse, ModelError> {
        let context = self.context();
        let tools = self.encoded_tools::<D>(&request.tools)?;
        let body = D::request_body(&context, request, tools.as_deref())?;
        let answer = self
            .transport
            .post(D::PATH, body, &|status, quoted| {
                self.refusal(status, quoted)
            })
            .await?;
        let mut stream = D::Stream::default();
        if is_event_stream(&answer.response) {
            self.transport
                .read_events(answer.response, answer.deadline, |event| {
                    stream.push(&context, &event.data)
                })
                .await?;
            return stream.finish(&context);
        }
        let bytes = self
            .transport
            .read_to_end(answer.response, answer.deadline)
            .await?;
        // A server that streams without the right content type still starts with `data:`.
        if !(D::SNIFFS_UNLABELLED_STREAMS && bytes.trim_ascii_start().starts_with(b"data:")) {
            return D::parse_body(&context, &bytes);
        }
        let mut parser = SseParser::default();
        for event in parser.push(&bytes).into_iter().chain(parser.finish()) {
            if stream.push(&context, &event.data)? {
                break;
            }
        }
        stream.finish(&context)
    }

    /// The operator-facing message for a 4xx the server will not change its mind about.
    fn refusal(&self, status: StatusCode, quoted: &str) -> String {
        let base = self.transport.base_url();
        let code = status.as_u16();
        let detail = quote(quoted);
        let lower = quoted.to_ascii_lowercase();
        let about_model = lower.contains("model")
            && [
                "not exist",
                "not found",
                "unknown",
                "invalid",
                "no such",
                "not available",
            ]
            .iter()
            .any(|phrase| lower.contains(phrase));
        match status {
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN if self.has_key => format!(
                "{base} rejected the api key (http {code}{detail}); check the key configured for this provider"
            ),
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                format!("{base} wants an api key and none is configured (http {code}{detail})")
            }
            StatusCode::NOT_FOUND => format!(
                "model `{}` or its endpoint was not found at {base} (http 404{detail}); check `model` and `base_url`",
                self.model
            ),
            _ if about_model => format!(
                "model `{}` is unknown to {base} (http {code}{detail}); check `model`",
                self.model
            ),
            _ => format!("{base} refused the request (http {code}{detail})"),
        }
    }
}

impl fmt::Debug for HttpModel {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("HttpModel")
            .field("kind", &self.kind)
            .field("base_url", &self.transport.base_url())
            .field("model", &self.model)
            .field("stream", &self.stream)
            .field("has_key", &self.has_key)
            .finish_non_exhaustive()
    }
}

impl Model for HttpModel {
    fn name(&self) -> String {
        let provider = match self.kind {
            ProviderKind::OpenAi => "openai-compatible",
            ProviderKind::Anthropic => "anthropic",
        };
        format!("{provider}:{}", self.model)
    }

    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> BoxFuture<'a, std::result::Result<ModelResponse, ModelError>> {
        match self.kind {
            ProviderKind::OpenAi => Box::pin(self.call::<ChatCompletions>(request)),
            ProviderKind::Anthropic => Box::pin(self.call::<Messages>(request)),
        }
    }
}

/// Builds the provider `settings` describe.
///
/// ```
/// use pp_model::{ProviderKind, ProviderSettings, provider};
/// let settings = ProviderSettings::new(ProviderKind::OpenAi, "http://127.0.0.1:11434/v1", "qwen3");
/// let model = provider(&settings).unwrap();
/// # drop(model);
/// ```
pub fn provider(settings: &ProviderSettings) -> Result<Box<dyn Model>> {
    Ok(Box::new(HttpModel::new(settings)?))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn model(kind: ProviderKind) -> HttpModel {
        let settings =
            ProviderSettings::new(kind, "http://127.0.0.1:9/v1", "m").with_api_key("test-key");
        HttpModel::new(&settings).unwrap()
    }

    fn tools(names: &[&str]) -> Arc<[ToolDefinition]> {
        names
            .iter()
            .map(|name| ToolDefinition {
                name: (*name).to_owned(),
                description: format!("the {name} tool \u{2014} \"quoted\""),
                parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            })
            .collect()
    }

    fn parsed(json: &RawValue) -> Value {
        serde_json::from_str(json.get()).unwrap()
    }

    #[test]
    fn a_set_of_tools_is_encoded_once_while_it_lives_and_as_each_dialect_sends_it() {
        let openai = model(ProviderKind::OpenAi);
        let set = tools(&["read_file", "list_files"]);
        let first = openai
            .encoded_tools::<ChatCompletions>(&set)
            .unwrap()
            .unwrap();
        let again = openai
            .encoded_tools::<ChatCompletions>(&set)
            .unwrap()
            .unwrap();
        assert!(
            Arc::ptr_eq(&first, &again),
            "the second call reuses the encoding"
        );
        assert_eq!(
            parsed(&first),
            json!([
                {"type": "function", "function": {"name": "read_file",
                    "description": "the read_file tool \u{2014} \"quoted\"",
                    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}},
                {"type": "function", "function": {"name": "list_files",
                    "description": "the list_files tool \u{2014} \"quoted\"",
                    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}
            ])
        );
        // Another set (another task's) is its own entry, with its own tools.
        let other = tools(&["write_file"]);
        let encoded = openai
            .encoded_tools::<ChatCompletions>(&other)
            .unwrap()
            .unwrap();
        assert_eq!(parsed(&encoded)[0]["function"]["name"], json!("write_file"));
        assert_eq!(openai.encoded_tools.lock().unwrap().len(), 2);
        // A set no one holds any more is dropped at the next call.
        drop(set);
        openai.encoded_tools::<ChatCompletions>(&other).unwrap();
        assert_eq!(openai.encoded_tools.lock().unwrap().len(), 1);
        // No tools: no `tools` at all.
        assert!(
            openai
                .encoded_tools::<ChatCompletions>(&tools(&[]))
                .unwrap()
                .is_none()
        );

        let anthropic = model(ProviderKind::Anthropic);
        let set = tools(&["read_file"]);
        let encoded = anthropic.encoded_tools::<Messages>(&set).unwrap().unwrap();
        assert_eq!(
            parsed(&encoded),
            json!([{"name": "read_file", "description": "the read_file tool \u{2014} \"quoted\"",
                "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}])
        );
    }

    #[test]
    fn at_most_so_many_sets_are_kept() {
        let openai = model(ProviderKind::OpenAi);
        let sets: Vec<_> = (0..MOST_ENCODED_TOOLS + 5)
            .map(|index| tools(&[&format!("tool_{index}")]))
            .collect();
        for set in &sets {
            openai.encoded_tools::<ChatCompletions>(set).unwrap();
        }
        assert_eq!(
            openai.encoded_tools.lock().unwrap().len(),
            MOST_ENCODED_TOOLS
        );
        // The newest is kept, the oldest went (it is encoded again: a new entry).
        let newest = openai
            .encoded_tools::<ChatCompletions>(&sets[sets.len() - 1])
            .unwrap()
            .unwrap();
        assert_eq!(
            parsed(&newest)[0]["function"]["name"],
            json!(format!("tool_{}", sets.len() - 1))
        );
    }
}
