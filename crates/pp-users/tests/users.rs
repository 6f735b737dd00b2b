//! Users and console logins against a real store on a manual clock: logins live for
//! their time to live and end on logout; names, roles and grants are checked; a rotated
//! token ends the user's logins.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    reason = "tests set up fixtures with std::fs and panic on broken fixtures"
)]

use std::sync::Arc;
use std::time::Duration;

use pp_store::Store;
use pp_tasks::{Error, ModelSource, TaskService, TaskSettings, Workspaces};
use pp_types::{ManualClock, Role, Timestamp};
use pp_users::{LoginOwner, Users, parse_role};

struct Fixture {
    _dir: tempfile::TempDir,
    clock: Arc<ManualClock>,
    users: Users,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_700_000_000_000)));
    let store = Store::open_with_clock(&dir.path().join("db.sqlite"), clock.clone()).unwrap();
    let service = TaskService::new(
        store.clone(),
        TaskSettings::default(),
        Workspaces::single("main", dir.path()),
        ModelSource::Scripted,
    );
    Fixture {
        _dir: dir,
        clock,
        users: Users::new(service, store),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn logins_round_trip_and_expire_on_the_clock() {
    let fixture = fixture();
    let users = &fixture.users;
    let login = users
        .create_login(None, Duration::from_secs(60))
        .await
        .unwrap();
    assert!(users.login_valid(login.clone()).await.unwrap());
    assert_eq!(
        users.login_owner(login.clone()).await.unwrap(),
        Some(LoginOwner::Server)
    );
    users.end_login(login.clone()).await.unwrap();
    assert!(!users.login_valid(login).await.unwrap());

    let short = users
        .create_login(None, Duration::from_secs(60))
        .await
        .unwrap();
    fixture
        .clock
        .set(Timestamp::from_millis(1_700_000_000_000 + 61_000));
    assert!(
        !users.login_valid(short).await.unwrap(),
        "a login past its time to live is not live"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn names_roles_and_grants_are_checked_and_rotation_ends_logins() {
    let fixture = fixture();
    let users = &fixture.users;
    assert!(matches!(
        users.add("Bad Name", Role::Member).await,
        Err(Error::BadRequest(_))
    ));
    assert!(matches!(parse_role("admin"), Err(Error::BadRequest(_))));
    assert_eq!(parse_role("approver").unwrap(), Role::Approver);

    let mia = users.add("mia", Role::Member).await.unwrap();
    assert!(mia.token.starts_with("ppu_"), "{}", mia.token);
    assert!(matches!(
        users.add("mia", Role::Viewer).await,
        Err(Error::BadRequest(message)) if message.contains("already exists")
    ));
    assert!(matches!(
        users.grant_workspace("mia", "nowhere").await,
        Err(Error::NotFound {
            what: "workspace",
            ..
        })
    ));
    let granted = users.grant_workspace("mia", "main").await.unwrap();
    assert_eq!(granted.workspaces, ["main"]);
    assert_eq!(
        users
            .by_token(mia.token.clone())
            .await
            .unwrap()
            .unwrap()
            .name,
        "mia"
    );

    users
        .create_login(Some("mia".into()), Duration::from_secs(600))
        .await
        .unwrap();
    let rotated = users.rotate_token("mia").await.unwrap();
    assert_eq!(rotated.logins_ended, 1);
    assert!(
        users.by_token(mia.token).await.unwrap().is_none(),
        "old token"
    );
    assert_eq!(users.list().await.unwrap().len(), 1);
}
