//! A small HTTP/1.1 client over tokio's `TcpStream` for driving `pocketpilot serve` from
//! the fault and load binaries: one request per connection (`Connection: close`), chunked
//! or sized bodies, and a reader for server-sent events.
//!
//! It talks to `127.0.0.1` only and sends what the server's checks expect: a loopback
//! `Host`, the server's own `Origin` on writes and the bearer token.

use std::io;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Where a running server listens and the token it accepts.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// The loopback port.
    pub port: u16,
    /// The API token.
    pub token: String,
}

/// A complete response.
#[derive(Debug, Clone)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The decoded body.
    pub body: Vec<u8>,
}

impl Response {
    /// The body as JSON.
    pub fn json(&self) -> io::Result<Value> {
        serde_json::from_slice(&self.body).map_err(|error| {
            io::Error::other(format!(
                "status {}: body is not JSON ({error}): {}",
                self.status,
                String::from_utf8_lossy(&self.body)
            ))
        })
    }

    /// The body as JSON when the status is 2xx, an error naming the status otherwise.
    pub fn ok_json(&self) -> io::Result<Value> {
        if (200..300).contains(&self.status) {
            self.json()
        } else {
            Err(io::Error::other(format!(
                "status {}: {}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )))
        }
    }
}

impl Endpoint {
    fn head(&self, method: &str, path: &str, extra: &str) -> String {
        let origin = if method == "GET" {
            String::new()
        } else {
            format!("Origin: http://127.0.0.1:{}\r\n", self.port)
        };
        format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\
             Authorization: Bearer {token}\r\n{origin}{extra}Connection: close\r\n",
            port = self.port,
            token = self.token,
        )
    }

    /// Sends one request and reads the whole response, giving up after `limit`.
    pub async fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
        limit: Duration,
    ) -> io::Result<Response> {
        tokio::time::timeout(limit, self.request_inner(method, path, body))
            .await
            .map_err(|_| {
                io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("{method} {path}: no answer within {limit:?}"),
                )
            })?
    }

    async fn request_inner(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> io::Result<Response> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).await?;
        stream.set_nodelay(true)?;
        let payload = body.map(Value::to_string).unwrap_or_default();
        let mut head = self.head(method, path, "");
        if body.is_some() || method != "GET" {
            head.push_str(&format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                payload.len()
            ));
        }
        head.push_str("\r\n");
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(payload.as_bytes());
        stream.write_all(&bytes).await?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await?;
        parse_response(&raw)
    }

    /// `GET` returning 2xx JSON.
    pub async fn get_json(&self, path: &str, limit: Duration) -> io::Result<Value> {
        self.request("GET", path, None, limit).await?.ok_json()
    }

    /// Opens an event stream at `path` (resuming after `last_event_id` when given), calls
    /// `on_open` once the server has answered 200, then `on_event(seq)` for every event
    /// that carries an `id:` line, until `on_event` returns `false`, the stream ends or
    /// fails.
    pub async fn sse(
        &self,
        path: &str,
        last_event_id: Option<u64>,
        on_open: impl FnOnce(),
        mut on_event: impl FnMut(u64) -> bool,
    ) -> io::Result<()> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).await?;
        stream.set_nodelay(true)?;
        let mut extra = String::from("Accept: text/event-stream\r\n");
        if let Some(id) = last_event_id {
            extra.push_str(&format!("Last-Event-ID: {id}\r\n"));
        }
        let head = self.head("GET", path, &extra) + "\r\n";
        stream.write_all(head.as_bytes()).await?;
        let mut raw = Vec::new();
        let mut chunk = vec![0u8; 16 * 1024];
        // The response head.
        let head_end = loop {
            if let Some(end) = find(&raw, b"\r\n\r\n") {
                break end;
            }
            let read = stream.read(&mut chunk).await?;
            if read == 0 {
                return Err(io::Error::other("event stream closed before its head"));
            }
            raw.extend_from_slice(&chunk[..read]);
        };
        let head = String::from_utf8_lossy(&raw[..head_end]).into_owned();
        let status = status_of(&head)?;
        if status != 200 {
            return Err(io::Error::other(format!("event stream: status {status}")));
        }
        on_open();
        let chunked = header(&head, "transfer-encoding").is_some_and(|v| v.contains("chunked"));
        let mut wire: Vec<u8> = raw.split_off(head_end + 4);
        let mut text: Vec<u8> = Vec::new();
        loop {
            // Each buffer is read from a cursor and shortened once per read: a read holds
            // dozens of events, and moving the rest after each one is quadratic work.
            if chunked {
                let mut used = 0;
                while let Some((data, size)) = next_chunk(&wire[used..])? {
                    text.extend_from_slice(data);
                    used += size;
                }
                wire.drain(..used);
            } else {
                text.append(&mut wire);
            }
            let mut taken = 0;
            while let Some(end) = find(&text[taken..], b"\n\n") {
                let block = &text[taken..taken + end];
                taken += end + 2;
                if let Some(seq) = event_id(block)
                    && !on_event(seq)
                {
                    return Ok(());
                }
            }
            text.drain(..taken);
            let read = stream.read(&mut chunk).await?;
            if read == 0 {
                return Ok(());
            }
            wire.extend_from_slice(&chunk[..read]);
        }
    }
}

/// The `id:` of one SSE event block.
fn event_id(block: &[u8]) -> Option<u64> {
    block
        .split(|byte| *byte == b'\n')
        .find_map(|line| line.strip_prefix(b"id:"))
        .and_then(|id| std::str::from_utf8(id).ok())
        .and_then(|id| id.trim().parse().ok())
}

/// Where `needle` (not empty) first starts in `haystack`.
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    let (&first, rest) = needle.split_first()?;
    let mut from = 0;
    while let Some(at) = haystack[from..].iter().position(|byte| *byte == first) {
        let start = from + at;
        if haystack[start + 1..].starts_with(rest) {
            return Some(start);
        }
        from = start + 1;
    }
    None
}

fn status_of(head: &str) -> io::Result<u16> {
    head.split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| io::Error::other(format!("bad status line: {head:.80}")))
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.split("\r\n").skip(1).find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.trim()
            .eq_ignore_ascii_case(name)
            .then_some(value.trim())
    })
}

/// One complete chunk at the start of `wire`: its data and the bytes it used; `None`
/// when more bytes are needed.
fn next_chunk(wire: &[u8]) -> io::Result<Option<(&[u8], usize)>> {
    let Some(line_end) = find(wire, b"\r\n") else {
        return Ok(None);
    };
    let size_text = String::from_utf8_lossy(&wire[..line_end]);
    let size_text = size_text.split(';').next().unwrap_or_default().trim();
    let size = usize::from_str_radix(size_text, 16)
        .map_err(|_| io::Error::other(format!("bad chunk size `{size_text}`")))?;
    let start = line_end + 2;
    if wire.len() < start + size + 2 {
        return Ok(None);
    }
    Ok(Some((&wire[start..start + size], start + size + 2)))
}

/// Parses a whole `Connection: close` response.
fn parse_response(raw: &[u8]) -> io::Result<Response> {
    let head_end =
        find(raw, b"\r\n\r\n").ok_or_else(|| io::Error::other("response without a head"))?;
    let head = String::from_utf8_lossy(&raw[..head_end]).into_owned();
    let status = status_of(&head)?;
    let rest = &raw[head_end + 4..];
    let body = if header(&head, "transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        let mut body = Vec::new();
        let mut wire = rest;
        while let Some((data, used)) = next_chunk(wire)? {
            if data.is_empty() {
                break;
            }
            body.extend_from_slice(data);
            wire = &wire[used..];
        }
        body
    } else if let Some(length) = header(&head, "content-length").and_then(|v| v.parse().ok()) {
        if rest.len() < length {
            return Err(io::Error::other("response body cut short"));
        }
        rest[..length].to_vec()
    } else {
        rest.to_vec()
    };
    Ok(Response { status, body })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_needle_and_reads_an_event_id() {
        assert_eq!(find(b"ab\r\n\r\ncd", b"\r\n\r\n"), Some(2));
        assert_eq!(find(b"\r\n\rx\r\n\r\n", b"\r\n\r\n"), Some(4));
        assert_eq!(find(b"a\n", b"\n\n"), None);
        assert_eq!(find(b"\n", b"\n\n"), None);
        assert_eq!(find(b"", b"\n\n"), None);
        assert_eq!(find(b"abc", b""), None);
        assert_eq!(event_id(b"id: 42\nevent: x\ndata: {}"), Some(42));
        assert_eq!(event_id(b"event: x\nid:7"), Some(7));
        assert_eq!(event_id(b": keep-alive"), None);
    }

    #[test]
    fn parses_sized_and_chunked_bodies() {
        let sized =
            parse_response(b"HTTP/1.1 409 Conflict\r\ncontent-length: 2\r\n\r\n{}").unwrap();
        assert_eq!((sized.status, sized.body.as_slice()), (409, &b"{}"[..]));
        let chunked = parse_response(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
        )
        .unwrap();
        assert_eq!(chunked.body, b"abcde");
        assert!(parse_response(b"HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\nab").is_err());
    }

    #[test]
    fn a_partial_chunk_waits_for_more_bytes() {
        assert!(next_chunk(b"5\r\nab").unwrap().is_none());
        let (data, used) = next_chunk(b"2\r\nab\r\nrest").unwrap().unwrap();
        assert_eq!((data, used), (&b"ab"[..], 7));
    }
}
