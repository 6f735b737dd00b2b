//! Uploads stream to disk: a cap on concurrent uploads, and a body that is cut short or
//! too large never touches the target.

use std::convert::Infallible;

use axum::body::{Body, Bytes};
use axum::http::Method;
use futures_util::StreamExt;
use pp_server::ServerSettings;
use tokio::sync::{mpsc, oneshot};

use crate::{App, authed};

fn put(uri: &str, body: Body) -> axum::http::Request<Body> {
    authed(Method::PUT, uri).body(body).unwrap()
}

/// A body whose chunks the test sends one by one; `started` fires when the server
/// first reads from it (the handler holds its upload permit by then).
fn held_body() -> (mpsc::Sender<Bytes>, oneshot::Receiver<()>, Body) {
    let (chunks, receiver) = mpsc::channel::<Bytes>(4);
    let (started, started_rx) = oneshot::channel();
    let stream = futures_util::stream::unfold(
        (receiver, Some(started)),
        |(mut receiver, started)| async move {
            if let Some(started) = started {
                let _ = started.send(());
            }
            let chunk = receiver.recv().await?;
            Some((Ok::<_, Infallible>(chunk), (receiver, None)))
        },
    );
    (chunks, started_rx, Body::from_stream(stream))
}

#[tokio::test]
async fn concurrent_uploads_beyond_the_cap_get_429() {
    let app = App::with_settings(ServerSettings {
        max_concurrent_uploads: 1,
        ..ServerSettings::default()
    });
    let (chunks, started, body) = held_body();
    let router = app.router.clone();
    let first = tokio::spawn(async move {
        crate::send(&router, put("/api/files/content?path=slow.txt", body)).await
    });
    chunks
        .send(Bytes::from_static(b"part one, "))
        .await
        .unwrap();
    started.await.unwrap();

    let reply = app
        .send(put("/api/files/content?path=other.txt", Body::from("x")))
        .await;
    reply.expect(429, Some("too_many_uploads"));
    assert!(!app.tree.exists("other.txt"));

    chunks.send(Bytes::from_static(b"part two")).await.unwrap();
    drop(chunks);
    first.await.unwrap().expect(201, None);
    assert_eq!(app.tree.read("slow.txt"), "part one, part two");

    // The permit is back: the next upload runs.
    app.send(put("/api/files/content?path=other.txt", Body::from("x")))
        .await
        .expect(201, None);
}

#[tokio::test]
async fn a_body_that_fails_midway_leaves_the_target_untouched() {
    let app = App::idle();
    app.tree.file("keep.txt", "old content\n");
    let stream = futures_util::stream::iter(vec![
        Ok(Bytes::from_static(b"new con")),
        Err(std::io::Error::other("connection reset")),
    ]);
    let reply = app
        .send(put(
            "/api/files/content?path=keep.txt&overwrite=true",
            Body::from_stream(stream),
        ))
        .await;
    reply.expect(400, Some("bad_request"));
    assert_eq!(app.tree.read("keep.txt"), "old content\n");
    assert!(app.audit("file_uploaded", None).await.is_empty());
}

#[tokio::test]
async fn a_streamed_body_over_the_limit_is_413_and_the_target_untouched() {
    let app = App::with_settings(ServerSettings {
        max_upload_bytes: 1000,
        ..ServerSettings::default()
    });
    app.tree.file("keep.txt", "old content\n");
    // Chunked, with no Content-Length: the limit is enforced while streaming.
    let stream =
        futures_util::stream::iter(0..5).map(|_| Ok::<_, Infallible>(Bytes::from(vec![b'y'; 300])));
    app.send(put(
        "/api/files/content?path=keep.txt&overwrite=true",
        Body::from_stream(stream),
    ))
    .await
    .expect(413, Some("payload_too_large"));
    assert_eq!(app.tree.read("keep.txt"), "old content\n");

    // A declared Content-Length over the limit is refused before reading the body.
    let request = authed(
        Method::PUT,
        "/api/files/content?path=keep.txt&overwrite=true",
    )
    .header("content-length", "1001")
    .body(Body::from(vec![b'z'; 1001]))
    .unwrap();
    app.send(request)
        .await
        .expect(413, Some("payload_too_large"));
    assert_eq!(app.tree.read("keep.txt"), "old content\n");
    assert!(app.audit("file_uploaded", None).await.is_empty());
}

#[tokio::test]
async fn a_file_that_appears_while_the_body_streams_is_not_replaced() {
    let app = App::idle();
    let (chunks, started, body) = held_body();
    let router = app.router.clone();
    let upload = tokio::spawn(async move {
        crate::send(&router, put("/api/files/content?path=late.txt", body)).await
    });
    chunks
        .send(Bytes::from_static(b"from the upload"))
        .await
        .unwrap();
    started.await.unwrap();
    app.tree.file("late.txt", "written by someone else\n");
    drop(chunks);
    let reply = upload.await.unwrap();
    reply.expect(409, Some("exists"));
    assert_eq!(app.tree.read("late.txt"), "written by someone else\n");
    assert!(app.audit("file_uploaded", None).await.is_empty());
}
