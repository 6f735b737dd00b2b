//! Which model tasks use: the `[model]` table, else zero-config discovery (a provider
//! key in the environment, then a local server on its usual loopback port).

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::Duration;

use pp_model::{
    Backoff, LocalCandidate, LocalServerKind, ProbeOptions, ProviderKind, ProviderSettings,
    Timeouts, discover_from_keys, probe_local,
};

use crate::config::{Config, FileModel};
use crate::{Exit, env};

/// A model ready to use, and why it was chosen.
pub(crate) struct Chosen {
    /// The provider.
    pub(crate) model: Arc<dyn pp_agent::Model>,
    /// Its settings (the key redacted by `Debug`).
    pub(crate) settings: ProviderSettings,
    /// One sentence for the operator; never contains the key.
    pub(crate) reason: String,
}

/// The outcome of looking for a model.
pub(crate) enum Found {
    /// A model to use.
    Chosen(Chosen),
    /// Nothing configured or found; the message says every way to fix it.
    Nothing(String),
}

/// Default base URLs per provider kind.
fn default_base_url(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::OpenAi => "https://api.openai.com/v1",
        ProviderKind::Anthropic => "https://api.anthropic.com/v1",
    }
}

/// Resolves the model: explicit configuration first, then discovery.
pub(crate) async fn find(config: &Config) -> anyhow::Result<Found> {
    if let Some(table) = &config.model {
        let settings = settings_from(table, config)?;
        return chosen(settings, describe_configured(config)).map(Found::Chosen);
    }
    if config.discovery.enabled == Some(false) {
        return Ok(Found::Nothing(nothing_message(
            "discovery is disabled in [discovery]",
        )));
    }
    let keys = env::provider_keys();
    let pairs: Vec<(&str, &str)> = keys
        .iter()
        .map(|(name, value)| (*name, value.as_str()))
        .collect();
    if let Some(found) = discover_from_keys(&pairs) {
        return chosen(found.settings, found.reason).map(Found::Chosen);
    }
    match probe_local(&probe_options(config)).await {
        Ok(found) => chosen(found.settings, found.reason).map(Found::Chosen),
        Err(report) => Ok(Found::Nothing(nothing_message(&format!(
            "no provider key is set; local servers tried: {report}"
        )))),
    }
}

fn chosen(settings: ProviderSettings, reason: String) -> anyhow::Result<Chosen> {
    let model = pp_model::provider(&settings)
        .map_err(|error| Exit::usage(format!("invalid model settings: {error}")))?;
    Ok(Chosen {
        model: Arc::from(model),
        settings,
        reason,
    })
}

fn describe_configured(config: &Config) -> String {
    match &config.file {
        Some(file) => format!("configured in {}", file.display()),
        None => "configured".to_owned(),
    }
}

/// Builds provider settings from the `[model]` table.
pub(crate) fn settings_from(
    table: &FileModel,
    config: &Config,
) -> anyhow::Result<ProviderSettings> {
    let where_ = config.file.as_ref().map_or_else(
        || "the config".to_owned(),
        |file| file.display().to_string(),
    );
    let provider = table.provider.as_deref().unwrap_or("openai");
    let kind = ProviderKind::parse(provider).ok_or_else(|| {
        Exit::usage(format!(
            "{where_}: [model] provider `{provider}` is not known (use `openai` for every \
             OpenAI-compatible server, or `anthropic`)"
        ))
    })?;
    let model = table.model.clone().ok_or_else(|| {
        Exit::usage(format!(
            "{where_}: [model] needs `model` (the model's name on the server)"
        ))
    })?;
    let base_url = table
        .base_url
        .clone()
        .unwrap_or_else(|| default_base_url(kind).to_owned());
    let mut settings = ProviderSettings::new(kind, base_url, model);
    if let Some(variable) = &table.api_key_env {
        let key = env::var(variable).ok_or_else(|| {
            Exit::usage(format!(
                "{where_}: [model] api_key_env names `{variable}`, which is not set in the \
                 environment (PocketPilot never falls back to another key)"
            ))
        })?;
        settings = settings.with_api_key(key);
    }
    settings.max_tokens = table.max_tokens;
    settings.temperature = table.temperature;
    if let Some(stream) = table.stream {
        settings.stream = stream;
    }
    if let Some(retries) = table.max_retries {
        settings.max_retries = retries;
    }
    if let Some(secs) = table.timeout_secs {
        let total = Duration::from_secs(secs);
        settings.timeouts = Timeouts {
            total,
            first_byte: settings.timeouts.first_byte.min(total),
            connect: settings.timeouts.connect.min(total),
        };
    }
    if let Some(millis) = table.retry_backoff_ms {
        settings.backoff = Backoff {
            base: Duration::from_millis(millis),
            max: settings.backoff.max.max(Duration::from_millis(millis)),
        };
    }
    settings
        .validate()
        .map_err(|error| Exit::usage(format!("{where_}: invalid [model]: {error}")))?;
    Ok(settings)
}

fn probe_options(config: &Config) -> ProbeOptions {
    let mut options = ProbeOptions::default();
    if let Some(ports) = &config.discovery.local_ports {
        options.candidates = ports
            .iter()
            .map(|&port| LocalCandidate {
                kind: match port {
                    11434 => LocalServerKind::Ollama,
                    1234 => LocalServerKind::LmStudio,
                    _ => LocalServerKind::LlamaCpp,
                },
                port,
            })
            .collect();
    }
    if let Some(millis) = config.discovery.probe_timeout_ms {
        options.timeout = Duration::from_millis(millis);
    }
    options.host = IpAddr::V4(Ipv4Addr::LOCALHOST);
    options
}

/// The "no model" message: what was tried and every way to configure one.
pub(crate) fn nothing_message(tried: &str) -> String {
    format!(
        "no model is configured ({tried}). To fix it, do one of:\n  \
         - set a provider key: OPENAI_API_KEY, ANTHROPIC_API_KEY, DEEPSEEK_API_KEY, \
         DASHSCOPE_API_KEY or OPENROUTER_API_KEY\n  \
         - start a local server: Ollama (`ollama serve`, then `ollama pull qwen2.5`), \
         llama.cpp's `llama-server` on port 8080, or LM Studio's server on port 1234\n  \
         - run `pocketpilot init` to write a config with a [model] table\n  \
         - or try everything offline with `pocketpilot demo`, or `--script FILE`"
    )
}
