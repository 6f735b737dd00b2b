//! `GET /api/openapi.json`: the OpenAPI 3.0 document, written by hand in
//! `openapi.json` next to this file (a test checks it lists exactly the routes).

use axum::http::HeaderValue;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;

/// The document.
pub(crate) const DOCUMENT: &str = include_str!("openapi.json");

/// Serves the document.
pub(crate) async fn document() -> impl IntoResponse {
    (
        [(CONTENT_TYPE, HeaderValue::from_static("application/json"))],
        DOCUMENT,
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_document_is_json() {
        let value: serde_json::Value = serde_json::from_str(super::DOCUMENT).unwrap();
        assert_eq!(value["openapi"].as_str().map(|v| &v[..2]), Some("3."));
    }
}
