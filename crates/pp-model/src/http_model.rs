//! [`HttpModel`]: one provider behind [`pp_agent::Model`], speaking either dialect.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use pp_agent::{BoxFuture, Model, ModelError, ModelRequest, ModelResponse};
use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use crate::error::SettingsError;
use crate::settings::{ProviderKind, ProviderSettings};
use crate::transport::{Transport, quote};
use crate::{Result, anthropic, openai};

/// The `anthropic-version` header value sent with every Anthropic request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Anthropic's required `max_tokens` when the settings leave it open.
pub const ANTHROPIC_DEFAULT_MAX_TOKENS: u32 = 4096;

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
/// Called on the task that awaits [`Model::complete`]; keep it quick.
pub type DeltaObserver = Arc<dyn Fn(StreamDelta<'_>) + Send + Sync>;

/// A model reached over HTTP: OpenAI-compatible chat completions or Anthropic Messages.
pub struct HttpModel {
    pub(crate) kind: ProviderKind,
    pub(crate) model: String,
    pub(crate) max_tokens: Option<u32>,
    pub(crate) temperature: Option<f32>,
    pub(crate) stream: bool,
    pub(crate) has_key: bool,
    pub(crate) transport: Transport,
    observer: Option<DeltaObserver>,
    /// Numbers the ids generated for tool calls a server sent without one, so they stay
    /// unique across the conversation.
    generated_ids: AtomicU64,
}

impl HttpModel {
    /// Validates `settings` and builds the client.
    pub fn new(settings: &ProviderSettings) -> Result<Self> {
        settings.validate()?;
        let key = settings
            .api_key
            .as_deref()
            .map(str::trim)
            .filter(|key| !key.is_empty());
        let mut headers = HeaderMap::new();
        match settings.kind {
            ProviderKind::OpenAi => {
                if let Some(key) = key {
                    headers.insert(
                        reqwest::header::AUTHORIZATION,
                        header_value(&format!("Bearer {key}"))?,
                    );
                }
            }
            ProviderKind::Anthropic => {
                if let Some(key) = key {
                    headers.insert(HeaderName::from_static("x-api-key"), header_value(key)?);
                }
                headers.insert(
                    HeaderName::from_static("anthropic-version"),
                    HeaderValue::from_static(ANTHROPIC_VERSION),
                );
            }
        }
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
        })
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

    pub(crate) fn observe(&self, delta: StreamDelta<'_>) {
        if let Some(observer) = &self.observer {
            observer(delta);
        }
    }

    /// An id for a tool call the server sent without one.
    pub(crate) fn generate_id(&self) -> String {
        let number = self.generated_ids.fetch_add(1, Ordering::Relaxed);
        format!("call_pp_{number}")
    }

    /// The operator-facing message for a 4xx the server will not change its mind about.
    pub(crate) fn refusal(&self, status: StatusCode, quoted: &str) -> String {
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

fn header_value(text: &str) -> Result<HeaderValue> {
    let mut value = HeaderValue::from_str(text).map_err(|_| SettingsError::ApiKeyNotAHeader)?;
    value.set_sensitive(true);
    Ok(value)
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
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> BoxFuture<'a, std::result::Result<ModelResponse, ModelError>> {
        match self.kind {
            ProviderKind::OpenAi => Box::pin(openai::complete(self, request)),
            ProviderKind::Anthropic => Box::pin(anthropic::complete(self, request)),
        }
    }
}
