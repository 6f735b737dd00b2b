//! The data you keep: `pocketpilot backup FILE`, `pocketpilot restore FILE`,
//! `pocketpilot prune`, and the daily prune `serve` runs when `[store] retain_days` is set.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use pp_store::{PruneReport, StoreUrl};
use pp_tasks::TaskService;

use crate::app::App;
use crate::config::{Config, Flags, absolute_path, retain_window};
use crate::output::errln;
use crate::{Exit, exit, home, lock};

/// How often `serve` prunes (after once at start).
const PRUNE_EVERY: Duration = Duration::from_secs(24 * 60 * 60);

/// `pocketpilot backup FILE`: a consistent copy of the database, also while `serve` runs.
/// A PostgreSQL database is backed up with `pg_dump` (usage error, exit code 2).
pub(crate) async fn backup(flags: &Flags, file: &Path) -> anyhow::Result<u8> {
    let config = Config::load(flags)?;
    let database = sqlite_file(&config, "back it up with pg_dump")?;
    let file = absolute_path(file)?;
    if !exists(&database) {
        return Err(Exit::usage(format!("there is no database at {}", database.display())).into());
    }
    let app = App::stored(flags).await?;
    app.service
        .backup_to(&file)
        .await
        .with_context(|| format!("cannot back up {}", database.display()))?;
    errln!("backed up {} to {}", database.display(), file.display());
    Ok(exit::OK)
}

/// `pocketpilot restore FILE`: replaces the database with a backup. Refused (exit code
/// 5) while a server runs on the data directory; a file that is not a PocketPilot
/// database is refused (exit code 2) and nothing changes.
pub(crate) async fn restore(flags: &Flags, file: &Path) -> anyhow::Result<u8> {
    let config = Config::load(flags)?;
    let database = sqlite_file(&config, "restore it with pg_restore")?;
    let file = absolute_path(file)?;
    home::ensure(&config.home)?;
    // Held until the restored database has been opened once (and migrated).
    let home_dir = config.home.clone();
    let _lock = tokio::task::spawn_blocking(move || lock::hold_for_restore(&home_dir))
        .await
        .context("the restore lock task stopped")??;
    // No process may have the database open, so no task service exists for it: the
    // restore is the store's own file operation.
    pp_store::Store::restore_file(&file, &database)
        .await
        .map_err(|error| {
            if matches!(error, pp_store::Error::NotAStore { .. }) {
                Exit::usage(error.to_string()).into()
            } else {
                anyhow::Error::new(error).context(format!("cannot restore {}", file.display()))
            }
        })?;
    let app = App::stored(flags)
        .await
        .with_context(|| format!("cannot open the restored {}", database.display()))?;
    // A console session that logged out after the backup must not come back.
    app.users().end_all_logins().await?;
    let restored = app.service.list_tasks(None, usize::MAX).await?.len();
    errln!(
        "restored {} into {} ({restored} task(s))",
        file.display(),
        database.display()
    );
    Ok(exit::OK)
}

/// The SQLite database file `backup`/`restore` work on; on a PostgreSQL database a usage
/// error saying what to do `instead` ("back it up with pg_dump").
fn sqlite_file(config: &Config, instead: &str) -> anyhow::Result<PathBuf> {
    match &config.store_url {
        StoreUrl::Sqlite(path) => Ok(path.clone()),
        StoreUrl::Postgres(_) => Err(Exit::usage(format!(
            "the database is PostgreSQL ({}): {instead} (docs/team.md)",
            config.store_url
        ))
        .into()),
    }
}

/// `pocketpilot prune`: drops the history of tasks finished more than `days` (default
/// `[store] retain_days`) ago, and the revert snapshots older than `[revert] retain_days`.
pub(crate) async fn prune(flags: &Flags, days: Option<u32>) -> anyhow::Result<u8> {
    let config = Config::load(flags)?;
    let older_than = match days {
        Some(0) => return Err(Exit::usage("--older-than-days must be at least 1").into()),
        Some(days) => retain_window(days),
        None => config.retain.ok_or_else(|| {
            Exit::usage("nothing to prune by: set `[store] retain_days` or pass --older-than-days")
        })?,
    };
    if let StoreUrl::Sqlite(database) = &config.store_url
        && !exists(database)
    {
        return Err(Exit::usage(format!("there is no database at {}", database.display())).into());
    }
    let app = App::stored(flags).await?;
    let report = app.service.prune(older_than).await?;
    errln!("{}", describe(&report));
    // Snapshots kept for reverts have their own window, `[revert] retain_days`.
    let (expired, removed) = app.service.changes().prune_snapshots().await?;
    if expired + removed > 0 {
        errln!(
            "pruned revert snapshots: {expired} change(s) no longer revertible, {removed} \
             snapshot file(s) removed"
        );
    }
    Ok(exit::OK)
}

/// For `serve` with `[store] retain_days`: prunes now and then once a day until the
/// returned task is aborted. Failures are reported, never fatal.
pub(crate) fn spawn_daily_prune(
    service: TaskService,
    older_than: Duration,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            match service.prune(older_than).await {
                Ok(report) if report == PruneReport::default() => {}
                Ok(report) => errln!("{}", describe(&report)),
                Err(error) => errln!("warning: pruning old history failed: {error:#}"),
            }
            tokio::time::sleep(PRUNE_EVERY).await;
        }
    })
}

/// For `serve`: resolves revert intents an earlier crash left behind, then drops
/// snapshots older than `[revert] retain_days`, now and once a day, until aborted.
/// Failures are reported, never fatal.
pub(crate) fn spawn_daily_snapshot_prune(
    service: pp_tasks::TaskService,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        if let Err(error) = service.changes().recover(Duration::from_secs(30)).await {
            errln!("warning: resolving interrupted reverts failed: {error:#}");
        }
        loop {
            match service.changes().prune_snapshots().await {
                Ok((0, 0)) => {}
                Ok((expired, removed)) => errln!(
                    "pruned revert snapshots: {expired} change(s) no longer revertible,                      {removed} snapshot file(s) removed"
                ),
                Err(error) => errln!("warning: pruning revert snapshots failed: {error:#}"),
            }
            tokio::time::sleep(PRUNE_EVERY).await;
        }
    })
}

fn describe(report: &PruneReport) -> String {
    format!(
        "pruned the history of {} finished task(s): {} event(s), {} audit row(s)",
        report.tasks, report.events, report.audit
    )
}

fn exists(path: &Path) -> bool {
    path.is_file()
}
