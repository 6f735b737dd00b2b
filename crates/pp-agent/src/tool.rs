//! The tool interface and the registry the loop looks tools up in.

use std::collections::BTreeMap;
use std::sync::Arc;

use pp_types::{EffectPreview, Snapshot, TargetState, ToolOutput, ToolSpec, pointer_property};
use serde_json::Value;

use crate::ToolContext;
use crate::model::{BoxFuture, ToolDefinition};
use crate::schema;

/// A tool the model can call.
///
/// Tools receive arguments that already passed their schema and the policy. A tool that
/// touches files does so only through the workspace jail it was built with. Blocking work
/// (file IO, hashing, diffing, parsing) never runs on the async threads: tools hand it to
/// a blocking thread and check [`ToolContext::should_stop`] before anything irreversible.
pub trait Tool: Send + Sync {
    /// The tool's specification.
    fn spec(&self) -> &ToolSpec;

    /// Describes the effect of a call for an approval card (target, create/overwrite,
    /// diff, fingerprint). Reads only; `None` for tools without a file effect.
    fn preview<'a>(
        &'a self,
        _context: &'a ToolContext,
        _arguments: &'a Value,
    ) -> BoxFuture<'a, Option<EffectPreview>> {
        Box::pin(async { None })
    }

    /// The call's target as the model wrote it, for the audit ledger and the approval
    /// record: by default the first path its spec's pointers designate.
    fn target(&self, arguments: &Value) -> Option<String> {
        self.spec().first_path(arguments).map(str::to_owned)
    }

    /// The target's state now — what it resolves to and its fingerprint, in the format
    /// of this tool's [`Tool::preview`] — for the stale check before an approved call
    /// runs. `None` (the default) for tools whose effect has no target that could change
    /// under the person's feet; such approvals are never stale.
    fn target_state<'a>(
        &'a self,
        _context: &'a ToolContext,
        _arguments: &'a Value,
    ) -> BoxFuture<'a, Option<TargetState>> {
        Box::pin(async { None })
    }

    /// What the files the call would change hold now, one [`Snapshot`] per file (a move
    /// would report two), read through the tool's jail: the content when it is at most
    /// `keep_up_to` bytes, otherwise only its size. The service calls it with the
    /// `[revert] max_bytes` limit right before an approved call runs (so a revert can
    /// restore what the call replaced), and with 0 when the approval is requested (to
    /// tell the person beforehand whether the change can be undone). Paths are relative
    /// to the snapshot's root (the workspace, or the memory file's directory). Empty (the
    /// default) for tools without a file effect: their approved calls are logged as
    /// "effects unknown".
    fn snapshot<'a>(
        &'a self,
        _context: &'a ToolContext,
        _arguments: &'a Value,
        _keep_up_to: u64,
    ) -> BoxFuture<'a, Vec<Snapshot>> {
        Box::pin(async { Vec::new() })
    }

    /// Checks `arguments` against the tool's input schema before the policy sees them,
    /// for the model's calls and for a person's edited arguments alike; the error names
    /// the offending field. By default the hand-written subset validator
    /// ([`crate::schema::validate`]) over [`ToolSpec::parameters`]; tools whose schemas use
    /// the full JSON Schema vocabulary (MCP tools) validate fully instead.
    fn validate(&self, arguments: &Value) -> Result<(), String> {
        schema::validate(&self.spec().parameters, arguments)
    }

    /// Runs the call.
    fn execute<'a>(
        &'a self,
        context: &'a ToolContext,
        arguments: &'a Value,
    ) -> BoxFuture<'a, ToolOutput>;
}

/// Why a tool could not be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// Tools must declare a capability; the engine would deny them anyway.
    #[error("tool `{name}` declares no capability and is not registered")]
    MissingCapability {
        /// The tool's name.
        name: String,
    },
    /// Names must be unique.
    #[error("a tool named `{name}` is already registered")]
    Duplicate {
        /// The tool's name.
        name: String,
    },
    /// A path pointer must name a declared property of the schema.
    #[error("tool `{name}` declares path parameter `{param}` that its schema does not have")]
    UnknownPathParam {
        /// The tool's name.
        name: String,
        /// The parameter.
        param: String,
    },
}

/// The tools one run may call, by name.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Arc<dyn Tool>>,
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool; refuses tools without a capability, duplicates and path parameters
    /// missing from the schema.
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Result<(), RegistryError> {
        let spec = tool.spec();
        if spec.capability.is_none() {
            return Err(RegistryError::MissingCapability {
                name: spec.name.clone(),
            });
        }
        self.insert(tool)
    }

    /// Adds a tool even if it declares no capability: the test-only door.
    ///
    /// Only evals and tests that check the policy engine denies such tools by itself call
    /// this; production tools arrive through `pp_tools::Toolbox`, which refuses them.
    pub fn register_unclassified_for_evals(
        &mut self,
        tool: Arc<dyn Tool>,
    ) -> Result<(), RegistryError> {
        self.insert(tool)
    }

    fn insert(&mut self, tool: Arc<dyn Tool>) -> Result<(), RegistryError> {
        let spec = tool.spec();
        if self.tools.contains_key(&spec.name) {
            return Err(RegistryError::Duplicate {
                name: spec.name.clone(),
            });
        }
        for param in &spec.path_params {
            if !schema::has_property(&spec.parameters, pointer_property(param)) {
                return Err(RegistryError::UnknownPathParam {
                    name: spec.name.clone(),
                    param: param.clone(),
                });
            }
        }
        self.tools.insert(spec.name.clone(), tool);
        Ok(())
    }

    /// Looks a tool up by name.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name)
    }

    /// Every tool's spec, sorted by name.
    pub fn specs(&self) -> impl Iterator<Item = &ToolSpec> {
        self.tools.values().map(|tool| tool.spec())
    }

    /// The definitions offered to the model.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.specs()
            .map(|spec| ToolDefinition {
                name: spec.name.clone(),
                description: spec.description.clone(),
                parameters: spec.parameters.clone(),
            })
            .collect()
    }

    /// How many tools are registered.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}
