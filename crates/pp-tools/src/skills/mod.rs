//! Skills in the open Agent Skills format: a folder holding `SKILL.md` (YAML front matter
//! with `name` and `description`, then Markdown instructions) and optional resource files.
//!
//! Skills live in `skills/` in the data directory ([`SkillsSettings::home`], writable by
//! the operator) and in read-only folders (`[skills] dirs`). Never in a workspace: a
//! `SKILL.md` there is just a file. [`Catalog::load`] reads them all, each through a jail
//! of its own; invalid ones are listed with the reason and never offered to the model.
//! [`SkillsProvider`] puts the valid ones in the system prompt and offers `expand_skill`
//! and `read_skill_file`; the `manage` functions ([`put_skill_md`], [`install`], [`remove`], …)
//! are the operator's changes.
//!
//! A skill is text for the model, never a permission: front matter such as
//! `allowed-tools` is kept and ignored, and nothing a skill says changes the gate.

mod catalog;
mod expand_skill;
mod manage;
mod parse;
mod provider;
mod read_skill_file;
mod shared;

use std::path::PathBuf;

pub use catalog::{Catalog, MAX_FILES_PER_SKILL, MAX_SKILLS_PER_FOLDER, SkillEntry, SkillSource};
pub use manage::{
    MAX_INSTALL_BYTES, SkillDetail, SkillsError, Written, install, put_file, put_skill_md, remove,
    show,
};
pub use parse::{
    MAX_DESCRIPTION_CHARS, MAX_FRONT_MATTER_BYTES, ParsedSkill, parse_skill_md, valid_name,
};
pub use provider::SkillsProvider;
pub use shared::{
    SharedSkills, SkillFileBytes, SkillsMirror, StoredSkill, change, refresh, skill_version,
    version,
};

/// The file that makes a folder a skill.
pub const SKILL_FILE: &str = "SKILL.md";

/// The scope of the skills' roots in the gate (`PathRoot::key("skill", name)`).
pub const SKILL_SCOPE: &str = "skill";

/// Where skills live and how large one may be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillsSettings {
    /// `skills/` in the data directory: the operator's skills (must exist to be written).
    pub home: PathBuf,
    /// `[skills] dirs`: read-only folders of skills, after the data directory's.
    pub dirs: Vec<PathBuf>,
    /// `[skills] max_body_bytes`: the largest `SKILL.md` body offered.
    pub max_body_bytes: u64,
    /// The team's skills in the database (team mode): `home` is then this process's
    /// read-only mirror of them; `None`: `home` is the data directory's folder.
    pub shared: Option<SkillsMirror>,
}

impl SkillsSettings {
    /// The default body limit, 64 KiB.
    pub const DEFAULT_MAX_BODY_BYTES: u64 = 64 * 1024;

    /// Settings with only the data directory's `skills/` folder `home`.
    pub fn new(home: impl Into<PathBuf>) -> Self {
        Self {
            home: home.into(),
            dirs: Vec::new(),
            max_body_bytes: Self::DEFAULT_MAX_BODY_BYTES,
            shared: None,
        }
    }
}
