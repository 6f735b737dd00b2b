//! The worker registry and workspace-aware claims: each worker process registers the
//! workspaces it has, sends heartbeats, and claims only tasks it can run.

use std::collections::HashSet;
use std::time::Duration;

use pp_store::{Error, NewTask, NewWorker};
use pp_types::{TaskId, TaskState};
use pretty_assertions::assert_eq;

use crate::{START, TestDb, new_task, race};

fn worker(host: &str, workspaces: &[&str]) -> NewWorker {
    NewWorker {
        host: host.into(),
        pid: 4242,
        workspaces: workspaces.iter().map(|name| (*name).to_owned()).collect(),
    }
}

fn names(workspaces: &[&str]) -> Vec<String> {
    workspaces.iter().map(|name| (*name).to_owned()).collect()
}

fn task_in(workspace: &str, prompt: &str) -> NewTask {
    NewTask {
        workspace: workspace.into(),
        workspace_path: format!("/srv/{workspace}"),
        ..new_task(prompt)
    }
}

both!(workers_register_heartbeat_and_drop_out_of_the_live_list);
async fn workers_register_heartbeat_and_drop_out_of_the_live_list(db: TestDb) {
    let alpha = db
        .store
        .register_worker(worker("alpha", &["home", "finance"]))
        .await
        .unwrap();
    assert!(alpha.id.starts_with("w_"), "{}", alpha.id);
    assert_eq!(alpha.host, "alpha");
    assert_eq!(alpha.pid, 4242);
    assert_eq!(alpha.workspaces, names(&["home", "finance"]));
    assert_eq!((alpha.started_at, alpha.heartbeat_at), (START, START));
    db.clock.advance(Duration::from_secs(1));
    let beta = db
        .open_again()
        .await
        .register_worker(worker("beta", &["home"]))
        .await
        .unwrap();
    assert_ne!(alpha.id, beta.id);
    let lease = Duration::from_secs(10);
    assert_eq!(
        db.store.live_workers(lease).await.unwrap(),
        [alpha.clone(), beta.clone()],
        "oldest registration first, seen by every store"
    );

    db.clock.advance(Duration::from_secs(9));
    db.store.worker_heartbeat(&beta.id).await.unwrap();
    db.clock.advance(Duration::from_secs(1));
    let live = db.store.live_workers(lease).await.unwrap();
    assert_eq!(
        live.iter().map(|w| w.id.as_str()).collect::<Vec<_>>(),
        [beta.id.as_str()],
        "alpha has been silent for longer than the lease"
    );
    assert_eq!(
        live[0].heartbeat_at,
        START.saturating_add(Duration::from_secs(10))
    );

    db.store.remove_worker(&beta.id).await.unwrap();
    db.store.remove_worker(&beta.id).await.unwrap();
    assert!(db.store.live_workers(lease).await.unwrap().is_empty());
    assert!(matches!(
        db.store.worker_heartbeat(&beta.id).await,
        Err(Error::NotFound { what: "worker", .. })
    ));
    // A silent worker's row stays until it is forgotten; its heartbeat revives it.
    db.store.worker_heartbeat(&alpha.id).await.unwrap();
    assert_eq!(db.store.live_workers(lease).await.unwrap().len(), 1);
}

both!(workers_silent_for_longer_than_asked_are_forgotten);
async fn workers_silent_for_longer_than_asked_are_forgotten(db: TestDb) {
    let dead = db
        .store
        .register_worker(worker("dead", &["legal"]))
        .await
        .unwrap();
    db.clock.advance(Duration::from_secs(20));
    let alive = db
        .store
        .register_worker(worker("alive", &["home"]))
        .await
        .unwrap();
    let all = Duration::from_secs(3600);
    assert_eq!(db.store.live_workers(all).await.unwrap().len(), 2);
    assert_eq!(
        db.store
            .forget_workers(Duration::from_secs(30))
            .await
            .unwrap(),
        0,
        "both spoke within 30 s"
    );
    db.clock.advance(Duration::from_secs(15));
    assert_eq!(
        db.store
            .forget_workers(Duration::from_secs(30))
            .await
            .unwrap(),
        1
    );
    assert_eq!(db.store.live_workers(all).await.unwrap(), [alive]);
    assert!(matches!(
        db.store.worker_heartbeat(&dead.id).await,
        Err(Error::NotFound { what: "worker", .. })
    ));
}

both!(a_worker_claims_only_tasks_of_its_workspaces_oldest_first);
async fn a_worker_claims_only_tasks_of_its_workspaces_oldest_first(db: TestDb) {
    let home = db.store.create_task(task_in("home", "a")).await.unwrap();
    let finance = db.store.create_task(task_in("finance", "b")).await.unwrap();
    let later_home = db.store.create_task(task_in("home", "c")).await.unwrap();
    assert_eq!(db.store.claim_queued_in(&[]).await.unwrap(), None);
    assert_eq!(
        db.store
            .claim_queued_in(&names(&["research"]))
            .await
            .unwrap(),
        None
    );
    let first = db
        .store
        .claim_queued_in(&names(&["home"]))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first.id, home.id);
    assert_eq!(first.state, TaskState::Running);
    let second = db
        .store
        .claim_queued_in(&names(&["finance", "home"]))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(second.id, finance.id, "oldest of either workspace");
    let third = db
        .store
        .claim_queued_in(&names(&["home"]))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(third.id, later_home.id);
    assert_eq!(
        db.store
            .claim_queued_in(&names(&["home", "finance"]))
            .await
            .unwrap(),
        None
    );
}

both!(workers_with_overlapping_workspaces_claim_each_task_once_and_only_their_own);
async fn workers_with_overlapping_workspaces_claim_each_task_once_and_only_their_own(db: TestDb) {
    const PER_WORKSPACE: usize = 40;
    let mut created = HashSet::new();
    for n in 0..PER_WORKSPACE {
        for workspace in ["home", "finance", "research"] {
            let task = db
                .store
                .create_task(task_in(workspace, &format!("{workspace} {n}")))
                .await
                .unwrap();
            created.insert((task.id, workspace.to_owned()));
        }
    }
    let sets: [&[&str]; 6] = [
        &["home"],
        &["home", "finance"],
        &["finance"],
        &["home"],
        &["finance", "home"],
        &["finance"],
    ];
    let mut stores = Vec::new();
    for _ in sets {
        stores.push(db.open_again().await);
    }
    let claimed: Vec<Vec<(TaskId, String)>> = race(stores, |n, store| {
        let mine = names(sets[n]);
        async move {
            let mut claimed = Vec::new();
            while let Some(task) = store.claim_queued_in(&mine).await.unwrap() {
                assert!(
                    mine.contains(&task.workspace),
                    "{} not in {mine:?}",
                    task.workspace
                );
                claimed.push((task.id, task.workspace));
            }
            claimed
        }
    })
    .await;
    let all: Vec<_> = claimed.into_iter().flatten().collect();
    assert_eq!(all.len(), 2 * PER_WORKSPACE, "no task claimed twice");
    let all: HashSet<_> = all.into_iter().collect();
    let expected: HashSet<_> = created
        .into_iter()
        .filter(|(_, workspace)| workspace != "research")
        .collect();
    assert_eq!(all, expected);
    let waiting = db
        .store
        .list_tasks(Some(TaskState::Queued), 100)
        .await
        .unwrap();
    assert_eq!(
        waiting.len(),
        PER_WORKSPACE,
        "no worker has `research`: they wait"
    );
    assert!(waiting.iter().all(|task| task.workspace == "research"));
}
