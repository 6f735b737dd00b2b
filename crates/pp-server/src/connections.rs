//! The accept loop behind [`crate::serve`]: each connection is served by hyper's HTTP/1
//! builder with a timer, so a client that sends half a request cannot hold a connection
//! (and its file descriptor) for longer than [`ServerSettings::header_read_timeout`];
//! request bodies time out after [`ServerSettings::body_idle_timeout`] without data
//! (between chunks, never in total: a large upload on a slow link passes); and at most
//! [`ServerSettings::max_connections`] connections are open at once. One more gets
//! `503` with `Retry-After: 1` and is closed, so the server keeps descriptors for the
//! connections it serves instead of failing `accept` with `EMFILE`.
//!
//! `axum::serve` sets no hyper timer, so it has no header timeout at all: 1,100 half-sent
//! requests under a 1024 open-file limit used to make `/api/health` time out.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::Request;
use axum::response::Response;
use http_body::{Body as HttpBody, Frame, SizeHint};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::{TowerToHyperService, TowerToHyperServiceFuture};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;
use tokio::time::{Instant, Sleep};

use crate::ServerSettings;

/// What a connection over [`ServerSettings::max_connections`] is told before it is
/// closed: try again in a second.
const OVER_CAPACITY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\n\
    Retry-After: 1\r\n\
    Content-Type: application/json\r\n\
    Content-Length: 98\r\n\
    Connection: close\r\n\
    \r\n\
    {\"error\":{\"code\":\"too_many_connections\",\"message\":\"too many open connections; retry in a second\"}}";

/// Most over-capacity connections being told 503 at once; past it, a connection is
/// closed without an answer (each answer holds a descriptor for up to
/// [`REFUSAL_LINGER`]).
const MAX_REFUSING: usize = 64;

/// How long an over-capacity connection may take to read its 503: the request is
/// drained meanwhile, so closing does not reset the connection before the client reads
/// the answer.
const REFUSAL_LINGER: Duration = Duration::from_secs(1);

/// How long accepting pauses after an error that is not the client's (`EMFILE`: the
/// process is out of descriptors until a connection closes).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Listens on `address` with room for `backlog` connections that have finished their
/// handshake but that the accept loop has not taken yet (the kernel caps it at
/// `net.core.somaxconn`). `tokio::net::TcpListener::bind` leaves room for 128: a burst of
/// more new connections than that (a thousand clients deciding at once) has the kernel
/// drop the rest, and each of those clients waits a second for its retry.
///
/// # Errors
/// Creating the socket, binding `address` (in use, not this machine's) or listening.
pub fn listen(address: SocketAddr, backlog: u32) -> std::io::Result<TcpListener> {
    let socket = match address {
        SocketAddr::V4(_) => TcpSocket::new_v4()?,
        SocketAddr::V6(_) => TcpSocket::new_v6()?,
    };
    // As `TcpListener::bind` does: a restarted server can take its port back at once.
    socket.set_reuseaddr(true)?;
    socket.bind(address)?;
    socket.listen(backlog)
}

/// Accepts connections on `listener` and serves `router` on each until `stop` turns
/// `true`; then stops accepting, lets every connection finish its request in flight
/// (idle ones close at once) and returns when all have closed. `log` receives accept
/// errors.
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    settings: &ServerSettings,
    mut stop: watch::Receiver<bool>,
    log: impl Fn(&str),
) -> std::io::Result<()> {
    let handler = Handler {
        router: TowerToHyperService::new(router),
        body_idle: settings.body_idle_timeout,
    };
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(settings.header_read_timeout);
    let slots = Arc::new(Semaphore::new(settings.max_connections));
    // Owners of every connection's task: dropping them (when `serve`'s caller gives up
    // after the shutdown grace) aborts what is left.
    let mut connections = JoinSet::new();
    let mut refusals = JoinSet::new();
    // What each connection watches to begin its graceful shutdown.
    let connection_stop = stop.clone();
    loop {
        tokio::select! {
            () = async { let _ = stop.wait_for(|down| *down).await; } => break,
            Some(_) = connections.join_next() => {}
            Some(_) = refusals.join_next() => {}
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => match Arc::clone(&slots).try_acquire_owned() {
                    Ok(permit) => {
                        let connection =
                            builder.serve_connection(TokioIo::new(stream), handler.clone());
                        let mut stop = connection_stop.clone();
                        connections.spawn(async move {
                            // Held while the connection is open.
                            let _permit = permit;
                            let mut connection = pin!(connection);
                            tokio::select! {
                                _ = connection.as_mut() => return,
                                () = async { let _ = stop.wait_for(|down| *down).await; } => {}
                            }
                            connection.as_mut().graceful_shutdown();
                            let _ = connection.await;
                        });
                    }
                    Err(_) if refusals.len() < MAX_REFUSING => {
                        refusals.spawn(refuse(stream));
                    }
                    // Dropped: closed without an answer.
                    Err(_) => {}
                },
                Err(error) if is_connection_error(&error) => {}
                Err(error) => {
                    log(&format!("cannot accept a connection: {error}"));
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            },
        }
    }
    drop(listener);
    refusals.abort_all();
    while connections.join_next().await.is_some() {}
    Ok(())
}

/// Errors of one connection that failed before `accept` returned it: nothing to wait
/// for.
fn is_connection_error(error: &std::io::Error) -> bool {
    matches!(
        error.kind(),
        std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
    )
}

/// Answers a connection over capacity with `503` and `Retry-After: 1`, then closes it
/// after reading what the client sent (for at most [`REFUSAL_LINGER`]).
async fn refuse(mut stream: TcpStream) {
    let _ = tokio::time::timeout(REFUSAL_LINGER, async {
        stream.write_all(OVER_CAPACITY).await?;
        stream.shutdown().await?;
        let mut sink = [0_u8; 4096];
        while stream.read(&mut sink).await? > 0 {}
        Ok::<(), std::io::Error>(())
    })
    .await;
}

/// The per-connection service: the router, with every request body wrapped in
/// [`IdleTimeout`].
#[derive(Clone)]
struct Handler {
    router: TowerToHyperService<Router>,
    body_idle: Duration,
}

impl hyper::service::Service<Request<Incoming>> for Handler {
    type Response = Response;
    type Error = Infallible;
    type Future = TowerToHyperServiceFuture<Router, Request<IdleTimeout>>;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        let idle = self.body_idle;
        self.router
            .call(request.map(|body| IdleTimeout::new(body, idle)))
    }
}

/// A request body that fails when no data arrives for `idle` while it is being read;
/// the clock restarts with every frame, so only a stalled body fails, never a slow one.
pub(crate) struct IdleTimeout {
    inner: Incoming,
    idle: Duration,
    /// Armed while a read waits for data; `None` between reads.
    deadline: Option<Pin<Box<Sleep>>>,
}

impl IdleTimeout {
    fn new(inner: Incoming, idle: Duration) -> Self {
        Self {
            inner,
            idle,
            deadline: None,
        }
    }
}

impl HttpBody for IdleTimeout {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => {
                this.deadline = None;
                Poll::Ready(frame.map(|frame| frame.map_err(Into::into)))
            }
            Poll::Pending => {
                let idle = this.idle;
                let deadline = this.deadline.get_or_insert_with(|| {
                    Box::pin(tokio::time::sleep_until(Instant::now() + idle))
                });
                match deadline.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Some(Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!("no request body data for {} s", idle.as_secs()),
                    )
                    .into()))),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// More connections than the 128 `tokio::net::TcpListener::bind` leaves room for.
    const BURST: u32 = 300;

    /// `net.core.somaxconn`: the most any listener may queue.
    #[expect(
        clippy::disallowed_methods,
        reason = "a kernel setting, not a model-supplied path"
    )]
    fn somaxconn() -> u32 {
        std::fs::read_to_string("/proc/sys/net/core/somaxconn")
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    #[tokio::test]
    async fn a_burst_larger_than_128_completes_its_handshakes_before_any_is_accepted() {
        if somaxconn() <= BURST {
            eprintln!(
                "skipped: net.core.somaxconn is {} here, at most the {BURST} connections \
                 this test queues",
                somaxconn()
            );
            return;
        }
        let listener = listen(SocketAddr::from(([127, 0, 0, 1], 0)), BURST + 1).unwrap();
        let address = listener.local_addr().unwrap();
        // Nothing accepts while they connect: each completed handshake waits in the
        // listener's queue. With room for 128, the 130th SYN is dropped and its connect
        // would wait a second for the retry.
        let clients = tokio::task::spawn_blocking(move || {
            (0..BURST)
                .map(|index| {
                    std::net::TcpStream::connect_timeout(&address, Duration::from_millis(500))
                        .unwrap_or_else(|error| panic!("connection {index}: {error}"))
                })
                .collect::<Vec<_>>()
        })
        .await
        .unwrap();
        assert_eq!(clients.len(), BURST as usize);
        for _ in 0..BURST {
            let (stream, _) = listener.accept().await.unwrap();
            drop(stream);
        }
    }

    #[tokio::test]
    async fn a_port_already_listened_on_is_refused() {
        let first = listen(SocketAddr::from(([127, 0, 0, 1], 0)), 16).unwrap();
        let taken = first.local_addr().unwrap();
        let error = listen(taken, 16).unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::AddrInUse, "{error}");
    }
}
