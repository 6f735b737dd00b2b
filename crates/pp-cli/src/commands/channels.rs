//! `pocketpilot channels list|add|rotate|remove|enable|disable|deliveries|test`: webhook
//! channels, directly on the store (no server needed), their secrets sealed with the key
//! file `channels.key` in the data directory, or in team mode with the team key
//! (`channel_key.rs`, checked at start). `add` and `rotate` print the secret: the only
//! times it is shown. `test` signs a delivery with the channel's secret (read here, on
//! this machine) and posts it to the running `serve`. Changes are audited `channel_*`,
//! as the operator (team mode: with the `--user`).

use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use clap::Subcommand;
use pp_channels::{
    ChannelsError, ChannelsService, CreateChannel, EditChannel, SIGNATURE_HEADER, TIMESTAMP_HEADER,
    WithSecret, sign, webhook_path,
};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::acting::{self, UserArgs};
use crate::app::App;
use crate::channel_key::{self, Unopenable};
use crate::config::{Config, Flags};
use crate::output::outln;
use crate::{Exit, exit};

/// What to do.
#[derive(Debug, Subcommand)]
pub(crate) enum ChannelsCommand {
    /// List the channels (never their secrets).
    List {
        /// Print one JSON object: `{"channels": […]}`.
        #[arg(long)]
        json: bool,
    },
    /// Create a channel; prints its secret, the only time it is shown.
    Add {
        /// 1-64 of a-z, 0-9, - and _.
        name: String,
        /// How a delivery becomes the prompt: `{{body}}`, `{{json.field}}`.
        #[arg(long)]
        template: Option<String>,
        /// The workspace its tasks run in (default: the default workspace).
        #[arg(long)]
        workspace: Option<String>,
        /// Print one JSON object: `{"name", "secret", "url"}`.
        #[arg(long)]
        json: bool,
        /// Who acts (team mode: an owner).
        #[command(flatten)]
        who: UserArgs,
    },
    /// Replace a channel's secret; prints the new one, the only time it is shown.
    Rotate {
        /// The channel.
        name: String,
        /// Print one JSON object: `{"name", "secret", "url"}`.
        #[arg(long)]
        json: bool,
        /// Who acts (team mode: an owner).
        #[command(flatten)]
        who: UserArgs,
    },
    /// Remove a channel and its delivery log (its tasks stay).
    Remove {
        /// The channel.
        name: String,
        /// Who acts (team mode: an owner).
        #[command(flatten)]
        who: UserArgs,
    },
    /// Accept deliveries again.
    Enable {
        /// The channel.
        name: String,
        /// Who acts (team mode: an owner).
        #[command(flatten)]
        who: UserArgs,
    },
    /// Refuse every delivery (the same 401 as a bad signature).
    Disable {
        /// The channel.
        name: String,
        /// Who acts (team mode: an owner).
        #[command(flatten)]
        who: UserArgs,
    },
    /// The newest deliveries, with their status (and why refused ones were).
    Deliveries {
        /// The channel.
        name: String,
        /// At most this many.
        #[arg(long, default_value_t = 20)]
        limit: usize,
        /// Print one JSON object: `{"deliveries": […]}`.
        #[arg(long)]
        json: bool,
    },
    /// Send a correctly signed delivery to the running `pocketpilot serve`.
    Test {
        /// The channel.
        name: String,
        /// The body to send (default: a small JSON object).
        #[arg(long)]
        body: Option<String>,
        /// The server's base URL (default: this machine's `serve`, from the config).
        #[arg(long)]
        url: Option<String>,
        /// Print one JSON object: `{"status", "response"}`.
        #[arg(long)]
        json: bool,
    },
}

impl ChannelsCommand {
    /// Who acts, for the subcommands that change a channel (owners only in team mode).
    fn who(&self) -> Option<&UserArgs> {
        match self {
            Self::List { .. } | Self::Deliveries { .. } | Self::Test { .. } => None,
            Self::Add { who, .. }
            | Self::Rotate { who, .. }
            | Self::Remove { who, .. }
            | Self::Enable { who, .. }
            | Self::Disable { who, .. } => Some(who),
        }
    }

    /// What the start check does with channels the key does not open: `rotate`,
    /// `remove` and `list` (the way out) only list them; the others refuse when the key
    /// opens none.
    fn unopenable(&self) -> Unopenable {
        match self {
            Self::List { .. } | Self::Rotate { .. } | Self::Remove { .. } => Unopenable::List,
            _ => Unopenable::RefuseIfNoneOpen,
        }
    }
}

/// The configuration and the channels service (checked against the channel key, see
/// `channel_key.rs`), once `who` (if the subcommand changes a channel) passed the
/// owners-only check; its changes are audited as that user.
async fn open(
    flags: &Flags,
    command: &ChannelsCommand,
) -> anyhow::Result<(Config, ChannelsService)> {
    let app = App::stored(flags).await?;
    // Who acts first (a missing `--user` or a refused role says so), then the key:
    // without it (team mode) nothing here can work.
    let user = match command.who() {
        Some(who) => {
            acting::owner_only(who, app.config.team, &app.service, "change channels")
                .await?
                .user
        }
        None => None,
    };
    let keys = channel_key::load(&app.config)?;
    let channels = channel_key::open_checked(
        app.service.clone(),
        app.store.clone(),
        &keys,
        command.unopenable(),
    )
    .await?
    .acting_as(user);
    Ok((app.config, channels))
}

fn failed(error: ChannelsError) -> anyhow::Error {
    match error {
        ChannelsError::BadRequest(_)
        | ChannelsError::NotFound { .. }
        | ChannelsError::NameTaken(_) => Exit::usage(error.to_string()).into(),
        other => other.into(),
    }
}

fn print_secret(
    config: &Config,
    created: &WithSecret,
    json: bool,
    verb: &str,
) -> anyhow::Result<()> {
    let url = format!(
        "{}{}",
        config.local_base_url(),
        webhook_path(&created.channel.name)
    );
    if json {
        outln!(
            "{}",
            json!({"name": created.channel.name, "secret": created.secret, "url": url})
        )?;
    } else {
        outln!("channel {} {verb}", created.channel.name)?;
        outln!("url:    {url}")?;
        outln!("secret: {}", created.secret)?;
        outln!("the secret is shown only now: store it with the sender (see docs/webhooks.md)")?;
    }
    Ok(())
}

/// Runs a `channels` subcommand.
pub(crate) async fn run(flags: &Flags, command: ChannelsCommand) -> anyhow::Result<u8> {
    let (config, channels) = open(flags, &command).await?;
    match command {
        ChannelsCommand::List { json } => {
            let list = channels.list().await.map_err(failed)?;
            if json {
                outln!("{}", json!({ "channels": list }))?;
            } else if list.is_empty() {
                outln!("no channels; add one with `pocketpilot channels add NAME`")?;
            } else {
                for channel in list {
                    outln!(
                        "{}  {}  {}",
                        channel.name,
                        if channel.enabled {
                            "enabled"
                        } else {
                            "disabled"
                        },
                        channel.webhook_path
                    )?;
                }
            }
        }
        ChannelsCommand::Add {
            name,
            template,
            workspace,
            json,
            ..
        } => {
            let created = channels
                .create(CreateChannel {
                    name,
                    template,
                    workspace,
                })
                .await
                .map_err(failed)?;
            print_secret(&config, &created, json, "created")?;
        }
        ChannelsCommand::Rotate { name, json, .. } => {
            let rotated = channels.rotate(&name).await.map_err(failed)?;
            print_secret(
                &config,
                &rotated,
                json,
                "has a new secret (the old one no longer works)",
            )?;
        }
        ChannelsCommand::Remove { name, .. } => {
            channels.remove(&name).await.map_err(failed)?;
            outln!("channel {name} removed")?;
        }
        ChannelsCommand::Enable { name, .. } => {
            set_enabled(&channels, &name, true).await?;
        }
        ChannelsCommand::Disable { name, .. } => {
            set_enabled(&channels, &name, false).await?;
        }
        ChannelsCommand::Deliveries { name, limit, json } => {
            let rows = channels.deliveries(&name, limit).await.map_err(failed)?;
            let rows: Vec<Value> = rows
                .into_iter()
                .map(|row| {
                    json!({
                        "id": row.id,
                        "at": row.at,
                        "status": row.status.as_str(),
                        "reason": row.reason,
                        "task_id": row.task_id,
                    })
                })
                .collect();
            if json {
                outln!("{}", json!({ "deliveries": rows }))?;
            } else if rows.is_empty() {
                outln!("no deliveries to {name} yet")?;
            } else {
                for row in rows {
                    outln!(
                        "{}  {}  {}",
                        row["at"].as_str().unwrap_or_default(),
                        row["status"].as_str().unwrap_or_default(),
                        row["task_id"]
                            .as_str()
                            .or(row["reason"].as_str())
                            .unwrap_or_default()
                    )?;
                }
            }
        }
        ChannelsCommand::Test {
            name,
            body,
            url,
            json,
        } => return test(&config, &channels, &name, body, url, json).await,
    }
    Ok(exit::OK)
}

async fn set_enabled(channels: &ChannelsService, name: &str, enabled: bool) -> anyhow::Result<()> {
    channels
        .edit(
            name,
            EditChannel {
                enabled: Some(enabled),
                ..EditChannel::default()
            },
        )
        .await
        .map_err(failed)?;
    outln!(
        "channel {name} {}",
        if enabled { "enabled" } else { "disabled" }
    )?;
    Ok(())
}

/// `channels test`: one signed delivery over plain HTTP/1.1 to the server.
async fn test(
    config: &Config,
    channels: &ChannelsService,
    name: &str,
    body: Option<String>,
    url: Option<String>,
    json: bool,
) -> anyhow::Result<u8> {
    let secret = channels.secret(name).await.map_err(failed)?;
    let base = url.unwrap_or_else(|| config.local_base_url());
    let authority = base
        .strip_prefix("http://")
        .map(|rest| rest.split('/').next().unwrap_or_default().to_owned())
        .filter(|authority| !authority.is_empty())
        .ok_or_else(|| {
            Exit::usage(format!(
                "--url must be an http:// base URL such as http://127.0.0.1:7878, not `{base}` \
                 (for https through a proxy, see the curl example in docs/webhooks.md)"
            ))
        })?;
    let body = body.unwrap_or_else(|| {
        json!({"test": true, "sent_by": "pocketpilot channels test"}).to_string()
    });
    let timestamp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| elapsed.as_secs())
        .unwrap_or_default()
        .to_string();
    let signature = sign(&secret, &timestamp, body.as_bytes());
    let request = format!(
        "POST {} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n{TIMESTAMP_HEADER}: {timestamp}\r\n\
         {SIGNATURE_HEADER}: {signature}\r\nConnection: close\r\n\r\n",
        webhook_path(name),
        body.len()
    );
    let mut stream = tokio::net::TcpStream::connect(&authority)
        .await
        .with_context(|| format!("cannot reach {base}: is `pocketpilot serve` running?"))?;
    stream.write_all(request.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    let mut reply = Vec::new();
    stream.read_to_end(&mut reply).await?;
    let text = String::from_utf8_lossy(&reply);
    let status: u16 = text
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .with_context(|| format!("{base} did not answer HTTP"))?;
    let response: Value = text
        .split_once("\r\n\r\n")
        .and_then(|(_, body)| serde_json::from_str(body.trim()).ok())
        .unwrap_or(Value::Null);
    if json {
        outln!("{}", json!({"status": status, "response": response}))?;
    } else if status == 202 {
        outln!(
            "delivered: task {} (it waits for approval before any write)",
            response["task_id"].as_str().unwrap_or_default()
        )?;
    } else {
        outln!(
            "not accepted: {status} {}",
            response["error"]["code"].as_str().unwrap_or_default()
        )?;
    }
    Ok(if status == 202 {
        exit::OK
    } else {
        exit::FAILED
    })
}
