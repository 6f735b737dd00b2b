//! `pocketpilot mcp serve --workspace DIR`: PocketPilot's gate served to an MCP client
//! on stdin/stdout. The client's calls run as tasks created by `mcp_client`, through the
//! same jail, policy and durable approvals as any task; nothing but MCP frames is
//! written to stdout.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use pp_agent::BoxFuture;
use pp_mcp::server::{ClientInfo, ServeBackend, ServedReply, ServedTool};
use pp_tasks::{ClientLink, ClientSession, ClientSettings, ModelSource, TaskShare, Waiting};
use serde_json::Value;

use crate::Exit;
use crate::app::App;
use crate::config::{Config, Flags};
use crate::output::errln;

/// Serves the workspace `workspace` until the client closes stdin.
pub(crate) async fn run(
    flags: &Flags,
    workspace: PathBuf,
    wait_limit: Option<u64>,
) -> anyhow::Result<u8> {
    if wait_limit == Some(0) {
        return Err(Exit::usage("--wait-limit must be at least 1 second").into());
    }
    let flags = Flags {
        workspace: Some(workspace),
        ..flags.clone()
    };
    let config = Config::load(&flags)?;
    let wait_limit = wait_limit.map_or(config.mcp.approval_wait, Duration::from_secs);
    let link = Arc::new(ClientLink::new(TaskShare::of(&config.tasks)));
    let app = App::with_config(
        config,
        ModelSource::Driven(Arc::clone(&link) as Arc<dyn pp_agent::Model>),
        Some(Arc::clone(&link) as Arc<dyn pp_agent::EventSink>),
    )
    .await?;
    let settings = ClientSettings {
        wait_limit,
        ..ClientSettings::default()
    };
    let session = ClientSession::new(app.service.clone(), link, settings);
    let backend = Arc::new(Backend { session });
    errln!(
        "pocketpilot mcp serve: serving workspace {} on stdin/stdout (approval wait {} s)",
        app.service
            .workspaces()
            .find(None)
            .map(|workspace| workspace.path.display().to_string())
            .unwrap_or_default(),
        wait_limit.as_secs()
    );
    tokio::select! {
        served = pp_mcp::server::serve_stdio(Arc::clone(&backend) as Arc<dyn ServeBackend>) => served?,
        // Killed by the client or the person: end the running task cleanly too (pending
        // approvals stay pending).
        () = super::serve::shutdown_signal() => backend.closed().await,
    }
    Ok(0)
}

/// The task service's client session behind the MCP server.
struct Backend {
    session: ClientSession,
}

impl ServeBackend for Backend {
    fn connected(&self, client: &ClientInfo) {
        self.session.set_client(&client.name, &client.version);
    }

    fn tools(&self) -> BoxFuture<'_, Result<Vec<ServedTool>, String>> {
        Box::pin(async move {
            let specs = self
                .session
                .tools()
                .await
                .map_err(|error| error.to_string())?;
            Ok(specs
                .into_iter()
                .map(|spec| ServedTool {
                    action: spec
                        .capability
                        .as_ref()
                        .and_then(|capability| capability.action())
                        .map(str::to_owned),
                    name: spec.name,
                    description: spec.description,
                    input_schema: spec.parameters,
                })
                .collect())
        })
    }

    fn call<'a>(
        &'a self,
        name: &'a str,
        arguments: Value,
        progress: &'a (dyn Fn(String) + Send + Sync),
    ) -> BoxFuture<'a, ServedReply> {
        Box::pin(async move {
            let waiting = |waiting: &Waiting| {
                progress(format!(
                    "waiting for approval {} ({} s of {} s; `pocketpilot approvals approve {}` \
                     or the console)",
                    waiting.approval,
                    waiting.waited.as_secs(),
                    waiting.limit.as_secs(),
                    waiting.approval
                ));
            };
            let reply = self.session.call(name, arguments, &waiting).await;
            ServedReply {
                text: reply.text,
                is_error: reply.is_error,
            }
        })
    }

    fn closed(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.session.close())
    }
}
