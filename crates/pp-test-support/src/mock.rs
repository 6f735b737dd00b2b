//! A tiny HTTP/1.1 mock server on `127.0.0.1:0`: replays scripted replies in order (the
//! last one repeats) and records every request, or answers each request with a handler
//! (the load test's OpenAI-compatible conversations); supports keep-alive, chunked bodies
//! and delays. Hand-written on tokio to keep the build small.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// `GET`, `POST`, …
    pub method: String,
    /// The request target (path and query).
    pub path: String,
    /// Lower-case names.
    pub headers: BTreeMap<String, String>,
    /// The raw body.
    pub body: Vec<u8>,
}

impl Recorded {
    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("the request body is JSON")
    }

    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }
}

/// How a reply's body is sent.
#[derive(Debug, Clone)]
enum Body {
    /// With `Content-Length`.
    Full(Vec<u8>),
    /// `Transfer-Encoding: chunked`, each piece after its delay.
    Chunks(Vec<(Duration, Vec<u8>)>),
}

/// One scripted reply.
#[derive(Debug, Clone)]
pub struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Body,
    /// Wait before sending anything (slow first byte).
    delay: Duration,
}

impl Reply {
    /// A reply with `content_type` and a full body.
    pub fn text(status: u16, content_type: &str, body: &str) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), content_type.into())],
            body: Body::Full(body.as_bytes().to_vec()),
            delay: Duration::ZERO,
        }
    }

    /// A JSON reply.
    pub fn json(status: u16, value: &Value) -> Self {
        Self::text(status, "application/json", &value.to_string())
    }

    /// A 200 event stream: each item becomes `data: {item}\n\n`, sent as its own chunk.
    pub fn sse<S: AsRef<str>>(items: &[S]) -> Self {
        let pieces = items
            .iter()
            .map(|item| {
                (
                    Duration::ZERO,
                    format!("data: {}\n\n", item.as_ref()).into_bytes(),
                )
            })
            .collect();
        Self::stream(pieces)
    }

    /// A 200 event stream of raw pieces (already SSE-formatted), each a chunk.
    pub fn stream(pieces: Vec<(Duration, Vec<u8>)>) -> Self {
        Self {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body: Body::Chunks(pieces),
            delay: Duration::ZERO,
        }
    }

    /// Adds a header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Waits `delay` before answering.
    pub fn delayed(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}

/// Answers one request (handler mode).
pub type Handler = dyn Fn(&Recorded) -> Reply + Send + Sync;

#[derive(Default)]
struct State {
    replies: Vec<Reply>,
    served: usize,
    requests: Vec<Recorded>,
    /// When set, answers every request and nothing is recorded (long runs stay small).
    handler: Option<Arc<Handler>>,
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("served", &self.served)
            .field("requests", &self.requests.len())
            .field("handler", &self.handler.is_some())
            .finish_non_exhaustive()
    }
}

/// The running server; stops when dropped.
#[derive(Debug)]
pub struct MockServer {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    task: JoinHandle<()>,
}

impl MockServer {
    /// Starts serving `replies` in order; the last one repeats.
    pub async fn start(replies: Vec<Reply>) -> Self {
        Self::start_with_state(State {
            replies,
            ..State::default()
        })
        .await
    }

    /// Answers every request with `handler` (requests are counted, not recorded).
    pub async fn start_with(handler: impl Fn(&Recorded) -> Reply + Send + Sync + 'static) -> Self {
        Self::start_with_state(State {
            handler: Some(Arc::new(handler)),
            ..State::default()
        })
        .await
    }

    async fn start_with_state(state: State) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the mock server");
        let addr = listener.local_addr().expect("the mock server's address");
        let state = Arc::new(Mutex::new(state));
        let shared = Arc::clone(&state);
        let task = tokio::spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            while let Ok((stream, _)) = listener.accept().await {
                // Like real servers: no Nagle delay between the small writes of a stream.
                let _ = stream.set_nodelay(true);
                connections.spawn(serve(stream, Arc::clone(&shared)));
            }
        });
        Self { addr, state, task }
    }

    /// `http://127.0.0.1:port`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.state.lock().expect("mock state").requests.clone()
    }

    /// How many requests were answered.
    pub fn served(&self) -> usize {
        self.state.lock().expect("mock state").served
    }

    /// The single request received (panics unless exactly one).
    pub fn only_request(&self) -> Recorded {
        let requests = self.requests();
        assert_eq!(requests.len(), 1, "{requests:#?}");
        requests.into_iter().next().expect("one request")
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(mut stream: TcpStream, state: Arc<Mutex<State>>) {
    let mut buffer = Vec::new();
    loop {
        let Some(request) = read_request(&mut stream, &mut buffer).await else {
            return;
        };
        let reply = {
            let mut state = state.lock().expect("mock state");
            if let Some(handler) = state.handler.clone() {
                state.served += 1;
                drop(state);
                Some(handler(&request))
            } else {
                state.requests.push(request);
                let index = state.served.min(state.replies.len().saturating_sub(1));
                state.served += 1;
                state.replies.get(index).cloned()
            }
        };
        let Some(reply) = reply else { return };
        if write_reply(&mut stream, reply).await.is_err() {
            return;
        }
    }
}

async fn read_request(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> Option<Recorded> {
    let head_end = loop {
        if let Some(position) = buffer.windows(4).position(|window| window == b"\r\n\r\n") {
            break position;
        }
        let mut chunk = [0u8; 8192];
        let read = stream.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let method = request_line.next()?.to_owned();
    let path = request_line.next()?.to_owned();
    let headers: BTreeMap<String, String> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let length: usize = headers
        .get("content-length")
        .and_then(|value| value.parse().ok())
        .unwrap_or(0);
    let body_start = head_end + 4;
    while buffer.len() < body_start + length {
        let mut chunk = [0u8; 8192];
        let read = stream.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
    }
    let body = buffer[body_start..body_start + length].to_vec();
    buffer.drain(..body_start + length);
    Some(Recorded {
        method,
        path,
        headers,
        body,
    })
}

async fn write_reply(stream: &mut TcpStream, reply: Reply) -> std::io::Result<()> {
    if !reply.delay.is_zero() {
        // A slow server is the behaviour under test (timeouts, progress), not a wait.
        tokio::time::sleep(reply.delay).await;
    }
    let mut head = format!("HTTP/1.1 {} Mock\r\n", reply.status);
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    match reply.body {
        Body::Full(body) => {
            head.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
            let mut bytes = head.into_bytes();
            bytes.extend_from_slice(&body);
            stream.write_all(&bytes).await?;
        }
        Body::Chunks(pieces) => {
            head.push_str("transfer-encoding: chunked\r\n\r\n");
            stream.write_all(head.as_bytes()).await?;
            for (delay, piece) in pieces {
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                if piece.is_empty() {
                    continue;
                }
                let mut chunk = format!("{:x}\r\n", piece.len()).into_bytes();
                chunk.extend_from_slice(&piece);
                chunk.extend_from_slice(b"\r\n");
                stream.write_all(&chunk).await?;
                stream.flush().await?;
            }
            stream.write_all(b"0\r\n\r\n").await?;
        }
    }
    stream.flush().await
}
