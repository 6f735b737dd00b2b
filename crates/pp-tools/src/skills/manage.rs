//! The operator's changes to skills: write `SKILL.md` or a resource file, remove a skill,
//! install a folder. Synchronous (file work through jails); `pp_tasks::SkillsService`
//! runs them on the blocking pool and audits them.
//!
//! Only skills in the data directory's `skills/` folder change; a skill from a read-only
//! `[skills] dirs` folder is refused with [`SkillsError::ReadOnly`].

use std::path::Path;

use pp_gate::{Jail, JailError};

use super::catalog::{Catalog, SkillEntry, read_skill_md};
use super::parse::{parse_skill_md, valid_name};
use super::shared::{read_folder, write_folder};
use super::{SKILL_FILE, SkillsSettings};

/// Largest folder `install` copies, all files together.
pub const MAX_INSTALL_BYTES: u64 = 32 * 1024 * 1024;

/// Why an operator's change to a skill was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum SkillsError {
    /// No skill folder with that name.
    #[error("skill `{name}` not found")]
    NotFound {
        /// The name asked for.
        name: String,
    },
    /// The name is not 1 to 64 characters of `a-z`, `0-9` and `-`.
    #[error("`{name}` is not a valid skill name (1 to 64 characters of a-z, 0-9 and -)")]
    InvalidName {
        /// The name as given.
        name: String,
    },
    /// The `SKILL.md` (or the folder to install) is not a valid skill.
    #[error("invalid skill `{name}`: {reason}")]
    Invalid {
        /// The skill's name.
        name: String,
        /// What rule failed.
        reason: String,
    },
    /// The skill comes from a read-only `[skills] dirs` folder.
    #[error("skill `{name}` is in the read-only folder {source_label}; change it there")]
    ReadOnly {
        /// The skill's name.
        name: String,
        /// Where it lives.
        source_label: String,
    },
    /// `install` found a skill of that name already in the data directory.
    #[error("skill `{name}` is already installed; remove it first")]
    Exists {
        /// The skill's name.
        name: String,
    },
    /// The skill is no longer the version the change was based on (`If-Match`, or
    /// another change won the database's compare-and-swap); nothing was changed.
    #[error(
        "skill `{name}` changed since it was read (expected version {expected}, now \
         {current}); nothing was changed"
    )]
    VersionMismatch {
        /// The skill's name.
        name: String,
        /// The version the change was based on (`absent`: none).
        expected: String,
        /// The version now (`absent`: none).
        current: String,
    },
    /// The team's skills in the database could not be read or written.
    #[error("the team's skills in the database: {0}")]
    Shared(String),
    /// The jail refused the path or the file system failed.
    #[error("skill `{name}`: {source}")]
    Jail {
        /// The skill's name.
        name: String,
        /// The jail's error (a rule violation is a refusal of the path).
        #[source]
        source: JailError,
    },
}

impl SkillsError {
    pub(crate) fn jail(name: &str) -> impl FnOnce(JailError) -> Self + '_ {
        move |source| Self::Jail {
            name: name.to_owned(),
            source,
        }
    }
}

/// Everything the operator sees of one skill.
#[derive(Debug, Clone)]
pub struct SkillDetail {
    /// The catalog entry (name, source, valid or why not).
    pub entry: SkillEntry,
    /// The raw text of `SKILL.md`; `None` when it cannot be read.
    pub skill_md: Option<String>,
    /// The skill's other files.
    pub files: Vec<String>,
}

/// The skill named `name`, with its `SKILL.md` text and files.
pub fn show(settings: &SkillsSettings, name: &str) -> Result<SkillDetail, SkillsError> {
    let catalog = Catalog::load(settings);
    let entry = catalog
        .find(name)
        .cloned()
        .ok_or_else(|| SkillsError::NotFound {
            name: name.to_owned(),
        })?;
    let skill_md = entry
        .jail
        .as_ref()
        .and_then(|jail| read_skill_md(jail, settings.max_body_bytes.saturating_mul(4)).ok());
    let files = entry.files();
    Ok(SkillDetail {
        entry,
        skill_md,
        files,
    })
}

/// What a write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// The skill (or file) did not exist before.
    Created,
    /// It replaced an existing one.
    Replaced,
}

/// Writes the `SKILL.md` of the skill `name` in the data directory, creating the skill.
/// The text must be a valid skill named `name`; nothing is written otherwise.
pub fn put_skill_md(
    settings: &SkillsSettings,
    name: &str,
    skill_md: &str,
) -> Result<Written, SkillsError> {
    writable_name(settings, name)?;
    parse_skill_md(skill_md, name, settings.max_body_bytes).map_err(|reason| {
        SkillsError::Invalid {
            name: name.to_owned(),
            reason,
        }
    })?;
    let home = Jail::new(&settings.home).map_err(SkillsError::jail(name))?;
    let outcome = home
        .write_atomic(&format!("{name}/{SKILL_FILE}"), skill_md.as_bytes())
        .map_err(SkillsError::jail(name))?;
    Ok(if outcome.created {
        Written::Created
    } else {
        Written::Replaced
    })
}

/// Writes one resource file of an existing skill in the data directory, through a jail on
/// the skill's folder (`..`, absolute paths and links out of the folder are refused).
/// `SKILL.md` itself goes through [`put_skill_md`], which validates it.
pub fn put_file(
    settings: &SkillsSettings,
    name: &str,
    path: &str,
    content: &[u8],
) -> Result<Written, SkillsError> {
    let entry = existing_writable(settings, name)?;
    let jail = entry.jail.ok_or_else(|| SkillsError::NotFound {
        name: name.to_owned(),
    })?;
    let checked = jail.check(path).map_err(SkillsError::jail(name))?;
    if checked == Path::new(SKILL_FILE) {
        let text = std::str::from_utf8(content).map_err(|_| SkillsError::Invalid {
            name: name.to_owned(),
            reason: "SKILL.md is not UTF-8 text".into(),
        })?;
        return put_skill_md(settings, name, text);
    }
    let outcome = jail
        .write_atomic(path, content)
        .map_err(SkillsError::jail(name))?;
    Ok(if outcome.created {
        Written::Created
    } else {
        Written::Replaced
    })
}

/// Removes the skill `name` from the data directory.
pub fn remove(settings: &SkillsSettings, name: &str) -> Result<(), SkillsError> {
    existing_writable(settings, name)?;
    let home = Jail::new(&settings.home).map_err(SkillsError::jail(name))?;
    home.remove_dir_all(name).map_err(SkillsError::jail(name))
}

/// Copies the skill folder `source` into the data directory, after checking that it is a
/// valid skill named like the folder. Links in it are not copied (they are listed in the
/// result). Returns the skill's name and the links left out.
pub fn install(
    settings: &SkillsSettings,
    source: &Path,
) -> Result<(String, Vec<String>), SkillsError> {
    let name = source
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !valid_name(&name) {
        return Err(SkillsError::InvalidName { name });
    }
    let from = Jail::new(source).map_err(SkillsError::jail(&name))?;
    let text =
        read_skill_md(&from, settings.max_body_bytes).map_err(|reason| SkillsError::Invalid {
            name: name.clone(),
            reason,
        })?;
    parse_skill_md(&text, &name, settings.max_body_bytes).map_err(|reason| {
        SkillsError::Invalid {
            name: name.clone(),
            reason,
        }
    })?;
    if Catalog::load(settings)
        .skills
        .iter()
        .any(|entry| entry.name == name && entry.source == super::SkillSource::Home)
    {
        return Err(SkillsError::Exists { name });
    }
    writable_name(settings, &name)?;
    let (files, skipped) = read_folder(&from, &name)?;
    let home = Jail::new(&settings.home).map_err(SkillsError::jail(&name))?;
    write_folder(&home, &name, &files)?;
    Ok((name, skipped))
}

/// Refuses an invalid name, and a name only a read-only folder has.
fn writable_name(settings: &SkillsSettings, name: &str) -> Result<(), SkillsError> {
    if !valid_name(name) {
        return Err(SkillsError::InvalidName {
            name: name.to_owned(),
        });
    }
    let catalog = Catalog::load(settings);
    let entries: Vec<&SkillEntry> = catalog
        .skills
        .iter()
        .filter(|entry| entry.name == name)
        .collect();
    match entries.first() {
        Some(first) if !entries.iter().any(|e| !e.source.read_only()) => {
            Err(SkillsError::ReadOnly {
                name: name.to_owned(),
                source_label: first.source.label(),
            })
        }
        _ => Ok(()),
    }
}

/// The skill `name` in the data directory; [`SkillsError::ReadOnly`] when only a
/// read-only folder has it, [`SkillsError::NotFound`] when none does.
fn existing_writable(settings: &SkillsSettings, name: &str) -> Result<SkillEntry, SkillsError> {
    // Names come from the folder listing, so `..` or `a/b` never match one.
    let catalog = Catalog::load(settings);
    let mut entries = catalog
        .skills
        .into_iter()
        .filter(|entry| entry.name == name);
    let mut read_only = None;
    for entry in entries.by_ref() {
        if !entry.source.read_only() {
            return Ok(entry);
        }
        read_only.get_or_insert(entry);
    }
    match read_only {
        Some(entry) => Err(SkillsError::ReadOnly {
            name: name.to_owned(),
            source_label: entry.source.label(),
        }),
        None => Err(SkillsError::NotFound {
            name: name.to_owned(),
        }),
    }
}
