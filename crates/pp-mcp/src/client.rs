//! Connections to the configured MCP servers over rmcp: a stdio child process or a
//! streamable-HTTP endpoint per server, started lazily (or at startup), restarted with
//! backoff after a crash, every call bounded by the server's timeout and output cap and
//! stopped by the task's interrupt.
//!
//! A [`Connection`] is one server's lifecycle:
//!
//! - *idle*: configured, nothing running (`Connection::new` is cheap);
//! - *live*: started and initialized; its tool list is cached after the first answer;
//! - *waiting*: it crashed or failed to start; until the backoff (250 ms, doubling to
//!   30 s, reset by a successful start) has passed every use gets
//!   [`McpError::Restarting`], the first use after it starts the server again;
//! - *closed*: [`Connection::shutdown`] ended it; it is never started again.
//!
//! A stdio server runs confined ([`Launcher`], `sandbox.rs`), and its Landlock rules
//! are fixed when it starts, so [`McpClients`] keeps one connection per (server,
//! workspace): a task in a workspace gets its own process of the server, started
//! lazily by its first segment. An HTTP server has one connection whatever the
//! workspace.

mod http;
mod output;
mod process;
mod sandbox;

pub use sandbox::Launcher;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pp_agent::{BoxFuture, Interrupt};
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ServerPeerInfo,
};
use rmcp::service::{ClientInitializeError, RoleClient, RunningService, ServiceError};
use serde_json::Value;
use tokio::sync::OnceCell;

use crate::backend::{Backend, CallOutput, ListedTool, McpError};
use crate::config::{ServerConfig, Transport};
use process::ServerProcess;

/// The first restart delay after a crash; it doubles with every failure in a row.
const BACKOFF_FIRST: Duration = Duration::from_millis(250);

/// The longest restart delay.
const BACKOFF_MAX: Duration = Duration::from_secs(30);

/// How often a waiting call looks at the task's interrupt.
const INTERRUPT_POLL: Duration = Duration::from_millis(50);

/// The shortest time a server gets for its `initialize` handshake (a slower
/// `call_timeout` applies when it is longer).
const HANDSHAKE_MIN: Duration = Duration::from_secs(30);

/// How long a stopping server gets to exit on its own after its stdin closes, and again
/// after SIGTERM, before its group gets SIGKILL.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(500);

/// How long a failed call waits for a dying server's exit status, for its message.
const EXIT_STATUS_WAIT: Duration = Duration::from_secs(2);

/// One configured server (for one workspace, a stdio server): starts/connects lazily,
/// restarts after a crash.
pub struct Connection {
    config: ServerConfig,
    /// What confines a stdio server (`None`: only `confined = false` servers start).
    launcher: Option<Arc<Launcher>>,
    /// The workspace a stdio server serves (its sandbox grants it as configured).
    workspace: Option<PathBuf>,
    /// The lifecycle state. An async lock because a start (held under it, so concurrent
    /// first uses start the server once) awaits the handshake.
    state: tokio::sync::Mutex<State>,
    /// The `instructions` of the last successful `initialize` (readable without awaiting).
    instructions: Mutex<Option<String>>,
}

/// Where a [`Connection`] is in its lifecycle (see the module docs).
struct State {
    phase: Phase,
    /// Failed starts and crashes since the last successful start (sets the backoff).
    failures: u32,
}

enum Phase {
    Idle,
    Live(Arc<Live>),
    Waiting { until: Instant },
    Closed,
}

/// A started, initialized server.
struct Live {
    /// rmcp's client session (dropping it stops its tasks and closes the transport).
    service: RunningService<RoleClient, ClientConfig>,
    /// The child process (stdio servers only); dropping it kills the process group.
    process: Option<ServerProcess>,
    /// `tools/list`, once answered.
    tools: OnceCell<Vec<ListedTool>>,
    /// Set when a call found the transport broken (HTTP errors leave no exit status).
    broken: std::sync::atomic::AtomicBool,
}

impl Live {
    fn is_alive(&self) -> bool {
        !self.broken.load(std::sync::atomic::Ordering::SeqCst)
            && !self.service.is_closed()
            && !self.service.is_transport_closed()
            && self
                .process
                .as_ref()
                .is_none_or(|process| process.exit().is_none())
    }

    /// When it died (its exit, else now): the backoff counts from there.
    fn died_at(&self) -> Instant {
        self.process
            .as_ref()
            .and_then(ServerProcess::exit)
            .map_or_else(Instant::now, |exit| exit.at)
    }

    /// Marks it broken and says what is known about why (the exit status and stderr of
    /// a stdio server, waited for briefly; a process that is still there is killed).
    async fn crash_reason(&self, fallback: &str) -> String {
        self.broken.store(true, std::sync::atomic::Ordering::SeqCst);
        let Some(process) = &self.process else {
            return fallback.to_owned();
        };
        let exit = process.exited_within(EXIT_STATUS_WAIT).await;
        if exit.is_none() {
            process.kill();
        }
        process.describe(exit.as_ref())
    }
}

impl Connection {
    /// A connection to `config`'s server without a sandbox launcher (a stdio server then
    /// starts only with `confined = false`); nothing is started yet.
    pub fn new(config: ServerConfig) -> Self {
        Self::confined(config, None, None)
    }

    /// A connection to `config`'s server, a stdio server started through `launcher`'s
    /// sandbox for `workspace`; nothing is started yet.
    pub fn confined(
        config: ServerConfig,
        launcher: Option<Arc<Launcher>>,
        workspace: Option<PathBuf>,
    ) -> Self {
        Self {
            config,
            launcher,
            workspace,
            state: tokio::sync::Mutex::new(State {
                phase: Phase::Idle,
                failures: 0,
            }),
            instructions: Mutex::new(None),
        }
    }

    /// The server's configuration.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// The workspace this connection's server process serves (stdio servers).
    pub fn workspace(&self) -> Option<&Path> {
        self.workspace.as_deref()
    }

    /// Starts the server now unless it runs already (the `start = "startup"` path, and
    /// `mcp check`).
    pub async fn connect(&self) -> Result<(), McpError> {
        self.live().await.map(drop)
    }

    /// Ends the server for good: closes the session (a stdio server sees its stdin
    /// close), gives it a short grace, then SIGTERM and finally SIGKILL to its process
    /// group. Later uses fail with [`McpError::Start`].
    pub async fn shutdown(&self) {
        let old = {
            let mut state = self.state.lock().await;
            std::mem::replace(&mut state.phase, Phase::Closed)
        };
        if let Phase::Live(live) = old {
            live.service.cancellation_token().cancel();
            if let Some(process) = &live.process {
                process.terminate(SHUTDOWN_GRACE).await;
            }
        }
    }

    /// The pid of the server's process while it runs (stdio servers; for tests and
    /// `mcp check`).
    pub async fn pid(&self) -> Option<u32> {
        match &self.state.lock().await.phase {
            Phase::Live(live) => live.process.as_ref().and_then(ServerProcess::pid),
            _ => None,
        }
    }

    /// The live server, started first if needed (and allowed by the backoff).
    async fn live(&self) -> Result<Arc<Live>, McpError> {
        let mut state = self.state.lock().await;
        if let Phase::Live(live) = &state.phase {
            if live.is_alive() {
                return Ok(Arc::clone(live));
            }
            // It died since the last use: wait out the backoff from the moment it did.
            let died_at = live.died_at();
            state.failures = state.failures.saturating_add(1);
            state.phase = Phase::Waiting {
                until: died_at + backoff(state.failures),
            };
        }
        match state.phase {
            Phase::Closed => {
                return Err(self.start_error("the connection was shut down".to_owned()));
            }
            Phase::Waiting { until } => {
                let now = Instant::now();
                if now < until {
                    return Err(McpError::Restarting {
                        server: self.config.name.clone(),
                        retry_in_ms: u64::try_from((until - now).as_micros().div_ceil(1000))
                            .unwrap_or(u64::MAX),
                    });
                }
            }
            Phase::Idle | Phase::Live(_) => {}
        }
        match self.start().await {
            Ok(live) => {
                let live = Arc::new(live);
                let instructions = live
                    .service
                    .peer_info()
                    .and_then(|info: Arc<ServerPeerInfo>| info.instructions.clone());
                if let Ok(mut slot) = self.instructions.lock() {
                    *slot = instructions;
                }
                state.failures = 0;
                state.phase = Phase::Live(Arc::clone(&live));
                Ok(live)
            }
            Err(error) => {
                state.failures = state.failures.saturating_add(1);
                state.phase = Phase::Waiting {
                    until: Instant::now() + backoff(state.failures),
                };
                Err(error)
            }
        }
    }

    /// Starts the process or opens the HTTP session, and runs the `initialize` handshake.
    async fn start(&self) -> Result<Live, McpError> {
        let handshake_limit = self.config.call_timeout.max(HANDSHAKE_MIN);
        match &self.config.transport {
            Transport::Stdio { .. } => {
                let spawned = process::spawn(
                    &self.config,
                    self.launcher.as_deref(),
                    self.workspace.as_deref(),
                )
                .await?;
                let process = spawned.process;
                let handshake = tokio::time::timeout(
                    handshake_limit,
                    client_info().serve((spawned.stdout, spawned.stdin)),
                )
                .await;
                match handshake {
                    Ok(Ok(service)) => Ok(Live {
                        service,
                        process: Some(process),
                        tools: OnceCell::new(),
                        broken: false.into(),
                    }),
                    Ok(Err(error)) => {
                        let exit = process.exited_within(EXIT_STATUS_WAIT).await;
                        Err(self.start_error(format!(
                            "the MCP handshake failed ({error}); {}",
                            process.describe(exit.as_ref())
                        )))
                    }
                    Err(_) => Err(self.start_error(format!(
                        "no answer to `initialize` within {} s; {}",
                        handshake_limit.as_secs(),
                        process.describe(None)
                    ))),
                }
            }
            Transport::Http { url, headers } => {
                let transport = http::transport(url, headers).map_err(|e| self.start_error(e))?;
                let handshake =
                    tokio::time::timeout(handshake_limit, client_info().serve(transport)).await;
                match handshake {
                    Ok(Ok(service)) => Ok(Live {
                        service,
                        process: None,
                        tools: OnceCell::new(),
                        broken: false.into(),
                    }),
                    Ok(Err(error)) => {
                        let reason = match &error {
                            ClientInitializeError::TransportError { error, .. } => {
                                error_chain(&*error.error)
                            }
                            other => error_chain(other),
                        };
                        Err(self.start_error(format!("no MCP session with {url}: {reason}")))
                    }
                    Err(_) => Err(self.start_error(format!(
                        "no answer from {url} to `initialize` within {} s",
                        handshake_limit.as_secs()
                    ))),
                }
            }
        }
    }

    async fn list_tools_now(&self) -> Result<Vec<ListedTool>, McpError> {
        let live = self.live().await?;
        let tools = live
            .tools
            .get_or_try_init(|| async {
                match tokio::time::timeout(self.config.call_timeout, live.service.list_all_tools())
                    .await
                {
                    Ok(Ok(tools)) => Ok(tools.into_iter().map(output::listed_tool).collect()),
                    Ok(Err(error)) => Err(self.service_error(&live, error).await),
                    Err(_) => Err(self.timeout()),
                }
            })
            .await?;
        Ok(tools.clone())
    }

    async fn call_now(
        &self,
        tool: &str,
        arguments: Value,
        interrupt: &Interrupt,
    ) -> Result<CallOutput, McpError> {
        let arguments = match arguments {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => {
                return Err(McpError::Protocol {
                    server: self.config.name.clone(),
                    reason: format!("the arguments must be a JSON object, not {other}"),
                });
            }
        };
        let live = until_interrupted(self.live(), interrupt)
            .await
            .ok_or_else(|| self.cancelled())??;
        let mut params = CallToolRequestParams::new(tool.to_owned());
        params.arguments = arguments;
        // Dropping this future before it answers makes rmcp send
        // `notifications/cancelled` for the request (timeout and interrupt below).
        let call = live.service.call_tool(params);
        let bounded = tokio::time::timeout(self.config.call_timeout, call);
        match until_interrupted(bounded, interrupt).await {
            None => Err(self.cancelled()),
            Some(Err(_)) => Err(self.timeout()),
            Some(Ok(Ok(result))) => Ok(output::call_output(result, self.config.max_output_bytes)),
            Some(Ok(Err(error))) => Err(self.service_error(&live, error).await),
        }
    }

    async fn service_error(&self, live: &Live, error: ServiceError) -> McpError {
        let server = self.config.name.clone();
        match error {
            ServiceError::McpError(data) => McpError::Protocol {
                server,
                reason: format!("{} (error {})", data.message, data.code.0),
            },
            ServiceError::TransportSend(failure) => McpError::Crashed {
                server,
                reason: live.crash_reason(&error_chain(&*failure.error)).await,
            },
            ServiceError::TransportClosed => McpError::Crashed {
                server,
                reason: live.crash_reason("the connection closed").await,
            },
            ServiceError::Timeout { .. } => self.timeout(),
            ServiceError::Cancelled { .. } => self.cancelled(),
            other => McpError::Protocol {
                server,
                reason: other.to_string(),
            },
        }
    }

    fn start_error(&self, reason: String) -> McpError {
        McpError::Start {
            server: self.config.name.clone(),
            reason,
        }
    }

    fn timeout(&self) -> McpError {
        McpError::Timeout {
            server: self.config.name.clone(),
            secs: self.config.call_timeout.as_secs(),
        }
    }

    fn cancelled(&self) -> McpError {
        McpError::Cancelled {
            server: self.config.name.clone(),
        }
    }
}

impl Backend for Connection {
    fn server(&self) -> &str {
        &self.config.name
    }

    fn list_tools(&self) -> BoxFuture<'_, Result<Vec<ListedTool>, McpError>> {
        Box::pin(self.list_tools_now())
    }

    fn instructions(&self) -> Option<String> {
        self.instructions.lock().ok().and_then(|slot| slot.clone())
    }

    fn call<'a>(
        &'a self,
        tool: &'a str,
        arguments: Value,
        interrupt: &'a Interrupt,
    ) -> BoxFuture<'a, Result<CallOutput, McpError>> {
        Box::pin(self.call_now(tool, arguments, interrupt))
    }
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("server", &self.config.name)
            .field("transport", &self.config.transport.kind())
            .finish_non_exhaustive()
    }
}

/// Every configured server, a stdio server once per workspace it serves.
#[derive(Debug)]
pub struct McpClients {
    /// In config order.
    servers: Vec<Server>,
    /// What confines the stdio servers (`None`: only `confined = false` ones start).
    launcher: Option<Arc<Launcher>>,
    /// Set by [`McpClients::shutdown`]: a connection made later (a workspace first seen
    /// after it) is closed from the start, so nothing is started once they are shut down.
    closed: std::sync::atomic::AtomicBool,
}

/// One configured server and its connections.
#[derive(Debug)]
struct Server {
    config: ServerConfig,
    /// By workspace (`None`: no workspace; every HTTP server's only one), in the order
    /// they were made.
    connections: Mutex<Vec<(Option<PathBuf>, Arc<Connection>)>>,
}

impl McpClients {
    /// The configured servers without a sandbox launcher (a stdio server then starts only
    /// with `confined = false`); nothing is started yet.
    pub fn new(configs: Vec<ServerConfig>) -> Self {
        Self::build(configs, None)
    }

    /// The configured servers, the stdio ones started through `launcher`'s sandbox;
    /// nothing is started yet.
    pub fn with_launcher(configs: Vec<ServerConfig>, launcher: Launcher) -> Self {
        Self::build(configs, Some(Arc::new(launcher)))
    }

    fn build(configs: Vec<ServerConfig>, launcher: Option<Arc<Launcher>>) -> Self {
        Self {
            servers: configs
                .into_iter()
                .map(|config| Server {
                    config,
                    connections: Mutex::new(Vec::new()),
                })
                .collect(),
            launcher,
            closed: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The workspace a server serves when no task names one.
    fn default_workspace(&self) -> Option<PathBuf> {
        self.launcher
            .as_ref()
            .and_then(|launcher| launcher.default_workspace.clone())
    }

    /// The connection of `server` for `workspace` (made on first use; an HTTP server's
    /// one connection whatever the workspace).
    fn connection_in(&self, server: &Server, workspace: Option<&Path>) -> Arc<Connection> {
        let key = match server.config.transport {
            Transport::Stdio { .. } => workspace.map(Path::to_path_buf),
            Transport::Http { .. } => None,
        };
        let mut connections = server
            .connections
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, connection)) = connections.iter().find(|(made, _)| *made == key) {
            return Arc::clone(connection);
        }
        let mut connection =
            Connection::confined(server.config.clone(), self.launcher.clone(), key.clone());
        if self.closed.load(std::sync::atomic::Ordering::SeqCst) {
            connection.state.get_mut().phase = Phase::Closed;
        }
        let connection = Arc::new(connection);
        connections.push((key, Arc::clone(&connection)));
        connection
    }

    /// Each configured server with its backend for the default workspace, in config
    /// order (`mcp list`, `mcp check`, `GET /api/mcp/servers`).
    pub fn servers(&self) -> Vec<(ServerConfig, Arc<dyn Backend>)> {
        self.servers_for(self.default_workspace().as_deref())
    }

    /// Each configured server with its backend for `workspace` (a stdio server's own
    /// process for that workspace), in config order.
    pub fn servers_for(&self, workspace: Option<&Path>) -> Vec<(ServerConfig, Arc<dyn Backend>)> {
        self.servers
            .iter()
            .map(|server| {
                let backend: Arc<dyn Backend> = self.connection_in(server, workspace);
                (server.config.clone(), backend)
            })
            .collect()
    }

    /// The connection of the server called `name` for the default workspace.
    pub fn connection(&self, name: &str) -> Option<Arc<Connection>> {
        let workspace = self.default_workspace();
        self.servers
            .iter()
            .find(|server| server.config.name == name)
            .map(|server| self.connection_in(server, workspace.as_deref()))
    }

    /// Starts the `start = "startup"` servers for the default workspace (all at once);
    /// the errors of those that failed, in config order.
    pub async fn start_eager(&self) -> Vec<McpError> {
        let workspace = self.default_workspace();
        let mut starts = tokio::task::JoinSet::new();
        for (index, server) in self.servers.iter().enumerate() {
            if server.config.start == crate::config::Start::Startup {
                let connection = self.connection_in(server, workspace.as_deref());
                starts.spawn(async move { (index, connection.connect().await) });
            }
        }
        let mut errors: Vec<(usize, McpError)> = Vec::new();
        while let Some(joined) = starts.join_next().await {
            if let Ok((index, Err(error))) = joined {
                errors.push((index, error));
            }
        }
        errors.sort_by_key(|(index, _)| *index);
        errors.into_iter().map(|(_, error)| error).collect()
    }

    /// Ends every server process, of every workspace (all at once; see
    /// [`Connection::shutdown`]).
    pub async fn shutdown(&self) {
        self.closed.store(true, std::sync::atomic::Ordering::SeqCst);
        let mut stops = tokio::task::JoinSet::new();
        for server in &self.servers {
            let connections: Vec<Arc<Connection>> = server
                .connections
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .iter()
                .map(|(_, connection)| Arc::clone(connection))
                .collect();
            for connection in connections {
                stops.spawn(async move { connection.shutdown().await });
            }
        }
        while stops.join_next().await.is_some() {}
    }
}

/// Who we are in `initialize`.
fn client_info() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("pocketpilot", env!("CARGO_PKG_VERSION")),
    )
}

/// `error` and its sources in one line, each cause once (rmcp's wrappers repeat them).
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// The restart delay after `failures` failures in a row.
fn backoff(failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    BACKOFF_FIRST
        .saturating_mul(1 << doublings)
        .min(BACKOFF_MAX)
}

/// Runs `future` unless `interrupt` is triggered first (checked every
/// [`INTERRUPT_POLL`]); `None` when it was, and then `future` is dropped.
async fn until_interrupted<T>(future: impl Future<Output = T>, interrupt: &Interrupt) -> Option<T> {
    let watch = async {
        let mut ticks = tokio::time::interval(INTERRUPT_POLL);
        loop {
            ticks.tick().await;
            if interrupt.is_triggered() {
                return;
            }
        }
    };
    tokio::select! {
        output = future => Some(output),
        () = watch => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_doubles_from_250_ms_to_30_s() {
        let delays: Vec<u128> = (1..=10).map(|n| backoff(n).as_millis()).collect();
        assert_eq!(
            delays,
            [250, 500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]
        );
        assert_eq!(backoff(u32::MAX), BACKOFF_MAX);
    }
}
