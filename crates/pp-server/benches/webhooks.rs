//! Webhook deliveries per second through the whole router (Host check, signature,
//! window, the replay record in SQLite, the task, the delivery log), one by one and from
//! 8 concurrent senders, with the rate limit lifted. Run with
//! `cargo bench -p pp-server --bench webhooks` (or `--profile dev` for a quick figure).
#![allow(
    clippy::unwrap_used,
    clippy::print_stdout,
    clippy::disallowed_methods,
    missing_docs,
    reason = "a benchmark binary that prints its figures"
)]

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use axum::body::Body;
use axum::http::{Method, Request};
use pp_channels::{ChannelKey, ChannelSettings, ChannelsService, CreateChannel, sign};
use pp_server::{AppState, ServerSettings};
use pp_tasks::{ModelSource, TaskService, TaskSettings, Workspaces};
use pp_test_support::TempTree;
use tower::ServiceExt;

fn delivery(secret: &str, index: usize) -> Request<Body> {
    let timestamp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
        .to_string();
    let body = format!(r#"{{"n":{index},"name":"Ada"}}"#);
    Request::builder()
        .method(Method::POST)
        .uri("/api/channels/bench/webhook")
        .header("host", "127.0.0.1:7878")
        .header("X-PocketPilot-Timestamp", &timestamp)
        .header(
            "X-PocketPilot-Signature",
            sign(secret, &timestamp, body.as_bytes()),
        )
        .body(Body::from(body))
        .unwrap()
}

/// Sends `count` signed deliveries on one keep-alive connection, each answered 202.
async fn post_over_tcp(port: u16, secret: &str, first: usize, count: usize) {
    use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
    let stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let (read, mut write) = stream.into_split();
    let mut read = BufReader::new(read);
    for index in first..first + count {
        let timestamp = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs()
            .to_string();
        let body = format!(r#"{{"n":{index},"name":"Ada"}}"#);
        let signature = sign(secret, &timestamp, body.as_bytes());
        let request = format!(
            "POST /api/channels/bench/webhook HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\
             X-PocketPilot-Timestamp: {timestamp}\r\nX-PocketPilot-Signature: {signature}\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        );
        write.write_all(request.as_bytes()).await.unwrap();
        let mut status = String::new();
        read.read_line(&mut status).await.unwrap();
        assert!(status.starts_with("HTTP/1.1 202"), "{status}");
        let mut length = 0;
        loop {
            let mut line = String::new();
            read.read_line(&mut line).await.unwrap();
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap();
            }
        }
        let mut answer = vec![0; length];
        read.read_exact(&mut answer).await.unwrap();
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let tree = TempTree::new();
        let store = pp_test_support::sqlite_store(&tree.base().join("bench.db"));
        let users_store = store.clone();
        let service = TaskService::new(
            store.clone(),
            TaskSettings::default(),
            Workspaces::single("bench", tree.workspace()),
            ModelSource::Scripted,
        );
        let channels = ChannelsService::new(
            service.clone(),
            store,
            ChannelKey::from_bytes(&[5; 32]),
            ChannelSettings {
                rate_limit: u32::MAX,
                ..ChannelSettings::default()
            },
        );
        let secret = channels
            .create(CreateChannel {
                name: "bench".into(),
                ..CreateChannel::default()
            })
            .await
            .unwrap()
            .secret;
        let state = AppState::new(
            service.clone(),
            pp_users::Users::new(service.clone(), users_store.clone()),
            pp_chat::Sessions::new(service, users_store),
            "bench-token-0123456789",
            ServerSettings::default(),
        );
        state.set_channels(channels);
        let router = pp_server::router(state.clone());

        let sequential = 1000;
        let started = Instant::now();
        for index in 0..sequential {
            let response = router
                .clone()
                .oneshot(delivery(&secret, index))
                .await
                .unwrap();
            assert_eq!(response.status().as_u16(), 202);
        }
        let elapsed = started.elapsed();
        println!(
            "webhooks: {sequential} accepted deliveries one by one in {:.2} s: {:.0}/s ({:.2} ms each)",
            elapsed.as_secs_f64(),
            f64::from(sequential as u32) / elapsed.as_secs_f64(),
            elapsed.as_secs_f64() * 1000.0 / f64::from(sequential as u32)
        );

        let senders = 8;
        let each = 250;
        let started = Instant::now();
        let mut handles = Vec::new();
        for sender in 0..senders {
            let router = router.clone();
            let secret = secret.clone();
            handles.push(tokio::spawn(async move {
                for index in 0..each {
                    let number = 10_000 + sender * each + index;
                    let response = router.clone().oneshot(delivery(&secret, number)).await.unwrap();
                    assert_eq!(response.status().as_u16(), 202);
                }
            }));
        }
        for handle in handles {
            handle.await.unwrap();
        }
        let elapsed = started.elapsed();
        let total = senders * each;
        println!(
            "webhooks: {total} accepted deliveries from {senders} concurrent senders in {:.2} s: {:.0}/s",
            elapsed.as_secs_f64(),
            f64::from(total as u32) / elapsed.as_secs_f64()
        );

        // Over real sockets: `serve` on 127.0.0.1, 8 senders each on one keep-alive
        // connection.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(pp_server::serve(listener, state, async {
            let _ = stopped.await;
        }));
        let started = Instant::now();
        let mut handles = Vec::new();
        for sender in 0..senders {
            let secret = secret.clone();
            handles.push(tokio::spawn(async move {
                post_over_tcp(port, &secret, 100_000 + sender * each, each).await;
            }));
        }
        for handle in handles {
            handle.await.unwrap();
        }
        let elapsed = started.elapsed();
        println!(
            "webhooks: {total} accepted deliveries over TCP from {senders} keep-alive senders in {:.2} s: {:.0}/s",
            elapsed.as_secs_f64(),
            f64::from(total as u32) / elapsed.as_secs_f64()
        );
        let _ = stop.send(());
        let _ = server.await;

        // Refusals cost less: a bad signature never reaches the replay record or a task.
        let refused = 1000;
        let started = Instant::now();
        for index in 0..refused {
            let response = router
                .clone()
                .oneshot(delivery(&"00".repeat(32), index))
                .await
                .unwrap();
            assert_eq!(response.status().as_u16(), 401);
        }
        let elapsed = started.elapsed();
        println!(
            "webhooks: {refused} refused (bad signature) one by one: {:.0}/s",
            f64::from(refused as u32) / elapsed.as_secs_f64()
        );
    });
}
