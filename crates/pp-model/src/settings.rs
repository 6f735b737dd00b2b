//! Provider settings: what the CLI resolves from its config and hands to
//! [`crate::provider`].
//!
//! Nothing here reads the environment or a file (STYLE C2): `api_key` is the resolved
//! secret, not the name of the variable that held it.

use std::fmt;
use std::time::Duration;

use crate::error::SettingsError;

/// Which wire protocol a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderKind {
    /// OpenAI-compatible chat completions (`POST {base_url}/chat/completions`): OpenAI,
    /// DeepSeek, Qwen/DashScope, Moonshot, OpenRouter, Ollama, vLLM, llama.cpp, LM Studio.
    OpenAi,
    /// Anthropic Messages (`POST {base_url}/messages`).
    Anthropic,
}

impl ProviderKind {
    /// The name used in config files and messages: `openai` or `anthropic`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
        }
    }

    /// Parses `openai` / `anthropic` (case-insensitive; `openai-compatible` is accepted).
    pub fn parse(name: &str) -> Option<Self> {
        match name.trim().to_ascii_lowercase().as_str() {
            "openai" | "openai-compatible" | "openai_compatible" => Some(Self::OpenAi),
            "anthropic" => Some(Self::Anthropic),
            _ => None,
        }
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

/// How long each phase of a model call may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// TCP + TLS connection setup, per attempt.
    pub connect: Duration,
    /// From sending the request to the response headers, per attempt; also the longest
    /// silence allowed between two chunks of a streamed body. Without streaming the whole
    /// answer is generated before the first byte, so keep this generous.
    pub first_byte: Duration,
    /// The whole call, retries and backoff included.
    pub total: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(10),
            first_byte: Duration::from_secs(90),
            total: Duration::from_secs(300),
        }
    }
}

/// Exponential backoff between retries: attempt `n` (0-based) waits a random duration
/// in `[d/2, d]` with `d = min(base * 2^n, max)`. A `Retry-After` header (seconds)
/// replaces `d`, still capped at `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The first delay.
    pub base: Duration,
    /// The longest single delay.
    pub max: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            base: Duration::from_millis(500),
            max: Duration::from_secs(30),
        }
    }
}

/// Everything needed to talk to one model over HTTP.
///
/// `Debug` redacts the API key.
#[derive(Clone, PartialEq)]
pub struct ProviderSettings {
    /// The wire protocol.
    pub kind: ProviderKind,
    /// Base URL up to and including the version segment, e.g. `https://api.openai.com/v1`,
    /// `http://127.0.0.1:11434/v1`, `https://api.anthropic.com/v1`. A trailing `/` is fine.
    pub base_url: String,
    /// The model name the server knows.
    pub model: String,
    /// The resolved secret (not the env var name). `None` for local servers that need
    /// none; required for Anthropic.
    pub api_key: Option<String>,
    /// Output token cap. Anthropic requires one (defaults to 4096 when `None`).
    pub max_tokens: Option<u32>,
    /// Sampling temperature; the server's default when `None`.
    pub temperature: Option<f32>,
    /// Whether to stream the answer (text deltas go to the observer, see
    /// [`HttpModel::with_observer`](crate::HttpModel::with_observer)). Turn off for servers whose streaming is broken.
    pub stream: bool,
    /// Phase timeouts.
    pub timeouts: Timeouts,
    /// Retries after the first attempt on 429, 5xx and connection errors (never on
    /// other 4xx).
    pub max_retries: u32,
    /// Delays between retries.
    pub backoff: Backoff,
}

impl ProviderSettings {
    /// Settings with default timeouts, 3 retries, default backoff and streaming on.
    pub fn new(kind: ProviderKind, base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            kind,
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            max_tokens: None,
            temperature: None,
            stream: true,
            timeouts: Timeouts::default(),
            max_retries: 3,
            backoff: Backoff::default(),
        }
    }

    /// Sets the API key.
    pub fn with_api_key(mut self, api_key: impl Into<String>) -> Self {
        self.api_key = Some(api_key.into());
        self
    }

    /// Checks the settings without building anything.
    pub fn validate(&self) -> std::result::Result<(), SettingsError> {
        let base = self.base_url.trim();
        let scheme_ok = base.starts_with("http://") || base.starts_with("https://");
        if !scheme_ok || reqwest::Url::parse(base).is_err() {
            return Err(SettingsError::BaseUrl {
                url: self.base_url.clone(),
            });
        }
        if self.model.trim().is_empty() {
            return Err(SettingsError::EmptyModel);
        }
        match self.api_key.as_deref() {
            Some(key) if key.chars().any(char::is_control) => {
                return Err(SettingsError::ApiKeyNotAHeader);
            }
            None if self.kind == ProviderKind::Anthropic => {
                return Err(SettingsError::MissingApiKey {
                    provider: self.kind.as_str(),
                });
            }
            _ => {}
        }
        Ok(())
    }
}

impl fmt::Debug for ProviderSettings {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("ProviderSettings")
            .field("kind", &self.kind)
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("max_tokens", &self.max_tokens)
            .field("temperature", &self.temperature)
            .field("stream", &self.stream)
            .field("timeouts", &self.timeouts)
            .field("max_retries", &self.max_retries)
            .field("backoff", &self.backoff)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_redacts_the_key() {
        let settings = ProviderSettings::new(ProviderKind::OpenAi, "https://x/v1", "m")
            .with_api_key("sk-very-secret");
        let shown = format!("{settings:?}");
        assert!(!shown.contains("sk-very-secret"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
    }

    #[test]
    fn validates() {
        let ok = ProviderSettings::new(ProviderKind::OpenAi, "http://127.0.0.1:1/v1", "m");
        assert_eq!(ok.validate(), Ok(()));
        let bad_url = ProviderSettings::new(ProviderKind::OpenAi, "127.0.0.1:1", "m");
        assert!(matches!(
            bad_url.validate(),
            Err(SettingsError::BaseUrl { .. })
        ));
        let no_model = ProviderSettings::new(ProviderKind::OpenAi, "http://h/v1", " ");
        assert_eq!(no_model.validate(), Err(SettingsError::EmptyModel));
        let anthropic = ProviderSettings::new(ProviderKind::Anthropic, "https://h/v1", "c");
        assert!(matches!(
            anthropic.validate(),
            Err(SettingsError::MissingApiKey { .. })
        ));
        let newline = ok.with_api_key("a\nb");
        assert_eq!(newline.validate(), Err(SettingsError::ApiKeyNotAHeader));
        assert_eq!(ProviderKind::parse("OpenAI"), Some(ProviderKind::OpenAi));
        assert_eq!(ProviderKind::parse("nope"), None);
    }
}
