//! `pocketpilot serve`: the HTTP API and the console on 127.0.0.1 (or `[server] bind`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use pp_schedules::{Scheduler, TickOutcome};
use pp_server::{AppState, ServerSettings};
use pp_tasks::ModelSource;

use crate::app::{App, read_script, sweep_workspaces};
use crate::channel_key::{self, Unopenable};
use crate::commands::backup::{spawn_daily_prune, spawn_daily_snapshot_prune};
use crate::config::{Config, Flags};
use crate::output::{errln, outln};
use crate::render::one_line;
use crate::{exit, home, lock, models};

/// Serves until Ctrl-C (or SIGTERM).
pub(crate) async fn run(flags: Flags, script: Option<PathBuf>) -> anyhow::Result<u8> {
    // First, before any child starts: every child gets the original limit back.
    let open_files = raise_open_files();
    let config = Config::load(&flags)?;
    // Under root, a root-owned workspace needs the containment probe (a sandbox child)
    // before it can say whether `run_command` is offered: it starts now, beside the
    // store's opening, and the status lines and the first task find it taken.
    let shell = crate::shell::shell_provider(&config.shell, &config.home);
    for workspace in &config.workspaces.list {
        shell.probe_ahead(&workspace.path);
    }
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
        None => configured_model(&config).await?,
    };
    let app = App::with_shell(config, models, None, shell.clone()).await?;
    // The status waits for the probe (and reads each workspace's owner): off the async
    // threads, and now, while the thread that opened the store is idle to take it.
    let workspaces = app.service.workspaces().list.clone();
    let statuses = tokio::task::spawn_blocking(move || {
        workspaces
            .into_iter()
            .map(|workspace| {
                let (_, line) = crate::shell::status(&shell, &workspace.path);
                (workspace, line)
            })
            .collect::<Vec<_>>()
    })
    .await
    .context("the shell's status was not taken")?;
    let token = home::load_or_create_token(&app.config.token_file())?;
    sweep_workspaces(&app.service.workspaces().list);
    errln!("store: {}", app.config.store_url.location());
    // Before listening: a team `serve` without the team key (or with one that opens none
    // of the channels) refuses to start.
    let channel_keys = channel_key::load(&app.config)?;
    let channels = channel_key::open_checked(
        app.service.clone(),
        app.store.clone(),
        &channel_keys,
        Unopenable::RefuseIfNoneOpen,
    )
    .await?;
    let bind = app.config.bind;
    // Room for a burst of new connections as large as may be open at once.
    let backlog = u32::try_from(app.config.connections.max_connections).unwrap_or(u32::MAX);
    let listener = pp_server::listen((bind, app.config.port).into(), backlog)
        .with_context(|| format!("cannot listen on {bind}:{}", app.config.port))?;
    // Only after the port is ours: a second server that cannot bind changes nothing.
    report_recovered(&app.service).await?;

    let port = listener.local_addr()?.port();
    let settings = ServerSettings {
        port: Some(port),
        default_script,
        allowed_hosts: app.config.allowed_hosts.clone(),
        trust_forwarded_proto: app.config.trust_forwarded_proto,
        team: app.config.team,
        max_connections: app.config.connections.max_connections,
        header_read_timeout: app.config.connections.header_timeout,
        body_idle_timeout: app.config.connections.body_idle_timeout,
        ..ServerSettings::default()
    };
    if let Some(limit) = open_files
        && u64::try_from(settings.max_connections)
            .unwrap_or(u64::MAX)
            .saturating_add(OPEN_FILES_RESERVE)
            > limit
    {
        errln!(
            "warning: [server] max_connections is {} but this process may open only {limit} \
             files (`ulimit -Hn`); past about {} connections, new ones wait in the kernel's \
             queue instead of getting 503",
            settings.max_connections,
            limit.saturating_sub(OPEN_FILES_RESERVE)
        );
    }
    app.service.start_workers();
    app.start_mcp().await;
    let pruner = app
        .config
        .retain
        .map(|retain| spawn_daily_prune(app.service.clone(), retain));
    let snapshot_pruner = spawn_daily_snapshot_prune(app.service.clone());
    // One scheduler: its loop fires the schedules, the API's `/api/schedules` edits them.
    let schedules = Scheduler::new(app.service.clone(), app.store.clone())
        .with_script(settings.default_script.clone());
    let scheduler = spawn_scheduler(schedules.clone());
    // One handle for notifications and approval expiry: tasks through the service, the
    // event feed and pending approvals from the store.
    let notifications = pp_notify::Notifications::new(app.service.clone(), app.store.clone());
    let notifier = app.config.notify_on(port).map(|notifier| {
        let notifications = notifications.clone();
        tokio::spawn(async move {
            notifications
                .watch(notifier, NOTIFY_POLL, |line| errln!("{line}"))
                .await;
        })
    });
    let expiry = app
        .config
        .approvals_expire_after
        .map(|after| spawn_expiry(notifications.clone(), after));
    // Approval cards in Telegram: only when `[telegram]` is configured (nothing is built
    // or started otherwise).
    let telegram = match &app.config.telegram {
        Some(telegram) => Some(spawn_telegram(&app, telegram)?),
        None => None,
    };
    let state = AppState::new(
        app.service.clone(),
        app.users(),
        app.sessions(),
        token.clone(),
        settings,
    );
    state.set_skills(app.skills());
    state.set_memory(app.memory());
    // `GET /api/mcp/servers` and the console's MCP page: `mcp list --json`'s report
    // (listing a lazy server starts it, as its first task would).
    let clients = Arc::clone(&app.mcp);
    state.set_mcp_report(Arc::new(move || {
        let clients = Arc::clone(&clients);
        Box::pin(async move { pp_mcp::report(&clients.servers()).await })
    }));
    state.set_channels(channels);
    state.set_scheduler(schedules);
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
    for (workspace, line) in statuses {
        errln!("workspace {}: {}", workspace.name, workspace.path.display());
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
    if app.config.team {
        // Team mode: the server token is not accepted; each person logs in with their own.
        outln!(
            "PocketPilot team console: http://127.0.0.1:{port}/login?token=<your user token> \
             (users: `pocketpilot users list`; docs/team.md)"
        )?;
    } else {
        outln!("PocketPilot console: http://127.0.0.1:{port}/login?token={token}")?;
    }
    let _ = std::io::Write::flush(&mut std::io::stdout());
    let served = pp_server::serve(listener, state, shutdown_signal()).await;
    if let Err(error) = app.service.leave().await {
        errln!("warning: cannot leave the worker registry: {error}");
    }
    watcher.abort();
    if let Some(pruner) = pruner {
        pruner.abort();
    }
    snapshot_pruner.abort();
    app.mcp.shutdown().await;
    scheduler.abort();
    if let Some(notifier) = notifier {
        notifier.abort();
    }
    if let Some(expiry) = expiry {
        expiry.abort();
    }
    if let Some((remote, poller)) = telegram {
        poller.abort();
        remote.release().await;
    }
    served?;
    errln!("stopped");
    Ok(exit::OK)
}

/// Descriptors kept for everything but connections (the database, logs, children's
/// pipes, MCP servers) when comparing `[server] max_connections` with the file limit.
const OPEN_FILES_RESERVE: u64 = 256;

/// Raises the soft open-file limit to the hard one, so connections cannot exhaust it
/// under the common 1024 default (children get the original back,
/// `pp_types::open_files::spawn_with_original`); says so on stderr. The limit now in
/// force, or `None` when unlimited or unknown.
fn raise_open_files() -> Option<u64> {
    match pp_types::open_files::raise() {
        Ok(raised) => {
            if let (Some(before), Some(after)) = (raised.before, raised.after)
                && before != after
            {
                errln!(
                    "open files: soft limit raised from {before} to {after} (children get {before})"
                );
            }
            raised.after
        }
        Err(error) => {
            errln!("warning: cannot raise the open-file limit: {error}");
            None
        }
    }
}

/// The configured model, or a placeholder that fails tasks at once saying why (the
/// process starts anyway).
pub(crate) async fn configured_model(config: &Config) -> anyhow::Result<ModelSource> {
    Ok(match models::find(config).await? {
        models::Found::Chosen(chosen) => {
            errln!("model: {}", chosen.reason);
            ModelSource::Provider(chosen.model)
        }
        models::Found::Nothing(message) => {
            errln!("warning: {message}");
            errln!(
                "starting anyway; tasks without a script fail at once until a model is configured"
            );
            ModelSource::Unconfigured(message)
        }
    })
}

/// Marks tasks whose process stopped (no heartbeat for a lease) `interrupted`, and ends
/// those whose cancel was requested before their process stopped `cancelled`, saying so.
pub(crate) async fn report_recovered(service: &pp_tasks::TaskService) -> anyhow::Result<()> {
    let recovered = service.recover().await?;
    let list = |ids: &[pp_types::TaskId]| {
        ids.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    if !recovered.interrupted.is_empty() {
        errln!(
            "{} task(s) were running in a process that stopped; they are now \
             `interrupted` (retry them to continue): {}",
            recovered.interrupted.len(),
            list(&recovered.interrupted)
        );
    }
    if !recovered.cancelled.is_empty() {
        errln!(
            "{} task(s) whose cancel was asked for before their process stopped are now \
             `cancelled`: {}",
            recovered.cancelled.len(),
            list(&recovered.cancelled)
        );
    }
    Ok(())
}

/// How often the scheduler looks for schedules created, edited or fired by another
/// process (it also wakes at the earliest planned occurrence).
const SCHEDULER_POLL: Duration = Duration::from_secs(5);

/// How often the notifier reads new events.
const NOTIFY_POLL: Duration = Duration::from_secs(1);

/// How often waiting approvals are checked for expiry.
const EXPIRY_POLL: Duration = Duration::from_secs(5);

/// Runs the scheduler (`Scheduler::run`) until aborted; what it does goes to stderr. It
/// only creates tasks: their writes wait for a person like any other.
fn spawn_scheduler(scheduler: Scheduler) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        scheduler
            .run(SCHEDULER_POLL, |report| match report {
                Ok(report) => {
                    for (schedule, outcome) in report.outcomes {
                        match outcome {
                            TickOutcome::Fired { task, missed, .. } if missed > 0 => errln!(
                                "schedule {schedule}: fired task {task} ({missed} missed \
                                 occurrence(s) before it)"
                            ),
                            TickOutcome::Fired { task, .. } => {
                                errln!("schedule {schedule}: fired task {task}");
                            }
                            TickOutcome::Skipped { task } => {
                                errln!("schedule {schedule}: skipped (task {task} is still active)")
                            }
                            TickOutcome::Paused { reason } => {
                                errln!("schedule {schedule}: paused: {}", one_line(&reason));
                            }
                            TickOutcome::Failed { error } => {
                                errln!("schedule {schedule}: firing failed: {error}");
                            }
                            TickOutcome::Lost => {}
                        }
                    }
                }
                Err(error) => errln!("scheduler: {error}"),
            })
            .await;
    })
}

/// Starts the Telegram poller (`pp_remote::Remote::run`): the token from the variable
/// `[telegram] token_env` names (an error when it is not set), long polls shorter than
/// half the tap age limit. Its log lines never hold the token.
fn spawn_telegram(
    app: &App,
    telegram: &crate::config::TelegramConfig,
) -> anyhow::Result<(
    pp_remote::Remote<pp_remote::telegram::Telegram>,
    tokio::task::JoinHandle<()>,
)> {
    let token = crate::env::var(&telegram.token_env).ok_or_else(|| {
        crate::Exit::usage(format!(
            "`[telegram] token_env` names `{}`, which is not set: export the bot's token \
             in it",
            telegram.token_env
        ))
    })?;
    let poll = pp_remote::telegram::DEFAULT_POLL_TIMEOUT.min(telegram.settings.tap_max_age / 2);
    let bot = pp_remote::telegram::Telegram::new(token.trim(), &telegram.api_url, poll)
        .map_err(|error| anyhow::anyhow!("telegram: {error}"))?;
    let remote = pp_remote::Remote::new(
        bot,
        app.service.clone(),
        app.store.clone(),
        telegram.settings.clone(),
        |line| errln!("{line}"),
    );
    // The Open button: a single-use approval link, only where it works away from this
    // machine (`[server] public_url`) and only for one person's server (in team mode a
    // link acts as the user who made it, and the bot is no user).
    let remote = match app.config.link_base() {
        (base, true) if !app.config.team => remote.with_links(std::sync::Arc::new(OpenLinks {
            service: app.service.clone(),
            base,
        })),
        _ => remote,
    };
    errln!(
        "telegram: cards go to {} chat(s){}",
        telegram.settings.chat_ids.len(),
        if telegram.settings.show_diff {
            ", with the diff (show_diff)"
        } else {
            ""
        }
    );
    let running = remote.clone();
    let poller = tokio::spawn(async move { running.run().await });
    Ok((remote, poller))
}

/// The Telegram card's Open button: a fresh approval link (default lifetime) under
/// `[server] public_url`, made as the operator.
struct OpenLinks {
    service: pp_tasks::TaskService,
    base: String,
}

impl pp_remote::LinkMaker for OpenLinks {
    fn link<'a>(
        &'a self,
        approval: &'a pp_types::ApprovalId,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Option<String>> + Send + 'a>> {
        Box::pin(async move {
            let made = self
                .service
                .create_link(approval, None, &pp_tasks::Caller::operator())
                .await;
            match made {
                Ok(made) => Some(format!("{}/d/{}", self.base, made.token)),
                Err(error) => {
                    errln!("telegram: no Open link for {approval}: {error}");
                    None
                }
            }
        })
    }
}

/// Rejects approvals that waited longer than `after` (reason `expired`, actor
/// `scheduler`) until aborted.
fn spawn_expiry(
    notifications: pp_notify::Notifications,
    after: Duration,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            match notifications.expire_approvals(after).await {
                Ok(expired) => {
                    for id in expired {
                        errln!("approval {id} expired: rejected as scheduler");
                    }
                }
                Err(error) => errln!("approval expiry: {error}"),
            }
            tokio::time::sleep(EXPIRY_POLL.min(after)).await;
        }
    })
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
