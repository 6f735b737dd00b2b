//! The team's memory and skills (team mode): each change a compare-and-swap the
//! database enforces, and the one import record.

use pp_store::SkillFile;
use pretty_assertions::assert_eq;

use crate::{START, TestDb};

fn file(path: &str, content: &[u8]) -> SkillFile {
    SkillFile {
        path: path.to_owned(),
        content: content.to_vec(),
    }
}

both!(the_team_memory_is_a_compare_and_swap);
async fn the_team_memory_is_a_compare_and_swap(db: TestDb) {
    let store = &db.store;
    assert_eq!(store.team_memory().await.unwrap(), None);
    // Nothing to remove or replace yet.
    assert!(!store.remove_team_memory("v1").await.unwrap());
    assert!(
        !store
            .replace_team_memory(Some("v0"), "x", "v1")
            .await
            .unwrap()
    );
    assert!(
        store
            .replace_team_memory(None, "likes tea\n", "v1")
            .await
            .unwrap()
    );
    // A second creator loses: the memory exists now.
    assert!(
        !store
            .replace_team_memory(None, "other\n", "v9")
            .await
            .unwrap()
    );
    let memory = store.team_memory().await.unwrap().unwrap();
    assert_eq!(
        (
            memory.content.as_str(),
            memory.version.as_str(),
            memory.updated_at
        ),
        ("likes tea\n", "v1", START)
    );
    // A write based on an old version changes nothing.
    assert!(
        !store
            .replace_team_memory(Some("v0"), "stale\n", "v2")
            .await
            .unwrap()
    );
    assert!(
        store
            .replace_team_memory(Some("v1"), "likes coffee\n", "v2")
            .await
            .unwrap()
    );
    assert_eq!(
        store.team_memory().await.unwrap().unwrap().content,
        "likes coffee\n"
    );
    assert!(!store.remove_team_memory("v1").await.unwrap());
    assert!(store.remove_team_memory("v2").await.unwrap());
    assert_eq!(store.team_memory().await.unwrap(), None);
}

both!(two_memory_writers_from_one_version_cannot_both_win);
async fn two_memory_writers_from_one_version_cannot_both_win(db: TestDb) {
    let store = db.store.clone();
    assert!(
        store
            .replace_team_memory(None, "base\n", "base")
            .await
            .unwrap()
    );
    let writers: Vec<_> = (0..8)
        .map(|n| {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .replace_team_memory(Some("base"), &format!("writer {n}\n"), &format!("v{n}"))
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut wins = 0;
    for writer in writers {
        wins += usize::from(writer.await.unwrap());
    }
    assert_eq!(wins, 1);
}

both!(team_skills_are_kept_with_their_files_and_swapped_by_version);
async fn team_skills_are_kept_with_their_files_and_swapped_by_version(db: TestDb) {
    let store = &db.store;
    assert_eq!(store.team_skill_versions().await.unwrap(), []);
    assert_eq!(store.team_skill("notes").await.unwrap(), None);
    let first = [
        file("SKILL.md", b"---\nname: notes\n---\n"),
        file("bin/x", &[0, 255]),
    ];
    assert!(
        store
            .put_team_skill("notes", None, "n1", &first)
            .await
            .unwrap()
    );
    assert!(
        !store
            .put_team_skill("notes", None, "n9", &first)
            .await
            .unwrap(),
        "exists"
    );
    assert!(
        store
            .put_team_skill("alpha", None, "a1", &first[..1])
            .await
            .unwrap()
    );
    assert_eq!(
        store.team_skill_versions().await.unwrap(),
        [
            ("alpha".to_owned(), "a1".to_owned()),
            ("notes".to_owned(), "n1".to_owned())
        ]
    );
    let notes = store.team_skill("notes").await.unwrap().unwrap();
    assert_eq!((notes.version.as_str(), notes.updated_at), ("n1", START));
    assert_eq!(notes.files, first, "by path, bytes intact");
    // A stale version changes nothing; the current one replaces every file.
    let second = [file("SKILL.md", b"---\nname: notes\n---\nv2\n")];
    assert!(
        !store
            .put_team_skill("notes", Some("n0"), "n2", &second)
            .await
            .unwrap()
    );
    assert!(
        store
            .put_team_skill("notes", Some("n1"), "n2", &second)
            .await
            .unwrap()
    );
    let notes = store.team_skill("notes").await.unwrap().unwrap();
    assert_eq!(
        (notes.version.as_str(), notes.files),
        ("n2", second.to_vec())
    );
    assert!(!store.remove_team_skill("notes", "n1").await.unwrap());
    assert!(store.remove_team_skill("notes", "n2").await.unwrap());
    assert_eq!(store.team_skill("notes").await.unwrap(), None);
    assert_eq!(store.team_skill_versions().await.unwrap().len(), 1);
    // A skill created again after its removal has only its new files.
    assert!(
        store
            .put_team_skill("notes", None, "n3", &second)
            .await
            .unwrap()
    );
    assert_eq!(
        store
            .team_skill("notes")
            .await
            .unwrap()
            .unwrap()
            .files
            .len(),
        1
    );
}

both!(the_team_import_is_recorded_once);
async fn the_team_import_is_recorded_once(db: TestDb) {
    let store = &db.store;
    assert_eq!(store.team_import().await.unwrap(), None);
    assert!(
        store
            .record_team_import("/srv/team", "memory and 2 skills")
            .await
            .unwrap()
    );
    assert!(
        !store
            .record_team_import("/elsewhere", "nothing")
            .await
            .unwrap()
    );
    let import = store.team_import().await.unwrap().unwrap();
    assert_eq!(
        (
            import.source.as_str(),
            import.detail.as_str(),
            import.imported_at
        ),
        ("/srv/team", "memory and 2 skills", START)
    );
}
