//! The team's skills (team mode): kept in the database ([`SharedSkills`]), read through
//! a mirror private to this process ([`SkillsMirror`]), so the catalog, `expand_skill`
//! and `read_skill_file` keep working on folders through jails exactly as on a data
//! directory's `skills/`.
//!
//! The mirror is [`SkillsSettings::home`]: one read-only folder per skill, rewritten
//! whenever the database holds another version of it ([`refresh`], before every read of
//! the catalog). A change ([`change`]) is worked out in a scratch folder with the same
//! `manage` functions as on the data directory (so the same names, front matter and
//! limits are refused), then stored as one compare-and-swap on the version it started
//! from: a change based on an older version never overwrites a newer one, whichever
//! process made it ([`SkillsError::VersionMismatch`]).
//!
//! Without a shared store, [`change`] checks an `If-Match` version against the folder
//! (within this process, under a lock) and changes the folder.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use pp_gate::{EntryKind, Jail, JailError, ListOptions};
use sha2::{Digest, Sha256};

use super::catalog::MAX_FILES_PER_SKILL;
use super::manage::{MAX_INSTALL_BYTES, SkillsError};
use super::parse::valid_name;
use super::{SKILL_FILE, SkillsSettings};

/// One file of a skill: its `/`-separated path in the skill's folder and its bytes.
pub type SkillFileBytes = (String, Vec<u8>);

/// A skill as the database keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredSkill {
    /// Its version ([`skill_version`] of its files).
    pub version: String,
    /// Its files, by path.
    pub files: Vec<SkillFileBytes>,
}

/// The team's skills where they are kept: the database (team mode). Synchronous: called
/// on the blocking pool, never on the async threads.
pub trait SharedSkills: Send + Sync + std::fmt::Debug {
    /// Every skill's name and version.
    fn versions(&self) -> Result<Vec<(String, String)>, SkillsError>;

    /// The skill `name` with its files, `None` when there is none.
    fn get(&self, name: &str) -> Result<Option<StoredSkill>, SkillsError>;

    /// Makes `files` (of version `version`) the skill `name` if its version is still
    /// `expected` (`None`: no such skill yet); `false` when it is not (nothing written).
    fn put(
        &self,
        name: &str,
        expected: Option<&str>,
        version: &str,
        files: &[SkillFileBytes],
    ) -> Result<bool, SkillsError>;

    /// Removes the skill `name` if its version is still `expected`; `false` when not.
    fn remove(&self, name: &str, expected: &str) -> Result<bool, SkillsError>;
}

/// This process's mirror of the team's skills: the database, a scratch folder for
/// changes, and the version of each skill the mirror holds. Cheap to clone (clones
/// share the versions).
#[derive(Debug, Clone)]
pub struct SkillsMirror {
    store: Arc<dyn SharedSkills>,
    /// Where changes are worked out (a folder of this process, beside the mirror).
    work: PathBuf,
    /// The version of each skill in the mirror.
    versions: Arc<Mutex<BTreeMap<String, String>>>,
}

impl PartialEq for SkillsMirror {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.versions, &other.versions)
    }
}

impl Eq for SkillsMirror {}

impl SkillsMirror {
    /// A mirror of `store`, working out changes in `work` (created when needed). The
    /// mirror folder itself is the settings' `home`, which must start empty.
    pub fn new(store: Arc<dyn SharedSkills>, work: PathBuf) -> Self {
        Self {
            store,
            work,
            versions: Arc::new(Mutex::new(BTreeMap::new())),
        }
    }

    fn known(&self) -> MutexGuard<'_, BTreeMap<String, String>> {
        self.versions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Rewrites every skill of the mirror `home` whose version the database no longer
    /// has, and removes those it no longer has at all.
    fn refresh(&self, home: &Path) -> Result<(), SkillsError> {
        let mut known = self.known();
        let wanted: BTreeMap<String, String> = self
            .store
            .versions()?
            .into_iter()
            .filter(|(name, _)| valid_name(name))
            .collect();
        let mirror = Jail::new(home).map_err(SkillsError::jail("skills"))?;
        let gone: Vec<String> = known
            .keys()
            .filter(|name| !wanted.contains_key(*name))
            .cloned()
            .collect();
        for name in gone {
            remove_folder(&mirror, &name)?;
            known.remove(&name);
        }
        for (name, version) in &wanted {
            if known.get(name) == Some(version) {
                continue;
            }
            remove_folder(&mirror, name)?;
            known.remove(name);
            if let Some(skill) = self.store.get(name)? {
                write_folder(&mirror, name, &skill.files)?;
                read_only(&mirror, name);
                known.insert(name.clone(), skill.version);
            }
        }
        Ok(())
    }

    /// [`change`] on the database: the skill as stored now is copied into a scratch
    /// folder, `op` changes it there, and the result is stored if the skill is still the
    /// version it started from.
    fn change<T>(
        &self,
        settings: &SkillsSettings,
        name: &str,
        if_match: Option<&str>,
        op: impl FnOnce(&SkillsSettings) -> Result<T, SkillsError>,
    ) -> Result<T, SkillsError> {
        self.refresh(&settings.home)?;
        let current = if valid_name(name) {
            self.store.get(name)?
        } else {
            None
        };
        let before = current.as_ref().map(|skill| skill.version.clone());
        check_if_match(name, if_match, before.as_deref())?;
        let scratch = Scratch::new(&self.work)?;
        if let Some(skill) = &current {
            write_folder(&scratch.jail, name, &skill.files)?;
        }
        let scratch_settings = SkillsSettings {
            home: scratch.path.clone(),
            dirs: settings.dirs.clone(),
            max_body_bytes: settings.max_body_bytes,
            shared: None,
        };
        let done = op(&scratch_settings)?;
        let after = if valid_name(name)
            && scratch.jail.exists(name).map_err(SkillsError::jail(name))?
        {
            let folder = Jail::new(&scratch.path.join(name)).map_err(SkillsError::jail(name))?;
            Some(read_folder(&folder, name)?.0)
        } else {
            None
        };
        let stored = match (&after, &before) {
            (Some(files), _) => {
                self.store
                    .put(name, before.as_deref(), &skill_version(files), files)?
            }
            (None, Some(version)) => self.store.remove(name, version)?,
            (None, None) => true,
        };
        drop(scratch);
        self.refresh(&settings.home)?;
        if !stored {
            let now = self.store.get(name)?.map(|skill| skill.version);
            return Err(mismatch(name, before.as_deref(), now.as_deref()));
        }
        Ok(done)
    }
}

/// Brings the mirror of the team's skills up to the database (nothing without one):
/// call it before reading the catalog.
pub fn refresh(settings: &SkillsSettings) -> Result<(), SkillsError> {
    match &settings.shared {
        Some(mirror) => mirror.refresh(&settings.home),
        None => Ok(()),
    }
}

/// Serialises the checked changes of the data directory's skills within this process.
static FOLDER_LOCK: Mutex<()> = Mutex::new(());

/// Changes the skill `name` with `op` (one of the `manage` functions), if it is still
/// the version `if_match` names (`None`: whatever it is): in the team's database (a
/// compare-and-swap there, whatever `if_match` says), or in the data directory's folder.
/// [`SkillsError::VersionMismatch`] when the version is not the one named; nothing is
/// changed then.
pub fn change<T>(
    settings: &SkillsSettings,
    name: &str,
    if_match: Option<&str>,
    op: impl FnOnce(&SkillsSettings) -> Result<T, SkillsError>,
) -> Result<T, SkillsError> {
    if let Some(mirror) = &settings.shared {
        return mirror.change(settings, name, if_match, op);
    }
    let _guard = FOLDER_LOCK.lock().unwrap_or_else(PoisonError::into_inner);
    if if_match.is_some() {
        check_if_match(name, if_match, version(settings, name)?.as_deref())?;
    }
    op(settings)
}

/// The version of the skill `name` of the data directory's folder (or of the mirror):
/// [`skill_version`] of its files; `None` when there is no such skill there.
pub fn version(settings: &SkillsSettings, name: &str) -> Result<Option<String>, SkillsError> {
    if !valid_name(name) {
        return Ok(None);
    }
    let Ok(home) = Jail::new(&settings.home) else {
        return Ok(None);
    };
    if !home.exists(name).map_err(SkillsError::jail(name))? {
        return Ok(None);
    }
    let folder = Jail::new(&settings.home.join(name)).map_err(SkillsError::jail(name))?;
    let (files, _) = read_folder(&folder, name)?;
    Ok(Some(skill_version(&files)))
}

/// A skill's version: `sha256:<hex>` over its files in path order (each path, its
/// length and its bytes), so any change to a name or a byte changes it.
pub fn skill_version(files: &[SkillFileBytes]) -> String {
    let mut sorted: Vec<&SkillFileBytes> = files.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut hasher = Sha256::new();
    for (path, bytes) in sorted {
        hasher.update(path.as_bytes());
        hasher.update([0]);
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    }
    let digest = hasher.finalize();
    let mut version = String::with_capacity(7 + 64);
    version.push_str("sha256:");
    for byte in digest {
        version.push_str(&format!("{byte:02x}"));
    }
    version
}

fn check_if_match(
    name: &str,
    if_match: Option<&str>,
    current: Option<&str>,
) -> Result<(), SkillsError> {
    match if_match {
        Some(expected) if Some(expected) != current => Err(mismatch(name, Some(expected), current)),
        _ => Ok(()),
    }
}

fn mismatch(name: &str, expected: Option<&str>, current: Option<&str>) -> SkillsError {
    SkillsError::VersionMismatch {
        name: name.to_owned(),
        expected: expected.unwrap_or("absent").to_owned(),
        current: current.unwrap_or("absent").to_owned(),
    }
}

/// Every regular file of the skill folder `folder` (at most [`MAX_FILES_PER_SKILL`]
/// entries, [`MAX_INSTALL_BYTES`] in all), by path; and the links and other entries
/// left out.
pub(crate) fn read_folder(
    folder: &Jail,
    name: &str,
) -> Result<(Vec<SkillFileBytes>, Vec<String>), SkillsError> {
    use std::io::Read as _;
    let listing = folder
        .list(
            "",
            ListOptions {
                recursive: true,
                max_entries: MAX_FILES_PER_SKILL,
            },
        )
        .map_err(SkillsError::jail(name))?;
    if listing.truncated {
        return Err(SkillsError::Invalid {
            name: name.to_owned(),
            reason: format!("the folder holds more than {MAX_FILES_PER_SKILL} entries"),
        });
    }
    let mut files = Vec::new();
    let mut skipped = Vec::new();
    let mut total = 0_u64;
    for entry in listing.entries {
        match entry.kind {
            EntryKind::File => {
                let mut bytes = Vec::new();
                let remaining = MAX_INSTALL_BYTES.saturating_sub(total);
                folder
                    .open_file(&entry.path)
                    .map_err(SkillsError::jail(name))?
                    .take(remaining.saturating_add(1))
                    .read_to_end(&mut bytes)
                    .map_err(|source| SkillsError::Jail {
                        name: name.to_owned(),
                        source: JailError::Io {
                            path: entry.path.clone(),
                            source,
                        },
                    })?;
                total = total.saturating_add(bytes.len() as u64);
                if total > MAX_INSTALL_BYTES {
                    return Err(SkillsError::Invalid {
                        name: name.to_owned(),
                        reason: format!("the folder is larger than {MAX_INSTALL_BYTES} bytes"),
                    });
                }
                files.push((entry.path, bytes));
            }
            EntryKind::Symlink | EntryKind::Other => skipped.push(entry.path),
            EntryKind::Dir => {}
        }
    }
    files.sort_by(|a, b| a.0.cmp(&b.0));
    Ok((files, skipped))
}

/// Writes `files` as the folder `name` in `home` (SKILL.md last: until it lands, a
/// half-written folder is not a valid skill).
pub(crate) fn write_folder(
    home: &Jail,
    name: &str,
    files: &[SkillFileBytes],
) -> Result<(), SkillsError> {
    let mut ordered: Vec<&SkillFileBytes> = files.iter().collect();
    ordered.sort_by_key(|(path, _)| path == SKILL_FILE);
    for (path, bytes) in ordered {
        home.write_atomic(&format!("{name}/{path}"), bytes)
            .map_err(SkillsError::jail(name))?;
    }
    Ok(())
}

/// Removes the mirror's folder `name` (made writable first); a missing one is fine.
fn remove_folder(mirror: &Jail, name: &str) -> Result<(), SkillsError> {
    set_modes(mirror, name, 0o644, 0o755);
    match mirror.remove_dir_all(name) {
        Ok(()) | Err(JailError::NotFound { .. }) => Ok(()),
        Err(error) => Err(SkillsError::jail(name)(error)),
    }
}

/// Makes the mirror's folder `name` read-only: its files 0444, its folders 0555. The
/// mirror is a copy, so nothing but a refresh writes it.
fn read_only(mirror: &Jail, name: &str) {
    set_modes(mirror, name, 0o444, 0o555);
}

/// Gives the files and folders of the mirror's folder `name` these modes (links are
/// never written to a mirror, so none is followed). Best effort: the modes guard a copy.
fn set_modes(mirror: &Jail, name: &str, file_mode: u32, dir_mode: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    let Ok(probe) = mirror.probe_entry(name) else {
        return;
    };
    if probe.kind != Some(EntryKind::Dir) {
        return;
    }
    let root = mirror.root().join(name);
    let _ = std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755));
    let Ok(folder) = Jail::new(&root) else {
        return;
    };
    let Ok(listing) = folder.list(
        "",
        ListOptions {
            recursive: true,
            max_entries: MAX_FILES_PER_SKILL * 4,
        },
    ) else {
        return;
    };
    // Folders last and deepest first, so a folder made read-only is not entered again.
    let mut entries = listing.entries;
    entries.sort_by_key(|entry| {
        (
            entry.kind == EntryKind::Dir,
            std::cmp::Reverse(entry.path.len()),
        )
    });
    for entry in entries {
        let mode = match entry.kind {
            EntryKind::File => file_mode,
            EntryKind::Dir => dir_mode,
            EntryKind::Symlink | EntryKind::Other => continue,
        };
        let _ = std::fs::set_permissions(
            root.join(&entry.path),
            std::fs::Permissions::from_mode(mode),
        );
    }
    let _ = std::fs::set_permissions(&root, std::fs::Permissions::from_mode(dir_mode));
}

/// A scratch folder of its own under the work folder, removed when dropped.
struct Scratch {
    path: PathBuf,
    jail: Jail,
    parent: Jail,
    name: String,
}

impl Scratch {
    fn new(work: &Path) -> Result<Self, SkillsError> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let parent = Jail::new(work).map_err(SkillsError::jail("skills"))?;
        let name = format!(
            "change-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        // A leftover of a crashed change of the same name goes first.
        match parent.remove_dir_all(&name) {
            Ok(()) | Err(JailError::NotFound { .. }) => {}
            Err(error) => return Err(SkillsError::jail("skills")(error)),
        }
        parent
            .create_dir_all(&name)
            .map_err(SkillsError::jail("skills"))?;
        let path = work.join(&name);
        let jail = Jail::new(&path).map_err(SkillsError::jail("skills"))?;
        Ok(Self {
            path,
            jail,
            parent,
            name,
        })
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = self.parent.remove_dir_all(&self.name);
    }
}

#[cfg(test)]
#[allow(
    clippy::disallowed_methods,
    reason = "the tests look at the mirror behind the jail's back"
)]
mod tests {
    use super::*;
    use crate::skills::{Catalog, install, put_file, put_skill_md, remove};
    use pretty_assertions::assert_eq;
    use std::os::unix::fs::PermissionsExt as _;

    /// The database as a map, with a count of the reads of a skill's files.
    #[derive(Debug, Default)]
    struct Table {
        skills: Mutex<BTreeMap<String, StoredSkill>>,
        reads: AtomicU64,
    }

    impl SharedSkills for Table {
        fn versions(&self) -> Result<Vec<(String, String)>, SkillsError> {
            let skills = self.skills.lock().unwrap();
            Ok(skills
                .iter()
                .map(|(name, skill)| (name.clone(), skill.version.clone()))
                .collect())
        }
        fn get(&self, name: &str) -> Result<Option<StoredSkill>, SkillsError> {
            self.reads.fetch_add(1, Ordering::Relaxed);
            Ok(self.skills.lock().unwrap().get(name).cloned())
        }
        fn put(
            &self,
            name: &str,
            expected: Option<&str>,
            version: &str,
            files: &[SkillFileBytes],
        ) -> Result<bool, SkillsError> {
            let mut skills = self.skills.lock().unwrap();
            if skills.get(name).map(|skill| skill.version.as_str()) != expected {
                return Ok(false);
            }
            skills.insert(
                name.to_owned(),
                StoredSkill {
                    version: version.to_owned(),
                    files: files.to_vec(),
                },
            );
            Ok(true)
        }
        fn remove(&self, name: &str, expected: &str) -> Result<bool, SkillsError> {
            let mut skills = self.skills.lock().unwrap();
            if skills.get(name).map(|skill| skill.version.as_str()) != Some(expected) {
                return Ok(false);
            }
            skills.remove(name);
            Ok(true)
        }
    }

    fn skill_md(name: &str, body: &str) -> String {
        format!("---\nname: {name}\ndescription: The {name} skill.\n---\n{body}")
    }

    /// Two processes' settings over one table, each with its own mirror.
    fn two_processes() -> (
        tempfile::TempDir,
        Arc<Table>,
        SkillsSettings,
        SkillsSettings,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let table = Arc::new(Table::default());
        let settings = |n: &str| {
            let (home, work) = (
                dir.path().join(n).join("skills"),
                dir.path().join(n).join("work"),
            );
            std::fs::create_dir_all(&home).unwrap();
            std::fs::create_dir_all(&work).unwrap();
            SkillsSettings {
                shared: Some(SkillsMirror::new(table.clone(), work)),
                ..SkillsSettings::new(home)
            }
        };
        let (a, b) = (settings("a"), settings("b"));
        (dir, table, a, b)
    }

    #[test]
    fn a_change_in_one_process_shows_in_the_other_read_only() {
        let (_dir, table, a, b) = two_processes();
        change(&a, "notes", None, |at| {
            put_skill_md(at, "notes", &skill_md("notes", "v1\n"))
        })
        .unwrap();
        change(&a, "notes", None, |at| {
            put_file(at, "notes", "refs/a.md", b"A")
        })
        .unwrap();
        let stored = table.get("notes").unwrap().unwrap();
        assert_eq!(
            stored
                .files
                .iter()
                .map(|(path, _)| path.as_str())
                .collect::<Vec<_>>(),
            ["SKILL.md", "refs/a.md"]
        );
        assert_eq!(stored.version, skill_version(&stored.files));
        // The other process sees it after a refresh, as a read-only folder.
        assert!(Catalog::load(&b).find("notes").is_none());
        refresh(&b).unwrap();
        let entry = Catalog::load(&b).find("notes").cloned().unwrap();
        assert!(entry.valid(), "{:?}", entry.reason());
        assert_eq!(entry.files(), ["refs/a.md"]);
        let file = b.home.join("notes/refs/a.md");
        assert_eq!(std::fs::read(&file).unwrap(), b"A");
        assert_eq!(
            std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o444
        );
        let folder = std::fs::metadata(b.home.join("notes")).unwrap();
        assert_eq!(folder.permissions().mode() & 0o777, 0o555);
        assert_eq!(version(&b, "notes").unwrap(), Some(stored.version));
        // A refresh with nothing new reads no skill again.
        let reads = table.reads.load(Ordering::Relaxed);
        refresh(&b).unwrap();
        assert_eq!(table.reads.load(Ordering::Relaxed), reads);
        // Removed in one, gone from the other's mirror.
        change(&a, "notes", None, |at| remove(at, "notes")).unwrap();
        assert!(table.get("notes").unwrap().is_none());
        refresh(&b).unwrap();
        assert!(!b.home.join("notes").exists());
    }

    #[test]
    fn a_change_based_on_an_older_version_changes_nothing() {
        let (_dir, table, a, b) = two_processes();
        change(&a, "notes", None, |at| {
            put_skill_md(at, "notes", &skill_md("notes", "v1\n"))
        })
        .unwrap();
        let v1 = table.get("notes").unwrap().unwrap().version;
        // If-Match names the version now: the change lands.
        change(&b, "notes", Some(&v1), |at| {
            put_skill_md(at, "notes", &skill_md("notes", "v2\n"))
        })
        .unwrap();
        let v2 = table.get("notes").unwrap().unwrap().version;
        assert_ne!(v1, v2);
        // If-Match names an older one: refused, nothing changed.
        let error = change(&a, "notes", Some(&v1), |at| remove(at, "notes")).unwrap_err();
        assert!(
            matches!(&error, SkillsError::VersionMismatch { expected, current, .. } if *expected == v1 && *current == v2),
            "{error}"
        );
        assert_eq!(table.get("notes").unwrap().unwrap().version, v2);
        // Another process's change landing while this one worked: the swap loses.
        let error = change(&a, "notes", None, |at| {
            let done = put_file(at, "notes", "b.md", b"B");
            change(&b, "notes", None, |other| {
                put_file(other, "notes", "c.md", b"C")
            })
            .unwrap();
            done
        })
        .unwrap_err();
        assert!(
            matches!(error, SkillsError::VersionMismatch { .. }),
            "{error}"
        );
        let files = table.get("notes").unwrap().unwrap().files;
        assert!(files.iter().any(|(path, _)| path == "c.md"));
        assert!(
            !files.iter().any(|(path, _)| path == "b.md"),
            "the loser wrote nothing"
        );
    }

    #[test]
    fn the_same_rules_refuse_a_bad_change_and_install_checks_the_name() {
        let (dir, table, a, _b) = two_processes();
        let error = change(&a, "notes", None, |at| {
            put_skill_md(at, "notes", "no front matter")
        })
        .unwrap_err();
        assert!(matches!(error, SkillsError::Invalid { .. }), "{error}");
        let error = change(&a, "../x", None, |at| put_skill_md(at, "../x", "x")).unwrap_err();
        assert!(matches!(error, SkillsError::InvalidName { .. }), "{error}");
        assert_eq!(table.versions().unwrap(), []);
        // Installing a folder; installing it again is refused.
        let source = dir.path().join("src/tidy");
        std::fs::create_dir_all(&source).unwrap();
        std::fs::write(source.join("SKILL.md"), skill_md("tidy", "Tidy.\n")).unwrap();
        change(&a, "tidy", None, |at| install(at, &source)).unwrap();
        let error = change(&a, "tidy", None, |at| install(at, &source)).unwrap_err();
        assert!(matches!(error, SkillsError::Exists { .. }), "{error}");
        // No scratch folder is left behind.
        let work = a.shared.as_ref().unwrap().work.clone();
        assert_eq!(std::fs::read_dir(work).unwrap().count(), 0);
    }

    #[test]
    fn the_provider_offers_the_teams_skills_as_the_database_has_them_now() {
        let (dir, _table, a, b) = two_processes();
        let provider = crate::skills::SkillsProvider::new(b);
        let workspace = Arc::new(Jail::new(dir.path()).unwrap());
        let toolbox = crate::Toolbox::new().with(Arc::new(provider));
        let equip = || toolbox.equip(&workspace, crate::Limits::default()).unwrap();
        assert!(equip().prompt.skills.is_empty());
        change(&a, "notes", None, |at| {
            put_skill_md(at, "notes", &skill_md("notes", "v1\n"))
        })
        .unwrap();
        change(&a, "notes", None, |at| {
            put_file(at, "notes", "refs/a.md", b"A")
        })
        .unwrap();
        // The next segment sees it (no refresh by hand), and reads its file in its jail.
        let equipment = equip();
        assert_eq!(
            equipment.prompt.skills,
            [("notes".to_owned(), "The notes skill.".to_owned())]
        );
        let read = equipment.registry.get("read_skill_file").unwrap();
        let context = pp_agent::ToolContext::for_task("t", None);
        let output = futures_lite_block(read.execute(
            &context,
            &serde_json::json!({"name": "notes", "path": "refs/a.md"}),
        ));
        match output {
            pp_types::ToolOutput::Success { content } => {
                assert!(content.contains('A'), "{content}")
            }
            other => panic!("{other:?}"),
        }
        change(&a, "notes", None, |at| remove(at, "notes")).unwrap();
        assert!(equip().prompt.skills.is_empty());
    }

    fn futures_lite_block<F: std::future::Future>(future: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(future)
    }

    #[test]
    fn if_match_on_the_data_directory_checks_the_folder() {
        let dir = tempfile::tempdir().unwrap();
        let settings = SkillsSettings::new(dir.path());
        put_skill_md(&settings, "notes", &skill_md("notes", "v1\n")).unwrap();
        let v1 = version(&settings, "notes").unwrap().unwrap();
        assert_eq!(version(&settings, "missing").unwrap(), None);
        change(&settings, "notes", Some(&v1), |at| {
            put_file(at, "notes", "a.md", b"A")
        })
        .unwrap();
        let error = change(&settings, "notes", Some(&v1), |at| remove(at, "notes")).unwrap_err();
        assert!(
            matches!(error, SkillsError::VersionMismatch { .. }),
            "{error}"
        );
        assert!(dir.path().join("notes/a.md").exists());
        let error =
            change(&settings, "missing", Some(&v1), |at| remove(at, "missing")).unwrap_err();
        assert!(
            matches!(&error, SkillsError::VersionMismatch { current, .. } if current == "absent"),
            "{error}"
        );
    }
}
