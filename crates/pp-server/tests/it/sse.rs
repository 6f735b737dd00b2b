//! SSE on a real port: live events, `Last-Event-ID` resume without duplicates or gaps,
//! events written by another process, graceful shutdown with open streams.

use std::time::{Duration, Instant};

use axum::http::Method;
use pp_types::{Event, EventKind, TaskState};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::{App, TOKEN};

/// One received SSE event.
#[derive(Debug, Clone, PartialEq)]
struct Received {
    id: i64,
    event: String,
    data: Value,
}

/// A minimal HTTP/1.1 SSE client over a raw socket (chunked transfer decoding).
struct SseClient {
    stream: TcpStream,
    /// Raw bytes not yet decoded from the chunked framing.
    raw: Vec<u8>,
    /// Decoded body text not yet split into events.
    body: String,
}

impl SseClient {
    async fn connect(port: u16, path: &str, last_event_id: Option<i64>) -> Self {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let mut request = format!(
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {TOKEN}\r\n\
             Accept: text/event-stream\r\n"
        );
        if let Some(id) = last_event_id {
            request.push_str(&format!("Last-Event-ID: {id}\r\n"));
        }
        request.push_str("\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut client = Self {
            stream,
            raw: Vec::new(),
            body: String::new(),
        };
        let head = client.read_head().await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        let lower = head.to_ascii_lowercase();
        assert!(lower.contains("content-type: text/event-stream"), "{head}");
        assert!(lower.contains("transfer-encoding: chunked"), "{head}");
        assert!(lower.contains("cache-control: no-store"), "{head}");
        client
    }

    async fn fill(&mut self, deadline: Instant) -> bool {
        let mut buffer = [0_u8; 8192];
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, self.stream.read(&mut buffer)).await {
            Ok(Ok(0)) | Err(_) => false,
            Ok(Ok(read)) => {
                self.raw.extend_from_slice(&buffer[..read]);
                true
            }
            Ok(Err(error)) => panic!("read: {error}"),
        }
    }

    async fn read_head(&mut self) -> String {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if let Some(end) = find(&self.raw, b"\r\n\r\n") {
                let head = String::from_utf8(self.raw[..end].to_vec()).unwrap();
                self.raw.drain(..end + 4);
                return head;
            }
            assert!(self.fill(deadline).await, "no response head");
        }
    }

    /// Moves complete chunks from `raw` to `body`.
    fn decode(&mut self) {
        while let Some(line_end) = find(&self.raw, b"\r\n") {
            let size_text = String::from_utf8(self.raw[..line_end].to_vec()).unwrap();
            let size = usize::from_str_radix(size_text.trim(), 16).unwrap();
            if self.raw.len() < line_end + 2 + size + 2 {
                return;
            }
            let chunk = self.raw[line_end + 2..line_end + 2 + size].to_vec();
            self.body.push_str(&String::from_utf8(chunk).unwrap());
            self.raw.drain(..line_end + 2 + size + 2);
        }
    }

    /// The next event (skipping keep-alive comments), or `None` after `within`.
    async fn next(&mut self, within: Duration) -> Option<Received> {
        let deadline = Instant::now() + within;
        loop {
            self.decode();
            while let Some(end) = self.body.find("\n\n") {
                let block: String = self.body.drain(..end + 2).collect();
                if let Some(event) = parse_block(&block) {
                    return Some(event);
                }
            }
            if !self.fill(deadline).await {
                return None;
            }
        }
    }

    /// Reads events until one of type `kind` arrives.
    async fn until(&mut self, kind: &str) -> Vec<Received> {
        let mut seen = Vec::new();
        loop {
            let event = self
                .next(Duration::from_secs(10))
                .await
                .unwrap_or_else(|| panic!("no `{kind}` event; got {seen:#?}"));
            let done = event.event == kind;
            seen.push(event);
            if done {
                return seen;
            }
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

fn parse_block(block: &str) -> Option<Received> {
    let mut id = None;
    let mut event = None;
    let mut data = String::new();
    for line in block.lines() {
        if let Some(value) = line.strip_prefix("id:") {
            id = Some(value.trim().parse().unwrap());
        } else if let Some(value) = line.strip_prefix("event:") {
            event = Some(value.trim().to_owned());
        } else if let Some(value) = line.strip_prefix("data:") {
            data.push_str(value.trim_start());
        }
    }
    Some(Received {
        id: id?,
        event: event?,
        data: serde_json::from_str(&data).unwrap(),
    })
}

/// Serves `app` on a free loopback port until its state begins shutdown.
async fn serve_until_shutdown(app: &App) -> (u16, tokio::task::JoinHandle<std::io::Result<()>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(pp_server::serve(
        listener,
        app.state.clone(),
        std::future::pending(),
    ));
    (port, server)
}

/// The sequence numbers of the next `count` events of `client`.
async fn next_ids(client: &mut SseClient, count: usize, name: &str) -> Vec<i64> {
    let mut ids = Vec::with_capacity(count);
    while ids.len() < count {
        let event = client
            .next(Duration::from_secs(10))
            .await
            .unwrap_or_else(|| panic!("the {name} stream stopped after {} events", ids.len()));
        assert_eq!(event.data["seq"], event.id);
        ids.push(event.id);
    }
    ids
}

fn foreign_event(message: &str) -> Event {
    Event {
        step: 0,
        kind: EventKind::TaskRetried {
            message: message.to_owned(),
        },
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sse_streams_live_resume_and_see_other_processes() {
    let app = App::running();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(pp_server::serve(listener, app.state.clone(), async {
        let _ = stopped.await;
    }));

    // 1. Live: the task's events up to the approval request arrive as they happen.
    let task = app
        .create_task(crate::write_script("live.txt", "live\n"))
        .await;
    let path = format!("/api/tasks/{}/events", task.id);
    let mut first = SseClient::connect(port, &path, None).await;
    let seen = first.until("approval_required").await;
    assert_eq!(seen[0].event, "task_started");
    for event in &seen {
        assert_eq!(event.data["seq"], event.id);
        assert_eq!(event.data["type"], event.event.as_str());
        assert_eq!(event.data["task_id"], task.id.as_str());
    }
    let stored = app.service.task_events(&task.id, 0).await.unwrap();
    let stored_ids: Vec<i64> = stored.iter().map(|event| event.seq).collect();
    let seen_ids: Vec<i64> = seen.iter().map(|event| event.id).collect();
    assert_eq!(seen_ids, stored_ids[..seen_ids.len()]);
    let last_seen = *seen_ids.last().unwrap();

    // 2. Disconnect; the task resumes and finishes while nobody listens.
    drop(first);
    let approval = app.service.approvals_for_task(&task.id).await.unwrap()[0]
        .id
        .to_string();
    app.call_json(
        Method::POST,
        &format!("/api/approvals/{approval}/resolve"),
        &json!({"decision": "approve"}),
    )
    .await
    .expect(202, None);
    app.wait_for(&task.id, TaskState::Completed).await;

    // 3. Reconnect with Last-Event-ID: exactly the missed events, in order, no duplicates.
    let missed: Vec<i64> = app
        .service
        .task_events(&task.id, last_seen)
        .await
        .unwrap()
        .iter()
        .map(|event| event.seq)
        .collect();
    assert!(!missed.is_empty());
    let mut second = SseClient::connect(port, &path, Some(last_seen)).await;
    let resumed = second.until("task_completed").await;
    let resumed_ids: Vec<i64> = resumed.iter().map(|event| event.id).collect();
    assert_eq!(resumed_ids, missed);
    assert!(second.next(Duration::from_millis(600)).await.is_none());

    // 4. An event written by another process (a second connection to the database)
    //    reaches both the task stream and the all-tasks stream within a second.
    let mut everything = SseClient::connect(port, "/api/events", None).await;
    let other = pp_test_support::sqlite_store_with_clock(
        &app.tree.base().join("pocketpilot.db"),
        app.clock.clone(),
    );
    let started = Instant::now();
    let written = other
        .append_events(&task.id, &[foreign_event("from another process")])
        .await
        .unwrap();
    let on_task = second
        .next(Duration::from_secs(1))
        .await
        .expect("task stream");
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(on_task.id, written[0].seq);
    assert_eq!(on_task.event, "task_retried");
    assert_eq!(on_task.data["message"], "from another process");
    let on_all = everything
        .next(Duration::from_secs(1))
        .await
        .expect("all-tasks stream");
    assert_eq!(on_all.id, written[0].seq, "the global stream starts live");

    // 5. The global stream also resumes after Last-Event-ID.
    let other_task = app.create_task(json!([{"content": "quick"}])).await;
    app.wait_for(&other_task.id, TaskState::Completed).await;
    let mut replay = SseClient::connect(port, "/api/events", Some(written[0].seq)).await;
    let replayed = replay.until("task_completed").await;
    assert!(
        replayed
            .iter()
            .all(|event| event.data["task_id"] == other_task.id.as_str())
    );
    let expected: Vec<i64> = app
        .service
        .events_after(written[0].seq, 100)
        .await
        .unwrap()
        .iter()
        .map(|event| event.seq)
        .collect();
    let replayed_ids: Vec<i64> = replayed.iter().map(|event| event.id).collect();
    assert_eq!(replayed_ids, expected);

    // 6. Graceful shutdown ends open streams and returns promptly.
    let stopping = Instant::now();
    stop.send(()).unwrap();
    let result = tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .expect("serve returned")
        .unwrap();
    result.unwrap();
    assert!(stopping.elapsed() < Duration::from_secs(3));
    assert!(second.next(Duration::from_secs(1)).await.is_none());
}

#[tokio::test]
async fn an_idle_stream_sends_keep_alive_comments() {
    let app = App::with_settings(pp_server::ServerSettings {
        sse_keep_alive: Duration::from_millis(100),
        ..pp_server::ServerSettings::default()
    });
    let state = app.state.clone();
    let (port, server) = serve_until_shutdown(&app).await;
    let mut client = SseClient::connect(port, "/api/events", None).await;
    let deadline = Instant::now() + Duration::from_secs(2);
    while !client.body.contains(':') && !String::from_utf8_lossy(&client.raw).contains(':') {
        assert!(client.fill(deadline).await, "no keep-alive");
        client.decode();
    }
    // begin_shutdown stops the server too.
    state.begin_shutdown();
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

/// Every `/api/events` stream follows one shared reader whose ring holds the newest 4096
/// events: a stream that is live sees every event in order, and one that resumes from
/// further back than the ring reads the store until it has caught up, then follows the
/// ring, without a gap or a duplicate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn global_streams_share_a_reader_and_one_behind_its_ring_catches_up() {
    let app = App::with_settings(pp_server::ServerSettings {
        sse_poll_interval: Duration::from_millis(20),
        ..pp_server::ServerSettings::default()
    });
    app.service.start_workers();
    let state = app.state.clone();
    let (port, server) = serve_until_shutdown(&app).await;
    let task = app.create_task(json!([{"content": "quick"}])).await;
    app.wait_for(&task.id, TaskState::Completed).await;
    let before = app.service.last_seq().await.unwrap();
    let mut live = SseClient::connect(port, "/api/events", None).await;
    // More events than the ring holds, written by another process in five commits.
    let other = pp_test_support::sqlite_store_with_clock(
        &app.tree.base().join("pocketpilot.db"),
        app.clock.clone(),
    );
    let mut written = Vec::new();
    for batch in 0..5 {
        let events: Vec<Event> = (0..1000)
            .map(|index| foreign_event(&format!("event {batch}-{index}")))
            .collect();
        written.extend(
            other
                .append_events(&task.id, &events)
                .await
                .unwrap()
                .into_iter()
                .map(|event| event.seq),
        );
    }
    let seen = next_ids(&mut live, written.len(), "live").await;
    assert_eq!(
        seen, written,
        "the live stream: every event, in order, once"
    );

    // Resumed from before all of them: further back than the ring reaches.
    let mut late = SseClient::connect(port, "/api/events", Some(before)).await;
    let caught_up = next_ids(&mut late, written.len(), "late").await;
    assert_eq!(
        caught_up, written,
        "the late stream: every event, in order, once"
    );

    // Both now follow the ring: the next event reaches each exactly once.
    let next = other
        .append_events(&task.id, &[foreign_event("after the catch-up")])
        .await
        .unwrap()[0]
        .seq;
    for client in [&mut live, &mut late] {
        let event = client
            .next(Duration::from_secs(5))
            .await
            .expect("the next event");
        assert_eq!(event.id, next);
        assert_eq!(event.data["message"], "after the catch-up");
        assert!(client.next(Duration::from_millis(300)).await.is_none());
    }
    state.begin_shutdown();
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}
