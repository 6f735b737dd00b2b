//! The console: `GET /` (`assets/index.html`), `GET /assets/{*path}` (every other
//! file under `assets/`) and `GET /favicon.ico` (`assets/favicon.svg`), embedded at
//! build time by `build.rs`.
//!
//! The pages load without a session; the console itself tells the person how to log in
//! when the API answers 401. Content types come from the file extension.
//!
//! Each file is served with a strong `ETag` (from its SHA-256, computed at build time)
//! and `Cache-Control: no-cache`: the browser revalidates every time and an unchanged
//! file costs a `304 Not Modified` with no body. A client that accepts gzip gets the copy
//! `build.rs` compressed (when it is smaller), tagged `"<hash>-gz"` — another
//! representation, so another strong tag — with `Vary: Accept-Encoding`.

use axum::http::header::{
    CACHE_CONTROL, CONTENT_ENCODING, CONTENT_TYPE, ETAG, IF_NONE_MATCH, VARY,
};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::extract::ApiPath;

/// One embedded file.
struct Asset {
    /// Its path relative to `assets/`.
    name: &'static str,
    /// Its content type, from the extension.
    content_type: &'static str,
    /// The file as it is.
    body: &'static [u8],
    /// The file gzip-compressed, when that is smaller.
    gzip: Option<&'static [u8]>,
    /// The strong ETag of `body`, quotes included.
    etag: &'static str,
}

/// Every file under `assets/`.
const ASSETS: &[Asset] = include!(concat!(env!("OUT_DIR"), "/assets.rs"));

/// The ETag of the gzip-compressed representation of `asset`: its tag with `-gz` inside
/// the quotes.
fn gzip_etag(asset: &Asset) -> String {
    let bare = asset.etag.trim_end_matches('"');
    format!("{bare}-gz\"")
}

/// Whether `Accept-Encoding` allows gzip: `gzip` (or `x-gzip`) listed with a non-zero
/// quality, or `*` with one while gzip is not refused by name.
fn accepts_gzip(headers: &HeaderMap) -> bool {
    let mut named = None;
    let mut any = false;
    for value in headers.get_all(axum::http::header::ACCEPT_ENCODING) {
        let Ok(text) = value.to_str() else {
            continue;
        };
        for item in text.split(',') {
            let mut parts = item.split(';');
            let coding = parts.next().unwrap_or("").trim().to_ascii_lowercase();
            let refused = parts.any(|param| {
                let param = param.trim().to_ascii_lowercase();
                param
                    .strip_prefix("q=")
                    .and_then(|q| q.trim().parse::<f32>().ok())
                    .is_some_and(|q| q <= 0.0)
            });
            match coding.as_str() {
                "gzip" | "x-gzip" => named = Some(named.unwrap_or(false) || !refused),
                "*" => any = !refused,
                _ => {}
            }
        }
    }
    named.unwrap_or(any)
}

/// Whether `If-None-Match` names one of `tags` (or is `*`). The comparison is the weak
/// one RFC 9110 prescribes for `If-None-Match`: a `W/` prefix is ignored.
fn not_modified(headers: &HeaderMap, tags: &[&str]) -> bool {
    headers.get_all(IF_NONE_MATCH).iter().any(|value| {
        value.to_str().is_ok_and(|text| {
            text.split(',').any(|candidate| {
                let candidate = candidate.trim();
                let candidate = candidate.strip_prefix("W/").unwrap_or(candidate);
                candidate == "*" || tags.contains(&candidate)
            })
        })
    })
}

fn find(path: &str, headers: &HeaderMap) -> Option<Response> {
    let asset = ASSETS.iter().find(|asset| asset.name == path)?;
    let gzip = asset.gzip.filter(|_| accepts_gzip(headers));
    let gzip_tag = gzip_etag(asset);
    let etag = if gzip.is_some() {
        gzip_tag.as_str()
    } else {
        asset.etag
    };
    let mut response = if not_modified(headers, &[asset.etag, gzip_tag.as_str()]) {
        StatusCode::NOT_MODIFIED.into_response()
    } else if let Some(compressed) = gzip {
        let mut response = compressed.into_response();
        response
            .headers_mut()
            .insert(CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        response
    } else {
        asset.body.into_response()
    };
    let response_headers = response.headers_mut();
    response_headers.insert(CONTENT_TYPE, HeaderValue::from_static(asset.content_type));
    // Revalidate each time: a new build must never run against a stale script; the
    // ETag makes that revalidation a body-less 304.
    response_headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if asset.gzip.is_some() {
        response_headers.insert(VARY, HeaderValue::from_static("Accept-Encoding"));
    }
    if let Ok(value) = HeaderValue::from_str(etag) {
        response_headers.insert(ETAG, value);
    }
    Some(response)
}

/// A page of `assets/` (`link.html`) served at a route of its own.
pub(crate) fn page(name: &str, headers: &HeaderMap) -> Option<Response> {
    find(name, headers)
}

/// `GET /`: the console page.
pub(crate) async fn index(headers: HeaderMap) -> Result<Response, ApiError> {
    find("index.html", &headers)
        .ok_or_else(|| ApiError::NotFound("the console is not built in".into()))
}

/// `GET /favicon.ico`: the SVG icon (`assets/favicon.svg`), for browsers that ask
/// before the page names it.
pub(crate) async fn favicon(headers: HeaderMap) -> Result<Response, ApiError> {
    find("favicon.svg", &headers)
        .ok_or_else(|| ApiError::NotFound("the icon is not built in".into()))
}

/// `GET /assets/{*path}`.
pub(crate) async fn asset(
    headers: HeaderMap,
    ApiPath(path): ApiPath<String>,
) -> Result<Response, ApiError> {
    find(&path, &headers).ok_or_else(|| ApiError::NotFound(format!("no asset named `{path}`")))
}
