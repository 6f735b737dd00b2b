//! Where the database is: `[store] url` in the config.

use std::fmt;
use std::path::PathBuf;

use crate::error::{Error, Result};

/// A database address: `sqlite:///absolute/path/pocketpilot.db` (or `sqlite://` plus a
/// path relative to the current directory) or `postgres://user:password@host:port/db`
/// (`postgresql://` too, with libpq's key=value options after `?`).
#[derive(Clone, PartialEq, Eq)]
pub enum StoreUrl {
    /// An SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL connection string, as given.
    Postgres(String),
}

impl StoreUrl {
    /// Parses `text`; [`Error::BadUrl`] for any other scheme or an empty path.
    pub fn parse(text: &str) -> Result<StoreUrl> {
        let bad = |reason: &str| Error::BadUrl {
            url: redact(text),
            reason: reason.to_owned(),
        };
        if let Some(path) = text.strip_prefix("sqlite://") {
            if path.is_empty() {
                return Err(bad("an sqlite:// address needs a file path"));
            }
            return Ok(StoreUrl::Sqlite(PathBuf::from(path)));
        }
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            return Ok(StoreUrl::Postgres(text.to_owned()));
        }
        Err(bad("the address must start with sqlite:// or postgres://"))
    }

    /// Where the database is, for a process's first lines: `SQLite <path>`, or
    /// `PostgreSQL <user>@<host:port>/<database>` without the password and without the
    /// options after `?` (which may carry one).
    pub fn location(&self) -> String {
        match self {
            StoreUrl::Sqlite(path) => format!("SQLite {}", path.display()),
            StoreUrl::Postgres(url) => {
                let rest = url.split_once("://").map_or(url.as_str(), |(_, rest)| rest);
                let rest = rest.split_once('?').map_or(rest, |(before, _)| before);
                let (user, place) = match rest.rsplit_once('@') {
                    Some((credentials, place)) => (
                        credentials
                            .split_once(':')
                            .map_or(credentials, |(user, _)| user),
                        place,
                    ),
                    None => ("", rest),
                };
                let (host, database) = place.split_once('/').unwrap_or((place, ""));
                let host = if host.is_empty() {
                    "(local socket)"
                } else {
                    host
                };
                let database = if database.is_empty() {
                    "(default database)"
                } else {
                    database
                };
                if user.is_empty() {
                    format!("PostgreSQL {host}/{database}")
                } else {
                    format!("PostgreSQL {user}@{host}/{database}")
                }
            }
        }
    }
}

/// `text` with any password replaced by `***` (for errors and logs).
pub(crate) fn redact(text: &str) -> String {
    let Some((scheme, rest)) = text.split_once("://") else {
        return text.to_owned();
    };
    let Some((credentials, host)) = rest.rsplit_once('@') else {
        return text.to_owned();
    };
    match credentials.split_once(':') {
        Some((user, _password)) => format!("{scheme}://{user}:***@{host}"),
        None => text.to_owned(),
    }
}

impl fmt::Display for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreUrl::Sqlite(path) => write!(f, "sqlite://{}", path.display()),
            StoreUrl::Postgres(url) => f.write_str(&redact(url)),
        }
    }
}

impl fmt::Debug for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse_by_scheme() {
        assert_eq!(
            StoreUrl::parse("sqlite:///var/pp/pocketpilot.db").unwrap(),
            StoreUrl::Sqlite(PathBuf::from("/var/pp/pocketpilot.db"))
        );
        assert_eq!(
            StoreUrl::parse("sqlite://data/pp.db").unwrap(),
            StoreUrl::Sqlite(PathBuf::from("data/pp.db"))
        );
        let postgres = "postgresql://pp@db.internal:5432/pocketpilot";
        assert_eq!(
            StoreUrl::parse(postgres).unwrap(),
            StoreUrl::Postgres(postgres.to_owned())
        );
        for bad in ["sqlite://", "mysql://x/y", "/var/pp.db", ""] {
            let error = StoreUrl::parse(bad).unwrap_err().to_string();
            assert!(error.contains("sqlite://"), "{bad}: {error}");
        }
    }

    #[test]
    fn the_location_names_host_and_database_never_the_password() {
        let location = |url: &str| StoreUrl::parse(url).unwrap().location();
        assert_eq!(
            location("postgres://pp:s3cret@db.internal:5433/team?sslmode=require&password=x"),
            "PostgreSQL pp@db.internal:5433/team"
        );
        assert_eq!(
            location("postgresql://db/pocketpilot"),
            "PostgreSQL db/pocketpilot"
        );
        assert_eq!(
            location("postgres://pp@/team?host=/run/postgresql"),
            "PostgreSQL pp@(local socket)/team"
        );
        assert_eq!(
            location("sqlite:///var/pp/pocketpilot.db"),
            "SQLite /var/pp/pocketpilot.db"
        );
    }

    #[test]
    fn passwords_never_reach_errors_or_logs() {
        let url = "postgres://pp:s3cret@db:5432/pp";
        let shown = StoreUrl::parse(url).unwrap().to_string();
        assert_eq!(shown, "postgres://pp:***@db:5432/pp");
        let error = StoreUrl::parse("mysql://pp:s3cret@db/pp")
            .unwrap_err()
            .to_string();
        assert!(!error.contains("s3cret"), "{error}");
    }
}
