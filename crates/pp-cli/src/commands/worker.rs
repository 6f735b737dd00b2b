//! `pocketpilot worker`: runs tasks from the shared database without the HTTP server —
//! the extra worker processes of a team server (docs/team.md), on this machine or
//! another one sharing the database (`[store] url`). In team mode it registers the
//! workspace names it has, claims only their tasks and runs them at its own folders.

use crate::app::{App, sweep_workspaces};
use crate::commands::serve::{configured_model, report_recovered, shutdown_signal};
use crate::config::{Config, Flags};
use crate::output::errln;
use crate::{exit, home, lock};

/// Runs task workers until Ctrl-C (or SIGTERM), then leaves the worker registry. Tasks
/// still running when it stops become `interrupted` once their lease passes (another
/// process notices), never run twice.
pub(crate) async fn run(flags: Flags) -> anyhow::Result<u8> {
    let config = Config::load(&flags)?;
    home::ensure(&config.home)?;
    // Like `serve`: `restore` refuses to replace the database under a running worker.
    let _lock = lock::hold_for_serve(&config.home)?;
    let models = configured_model(&config).await?;
    let app = App::with_config(config, models, None).await?;
    sweep_workspaces(&app.service.workspaces().list);
    report_recovered(&app.service).await?;
    app.service.start_workers();
    app.start_mcp().await;
    let names: Vec<&str> = app
        .service
        .workspaces()
        .list
        .iter()
        .map(|workspace| workspace.name.as_str())
        .collect();
    errln!(
        "worker: {} running task(s) at a time for workspace(s) {} on {}{} (Ctrl-C stops)",
        app.config.tasks.workers,
        if names.is_empty() {
            "(none)".to_owned()
        } else {
            names.join(", ")
        },
        app.config.store_url,
        if app.config.team { ", team mode" } else { "" },
    );
    shutdown_signal().await;
    if let Err(error) = app.service.leave().await {
        errln!("warning: cannot leave the worker registry: {error}");
    }
    app.mcp.shutdown().await;
    errln!("stopped");
    Ok(exit::OK)
}
