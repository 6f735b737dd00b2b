//! The team's memory and skills in the database (team mode): [`TeamKnowledge`] gives the
//! memory and skills settings that read and change them there, through this process's
//! mirror folder, and [`TeamKnowledge::import_once`] moves a folder's memory and skills
//! (`[team] shared_dir`, or the first data directory) into the database once.
//!
//! The tools and the operator services are synchronous on the blocking pool; the store
//! is async. [`StoreMemory`] and [`StoreSkills`] bridge them with the runtime's handle:
//! they are only ever called on the blocking pool, where waiting on the store is fine.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use pp_store::{SkillFile, Store};
use pp_tools::memory::{self, MemoryError, MemorySettings, SharedMemory};
use pp_tools::skills::{
    self, SharedSkills, SkillFileBytes, SkillsError, SkillsMirror, SkillsSettings, StoredSkill,
};
use tokio::runtime::Handle;

use crate::error::{Error, Result, blocking};

/// The memory in the database, for `pp_tools::memory`.
#[derive(Debug)]
struct StoreMemory {
    store: Store,
    runtime: Handle,
}

impl SharedMemory for StoreMemory {
    fn load(&self) -> std::result::Result<Option<String>, MemoryError> {
        self.runtime
            .block_on(self.store.team_memory())
            .map(|memory| memory.map(|memory| memory.content))
            .map_err(|error| MemoryError::Shared(error.to_string()))
    }

    fn swap(
        &self,
        expected: &str,
        content: &str,
        version: &str,
    ) -> std::result::Result<bool, MemoryError> {
        let expected = (expected != memory::ABSENT_VERSION).then_some(expected);
        self.runtime
            .block_on(self.store.replace_team_memory(expected, content, version))
            .map_err(|error| MemoryError::Shared(error.to_string()))
    }

    fn remove(&self, expected: &str) -> std::result::Result<bool, MemoryError> {
        self.runtime
            .block_on(self.store.remove_team_memory(expected))
            .map_err(|error| MemoryError::Shared(error.to_string()))
    }
}

/// The skills in the database, for `pp_tools::skills`.
#[derive(Debug)]
struct StoreSkills {
    store: Store,
    runtime: Handle,
}

fn shared_error(error: &pp_store::Error) -> SkillsError {
    SkillsError::Shared(error.to_string())
}

impl SharedSkills for StoreSkills {
    fn versions(&self) -> std::result::Result<Vec<(String, String)>, SkillsError> {
        self.runtime
            .block_on(self.store.team_skill_versions())
            .map_err(|error| shared_error(&error))
    }

    fn get(&self, name: &str) -> std::result::Result<Option<StoredSkill>, SkillsError> {
        let skill = self
            .runtime
            .block_on(self.store.team_skill(name))
            .map_err(|error| shared_error(&error))?;
        Ok(skill.map(|skill| StoredSkill {
            version: skill.version,
            files: skill
                .files
                .into_iter()
                .map(|file| (file.path, file.content))
                .collect(),
        }))
    }

    fn put(
        &self,
        name: &str,
        expected: Option<&str>,
        version: &str,
        files: &[SkillFileBytes],
    ) -> std::result::Result<bool, SkillsError> {
        let files: Vec<SkillFile> = files
            .iter()
            .map(|(path, content)| SkillFile {
                path: path.clone(),
                content: content.clone(),
            })
            .collect();
        self.runtime
            .block_on(self.store.put_team_skill(name, expected, version, &files))
            .map_err(|error| shared_error(&error))
    }

    fn remove(&self, name: &str, expected: &str) -> std::result::Result<bool, SkillsError> {
        self.runtime
            .block_on(self.store.remove_team_skill(name, expected))
            .map_err(|error| shared_error(&error))
    }
}

/// The team's memory and skills in `store`, mirrored for this process under a folder of
/// its own.
#[derive(Debug, Clone)]
pub struct TeamKnowledge {
    store: Store,
    /// This process's mirror folder: `memory.md`, `skills/` and the `work/` folder.
    mirror: PathBuf,
    /// The runtime the store's calls are waited on from the blocking pool.
    runtime: Handle,
}

/// What [`TeamKnowledge::import_once`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Imported {
    /// This call imported the folder: whether it had a memory, and its skills' names.
    Now {
        /// Whether the folder's `memory.md` became the team's memory.
        memory: bool,
        /// The skills copied into the database.
        skills: Vec<String>,
        /// Skills left out (the database had one of that name, or invalid), with why.
        skipped: Vec<String>,
    },
    /// The team imported earlier: from this folder, when.
    Earlier(pp_store::TeamImport),
}

impl TeamKnowledge {
    /// The team's memory and skills in `store`, this process's mirror in
    /// `<cache>/<pid>-<n>` (created private; the mirrors of processes no longer running
    /// are removed on the way). Must be called inside the tokio runtime; touches the
    /// disk (call it before serving).
    pub fn open(store: Store, cache: &Path) -> Result<Self> {
        let runtime = Handle::try_current().map_err(|error| {
            Error::Internal(format!(
                "the team's knowledge needs the async runtime: {error}"
            ))
        })?;
        let mirror = prepare(cache)?;
        Ok(Self {
            store,
            mirror,
            runtime,
        })
    }

    /// The memory settings that read and change the team's memory, from `settings`
    /// (which keeps its prompt cap).
    pub fn memory(&self, settings: &MemorySettings) -> MemorySettings {
        MemorySettings {
            dir: self.mirror.clone(),
            max_prompt_bytes: settings.max_prompt_bytes,
            shared: Some(Arc::new(StoreMemory {
                store: self.store.clone(),
                runtime: self.runtime.clone(),
            })),
        }
    }

    /// The skills settings that read and change the team's skills, from `settings`
    /// (which keeps its read-only `dirs` and body limit).
    pub fn skills(&self, settings: &SkillsSettings) -> SkillsSettings {
        SkillsSettings {
            home: self.mirror.join("skills"),
            dirs: settings.dirs.clone(),
            max_body_bytes: settings.max_body_bytes,
            shared: Some(SkillsMirror::new(
                Arc::new(StoreSkills {
                    store: self.store.clone(),
                    runtime: self.runtime.clone(),
                }),
                self.mirror.join("work"),
            )),
        }
    }

    /// Imports the memory and skills of `folder` (its `memory.md` and `skills/`) into
    /// the database, unless the team imported once already: the memory when the team
    /// has none yet, each valid skill the team does not have. Recorded, so it happens
    /// once per team, whichever process gets there first.
    pub async fn import_once(
        &self,
        folder: &Path,
        memory_settings: &MemorySettings,
        skills_settings: &SkillsSettings,
    ) -> Result<Imported> {
        if let Some(earlier) = self.store.team_import().await? {
            return Ok(Imported::Earlier(earlier));
        }
        let (memory_to, skills_to) = (self.memory(memory_settings), self.skills(skills_settings));
        let from = folder.to_path_buf();
        let max_body_bytes = skills_settings.max_body_bytes;
        let report =
            blocking(move || import(&from, &memory_to, &skills_to, max_body_bytes)).await??;
        let Imported::Now { memory, skills, .. } = &report else {
            return Ok(report);
        };
        let detail = format!(
            "{}{} skill{}",
            if *memory { "memory and " } else { "" },
            skills.len(),
            if skills.len() == 1 { "" } else { "s" }
        );
        let source = folder.display().to_string();
        if !self.store.record_team_import(&source, &detail).await? {
            // Another process recorded its import meanwhile; what this one copied only
            // went where the team had nothing.
            if let Some(earlier) = self.store.team_import().await? {
                return Ok(Imported::Earlier(earlier));
            }
        }
        Ok(report)
    }
}

/// Copies `folder`'s memory and skills into the database through the team's settings.
fn import(
    folder: &Path,
    memory_to: &MemorySettings,
    skills_to: &SkillsSettings,
    max_body_bytes: u64,
) -> Result<Imported> {
    let mut imported_memory = false;
    if let Ok(from) = memory::Memory::file(folder).read() {
        let team = memory_to.memory();
        let mirror = team.open()?;
        if from.version != memory::ABSENT_VERSION
            && memory::read(&mirror)?.version == memory::ABSENT_VERSION
        {
            match team.replace_if(&mirror, memory::ABSENT_VERSION, &from.content) {
                Ok(_) => imported_memory = true,
                Err(MemoryError::VersionMismatch { .. }) => {}
                Err(error) => return Err(error.into()),
            }
        }
    }
    let source = SkillsSettings {
        max_body_bytes,
        ..SkillsSettings::new(folder.join("skills"))
    };
    let (mut names, mut skipped) = (Vec::new(), Vec::new());
    for entry in skills::Catalog::load(&source).skills {
        if !entry.valid() {
            skipped.push(format!(
                "{} ({})",
                entry.name,
                entry.reason().unwrap_or("invalid")
            ));
            continue;
        }
        let path = source.home.join(&entry.name);
        match skills::change(skills_to, &entry.name, None, |scratch| {
            skills::install(scratch, &path)
        }) {
            Ok(_) => names.push(entry.name),
            Err(SkillsError::Exists { .. }) => {
                skipped.push(format!("{} (the team has one of that name)", entry.name));
            }
            Err(error) => return Err(Error::Skill(error)),
        }
    }
    Ok(Imported::Now {
        memory: imported_memory,
        skills: names,
        skipped,
    })
}

/// Creates this process's mirror folder under `cache` (both private, the mirror empty),
/// and removes the mirrors of processes that no longer run. Mirrors are named
/// `<pid>-<n>`: one per [`TeamKnowledge::open`] of this process.
#[expect(
    clippy::disallowed_methods,
    reason = "the mirror cache is the operator's data directory, never a model-supplied path"
)]
fn prepare(cache: &Path) -> Result<PathBuf> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let io = |error: std::io::Error| Error::Internal(format!("{}: {error}", cache.display()));
    private_dir(cache).map_err(io)?;
    for entry in std::fs::read_dir(cache).map_err(io)? {
        let path = entry.map_err(io)?.path();
        let pid = path
            .file_name()
            .and_then(|name| name.to_str())
            .and_then(|name| name.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok());
        if pid.is_some_and(|pid| pid != std::process::id() && process_gone(pid)) {
            remove_mirror(&path);
        }
    }
    let mirror = cache.join(format!(
        "{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    // A leftover of an earlier process with this pid.
    remove_mirror(&mirror);
    private_dir(&mirror.join("skills")).map_err(io)?;
    private_dir(&mirror.join("work")).map_err(io)?;
    Ok(mirror)
}

/// Removes the mirror folder `path` (its read-only folders made writable first).
#[expect(
    clippy::disallowed_methods,
    reason = "the mirror cache is the operator's data directory, never a model-supplied path"
)]
fn remove_mirror(path: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    fn writable(dir: &Path) {
        let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                writable(&entry.path());
            }
        }
    }
    if std::fs::symlink_metadata(path).is_ok_and(|meta| meta.is_dir()) {
        writable(path);
        let _ = std::fs::remove_dir_all(path);
    }
}

/// Whether no process `pid` runs (on Linux: no `/proc/<pid>`).
fn process_gone(pid: u32) -> bool {
    !Path::new(&format!("/proc/{pid}")).exists()
}

/// Creates `dir` (and its parents) with mode 0700 when missing.
fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    match std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
    {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(error) => Err(error),
    }
}

/// Why the team's memory and skills cannot be read from `[team] shared_dir` any more.
pub fn shared_dir_refusal(earlier: &pp_store::TeamImport, config: &str) -> String {
    format!(
        "`[team] shared_dir` is no longer used: the team's memory and skills live in the \
         database since they were imported from {} ({}); remove `shared_dir` from the \
         [team] table of {config}",
        earlier.source, earlier.detail
    )
}
