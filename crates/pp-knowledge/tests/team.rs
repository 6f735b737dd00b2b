//! Team mode: the memory and skills in the database, two "processes" (two
//! [`TeamKnowledge`] mirrors on one store) seeing each other's changes, every change a
//! compare-and-swap the database decides, and the one import from a folder.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    reason = "tests set up fixtures with std::fs and panic on broken fixtures"
)]

use std::path::Path;
use std::sync::Arc;

use pp_knowledge::{
    Error, Imported, MemoryError, MemoryService, MemorySettings, SkillsError, SkillsService,
    SkillsSettings, TeamKnowledge,
};
use pp_store::Store;
use pp_test_support::skills::skill_md;
use pp_types::{ManualClock, Timestamp};
use pretty_assertions::assert_eq;

fn store(dir: &Path) -> Store {
    let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_700_000_000_000)));
    Store::open_with_clock(&dir.join("team.db"), clock).unwrap()
}

/// Registers `async fn NAME(store: Store)` twice: `NAME::sqlite` (a database file) and
/// `NAME::postgres` (a schema of its own on the test server; skipped without one,
/// failing under CI).
macro_rules! both {
    ($name:ident) => {
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                let dir = tempfile::tempdir().unwrap();
                super::$name(super::store(dir.path())).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                let Some(schema) =
                    pp_test_support::postgres::Schema::create("knowledge", stringify!($name))
                else {
                    return;
                };
                let clock = std::sync::Arc::new(pp_types::ManualClock::new(
                    pp_types::Timestamp::from_millis(1_700_000_000_000),
                ));
                let store = pp_store::Store::connect(&schema.store_url(), clock)
                    .await
                    .unwrap();
                super::$name(store).await;
            }
        }
    };
}

/// One process of the team: its memory and skills services over the team's store.
struct Process {
    memory: MemoryService,
    skills: SkillsService,
}

fn process(store: &Store, data: &Path) -> Process {
    let team = TeamKnowledge::open(store.clone(), &data.join("team-cache")).unwrap();
    let own = SkillsSettings::new(data.join("skills"));
    Process {
        memory: MemoryService::new(team.memory(&MemorySettings::new(data)), store.clone()),
        skills: SkillsService::new(team.skills(&own), store.clone()),
    }
}

both!(two_processes_share_one_memory_decided_by_the_database);
async fn two_processes_share_one_memory_decided_by_the_database(store: Store) {
    let data = tempfile::tempdir().unwrap();
    let (a, b) = (process(&store, data.path()), process(&store, data.path()));
    let empty = b.memory.get().await.unwrap();
    assert_eq!(
        (empty.content.as_str(), empty.version.as_str()),
        ("", "absent")
    );
    let written = a
        .memory
        .put_if_version("absent", "likes tea\n".into())
        .await
        .unwrap();
    assert_eq!(b.memory.get().await.unwrap(), written);
    assert_eq!(
        store.team_memory().await.unwrap().unwrap().content,
        "likes tea\n"
    );
    // Nothing was written to the data directory's own memory file.
    assert!(!data.path().join("memory.md").exists());
    // B edits from what it read; A's edit from the same version is refused.
    b.memory
        .put_if_version(&written.version, "likes coffee\n".into())
        .await
        .unwrap();
    let lost = a
        .memory
        .put_if_version(&written.version, "stale\n".into())
        .await
        .unwrap_err();
    assert!(
        matches!(lost, Error::Memory(MemoryError::VersionMismatch { .. })),
        "{lost:?}"
    );
    assert_eq!(a.memory.get().await.unwrap().content, "likes coffee\n");
}

both!(two_processes_share_one_set_of_skills_with_if_match);
async fn two_processes_share_one_set_of_skills_with_if_match(store: Store) {
    let data = tempfile::tempdir().unwrap();
    let (a, b) = (process(&store, data.path()), process(&store, data.path()));
    a.skills
        .put_skill_md("notes", skill_md("notes", "Notes.", "v1\n"), None)
        .await
        .unwrap();
    let listed = b.skills.list().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!((listed[0].name.as_str(), listed[0].valid), ("notes", true));
    let shown = b.skills.show("notes").await.unwrap();
    let v1 = shown.version.clone().unwrap();
    assert_eq!(
        Some(v1.clone()),
        store.team_skill("notes").await.unwrap().map(|s| s.version)
    );
    b.skills
        .put_file("notes", "refs/a.md", b"A".to_vec(), Some(v1.clone()))
        .await
        .unwrap();
    // A's change based on v1 is refused: B changed the skill since.
    let lost = a.skills.remove("notes", Some(v1)).await.unwrap_err();
    assert!(
        matches!(lost, Error::Skill(SkillsError::VersionMismatch { .. })),
        "{lost:?}"
    );
    assert_eq!(a.skills.show("notes").await.unwrap().files, ["refs/a.md"]);
    a.skills.remove("notes", None).await.unwrap();
    assert!(b.skills.list().await.unwrap().is_empty());
    assert_eq!(store.team_skill_versions().await.unwrap(), []);
}

both!(a_folder_is_imported_once_per_team);
async fn a_folder_is_imported_once_per_team(store: Store) {
    let data = tempfile::tempdir().unwrap();
    let shared = data.path().join("shared");
    std::fs::create_dir_all(shared.join("skills/tidy")).unwrap();
    std::fs::write(shared.join("memory.md"), "the team likes tea\n").unwrap();
    std::fs::write(
        shared.join("skills/tidy/SKILL.md"),
        skill_md("tidy", "Tidy.", "Tidy up.\n"),
    )
    .unwrap();
    std::fs::create_dir_all(shared.join("skills/broken")).unwrap();
    std::fs::write(shared.join("skills/broken/SKILL.md"), "no front matter").unwrap();
    let team = TeamKnowledge::open(store.clone(), &data.path().join("team-cache")).unwrap();
    let (memory, skills) = (
        MemorySettings::new(data.path()),
        SkillsSettings::new(data.path().join("skills")),
    );
    let first = team.import_once(&shared, &memory, &skills).await.unwrap();
    let Imported::Now {
        memory: had_memory,
        skills: names,
        skipped,
    } = first
    else {
        panic!("{first:?}");
    };
    assert!(had_memory);
    assert_eq!(names, ["tidy"]);
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert!(skipped[0].starts_with("broken"), "{skipped:?}");
    assert_eq!(
        store.team_memory().await.unwrap().unwrap().content,
        "the team likes tea\n"
    );
    let tidy = store.team_skill("tidy").await.unwrap().unwrap();
    assert_eq!(tidy.files.len(), 1);
    // A second import, from any folder, only reports the first.
    std::fs::write(shared.join("memory.md"), "changed\n").unwrap();
    let again = team.import_once(&shared, &memory, &skills).await.unwrap();
    let Imported::Earlier(earlier) = again else {
        panic!("{again:?}");
    };
    assert_eq!(earlier.source, shared.display().to_string());
    assert_eq!(earlier.detail, "memory and 1 skill");
    assert_eq!(
        store.team_memory().await.unwrap().unwrap().content,
        "the team likes tea\n"
    );
    let refusal = pp_knowledge::shared_dir_refusal(&earlier, "/etc/pp.toml");
    assert!(refusal.contains("remove `shared_dir`"), "{refusal}");
    assert!(refusal.contains("/etc/pp.toml"), "{refusal}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mirrors_of_processes_no_longer_running_are_removed() {
    use std::os::unix::fs::PermissionsExt as _;
    let data = tempfile::tempdir().unwrap();
    let store = store(data.path());
    let cache = data.path().join("team-cache");
    // A dead process's mirror (pid numbers stop well below this one), read-only inside.
    let dead = cache.join("4000000000-0");
    std::fs::create_dir_all(dead.join("skills/notes")).unwrap();
    std::fs::write(dead.join("skills/notes/SKILL.md"), "x").unwrap();
    std::fs::set_permissions(
        dead.join("skills/notes"),
        std::fs::Permissions::from_mode(0o555),
    )
    .unwrap();
    // A live process's (pid 1 always runs).
    let live = cache.join("1-0");
    std::fs::create_dir_all(&live).unwrap();
    let _team = TeamKnowledge::open(store, &cache).unwrap();
    assert!(!dead.exists());
    assert!(live.exists());
    // This process's own, private.
    let mine: Vec<_> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with(&format!("{}-", std::process::id()))
        })
        .collect();
    assert_eq!(mine.len(), 1, "{mine:?}");
    let mode = std::fs::metadata(&mine[0]).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
}
