//! PocketPilot's gate served to MCP clients: `pocketpilot mcp serve` speaks MCP on
//! stdin/stdout and offers the workspace tools under the same names and arguments as
//! the built-in tools. What runs behind it (the task service: jail, policy, durable
//! approvals) is a [`ServeBackend`] that `pp-cli` provides; this module knows only the
//! protocol.
//!
//! A call the backend has to wait for (a write waiting for a person's decision) reports
//! its wait through a progress callback; when the client sent a progress token, each
//! report becomes a `notifications/progress`.

use std::sync::Arc;

use pp_agent::BoxFuture;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeRequestParams, InitializeResult, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use tokio::sync::mpsc;

/// A tool offered to the client.
#[derive(Debug, Clone, PartialEq)]
pub struct ServedTool {
    /// The name, as the built-in tool is called.
    pub name: String,
    /// Its description.
    pub description: String,
    /// JSON Schema of its arguments object.
    pub input_schema: Value,
    /// The action of its capability (`read`, `write`, `update`, `create`, `delete`, ...);
    /// the annotations follow from it ([`annotations_for`]).
    pub action: Option<String>,
}

/// What one call answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedReply {
    /// The text shown to the client.
    pub text: String,
    /// Whether it is a tool error (`isError`).
    pub is_error: bool,
}

/// The client, as it named itself in `initialize`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientInfo {
    /// `clientInfo.name`.
    pub name: String,
    /// `clientInfo.version`.
    pub version: String,
}

/// What answers the client's requests: `pp-cli` implements it over the task service.
pub trait ServeBackend: Send + Sync + 'static {
    /// The client introduced itself (`initialize`).
    fn connected(&self, client: &ClientInfo);

    /// The tools to offer (`tools/list`); `Err` is the reason, for the client.
    fn tools(&self) -> BoxFuture<'_, Result<Vec<ServedTool>, String>>;

    /// Runs one `tools/call`; `progress` reports a wait (a message per call).
    fn call<'a>(
        &'a self,
        name: &'a str,
        arguments: Value,
        progress: &'a (dyn Fn(String) + Send + Sync),
    ) -> BoxFuture<'a, ServedReply>;

    /// The client is gone (stdin closed): end what runs for it.
    fn closed(&self) -> BoxFuture<'_, ()>;
}

/// Why serving failed.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The client never completed `initialize` (stdin closed, not MCP).
    #[error("the MCP client did not initialize: {0}")]
    Initialize(String),
    /// The service's task failed.
    #[error("the MCP service stopped: {0}")]
    Stopped(String),
}

/// The MCP annotations of a tool whose capability has `action`: `read` is read-only and
/// closed-world; `create` is additive; `write`, `update` and `delete` are destructive;
/// anything else keeps the specification's defaults (open world).
pub fn annotations_for(action: Option<&str>) -> rmcp::model::ToolAnnotations {
    let annotations = rmcp::model::ToolAnnotations::new();
    match action {
        Some("read") => annotations
            .read_only(true)
            .destructive(false)
            .idempotent(true)
            .open_world(false),
        Some("create") => annotations
            .read_only(false)
            .destructive(false)
            .open_world(false),
        Some("write" | "update" | "delete" | "move") => annotations
            .read_only(false)
            .destructive(true)
            .open_world(false),
        _ => annotations
            .read_only(false)
            .destructive(true)
            .open_world(true),
    }
}

/// Serves `backend` on stdin/stdout until the client closes stdin, then lets the backend
/// end its work ([`ServeBackend::closed`]).
///
/// When stdin and stdout are pipes (as MCP clients start servers) they are driven
/// without blocking threads, so the process can stop on a signal without waiting for a
/// read that never ends.
pub async fn serve_stdio(backend: Arc<dyn ServeBackend>) -> Result<(), ServeError> {
    serve_on(backend, rmcp::transport::stdio_pipes()).await
}

/// [`serve_stdio`] over any byte streams (tests).
pub async fn serve_on<R, W>(
    backend: Arc<dyn ServeBackend>,
    (reader, writer): (R, W),
) -> Result<(), ServeError>
where
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
    W: tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let handler = Handler {
        backend: Arc::clone(&backend),
    };
    let running = handler
        .serve((reader, writer))
        .await
        .map_err(|error| ServeError::Initialize(error.to_string()))?;
    let ended = running.waiting().await;
    backend.closed().await;
    ended
        .map(|_| ())
        .map_err(|error| ServeError::Stopped(error.to_string()))
}

struct Handler {
    backend: Arc<dyn ServeBackend>,
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "pocketpilot",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "PocketPilot's workspace tools behind its gate: reads run at once; a write \
                 waits for a person's approval and may answer `pending approval <id>`.",
            )
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        self.backend.connected(&ClientInfo {
            name: request.client_info.name.clone(),
            version: request.client_info.version.clone(),
        });
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self
            .backend
            .tools()
            .await
            .map_err(|reason| ErrorData::internal_error(reason, None))?;
        Ok(ListToolsResult::with_all_items(
            tools.into_iter().map(to_tool).collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = Value::Object(request.arguments.clone().unwrap_or_default());
        let token = context.meta.get_progress_token();
        let (sender, mut receiver) = mpsc::unbounded_channel::<String>();
        let progress = move |message: String| {
            let _ = sender.send(message);
        };
        let call = self.backend.call(&request.name, arguments, &progress);
        let peer = context.peer.clone();
        let forward = async move {
            let mut count = 0_u32;
            while let Some(message) = receiver.recv().await {
                if let Some(token) = &token {
                    count += 1;
                    let param = ProgressNotificationParam::new(token.clone(), f64::from(count))
                        .with_message(message);
                    let _ = peer.notify_progress(param).await;
                }
            }
            std::future::pending::<()>().await;
        };
        let reply = tokio::select! {
            reply = call => reply,
            () = forward => return Err(ErrorData::internal_error("progress stopped", None)),
            () = context.ct.cancelled() => ServedReply {
                text: "the client cancelled the call (an approval it waited for stays open)"
                    .to_owned(),
                is_error: true,
            },
        };
        let content = vec![ContentBlock::text(reply.text)];
        Ok(CallToolResponse::Complete(if reply.is_error {
            CallToolResult::error(content)
        } else {
            CallToolResult::success(content)
        }))
    }
}

fn to_tool(tool: ServedTool) -> Tool {
    let schema = match tool.input_schema {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    };
    let annotations = annotations_for(tool.action.as_deref());
    Tool::new(tool.name, tool.description, schema).with_annotations(annotations)
}

#[cfg(test)]
mod tests {
    use super::annotations_for;

    #[test]
    fn annotations_follow_the_capability_action() {
        let read = annotations_for(Some("read"));
        assert_eq!(
            (
                read.read_only_hint,
                read.destructive_hint,
                read.open_world_hint
            ),
            (Some(true), Some(false), Some(false))
        );
        let create = annotations_for(Some("create"));
        assert_eq!(
            (create.read_only_hint, create.destructive_hint),
            (Some(false), Some(false))
        );
        for action in ["write", "update", "delete"] {
            let annotations = annotations_for(Some(action));
            assert_eq!(
                (annotations.read_only_hint, annotations.destructive_hint),
                (Some(false), Some(true)),
                "{action}"
            );
        }
        let unknown = annotations_for(Some("execute"));
        assert_eq!(unknown.open_world_hint, Some(true));
    }
}
