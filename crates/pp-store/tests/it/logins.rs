//! Console logins.

use std::time::Duration;

use crate::TestDb;

#[tokio::test]
async fn a_login_is_valid_until_deleted() {
    let db = TestDb::new().await;
    let session = db
        .store
        .create_login(Duration::from_secs(3600))
        .await
        .unwrap();
    assert_eq!(session.len(), 64);
    assert!(session.bytes().all(|byte| byte.is_ascii_hexdigit()));
    assert!(db.store.login_valid(&session).await.unwrap());
    assert!(db.open_again().await.login_valid(&session).await.unwrap());
    db.store.delete_login(&session).await.unwrap();
    assert!(!db.store.login_valid(&session).await.unwrap());
    db.store.delete_login(&session).await.unwrap();
}

#[tokio::test]
async fn unknown_and_expired_logins_are_invalid() {
    let db = TestDb::new().await;
    assert!(!db.store.login_valid("").await.unwrap());
    assert!(!db.store.login_valid(&"0".repeat(64)).await.unwrap());
    let expired = db.store.create_login(Duration::ZERO).await.unwrap();
    assert!(!db.store.login_valid(&expired).await.unwrap());
    let short = db
        .store
        .create_login(Duration::from_millis(30))
        .await
        .unwrap();
    db.clock.advance(Duration::from_millis(29));
    assert!(db.store.login_valid(&short).await.unwrap());
    assert!(db.open_again().await.login_valid(&short).await.unwrap());
    db.clock.advance(Duration::from_millis(1));
    assert!(
        !db.store.login_valid(&short).await.unwrap(),
        "expired at 30 ms"
    );
    assert!(!db.open_again().await.login_valid(&short).await.unwrap());
}

#[tokio::test]
async fn logins_expire_by_the_store_clock_and_are_purged_by_it() {
    let db = TestDb::new().await;
    let day = db
        .store
        .create_login(Duration::from_secs(86_400))
        .await
        .unwrap();
    let raw_expiry: i64 = db
        .raw()
        .query_row("SELECT expires_at FROM console_logins", [], |row| {
            row.get(0)
        })
        .unwrap();
    assert_eq!(raw_expiry, crate::START.as_millis() + 86_400_000);
    db.clock.advance(Duration::from_secs(86_400));
    assert!(!db.store.login_valid(&day).await.unwrap());
    // Creating another session purges the expired one.
    let _next = db
        .store
        .create_login(Duration::from_secs(60))
        .await
        .unwrap();
    let count: i64 = db
        .raw()
        .query_row("SELECT COUNT(*) FROM console_logins", [], |row| row.get(0))
        .unwrap();
    assert_eq!(count, 1);
}

#[tokio::test]
async fn only_a_hash_of_the_login_id_is_stored_and_expired_rows_are_purged() {
    let db = TestDb::new().await;
    let _expired = db.store.create_login(Duration::ZERO).await.unwrap();
    let session = db
        .store
        .create_login(Duration::from_secs(60))
        .await
        .unwrap();
    let raw = db.raw();
    let stored: Vec<String> = raw
        .prepare("SELECT id_sha256 FROM console_logins")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(stored.len(), 1, "the expired session was purged");
    assert_ne!(stored[0], session);
    assert_eq!(stored[0].len(), 64);
}

#[tokio::test]
async fn all_logins_can_be_ended_at_once() {
    let db = TestDb::new().await;
    let first = db
        .store
        .create_login(Duration::from_secs(60))
        .await
        .unwrap();
    let second = db
        .store
        .create_login(Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(db.store.delete_all_logins().await.unwrap(), 2);
    assert!(!db.store.login_valid(&first).await.unwrap());
    assert!(!db.store.login_valid(&second).await.unwrap());
    assert_eq!(db.store.delete_all_logins().await.unwrap(), 0);
}
