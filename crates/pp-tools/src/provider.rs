//! The tool seam: providers offer tools, a [`Toolbox`] of providers equips each run
//! segment with fresh tools, a fresh gate and the prompt sections they contribute.
//!
//! A provider is built once, when the task service is (files, memory, skills; documents
//! and MCP later). It may keep long-lived resources (an MCP connection) across segments;
//! it never keeps a jail or a policy: [`Toolbox::equip`] hands it the segment's fresh
//! workspace jail, and the gate it returns is built here, for this segment only.

use std::sync::Arc;

use pp_agent::{PromptContext, RegistryError, Tool, ToolRegistry};
use pp_gate::{Gate, Jail, evaluate_capability};
use pp_types::Decision;

use crate::Limits;

/// What a provider is given for one segment.
pub struct Scope<'a> {
    /// The segment's fresh workspace jail; file tools bind to it.
    pub workspace: &'a Arc<Jail>,
    /// What one call of a built-in tool may read or return.
    pub limits: Limits,
}

/// What providers put together for one segment: tools, scoped roots, prompt sections.
#[derive(Default)]
pub struct Provision {
    tools: Vec<Arc<dyn Tool>>,
    roots: Vec<(String, Arc<Jail>)>,
    prompt: PromptContext,
}

impl Provision {
    /// Offers `tool` to the model (refused at [`Toolbox::equip`] if its capability
    /// cannot be classified).
    pub fn tool(&mut self, tool: Arc<dyn Tool>) {
        self.tools.push(tool);
    }

    /// Registers a scoped root under `key` ([`pp_types::PathRoot::key`]): the gate checks
    /// the paths of tools with that root against `jail`.
    pub fn root(&mut self, key: String, jail: Arc<Jail>) {
        self.roots.push((key, jail));
    }

    /// The system prompt's sections from outside the loop (skills, memory, MCP servers'
    /// instructions).
    pub fn prompt(&mut self) -> &mut PromptContext {
        &mut self.prompt
    }
}

/// A source of tools. See the module docs.
pub trait ToolProvider: Send + Sync {
    /// A short name for errors and logs (`files`, `memory`, `skills`).
    fn name(&self) -> &str;

    /// Adds this segment's tools, roots and prompt sections to `provision`. Called off
    /// the async threads (it may touch the disk: skills are read here).
    fn provide(&self, scope: &Scope<'_>, provision: &mut Provision) -> Result<(), ProviderError>;
}

/// Why a provider could not equip a segment.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ProviderError(pub String);

/// Why a segment could not be equipped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolboxError {
    /// A provider failed.
    #[error("tool provider `{provider}` failed: {source}")]
    Provider {
        /// The provider's name.
        provider: String,
        /// What went wrong.
        source: ProviderError,
    },
    /// A provider offered a tool the policy cannot classify (no capability, or an
    /// unknown action word); only evals may offer those.
    #[error(
        "tool provider `{provider}` offered `{tool}`, whose capability the policy cannot \
         classify: {reason}"
    )]
    Unclassified {
        /// The provider's name.
        provider: String,
        /// The tool's name.
        tool: String,
        /// The policy's reason.
        reason: String,
    },
    /// Duplicate names, path pointers missing from the schema.
    #[error("tool provider `{provider}`: {source}")]
    Registry {
        /// The provider's name.
        provider: String,
        /// The registry's refusal.
        source: RegistryError,
    },
}

/// Everything one run segment gets from the toolbox.
pub struct Equipment {
    /// The tools offered to the model.
    pub registry: ToolRegistry,
    /// The fresh gate: the workspace jail plus every scoped root.
    pub gate: Gate,
    /// Prompt sections (skills, memory).
    pub prompt: PromptContext,
}

/// The providers a task service equips its segments from, in order.
#[derive(Clone, Default)]
pub struct Toolbox {
    providers: Vec<Arc<dyn ToolProvider>>,
    unclassified: Vec<Arc<dyn Tool>>,
}

impl Toolbox {
    /// A toolbox with no providers.
    pub fn new() -> Self {
        Self::default()
    }

    /// A toolbox with the file tools.
    pub fn files() -> Self {
        Self::new().with(Arc::new(crate::FilesProvider))
    }

    /// Adds a provider.
    #[must_use]
    pub fn with(mut self, provider: Arc<dyn ToolProvider>) -> Self {
        self.providers.push(provider);
        self
    }

    /// The test-only door: tools registered without the classification check, so evals
    /// can show that the policy engine denies them by itself. Nothing in production
    /// calls this.
    #[must_use]
    pub fn with_unclassified_for_evals(mut self, tools: Vec<Arc<dyn Tool>>) -> Self {
        self.unclassified.extend(tools);
        self
    }

    /// The providers' names, in order.
    pub fn provider_names(&self) -> Vec<&str> {
        self.providers
            .iter()
            .map(|provider| provider.name())
            .collect()
    }

    /// Equips one segment on the fresh `workspace` jail. Touches the disk: call it off
    /// the async threads.
    pub fn equip(&self, workspace: &Arc<Jail>, limits: Limits) -> Result<Equipment, ToolboxError> {
        let mut registry = ToolRegistry::new();
        let mut gate = Gate::new(Arc::clone(workspace));
        let mut prompt = PromptContext::default();
        let scope = Scope { workspace, limits };
        for provider in &self.providers {
            let name = provider.name().to_owned();
            let mut provision = Provision::default();
            provider
                .provide(&scope, &mut provision)
                .map_err(|source| ToolboxError::Provider {
                    provider: name.clone(),
                    source,
                })?;
            for tool in provision.tools {
                if let Decision::Deny(denial) = evaluate_capability(tool.spec().capability.as_ref())
                {
                    return Err(ToolboxError::Unclassified {
                        provider: name,
                        tool: tool.spec().name.clone(),
                        reason: denial.message,
                    });
                }
                registry
                    .register(tool)
                    .map_err(|source| ToolboxError::Registry {
                        provider: name.clone(),
                        source,
                    })?;
            }
            for (key, jail) in provision.roots {
                gate.add_root(key, jail);
            }
            merge_prompt(&mut prompt, provision.prompt);
        }
        for tool in &self.unclassified {
            registry
                .register_unclassified_for_evals(Arc::clone(tool))
                .map_err(|source| ToolboxError::Registry {
                    provider: "evals".to_owned(),
                    source,
                })?;
        }
        Ok(Equipment {
            registry,
            gate,
            prompt,
        })
    }
}

fn merge_prompt(into: &mut PromptContext, from: PromptContext) {
    into.skills.extend(from.skills);
    into.mcp_instructions.extend(from.mcp_instructions);
    if from.memory.is_some() {
        into.memory = from.memory;
    }
    if from.summary.is_some() {
        into.summary = from.summary;
    }
}

/// The built-in file tools (`list_files`, `read_file`, `write_file`, `edit_file`,
/// `move_file`, `delete_file`, `make_dir`) and `search_files`, bound to each segment's
/// workspace jail.
#[derive(Debug, Clone, Copy, Default)]
pub struct FilesProvider;

impl ToolProvider for FilesProvider {
    fn name(&self) -> &str {
        "files"
    }

    fn provide(&self, scope: &Scope<'_>, provision: &mut Provision) -> Result<(), ProviderError> {
        for tool in crate::file_tools_with(Arc::clone(scope.workspace), scope.limits) {
            provision.tool(tool);
        }
        // Content search (issue 14): its own caps, derived from the file tools'.
        provision.tool(crate::search_tool(
            Arc::clone(scope.workspace),
            crate::SearchLimits::from(scope.limits),
        ));
        Ok(())
    }
}
