//! `pocketpilot serve`: the HTTP API and the console on 127.0.0.1 (or `[server] bind`).

use std::path::PathBuf;

use anyhow::Context as _;
use pp_server::{AppState, ServerSettings};
use pp_tasks::{ChannelKey, ChannelSettings, ChannelsService, ModelSource};
use tokio::net::TcpListener;

use crate::app::{App, read_script, sweep_workspaces};
use crate::commands::backup::{spawn_daily_prune, spawn_daily_snapshot_prune};
use crate::config::{Config, Flags};
use crate::output::{errln, outln};
use crate::{exit, home, lock, models};

/// Serves until Ctrl-C (or SIGTERM).
pub(crate) async fn run(flags: Flags, script: Option<PathBuf>) -> anyhow::Result<u8> {
    let config = Config::load(&flags)?;
    home::ensure(&config.home)?;
    // Held until the server stops: `restore` refuses to replace the database meanwhile.
    let _serve_lock = lock::hold_for_serve(&config.home)?;
    let default_script = script.as_deref().map(read_script).transpose()?;
    let models = match &default_script {
        Some(_) => {
            errln!(
                "model: every task replays the script {}",
                script
                    .as_deref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default()
            );
            ModelSource::Scripted
        }
        None => match models::find(&config).await? {
            models::Found::Chosen(chosen) => {
                errln!("model: {}", chosen.reason);
                ModelSource::Provider(chosen.model)
            }
            models::Found::Nothing(message) => {
                errln!("warning: {message}");
                errln!("the server starts anyway; tasks fail at once until a model is configured");
                ModelSource::Unconfigured(message)
            }
        },
    };
    let app = App::with_config(config, models, None)?;
    let token = home::load_or_create_token(&app.config.token_file())?;
    sweep_workspaces(&app.service.workspaces().list);
    let channel_key = home::load_or_create_channel_key(&app.config.channel_key_file())?;
    let bind = app.config.bind;
    let listener = TcpListener::bind((bind, app.config.port))
        .await
        .with_context(|| format!("cannot listen on {bind}:{}", app.config.port))?;
    // Only after the port is ours: a second server that cannot bind changes nothing.
    let interrupted = app.service.recover().await?;
    if !interrupted.is_empty() {
        errln!(
            "{} task(s) were running when the last server stopped; they are now \
             `interrupted` (retry them to continue): {}",
            interrupted.len(),
            interrupted
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        );
    }

    let port = listener.local_addr()?.port();
    let settings = ServerSettings {
        port: Some(port),
        default_script,
        allowed_hosts: app.config.allowed_hosts.clone(),
        trust_forwarded_proto: app.config.trust_forwarded_proto,
        ..ServerSettings::default()
    };
    app.service.start_workers();
    let pruner = app
        .config
        .retain
        .map(|retain| spawn_daily_prune(app.config.database(), retain));
    let snapshot_pruner = spawn_daily_snapshot_prune(app.service.clone());
    let state = AppState::new(app.service.clone(), token.clone(), settings);
    state.set_skills(app.skills());
    state.set_memory(app.memory());
    state.set_channels(ChannelsService::new(
        app.service.clone(),
        ChannelKey::from_bytes(&channel_key),
        ChannelSettings::default(),
    ));
    state.set_error_log(|line| errln!("{line}"));
    // `pocketpilot token rotate` rewrites the file; pick the new token up without a restart.
    let watched = state.clone();
    let token_for_watch = token.clone();
    let token_file = app.config.token_file();
    let watcher = tokio::spawn(async move {
        let mut current = token_for_watch;
        loop {
            tokio::time::sleep(std::time::Duration::from_secs(2)).await;
            if let Some(fresh) = home::read_token(&token_file)
                && fresh != current
            {
                watched.set_token(fresh.clone());
                current = fresh;
                errln!("the API token was rotated; new logins need the new link");
            }
        }
    });
    let shell = crate::shell::shell_provider(&app.config.shell, &app.config.home);
    for workspace in &app.service.workspaces().list {
        errln!("workspace {}: {}", workspace.name, workspace.path.display());
        let (_, line) = crate::shell::status(&shell, &workspace.path);
        errln!("  shell: {line}");
    }
    errln!("data: {}", app.config.home.display());
    if !bind.is_loopback() {
        errln!(
            "listening on {bind}:{port}: other machines can reach this server; only webhook \
             deliveries need no token, and Host names other than loopback and [server] \
             allowed_hosts ({}) are refused",
            if app.config.allowed_hosts.is_empty() {
                "none".to_owned()
            } else {
                app.config.allowed_hosts.join(", ")
            }
        );
    }
    outln!("PocketPilot console: http://127.0.0.1:{port}/login?token={token}")?;
    let _ = std::io::Write::flush(&mut std::io::stdout());
    let served = pp_server::serve(listener, state, shutdown_signal()).await;
    watcher.abort();
    if let Some(pruner) = pruner {
        pruner.abort();
    }
    snapshot_pruner.abort();
    served?;
    errln!("stopped");
    Ok(exit::OK)
}

/// Completes on Ctrl-C or SIGTERM.
pub(crate) async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
}
