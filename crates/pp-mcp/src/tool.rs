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
//! What the jail guards is what we pass the server: the server process itself can still
//! touch anything its own user can (see `docs/mcp.md`).

use std::path::PathBuf;
use std::sync::Arc;

use pp_agent::{BoxFuture, Tool, ToolContext};
use pp_gate::Jail;
use pp_types::{
    EffectPreview, McpCallPreview, PathRoot, TargetState, ToolOutput, ToolSpec, WriteLabel,
    pointer_paths, pointer_property,
};
use serde_json::Value;

use crate::backend::Backend;
use crate::resolve::ResolvedTool;

/// The most characters of a server's tool description the model sees.
pub const MAX_DESCRIPTION_CHARS: usize = 1024;

/// The fingerprint of an MCP call's preview: PocketPilot cannot see the server's state,
/// so an approved call is never stale.
const FINGERPRINT: &str = "mcp";

/// A whitelisted tool of one MCP server, bound to one segment's workspace jail.
pub struct McpTool {
    spec: ToolSpec,
    resolved: ResolvedTool,
    backend: Arc<dyn Backend>,
    jail: Arc<Jail>,
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
        }
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

    fn preview<'a>(
        &'a self,
        _context: &'a ToolContext,
        arguments: &'a Value,
    ) -> BoxFuture<'a, Option<EffectPreview>> {
        Box::pin(async move {
            let target = self.spec.first_path(arguments).map(str::to_owned);
            let jail = Arc::clone(&self.jail);
            let resolved = match target.clone() {
                Some(path) => off_thread(move || {
                    jail.check(&path)
                        .ok()
                        .and_then(|relative| relative.to_str().map(str::to_owned))
                })
                .await
                .ok()
                .flatten(),
                None => None,
            };
            Some(EffectPreview {
                target: target.unwrap_or_default(),
                resolved,
                label: WriteLabel::Run,
                fingerprint: FINGERPRINT.to_owned(),
                mcp: Some(McpCallPreview {
                    server: self.resolved.server.clone(),
                    tool: self.resolved.listed.name.clone(),
                    action: self.resolved.action.clone(),
                }),
                ..EffectPreview::default()
            })
        })
    }

    /// Always the fixed fingerprint the preview showed: PocketPilot cannot see the
    /// server's state, so an approved MCP call is never stale. The identity is the first
    /// path argument resolved (or the tool's name without one).
    fn target_state<'a>(
        &'a self,
        _context: &'a ToolContext,
        arguments: &'a Value,
    ) -> BoxFuture<'a, Option<TargetState>> {
        Box::pin(async move {
            let identity = match self.spec.first_path(arguments).map(str::to_owned) {
                Some(path) => {
                    let jail = Arc::clone(&self.jail);
                    off_thread(move || {
                        jail.check(&path)
                            .ok()
                            .and_then(|relative| relative.to_str().map(str::to_owned))
                            .unwrap_or(path)
                    })
                    .await
                    .ok()?
                }
                None => self.spec.name.clone(),
            };
            Some(TargetState {
                identity,
                fingerprint: FINGERPRINT.to_owned(),
            })
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
