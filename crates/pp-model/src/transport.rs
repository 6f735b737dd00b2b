//! The HTTP layer shared by both providers: one POST with timeouts, retries with
//! exponential backoff and jitter, `Retry-After`, and errors an operator can act on.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pp_agent::{ModelError, ModelErrorKind};
use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderValue};

use crate::error::{Error, Result};
use crate::settings::{Backoff, ProviderSettings, Timeouts};
use crate::sse::{SseEvent, SseParser};
use crate::tls::LazyRoots;

/// The longest server error text quoted in a message.
const QUOTE_LIMIT: usize = 300;

/// A configured client for one base URL. No `Debug`: it holds the secret.
pub(crate) struct Transport {
    client: reqwest::Client,
    /// Headers sent on every request (auth included); marked sensitive so reqwest never
    /// prints them.
    headers: HeaderMap,
    /// The secret, kept only to scrub it from any text that ends up in an error.
    secret: Option<String>,
    base_url: String,
    timeouts: Timeouts,
    max_retries: u32,
    backoff: Backoff,
}

/// A successful response and the instant the whole call must be over by.
pub(crate) struct Answer {
    pub(crate) response: reqwest::Response,
    pub(crate) deadline: Instant,
}

/// Installs ring as the process-wide rustls provider unless one is installed already.
/// reqwest is built without a provider (the default one compiles a large C library).
pub(crate) fn ensure_crypto_provider() {
    // `Err` means another provider is installed, which is just as good.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Builds a client with the connect timeout set. The TLS roots are read at the first
/// `https://` handshake of the process, not here (see [`crate::tls`]).
pub(crate) fn client(connect: Duration) -> Result<reqwest::Client> {
    client_with(connect, LazyRoots::process())
}

/// [`client`] with its own roots (tests count their loads).
pub(crate) fn client_with(connect: Duration, roots: Arc<LazyRoots>) -> Result<reqwest::Client> {
    ensure_crypto_provider();
    let tls = crate::tls::client_config(roots).map_err(Error::Tls)?;
    reqwest::Client::builder()
        .connect_timeout(connect)
        .tls_backend_preconfigured(tls)
        .build()
        .map_err(|error| Error::HttpClient(Box::new(error)))
}

impl Transport {
    /// A transport for `settings`, sending `headers` (which include the auth header).
    pub(crate) fn new(settings: &ProviderSettings, mut headers: HeaderMap) -> Result<Self> {
        for value in headers.values_mut() {
            value.set_sensitive(true);
        }
        Ok(Self {
            client: client(settings.timeouts.connect)?,
            headers,
            secret: settings.api_key.clone().filter(|key| !key.is_empty()),
            base_url: settings.base_url.trim().trim_end_matches('/').to_owned(),
            timeouts: settings.timeouts,
            max_retries: settings.max_retries,
            backoff: settings.backoff,
        })
    }

    /// `{base_url}/{path}`.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}/{path}", self.base_url)
    }

    /// The base URL, for messages.
    pub(crate) fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Removes the API key from `text`.
    pub(crate) fn scrub(&self, text: &str) -> String {
        match &self.secret {
            Some(secret) => text.replace(secret.as_str(), "<redacted>"),
            None => text.to_owned(),
        }
    }

    /// POSTs `body` to `path`, retrying as configured, and returns a 2xx response.
    /// `refusal` turns a non-retryable 4xx into a message. A body that breaks off after
    /// a 2xx is not retried here: part of it may already have been shown.
    pub(crate) async fn post(
        &self,
        path: &str,
        body: Vec<u8>,
        refusal: &(dyn Fn(StatusCode, &str) -> String + Sync),
    ) -> std::result::Result<Answer, ModelError> {
        let url = self.url(path);
        let start = Instant::now();
        let deadline = start + self.timeouts.total;
        let mut attempt: u32 = 0;
        loop {
            let failure = match self.attempt(&url, body.clone(), deadline).await {
                Ok(response) if response.status().is_success() => {
                    return Ok(Answer { response, deadline });
                }
                Ok(response) => {
                    let status = response.status();
                    let retry_after = retry_after(response.headers());
                    let text = self.body_text(response, deadline).await;
                    let quoted = self.scrub(&server_message(&text));
                    if !retryable(status) {
                        return Err(ModelError::new(
                            ModelErrorKind::Refused,
                            refusal(status, &quoted),
                        ));
                    }
                    Failure {
                        kind: if status == StatusCode::TOO_MANY_REQUESTS {
                            ModelErrorKind::Refused
                        } else {
                            ModelErrorKind::Unreachable
                        },
                        message: status_message(status, &quoted, &url),
                        retry_after,
                    }
                }
                Err(failure) => failure,
            };
            if attempt >= self.max_retries {
                let tries = attempt + 1;
                return Err(ModelError::new(
                    failure.kind,
                    format!(
                        "{} (gave up after {tries} attempt{})",
                        failure.message,
                        if tries == 1 { "" } else { "s" }
                    ),
                ));
            }
            let delay = delay(self.backoff, attempt, failure.retry_after);
            if Instant::now() + delay >= deadline {
                return Err(total_timeout(self.timeouts.total, &failure.message));
            }
            tokio::time::sleep(delay).await;
            attempt += 1;
        }
    }

    async fn attempt(
        &self,
        url: &str,
        body: Vec<u8>,
        deadline: Instant,
    ) -> std::result::Result<reqwest::Response, Failure> {
        let request = self
            .client
            .post(url)
            .headers(self.headers.clone())
            .header(
                reqwest::header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )
            .body(body)
            .send();
        let limit = self
            .timeouts
            .first_byte
            .min(deadline.saturating_duration_since(Instant::now()));
        match tokio::time::timeout(limit, request).await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(error)) => Err(Failure {
                kind: ModelErrorKind::Unreachable,
                message: self.scrub(&describe_reqwest(&error, url)),
                retry_after: None,
            }),
            Err(_) => Err(Failure {
                kind: ModelErrorKind::Unreachable,
                message: format!("no response from {url} within {limit:?} (first-byte timeout)"),
                retry_after: None,
            }),
        }
    }

    /// Reads a whole body before `deadline` (and within the idle timeout), lossily as
    /// UTF-8. Errors become the text `""`: this is for error bodies.
    async fn body_text(&self, response: reqwest::Response, deadline: Instant) -> String {
        self.read_to_end(response, deadline)
            .await
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .unwrap_or_default()
    }

    /// Reads a whole body, honouring the idle timeout and the call's deadline.
    pub(crate) async fn read_to_end(
        &self,
        mut response: reqwest::Response,
        deadline: Instant,
    ) -> std::result::Result<Vec<u8>, ModelError> {
        let mut bytes = Vec::new();
        while let Some(chunk) = self.next_chunk(&mut response, deadline).await? {
            bytes.extend_from_slice(chunk.as_ref());
            check_size(bytes.len())?;
        }
        Ok(bytes)
    }

    /// Reads a Server-Sent Events body, handing each event to `handle` until it returns
    /// `Ok(true)` (done), an error, or the body ends.
    pub(crate) async fn read_events(
        &self,
        mut response: reqwest::Response,
        deadline: Instant,
        mut handle: impl FnMut(SseEvent) -> std::result::Result<bool, ModelError>,
    ) -> std::result::Result<(), ModelError> {
        let mut parser = SseParser::default();
        let mut received = 0usize;
        while let Some(chunk) = self.next_chunk(&mut response, deadline).await? {
            received = received.saturating_add(chunk.as_ref().len());
            check_size(received)?;
            for event in parser.push(chunk.as_ref()) {
                if handle(event)? {
                    return Ok(());
                }
            }
        }
        if let Some(event) = parser.finish() {
            handle(event)?;
        }
        Ok(())
    }

    /// The next chunk of a body, `None` at its end.
    pub(crate) async fn next_chunk(
        &self,
        response: &mut reqwest::Response,
        deadline: Instant,
    ) -> std::result::Result<Option<impl AsRef<[u8]> + use<>>, ModelError> {
        let left = deadline.saturating_duration_since(Instant::now());
        let limit = self.timeouts.first_byte.min(left);
        match tokio::time::timeout(limit, response.chunk()).await {
            Ok(Ok(chunk)) => Ok(chunk),
            Ok(Err(error)) => Err(ModelError::new(
                ModelErrorKind::Unreachable,
                self.scrub(&format!(
                    "the connection to {} broke while reading the answer: {}",
                    self.base_url,
                    error_chain(&error)
                )),
            )),
            Err(_) if limit < self.timeouts.first_byte => Err(total_timeout(
                self.timeouts.total,
                "the answer was still arriving",
            )),
            Err(_) => Err(ModelError::new(
                ModelErrorKind::Unreachable,
                format!(
                    "{} sent nothing for {limit:?} in the middle of an answer",
                    self.base_url
                ),
            )),
        }
    }
}

/// Why one attempt failed, and whether the server asked for a delay.
struct Failure {
    kind: ModelErrorKind,
    message: String,
    retry_after: Option<Duration>,
}

fn total_timeout(total: Duration, last: &str) -> ModelError {
    ModelError::new(
        ModelErrorKind::Unreachable,
        format!("no complete answer within the total timeout of {total:?} (last problem: {last})"),
    )
}

/// 429, 5xx (and 408) are worth another try; other statuses are the request's fault.
pub(crate) fn retryable(status: StatusCode) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS
        || status == StatusCode::REQUEST_TIMEOUT
        || status.is_server_error()
}

fn status_message(status: StatusCode, quoted: &str, url: &str) -> String {
    if status == StatusCode::TOO_MANY_REQUESTS {
        format!("rate limited by {url} (http 429{})", quote(quoted))
    } else {
        format!(
            "{url} failed with http {}{}",
            status.as_u16(),
            quote(quoted)
        )
    }
}

/// `": text"` or nothing.
pub(crate) fn quote(text: &str) -> String {
    if text.is_empty() {
        String::new()
    } else {
        format!(": {text}")
    }
}

/// `Retry-After` in seconds (the HTTP-date form is ignored: backoff applies).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    let seconds: f64 = value.trim().parse().ok()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds.min(3600.0)))
}

/// The delay before retry number `attempt + 1`.
pub(crate) fn delay(backoff: Backoff, attempt: u32, retry_after: Option<Duration>) -> Duration {
    if let Some(asked) = retry_after {
        return asked.min(backoff.max);
    }
    let factor = 2u32.saturating_pow(attempt.min(20));
    let full = backoff.base.saturating_mul(factor).min(backoff.max);
    // Jitter in [full/2, full]: spreads clients that failed together.
    let half = full / 2;
    let spread = u64::try_from(full.saturating_sub(half).as_nanos()).unwrap_or(u64::MAX);
    let jitter = if spread == 0 { 0 } else { random() % spread };
    half + Duration::from_nanos(jitter)
}

/// A random-enough number for jitter, from the std hasher's per-process random keys.
fn random() -> u64 {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|elapsed| elapsed.as_nanos())
            .unwrap_or_default(),
    );
    hasher.finish()
}

/// The error text a server put in its body: `{"error": {"message": …}}` (OpenAI,
/// Anthropic), `{"error": "…"}` (Ollama), `{"detail": …}`, `{"message": …}`, or the
/// plain text itself — shortened to one line.
pub(crate) fn server_message(body: &str) -> String {
    let trimmed = body.trim();
    let text = match serde_json::from_str::<serde_json::Value>(trimmed) {
        Ok(value) => json_message(&value).unwrap_or_else(|| trimmed.to_owned()),
        Err(_) => trimmed.to_owned(),
    };
    shorten(&text)
}

/// The message inside a JSON error value, if one is there.
pub(crate) fn json_message(value: &serde_json::Value) -> Option<String> {
    let pick = |value: &serde_json::Value| -> Option<String> {
        match value {
            serde_json::Value::String(text) => Some(text.clone()),
            serde_json::Value::Object(map) => map
                .get("message")
                .or_else(|| map.get("msg"))
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned),
            _ => None,
        }
    };
    value
        .get("error")
        .and_then(pick)
        .or_else(|| value.get("detail").and_then(pick))
        .or_else(|| value.get("message").and_then(pick))
}

/// One line, at most [`QUOTE_LIMIT`] characters.
pub(crate) fn shorten(text: &str) -> String {
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= QUOTE_LIMIT {
        line
    } else {
        let cut: String = line.chars().take(QUOTE_LIMIT).collect();
        format!("{cut}…")
    }
}

fn describe_reqwest(error: &reqwest::Error, url: &str) -> String {
    let what = if error.is_connect() {
        "cannot connect to"
    } else if error.is_timeout() {
        "timed out talking to"
    } else {
        "request failed to"
    };
    format!("{what} {url}: {}", error_chain(error))
}

/// The error's sources, `: `-joined (the innermost says what really happened).
fn error_chain(error: &reqwest::Error) -> String {
    let mut parts = Vec::new();
    let mut source: Option<&dyn std::error::Error> = std::error::Error::source(error);
    while let Some(inner) = source {
        parts.push(inner.to_string());
        source = inner.source();
    }
    if parts.is_empty() {
        parts.push(error.to_string());
    }
    parts.join(": ")
}

/// The largest model answer accepted, streamed or not: a broken or hostile server cannot
/// make PocketPilot buffer without bound.
pub(crate) const MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

fn check_size(received: usize) -> std::result::Result<(), ModelError> {
    if received > MAX_RESPONSE_BYTES {
        return Err(ModelError::new(
            ModelErrorKind::InvalidResponse,
            format!(
                "the model's answer is larger than {} MiB; giving up",
                MAX_RESPONSE_BYTES / (1024 * 1024)
            ),
        ));
    }
    Ok(())
}

/// Whether a response is a server-sent event stream (by its content type).
pub(crate) fn is_event_stream(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.contains("text/event-stream"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_with_jitter_and_honours_retry_after() {
        let backoff = Backoff {
            base: Duration::from_millis(100),
            max: Duration::from_millis(1000),
        };
        for attempt in 0..6 {
            let full = Duration::from_millis(100 * 2u64.pow(attempt)).min(backoff.max);
            let got = delay(backoff, attempt, None);
            assert!(got >= full / 2 && got <= full, "{attempt}: {got:?}");
        }
        assert_eq!(
            delay(backoff, 0, Some(Duration::from_millis(700))),
            Duration::from_millis(700)
        );
        assert_eq!(
            delay(backoff, 0, Some(Duration::from_secs(90))),
            backoff.max
        );
    }

    #[test]
    fn reads_server_messages() {
        assert_eq!(
            server_message(r#"{"error":{"message":"Incorrect API key","type":"x"}}"#),
            "Incorrect API key"
        );
        assert_eq!(
            server_message(r#"{"error":"model \"x\" not found"}"#),
            "model \"x\" not found"
        );
        assert_eq!(
            server_message("<html>\n Bad\tGateway </html>"),
            "<html> Bad Gateway </html>"
        );
        assert_eq!(
            server_message(&"x".repeat(400)).chars().count(),
            QUOTE_LIMIT + 1
        );
    }

    #[test]
    fn parses_retry_after() {
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&headers), None);
    }

    #[test]
    fn classifies_statuses() {
        assert!(retryable(StatusCode::TOO_MANY_REQUESTS));
        assert!(retryable(StatusCode::BAD_GATEWAY));
        assert!(retryable(
            StatusCode::from_u16(529).unwrap_or(StatusCode::OK)
        ));
        assert!(!retryable(StatusCode::UNAUTHORIZED));
        assert!(!retryable(StatusCode::NOT_FOUND));
        assert!(!retryable(StatusCode::BAD_REQUEST));
    }
}
