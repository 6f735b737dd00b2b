//! `pocketpilot init`: writes a commented `pocketpilot.toml`.

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::PathBuf;

use anyhow::Context as _;

use crate::config::absolute_path;
use crate::output::{errprint, outln};
use crate::{Exit, env, exit};

/// What `init` writes.
#[derive(Debug, Clone, Default)]
pub(crate) struct InitOptions {
    /// `openai` or `anthropic`.
    pub(crate) provider: Option<String>,
    /// The model name.
    pub(crate) model: Option<String>,
    /// The base URL (default per provider).
    pub(crate) base_url: Option<String>,
    /// The environment variable holding the key.
    pub(crate) api_key_env: Option<String>,
    /// A workspace directory.
    pub(crate) workspace: Option<PathBuf>,
    /// Replace an existing file.
    pub(crate) force: bool,
}

/// Writes the config file and returns the exit code.
#[expect(
    clippy::disallowed_methods,
    reason = "writes the operator's own config file, chosen on the command line or by default"
)]
pub(crate) fn run(config_flag: Option<PathBuf>, mut options: InitOptions) -> anyhow::Result<u8> {
    let path = match config_flag.or_else(env::config_override) {
        Some(path) => absolute_path(&path)?,
        None => env::default_config_file()
            .ok_or_else(|| Exit::usage("cannot find a config directory: pass --config FILE"))?,
    };
    if path.exists() && !options.force {
        return Err(Exit::usage(format!(
            "{} already exists; it was left untouched (pass --force to replace it)",
            path.display()
        ))
        .into());
    }
    if std::io::stdin().is_terminal() {
        ask_missing(&mut options)?;
    }
    let provider = options.provider.clone().unwrap_or_else(|| "openai".into());
    let defaults = match provider.as_str() {
        "anthropic" => (
            "claude-sonnet-4-5",
            "ANTHROPIC_API_KEY",
            "https://api.anthropic.com/v1",
        ),
        "openai" => ("gpt-4o-mini", "OPENAI_API_KEY", "https://api.openai.com/v1"),
        other => {
            return Err(Exit::usage(format!(
                "unknown provider `{other}`: use `openai` (any OpenAI-compatible server) or `anthropic`"
            ))
            .into());
        }
    };
    let text = render(&provider, &options, defaults);
    crate::config::parse(&text).map_err(|error| {
        anyhow::anyhow!("internal error: the generated config is invalid: {error}")
    })?;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    outln!("wrote {}", path.display())?;
    outln!("next: `pocketpilot doctor` checks it, then `pocketpilot run \"…\"`")?;
    Ok(exit::OK)
}

fn ask_missing(options: &mut InitOptions) -> anyhow::Result<()> {
    let prompt = |question: &str, default: &str| -> anyhow::Result<String> {
        errprint!("{question} [{default}]: ");
        std::io::stderr().flush()?;
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line)?;
        let answer = line.trim();
        Ok(if answer.is_empty() {
            default.to_owned()
        } else {
            answer.to_owned()
        })
    };
    if options.provider.is_none() {
        options.provider = Some(prompt(
            "provider (openai for any OpenAI-compatible server, or anthropic)",
            "openai",
        )?);
    }
    let anthropic = options.provider.as_deref() == Some("anthropic");
    if options.model.is_none() {
        options.model = Some(prompt(
            "model",
            if anthropic {
                "claude-sonnet-4-5"
            } else {
                "gpt-4o-mini"
            },
        )?);
    }
    if options.api_key_env.is_none() {
        options.api_key_env = Some(prompt(
            "environment variable holding the API key (the key itself is never written)",
            if anthropic {
                "ANTHROPIC_API_KEY"
            } else {
                "OPENAI_API_KEY"
            },
        )?);
    }
    Ok(())
}

fn render(provider: &str, options: &InitOptions, defaults: (&str, &str, &str)) -> String {
    let model = options.model.as_deref().unwrap_or(defaults.0);
    let key = options.api_key_env.as_deref().unwrap_or(defaults.1);
    let base_url = options.base_url.as_deref().unwrap_or(defaults.2);
    let workspace = options.workspace.as_ref().map_or_else(
        || {
            "# [[workspace]]\n# name = \"documents\"\n# path = \"~/Documents\"\n# default = true\n"
                .to_owned()
        },
        |path| {
            format!(
                "[[workspace]]\nname = \"main\"\npath = {:?}\ndefault = true\n",
                path.display().to_string()
            )
        },
    );
    format!(
        r#"# PocketPilot configuration. Read only from here (or --config / POCKETPILOT_CONFIG),
# never from inside a workspace. Unknown keys are an error.

[model]
# `openai` for every OpenAI-compatible server (OpenAI, DeepSeek, Qwen/DashScope, Moonshot,
# OpenRouter, Ollama, vLLM, llama.cpp's server, LM Studio), or `anthropic`.
provider = "{provider}"
model = "{model}"
base_url = "{base_url}"
# The NAME of the environment variable holding the key; the key is never written here.
# Remove this line for local servers that need no key.
api_key_env = "{key}"
# max_tokens = 4096
# temperature = 0.2
# context_window = 128000   # older turns are left out of requests beyond this
# timeout_secs = 300        # whole call, retries included
# max_retries = 3           # on 429, 5xx and connection errors, with backoff
# retry_backoff_ms = 500
# stream = true
# Prices per million tokens give each task a cost estimate (docs/configuration.md):
# [model.prices."{model}"]
# prompt = 0.15
# completion = 0.60
# cached = 0.075            # cached prompt tokens (default: the prompt price)
# currency = "USD"

[tasks]
# workers = 2               # tasks running at once
# timeout_secs = 600        # running time per task (waiting for you does not count)
# max_steps = 24
# max_denials = 3           # the third denied call fails the task
# max_tokens = 200000       # tokens per task; it stops before the call that would pass it

[server]
# port = 7878

# [discovery]               # used only when [model] is absent
# local_ports = [11434, 8080, 1234]
# probe_timeout_ms = 500

{workspace}"#
    )
}
