//! The live event feed: one dedicated connection (outside the pool) that `LISTEN`s on
//! `pp_events` and publishes the highest event `seq` announced into a
//! [`tokio::sync::watch`], which [`super::PgStore::wait_for_events`] waits on.
//!
//! Every transaction that appends events calls `pg_notify('pp_events', 'SCHEMA:SEQ')`
//! with its newest seq (`events::insert`); PostgreSQL delivers it on commit.
//! Notifications are per database, so the payload names the schema and notifications for
//! other schemas (another team, or another test) are ignored. After every (re)connect the newest stored `seq` is read and
//! published too, so nothing committed while the connection was down is waited for in
//! vain. A lost connection is retried with a growing pause (250 ms doubling to 5 s). The
//! task ends when the store is dropped (it aborts the task) or no receiver is left.

use std::future::Future;
use std::pin::pin;
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use tokio::sync::watch;
use tokio_postgres::tls::{MakeTlsConnect, TlsConnect};
use tokio_postgres::{AsyncMessage, Client, Socket};

/// The channel events are announced on (written out in `events::insert`'s SQL too).
pub(crate) const CHANNEL: &str = "pp_events";

/// The first pause after a failed connection.
const FIRST_BACKOFF: Duration = Duration::from_millis(250);

/// The longest pause between attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// Starts the listening task; returns the watch of the newest `seq` and the task's handle.
pub(crate) fn spawn<T>(
    config: tokio_postgres::Config,
    tls: T,
) -> (watch::Receiver<i64>, tokio::task::AbortHandle)
where
    T: MakeTlsConnect<Socket> + Clone + Send + Sync + 'static,
    T::Stream: Send,
    T::TlsConnect: Send,
    <T::TlsConnect as TlsConnect<Socket>>::Future: Send,
{
    let (sender, receiver) = watch::channel(0);
    let mut config = config;
    // Named apart from the pool's connections, for `pg_stat_activity` (and the tests).
    let name = format!(
        "{} events",
        config.get_application_name().unwrap_or("pocketpilot")
    );
    config.application_name(name);
    let task = tokio::spawn(run(config, tls, sender));
    (receiver, task.abort_handle())
}

async fn run<T>(config: tokio_postgres::Config, tls: T, sender: watch::Sender<i64>)
where
    T: MakeTlsConnect<Socket> + Clone + Sync,
    T::Stream: Send,
    T::TlsConnect: Send,
    <T::TlsConnect as TlsConnect<Socket>>::Future: Send,
{
    let mut backoff = FIRST_BACKOFF;
    loop {
        // An error is not logged here (no logging crate in the store): the store's
        // callers see the same outage on their own calls; this task only keeps trying.
        if listen(&config, &tls, &sender, &mut backoff).await.is_ok() {
            return;
        }
        if sender.is_closed() {
            return;
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// One connection's life: connect, `LISTEN`, publish the newest stored `seq`, then
/// publish every notification until the connection fails (`Err`) or nobody is
/// listening any more (`Ok`).
async fn listen<T>(
    config: &tokio_postgres::Config,
    tls: &T,
    sender: &watch::Sender<i64>,
    backoff: &mut Duration,
) -> Result<(), tokio_postgres::Error>
where
    T: MakeTlsConnect<Socket> + Clone + Sync,
    T::Stream: Send,
    T::TlsConnect: Send,
    <T::TlsConnect as TlsConnect<Socket>>::Future: Send,
{
    let (client, mut connection) = config.connect(tls.clone()).await?;
    let mut messages = pin!(futures_util::stream::poll_fn(move |cx| {
        connection.poll_message(cx)
    }));
    let schema = alongside(&mut messages, sender, "", setup(&client)).await??;
    *backoff = FIRST_BACKOFF;
    publish(sender, schema.1);
    let schema = schema.0;
    loop {
        if sender.is_closed() {
            return Ok(());
        }
        match messages.next().await {
            Some(Ok(message)) => handle(sender, &schema, message),
            Some(Err(error)) => return Err(error),
            None => return Ok(()),
        }
    }
}

/// `LISTEN`s, and reads the connection's schema and the newest stored `seq`.
async fn setup(client: &Client) -> Result<(String, i64), tokio_postgres::Error> {
    client.batch_execute(&format!("LISTEN {CHANNEL}")).await?;
    let row = client
        .query_one(
            "SELECT current_schema()::TEXT, COALESCE((SELECT MAX(seq) FROM events), 0)",
            &[],
        )
        .await?;
    Ok((row.try_get(0)?, row.try_get(1)?))
}

/// Awaits `work` while driving the connection's message stream (a `tokio-postgres`
/// connection only makes progress while it is polled).
async fn alongside<S, F>(
    messages: &mut S,
    sender: &watch::Sender<i64>,
    schema: &str,
    work: F,
) -> Result<F::Output, tokio_postgres::Error>
where
    S: Stream<Item = Result<AsyncMessage, tokio_postgres::Error>> + Unpin,
    F: Future,
{
    let mut work = pin!(work);
    loop {
        tokio::select! {
            output = &mut work => return Ok(output),
            message = messages.next() => match message {
                Some(Ok(message)) => handle(sender, schema, message),
                Some(Err(error)) => return Err(error),
                None => {
                    // The connection closed: the work's own error says why.
                    return Ok(work.await);
                }
            },
        }
    }
}

/// Publishes a notification for `schema` (others are ignored).
fn handle(sender: &watch::Sender<i64>, schema: &str, message: AsyncMessage) {
    if let AsyncMessage::Notification(notification) = message
        && notification.channel() == CHANNEL
        && let Some((from, seq)) = notification.payload().rsplit_once(':')
        && from == schema
        && let Ok(seq) = seq.parse::<i64>()
    {
        publish(sender, seq);
    }
}

/// Raises the published `seq` to `seq` (never lowers it).
fn publish(sender: &watch::Sender<i64>, seq: i64) {
    sender.send_if_modified(|newest| {
        if seq > *newest {
            *newest = seq;
            true
        } else {
            false
        }
    });
}
