//! Which of a server's tools the model is offered, under which name and capability
//! (SPEC §4.4): a pure function of the server's config and what it lists.
//!
//! The whitelist is `allow` (`"*"`: every listed tool) plus every tool with a
//! `[mcp.server.tools.<tool>]` entry; a listed tool outside it is never offered. A
//! whitelisted tool's action comes from, in priority order:
//!
//! | level | source | when |
//! |---|---|---|
//! | P0 | `tools.<tool>.action` | set |
//! | P1 | the server's `default_action` | set |
//! | P2 | the tool's annotations | `trust_annotations = true` |
//! | P3 | nothing usable | the tool is **not registered**, with a warning |
//!
//! At P2 absent hints take the MCP specification's defaults (`readOnlyHint` false,
//! `destructiveHint` true, `openWorldHint` true) and are read in this order:
//! `readOnlyHint && !openWorldHint` → `read`; `openWorldHint` → `network`;
//! `destructiveHint` → `delete`; otherwise `execute`.
//!
//! The capability is `mcp:<server>:<tool>:<action>`, the risk low for `read`/`list` and
//! high otherwise, and the model-facing name `<server>__<tool>` cleaned to
//! `^[A-Za-z0-9_-]{1,64}$` (other characters become `_`, the rest is cut); a tool whose
//! cleaned name clashes with an earlier one's is not registered.

use std::collections::BTreeMap;
use std::sync::Arc;

use pp_types::{Capability, Risk, pointer_property};
use serde_json::Value;

use crate::backend::{ListedTool, ToolAnnotations};
use crate::config::ServerConfig;

/// The action words the policy classifies (`read`/`list` run at once, the others ask).
pub const ACTIONS: [&str; 8] = [
    "read", "list", "write", "create", "update", "delete", "execute", "network",
];

/// The longest model-facing tool name (the providers' limit).
pub const MAX_MODEL_NAME: usize = 64;

/// The priority level that decided a tool's action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// The tool's explicit `action`.
    P0,
    /// The server's `default_action`.
    P1,
    /// The tool's annotations (`trust_annotations = true`).
    P2,
}

impl Level {
    /// `P0`, `P1` or `P2`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::P0 => "P0",
            Self::P1 => "P1",
            Self::P2 => "P2",
        }
    }
}

/// A tool the model is offered.
#[derive(Clone)]
pub struct ResolvedTool {
    /// The server's name.
    pub server: String,
    /// The tool as the server listed it.
    pub listed: ListedTool,
    /// `<server>__<tool>`, cleaned.
    pub model_name: String,
    /// The resolved action word (one of [`ACTIONS`]).
    pub action: String,
    /// `mcp:<server>:<tool>:<action>`.
    pub capability: Capability,
    /// Low for `read`/`list`, high otherwise.
    pub risk: Risk,
    /// Which level decided the action.
    pub decided_by: Level,
    /// The configured path pointers (`path`, `paths[]`), each naming a property of the
    /// input schema.
    pub path_args: Vec<String>,
    /// The input schema, compiled once (full JSON Schema; `$ref`s resolved within the
    /// schema only).
    pub validator: Arc<jsonschema::Validator>,
}

impl std::fmt::Debug for ResolvedTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResolvedTool")
            .field("model_name", &self.model_name)
            .field("capability", &self.capability)
            .field("decided_by", &self.decided_by)
            .field("path_args", &self.path_args)
            .finish_non_exhaustive()
    }
}

/// A listed tool the model is not offered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unregistered {
    /// The tool's name on the server.
    pub name: String,
    /// Why.
    pub reason: String,
}

/// What [`resolve`] decided for one server.
#[derive(Debug, Clone, Default)]
pub struct Resolution {
    /// The tools offered, in the server's order.
    pub tools: Vec<ResolvedTool>,
    /// The listed tools not offered, in the server's order.
    pub unregistered: Vec<Unregistered>,
    /// What the operator should fix: P3 tools, name clashes, bad schemas or path
    /// arguments, configured tools the server does not list. (Tools left out only
    /// because they are not whitelisted are not warned about.)
    pub warnings: Vec<String>,
}

/// The reason given for a listed tool outside the whitelist.
pub const NOT_WHITELISTED: &str = "not in the whitelist (`allow` or `[mcp.server.tools.<tool>]`)";

/// Decides which of `listed` the model is offered for `config`. See the module docs.
pub fn resolve(config: &ServerConfig, listed: &[ListedTool]) -> Resolution {
    let mut resolution = Resolution::default();
    let allow_all = config.allow.iter().any(|name| name == "*");
    let mut taken: BTreeMap<String, String> = BTreeMap::new();
    for tool in listed {
        let whitelisted = allow_all
            || config.allow.iter().any(|name| name == &tool.name)
            || config.tools.contains_key(&tool.name);
        if !whitelisted {
            resolution.unregistered.push(Unregistered {
                name: tool.name.clone(),
                reason: NOT_WHITELISTED.to_owned(),
            });
            continue;
        }
        match resolve_one(config, tool, &taken) {
            Ok(resolved) => {
                taken.insert(resolved.model_name.clone(), tool.name.clone());
                resolution.tools.push(resolved);
            }
            Err(reason) => {
                resolution.warnings.push(format!(
                    "MCP server `{}`: tool `{}` is not registered: {reason}",
                    config.name, tool.name
                ));
                resolution.unregistered.push(Unregistered {
                    name: tool.name.clone(),
                    reason,
                });
            }
        }
    }
    for configured in config.tools.keys() {
        if !listed.iter().any(|tool| &tool.name == configured) {
            resolution.warnings.push(format!(
                "MCP server `{}`: `[mcp.server.tools.{configured}]` is configured but the \
                 server does not list a tool `{configured}`",
                config.name
            ));
        }
    }
    for named in &config.allow {
        if named != "*"
            && !config.tools.contains_key(named)
            && !listed.iter().any(|tool| &tool.name == named)
        {
            resolution.warnings.push(format!(
                "MCP server `{}`: `allow` names `{named}` but the server does not list it",
                config.name
            ));
        }
    }
    resolution
}

fn resolve_one(
    config: &ServerConfig,
    tool: &ListedTool,
    taken: &BTreeMap<String, String>,
) -> Result<ResolvedTool, String> {
    let tool_config = config.tools.get(&tool.name);
    let (action, decided_by) = decide_action(config, tool)?;
    if !ACTIONS.contains(&action.as_str()) {
        return Err(format!(
            "its action `{action}` ({}) is not one of {}",
            decided_by.as_str(),
            ACTIONS.join(", ")
        ));
    }
    let model_name = model_name(&config.name, &tool.name);
    if let Some(earlier) = taken.get(&model_name) {
        return Err(format!(
            "its model name `{model_name}` clashes with tool `{earlier}`'s"
        ));
    }
    let path_args = tool_config.map(|t| t.path_args.clone()).unwrap_or_default();
    for pointer in &path_args {
        check_path_arg(&tool.input_schema, pointer)?;
    }
    let validator = compile(&tool.input_schema)?;
    Ok(ResolvedTool {
        server: config.name.clone(),
        listed: tool.clone(),
        model_name,
        capability: Capability::new(format!("mcp:{}:{}:{action}", config.name, tool.name)),
        risk: risk_of(&action),
        action,
        decided_by,
        path_args,
        validator: Arc::new(validator),
    })
}

/// P0 → P1 → P2, or the P3 reason.
fn decide_action(config: &ServerConfig, tool: &ListedTool) -> Result<(String, Level), String> {
    if let Some(action) = config
        .tools
        .get(&tool.name)
        .and_then(|tool| tool.action.as_deref())
    {
        return Ok((action.to_owned(), Level::P0));
    }
    if let Some(action) = config.default_action.as_deref() {
        return Ok((action.to_owned(), Level::P1));
    }
    if config.trust_annotations {
        return Ok((
            annotation_action(tool.annotations.unwrap_or_default()).to_owned(),
            Level::P2,
        ));
    }
    Err(
        "P3: no usable action (no `action` for the tool, no `default_action` for the \
         server, and `trust_annotations` is off)"
            .to_owned(),
    )
}

/// The P2 action of `annotations`, absent hints taking the MCP specification's defaults.
pub fn annotation_action(annotations: ToolAnnotations) -> &'static str {
    let read_only = annotations.read_only.unwrap_or(false);
    let destructive = annotations.destructive.unwrap_or(true);
    let open_world = annotations.open_world.unwrap_or(true);
    if read_only && !open_world {
        "read"
    } else if open_world {
        "network"
    } else if destructive {
        "delete"
    } else {
        "execute"
    }
}

/// Low for `read` and `list`, high for every other action.
pub fn risk_of(action: &str) -> Risk {
    if matches!(action, "read" | "list") {
        Risk::Low
    } else {
        Risk::High
    }
}

/// `<server>__<tool>` with every character outside `[A-Za-z0-9_-]` replaced by `_`, cut
/// to [`MAX_MODEL_NAME`] characters.
pub fn model_name(server: &str, tool: &str) -> String {
    let name: String = format!("{server}__{tool}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(MAX_MODEL_NAME)
        .collect();
    name
}

/// A path pointer must name a property of the input schema: a string for `path`, an
/// array for `paths[]` (when the schema says which).
fn check_path_arg(schema: &Value, pointer: &str) -> Result<(), String> {
    let property = pointer_property(pointer);
    let Some(declared) = schema
        .get("properties")
        .and_then(Value::as_object)
        .and_then(|properties| properties.get(property))
    else {
        return Err(format!(
            "path_args names `{pointer}` but its input schema has no property `{property}`"
        ));
    };
    let expected = if pointer.ends_with("[]") {
        "array"
    } else {
        "string"
    };
    let types: Vec<&str> = match declared.get("type") {
        Some(Value::String(name)) => vec![name.as_str()],
        Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
        _ => return Ok(()),
    };
    if types.contains(&expected) {
        Ok(())
    } else {
        Err(format!(
            "path_args names `{pointer}` but its property `{property}` is {}, not {expected}",
            types.join(" or ")
        ))
    }
}

/// Compiles an input schema: formats validated, `$ref`s resolved inside the schema only
/// (nothing is fetched: no network, no files).
pub fn compile(schema: &Value) -> Result<jsonschema::Validator, String> {
    jsonschema::options()
        .should_validate_formats(true)
        .with_retriever(NoRetrieval)
        .build(schema)
        .map_err(|error| format!("its input schema cannot be used: {error}"))
}

/// Refuses every external `$ref`.
struct NoRetrieval;

impl jsonschema::Retrieve for NoRetrieval {
    fn retrieve(
        &self,
        uri: &jsonschema::Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        Err(format!("external schema references are not fetched ({uri})").into())
    }
}

#[cfg(test)]
#[path = "resolve_tests.rs"]
mod tests;
