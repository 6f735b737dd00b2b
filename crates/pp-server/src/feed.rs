//! One reader of the global event log for every `GET /api/events` stream.
//!
//! Fifty console tabs following every task used to make fifty readers: each polled the
//! store, decoded every event and encoded it again. The feed is one reader instead: it
//! reads what the store says is committed ([`pp_tasks::TaskService::events_after`], the
//! very call each stream made, woken the same way), encodes each event once and keeps the
//! newest ones in a bounded ring that the streams read from. A stream whose cursor is
//! older than the ring (a reconnect after a long absence, a client that fell behind)
//! reads the store itself until it has caught up, so no stream ever misses an event.
//!
//! The reader runs while streams follow it: it starts with the first and stops when the
//! last one has gone (both under the ring's lock, so a new stream never waits on a
//! reader that has just decided to stop).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use axum::body::Bytes;
use pp_tasks::TaskService;
use pp_types::{StoredEvent, TaskId};
use tokio::sync::watch;

/// Most events the ring holds.
const RING_EVENTS: usize = 4096;
/// Most bytes of encoded events the ring holds.
const RING_BYTES: usize = 8 << 20;
/// Most events the reader asks the store for at once.
const BATCH: usize = 500;

/// One stored event as the streams send it: encoded once, as the whole SSE event.
#[derive(Debug)]
pub(crate) struct Encoded {
    /// Its global sequence number.
    pub seq: i64,
    /// The task it belongs to (team mode shows a stream only the tasks it may see).
    pub task_id: TaskId,
    /// The SSE event: `id: <seq>`, `event: <type>`, `data: <StoredEvent JSON>` and the
    /// blank line that ends it. Compact JSON has no line breaks (those in strings are
    /// escaped), so the data is one `data:` line.
    pub frame: Bytes,
}

impl Encoded {
    /// `event` encoded.
    pub(crate) fn new(event: &StoredEvent) -> Self {
        let data = serde_json::to_string(event).unwrap_or_else(|_| "{}".to_owned());
        let kind = event.event.type_name();
        let frame = format!("id: {}\nevent: {kind}\ndata: {data}\n\n", event.seq);
        Self {
            seq: event.seq,
            task_id: event.task_id.clone(),
            frame: Bytes::from(frame),
        }
    }
}

/// What a stream gets from [`Feed::after`].
#[derive(Debug)]
pub(crate) enum Read {
    /// The next events after the cursor (empty: none yet; wait for the head to move).
    Events(Vec<Arc<Encoded>>),
    /// The cursor is older than the ring: read the store. `from`: the ring holds every
    /// event after it (`None`: the reader has not started reading yet).
    Behind { from: Option<i64> },
}

/// The ring and whether its reader runs.
#[derive(Debug, Default)]
struct Ring {
    /// The ring holds every event with a sequence number in `(from, head]`, in order
    /// (`None` until the reader has learnt where the log ends).
    from: Option<i64>,
    events: VecDeque<Arc<Encoded>>,
    bytes: usize,
    running: bool,
}

impl Ring {
    /// Up to `limit` events after `after`, or [`Read::Behind`].
    fn after(&self, after: i64, limit: usize) -> Read {
        match self.from {
            Some(from) if after >= from => {
                let start = self.events.partition_point(|event| event.seq <= after);
                Read::Events(
                    self.events
                        .iter()
                        .skip(start)
                        .take(limit)
                        .cloned()
                        .collect(),
                )
            }
            from => Read::Behind { from },
        }
    }

    /// Appends `events` (newer than every event held), then drops the oldest past
    /// [`RING_EVENTS`] or [`RING_BYTES`]; `from` moves to the newest dropped event.
    fn push(&mut self, events: Vec<Arc<Encoded>>) {
        for event in events {
            self.bytes += event.frame.len();
            self.events.push_back(event);
        }
        while self.events.len() > RING_EVENTS || self.bytes > RING_BYTES {
            let Some(dropped) = self.events.pop_front() else {
                break;
            };
            self.bytes -= dropped.frame.len();
            self.from = Some(dropped.seq);
        }
    }
}

/// What the reader needs from the server: the store, when to stop, how often to poll
/// (SQLite), where to report a failed read.
pub(crate) struct Reader {
    pub service: TaskService,
    pub shutdown: watch::Receiver<bool>,
    pub poll: std::time::Duration,
    pub log: Box<dyn Fn(&str) + Send + Sync>,
}

/// The shared reader and its ring. See the module docs.
#[derive(Debug)]
pub(crate) struct Feed {
    ring: Mutex<Ring>,
    /// The newest sequence number the ring has (moves when events arrive); the streams
    /// hold receivers, so the reader knows when nobody follows it any more.
    head: watch::Sender<i64>,
}

impl Default for Feed {
    fn default() -> Self {
        Self {
            ring: Mutex::default(),
            head: watch::Sender::new(0),
        }
    }
}

impl Feed {
    fn ring(&self) -> std::sync::MutexGuard<'_, Ring> {
        self.ring.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A receiver of the head; starts the reader when it is not running. The stream
    /// keeps the receiver while it follows the feed.
    /// `reader` is called only when the reader has to start.
    pub(crate) fn follow(
        self: &Arc<Self>,
        reader: impl FnOnce() -> Reader,
    ) -> watch::Receiver<i64> {
        let mut ring = self.ring();
        let receiver = self.head.subscribe();
        if !ring.running {
            ring.running = true;
            let feed = Arc::clone(self);
            let reader = reader();
            tokio::spawn(async move { feed.read(reader).await });
        }
        receiver
    }

    /// Up to `limit` events after `after`, or [`Read::Behind`] when the ring does not
    /// reach back that far.
    pub(crate) fn after(&self, after: i64, limit: usize) -> Read {
        self.ring().after(after, limit)
    }

    /// The reader: reads what the store has committed after the ring's head, encodes it
    /// and appends it, until nobody follows or the server shuts down.
    async fn read(self: Arc<Self>, reader: Reader) {
        let Reader {
            service,
            mut shutdown,
            poll,
            log,
        } = reader;
        let known = self.ring().from.is_some();
        let head = if known {
            *self.head.borrow()
        } else {
            match service.last_seq().await {
                Ok(last) => last,
                Err(error) => {
                    log(&format!(
                        "pp-server: the event feed cannot find the newest event: {error}"
                    ));
                    // The streams read the store themselves meanwhile; the next one to
                    // arrive tries again.
                    self.ring().running = false;
                    return;
                }
            }
        };
        {
            let mut ring = self.ring();
            ring.events.clear();
            ring.bytes = 0;
            ring.from = Some(head);
        }
        self.head.send_replace(head);
        let mut last = head;
        loop {
            {
                let mut ring = self.ring();
                if self.head.receiver_count() == 0 || *shutdown.borrow() {
                    ring.running = false;
                    return;
                }
            }
            let events = match service.events_after(last, BATCH).await {
                Ok(events) => events,
                Err(error) => {
                    log(&format!(
                        "pp-server: the event feed cannot read events: {error}"
                    ));
                    Vec::new()
                }
            };
            if let Some(newest) = events.last().map(|event| event.seq) {
                let encoded: Vec<_> = events
                    .iter()
                    .filter(|event| event.seq > last)
                    .map(|event| Arc::new(Encoded::new(event)))
                    .collect();
                self.ring().push(encoded);
                last = last.max(newest);
                self.head.send_replace(last);
                continue;
            }
            tokio::select! {
                () = service.wait_for_events(last, poll) => {}
                _ = shutdown.wait_for(|down| *down) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(seq: i64, bytes: usize) -> Arc<Encoded> {
        Arc::new(Encoded {
            seq,
            task_id: TaskId(format!("t_{seq}")),
            frame: Bytes::from("x".repeat(bytes)),
        })
    }

    fn seqs(read: Read) -> Vec<i64> {
        match read {
            Read::Events(events) => events.iter().map(|event| event.seq).collect(),
            Read::Behind { from } => panic!("behind the ring (from {from:?})"),
        }
    }

    #[test]
    fn the_ring_answers_only_for_cursors_it_reaches_back_to() {
        let mut ring = Ring::default();
        assert!(matches!(ring.after(0, 10), Read::Behind { from: None }));
        ring.from = Some(10);
        // Sequence numbers need not be dense.
        ring.push(vec![event(11, 1), event(13, 1), event(20, 1)]);
        assert_eq!(seqs(ring.after(10, 10)), [11, 13, 20]);
        assert_eq!(seqs(ring.after(12, 10)), [13, 20]);
        assert_eq!(seqs(ring.after(11, 1)), [13]);
        assert_eq!(seqs(ring.after(20, 10)), Vec::<i64>::new());
        assert_eq!(seqs(ring.after(99, 10)), Vec::<i64>::new());
        assert!(matches!(ring.after(9, 10), Read::Behind { from: Some(10) }));
    }

    #[test]
    fn the_oldest_events_go_past_the_count_and_the_byte_bounds() {
        let mut ring = Ring {
            from: Some(0),
            ..Ring::default()
        };
        let count = i64::try_from(RING_EVENTS).unwrap();
        ring.push((1..=count + 100).map(|seq| event(seq, 10)).collect());
        assert_eq!(ring.events.len(), RING_EVENTS);
        assert_eq!(ring.from, Some(100));
        assert!(matches!(
            ring.after(99, 1),
            Read::Behind { from: Some(100) }
        ));
        assert_eq!(seqs(ring.after(100, 1)), [101]);
        assert_eq!(ring.bytes, RING_EVENTS * 10);

        // Three events of a third of the byte bound each: the first goes.
        let third = RING_BYTES / 3 + 1;
        ring.push(
            (1..=3)
                .map(|index| event(count + 100 + index, third))
                .collect(),
        );
        assert!(ring.bytes <= RING_BYTES, "{}", ring.bytes);
        assert_eq!(ring.events.len(), 2);
        assert_eq!(ring.from, Some(count + 101));
        assert_eq!(
            seqs(ring.after(count + 101, 10)),
            [count + 102, count + 103]
        );
    }
}
