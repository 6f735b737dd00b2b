//! The PostgreSQL backend: a pool of `tokio-postgres` connections (`deadpool-postgres`),
//! async methods with the same names, arguments and meaning as the SQLite backend's, and
//! the schema in `migrations/postgres/`, applied on connect under an advisory lock (so
//! several workers starting together migrate once).
//!
//! Compare-and-set changes lock the row first (`SELECT … FOR NO KEY UPDATE` inside one
//! transaction, so the loser learns the state it lost to) or are single `UPDATE … WHERE
//! … RETURNING` statements; a claim skips rows another worker holds
//! (`FOR UPDATE SKIP LOCKED`), so concurrent workers never claim one task twice and never
//! wait for each other.
//!
//! Event order: every transaction that inserts events takes one advisory lock first
//! (`events::lock`), so sequence numbers commit in the order they are handed out and a
//! reader resuming after the last `seq` it saw never skips one. The same transaction
//! notifies `pp_events`; [`listener`] turns those notifications into wake-ups for
//! [`PgStore::wait_for_events`].
//!
//! `sslmode=require` connects over TLS with the server's certificate verified ([`tls`]);
//! `prefer` (the default) and `disable` connect in the clear.
//!
//! Every statement is schema-unqualified: the schema is the first on the connection's
//! `search_path` (`?options=-csearch_path%3Dteam` in the URL), which is also how tests
//! isolate themselves.

mod approvals;
mod audit;
mod cancel;
mod changes;
mod channels;
mod chat;
mod events;
mod knowledge;
mod links;
mod listener;
mod logins;
mod model_calls;
mod prune;
mod remote;
mod rows;
mod schedules;
mod schema;
mod started;
mod task_search;
mod tasks;
#[cfg(test)]
mod tests;
mod tls;
mod users;
mod workers;

use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{GenericClient, Manager, ManagerConfig, Object, Pool, RecyclingMethod};
use pp_types::{Clock, Timestamp};
use tokio::sync::watch;
use tokio_postgres::tls::{MakeTlsConnect, TlsConnect};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Row, Socket};

use crate::error::{Error, Result};
use crate::url::redact;

/// Connections in the pool: a worker holds one per store call, briefly.
const POOL_SIZE: usize = 16;

/// How long a new connection may take, unless the URL says (`connect_timeout=`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The PostgreSQL database of a team server.
pub(crate) struct PgStore {
    /// The connection pool.
    pool: Pool,
    /// Where every stored time comes from (as on SQLite).
    clock: Arc<dyn Clock>,
    /// The address, password hidden, for `Debug` and errors.
    shown: String,
    /// The highest event `seq` a notification announced (see [`listener`]).
    newest_seq: watch::Receiver<i64>,
    /// The task listening for notifications on its own connection; aborted on drop.
    listener: tokio::task::AbortHandle,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore").field("url", &self.shown).finish()
    }
}

impl Drop for PgStore {
    fn drop(&mut self) {
        self.listener.abort();
    }
}

/// `error` and its causes ("error performing TLS handshake: server does not support
/// TLS"), each said once.
fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let said = cause.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        source = cause.source();
    }
    text
}

/// What to do when a connection fails because the TLS modes of the URL and the server do
/// not match (`error` is the driver's text), or nothing when that is not why.
fn tls_hint(error: &str, ssl_mode: tokio_postgres::config::SslMode) -> &'static str {
    use tokio_postgres::config::SslMode;
    let lower = error.to_ascii_lowercase();
    if ssl_mode == SslMode::Require && lower.contains("does not support tls") {
        " (the URL says sslmode=require, but this server does not offer TLS: turn on `ssl` \
         in its postgresql.conf, or use sslmode=prefer or sslmode=disable on a private \
         network or a Unix socket; docs/team.md, \"TLS modes\")"
    } else if ssl_mode == SslMode::Require
        && (lower.contains("tls") || lower.contains("certificate"))
    {
        " (the URL says sslmode=require and the TLS handshake failed: the server's \
         certificate must be trusted by the system's roots or the file SSL_CERT_FILE names, \
         and be issued for the host name in the URL; docs/team.md, \"TLS modes\")"
    } else if ssl_mode != SslMode::Require
        && (lower.contains("no encryption") || lower.contains("ssl off"))
    {
        " (this server accepts only TLS connections: add sslmode=require to the URL; \
         docs/team.md, \"TLS modes\")"
    } else {
        ""
    }
}

impl PgStore {
    /// Connects to `url`, applies missing migrations, starts listening for event
    /// notifications and returns the store. `sslmode=require` connects over verified
    /// TLS ([`tls`]); otherwise in the clear.
    pub(crate) async fn connect(url: &str, clock: Arc<dyn Clock>) -> Result<PgStore> {
        let shown = redact(url);
        let mut config: tokio_postgres::Config = url.parse().map_err(|error| Error::BadUrl {
            url: shown.clone(),
            reason: format!("{error}"),
        })?;
        if config.get_connect_timeout().is_none() {
            // An unreachable server fails a call instead of hanging it for minutes.
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_ssl_mode() == tokio_postgres::config::SslMode::Require {
            let tls = tls::MakeRustls::new().map_err(|error| Error::BadUrl {
                url: shown.clone(),
                reason: format!("cannot set up TLS: {error}"),
            })?;
            Self::connect_with(config, shown, clock, tls).await
        } else {
            Self::connect_with(config, shown, clock, tokio_postgres::NoTls).await
        }
    }

    /// [`PgStore::connect`] with `tls` making every connection's TLS (or none).
    async fn connect_with<T>(
        config: tokio_postgres::Config,
        shown: String,
        clock: Arc<dyn Clock>,
        tls: T,
    ) -> Result<PgStore>
    where
        T: MakeTlsConnect<Socket> + Clone + Sync + Send + 'static,
        T::Stream: Sync + Send,
        T::TlsConnect: Sync + Send,
        <T::TlsConnect as TlsConnect<Socket>>::Future: Send,
    {
        let manager = Manager::from_config(
            config.clone(),
            tls.clone(),
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .build()
            .map_err(|error| Error::Postgres(format!("cannot build the pool: {error}")))?;
        let ssl_mode = config.get_ssl_mode();
        let mut client = pool.get().await.map_err(|error| {
            let error = with_causes(&error);
            let hint = tls_hint(&error, ssl_mode);
            Error::Postgres(format!("cannot connect to {shown}: {error}{hint}"))
        })?;
        schema::migrate(&mut client).await?;
        drop(client);
        let (newest_seq, listener) = listener::spawn(config, tls);
        Ok(PgStore {
            pool,
            clock,
            shown,
            newest_seq,
            listener,
        })
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
    /// `at_most` passes. Holds no pooled connection while waiting.
    pub(crate) async fn wait_for_events(&self, after_seq: i64, at_most: Duration) {
        let mut newest = self.newest_seq.clone();
        // An error means the listener is gone (the store is being dropped): wait no more.
        let _ = tokio::time::timeout(at_most, newest.wait_for(|seq| *seq > after_seq)).await;
    }

    /// The schema version of the database (the newest migration applied).
    pub(crate) async fn schema_version(&self) -> Result<i64> {
        schema::version(&**self.client().await?).await
    }
}

/// The parameters of one statement.
pub(crate) type Params<'a> = &'a [&'a (dyn ToSql + Sync)];

/// Runs `sql` (prepared once per connection) and returns its rows.
pub(crate) async fn query(
    db: &impl GenericClient,
    sql: &str,
    params: Params<'_>,
) -> Result<Vec<Row>> {
    let statement = db.prepare_cached(sql).await?;
    Ok(db.query(&statement, params).await?)
}

/// Runs `sql` and returns its one row, if any.
pub(crate) async fn query_opt(
    db: &impl GenericClient,
    sql: &str,
    params: Params<'_>,
) -> Result<Option<Row>> {
    let statement = db.prepare_cached(sql).await?;
    Ok(db.query_opt(&statement, params).await?)
}

/// Runs `sql` and returns its one row.
pub(crate) async fn query_one(
    db: &impl GenericClient,
    sql: &str,
    params: Params<'_>,
) -> Result<Row> {
    let statement = db.prepare_cached(sql).await?;
    Ok(db.query_one(&statement, params).await?)
}

/// Runs `sql` and returns how many rows it changed.
pub(crate) async fn execute(db: &impl GenericClient, sql: &str, params: Params<'_>) -> Result<u64> {
    let statement = db.prepare_cached(sql).await?;
    Ok(db.execute(&statement, params).await?)
}

/// A row count as the `usize` the SQLite backend returns.
pub(crate) fn count(rows: u64) -> usize {
    usize::try_from(rows).unwrap_or(usize::MAX)
}

/// Whether `error` is PostgreSQL refusing a duplicate key.
pub(crate) fn is_unique_violation(error: &tokio_postgres::Error) -> bool {
    error.code() == Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION)
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
