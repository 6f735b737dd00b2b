//! The operator's services for what the agent knows: its skills ([`SkillsService`]:
//! list, show, write, install, remove) and its memory file ([`MemoryService`]: read, and
//! replace if still the version read). The agent's own road to both goes through the
//! gate (`memory_write` always stops for approval); this is the person's road, used by
//! the API (`/api/skills`, `/api/memory`), the CLI (`pocketpilot skills`, `pocketpilot
//! memory`) and the console.
//!
//! In team mode both live in the database ([`TeamKnowledge`]): every change is the
//! database's compare-and-swap, and each process reads them through a private mirror
//! folder, so the tools' jails work on them as on the data directory's files.
//!
//! It sits beside the task service, above `pp-tools` (which does the file work, every
//! access through a jail) and `pp-store` (which it reaches only to append its audit rows,
//! through a narrow handle); nothing here knows about tasks. Every change is audited
//! with `actor = operator` and no approval card: the operator is the person approvals
//! ask. The file work runs on the blocking pool.

mod audit;
mod error;
mod memory;
mod skills;
mod team;

pub use error::{Error, Result};
pub use memory::{MemoryError, MemoryService, MemorySettings, MemorySnapshot};
pub use skills::{
    SkillSummary, SkillView, SkillsError, SkillsService, SkillsSettings, Written as SkillWritten,
};
pub use team::{Imported, TeamKnowledge, shared_dir_refusal};
