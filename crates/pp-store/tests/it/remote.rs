//! Remote decisions through a messenger: card messages bound to an approval and a
//! fingerprint, settled once; the update offset that never goes back; one poller lease
//! at a time across processes; refused taps audited at most once per chat per window.

use std::time::Duration;

use pp_store::NewRemoteMessage;
use pp_types::ApprovalId;
use pretty_assertions::assert_eq;

use crate::{START, TestDb};

fn card(chat: &str, message: &str, approval: &ApprovalId) -> NewRemoteMessage {
    NewRemoteMessage {
        messenger: "telegram".into(),
        chat_id: chat.into(),
        message_id: message.into(),
        approval_id: approval.clone(),
        fingerprint: Some("fp-1".into()),
        callback_id: format!("c{chat}{message}0123456789abcdef"),
    }
}

both!(card_messages_are_found_by_chat_and_message_and_settle_once);
async fn card_messages_are_found_by_chat_and_message_and_settle_once(db: TestDb) {
    let (_, approval) = db.waiting("write a.md").await;
    let first = db
        .store
        .add_remote_message(card("-100", "7", &approval.id))
        .await
        .unwrap();
    assert_eq!(first.sent_at, START);
    assert_eq!((first.decided_at, first.outcome.as_deref()), (None, None));
    db.clock.advance(Duration::from_secs(1));
    let second = db
        .store
        .add_remote_message(card("42", "7", &approval.id))
        .await
        .unwrap();
    // The same message id in another chat is another message; the same one twice is not.
    assert!(
        db.store
            .add_remote_message(card("-100", "7", &approval.id))
            .await
            .is_err()
    );
    assert_eq!(
        db.store
            .remote_message("telegram", "-100", "7")
            .await
            .unwrap(),
        Some(first.clone())
    );
    assert_eq!(
        db.store
            .remote_message("telegram", "-100", "8")
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        db.store.remote_message("slack", "-100", "7").await.unwrap(),
        None,
        "another messenger's message"
    );
    assert_eq!(
        db.store
            .remote_messages_for_approval("telegram", &approval.id)
            .await
            .unwrap(),
        [first.clone(), second.clone()]
    );
    assert_eq!(
        db.store.live_remote_messages("telegram").await.unwrap(),
        [first.clone(), second.clone()]
    );

    db.clock.advance(Duration::from_secs(1));
    assert!(
        db.store
            .settle_remote_message("telegram", "-100", "7", "approved by ann")
            .await
            .unwrap()
    );
    // Exactly once, whichever process comes second.
    assert!(
        !db.open_again()
            .await
            .settle_remote_message("telegram", "-100", "7", "rejected by bob")
            .await
            .unwrap()
    );
    let settled = db
        .store
        .remote_message("telegram", "-100", "7")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(settled.outcome.as_deref(), Some("approved by ann"));
    assert_eq!(
        settled.decided_at,
        Some(START.saturating_add(Duration::from_secs(2)))
    );
    assert_eq!(
        db.store.live_remote_messages("telegram").await.unwrap(),
        [second]
    );
}

both!(the_update_offset_is_stored_and_never_goes_back);
async fn the_update_offset_is_stored_and_never_goes_back(db: TestDb) {
    assert_eq!(db.store.remote_offset("telegram").await.unwrap(), None);
    db.store.set_remote_offset("telegram", 101).await.unwrap();
    assert_eq!(
        db.store.remote_offset("telegram").await.unwrap(),
        Some((101, START))
    );
    db.clock.advance(Duration::from_secs(5));
    db.store.set_remote_offset("telegram", 90).await.unwrap();
    let again = db.open_again().await;
    let later = START.saturating_add(Duration::from_secs(5));
    assert_eq!(
        again.remote_offset("telegram").await.unwrap(),
        Some((101, later)),
        "the offset never goes back; the time of the read does move"
    );
    again.set_remote_offset("telegram", 250).await.unwrap();
    assert_eq!(
        db.store.remote_offset("telegram").await.unwrap(),
        Some((250, later))
    );
    assert_eq!(db.store.remote_offset("slack").await.unwrap(), None);
}

both!(one_poller_holds_the_lease_until_it_expires_or_is_released);
async fn one_poller_holds_the_lease_until_it_expires_or_is_released(db: TestDb) {
    let ttl = Duration::from_secs(30);
    let other = db.open_again().await;
    assert!(
        db.store
            .acquire_remote_lease("telegram", "a", ttl)
            .await
            .unwrap()
    );
    assert!(
        !other
            .acquire_remote_lease("telegram", "b", ttl)
            .await
            .unwrap()
    );
    // Renewed by its holder, so it does not run out under it.
    db.clock.advance(Duration::from_secs(20));
    assert!(
        db.store
            .acquire_remote_lease("telegram", "a", ttl)
            .await
            .unwrap()
    );
    db.clock.advance(Duration::from_secs(20));
    assert!(
        !other
            .acquire_remote_lease("telegram", "b", ttl)
            .await
            .unwrap()
    );
    // Expired: another process takes it, and the first one no longer has it.
    db.clock.advance(Duration::from_secs(11));
    assert!(
        other
            .acquire_remote_lease("telegram", "b", ttl)
            .await
            .unwrap()
    );
    assert!(
        !db.store
            .acquire_remote_lease("telegram", "a", ttl)
            .await
            .unwrap()
    );
    // Another messenger's lease is another lease.
    assert!(
        db.store
            .acquire_remote_lease("slack", "a", ttl)
            .await
            .unwrap()
    );
    // Releasing someone else's lease does nothing; releasing one's own frees it.
    db.store
        .release_remote_lease("telegram", "a")
        .await
        .unwrap();
    assert!(
        !db.store
            .acquire_remote_lease("telegram", "a", ttl)
            .await
            .unwrap()
    );
    other.release_remote_lease("telegram", "b").await.unwrap();
    assert!(
        db.store
            .acquire_remote_lease("telegram", "a", ttl)
            .await
            .unwrap()
    );
}

both!(refused_taps_are_audited_once_per_chat_per_window);
async fn refused_taps_are_audited_once_per_chat_per_window(db: TestDb) {
    let window = Duration::from_secs(60);
    assert!(
        db.store
            .note_remote_refusal("telegram", "9", window)
            .await
            .unwrap()
    );
    assert!(
        !db.store
            .note_remote_refusal("telegram", "9", window)
            .await
            .unwrap()
    );
    assert!(
        db.store
            .note_remote_refusal("telegram", "10", window)
            .await
            .unwrap(),
        "another chat has its own window"
    );
    db.clock.advance(Duration::from_secs(59));
    assert!(
        !db.open_again()
            .await
            .note_remote_refusal("telegram", "9", window)
            .await
            .unwrap()
    );
    db.clock.advance(Duration::from_secs(1));
    assert!(
        db.store
            .note_remote_refusal("telegram", "9", window)
            .await
            .unwrap()
    );
    assert!(
        !db.store
            .note_remote_refusal("telegram", "9", window)
            .await
            .unwrap()
    );
}
