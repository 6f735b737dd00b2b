//! The operator's road to the memory file: read it, and replace it if it is still the
//! version read (compare-and-swap), on the blocking pool, each change audited
//! `memory_updated` with `actor = operator` (no approval card: the operator is the person
//! approvals ask). The agent's road is `memory_write`, which always stops for approval.
//!
//! The file work is `pp_tools::memory`'s (through a jail on the data directory), on the
//! blocking pool; this service adds the audit row (the async store's).

use std::sync::Arc;

use pp_store::Store;
use pp_tools::memory;
use pp_types::AuditAction;

pub use pp_tools::memory::{MemoryError, MemorySettings, Snapshot as MemorySnapshot};

use crate::audit::OperatorAudit;
use crate::error::{Result, blocking};

/// The operator's memory service. Cheap to clone.
#[derive(Clone)]
pub struct MemoryService {
    settings: Arc<MemorySettings>,
    /// Where audit rows go.
    audit: OperatorAudit,
}

impl std::fmt::Debug for MemoryService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryService")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl MemoryService {
    /// A service over the memory file of `settings`, auditing into `store` (the one the
    /// task service runs on).
    pub fn new(settings: MemorySettings, store: Store) -> Self {
        Self {
            settings: Arc::new(settings),
            audit: OperatorAudit::new(store),
        }
    }

    /// The same service, its audit rows naming the team user `user` (team mode: who
    /// changes the memory; `None`: the operator).
    #[must_use]
    pub fn as_user(&self, user: Option<&str>) -> Self {
        Self {
            settings: Arc::clone(&self.settings),
            audit: self.audit.as_user(user),
        }
    }

    /// Where the memory lives.
    pub fn settings(&self) -> &MemorySettings {
        &self.settings
    }

    /// The memory now: `{content, version}` (empty and `absent` when there is none).
    pub async fn get(&self) -> Result<MemorySnapshot> {
        let memory = self.settings.memory();
        Ok(blocking(move || memory.read()).await??)
    }

    /// Replaces the memory with `content` if its version is still `expected`; otherwise
    /// [`MemoryError::VersionMismatch`] and nothing is written. Audited `memory_updated`.
    pub async fn put_if_version(&self, expected: &str, content: String) -> Result<MemorySnapshot> {
        let memory = self.settings.memory();
        let expected = expected.to_owned();
        let snapshot = blocking(move || {
            let jail = memory.open()?;
            memory.replace_if(&jail, &expected, &content)
        })
        .await??;
        let detail = format!(
            "{} bytes, version {}",
            snapshot.content.len(),
            snapshot.version
        );
        self.audit
            .record(
                AuditAction::MemoryUpdated,
                memory::MEMORY_FILE.to_owned(),
                detail,
            )
            .await?;
        Ok(snapshot)
    }
}
