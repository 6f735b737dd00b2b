//! What the CLI's maintenance commands need from the store, through the service: backup
//! of the SQLite file, pruning, the database's backend and schema version
//! (`doctor`). The server and the CLI never call the store themselves.

use std::path::Path;
use std::time::Duration;

use pp_store::PruneReport;

use crate::error::Result;
use crate::service::TaskService;

impl TaskService {
    /// Copies the database to `dest` (SQLite's online backup; a PostgreSQL database is
    /// backed up with `pg_dump` and answers [`pp_store::Error::Unsupported`]).
    pub async fn backup_to(&self, dest: &Path) -> Result<()> {
        Ok(self.store().backup_to(dest).await?)
    }

    /// Drops the history of tasks finished more than `older_than` ago.
    pub async fn prune(&self, older_than: Duration) -> Result<PruneReport> {
        Ok(self.store().prune(older_than).await?)
    }

    /// The database's backend (`sqlite` or `postgres`) and schema version.
    pub async fn database_status(&self) -> Result<(&'static str, i64)> {
        let store = self.store();
        Ok((store.backend_name(), store.schema_version().await?))
    }
}
