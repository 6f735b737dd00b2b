//! The streamable-HTTP transport: rmcp's client over our own reqwest client (rustls on
//! ring, as `pp-model` does; no redirects followed, so the configured headers never go
//! to another host), with the configured headers on every request.

use std::collections::{BTreeMap, HashMap};

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

/// The transport for `url`, sending `headers` (marked sensitive) with every request; the
/// error says which header or setting is unusable.
pub(crate) fn transport(
    url: &str,
    headers: &BTreeMap<String, String>,
) -> Result<StreamableHttpClientTransport<reqwest::Client>, String> {
    // `Err` means another provider is installed already, which is just as good.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        // rmcp's own default: no idle pooling (avoids delayed-ACK stalls on reuse).
        .pool_max_idle_per_host(0)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|error| format!("the HTTP client could not be built: {error}"))?;
    let mut custom = HashMap::new();
    for (name, value) in headers {
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("`{name}` is not a valid header name"))?;
        let mut value = HeaderValue::from_str(value)
            .map_err(|_| format!("the value of header `{name}` is not valid in a header"))?;
        value.set_sensitive(true);
        custom.insert(header, value);
    }
    let config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(custom);
    Ok(StreamableHttpClientTransport::with_client(client, config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unusable_header_is_named() {
        let headers = BTreeMap::from([("bad header".to_owned(), "x".to_owned())]);
        let error = transport("http://127.0.0.1:1/mcp", &headers).err().unwrap();
        assert_eq!(error, "`bad header` is not a valid header name");
        let headers = BTreeMap::from([("x-ok".to_owned(), "line\nbreak".to_owned())]);
        let error = transport("http://127.0.0.1:1/mcp", &headers).err().unwrap();
        assert_eq!(error, "the value of header `x-ok` is not valid in a header");
    }
}
