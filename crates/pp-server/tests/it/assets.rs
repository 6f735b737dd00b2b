//! The console's embedded files: a strong ETag from the content's SHA-256, `304 Not
//! Modified` to a matching `If-None-Match`, and the gzip-compressed copy (another
//! representation with its own tag) for clients that accept gzip.
#![expect(
    clippy::disallowed_methods,
    reason = "reads this crate's own console assets (as build.rs does), not model paths"
)]

use std::fmt::Write as _;
use std::io::Read as _;

use axum::body::Body;
use axum::http::Method;
use pretty_assertions::assert_eq;
use sha2::{Digest, Sha256};

use crate::{App, Reply, anonymous};

/// The bytes of `assets/{name}` on disk.
fn on_disk(name: &str) -> Vec<u8> {
    let path = format!("{}/assets/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|error| panic!("{path}: {error}"))
}

/// The strong tag the server should send for `bytes`: the first 128 bits of their
/// SHA-256, in hex, quoted.
fn expected_tag(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut hex = String::new();
    for byte in &digest[..16] {
        write!(hex, "{byte:02x}").unwrap();
    }
    format!("\"{hex}\"")
}

async fn get(app: &App, uri: &str, headers: &[(&str, &str)]) -> Reply {
    let mut request = anonymous(Method::GET, uri);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    app.send(request.body(Body::empty()).unwrap()).await
}

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut plain = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut plain)
        .unwrap();
    plain
}

#[tokio::test]
async fn every_asset_has_a_strong_etag_of_its_content() {
    let app = App::idle();
    for (uri, name) in [
        ("/", "index.html"),
        ("/assets/app.js", "app.js"),
        ("/assets/app.css", "app.css"),
        ("/assets/favicon.svg", "favicon.svg"),
        ("/favicon.ico", "favicon.svg"),
    ] {
        let reply = get(&app, uri, &[]).await;
        reply.expect(200, None);
        let file = on_disk(name);
        assert_eq!(reply.bytes, file, "{uri} is the file as it is");
        assert_eq!(reply.header("etag"), expected_tag(&file), "{uri}");
        assert!(!reply.header("etag").starts_with("W/"), "strong: {uri}");
        assert_eq!(
            reply.header("content-encoding"),
            "",
            "{uri}: not asked for gzip"
        );
        assert_eq!(reply.header("cache-control"), "no-cache", "{uri}");
    }
}

#[tokio::test]
async fn a_matching_if_none_match_is_answered_304_without_a_body() {
    let app = App::idle();
    let first = get(&app, "/assets/app.js", &[]).await;
    first.expect(200, None);
    let tag = first.header("etag").to_owned();

    let again = get(&app, "/assets/app.js", &[("if-none-match", &tag)]).await;
    again.expect(304, None);
    assert!(again.bytes.is_empty(), "{again:?}");
    assert_eq!(again.header("etag"), tag);

    // A list, a weak form of the same tag and `*` match too (RFC 9110's weak comparison).
    for header in [
        format!("\"0000\", {tag}"),
        format!("W/{tag}"),
        "*".to_owned(),
    ] {
        get(&app, "/assets/app.js", &[("if-none-match", &header)])
            .await
            .expect(304, None);
    }

    // Another file's tag, or a stale one, gets the whole file.
    let css_tag = get(&app, "/assets/app.css", &[])
        .await
        .header("etag")
        .to_owned();
    assert_ne!(css_tag, tag);
    for header in [css_tag.as_str(), "\"0123456789abcdef0123456789abcdef\""] {
        let full = get(&app, "/assets/app.js", &[("if-none-match", header)]).await;
        full.expect(200, None);
        assert_eq!(full.bytes, on_disk("app.js"));
    }
}

#[tokio::test]
async fn gzip_is_served_to_clients_that_accept_it() {
    let app = App::idle();
    let file = on_disk("app.css");
    let reply = get(
        &app,
        "/assets/app.css",
        &[("accept-encoding", "gzip, deflate, br")],
    )
    .await;
    reply.expect(200, None);
    assert_eq!(reply.header("content-encoding"), "gzip");
    assert_eq!(reply.header("vary"), "Accept-Encoding");
    assert_eq!(reply.header("content-type"), "text/css; charset=utf-8");
    assert!(
        reply.bytes.len() * 3 < file.len(),
        "compressed to under a third: {} of {} bytes",
        reply.bytes.len(),
        file.len()
    );
    assert_eq!(gunzip(&reply.bytes), file);

    // The compressed copy is another representation: its own strong tag, which revalidates.
    let tag = reply.header("etag").to_owned();
    let plain_tag = expected_tag(&file);
    assert_eq!(tag, format!("{}-gz\"", plain_tag.trim_end_matches('"')));
    let again = get(
        &app,
        "/assets/app.css",
        &[("accept-encoding", "gzip"), ("if-none-match", &tag)],
    )
    .await;
    again.expect(304, None);
    assert!(again.bytes.is_empty());
    assert_eq!(again.header("etag"), tag);

    // The identity response says it varies too (a cache must not hand it to a gzip client).
    let plain = get(&app, "/assets/app.css", &[]).await;
    assert_eq!(plain.header("vary"), "Accept-Encoding");
    assert_eq!(plain.header("etag"), plain_tag);
}

#[tokio::test]
async fn gzip_refused_or_not_offered_gets_the_file_as_it_is() {
    let app = App::idle();
    let file = on_disk("app.js");
    for accept in [
        "gzip;q=0",
        "identity",
        "br",
        "gzip;q=0, *",
        "deflate;q=1, *;q=0",
    ] {
        let reply = get(&app, "/assets/app.js", &[("accept-encoding", accept)]).await;
        reply.expect(200, None);
        assert_eq!(reply.header("content-encoding"), "", "{accept}");
        assert_eq!(reply.bytes, file, "{accept}");
    }
    for accept in ["*", "x-gzip", "GZIP;q=0.5", "identity;q=1, gzip;q=0.1"] {
        let reply = get(&app, "/assets/app.js", &[("accept-encoding", accept)]).await;
        assert_eq!(reply.header("content-encoding"), "gzip", "{accept}");
        assert_eq!(gunzip(&reply.bytes), file, "{accept}");
    }
}

#[tokio::test]
async fn an_unknown_asset_is_still_404() {
    let app = App::idle();
    get(&app, "/assets/nope.js", &[("if-none-match", "*")])
        .await
        .expect(404, Some("not_found"));
}
