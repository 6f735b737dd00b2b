//! What every handler shares: the task service, the API token and the server settings.

use std::pin::Pin;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use pp_channels::ChannelsService;
use pp_chat::Sessions;
use pp_knowledge::{MemoryService, SkillsService};
use pp_schedules::Scheduler;
use pp_tasks::TaskService;
use pp_types::McpReport;
use pp_users::Users;
use serde_json::Value;
use tokio::sync::{Semaphore, watch};

use crate::feed::Feed;

/// Limits and knobs of the HTTP server.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerSettings {
    /// Largest JSON request body; bigger bodies get `413 payload_too_large`.
    pub max_body_bytes: usize,
    /// Largest operator upload (`PUT /api/files/content`); the body streams to disk, so
    /// this bounds the file, not memory.
    pub max_upload_bytes: usize,
    /// Most uploads running at once; one more gets `429 too_many_uploads`.
    pub max_concurrent_uploads: usize,
    /// Largest operator download (`GET /api/files/content`); bigger files get 413.
    pub max_download_bytes: u64,
    /// How long a console login session lasts.
    pub session_ttl: Duration,
    /// The port the server listens on, used only in messages (the login hint on the
    /// 401 page); `None` when unknown.
    pub port: Option<u16>,
    /// A script attached to every task created through `POST /api/tasks`
    /// (`pocketpilot serve --script FILE`); `None` runs tasks on the configured model.
    pub default_script: Option<Value>,
    /// How often event streams look for new events in the store. Polling (rather than
    /// an in-process signal) is what lets a stream notice events written by another
    /// process, such as `pocketpilot approvals approve` or `pocketpilot run`.
    pub sse_poll_interval: Duration,
    /// How often an idle event stream sends a keep-alive comment.
    pub sse_keep_alive: Duration,
    /// Host names accepted besides the loopback names (`[server] allowed_hosts`), e.g. a
    /// reverse proxy's name or this machine's LAN name: `name` accepts any port,
    /// `name:port` that port only. Every other Host is still refused (DNS rebinding).
    pub allowed_hosts: Vec<String>,
    /// Whether to believe `X-Forwarded-Proto: https` from a reverse proxy
    /// (`[server] trust_forwarded_proto`): then console cookies get `Secure` and a
    /// `https://` Origin is the same origin. Off by default: a client could send it.
    pub trust_forwarded_proto: bool,
    /// Team mode (`[team] enabled`, docs/team.md): requests authenticate as team users
    /// (their own tokens, or console logins made with them) and the role matrix applies;
    /// the single server token is refused, and console cookies are always `Secure` (the
    /// team server sits behind a TLS reverse proxy). Off: single-user mode, as before.
    pub team: bool,
    /// After the shutdown signal, how long in-flight requests (a `?wait=true` resolve)
    /// may take before [`crate::serve`] returns anyway. Event streams end at once.
    pub shutdown_grace: Duration,
    /// Most connections open at once (`[server] max_connections`); one more is answered
    /// `503` with `Retry-After: 1` and closed. Keep it below the open-file limit (the
    /// CLI raises its soft limit to the hard one at start) so that descriptors remain
    /// for the database, the log and children.
    pub max_connections: usize,
    /// How long a connection may take to send a request's headers, counted from the
    /// first byte it could send (a new connection, or the end of the previous response
    /// on a kept-alive one); then it is closed. Bounds what half-sent requests can hold.
    pub header_read_timeout: Duration,
    /// How long a request body may send nothing while a handler reads it; then the read
    /// fails and the connection closes. Restarts with every piece, so a large upload on
    /// a slow link passes as long as it keeps moving.
    pub body_idle_timeout: Duration,
}

impl Default for ServerSettings {
    fn default() -> Self {
        Self {
            max_body_bytes: 1024 * 1024,
            max_upload_bytes: 25 * 1024 * 1024,
            max_concurrent_uploads: 4,
            max_download_bytes: 25 * 1024 * 1024,
            session_ttl: Duration::from_secs(7 * 24 * 60 * 60),
            port: None,
            default_script: None,
            sse_poll_interval: Duration::from_millis(250),
            sse_keep_alive: Duration::from_secs(15),
            shutdown_grace: Duration::from_secs(10),
            max_connections: 4096,
            header_read_timeout: Duration::from_secs(10),
            body_idle_timeout: Duration::from_secs(30),
            allowed_hosts: Vec::new(),
            trust_forwarded_proto: false,
            team: false,
        }
    }
}

/// Receives one line per internal error or warning.
type ErrorLog = Arc<dyn Fn(&str) + Send + Sync>;

/// Produces the report of `GET /api/mcp/servers` (the CLI lists its MCP servers).
pub type McpReportSource =
    Arc<dyn Fn() -> Pin<Box<dyn Future<Output = McpReport> + Send>> + Send + Sync>;

/// The state behind the router. Cheap to clone: every clone shares one `Shared`.
#[derive(Clone)]
pub struct AppState {
    inner: Arc<Shared>,
}

/// Shared by every clone of [`AppState`].
struct Shared {
    /// Creates, resolves and cancels tasks; owns the store.
    service: TaskService,
    /// The team's users and the console's logins (who a token or a login cookie is).
    users: Users,
    /// The chat sessions (`/api/sessions`).
    sessions: Sessions,
    /// The API token. A lock (not a plain `String`) so the CLI can swap it at runtime
    /// after `pocketpilot token rotate` without restarting; read once per request.
    token: RwLock<String>,
    /// Limits and knobs.
    settings: ServerSettings,
    /// One permit per running upload ([`ServerSettings::max_concurrent_uploads`]); an
    /// upload holds its permit until its blocking write has ended.
    upload_slots: Arc<Semaphore>,
    /// Where details of internal errors and warnings go (the client only sees a generic
    /// message); `None` drops them. The CLI sets it to print on stderr.
    error_log: RwLock<Option<ErrorLog>>,
    /// The operator's skills service (`/api/skills`); `None` until the CLI sets it, and
    /// then those routes answer 404.
    skills: RwLock<Option<SkillsService>>,
    /// The operator's memory service (`/api/memory`); `None` until the CLI sets it, and
    /// then that route answers 404.
    memory: RwLock<Option<MemoryService>>,
    /// The webhook channels (`/api/channels`); `None` until the CLI sets it, and then
    /// those routes answer 404 (and deliveries the same 401 as any refusal).
    channels: RwLock<Option<ChannelsService>>,
    /// The schedules (`/api/schedules`); `None` until the CLI sets it, and then those
    /// routes answer 404.
    scheduler: RwLock<Option<Scheduler>>,
    /// The source of `/api/mcp/servers`; `None` until the CLI sets it, and then that
    /// route answers 404.
    mcp_report: RwLock<Option<McpReportSource>>,
    /// Flipped to `true` when shutdown begins, so event streams (which never end on
    /// their own) finish and graceful shutdown can complete.
    shutdown: watch::Sender<bool>,
    /// The one reader of every task's events that the event streams share.
    feed: Arc<Feed>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("settings", &self.inner.settings)
            .finish_non_exhaustive()
    }
}

impl AppState {
    /// State for a server over `service` that accepts `token` (the content of the
    /// `token` file, which the CLI owns) as `Authorization: Bearer` and at `/login`.
    pub fn new(
        service: TaskService,
        users: Users,
        sessions: Sessions,
        token: impl Into<String>,
        settings: ServerSettings,
    ) -> Self {
        let (shutdown, _) = watch::channel(false);
        Self {
            inner: Arc::new(Shared {
                service,
                users,
                sessions,
                token: RwLock::new(token.into()),
                upload_slots: Arc::new(Semaphore::new(settings.max_concurrent_uploads)),
                settings,
                error_log: RwLock::new(None),
                skills: RwLock::new(None),
                memory: RwLock::new(None),
                mcp_report: RwLock::new(None),
                channels: RwLock::new(None),
                scheduler: RwLock::new(None),
                shutdown,
                feed: Arc::default(),
            }),
        }
    }

    /// The task service.
    pub fn service(&self) -> &TaskService {
        &self.inner.service
    }

    /// The team's users and the console's logins.
    pub fn users(&self) -> &Users {
        &self.inner.users
    }

    /// The chat sessions.
    pub fn sessions(&self) -> &Sessions {
        &self.inner.sessions
    }

    /// The settings.
    pub fn settings(&self) -> &ServerSettings {
        &self.inner.settings
    }

    /// The permits of running uploads.
    pub(crate) fn upload_slots(&self) -> &Arc<Semaphore> {
        &self.inner.upload_slots
    }

    /// Serves `/api/skills` with `skills`.
    pub fn set_skills(&self, skills: SkillsService) {
        match self.inner.skills.write() {
            Ok(mut guard) => *guard = Some(skills),
            Err(poisoned) => *poisoned.into_inner() = Some(skills),
        }
    }

    /// The skills service, if one is set.
    pub(crate) fn skills(&self) -> Option<SkillsService> {
        match self.inner.skills.read() {
            Ok(guard) => guard.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Serves `/api/memory` with `memory`.
    pub fn set_memory(&self, memory: MemoryService) {
        match self.inner.memory.write() {
            Ok(mut guard) => *guard = Some(memory),
            Err(poisoned) => *poisoned.into_inner() = Some(memory),
        }
    }

    /// The memory service, if one is set.
    pub(crate) fn memory(&self) -> Option<MemoryService> {
        match self.inner.memory.read() {
            Ok(guard) => guard.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Serves `/api/channels` and webhook deliveries with `channels`.
    pub fn set_channels(&self, channels: ChannelsService) {
        match self.inner.channels.write() {
            Ok(mut guard) => *guard = Some(channels),
            Err(poisoned) => *poisoned.into_inner() = Some(channels),
        }
    }

    /// The channels service, if one is set.
    pub(crate) fn channels(&self) -> Option<ChannelsService> {
        match self.inner.channels.read() {
            Ok(guard) => guard.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Serves `/api/schedules` with `scheduler`.
    pub fn set_scheduler(&self, scheduler: Scheduler) {
        match self.inner.scheduler.write() {
            Ok(mut guard) => *guard = Some(scheduler),
            Err(poisoned) => *poisoned.into_inner() = Some(scheduler),
        }
    }

    /// The scheduler, if one is set.
    pub(crate) fn scheduler(&self) -> Option<Scheduler> {
        match self.inner.scheduler.read() {
            Ok(guard) => guard.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Serves `/api/mcp/servers` with what `source` reports.
    pub fn set_mcp_report(&self, source: McpReportSource) {
        match self.inner.mcp_report.write() {
            Ok(mut guard) => *guard = Some(source),
            Err(poisoned) => *poisoned.into_inner() = Some(source),
        }
    }

    /// The MCP report's source, if one is set.
    pub(crate) fn mcp_report(&self) -> Option<McpReportSource> {
        match self.inner.mcp_report.read() {
            Ok(guard) => guard.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Replaces the API token (after `pocketpilot token rotate` rewrote the token file).
    /// Requests with the old token are refused from now on; console sessions created
    /// with it stay valid until they expire or are deleted from the store.
    pub fn set_token(&self, token: impl Into<String>) {
        match self.inner.token.write() {
            Ok(mut guard) => *guard = token.into(),
            Err(poisoned) => *poisoned.into_inner() = token.into(),
        }
    }

    /// Whether `candidate` is the API token, compared in constant time.
    pub(crate) fn token_matches(&self, candidate: &str) -> bool {
        let token = match self.inner.token.read() {
            Ok(guard) => guard.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        };
        crate::secret::constant_time_eq(token.as_bytes(), candidate.as_bytes())
    }

    /// Sends the details of internal errors (`500 internal`, whose body is generic) and
    /// of warnings to `log`, one line each; e.g. `state.set_error_log(|line|
    /// eprintln!("{line}"))` in the CLI. Without it the details are dropped.
    pub fn set_error_log(&self, log: impl Fn(&str) + Send + Sync + 'static) {
        let log: ErrorLog = Arc::new(log);
        match self.inner.error_log.write() {
            Ok(mut guard) => *guard = Some(log),
            Err(poisoned) => *poisoned.into_inner() = Some(log),
        }
    }

    /// Writes `line` to the error log, if one is set.
    pub(crate) fn log(&self, line: &str) {
        let log = match self.inner.error_log.read() {
            Ok(guard) => guard.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        };
        if let Some(log) = log {
            log(line);
        }
    }

    /// Tells event streams to end; called by [`crate::serve`] when shutdown begins.
    pub fn begin_shutdown(&self) {
        self.inner.shutdown.send_replace(true);
    }

    /// The shared reader of every task's events.
    pub(crate) fn feed(&self) -> &Arc<Feed> {
        &self.inner.feed
    }

    /// A receiver that changes to `true` when shutdown begins.
    pub(crate) fn shutdown_signal(&self) -> watch::Receiver<bool> {
        self.inner.shutdown.subscribe()
    }
}
