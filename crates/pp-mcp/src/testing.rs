//! A small MCP client on the same SDK, for tests that drive `pocketpilot mcp serve` (or
//! any stdio server) as a real client would: it starts the server as a child process,
//! initializes with a name and version, lists tools, calls them (optionally with a
//! progress token) and collects the progress notifications it receives. It exposes
//! plain types only, so `pp-cli`'s tests use it without depending on `rmcp`.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation,
    ProgressNotificationParam, ProgressToken, RequestMetaObject,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::Value;

/// How to start the server.
#[derive(Debug, Clone, Default)]
pub struct Launch {
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Its environment is cleared, then these are set.
    pub env: Vec<(OsString, OsString)>,
    /// The client's name and version sent in `initialize`.
    pub client: (String, String),
}

/// A tool as listed, with its annotations.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedTool {
    /// Its name.
    pub name: String,
    /// Its input schema.
    pub input_schema: Value,
    /// `readOnlyHint`.
    pub read_only: Option<bool>,
    /// `destructiveHint`.
    pub destructive: Option<bool>,
}

/// What a call answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The text parts, joined.
    pub text: String,
    /// `isError`.
    pub is_error: bool,
}

#[derive(Clone)]
struct Collector {
    info: ClientConfig,
    progress: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for Collector {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if let Ok(mut progress) = self.progress.lock() {
            progress.push(params.message.unwrap_or_default());
        }
    }
}

/// A connected client.
pub struct TestClient {
    service: RunningService<RoleClient, Collector>,
    progress: Arc<Mutex<Vec<String>>>,
    next_token: std::sync::atomic::AtomicI64,
}

impl std::fmt::Debug for TestClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TestClient")
    }
}

impl TestClient {
    /// Starts the server and initializes.
    pub async fn start(launch: Launch) -> Result<Self, String> {
        let mut command = tokio::process::Command::new(&launch.program);
        command
            .args(&launch.args)
            .env_clear()
            .envs(launch.env.clone());
        let (transport, _) = TokioChildProcess::builder(command)
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .map_err(|error| format!("cannot start {}: {error}", launch.program.display()))?;
        let progress = Arc::new(Mutex::new(Vec::new()));
        let collector = Collector {
            info: ClientConfig::new(
                ClientCapabilities::default(),
                Implementation::new(launch.client.0, launch.client.1),
            ),
            progress: Arc::clone(&progress),
        };
        let service = collector
            .serve(transport)
            .await
            .map_err(|error| format!("initialize failed: {error}"))?;
        Ok(Self {
            service,
            progress,
            next_token: std::sync::atomic::AtomicI64::new(1),
        })
    }

    /// The server's name and version from `initialize`.
    pub fn server(&self) -> Option<(String, String)> {
        self.service
            .peer_info()
            .and_then(|info| info.server_info.clone())
            .map(|server| (server.name, server.version))
    }

    /// `tools/list`.
    pub async fn tools(&self) -> Result<Vec<ListedTool>, String> {
        let listed = self
            .service
            .list_all_tools()
            .await
            .map_err(|error| error.to_string())?;
        Ok(listed
            .into_iter()
            .map(|tool| ListedTool {
                name: tool.name.to_string(),
                input_schema: Value::Object((*tool.input_schema).clone()),
                read_only: tool.annotations.as_ref().and_then(|a| a.read_only_hint),
                destructive: tool.annotations.as_ref().and_then(|a| a.destructive_hint),
            })
            .collect())
    }

    /// `tools/call` with `arguments` (an object), with a progress token when `progress`.
    pub async fn call(
        &self,
        name: &str,
        arguments: Value,
        progress: bool,
    ) -> Result<Answer, String> {
        let Value::Object(arguments) = arguments else {
            return Err("the arguments must be an object".to_owned());
        };
        let mut params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
        if progress {
            let token = self
                .next_token
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut meta = RequestMetaObject::default();
            meta.set_progress_token(ProgressToken(rmcp::model::NumberOrString::Number(token)));
            params.meta = Some(meta);
        }
        let result = self
            .service
            .call_tool(params)
            .await
            .map_err(|error| error.to_string())?;
        let text = result
            .content
            .iter()
            .filter_map(|block| block.as_text().map(|text| text.text.clone()))
            .collect::<Vec<_>>()
            .join("\n");
        Ok(Answer {
            text,
            is_error: result.is_error.unwrap_or(false),
        })
    }

    /// The progress messages received so far.
    pub fn progress(&self) -> Vec<String> {
        self.progress
            .lock()
            .map(|progress| progress.clone())
            .unwrap_or_default()
    }

    /// Closes the connection (the server sees stdin close) and waits for the server to
    /// exit.
    pub async fn close(self) -> Result<(), String> {
        self.service
            .cancel()
            .await
            .map(|_| ())
            .map_err(|error| error.to_string())
    }
}
