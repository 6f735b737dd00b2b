//! Approval links: stored as a hash, bound to one approval, ended exactly once.

use std::time::Duration;

use pp_store::{LinkEnd, NewApprovalLink};
use pp_types::ApprovalId;

use crate::TestDb;

fn new_link(approval: &ApprovalId, user: Option<&str>, ttl: u64) -> NewApprovalLink {
    NewApprovalLink {
        approval_id: approval.clone(),
        fingerprint: Some("fp-1".into()),
        user: user.map(str::to_owned),
        ttl: Duration::from_secs(ttl),
    }
}

both!(a_link_is_stored_as_a_hash_and_found_by_its_token);
async fn a_link_is_stored_as_a_hash_and_found_by_its_token(db: TestDb) {
    let (_, approval) = db.waiting("link me").await;
    let (link, token) = db
        .store
        .create_approval_link(new_link(&approval.id, Some("ana"), 1800))
        .await
        .unwrap();
    assert_eq!(token.len(), 64, "256 bits as hex");
    assert!(token.bytes().all(|byte| byte.is_ascii_hexdigit()));
    assert_eq!(link.approval_id, approval.id);
    assert_eq!(link.fingerprint.as_deref(), Some("fp-1"));
    assert_eq!(link.user.as_deref(), Some("ana"));
    assert_eq!(
        link.expires_at.as_millis() - link.created_at.as_millis(),
        1_800_000
    );
    assert_eq!(link.ended, None);
    let found = db.open_again().await.approval_link(&token).await.unwrap();
    assert_eq!(found.as_ref(), Some(&link));
    assert_eq!(db.store.approval_link(&"0".repeat(64)).await.unwrap(), None);
    assert_eq!(db.store.approval_link("").await.unwrap(), None);
    let (_, other) = db
        .store
        .create_approval_link(new_link(&approval.id, None, 60))
        .await
        .unwrap();
    assert_ne!(other, token);
    let error = db
        .store
        .create_approval_link(new_link(&ApprovalId("a_missing".into()), None, 60))
        .await
        .unwrap_err();
    assert!(
        matches!(error, pp_store::Error::NotFound { .. }),
        "{error:?}"
    );
}

both!(a_link_ends_exactly_once);
async fn a_link_ends_exactly_once(db: TestDb) {
    let (_, approval) = db.waiting("once").await;
    let (_, token) = db
        .store
        .create_approval_link(new_link(&approval.id, None, 60))
        .await
        .unwrap();
    assert!(
        !db.store
            .end_approval_link(&token, LinkEnd::Expired, None)
            .await
            .unwrap(),
        "not expired yet"
    );
    assert!(
        db.store
            .end_approval_link(&token, LinkEnd::Used, None)
            .await
            .unwrap()
    );
    let other = db.open_again().await;
    assert!(
        !other
            .end_approval_link(&token, LinkEnd::Used, None)
            .await
            .unwrap(),
        "the second use loses"
    );
    assert!(
        !db.store
            .end_approval_link(&token, LinkEnd::Revoked, None)
            .await
            .unwrap()
    );
    let link = db.store.approval_link(&token).await.unwrap().unwrap();
    assert_eq!(link.ended, Some(LinkEnd::Used));
    assert!(link.ended_at.is_some());
    // A claimed link whose decision did not happen is corrected, once.
    assert!(
        !db.store
            .end_approval_link(&token, LinkEnd::Changed, Some(LinkEnd::Forbidden))
            .await
            .unwrap()
    );
    assert!(
        db.store
            .end_approval_link(&token, LinkEnd::Changed, Some(LinkEnd::Used))
            .await
            .unwrap()
    );
    assert_eq!(
        db.store.approval_link(&token).await.unwrap().unwrap().ended,
        Some(LinkEnd::Changed)
    );
    assert!(
        !db.store
            .end_approval_link(&"f".repeat(64), LinkEnd::Used, None)
            .await
            .unwrap()
    );
}

both!(an_expired_link_cannot_be_used);
async fn an_expired_link_cannot_be_used(db: TestDb) {
    let (_, approval) = db.waiting("expiry").await;
    let (link, token) = db
        .store
        .create_approval_link(new_link(&approval.id, None, 30))
        .await
        .unwrap();
    db.clock.advance(Duration::from_secs(29));
    assert!(!link.expired_at(pp_types::Clock::now(db.clock.as_ref())));
    db.clock.advance(Duration::from_secs(1));
    assert!(link.expired_at(pp_types::Clock::now(db.clock.as_ref())));
    assert!(
        !db.store
            .end_approval_link(&token, LinkEnd::Used, None)
            .await
            .unwrap(),
        "expired at 30 s"
    );
    assert!(
        db.store
            .end_approval_link(&token, LinkEnd::Expired, None)
            .await
            .unwrap()
    );
    assert_eq!(
        db.store.approval_link(&token).await.unwrap().unwrap().ended,
        Some(LinkEnd::Expired)
    );
}

both!(links_are_revoked_by_approval_and_by_user);
async fn links_are_revoked_by_approval_and_by_user(db: TestDb) {
    let (_, first) = db.waiting("first").await;
    let (_, second) = db.waiting("second").await;
    let mut tokens = Vec::new();
    for (approval, user) in [
        (&first.id, Some("ana")),
        (&first.id, Some("bo")),
        (&second.id, Some("ana")),
        (&second.id, None),
    ] {
        let (_, token) = db
            .store
            .create_approval_link(new_link(approval, user, 60))
            .await
            .unwrap();
        tokens.push(token);
    }
    assert!(
        db.store
            .end_approval_link(&tokens[1], LinkEnd::Used, None)
            .await
            .unwrap()
    );
    assert_eq!(db.store.revoke_approval_links(&first.id).await.unwrap(), 1);
    assert_eq!(db.store.revoke_approval_links(&first.id).await.unwrap(), 0);
    let ended = |token: &String| {
        let store = db.store.clone();
        let token = token.clone();
        async move { store.approval_link(&token).await.unwrap().unwrap().ended }
    };
    assert_eq!(ended(&tokens[0]).await, Some(LinkEnd::Revoked));
    assert_eq!(ended(&tokens[1]).await, Some(LinkEnd::Used), "kept");
    assert_eq!(ended(&tokens[2]).await, None);
    assert_eq!(db.store.revoke_user_links("ana").await.unwrap(), 1);
    assert_eq!(ended(&tokens[2]).await, Some(LinkEnd::Revoked));
    assert_eq!(ended(&tokens[3]).await, None, "another user's link stays");
    assert_eq!(db.store.revoke_user_links("nobody").await.unwrap(), 0);
}
