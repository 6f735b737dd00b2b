//! The two backends every generic test runs on, and the fixture that opens either.
//!
//! A generic test is a plain `async fn name(db: TestDb)` registered with
//! [`both!`](crate::both): it runs once on a fresh SQLite file (`name::sqlite`) and once
//! in a fresh PostgreSQL schema (`name::postgres`). PostgreSQL comes from
//! `PP_TEST_POSTGRES_URL` (e.g. `postgres://postgres@127.0.0.1:54329/postgres`); each
//! test creates its own schema `conf_…` there, connects with
//! `options=-csearch_path=<schema>` so the store's unqualified SQL lands in it, and drops
//! it when the test ends (even when it fails). Without the variable the PostgreSQL
//! variant prints a skip line and passes, except under CI (`CI=true`), where it fails.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use pp_store::{Store, StoreUrl};
use pp_types::ManualClock;
use tempfile::TempDir;

use crate::START;

/// The variable naming the PostgreSQL server the generic tests also run on.
const POSTGRES_URL_VAR: &str = "PP_TEST_POSTGRES_URL";

/// Registers each `async fn NAME(db: TestDb)` as two tests, `NAME::sqlite` and
/// `NAME::postgres`, each on a fresh database of its backend.
macro_rules! both {
    ($($name:ident),+ $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$name($crate::TestDb::sqlite().await).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                if let Some(db) = $crate::TestDb::postgres(module_path!()).await {
                    super::$name(db).await;
                }
            }
        }
    )+};
}

/// Which database a [`TestDb`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Backend {
    /// A file in a temporary directory.
    Sqlite,
    /// A schema of its own on the server `PP_TEST_POSTGRES_URL` names.
    Postgres,
}

/// A fresh database on a manual clock standing at [`START`]: tests move time with
/// `db.clock.advance(..)`, never by sleeping.
pub(crate) struct TestDb {
    /// The store under test.
    pub(crate) store: Store,
    /// The clock every store this fixture opens runs on.
    pub(crate) clock: Arc<ManualClock>,
    /// Where the database is, for opening it again (as another process would).
    pub(crate) url: StoreUrl,
    /// Which backend.
    pub(crate) backend: Backend,
    /// What to clean up: the temporary directory, or the schema (dropped on drop).
    place: Place,
}

/// What a [`TestDb`] owns besides its store.
enum Place {
    /// The SQLite file's directory, removed on drop.
    Dir(TempDir),
    /// The PostgreSQL schema, dropped on drop.
    Schema(SchemaGuard),
}

impl TestDb {
    /// A fresh SQLite file in a temporary directory.
    pub(crate) async fn sqlite() -> TestDb {
        let dir = tempfile::tempdir().unwrap();
        let url = StoreUrl::Sqlite(dir.path().join("pocketpilot.db"));
        let clock = Arc::new(ManualClock::new(START));
        let store = Store::connect(&url, clock.clone()).await.unwrap();
        TestDb {
            store,
            clock,
            url,
            backend: Backend::Sqlite,
            place: Place::Dir(dir),
        }
    }

    /// A fresh schema on the PostgreSQL server `PP_TEST_POSTGRES_URL` names, or `None`
    /// (after a skip line) without one; under CI a missing server fails the test.
    pub(crate) async fn postgres(test: &str) -> Option<TestDb> {
        let Some(server) = postgres_url() else {
            skip(test);
            return None;
        };
        let schema = SchemaGuard::create(&server).await;
        let url = StoreUrl::parse(&with_search_path(&server, &schema.name)).unwrap();
        let clock = Arc::new(ManualClock::new(START));
        let store = Store::connect(&url, clock.clone()).await.unwrap();
        Some(TestDb {
            store,
            clock,
            url,
            backend: Backend::Postgres,
            place: Place::Schema(schema),
        })
    }

    /// A second, independent store on the same database (its own connections, as
    /// another process would have), on the same clock.
    pub(crate) async fn open_again(&self) -> Store {
        Store::connect(&self.url, self.clock.clone()).await.unwrap()
    }

    /// The SQLite file (SQLite-only tests).
    pub(crate) fn path(&self) -> PathBuf {
        self.dir().join("pocketpilot.db")
    }

    /// The SQLite file's directory (SQLite-only tests).
    pub(crate) fn dir(&self) -> &Path {
        match &self.place {
            Place::Dir(dir) => dir.path(),
            Place::Schema(schema) => {
                panic!(
                    "an SQLite-only test ran on PostgreSQL (schema {})",
                    schema.name
                )
            }
        }
    }

    /// The rows of `sql`, a query of one text column in SQL both backends accept, read
    /// behind the store's back on a connection of its own (for checking what a row
    /// really holds).
    pub(crate) async fn raw_texts(&self, sql: &str) -> Vec<String> {
        match &self.place {
            Place::Dir(_) => {
                let (path, sql) = (self.path(), sql.to_owned());
                tokio::task::spawn_blocking(move || {
                    let connection = rusqlite::Connection::open(path).unwrap();
                    let mut statement = connection.prepare(&sql).unwrap();
                    statement
                        .query_map([], |row| row.get::<_, String>(0))
                        .unwrap()
                        .collect::<rusqlite::Result<Vec<_>>>()
                        .unwrap()
                })
                .await
                .unwrap()
            }
            Place::Schema(schema) => {
                let client = admin(&with_search_path(&schema.server, &schema.name)).await;
                let rows = client.query(sql, &[]).await.unwrap();
                rows.iter().map(|row| row.get::<_, String>(0)).collect()
            }
        }
    }

    /// A raw SQLite connection, for poking at rows behind the store's back
    /// (SQLite-only tests).
    pub(crate) fn raw(&self) -> rusqlite::Connection {
        rusqlite::Connection::open(self.path()).unwrap()
    }
}

/// `PP_TEST_POSTGRES_URL`, if set and not empty.
#[expect(
    clippy::disallowed_methods,
    reason = "the test suite's one switch: which PostgreSQL server to also run on"
)]
fn postgres_url() -> Option<String> {
    std::env::var(POSTGRES_URL_VAR)
        .ok()
        .filter(|url| !url.is_empty())
}

/// Says the PostgreSQL variant of `test` was skipped; under CI that is a failure.
#[expect(
    clippy::disallowed_methods,
    clippy::print_stderr,
    reason = "CI=true turns a skip into a failure; the skip line is the test's output"
)]
fn skip(test: &str) {
    if std::env::var("CI").is_ok_and(|ci| ci == "true") {
        panic!("{POSTGRES_URL_VAR} must be set under CI ({test})");
    }
    eprintln!("skipping {test} on PostgreSQL: set {POSTGRES_URL_VAR} to run it");
}

/// `server` with `options=-csearch_path=<schema>` added to its query string.
fn with_search_path(server: &str, schema: &str) -> String {
    let separator = if server.contains('?') { '&' } else { '?' };
    format!("{server}{separator}options=-csearch_path%3D{schema}")
}

/// A schema of one test's own; dropped (with everything in it) on drop.
pub(crate) struct SchemaGuard {
    /// The server, as given.
    server: String,
    /// `conf_<pid>_<n>_<nanos>`: unique across the tests and processes sharing a server.
    pub(crate) name: String,
}

impl SchemaGuard {
    /// Creates a fresh, empty schema on `server`.
    pub(crate) async fn create(server: &str) -> SchemaGuard {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let name = format!(
            "conf_{}_{}_{nanos}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let client = admin(server).await;
        client
            .batch_execute(&format!("CREATE SCHEMA {name}"))
            .await
            .unwrap();
        SchemaGuard {
            server: server.to_owned(),
            name,
        }
    }
}

impl Drop for SchemaGuard {
    /// Drops the schema from a thread of its own (drop cannot await, and may run while
    /// a failed test unwinds).
    fn drop(&mut self) {
        let (server, name) = (self.server.clone(), self.name.clone());
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async {
                admin(&server)
                    .await
                    .batch_execute(&format!("DROP SCHEMA IF EXISTS {name} CASCADE"))
                    .await
            })
        })
        .join();
        if !matches!(dropped, Ok(Ok(()))) && !std::thread::panicking() {
            panic!("could not drop schema {}: {dropped:?}", self.name);
        }
    }
}

/// A plain connection to `server` (no schema), for creating and dropping schemas.
async fn admin(server: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(server, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
}
