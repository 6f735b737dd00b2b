//! PocketPilot's HTTP service: the JSON API under `/api` (tasks, approvals, event
//! streams over SSE, operator files, audit ledger, workspaces, health, the OpenAPI
//! document), console login, and the console shell at `/`.
//!
//! Main types: [`AppState`] (the task service, the users, the chat sessions, the API
//! token, [`ServerSettings`]),
//! [`router`] (opens no socket; tests drive it with `oneshot`), [`serve`] (a bound
//! listener plus a shutdown future) and [`ApiError`] (every failure as
//! `{"error": {"code", "message"}}`). This crate sits above `pp-tasks`, `pp-users`, `pp-chat`, `pp-knowledge`,
//! `pp-schedules` and `pp-channels` (which it drives)
//! and `pp-gate` (the jail every operator file goes through), and below `pp-cli`, which
//! owns the token file, binds the port and calls [`serve`]. It is the only crate that
//! uses axum.
//!
//! Security (SPEC §6): every `/api` route but `/api/health` and webhook deliveries
//! (`POST /api/channels/{name}/webhook`, authenticated by the channel's HMAC signature
//! instead, [`AppState::set_channels`]) needs `Authorization: Bearer <token>` or the
//! `pp_session` cookie from `/login`; every route refuses a Host that is neither a
//! loopback name nor one of [`ServerSettings::allowed_hosts`], and state-changing
//! requests but webhook deliveries refuse a foreign `Origin`; bodies are size-capped;
//! every response carries a strict CSP.
//!
//! ```no_run
//! # async fn example(
//! #     service: pp_tasks::TaskService,
//! #     users: pp_users::Users,
//! #     sessions: pp_chat::Sessions,
//! # ) -> std::io::Result<()> {
//! use pp_server::{AppState, ServerSettings};
//!
//! let settings = ServerSettings::default();
//! // Room for as many connections waiting to be accepted as may be open at once.
//! let backlog = u32::try_from(settings.max_connections).unwrap_or(u32::MAX);
//! let listener = pp_server::listen(([127, 0, 0, 1], 0).into(), backlog)?;
//! let settings = ServerSettings {
//!     port: Some(listener.local_addr()?.port()),
//!     ..settings
//! };
//! let state = AppState::new(service, users, sessions, "the-token-from-the-token-file", settings);
//! // The CLI completes this on Ctrl-C; sending on (or dropping) `stop` shuts down.
//! let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
//! # let _keep = stop;
//! pp_server::serve(listener, state, async {
//!     let _ = stopped.await;
//! })
//! .await
//! # }
//! ```
//!
//! ```
//! assert!(pp_server::api_routes().contains(&("GET", "/api/health")));
//! assert_eq!(pp_server::ServerSettings::default().max_body_bytes, 1024 * 1024);
//! assert_eq!(pp_server::ServerSettings::default().max_connections, 4096);
//! ```

mod auth;
mod caller;
mod connections;
mod error;
mod extract;
mod feed;
mod routes;
mod secret;
mod security;
mod sse;
mod state;
mod upload;

use std::future::Future;

pub use connections::listen;
pub use error::{ApiError, ErrorCode};
pub use state::{AppState, McpReportSource, ServerSettings};

/// The router: every route and middleware, over `state`. Opens no socket.
pub fn router(state: AppState) -> axum::Router {
    routes::build(state)
}

/// Whether the server answers requests whose `Host` is `host` (`name` or `name:port`):
/// a loopback name, or one `allowed_hosts` lists (what `[server] public_url` is checked
/// with).
pub fn host_allowed(host: &str, allowed_hosts: &[String]) -> bool {
    security::is_loopback_host(host) || security::is_allowed_host(host, allowed_hosts)
}

/// Every `/api` route as `(method, path)`, in the router's path syntax (`{id}`); the
/// OpenAPI document lists exactly these.
pub fn api_routes() -> Vec<(&'static str, &'static str)> {
    routes::table()
        .into_iter()
        .map(|route| (route.method, route.path))
        .collect()
}

/// Every `/api` route as `(method, path, cells)`: the role matrix of docs/team.md, one
/// cell per role in [`pp_types::Role::ALL`] order (`yes`, `granted`, `own`, `no`, or
/// `public` for routes that need no credentials).
pub fn route_access() -> Vec<(&'static str, &'static str, [&'static str; 4])> {
    routes::table()
        .into_iter()
        .map(|route| {
            let cells = pp_types::Role::ALL.map(|role| route.access.cell(role));
            (route.method, route.path, cells)
        })
        .collect()
}

/// Serves the router on `listener` until `shutdown` completes (or
/// [`AppState::begin_shutdown`] is called), then shuts down gracefully: the listener
/// stops accepting, event streams end, and in-flight requests get up to
/// [`ServerSettings::shutdown_grace`] to finish before this returns anyway.
///
/// Each connection has [`ServerSettings::header_read_timeout`] to send a request's
/// headers (also between requests on a kept-alive connection) and
/// [`ServerSettings::body_idle_timeout`] between pieces of its body; at most
/// [`ServerSettings::max_connections`] are open at once, and one more is answered `503`
/// with `Retry-After: 1` and closed.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let grace = state.settings().shutdown_grace;
    let signal_state = state.clone();
    let mut began = state.shutdown_signal();
    let signal = async move {
        let mut external = signal_state.shutdown_signal();
        tokio::select! {
            () = shutdown => {}
            _ = external.wait_for(|down| *down) => {}
        }
        signal_state.begin_shutdown();
    };
    let settings = state.settings().clone();
    let stop = state.shutdown_signal();
    let log_state = state.clone();
    let server = connections::serve(listener, router(state), &settings, stop, |line| {
        log_state.log(line);
    });
    tokio::select! {
        result = server => result,
        () = async {
            tokio::join!(signal, async {
                let _ = began.wait_for(|down| *down).await;
                tokio::time::sleep(grace).await;
            });
        } => Ok(()),
    }
}
