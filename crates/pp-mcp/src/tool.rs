//! [`McpTool`]: one whitelisted MCP tool as an ordinary [`pp_agent::Tool`], so its calls
//! pass the same gate as a built-in tool's.
//!
//! - Its spec carries the model-facing name `<server>__<tool>`, the server's description
//!   (capped at [`MAX_DESCRIPTION_CHARS`] and marked as the server's untrusted text), the
//!   server's input schema, the capability `mcp:<server>:<tool>:<action>` and the
//!   configured path pointers with the workspace as their root: the gate checks every
//!   path argument through the workspace jail before the call is even considered.
//! - Arguments are validated against the FULL input schema ([`Tool::validate`], the
//!   `jsonschema` crate, compiled once per tool): the model's calls and a person's edited
//!   arguments alike.
//! - Before the call, each path argument is resolved through the segment's jail again
//!   and replaced by the absolute path inside the workspace it designates (the server
//!   needs no knowledge of our root); an escaping path is a denial and the server is
//!   never called.
//! - The call goes through [`Backend::call`] with the task's interrupt; a protocol
//!   failure or a result the server marked `isError` is a tool error the model reads.
//!
//! What the jail guards is what we pass the server; the server process itself is
//! confined by its own sandbox (`client/sandbox.rs`, `docs/mcp.md`), which the card
//! shows when it is wider than the default.

use std::path::PathBuf;
use std::sync::Arc;

use pp_agent::{BoxFuture, Tool, ToolContext};
use pp_gate::Jail;
use pp_types::{
    EffectPreview, McpCallPreview, McpSandbox, PathRoot, TargetState, ToolOutput, ToolSpec,
    WriteLabel, pointer_paths, pointer_property,
};
use serde_json::Value;

use crate::backend::Backend;
use crate::resolve::ResolvedTool;

/// The most characters of a server's tool description the model sees.
pub const MAX_DESCRIPTION_CHARS: usize = 1024;

/// The fingerprint of an MCP call without path arguments: PocketPilot cannot see the
/// server's state, so such an approved call is never stale.
const FINGERPRINT: &str = "mcp";

/// A whitelisted tool of one MCP server, bound to one segment's workspace jail.
pub struct McpTool {
    spec: ToolSpec,
    resolved: ResolvedTool,
    backend: Arc<dyn Backend>,
    jail: Arc<Jail>,
    /// The server's sandbox when wider than the default (every card shows it).
    sandbox: Option<McpSandbox>,
}

impl McpTool {
    /// The tool `resolved` on `backend`, its path arguments resolved through `jail`.
    pub fn new(resolved: ResolvedTool, backend: Arc<dyn Backend>, jail: Arc<Jail>) -> Self {
        let spec = ToolSpec {
            name: resolved.model_name.clone(),
            description: description(&resolved),
            parameters: resolved.listed.input_schema.clone(),
            capability: Some(resolved.capability.clone()),
            risk: resolved.risk,
            path_params: resolved.path_args.clone(),
            root: PathRoot::Workspace,
        };
        Self {
            spec,
            resolved,
            backend,
            jail,
            sandbox: None,
        }
    }

    /// The same tool whose cards show `sandbox` (the server's
    /// [`crate::ServerConfig::sandbox_card`]: set only when wider than the default).
    #[must_use]
    pub fn with_sandbox(mut self, sandbox: Option<McpSandbox>) -> Self {
        self.sandbox = sandbox;
        self
    }

    /// What this tool was resolved to (server, action, level).
    pub fn resolved(&self) -> &ResolvedTool {
        &self.resolved
    }
}

fn description(resolved: &ResolvedTool) -> String {
    let server = &resolved.server;
    let text = resolved
        .listed
        .description
        .as_deref()
        .map(str::trim)
        .unwrap_or_default();
    let mut capped: String = text.chars().take(MAX_DESCRIPTION_CHARS).collect();
    if text.chars().count() > MAX_DESCRIPTION_CHARS {
        capped.push('…');
    }
    if capped.is_empty() {
        format!("[tool `{}` of MCP server `{server}`]", resolved.listed.name)
    } else {
        format!(
            "[tool `{}` of MCP server `{server}`; its description, untrusted:] {capped}",
            resolved.listed.name
        )
    }
}

/// Runs `work` on the blocking pool (the jail touches the disk).
async fn off_thread<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ToolOutput> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|error| ToolOutput::error(format!("internal error: {error}")))
}

impl Tool for McpTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn validate(&self, arguments: &Value) -> Result<(), String> {
        match self.resolved.validator.iter_errors(arguments).next() {
            None => Ok(()),
            Some(error) => {
                let at = error.instance_path().to_string();
                Err(format!("arguments{at}: {error}"))
            }
        }
    }

    /// The server, tool and action, the first path argument resolved, and the files at
    /// every path argument fingerprinted through the jail; when the first one exists and
    /// the action is not a read, the card names it as the file the call may replace.
    /// Whether the call would fail or change nothing is never claimed: that is the
    /// server's to know.
    fn preview<'a>(
        &'a self,
        _context: &'a ToolContext,
        arguments: &'a Value,
    ) -> BoxFuture<'a, Option<EffectPreview>> {
        Box::pin(async move {
            let target = self.spec.first_path(arguments).map(str::to_owned);
            let jail = Arc::clone(&self.jail);
            let pointers = self.spec.path_params.clone();
            let owned = arguments.clone();
            let first = target.clone();
            let (resolved, exists, fingerprint) = off_thread(move || {
                let resolved = first.as_deref().and_then(|path| {
                    jail.check(path)
                        .ok()
                        .and_then(|relative| relative.to_str().map(str::to_owned))
                });
                let exists = first
                    .as_deref()
                    .is_some_and(|path| jail.exists(path).unwrap_or(false));
                (
                    resolved,
                    exists,
                    paths_fingerprint(&jail, &pointers, &owned),
                )
            })
            .await
            .ok()?;
            let reads = self.resolved.action == "read" || self.resolved.action == "list";
            Some(EffectPreview {
                target: target.unwrap_or_default(),
                replaces: (exists && !reads).then(|| resolved.clone()).flatten(),
                resolved,
                label: WriteLabel::Run,
                fingerprint,
                mcp: Some(McpCallPreview {
                    server: self.resolved.server.clone(),
                    tool: self.resolved.listed.name.clone(),
                    action: self.resolved.action.clone(),
                    sandbox: self.sandbox.clone(),
                }),
                ..EffectPreview::default()
            })
        })
    }

    /// The files at the call's path arguments, fingerprinted through the jail as the
    /// preview did (the fixed `mcp` without path arguments: PocketPilot cannot see the
    /// server's own state). The identity is the first path argument resolved (or the
    /// tool's name without one).
    fn target_state<'a>(
        &'a self,
        _context: &'a ToolContext,
        arguments: &'a Value,
    ) -> BoxFuture<'a, Option<TargetState>> {
        Box::pin(async move {
            let first = self.spec.first_path(arguments).map(str::to_owned);
            let name = self.spec.name.clone();
            let jail = Arc::clone(&self.jail);
            let pointers = self.spec.path_params.clone();
            let owned = arguments.clone();
            off_thread(move || {
                let identity = match first {
                    Some(path) => jail
                        .check(&path)
                        .ok()
                        .and_then(|relative| relative.to_str().map(str::to_owned))
                        .unwrap_or(path),
                    None => name,
                };
                TargetState {
                    identity,
                    fingerprint: paths_fingerprint(&jail, &pointers, &owned),
                }
            })
            .await
            .ok()
        })
    }

    fn execute<'a>(
        &'a self,
        context: &'a ToolContext,
        arguments: &'a Value,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let resolved = if self.spec.path_params.is_empty() {
                arguments.clone()
            } else {
                let jail = Arc::clone(&self.jail);
                let pointers = self.spec.path_params.clone();
                let arguments = arguments.clone();
                match off_thread(move || resolve_paths(&jail, &pointers, &arguments)).await {
                    Ok(Ok(resolved)) => resolved,
                    Ok(Err(refusal)) | Err(refusal) => return refusal,
                }
            };
            if context.should_stop() {
                return ToolOutput::error(format!(
                    "the call to MCP server `{}` was cancelled",
                    self.resolved.server
                ));
            }
            match self
                .backend
                .call(&self.resolved.listed.name, resolved, &context.interrupt)
                .await
            {
                Ok(output) if output.is_error => ToolOutput::error(format!(
                    "MCP server `{}` reported an error: {}",
                    self.resolved.server, output.text
                )),
                Ok(output) => ToolOutput::success(output.text),
                Err(error) => ToolOutput::error(error.to_string()),
            }
        })
    }
}

/// The fingerprint of the files at every path argument `pointers` designate in
/// `arguments`, through `jail` (`path: fingerprint`, joined by `; `), or the fixed `mcp`
/// when there are none. A path the jail refuses is fingerprinted by its refusal. Touches
/// the disk: call it off the async threads.
fn paths_fingerprint(jail: &Jail, pointers: &[String], arguments: &Value) -> String {
    let parts: Vec<String> = pointers
        .iter()
        .flat_map(|pointer| pointer_paths(pointer, arguments).unwrap_or_default())
        .map(|path| {
            let fingerprint = jail
                .fingerprint(path)
                .unwrap_or_else(|error| format!("unavailable: {error}"));
            format!("{path}: {fingerprint}")
        })
        .collect();
    if parts.is_empty() {
        FINGERPRINT.to_owned()
    } else {
        parts.join("; ")
    }
}

/// `arguments` with every path argument `pointers` designate replaced by the absolute
/// path inside `jail`'s workspace it resolves to; a refusal by the jail is a denial,
/// anything else an error. Touches the disk: call it off the async threads.
pub fn resolve_paths(
    jail: &Jail,
    pointers: &[String],
    arguments: &Value,
) -> Result<Value, ToolOutput> {
    let mut resolved = arguments.clone();
    for pointer in pointers {
        let paths = pointer_paths(pointer, arguments)
            .map_err(|error| ToolOutput::error(error.to_string()))?;
        if paths.is_empty() {
            continue;
        }
        let mut absolute = Vec::with_capacity(paths.len());
        for path in paths {
            absolute.push(Value::String(absolute_path(jail, path)?));
        }
        if let Some(slot) = resolved.get_mut(pointer_property(pointer)) {
            *slot = if pointer.ends_with("[]") {
                Value::Array(absolute)
            } else {
                absolute.into_iter().next().unwrap_or(Value::Null)
            };
        }
    }
    Ok(resolved)
}

fn absolute_path(jail: &Jail, path: &str) -> Result<String, ToolOutput> {
    let relative = jail.check(path).map_err(|error| match error.denial() {
        Some(denial) => ToolOutput::Denied(denial),
        None => ToolOutput::error(error.to_string()),
    })?;
    let absolute: PathBuf = jail.root().join(relative);
    absolute.to_str().map(str::to_owned).ok_or_else(|| {
        ToolOutput::error(format!(
            "the path {path:?} resolves to a name that is not UTF-8"
        ))
    })
}

#[cfg(test)]
#[path = "tool_tests.rs"]
mod tests;
