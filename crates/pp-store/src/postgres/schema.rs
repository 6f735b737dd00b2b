//! Versioned migrations for PostgreSQL (`migrations/postgres/NNNN_*.sql`), tracked in
//! `pp_schema_migrations` and applied under a session advisory lock: workers starting
//! together wait for the first to finish, then find nothing to do.

use tokio_postgres::{Client, GenericClient};

use crate::error::{Error, Result};

/// Every migration, in order; version N is `MIGRATIONS[N - 1]`.
const MIGRATIONS: &[&str] = &[
    include_str!("../../migrations/postgres/0001_init.sql"),
    include_str!("../../migrations/postgres/0002_workers.sql"),
    include_str!("../../migrations/postgres/0003_users.sql"),
    include_str!("../../migrations/postgres/0004_change_modes.sql"),
    include_str!("../../migrations/postgres/0005_edited_preview.sql"),
    include_str!("../../migrations/postgres/0006_changesets.sql"),
    include_str!("../../migrations/postgres/0007_team_knowledge.sql"),
    include_str!("../../migrations/postgres/0008_started_calls.sql"),
    include_str!("../../migrations/postgres/0009_cancel_requests.sql"),
    include_str!("../../migrations/postgres/0010_via.sql"),
    include_str!("../../migrations/postgres/0011_approval_links.sql"),
    include_str!("../../migrations/postgres/0012_remote_messages.sql"),
];

/// The advisory lock key held while migrating ("ppmigrat" as bytes).
const MIGRATION_LOCK: i64 = 0x7070_6d69_6772_6174;

/// The newest schema version this build knows.
pub(crate) const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Applies every missing migration, each in its own transaction.
pub(crate) async fn migrate(client: &mut Client) -> Result<()> {
    client
        .execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK])
        .await?;
    let outcome = apply(client).await;
    let unlock = client
        .execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK])
        .await;
    outcome?;
    unlock?;
    Ok(())
}

async fn apply(client: &mut Client) -> Result<()> {
    client
        .batch_execute(
            "CREATE TABLE IF NOT EXISTS pp_schema_migrations (\
                version BIGINT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())",
        )
        .await?;
    let found = version(&*client).await?;
    if found > SCHEMA_VERSION {
        return Err(Error::NewerSchema {
            found,
            supported: SCHEMA_VERSION,
        });
    }
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
        let transaction = client.transaction().await?;
        transaction.batch_execute(sql).await?;
        transaction
            .execute(
                "INSERT INTO pp_schema_migrations (version) VALUES ($1)",
                &[&(index as i64 + 1)],
            )
            .await?;
        transaction.commit().await?;
    }
    Ok(())
}

/// The newest migration applied (0 on an empty database).
pub(crate) async fn version(client: &impl GenericClient) -> Result<i64> {
    let row = client
        .query_one(
            "SELECT COALESCE(MAX(version), 0) FROM pp_schema_migrations",
            &[],
        )
        .await?;
    Ok(row.get(0))
}
