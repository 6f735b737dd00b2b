//! Defences that apply to every route: the loopback Host check (DNS rebinding), the
//! same-origin check on state-changing requests, security headers, and the logger of
//! internal errors.

use axum::extract::{Request, State};
use axum::http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, HOST, ORIGIN, REFERRER_POLICY, X_CONTENT_TYPE_OPTIONS,
    X_FRAME_OPTIONS,
};
use axum::http::{HeaderMap, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::{ApiError, InternalDetail};
use crate::state::{AppState, ServerSettings};

/// The console's Content-Security-Policy: nothing inline, nothing from elsewhere.
pub(crate) const CONTENT_SECURITY_POLICY_VALUE: &str = "default-src 'self'; script-src 'self'; \
     style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; frame-ancestors 'none'; \
     base-uri 'none'; form-action 'self'";

/// Whether `host` (a Host header or URI authority) names this machine's loopback
/// interface: `127.0.0.1`, `localhost` or `[::1]`, each with an optional port.
pub(crate) fn is_loopback_host(host: &str) -> bool {
    let (name, port) = if host.starts_with('[') {
        match host.find(']') {
            Some(end) => (&host[..=end], &host[end + 1..]),
            None => return false,
        }
    } else {
        match host.find(':') {
            Some(colon) => (&host[..colon], &host[colon..]),
            None => (host, ""),
        }
    };
    let port_ok = match port.strip_prefix(':') {
        None => port.is_empty(),
        Some(digits) => {
            !digits.is_empty()
                && digits.len() <= 5
                && digits.bytes().all(|byte| byte.is_ascii_digit())
        }
    };
    let name_ok = ["127.0.0.1", "localhost", "[::1]"]
        .iter()
        .any(|loopback| name.eq_ignore_ascii_case(loopback));
    name_ok && port_ok
}

/// Whether `host` is one of `allowed` (`[server] allowed_hosts`): an entry `name`
/// matches that name with any port or none, `name:port` that port only; names compare
/// without case.
pub(crate) fn is_allowed_host(host: &str, allowed: &[String]) -> bool {
    let name = split_port(host).0;
    allowed.iter().any(|entry| {
        let entry = entry.trim();
        if entry.is_empty() {
            return false;
        }
        match split_port(entry) {
            (entry_name, Some(_)) => entry.eq_ignore_ascii_case(host) && !entry_name.is_empty(),
            (entry_name, None) => entry_name.eq_ignore_ascii_case(name),
        }
    })
}

/// `host` as (name, port): `[::1]:80` → (`[::1]`, `80`); a bad port is kept in the name
/// so it never matches.
fn split_port(host: &str) -> (&str, Option<&str>) {
    let colon = if host.starts_with('[') {
        host.find(']')
            .and_then(|end| host[end..].find(':').map(|at| end + at))
    } else {
        host.rfind(':')
    };
    match colon {
        Some(at) => {
            let port = &host[at + 1..];
            if !port.is_empty() && port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit()) {
                (&host[..at], Some(port))
            } else {
                (host, None)
            }
        }
        None => (host, None),
    }
}

/// Whether the request reached us over HTTPS: only when `trust_forwarded_proto` is set
/// and the reverse proxy says `X-Forwarded-Proto: https` (this server itself speaks
/// plain HTTP).
pub(crate) fn is_https(settings: &ServerSettings, headers: &HeaderMap) -> bool {
    settings.trust_forwarded_proto
        && headers
            .get("x-forwarded-proto")
            .and_then(|value| value.to_str().ok())
            .is_some_and(|proto| proto.trim().eq_ignore_ascii_case("https"))
}

/// Whether `path` is a webhook delivery route (`/api/channels/{name}/webhook`).
fn is_webhook_path(path: &str) -> bool {
    path.strip_prefix("/api/channels/")
        .and_then(|rest| rest.strip_suffix("/webhook"))
        .is_some_and(|name| !name.is_empty() && !name.contains('/'))
}

/// The Host the request was sent to, from the `Host` header or the URI's authority;
/// `None` when they disagree or neither is present.
fn request_host(request: &Request) -> Option<String> {
    // Two Host headers are ambiguous (a proxy may use the other one): refuse.
    if request.headers().get_all(HOST).iter().nth(1).is_some() {
        return None;
    }
    let header = request
        .headers()
        .get(HOST)
        .map(|value| value.to_str().map(str::to_owned));
    let authority = request.uri().authority().map(|a| a.as_str().to_owned());
    match (header, authority) {
        (Some(Ok(header)), Some(authority)) => {
            header.eq_ignore_ascii_case(&authority).then_some(header)
        }
        (Some(Ok(header)), None) => Some(header),
        (None, Some(authority)) => Some(authority),
        (Some(Err(_)), _) | (None, None) => None,
    }
}

/// Whether a state-changing request comes from this server's own origin.
///
/// Requests without `Origin` (curl, the CLI) pass unless the browser marks them as
/// cross-site with `Sec-Fetch-Site`; a present `Origin` must be exactly
/// `http://<Host>` (`https://<Host>` when the request came over HTTPS, [`is_https`]).
fn same_origin(headers: &HeaderMap, host: &str, https: bool) -> bool {
    let scheme = if https { "https://" } else { "http://" };
    match headers.get(ORIGIN) {
        Some(origin) => origin.to_str().is_ok_and(|origin| {
            origin
                .strip_prefix(scheme)
                .is_some_and(|rest| rest.eq_ignore_ascii_case(host))
        }),
        None => headers
            .get("sec-fetch-site")
            .is_none_or(|site| matches!(site.to_str(), Ok("same-origin" | "none"))),
    }
}

/// Middleware on every route: `403 forbidden` unless the Host is a loopback name or one
/// of `[server] allowed_hosts`, and for POST, PUT, DELETE and PATCH unless the Origin is
/// the same origin. Webhook deliveries (`POST /api/channels/{name}/webhook`) skip the
/// Origin check only: they come from other programs, authenticated by their signature.
pub(crate) async fn check_host_and_origin(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let settings = state.settings();
    let Some(host) = request_host(&request)
        .filter(|host| is_loopback_host(host) || is_allowed_host(host, &settings.allowed_hosts))
    else {
        return ApiError::Forbidden(
            "the Host header must name a loopback address (127.0.0.1, localhost or [::1]) or \
             one of [server] allowed_hosts"
                .into(),
        )
        .into_response();
    };
    let changes_state = !matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    );
    let webhook = *request.method() == Method::POST && is_webhook_path(request.uri().path());
    let https = is_https(settings, request.headers());
    if changes_state && !webhook && !same_origin(request.headers(), &host, https) {
        return ApiError::Forbidden("cross-origin requests that change state are refused".into())
            .into_response();
    }
    next.run(request).await
}

/// Middleware on every route: security headers, and `Cache-Control: no-store` on API
/// and login responses.
pub(crate) async fn security_headers(request: Request, next: Next) -> Response {
    let path = request.uri().path();
    let private = path.starts_with("/api/") || path == "/login" || path == "/logout";
    let link = crate::routes::links::is_link_path(path);
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY_VALUE),
    );
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    headers.insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    if private || link {
        headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    if link {
        // The token is in the URL: no page it links to learns it, no cache keeps it, no
        // search engine lists it, and no cookie is set with it.
        headers.insert(REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
        headers.insert("x-robots-tag", HeaderValue::from_static("noindex"));
        headers.remove(axum::http::header::SET_COOKIE);
    }
    response
}

/// Middleware on every route: sends the detail of `500 internal` responses to the error
/// log ([`AppState::set_error_log`]); the client only sees a generic message.
pub(crate) async fn log_internal_errors(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let method = request.method().clone();
    // A link's token never reaches a log line.
    let path = crate::routes::links::redact(request.uri().path());
    let mut response = next.run(request).await;
    if let Some(InternalDetail(detail)) = response.extensions_mut().remove::<InternalDetail>() {
        state.log(&format!(
            "pp-server: internal error on {method} {path}: {detail}"
        ));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts() {
        for host in [
            "127.0.0.1",
            "127.0.0.1:8080",
            "localhost",
            "LOCALHOST:1",
            "[::1]",
            "[::1]:65535",
        ] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in [
            "evil.example.com",
            "localhost.evil.com",
            "127.0.0.1.nip.io",
            "127.0.0.2",
            "localhost:",
            "localhost:80:80",
            "localhost:123456",
            "[::1",
            "[::2]:80",
            "0.0.0.0",
            "",
            "127.0.0.1:8080@evil.com",
        ] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }

    #[test]
    fn origins() {
        let mut headers = HeaderMap::new();
        assert!(same_origin(&headers, "localhost:3000", false));
        headers.insert(ORIGIN, HeaderValue::from_static("http://localhost:3000"));
        assert!(same_origin(&headers, "localhost:3000", false));
        assert!(!same_origin(&headers, "localhost:3000", true));
        assert!(!same_origin(&headers, "127.0.0.1:3000", false));
        headers.insert(ORIGIN, HeaderValue::from_static("https://pp.example.org"));
        assert!(same_origin(&headers, "pp.example.org", true));
        assert!(!same_origin(&headers, "pp.example.org", false));
        headers.insert(ORIGIN, HeaderValue::from_static("null"));
        assert!(!same_origin(&headers, "localhost:3000", false));
        headers.remove(ORIGIN);
        headers.insert("sec-fetch-site", HeaderValue::from_static("cross-site"));
        assert!(!same_origin(&headers, "localhost:3000", false));
    }

    #[test]
    fn allowed_hosts() {
        let allowed = vec!["pp.example.org".to_owned(), "192.168.1.5:8080".to_owned()];
        assert!(is_allowed_host("pp.example.org", &allowed));
        assert!(is_allowed_host("PP.example.org:443", &allowed));
        assert!(is_allowed_host("192.168.1.5:8080", &allowed));
        for host in [
            "192.168.1.5",
            "192.168.1.5:8081",
            "evil.example.org",
            "pp.example.org.evil.com",
            "pp.example.org:x",
            "",
        ] {
            assert!(!is_allowed_host(host, &allowed), "{host}");
        }
        assert!(!is_allowed_host("anything", &[]));
        assert!(!is_allowed_host("anything", &[String::new()]));
    }

    #[test]
    fn webhook_paths() {
        assert!(is_webhook_path("/api/channels/forms/webhook"));
        assert!(!is_webhook_path("/api/channels/forms/rotate"));
        assert!(!is_webhook_path("/api/channels//webhook"));
        assert!(!is_webhook_path("/api/channels/a/b/webhook"));
    }
}
