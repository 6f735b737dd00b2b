//! Zero-config model discovery: provider keys the CLI read from the environment, then
//! local OpenAI-compatible servers on loopback ports. Nothing here reads the
//! environment; the CLI passes `(name, value)` pairs in.
//!
//! # Provider keys, in order of preference
//!
//! | variable | provider | base URL | default model |
//! |---|---|---|---|
//! | `OPENAI_API_KEY` | OpenAI | `https://api.openai.com/v1` | `gpt-4.1-mini` |
//! | `ANTHROPIC_API_KEY` | Anthropic | `https://api.anthropic.com/v1` | `claude-sonnet-4-5` |
//! | `DEEPSEEK_API_KEY` | OpenAI-compatible | `https://api.deepseek.com/v1` | `deepseek-chat` |
//! | `DASHSCOPE_API_KEY` | OpenAI-compatible | `https://dashscope.aliyuncs.com/compatible-mode/v1` | `qwen-plus` |
//! | `OPENROUTER_API_KEY` | OpenAI-compatible | `https://openrouter.ai/api/v1` | `openai/gpt-4.1-mini` |
//!
//! An empty or blank value does not count. The config file's `model` overrides the
//! default model.
//!
//! # Local servers, probed at once, first in this order wins (`127.0.0.1`, 500 ms per request by default)
//!
//! | server | port | models listed by |
//! |---|---|---|
//! | Ollama | 11434 | `GET /api/tags`, then `GET /v1/models` |
//! | llama.cpp server | 8080 | `GET /v1/models` |
//! | LM Studio | 1234 | `GET /v1/models` |
//!
//! The first listed model whose name does not look like an embedding model is chosen.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use serde_json::Value;

use crate::settings::{ProviderKind, ProviderSettings};
use crate::transport;

/// A provider whose key can be discovered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownProvider {
    /// The environment variable holding the key.
    pub env_var: &'static str,
    /// Human name for messages.
    pub label: &'static str,
    /// The wire protocol.
    pub kind: ProviderKind,
    /// The default base URL.
    pub base_url: &'static str,
    /// The default model.
    pub model: &'static str,
}

/// The providers [`discover_from_keys`] looks for, in order of preference.
pub const KNOWN_PROVIDERS: &[KnownProvider] = &[
    KnownProvider {
        env_var: "OPENAI_API_KEY",
        label: "OpenAI",
        kind: ProviderKind::OpenAi,
        base_url: "https://api.openai.com/v1",
        model: "gpt-4.1-mini",
    },
    KnownProvider {
        env_var: "ANTHROPIC_API_KEY",
        label: "Anthropic",
        kind: ProviderKind::Anthropic,
        base_url: "https://api.anthropic.com/v1",
        model: "claude-sonnet-4-5",
    },
    KnownProvider {
        env_var: "DEEPSEEK_API_KEY",
        label: "DeepSeek",
        kind: ProviderKind::OpenAi,
        base_url: "https://api.deepseek.com/v1",
        model: "deepseek-chat",
    },
    KnownProvider {
        env_var: "DASHSCOPE_API_KEY",
        label: "Qwen (DashScope)",
        kind: ProviderKind::OpenAi,
        base_url: "https://dashscope.aliyuncs.com/compatible-mode/v1",
        model: "qwen-plus",
    },
    KnownProvider {
        env_var: "OPENROUTER_API_KEY",
        label: "OpenRouter",
        kind: ProviderKind::OpenAi,
        base_url: "https://openrouter.ai/api/v1",
        model: "openai/gpt-4.1-mini",
    },
];

/// The environment variables [`discover_from_keys`] reads, for the CLI's `env.rs`.
pub fn key_variables() -> impl Iterator<Item = &'static str> {
    KNOWN_PROVIDERS.iter().map(|provider| provider.env_var)
}

/// A model found without configuration, and why it was chosen.
#[derive(Debug, Clone, PartialEq)]
pub struct Discovered {
    /// Ready-to-use settings (defaults for timeouts and retries).
    pub settings: ProviderSettings,
    /// One sentence for the operator, e.g. "OPENAI_API_KEY is set: using OpenAI
    /// (gpt-4.1-mini at `https://api.openai.com/v1`)". Never contains the key.
    pub reason: String,
}

/// The first provider of [`KNOWN_PROVIDERS`] whose variable is among `keys` with a
/// non-blank value. `keys` are `(variable name, value)` pairs the caller read.
pub fn discover_from_keys(keys: &[(&str, &str)]) -> Option<Discovered> {
    KNOWN_PROVIDERS.iter().find_map(|provider| {
        let value = keys
            .iter()
            .find(|(name, value)| *name == provider.env_var && !value.trim().is_empty())
            .map(|(_, value)| value.trim())?;
        let settings = ProviderSettings::new(provider.kind, provider.base_url, provider.model)
            .with_api_key(value);
        Some(Discovered {
            reason: format!(
                "{} is set: using {} ({} at {})",
                provider.env_var, provider.label, provider.model, provider.base_url
            ),
            settings,
        })
    })
}

/// A kind of local server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocalServerKind {
    /// Ollama (`/api/tags` lists pulled models).
    Ollama,
    /// llama.cpp's `llama-server`.
    LlamaCpp,
    /// LM Studio's local server.
    LmStudio,
}

impl fmt::Display for LocalServerKind {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(match self {
            Self::Ollama => "Ollama",
            Self::LlamaCpp => "llama.cpp server",
            Self::LmStudio => "LM Studio",
        })
    }
}

/// One port to probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalCandidate {
    /// What is expected there.
    pub kind: LocalServerKind,
    /// The TCP port.
    pub port: u16,
}

/// Where and how long to look for local servers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeOptions {
    /// The loopback address (tests may use another port, never another host).
    pub host: IpAddr,
    /// Ports to try, in order.
    pub candidates: Vec<LocalCandidate>,
    /// Connect and response timeout for each probe request.
    pub timeout: Duration,
}

impl Default for ProbeOptions {
    fn default() -> Self {
        Self {
            host: IpAddr::V4(Ipv4Addr::LOCALHOST),
            candidates: vec![
                LocalCandidate {
                    kind: LocalServerKind::Ollama,
                    port: 11434,
                },
                LocalCandidate {
                    kind: LocalServerKind::LlamaCpp,
                    port: 8080,
                },
                LocalCandidate {
                    kind: LocalServerKind::LmStudio,
                    port: 1234,
                },
            ],
            timeout: Duration::from_millis(500),
        }
    }
}

/// What the probe of each port found, for the "no model found" message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeReport {
    /// One line per candidate, e.g. "Ollama on 127.0.0.1:11434: nothing listening".
    pub tried: Vec<String>,
}

impl fmt::Display for ProbeReport {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.tried.join("; "))
    }
}

/// At most this many ports are probed at once.
const MAX_CONCURRENT_PROBES: usize = 8;

/// Probes local OpenAI-compatible servers and returns the first (in the order of
/// `options.candidates`) with a usable model.
///
/// The ports are probed concurrently, at most 8 at a time, so the whole search takes
/// about as long as the slowest port rather than the sum of them: at most two requests of
/// `options.timeout` per batch of ports.
pub async fn probe_local(options: &ProbeOptions) -> Result<Discovered, ProbeReport> {
    let mut tried = Vec::new();
    let Ok(client) = transport::client(options.timeout) else {
        tried.push("cannot build an http client".to_owned());
        return Err(ProbeReport { tried });
    };
    for batch in options.candidates.chunks(MAX_CONCURRENT_PROBES) {
        let outcomes = futures_util::future::join_all(
            batch
                .iter()
                .map(|candidate| probe(&client, options, *candidate)),
        )
        .await;
        for outcome in outcomes {
            match outcome {
                Ok(found) => return Ok(found),
                Err(line) => tried.push(line),
            }
        }
    }
    Err(ProbeReport { tried })
}

/// Probes one port: the server found there, or one line saying why not.
async fn probe(
    client: &reqwest::Client,
    options: &ProbeOptions,
    candidate: LocalCandidate,
) -> Result<Discovered, String> {
    let root = match options.host {
        IpAddr::V4(host) => format!("http://{host}:{}", candidate.port),
        IpAddr::V6(host) => format!("http://[{host}]:{}", candidate.port),
    };
    let place = format!(
        "{} on {}",
        candidate.kind,
        root.trim_start_matches("http://")
    );
    let mut models = Err("nothing listening".to_owned());
    if candidate.kind == LocalServerKind::Ollama {
        models = list(client, &format!("{root}/api/tags"), options.timeout).await;
    }
    if models.as_ref().map_or(true, Vec::is_empty) {
        let listed = list(client, &format!("{root}/v1/models"), options.timeout).await;
        if listed.is_ok() || models.is_err() {
            models = listed;
        }
    }
    match models {
        Ok(names) => match pick(&names) {
            Some(model) => {
                let base_url = format!("{root}/v1");
                let others = names.len() - 1;
                let reason = format!(
                    "found {place}: using model `{model}`{}",
                    if others == 0 {
                        String::new()
                    } else {
                        format!(" (first of {} listed; set `model` to choose)", names.len())
                    }
                );
                Ok(Discovered {
                    settings: ProviderSettings::new(ProviderKind::OpenAi, base_url, model),
                    reason,
                })
            }
            None if names.is_empty() => Err(format!("{place}: no models installed")),
            None => Err(format!("{place}: only embedding models installed")),
        },
        Err(why) => Err(format!("{place}: {why}")),
    }
}

/// The first model that does not look like an embedding model.
fn pick(names: &[String]) -> Option<String> {
    names
        .iter()
        .find(|name| !name.to_ascii_lowercase().contains("embed"))
        .cloned()
}

/// Model names from `/api/tags` (`{"models": [{"name"}]}`) or `/v1/models`
/// (`{"data": [{"id"}]}`).
async fn list(
    client: &reqwest::Client,
    url: &str,
    timeout: Duration,
) -> Result<Vec<String>, String> {
    let request = async {
        let response = client.get(url).send().await?;
        let status = response.status();
        let bytes = response.bytes().await?;
        Ok::<_, reqwest::Error>((status, bytes))
    };
    let (status, bytes) = match tokio::time::timeout(timeout, request).await {
        Err(_) => return Err(format!("no answer within {timeout:?}")),
        Ok(Err(error)) if error.is_connect() => return Err("nothing listening".to_owned()),
        Ok(Err(error)) => return Err(format!("request failed: {error}")),
        Ok(Ok(answer)) => answer,
    };
    if !status.is_success() {
        return Err(format!("http {} from {url}", status.as_u16()));
    }
    let value: Value = serde_json::from_slice(&bytes)
        .map_err(|_| format!("{url} did not answer json: not an OpenAI-compatible server"))?;
    let entries = value
        .get("models")
        .or_else(|| value.get("data"))
        .and_then(Value::as_array)
        .ok_or_else(|| format!("{url} did not list models"))?;
    Ok(entries
        .iter()
        .filter_map(|entry| {
            entry
                .get("name")
                .or_else(|| entry.get("model"))
                .or_else(|| entry.get("id"))
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_first_non_embedding_model() {
        let names = vec!["nomic-embed-text".to_owned(), "qwen3:8b".to_owned()];
        assert_eq!(pick(&names).as_deref(), Some("qwen3:8b"));
        assert_eq!(pick(&names[..1]), None);
    }
}
