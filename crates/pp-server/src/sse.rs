//! Server-sent event streams of stored events, for one task or for all of them.
//!
//! Streams read the store and then wait for the store's word that more may have been
//! stored ([`pp_tasks::TaskService::wait_for_events`]: PostgreSQL's `LISTEN/NOTIFY`
//! wakes them at a commit; on SQLite they poll every
//! [`crate::ServerSettings::sse_poll_interval`]), rather than listen to an in-process
//! signal: events written by another process sharing the database (`pocketpilot run`, a
//! resolve from the CLI, another worker) show up just the same. Streams of every task's
//! events share one such reader ([`crate::feed`]); a stream of one task reads its own.
//! Each SSE
//! event carries `id: <seq>` (the global sequence number), `event: <type>` and
//! `data: <StoredEvent JSON>`, so a reconnect with `Last-Event-ID` resumes exactly after
//! the last event received.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::HeaderMap;
use axum::http::header::{ACCEPT, CACHE_CONTROL, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use pp_types::TaskId;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::caller::Visibility;
use crate::error::ApiError;
use crate::feed::{Encoded, Read, Reader};
use crate::state::AppState;

/// Most events read from the store at once by a stream.
const BATCH: usize = 500;
/// Most bytes of events a stream sends as one chunk of its response (one write, not one
/// per event, when a client has several waiting).
const CHUNK: usize = 64 << 10;
/// What a quiet stream sends every [`crate::ServerSettings::sse_keep_alive`]: an empty
/// SSE comment, so proxies and clients see the connection alive.
const KEEP_ALIVE: &[u8] = b":\n\n";

/// Which events a stream follows.
#[derive(Debug, Clone)]
pub(crate) enum Source {
    /// One task's events.
    Task(TaskId),
    /// Every task's events.
    All,
}

/// Whether the client asked for an event stream (`Accept: text/event-stream`).
pub(crate) fn wants_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get_all(ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .any(|value| value.contains("text/event-stream"))
}

/// The `Last-Event-ID` header as a sequence number, if present.
pub(crate) fn last_event_id(headers: &HeaderMap) -> Result<Option<i64>, ApiError> {
    let Some(value) = headers.get("last-event-id") else {
        return Ok(None);
    };
    value
        .to_str()
        .ok()
        .and_then(|text| text.trim().parse::<i64>().ok())
        .filter(|seq| *seq >= 0)
        .map(Some)
        .ok_or_else(|| {
            ApiError::BadRequest("Last-Event-ID must be an event sequence number".into())
        })
}

/// Where a stream reads from next and what it has read but not yet sent.
struct Cursor {
    state: AppState,
    source: Source,
    /// The sequence number of the last event sent.
    last: i64,
    /// Events read but not yet sent.
    pending: VecDeque<Arc<Encoded>>,
    /// In team mode, which tasks' events the caller may see (`None`: all of them).
    visibility: Option<Visibility>,
    /// The shared feed's head, for a stream of every task's events.
    feed: Option<watch::Receiver<i64>>,
    /// Ends the stream when the server shuts down.
    shutdown: watch::Receiver<bool>,
}

impl Cursor {
    /// Reads the next events: from the shared feed when it reaches back to the cursor,
    /// else from the store (on the blocking pool). False when there was nothing to read
    /// (time to wait).
    async fn fetch(&mut self) -> bool {
        let mut behind = None;
        if let Some(feed) = &mut self.feed {
            // Seen before reading, so an event arriving after the read wakes the wait.
            feed.borrow_and_update();
            match self.state.feed().after(self.last, BATCH) {
                Read::Events(events) => return self.take(events).await,
                Read::Behind { from } => behind = from,
            }
        }
        let service = self.state.service();
        let events = match &self.source {
            Source::Task(task) => service
                .task_events_page(task, self.last, BATCH)
                .await
                .map(|page| page.events),
            Source::All => service.events_after(self.last, BATCH).await,
        };
        match events {
            Ok(events) if events.is_empty() => {
                // Nothing in the store between the cursor and the feed's ring (those
                // events are gone, their tasks deleted): follow the ring from its start.
                if let Some(from) = behind {
                    self.last = self.last.max(from);
                    return true;
                }
                false
            }
            Ok(events) => {
                let events = events
                    .iter()
                    .map(|event| Arc::new(Encoded::new(event)))
                    .collect();
                self.take(events).await
            }
            Err(error) => {
                self.state.log(&format!(
                    "pp-server: event stream cannot read events: {error}"
                ));
                false
            }
        }
    }

    /// Queues the events of `events` after the cursor that the caller may see; false
    /// when `events` is empty.
    async fn take(&mut self, events: Vec<Arc<Encoded>>) -> bool {
        let Some(newest) = events.last().map(|event| event.seq) else {
            return false;
        };
        for event in events.into_iter().filter(|event| event.seq > self.last) {
            let visible = match &mut self.visibility {
                Some(visibility) => visibility.sees(&self.state, &event.task_id).await,
                None => true,
            };
            if visible {
                self.pending.push_back(event);
            }
        }
        // A batch of only hidden events moves the cursor past them, so the stream does
        // not read the same batch again.
        if self.pending.is_empty() {
            self.last = self.last.max(newest);
        }
        true
    }

    /// Waits until more events may be there: the feed's head moving, or the store's
    /// word (on PostgreSQL a commit's NOTIFY wakes it at once; on SQLite this waits
    /// `interval`), or shutdown, or `keep_alive` (time to say the stream is alive).
    async fn wait(&mut self, interval: Duration, keep_alive: Instant) {
        let keep_alive = tokio::time::sleep_until(keep_alive);
        match &mut self.feed {
            // The interval too: should the feed's reader have stopped on an error, the
            // stream still reads the store now and then.
            Some(feed) => tokio::select! {
                _ = feed.changed() => {}
                () = tokio::time::sleep(interval) => {}
                () = keep_alive => {}
                _ = self.shutdown.wait_for(|down| *down) => {}
            },
            None => tokio::select! {
                () = self.state.service().wait_for_events(self.last, interval) => {}
                () = keep_alive => {}
                _ = self.shutdown.wait_for(|down| *down) => {}
            },
        }
    }
}

/// The SSE frames of the events waiting in `pending` as one chunk of at most [`CHUNK`]
/// bytes (or one event, if that is larger), moving `last` to the newest event taken;
/// `None` when none wait.
fn next_chunk(pending: &mut VecDeque<Arc<Encoded>>, last: &mut i64) -> Option<Bytes> {
    let first = pending.pop_front()?;
    *last = first.seq;
    let Some(next) = pending.front() else {
        return Some(first.frame.clone());
    };
    if first.frame.len() + next.frame.len() > CHUNK {
        return Some(first.frame.clone());
    }
    let mut chunk = first.frame.to_vec();
    while let Some(event) = pending.front() {
        if chunk.len() + event.frame.len() > CHUNK {
            break;
        }
        chunk.extend_from_slice(&event.frame);
        *last = event.seq;
        pending.pop_front();
    }
    Some(Bytes::from(chunk))
}

/// An event stream of `source` starting after sequence number `after`, leaving out
/// events of tasks `visibility` hides (team mode); it ends when the client goes away or
/// the server shuts down. A stream of every task's events follows the shared feed. Each
/// event is sent as the feed encoded it (no copy per client unless several wait, then one
/// chunk); a stream with nothing to send for `sse_keep_alive` sends an SSE comment.
pub(crate) fn stream(
    state: AppState,
    source: Source,
    after: i64,
    visibility: Option<Visibility>,
) -> Response {
    let interval = state.settings().sse_poll_interval;
    let keep_alive = state.settings().sse_keep_alive;
    let feed = matches!(source, Source::All).then(|| {
        state.feed().follow(|| {
            let logger = state.clone();
            Reader {
                service: state.service().clone(),
                shutdown: state.shutdown_signal(),
                poll: interval,
                log: Box::new(move |line| logger.log(line)),
            }
        })
    });
    let cursor = Cursor {
        shutdown: state.shutdown_signal(),
        state,
        source,
        last: after,
        pending: VecDeque::new(),
        visibility,
        feed,
    };
    let start = (cursor, Instant::now() + keep_alive);
    let chunks = futures_util::stream::unfold(start, move |(mut cursor, due)| async move {
        loop {
            if *cursor.shutdown.borrow() {
                return None;
            }
            if let Some(chunk) = next_chunk(&mut cursor.pending, &mut cursor.last) {
                let due = Instant::now() + keep_alive;
                return Some((Ok::<_, Infallible>(chunk), (cursor, due)));
            }
            if !cursor.fetch().await {
                if Instant::now() >= due {
                    let due = Instant::now() + keep_alive;
                    return Some((Ok(Bytes::from_static(KEEP_ALIVE)), (cursor, due)));
                }
                cursor.wait(interval, due).await;
            }
        }
    });
    (
        [
            (CONTENT_TYPE, "text/event-stream"),
            (CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(chunks),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;
    use proptest::prelude::*;

    use super::*;

    fn parse(value: HeaderValue) -> Result<Option<i64>, ApiError> {
        let mut headers = HeaderMap::new();
        headers.insert("last-event-id", value);
        last_event_id(&headers)
    }

    fn encoded(seq: i64, bytes: usize) -> Arc<Encoded> {
        Arc::new(Encoded {
            seq,
            task_id: pp_types::TaskId(format!("t_{seq}")),
            frame: Bytes::from(format!("id: {seq}\n{}\n\n", "x".repeat(bytes))),
        })
    }

    #[test]
    fn waiting_events_go_as_one_chunk_in_order_and_a_large_one_alone() {
        let mut pending: VecDeque<_> = [encoded(4, 10), encoded(5, 10), encoded(6, 10)].into();
        let mut last = 3;
        let chunk = next_chunk(&mut pending, &mut last).unwrap();
        assert_eq!(
            chunk,
            Bytes::from(format!(
                "id: 4\n{x}\n\nid: 5\n{x}\n\nid: 6\n{x}\n\n",
                x = "x".repeat(10)
            ))
        );
        assert_eq!(last, 6);
        assert!(pending.is_empty());
        assert_eq!(next_chunk(&mut pending, &mut last), None);

        // A chunk stops before the event that would take it over CHUNK; an event larger
        // than CHUNK goes alone, whole.
        let mut pending: VecDeque<_> = [
            encoded(7, CHUNK / 2),
            encoded(8, CHUNK / 2),
            encoded(9, CHUNK * 2),
        ]
        .into();
        let first = next_chunk(&mut pending, &mut last).unwrap();
        assert!(
            first.starts_with(b"id: 7\n") && first.len() <= CHUNK,
            "{}",
            first.len()
        );
        assert_eq!(last, 7);
        let second = next_chunk(&mut pending, &mut last).unwrap();
        assert!(second.starts_with(b"id: 8\n"));
        assert_eq!(last, 8);
        let third = next_chunk(&mut pending, &mut last).unwrap();
        assert_eq!(third.len(), CHUNK * 2 + "id: 9\n\n\n".len());
        assert_eq!(last, 9);
    }

    #[test]
    fn fixed_cases() {
        assert_eq!(last_event_id(&HeaderMap::new()), Ok(None));
        assert_eq!(parse(HeaderValue::from_static("42")), Ok(Some(42)));
        assert_eq!(parse(HeaderValue::from_static(" 7 ")), Ok(Some(7)));
        for bad in ["", "-1", "x", "1.5", "99999999999999999999", "0x10"] {
            assert!(parse(HeaderValue::from_static(bad)).is_err(), "{bad:?}");
        }
        // Not even UTF-8.
        let opaque = HeaderValue::from_bytes(&[0xff, 0x31]).unwrap();
        assert!(parse(opaque).is_err());
    }

    proptest! {
        /// Any header value (any bytes a client can put in a header) parses to a
        /// sequence number or a 400, never a panic, and a number is never negative.
        #[test]
        fn arbitrary_values_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            if let Ok(value) = HeaderValue::from_bytes(&bytes) {
                match parse(value) {
                    Ok(Some(seq)) => prop_assert!(seq >= 0),
                    Ok(None) => prop_assert!(false, "a present header is never None"),
                    Err(error) => prop_assert_eq!(error.status_and_code().1, crate::ErrorCode::BadRequest),
                }
            }
        }

        /// Every valid id (what the server sends as `id:`) round-trips.
        #[test]
        fn valid_ids_round_trip(seq in 0_i64..=i64::MAX) {
            let value = HeaderValue::from_str(&seq.to_string()).unwrap();
            prop_assert_eq!(parse(value), Ok(Some(seq)));
        }
    }
}
