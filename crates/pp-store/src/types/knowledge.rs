//! The team's memory and skills as kept in the database (team mode; issue 29): plain rows.
//! Versions are computed by the caller (`pp-tools`); the store compares and swaps them.

use pp_types::Timestamp;

/// The team's memory: its text and version (`sha256:<hex>` of the text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeamMemory {
    /// The memory's text.
    pub content: String,
    /// Its version.
    pub version: String,
    /// When it was last written.
    pub updated_at: Timestamp,
}

/// One file of a team skill: its `/`-separated path in the skill's folder and its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillFile {
    /// The path in the skill's folder (`SKILL.md`, `scripts/run.sh`, …).
    pub path: String,
    /// The file's bytes.
    pub content: Vec<u8>,
}

/// One team skill with its files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeamSkill {
    /// The skill's name (its folder's).
    pub name: String,
    /// Its version: `sha256:<hex>` over its files.
    pub version: String,
    /// Its files, by path.
    pub files: Vec<SkillFile>,
    /// When it was last written.
    pub updated_at: Timestamp,
}

/// The record of the one import of a team's memory and skills from a folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeamImport {
    /// The folder imported from.
    pub source: String,
    /// What was imported (`memory and 2 skills`).
    pub detail: String,
    /// When.
    pub imported_at: Timestamp,
}
