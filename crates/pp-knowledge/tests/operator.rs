//! The operator services against a real store on a manual clock: every skill change and
//! every memory change is audited as the operator, refusals write nothing and no row,
//! and the memory is a compare-and-swap on its version.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    reason = "tests set up fixtures with std::fs and panic on broken fixtures"
)]

use std::path::Path;
use std::sync::Arc;

use pp_knowledge::{
    Error, MemoryError, MemoryService, MemorySettings, SkillsError, SkillsService, SkillsSettings,
};
use pp_store::{AuditFilter, Store};
use pp_test_support::skills::skill_md;
use pp_types::{Actor, AuditEntry, ManualClock, Timestamp};
use pretty_assertions::assert_eq;
use serde_json::json;

fn store(dir: &Path) -> Store {
    let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_700_000_000_000)));
    Store::open_with_clock(&dir.join("test.db"), clock).unwrap()
}

async fn audit(store: &Store, action: &str) -> Vec<AuditEntry> {
    store
        .list_audit(&AuditFilter {
            action: Some(action.into()),
            limit: 1000,
            ..AuditFilter::default()
        })
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_skills_service_audits_every_change_as_the_operator() {
    let data = tempfile::tempdir().unwrap();
    let home = data.path().join("skills");
    std::fs::create_dir_all(&home).unwrap();
    let store = store(data.path());
    let skills = SkillsService::new(SkillsSettings::new(home), store.clone());
    skills
        .put_skill_md("notes", skill_md("notes", "Notes.", "Body.\n"), None)
        .await
        .unwrap();
    skills
        .put_file("notes", "refs/a.md", b"A".to_vec(), None)
        .await
        .unwrap();
    let error = skills
        .put_skill_md("notes", "broken".into(), None)
        .await
        .unwrap_err();
    assert!(
        matches!(error, Error::Skill(SkillsError::Invalid { .. })),
        "{error}"
    );
    let list = skills.list().await.unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].name, "notes");
    assert_eq!(list[0].source, "home");
    let view = skills.show("notes").await.unwrap();
    assert_eq!(view.files, ["refs/a.md"]);
    assert_eq!(
        serde_json::to_value(&view.summary).unwrap(),
        json!({"name": "notes", "description": "Notes.", "valid": true, "reason": null,
               "source": "home", "read_only": false})
    );
    skills.remove("notes", None).await.unwrap();
    assert!(matches!(
        skills.remove("notes", None).await,
        Err(Error::Skill(SkillsError::NotFound { .. }))
    ));

    let updated = audit(&store, "skill_updated").await;
    let targets: Vec<_> = updated
        .iter()
        .map(|row| {
            (
                row.actor,
                row.target.clone().unwrap(),
                row.detail.clone().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        targets,
        [
            (
                Actor::Operator,
                "notes/refs/a.md".to_owned(),
                "created".to_owned()
            ),
            (
                Actor::Operator,
                "notes/SKILL.md".to_owned(),
                "created".to_owned()
            ),
        ]
    );
    let removed = audit(&store, "skill_removed").await;
    assert_eq!(removed.len(), 1);
    assert_eq!(removed[0].actor, Actor::Operator);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_memory_service_is_a_compare_and_swap_audited_as_operator() {
    let data = tempfile::tempdir().unwrap();
    let store = store(data.path());
    let memory = MemoryService::new(MemorySettings::new(data.path()), store.clone());
    let empty = memory.get().await.unwrap();
    assert_eq!(
        (empty.content.as_str(), empty.version.as_str()),
        ("", "absent")
    );
    let first = memory
        .put_if_version("absent", "one\n".into())
        .await
        .unwrap();
    assert_eq!(memory.get().await.unwrap(), first);
    let error = memory
        .put_if_version("absent", "two\n".into())
        .await
        .unwrap_err();
    assert!(
        matches!(error, Error::Memory(MemoryError::VersionMismatch { .. })),
        "{error}"
    );
    let on_disk = std::fs::read_to_string(data.path().join("memory.md")).unwrap();
    assert_eq!(on_disk, "one\n", "nothing written by the refused swap");
    let audit = audit(&store, "memory_updated").await;
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].actor, Actor::Operator);
    assert_eq!(audit[0].target.as_deref(), Some("memory.md"));
}
