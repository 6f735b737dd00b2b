//! Model providers for PocketPilot: everything that turns a [`pp_agent::ModelRequest`]
//! into an assistant turn.
//!
//! Main types:
//! - [`ScriptedModel`] replays a JSON list of assistant turns and records every request
//!   (evals, tests, demos, `pocketpilot run --script`).
//! - [`HttpModel`], built from [`ProviderSettings`] by [`provider`] or
//!   [`HttpModel::new`], speaks OpenAI-compatible chat completions
//!   ([`ProviderKind::OpenAi`]: OpenAI, DeepSeek, Qwen/DashScope, Moonshot, OpenRouter,
//!   Ollama, vLLM, llama.cpp, LM Studio) or Anthropic Messages
//!   ([`ProviderKind::Anthropic`]), streamed or not, with timeouts, retries with backoff
//!   on 429/5xx/connection errors, and operator-readable [`pp_agent::ModelError`]s that
//!   never contain the API key.
//! - Discovery for zero-config runs: [`discover_from_keys`] (keys the CLI read from the
//!   environment) and [`probe_local`] (Ollama / llama.cpp / LM Studio on loopback).
//! - [`ping()`] for `doctor`. (Fitting a conversation into a context window is the
//!   loop's job: `pp_agent::trim_to_window`.)
//!
//! This crate depends on `pp-types` and `pp-agent` only, and owns `reqwest` (rustls on
//! the ring backend; the system's root certificates are read at the first `https://`
//! handshake of the process, never for a plain-`http://` local model). It reads no environment variable and no file: the CLI resolves
//! its config into [`ProviderSettings`].
//!
//! ```
//! use pp_model::{ProviderKind, ScriptedModel, discover_from_keys};
//! let model = ScriptedModel::from_json(r#"[{"content": "hello"}]"#).unwrap();
//! assert_eq!(model.len(), 1);
//!
//! let found = discover_from_keys(&[("DEEPSEEK_API_KEY", "sk-…")]).unwrap();
//! assert_eq!(found.settings.kind, ProviderKind::OpenAi);
//! assert_eq!(found.settings.model, "deepseek-chat");
//! ```

mod anthropic;
mod dialect;
mod discovery;
mod error;
mod http_model;
mod openai;
mod ping;
mod scripted;
mod settings;
mod sse;
mod tls;
mod transport;

pub use anthropic::{ANTHROPIC_DEFAULT_MAX_TOKENS, ANTHROPIC_VERSION};
pub use dialect::{DeltaObserver, StreamDelta};
pub use discovery::{
    Discovered, KNOWN_PROVIDERS, KnownProvider, LocalCandidate, LocalServerKind, ProbeOptions,
    ProbeReport, discover_from_keys, key_variables, probe_local,
};
pub use error::{Error, Result, SettingsError};
pub use http_model::{HttpModel, provider};
pub use ping::{PING_TOOL, PingReport, ping, ping_request};
pub use scripted::{ScriptTurn, ScriptedCall, ScriptedModel};
pub use settings::{Backoff, ProviderKind, ProviderSettings, Timeouts};
