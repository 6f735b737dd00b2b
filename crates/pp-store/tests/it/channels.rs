//! Webhook channels: create, find, list, edit, remove, the delivery log and the
//! seen-signature record that refuses replays across processes.

use std::time::Duration;

use pp_store::{ChannelChange, DELIVERIES_KEPT, DeliveryStatus, Error, NewChannel};
use pretty_assertions::assert_eq;

use crate::{START, TestDb};

fn new_channel(name: &str) -> NewChannel {
    NewChannel {
        name: name.into(),
        template: Some("Summarise {{body}}".into()),
        workspace: Some("home".into()),
        secret_sealed: vec![1, 2, 3, 0, 255],
    }
}

both!(a_channel_is_created_found_listed_edited_and_removed);
async fn a_channel_is_created_found_listed_edited_and_removed(db: TestDb) {
    let invoices = db
        .store
        .create_channel(&new_channel("invoices"))
        .await
        .unwrap();
    assert_eq!(invoices.name, "invoices");
    assert!(invoices.enabled);
    assert_eq!(invoices.secret_sealed, [1, 2, 3, 0, 255]);
    assert_eq!(invoices.template.as_deref(), Some("Summarise {{body}}"));
    assert_eq!((invoices.created_at, invoices.updated_at), (START, START));
    assert_eq!(invoices.rotated_at, None);
    let error = db
        .store
        .create_channel(&new_channel("invoices"))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, Error::NameTaken { what: "channel", name } if name == "invoices"),
        "{error:?}"
    );
    let alerts = db
        .store
        .create_channel(&NewChannel {
            template: None,
            workspace: None,
            ..new_channel("alerts")
        })
        .await
        .unwrap();
    assert_eq!(
        db.store.find_channel("invoices").await.unwrap().as_ref(),
        Some(&invoices)
    );
    assert_eq!(db.store.find_channel("nope").await.unwrap(), None);
    assert_eq!(
        db.store.list_channels().await.unwrap(),
        [alerts, invoices.clone()],
        "by name"
    );

    db.clock.advance(Duration::from_secs(5));
    let edited = db
        .store
        .edit_channel(
            "invoices",
            ChannelChange {
                template: Some(None),
                enabled: Some(false),
                ..ChannelChange::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(edited.template, None);
    assert!(!edited.enabled);
    assert_eq!(edited.workspace.as_deref(), Some("home"), "left alone");
    assert_eq!(edited.rotated_at, None, "the secret did not change");
    let later = START.saturating_add(Duration::from_secs(5));
    assert_eq!((edited.created_at, edited.updated_at), (START, later));
    let rotated = db
        .store
        .edit_channel(
            "invoices",
            ChannelChange {
                secret_sealed: Some(vec![9; 40]),
                ..ChannelChange::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(rotated.secret_sealed, vec![9; 40]);
    assert_eq!(rotated.rotated_at, Some(later));
    assert!(matches!(
        db.store
            .edit_channel("nope", ChannelChange::default())
            .await,
        Err(Error::NotFound {
            what: "channel",
            ..
        })
    ));

    db.store.remove_channel("invoices").await.unwrap();
    assert_eq!(db.store.find_channel("invoices").await.unwrap(), None);
    assert!(matches!(
        db.store.remove_channel("invoices").await,
        Err(Error::NotFound { .. })
    ));
    assert_eq!(db.store.list_channels().await.unwrap().len(), 1);
}

both!(a_secret_is_resealed_only_from_the_sealed_bytes_expected);
async fn a_secret_is_resealed_only_from_the_sealed_bytes_expected(db: TestDb) {
    let created = db
        .store
        .create_channel(&new_channel("invoices"))
        .await
        .unwrap();
    db.clock.advance(Duration::from_secs(5));
    // Another process re-sealed (or rotated) first: the stale expectation changes nothing.
    assert!(
        !db.store
            .reseal_channel("invoices", &[9, 9], &[7; 30])
            .await
            .unwrap()
    );
    assert!(
        db.store
            .reseal_channel("invoices", &[1, 2, 3, 0, 255], &[7; 30])
            .await
            .unwrap()
    );
    let resealed = db.store.find_channel("invoices").await.unwrap().unwrap();
    assert_eq!(resealed.secret_sealed, vec![7; 30]);
    assert_eq!(
        (resealed.updated_at, resealed.rotated_at),
        (created.updated_at, None),
        "the same secret: neither an edit nor a rotation"
    );
    assert!(
        !db.open_again()
            .await
            .reseal_channel("invoices", &[1, 2, 3, 0, 255], &[8; 30])
            .await
            .unwrap(),
        "once"
    );
    assert!(
        !db.store
            .reseal_channel("nope", &[1, 2, 3, 0, 255], &[8; 30])
            .await
            .unwrap()
    );
}

both!(deliveries_are_logged_newest_first_trimmed_and_go_with_their_channel);
async fn deliveries_are_logged_newest_first_trimmed_and_go_with_their_channel(db: TestDb) {
    db.store
        .create_channel(&new_channel("invoices"))
        .await
        .unwrap();
    let task = db.create("from a webhook").await;
    db.store
        .record_delivery("invoices", DeliveryStatus::Accepted, None, Some(&task.id))
        .await
        .unwrap();
    db.clock.advance(Duration::from_millis(1));
    db.store
        .record_delivery(
            "invoices",
            DeliveryStatus::Refused,
            Some("bad signature"),
            None,
        )
        .await
        .unwrap();
    let log = db.store.channel_deliveries("invoices", 10).await.unwrap();
    let summary: Vec<_> = log
        .iter()
        .map(|record| {
            (
                record.channel.as_str(),
                record.status,
                record.reason.as_deref(),
                record.task_id.clone(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (
                "invoices",
                DeliveryStatus::Refused,
                Some("bad signature"),
                None
            ),
            (
                "invoices",
                DeliveryStatus::Accepted,
                None,
                Some(task.id.clone())
            ),
        ]
    );
    assert!(log[0].id > log[1].id);
    assert_eq!(log[1].at, START);
    assert_eq!(
        db.store.channel_deliveries("invoices", 1).await.unwrap(),
        log[..1]
    );

    // The log keeps the newest DELIVERIES_KEPT rows.
    for _ in 0..DELIVERIES_KEPT {
        db.store
            .record_delivery("invoices", DeliveryStatus::RateLimited, None, None)
            .await
            .unwrap();
    }
    let kept = db
        .store
        .channel_deliveries("invoices", 10_000)
        .await
        .unwrap();
    assert_eq!(kept.len(), DELIVERIES_KEPT as usize);
    assert!(
        kept.iter()
            .all(|record| record.status == DeliveryStatus::RateLimited)
    );

    // An unknown channel records nothing and has no log; removing one drops its log.
    db.store
        .record_delivery("nope", DeliveryStatus::Refused, None, None)
        .await
        .unwrap();
    assert!(matches!(
        db.store.channel_deliveries("nope", 10).await,
        Err(Error::NotFound {
            what: "channel",
            ..
        })
    ));
    db.store.remove_channel("invoices").await.unwrap();
    db.store
        .create_channel(&new_channel("invoices"))
        .await
        .unwrap();
    assert!(
        db.store
            .channel_deliveries("invoices", 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        db.store.task(&task.id).await.unwrap(),
        task,
        "the task stays"
    );
}

both!(a_signature_is_claimed_once_across_stores_until_it_expires);
async fn a_signature_is_claimed_once_across_stores_until_it_expires(db: TestDb) {
    let other = db.open_again().await;
    let until = START.saturating_add(Duration::from_secs(300));
    assert!(
        db.store
            .claim_signature("invoices:abc", until)
            .await
            .unwrap()
    );
    assert!(
        !other.claim_signature("invoices:abc", until).await.unwrap(),
        "a replay, seen by another process"
    );
    assert!(other.claim_signature("invoices:abd", until).await.unwrap());
    db.clock.advance(Duration::from_secs(299));
    assert!(
        !db.store
            .claim_signature("invoices:abc", until)
            .await
            .unwrap()
    );
    db.clock.advance(Duration::from_secs(1));
    let later = START.saturating_add(Duration::from_secs(600));
    assert!(
        db.store
            .claim_signature("invoices:abc", later)
            .await
            .unwrap(),
        "expired keys are purged"
    );
}
