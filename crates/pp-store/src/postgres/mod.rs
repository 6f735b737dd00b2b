//! The PostgreSQL backend: a pool of `tokio-postgres` connections (`deadpool-postgres`),
//! async methods with the same names, arguments and meaning as the SQLite backend's, and
//! the schema in `migrations/postgres/`, applied on connect under an advisory lock (so
//! several workers starting together migrate once).
//!
//! Compare-and-set changes are single `UPDATE … WHERE state = … RETURNING` statements or
//! `SELECT … FOR UPDATE` inside one transaction; a claim skips rows another worker holds
//! (`FOR UPDATE SKIP LOCKED`).

mod schema;

use std::sync::Arc;

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod};
use pp_types::{Clock, Timestamp};

use crate::store::url::redact;
use crate::{Error, Result};

/// Connections in the pool: a worker holds one per store call, briefly.
const POOL_SIZE: usize = 16;

/// The PostgreSQL database of a team server.
pub(crate) struct PgStore {
    /// The connection pool.
    pool: Pool,
    /// Where every stored time comes from (as on SQLite).
    clock: Arc<dyn Clock>,
    /// The address, password hidden, for `Debug` and errors.
    shown: String,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore").field("url", &self.shown).finish()
    }
}

impl PgStore {
    /// Connects to `url`, applies missing migrations and returns the store.
    pub(crate) async fn connect(url: &str, clock: Arc<dyn Clock>) -> Result<PgStore> {
        let shown = redact(url);
        let config: tokio_postgres::Config = url.parse().map_err(|error| Error::BadUrl {
            url: shown.clone(),
            reason: format!("{error}"),
        })?;
        let manager = Manager::from_config(
            config,
            tokio_postgres::NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .build()
            .map_err(|error| Error::Postgres(format!("cannot build the pool: {error}")))?;
        let store = PgStore { pool, clock, shown };
        let mut client = store.client().await?;
        schema::migrate(&mut client).await?;
        Ok(store)
    }

    /// One pooled connection.
    pub(crate) async fn client(&self) -> Result<Object> {
        self.pool
            .get()
            .await
            .map_err(|error| Error::Postgres(format!("cannot connect to {}: {error}", self.shown)))
    }

    /// The current time by the store's clock.
    pub(crate) fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// Waits until a notification says an event above `after_seq` was committed, or
    /// `at_most` passes.
    pub(crate) async fn wait_for_events(&self, after_seq: i64, at_most: std::time::Duration) {
        // The LISTEN connection comes with the events backend; until then, poll.
        let _ = after_seq;
        tokio::time::sleep(at_most).await;
    }

    /// The schema version of the database (the newest migration applied).
    pub(crate) async fn schema_version(&self) -> Result<i64> {
        schema::version(&**self.client().await?).await
    }
}

impl From<tokio_postgres::Error> for Error {
    fn from(error: tokio_postgres::Error) -> Self {
        // The server's own message (constraint, serialization failure) is the useful part.
        match error.as_db_error() {
            Some(db) => Error::Postgres(format!("{}: {}", db.code().code(), db.message())),
            None => Error::Postgres(error.to_string()),
        }
    }
}
