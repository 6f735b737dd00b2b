//! The console: `GET /` (`assets/index.html`), `GET /assets/{*path}` (every other
//! file under `assets/`) and `GET /favicon.ico` (`assets/favicon.svg`), embedded at
//! build time by `build.rs`.
//!
//! The pages load without a session; the console itself tells the person how to log in
//! when the API answers 401. Content types come from the file extension.

use axum::http::HeaderValue;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::extract::ApiPath;

/// Every file under `assets/`: path relative to it, content type, bytes.
const ASSETS: &[(&str, &str, &[u8])] = include!(concat!(env!("OUT_DIR"), "/assets.rs"));

fn find(path: &str) -> Option<Response> {
    let (_, content_type, body) = ASSETS.iter().find(|(name, _, _)| *name == path)?;
    let headers = [
        (CONTENT_TYPE, HeaderValue::from_static(content_type)),
        // Revalidate each time: a new build must never run against a stale script.
        (CACHE_CONTROL, HeaderValue::from_static("no-cache")),
    ];
    Some((headers, *body).into_response())
}

/// `GET /`: the console page.
pub(crate) async fn index() -> Result<Response, ApiError> {
    find("index.html").ok_or_else(|| ApiError::NotFound("the console is not built in".into()))
}

/// `GET /favicon.ico`: the SVG icon (`assets/favicon.svg`), for browsers that ask
/// before the page names it.
pub(crate) async fn favicon() -> Result<Response, ApiError> {
    find("favicon.svg").ok_or_else(|| ApiError::NotFound("the icon is not built in".into()))
}

/// `GET /assets/{*path}`.
pub(crate) async fn asset(ApiPath(path): ApiPath<String>) -> Result<Response, ApiError> {
    find(&path).ok_or_else(|| ApiError::NotFound(format!("no asset named `{path}`")))
}
