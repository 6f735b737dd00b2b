//! [`Store`]: the async interface every caller uses, over one of the backends.
//!
//! The SQLite backend's synchronous calls never run on the async threads: they wait in
//! one queue (`queue.rs`) and a runner on tokio's blocking pool takes them in order,
//! running every call waiting as one batch in one transaction (group commit) and
//! handing each answer over once its batch has committed. One runner at a time, so at
//! most one blocking thread is ever busy with the store; calls beyond it wait as
//! futures, never as threads. A queued call runs even if its caller has gone.

mod methods;
mod queue;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::postgres::PgStore;
use crate::sqlite::SqliteStore;
use pp_types::{Clock, SystemClock};
use queue::Queue;

use crate::url::StoreUrl;

/// The PocketPilot database, on SQLite (the default: one file in the data directory) or
/// on PostgreSQL (a team server).
///
/// Cheap to clone (the backend is shared); `Send + Sync`. Every method is async; every
/// state change is one compare-and-set transaction whatever the backend, so several
/// processes sharing one database can never claim, run or resolve the same row twice:
/// the loser gets [`Error::Conflict`] or [`Error::AlreadyResolved`].
#[derive(Debug, Clone)]
pub struct Store {
    backend: Backend,
    clock: Arc<dyn Clock>,
}

/// Which database a [`Store`] talks to.
#[derive(Debug, Clone)]
pub(crate) enum Backend {
    /// One SQLite file; its calls run in batches on the blocking pool.
    Sqlite(Arc<Queue>),
    /// A PostgreSQL database shared by the processes of a team server.
    Postgres(Arc<PgStore>),
}

impl Store {
    /// Opens the SQLite database at `path` (creating it, mode 0600 on Unix, and applying
    /// any missing migrations), with times from the system clock. Blocks: call it before
    /// the runtime starts or from a blocking task ([`Store::connect`] is the async way).
    ///
    /// Fails with [`Error::NewerSchema`] when the file was written by a newer build.
    pub fn open(path: &Path) -> Result<Store> {
        Self::open_with_clock(path, Arc::new(SystemClock))
    }

    /// Like [`Store::open`], with every time taken from `clock`.
    pub fn open_with_clock(path: &Path, clock: Arc<dyn Clock>) -> Result<Store> {
        let store = Arc::new(SqliteStore::open_with_clock(path, Arc::clone(&clock))?);
        Ok(Store {
            backend: Backend::Sqlite(Arc::new(Queue::new(store))),
            clock,
        })
    }

    /// Opens the database `url` names (see [`StoreUrl`]), applying missing migrations,
    /// with every time taken from `clock`.
    pub async fn connect(url: &StoreUrl, clock: Arc<dyn Clock>) -> Result<Store> {
        match url {
            StoreUrl::Sqlite(path) => {
                let path = path.clone();
                run_blocking(move || Store::open_with_clock(&path, clock)).await
            }
            StoreUrl::Postgres(url) => {
                let postgres = PgStore::connect(url, Arc::clone(&clock)).await?;
                Ok(Store {
                    backend: Backend::Postgres(Arc::new(postgres)),
                    clock,
                })
            }
        }
    }

    /// The store's clock, for callers that must agree with it (running time, leases).
    pub fn clock(&self) -> Arc<dyn Clock> {
        Arc::clone(&self.clock)
    }

    /// The database file, on SQLite (`None` on a server database).
    pub fn path(&self) -> Option<&Path> {
        match &self.backend {
            Backend::Sqlite(queue) => Some(queue.store().path()),
            Backend::Postgres(_) => None,
        }
    }

    /// Which backend this is: `sqlite` or `postgres` (for `doctor` and logs).
    pub fn backend_name(&self) -> &'static str {
        match &self.backend {
            Backend::Sqlite(_) => "sqlite",
            Backend::Postgres(_) => "postgres",
        }
    }

    /// The schema version of the open database (the number of migrations applied).
    pub async fn schema_version(&self) -> Result<i64> {
        match &self.backend {
            Backend::Sqlite(_) => self.sqlite(|store| store.schema_version()).await,
            Backend::Postgres(store) => store.schema_version().await,
        }
    }

    /// Copies the database to `dest` (SQLite's online backup: consistent while other
    /// processes write). A server database is backed up with its own tools
    /// ([`Error::Unsupported`]).
    pub async fn backup_to(&self, dest: &Path) -> Result<()> {
        let dest = dest.to_path_buf();
        match &self.backend {
            // Outside any batch: the backup reads on a connection of its own, and in a
            // batch it would hold the write lock for as long as it takes.
            Backend::Sqlite(queue) => queue.call_alone(move |store| store.backup_to(&dest)).await,
            Backend::Postgres(_) => Err(Error::Unsupported {
                what: "backup",
                backend: "postgres",
                hint: "back the database up with pg_dump (docs/team.md)",
            }),
        }
    }

    /// Puts the SQLite backup `backup` in place of the database file `database` (no
    /// process may have it open); see the backup module for the checks.
    pub async fn restore_file(backup: &Path, database: &Path) -> Result<()> {
        let (backup, database) = (backup.to_path_buf(), database.to_path_buf());
        run_blocking(move || SqliteStore::restore_file(&backup, &database)).await
    }

    /// Waits until an event with a sequence number above `after_seq` may have been
    /// stored, or `at_most` passes, whichever comes first. Callers then read with
    /// [`Store::events_after`]; a wake-up without new events is harmless.
    ///
    /// SQLite has no change feed across processes, so this waits `at_most` (polling).
    /// PostgreSQL wakes as soon as a transaction that appended events commits (any
    /// process's: `LISTEN`/`NOTIFY` on a dedicated connection), holding no pooled
    /// connection while it waits.
    pub async fn wait_for_events(&self, after_seq: i64, at_most: Duration) {
        match &self.backend {
            Backend::Sqlite(_) => tokio::time::sleep(at_most).await,
            Backend::Postgres(store) => store.wait_for_events(after_seq, at_most).await,
        }
    }

    /// Runs one synchronous SQLite call through the queue (only ever called on the
    /// SQLite backend: the methods dispatch on the backend first).
    async fn sqlite<T, F>(&self, call: F) -> Result<T>
    where
        F: FnOnce(&SqliteStore) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        match &self.backend {
            Backend::Sqlite(queue) => queue.call(call).await,
            Backend::Postgres(_) => Err(Error::Unsupported {
                what: "an SQLite call",
                backend: "postgres",
                hint: "this is a bug: the call should have gone to the PostgreSQL backend",
            }),
        }
    }
}

/// Runs `work` on tokio's blocking pool; a panic in it becomes [`Error::Worker`].
async fn run_blocking<T, F>(work: F) -> Result<T>
where
    F: FnOnce() -> Result<T> + Send + 'static,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|error| Error::Worker(error.to_string()))?
}
