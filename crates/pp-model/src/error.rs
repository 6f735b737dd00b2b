//! Errors of this crate.
//!
//! These are construction errors: a script that does not parse, settings that cannot
//! become a provider. Failures of a model *call* are [`pp_agent::ModelError`] values
//! (kind + operator-facing message), because that is what the loop understands.

/// Why a model could not be built.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The script is not a JSON list of turns.
    #[error("invalid script: {0}")]
    InvalidScript(#[source] serde_json::Error),
    /// A turn has neither content nor tool calls.
    #[error("invalid script: turn {turn} has neither `content` nor `tool_calls`")]
    EmptyTurn {
        /// The 0-based turn index.
        turn: usize,
    },
    /// The provider settings cannot be used.
    #[error("invalid provider settings: {0}")]
    Settings(#[from] SettingsError),
    /// The HTTP client could not be built (TLS setup).
    #[error("cannot build the http client")]
    HttpClient(#[source] Box<reqwest::Error>),
    /// The TLS settings could not be built.
    #[error("cannot set up tls for the http client")]
    Tls(#[source] rustls::Error),
}

/// What is wrong with a [`crate::ProviderSettings`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    /// The base URL does not parse or is not http(s).
    #[error("base url `{url}` is not an http(s) url")]
    BaseUrl {
        /// The URL as configured.
        url: String,
    },
    /// The model name is empty.
    #[error("the model name is empty")]
    EmptyModel,
    /// The provider needs an API key and none was given.
    #[error("the {provider} provider needs an api key and none was given")]
    MissingApiKey {
        /// The provider kind, for the message.
        provider: &'static str,
    },
    /// The API key cannot be sent in an HTTP header (newline or control characters).
    #[error("the api key contains characters that cannot be sent in an http header")]
    ApiKeyNotAHeader,
}

/// Result type of this crate.
pub type Result<T> = std::result::Result<T, Error>;
