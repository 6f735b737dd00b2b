//! The catalog: every skill folder found in the skills folders, valid or not.
//!
//! Each skills folder is opened through its own [`Jail`], and each skill folder through
//! another, so nothing a skill names (`SKILL.md` as a link, `..`) reaches past its own
//! folder. A folder that fails a rule is still listed, with the reason, and is never
//! offered to the model.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use pp_gate::{EntryKind, Jail, JailError, ListOptions};

use super::parse::{MAX_FRONT_MATTER_BYTES, ParsedSkill, parse_skill_md, valid_name};
use super::{SKILL_FILE, SkillsSettings};

/// Most skill folders read from one skills folder.
pub const MAX_SKILLS_PER_FOLDER: usize = 1000;

/// Most files listed for one skill.
pub const MAX_FILES_PER_SKILL: usize = 1000;

/// Where a skill was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkillSource {
    /// `skills/` in the data directory: the operator's own, writable.
    Home,
    /// A folder from `[skills] dirs`: read-only.
    Dir(PathBuf),
}

impl SkillSource {
    /// `home`, or the read-only folder's path.
    pub fn label(&self) -> String {
        match self {
            Self::Home => "home".to_owned(),
            Self::Dir(path) => path.display().to_string(),
        }
    }

    /// Whether skills from here may be changed or removed.
    pub fn read_only(&self) -> bool {
        matches!(self, Self::Dir(_))
    }
}

/// One skill folder of the catalog.
#[derive(Debug, Clone)]
pub struct SkillEntry {
    /// The folder's name (the skill's name when valid).
    pub name: String,
    /// Where it was found.
    pub source: SkillSource,
    /// The parsed skill, or why the folder is not a valid skill.
    pub status: Result<ParsedSkill, String>,
    /// A jail on the skill's folder; `None` when the folder itself could not be opened.
    pub jail: Option<Arc<Jail>>,
}

impl SkillEntry {
    /// Whether the skill is valid (and so offered to the model).
    pub fn valid(&self) -> bool {
        self.status.is_ok()
    }

    /// The description of a valid skill; empty otherwise.
    pub fn description(&self) -> &str {
        self.status
            .as_ref()
            .map_or("", |skill| skill.description.as_str())
    }

    /// Why the skill is invalid; `None` when it is valid.
    pub fn reason(&self) -> Option<&str> {
        self.status.as_ref().err().map(String::as_str)
    }

    /// The skill's files other than `SKILL.md`, `/`-separated and sorted (links are
    /// listed, never followed; reading one goes through the jail).
    pub fn files(&self) -> Vec<String> {
        let Some(jail) = &self.jail else {
            return Vec::new();
        };
        let options = ListOptions {
            recursive: true,
            max_entries: MAX_FILES_PER_SKILL,
        };
        jail.list("", options)
            .map(|listing| {
                listing
                    .entries
                    .into_iter()
                    .filter(|entry| matches!(entry.kind, EntryKind::File | EntryKind::Symlink))
                    .map(|entry| entry.path)
                    .filter(|path| path != SKILL_FILE && !is_temp(path))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// Every skill found, in the order of the folders (the data directory's first), then by
/// name.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// The skills, valid and invalid.
    pub skills: Vec<SkillEntry>,
}

impl Catalog {
    /// Reads every skills folder of `settings`. A missing folder has no skills; a skill
    /// whose name an earlier folder already has is listed as invalid (shadowed).
    pub fn load(settings: &SkillsSettings) -> Self {
        let mut skills: Vec<SkillEntry> = Vec::new();
        let folders = std::iter::once((settings.home.as_path(), SkillSource::Home)).chain(
            settings
                .dirs
                .iter()
                .map(|dir| (dir.as_path(), SkillSource::Dir(dir.clone()))),
        );
        for (folder, source) in folders {
            for mut entry in load_folder(folder, &source, settings.max_body_bytes) {
                if let Some(first) = skills
                    .iter()
                    .find(|other| other.name == entry.name && other.valid())
                    && entry.valid()
                {
                    entry.status = Err(format!(
                        "shadowed by the skill of the same name in {}",
                        first.source.label()
                    ));
                }
                skills.push(entry);
            }
        }
        Self { skills }
    }

    /// The skill named `name` the model would see: the valid one, else the first listed.
    pub fn find(&self, name: &str) -> Option<&SkillEntry> {
        self.skills
            .iter()
            .find(|entry| entry.name == name && entry.valid())
            .or_else(|| self.skills.iter().find(|entry| entry.name == name))
    }

    /// The valid skills.
    pub fn valid(&self) -> impl Iterator<Item = &SkillEntry> {
        self.skills.iter().filter(|entry| entry.valid())
    }
}

/// The skill folders in one skills folder, sorted by name.
fn load_folder(folder: &Path, source: &SkillSource, max_body_bytes: u64) -> Vec<SkillEntry> {
    let Ok(jail) = Jail::new(folder) else {
        return Vec::new();
    };
    let options = ListOptions {
        recursive: false,
        max_entries: MAX_SKILLS_PER_FOLDER,
    };
    let Ok(listing) = jail.list("", options) else {
        return Vec::new();
    };
    listing
        .entries
        .into_iter()
        .filter(|entry| !entry.path.starts_with('.'))
        .filter_map(|entry| match entry.kind {
            EntryKind::Dir => Some(load_skill(&jail, &entry.path, source, max_body_bytes)),
            EntryKind::Symlink => Some(SkillEntry {
                name: entry.path,
                source: source.clone(),
                status: Err("the skill folder is a symbolic link; links are not followed".into()),
                jail: None,
            }),
            EntryKind::File | EntryKind::Other => None,
        })
        .collect()
}

/// One skill folder `name` inside the skills folder `parent`.
fn load_skill(parent: &Jail, name: &str, source: &SkillSource, max: u64) -> SkillEntry {
    let mut entry = SkillEntry {
        name: name.to_owned(),
        source: source.clone(),
        status: Err(String::new()),
        jail: None,
    };
    if !valid_name(name) {
        entry.status = Err(format!(
            "the folder name `{}` is not a valid skill name (1 to 64 characters of a-z, 0-9 and -)",
            name.escape_debug()
        ));
        return entry;
    }
    let expected = parent.root().join(name);
    let jail = match Jail::new(&expected) {
        // A folder swapped for a link since the listing resolves elsewhere: refused.
        Ok(jail) if jail.root() == expected => Arc::new(jail),
        Ok(_) => {
            entry.status =
                Err("the skill folder is a symbolic link; links are not followed".into());
            return entry;
        }
        Err(error) => {
            entry.status = Err(format!("the skill folder cannot be opened: {error}"));
            return entry;
        }
    };
    entry.status = read_skill(&jail, name, max);
    entry.jail = Some(jail);
    entry
}

/// Reads and parses `SKILL.md` through the skill's own jail.
pub(crate) fn read_skill(
    jail: &Jail,
    name: &str,
    max_body_bytes: u64,
) -> Result<ParsedSkill, String> {
    let text = read_skill_md(jail, max_body_bytes)?;
    parse_skill_md(&text, name, max_body_bytes)
}

/// The text of `SKILL.md`, refused when it is missing, too large or not UTF-8.
pub(crate) fn read_skill_md(jail: &Jail, max_body_bytes: u64) -> Result<String, String> {
    let cap = max_body_bytes.saturating_add(MAX_FRONT_MATTER_BYTES as u64 + 64);
    let content = jail.read(SKILL_FILE, cap).map_err(|error| match error {
        JailError::NotFound { .. } => "the folder has no SKILL.md".to_owned(),
        other => format!("SKILL.md cannot be read: {other}"),
    })?;
    if content.truncated {
        return Err(format!(
            "SKILL.md is {} bytes: its body is over the limit of {max_body_bytes} \
             (`[skills] max_body_bytes`)",
            content.size
        ));
    }
    String::from_utf8(content.bytes).map_err(|_| "SKILL.md is not UTF-8 text".to_owned())
}

/// A temp file an interrupted atomic write left behind.
fn is_temp(path: &str) -> bool {
    path.rsplit('/')
        .next()
        .is_some_and(|name| name.starts_with(pp_gate::TEMP_PREFIX))
}
