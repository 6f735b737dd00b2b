//! Console logins.

use std::time::Duration;

use crate::TestDb;

#[test]
fn a_login_is_valid_until_deleted() {
    let db = TestDb::new();
    let session = db.store.create_login(Duration::from_secs(3600)).unwrap();
    assert_eq!(session.len(), 64);
    assert!(session.bytes().all(|byte| byte.is_ascii_hexdigit()));
    assert!(db.store.login_valid(&session).unwrap());
    assert!(db.open_again().login_valid(&session).unwrap());
    db.store.delete_login(&session).unwrap();
    assert!(!db.store.login_valid(&session).unwrap());
    db.store.delete_login(&session).unwrap();
}

#[test]
fn unknown_and_expired_logins_are_invalid() {
    let db = TestDb::new();
    assert!(!db.store.login_valid("").unwrap());
    assert!(!db.store.login_valid(&"0".repeat(64)).unwrap());
    let expired = db.store.create_login(Duration::ZERO).unwrap();
    assert!(!db.store.login_valid(&expired).unwrap());
    let short = db.store.create_login(Duration::from_millis(30)).unwrap();
    db.clock.advance(Duration::from_millis(29));
    assert!(db.store.login_valid(&short).unwrap());
    assert!(db.open_again().login_valid(&short).unwrap());
    db.clock.advance(Duration::from_millis(1));
    assert!(!db.store.login_valid(&short).unwrap(), "expired at 30 ms");
    assert!(!db.open_again().login_valid(&short).unwrap());
}

#[test]
fn logins_expire_by_the_store_clock_and_are_purged_by_it() {
    let db = TestDb::new();
    let day = db.store.create_login(Duration::from_secs(86_400)).unwrap();
    let raw_expiry: i64 = db
        .raw()
        .query_row("SELECT expires_at FROM console_logins", [], |row| {
            row.get(0)
        })
        .unwrap();
    assert_eq!(raw_expiry, crate::START.as_millis() + 86_400_000);
    db.clock.advance(Duration::from_secs(86_400));
    assert!(!db.store.login_valid(&day).unwrap());
    // Creating another session purges the expired one.
    let _next = db.store.create_login(Duration::from_secs(60)).unwrap();
    let count: i64 = db
        .raw()
        .query_row("SELECT COUNT(*) FROM console_logins", [], |row| row.get(0))
        .unwrap();
    assert_eq!(count, 1);
}

#[test]
fn only_a_hash_of_the_login_id_is_stored_and_expired_rows_are_purged() {
    let db = TestDb::new();
    let _expired = db.store.create_login(Duration::ZERO).unwrap();
    let session = db.store.create_login(Duration::from_secs(60)).unwrap();
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

#[test]
fn all_logins_can_be_ended_at_once() {
    let db = TestDb::new();
    let first = db.store.create_login(Duration::from_secs(60)).unwrap();
    let second = db.store.create_login(Duration::from_secs(60)).unwrap();
    assert_eq!(db.store.delete_all_logins().unwrap(), 2);
    assert!(!db.store.login_valid(&first).unwrap());
    assert!(!db.store.login_valid(&second).unwrap());
    assert_eq!(db.store.delete_all_logins().unwrap(), 0);
}
