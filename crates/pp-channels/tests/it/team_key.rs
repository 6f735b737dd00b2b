//! Issue 29, item 1: a delivery whose stored secret does not open with this server's key
//! is refused and logged (it was a bare 500, unlogged); channels sealed with an older key
//! are re-sealed with the team key once and the rest listed; every change to a channel
//! is audited, with the team user who made it.

use pp_channels::{
    ChannelKey, ChannelSettings, ChannelsService, CreateChannel, DeliveryOutcome, EditChannel,
    Refusal,
};
use pp_store::{AuditFilter, DeliveryStatus};
use pp_types::Actor;

use crate::channels::{Fixture, KEY, refused};

/// The team key of these tests (the fixture's [`KEY`] plays a data directory's
/// `channels.key`).
const TEAM: [u8; 32] = [42; 32];

fn with_key(fixture: &Fixture, key: &[u8; 32]) -> ChannelsService {
    ChannelsService::new(
        fixture.service.clone(),
        fixture.store.clone(),
        ChannelKey::from_bytes(key),
        ChannelSettings::default(),
    )
}

async fn create(channels: &ChannelsService, name: &str) -> String {
    channels
        .create(CreateChannel {
            name: name.into(),
            ..CreateChannel::default()
        })
        .await
        .unwrap()
        .secret
}

async fn audit(fixture: &Fixture, action: &str) -> Vec<pp_types::AuditEntry> {
    fixture
        .store
        .list_audit(&AuditFilter {
            action: Some(action.into()),
            ..AuditFilter::default()
        })
        .await
        .unwrap()
}

#[tokio::test]
async fn a_delivery_whose_secret_does_not_open_here_is_refused_and_logged() {
    let fixture = Fixture::new();
    let secret = create(&fixture.channels, "forms").await;
    // A second `serve` with another key (its own data directory's channels.key).
    let elsewhere = with_key(&fixture, &TEAM);
    let delivery = fixture.signed("forms", &secret, r#"{"a":1}"#);
    assert_eq!(
        refused(&elsewhere, delivery).await,
        Refusal::SecretUnopenable("forms".into())
    );
    assert_eq!(fixture.task_count().await, 0);
    let log = fixture.channels.deliveries("forms", 10).await.unwrap();
    assert_eq!(log.len(), 1, "{log:?}");
    assert_eq!(log[0].status, DeliveryStatus::Refused);
    let reason = log[0].reason.as_deref().unwrap();
    assert!(reason.contains("does not open"), "{reason}");
    assert!(reason.contains("channels rotate forms"), "{reason}");
    // The same delivery to the process that has the key is still accepted (nothing was
    // claimed): the sender may send it again once every serve has the key.
    assert!(matches!(
        fixture
            .channels
            .deliver(fixture.signed("forms", &secret, r#"{"a":1}"#))
            .await
            .unwrap(),
        DeliveryOutcome::Accepted(_)
    ));
}

#[tokio::test]
async fn channels_sealed_with_an_older_key_are_resealed_once_and_the_rest_listed() {
    let fixture = Fixture::new();
    // `forms` and `alerts` were made by this data directory (KEY); `orders` by another
    // machine's data directory, whose key nobody here has.
    let forms = create(&fixture.channels, "forms").await;
    create(&fixture.channels, "alerts").await;
    create(&with_key(&fixture, &[9; 32]), "orders").await;
    let team = with_key(&fixture, &TEAM);
    let older = ChannelKey::from_bytes(&KEY);

    let check = team.check_key(Some(&older)).await.unwrap();
    assert_eq!(check.resealed, ["alerts", "forms"]);
    assert_eq!(check.opened, ["alerts", "forms"]);
    assert_eq!(check.unopenable, ["orders"]);
    assert!(!check.opens_none());
    // The secret did not change: the sender's signature works with the team key.
    assert!(matches!(
        team.deliver(fixture.signed("forms", &forms, "x"))
            .await
            .unwrap(),
        DeliveryOutcome::Accepted(_)
    ));
    let resealed = audit(&fixture, "channel_updated").await;
    let mut targets: Vec<&str> = resealed
        .iter()
        .filter_map(|row| row.target.as_deref())
        .collect();
    targets.sort_unstable();
    assert_eq!(targets, ["alerts", "forms"]);
    assert!(
        resealed
            .iter()
            .all(|row| row.detail.as_deref() == Some("secret re-sealed with the team key"))
    );

    // Once: the next process (or the next start) finds them sealed with the team key.
    let again = with_key(&fixture, &TEAM)
        .check_key(Some(&older))
        .await
        .unwrap();
    assert!(again.resealed.is_empty(), "{again:?}");
    assert_eq!(again.opened, ["alerts", "forms"]);
    assert_eq!(audit(&fixture, "channel_updated").await.len(), 2);

    // A wrong team key opens none of them.
    let wrong = with_key(&fixture, &[1; 32]).check_key(None).await.unwrap();
    assert!(wrong.opens_none(), "{wrong:?}");
    assert_eq!(wrong.unopenable, ["alerts", "forms", "orders"]);
    // `channels rotate` is the way out for the one nobody can open.
    team.rotate("orders").await.unwrap();
    let after = team.check_key(None).await.unwrap();
    assert!(after.unopenable.is_empty(), "{after:?}");
}

#[tokio::test]
async fn every_change_to_a_channel_is_audited_with_who_made_it() {
    let fixture = Fixture::new();
    let olga = fixture.channels.acting_as(Some("olga".into()));
    create(&olga, "forms").await;
    olga.edit(
        "forms",
        EditChannel {
            enabled: Some(false),
            ..EditChannel::default()
        },
    )
    .await
    .unwrap();
    olga.rotate("forms").await.unwrap();
    olga.remove("forms").await.unwrap();
    // Single-machine mode: the operator, no user.
    create(&fixture.channels, "alerts").await;

    for (action, detail) in [
        ("channel_created", Some("workspace (default)")),
        ("channel_updated", Some("disabled")),
        ("channel_rotated", None),
        ("channel_removed", None),
    ] {
        let rows = audit(&fixture, action).await;
        let forms: Vec<_> = rows
            .iter()
            .filter(|row| row.target.as_deref() == Some("forms"))
            .collect();
        assert_eq!(forms.len(), 1, "{action}: {rows:?}");
        assert_eq!(forms[0].actor, Actor::Operator, "{action}");
        assert_eq!(forms[0].user.as_deref(), Some("olga"), "{action}");
        assert_eq!(forms[0].detail.as_deref(), detail, "{action}");
    }
    let alerts = audit(&fixture, "channel_created").await;
    let alerts: Vec<_> = alerts
        .iter()
        .filter(|row| row.target.as_deref() == Some("alerts"))
        .collect();
    assert_eq!(alerts.len(), 1);
    assert_eq!(alerts[0].user, None);
    assert_eq!(alerts[0].actor, Actor::Operator);
}
