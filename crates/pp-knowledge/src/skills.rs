//! The operator's road to skills: list, show, write, install and remove, each on the
//! blocking pool, each change audited with `actor = operator` (no approval card: the
//! operator is the person approvals ask).
//!
//! The file work is `pp_tools::skills`' (every access through a jail); this service adds
//! the audit row (the async store's) and keeps the disk off the async threads. Front ends get
//! plain data ([`SkillSummary`], [`SkillView`]) and never touch `pp-tools` themselves.

use std::path::PathBuf;
use std::sync::Arc;

use pp_store::Store;
use pp_tools::skills::{self, Catalog, SkillEntry};
use pp_types::AuditAction;
use serde::Serialize;

pub use pp_tools::SkillsSettings;
pub use pp_tools::skills::{SkillsError, Written};

use crate::audit::OperatorAudit;
use crate::error::{Result, blocking};

/// One skill as listed: `GET /api/skills`, `pocketpilot skills list --json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkillSummary {
    /// The skill's folder name.
    pub name: String,
    /// Its description (empty for an invalid skill).
    pub description: String,
    /// Whether it is offered to the model.
    pub valid: bool,
    /// Why it is not valid.
    pub reason: Option<String>,
    /// `home` (the data directory's `skills/`) or the read-only folder's path.
    pub source: String,
    /// Whether it comes from a read-only `[skills] dirs` folder.
    pub read_only: bool,
}

impl SkillSummary {
    fn of(entry: &SkillEntry) -> Self {
        Self {
            name: entry.name.clone(),
            description: entry.description().to_owned(),
            valid: entry.valid(),
            reason: entry.reason().map(str::to_owned),
            source: entry.source.label(),
            read_only: entry.source.read_only(),
        }
    }
}

/// One skill in full: `GET /api/skills/{name}`, `pocketpilot skills show NAME --json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkillView {
    /// Name, description, validity, source.
    #[serde(flatten)]
    pub summary: SkillSummary,
    /// The text of `SKILL.md` (`None` when it cannot be read).
    pub skill_md: Option<String>,
    /// The skill's other files.
    pub files: Vec<String>,
    /// Front matter fields kept and ignored (`license`, `allowed-tools`, `metadata`, …).
    pub other_fields: Vec<String>,
    /// The skill's version (`sha256:…` over its files): what `If-Match` names to change
    /// it only if no one else did meanwhile. `None` when its folder cannot be read.
    pub version: Option<String>,
}

/// The operator's skills service. Cheap to clone.
#[derive(Clone)]
pub struct SkillsService {
    settings: Arc<SkillsSettings>,
    /// Where audit rows go.
    audit: OperatorAudit,
}

impl std::fmt::Debug for SkillsService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkillsService")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl SkillsService {
    /// A service over the skills folders of `settings`, auditing into `store` (the one
    /// the task service runs on).
    pub fn new(settings: SkillsSettings, store: Store) -> Self {
        Self {
            settings: Arc::new(settings),
            audit: OperatorAudit::new(store),
        }
    }

    /// The same service, its audit rows naming the team user `user` (team mode: who
    /// changes the skills; `None`: the operator).
    #[must_use]
    pub fn as_user(&self, user: Option<&str>) -> Self {
        Self {
            settings: Arc::clone(&self.settings),
            audit: self.audit.as_user(user),
        }
    }

    /// Where skills live.
    pub fn settings(&self) -> &SkillsSettings {
        &self.settings
    }

    /// Every skill, valid or not, in catalog order.
    pub async fn list(&self) -> Result<Vec<SkillSummary>> {
        let settings = Arc::clone(&self.settings);
        blocking(move || {
            skills::refresh(&settings)?;
            Ok(Catalog::load(&settings)
                .skills
                .iter()
                .map(SkillSummary::of)
                .collect())
        })
        .await?
    }

    /// One skill with its `SKILL.md` and files.
    pub async fn show(&self, name: &str) -> Result<SkillView> {
        let (settings, name) = (Arc::clone(&self.settings), name.to_owned());
        let (detail, version) = blocking(move || {
            skills::refresh(&settings)?;
            let detail = skills::show(&settings, &name)?;
            let version = match &detail.entry.source {
                skills::SkillSource::Home => skills::version(&settings, &name).ok().flatten(),
                skills::SkillSource::Dir(dir) => {
                    let folder = SkillsSettings::new(dir.clone());
                    skills::version(&folder, &name).ok().flatten()
                }
            };
            Ok::<_, SkillsError>((detail, version))
        })
        .await??;
        Ok(SkillView {
            version,
            summary: SkillSummary::of(&detail.entry),
            other_fields: detail
                .entry
                .status
                .as_ref()
                .map(|skill| skill.other_fields.clone())
                .unwrap_or_default(),
            skill_md: detail.skill_md,
            files: detail.files,
        })
    }

    /// Writes (creates) the skill `name`'s `SKILL.md`, which must be a valid skill of
    /// that name, if the skill is still the version `if_match` names (`None`: whatever
    /// it is); audited `skill_updated`.
    pub async fn put_skill_md(
        &self,
        name: &str,
        skill_md: String,
        if_match: Option<String>,
    ) -> Result<Written> {
        let (settings, owned) = (Arc::clone(&self.settings), name.to_owned());
        let written = blocking(move || {
            skills::change(&settings, &owned, if_match.as_deref(), |at| {
                skills::put_skill_md(at, &owned, &skill_md)
            })
        })
        .await??;
        self.audit(
            AuditAction::SkillUpdated,
            format!("{name}/SKILL.md"),
            written_detail(written),
        )
        .await?;
        Ok(written)
    }

    /// Writes one resource file of the skill `name`, if the skill is still the version
    /// `if_match` names (`None`: whatever it is); audited `skill_updated`.
    pub async fn put_file(
        &self,
        name: &str,
        path: &str,
        content: Vec<u8>,
        if_match: Option<String>,
    ) -> Result<Written> {
        let (settings, owned, file) =
            (Arc::clone(&self.settings), name.to_owned(), path.to_owned());
        let written = blocking(move || {
            skills::change(&settings, &owned, if_match.as_deref(), |at| {
                skills::put_file(at, &owned, &file, &content)
            })
        })
        .await??;
        self.audit(
            AuditAction::SkillUpdated,
            format!("{name}/{path}"),
            written_detail(written),
        )
        .await?;
        Ok(written)
    }

    /// Removes the skill `name` from the data directory (the team's database), if it is
    /// still the version `if_match` names (`None`: whatever it is); audited
    /// `skill_removed`.
    pub async fn remove(&self, name: &str, if_match: Option<String>) -> Result<()> {
        let (settings, owned) = (Arc::clone(&self.settings), name.to_owned());
        blocking(move || {
            skills::change(&settings, &owned, if_match.as_deref(), |at| {
                skills::remove(at, &owned)
            })
        })
        .await??;
        self.audit(
            AuditAction::SkillRemoved,
            name.to_owned(),
            "removed".to_owned(),
        )
        .await
    }

    /// Copies the skill folder `source` into the data directory (validated first);
    /// audited `skill_updated`. Returns the skill's name and the links left out.
    pub async fn install(&self, source: PathBuf) -> Result<(String, Vec<String>)> {
        let settings = Arc::clone(&self.settings);
        let detail = format!("installed from {}", source.display());
        let name = source
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        let (name, skipped) = blocking(move || {
            skills::change(&settings, &name, None, |at| skills::install(at, &source))
        })
        .await??;
        self.audit(AuditAction::SkillUpdated, name.clone(), detail)
            .await?;
        Ok((name, skipped))
    }

    async fn audit(&self, action: AuditAction, target: String, detail: String) -> Result<()> {
        self.audit.record(action, target, detail).await
    }
}

fn written_detail(written: Written) -> String {
    match written {
        Written::Created => "created".to_owned(),
        Written::Replaced => "replaced".to_owned(),
    }
}
