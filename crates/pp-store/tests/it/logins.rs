//! Console logins.

use std::time::Duration;

use crate::TestDb;

both!(a_login_is_valid_until_deleted);
async fn a_login_is_valid_until_deleted(db: TestDb) {
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

both!(unknown_and_expired_logins_are_invalid);
async fn unknown_and_expired_logins_are_invalid(db: TestDb) {
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

both!(all_logins_can_be_ended_at_once);
async fn all_logins_can_be_ended_at_once(db: TestDb) {
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
