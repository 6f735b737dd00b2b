//! A fresh PostgreSQL schema for a test outside the store's own suite: on the server
//! `PP_TEST_POSTGRES_URL` names (the store suite's cluster under `scripts/test.sh`),
//! dropped with everything in it when the [`Schema`] is dropped. Without the variable a
//! test skips with a line saying how to run it; under CI (`CI=true`) that is a failure.

use std::sync::atomic::{AtomicU64, Ordering};

use pp_store::StoreUrl;

/// The variable naming the PostgreSQL server.
pub const POSTGRES_URL_VAR: &str = "PP_TEST_POSTGRES_URL";

/// A fresh schema on the test server, dropped on drop.
#[derive(Debug)]
pub struct Schema {
    server: String,
    name: String,
}

impl Schema {
    /// A fresh schema named `<prefix>_<pid>_<n>_<nanos>` for the test `test`, or `None`
    /// (after a skip line) when no server is named. Panics under CI without one.
    #[expect(
        clippy::disallowed_methods,
        clippy::print_stderr,
        reason = "the suite's switch (which server) and its skip line; CI=true fails instead"
    )]
    pub fn create(prefix: &str, test: &str) -> Option<Schema> {
        let Some(server) = std::env::var(POSTGRES_URL_VAR)
            .ok()
            .filter(|url| !url.is_empty())
        else {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "{POSTGRES_URL_VAR} must be set under CI ({test})"
            );
            eprintln!("skipping {test} on PostgreSQL: set {POSTGRES_URL_VAR} to run it");
            return None;
        };
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.subsec_nanos());
        let name = format!(
            "{prefix}_{}_{}_{nanos}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        psql(&server, &format!("CREATE SCHEMA {name}"));
        Some(Schema { server, name })
    }

    /// The schema's address: the server's with `search_path` set to the schema.
    pub fn url(&self) -> String {
        let separator = if self.server.contains('?') { '&' } else { '?' };
        format!(
            "{}{separator}options=-csearch_path%3D{}",
            self.server, self.name
        )
    }

    /// [`Schema::url`] as the store takes it.
    pub fn store_url(&self) -> StoreUrl {
        match StoreUrl::parse(&self.url()) {
            Ok(url) => url,
            Err(error) => panic!("the test server's address: {error}"),
        }
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        psql(
            &self.server,
            &format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name),
        );
    }
}

/// Runs one SQL statement with `psql` (the tests need no PostgreSQL client of their own).
fn psql(server: &str, sql: &str) {
    let status = std::process::Command::new("psql")
        .args(["-q", "-v", "ON_ERROR_STOP=1", server, "-c"])
        .arg(format!("SET client_min_messages = warning; {sql}"))
        .status();
    match status {
        Ok(status) if status.success() => {}
        other => panic!("psql failed ({other:?}): {sql}"),
    }
}
