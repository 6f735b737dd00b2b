//! Builds what one run segment needs: a fresh jail, the tools bound to it, the gate.
//!
//! Called at the start of a task and again at every resume, so an approval never reuses a
//! jail or policy from before the person decided.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context as _;
use pp_agent::{PromptContext, Tool, ToolRegistry, system_prompt};
use pp_gate::{Gate, Jail};

use crate::{Exit, env};

/// The tools and the policy of one run segment.
pub(crate) struct Segment {
    /// Built-in tools (plus any extra ones) bound to this segment's jail.
    pub(crate) registry: ToolRegistry,
    /// The policy: the jail for path arguments, then the capability table.
    pub(crate) gate: Gate,
}

/// Builds a fresh jail on `root`, the built-in file tools and the gate; `extra` tools
/// are added without the capability check (evals use this to test the engine's denials).
pub(crate) fn segment(root: &Path, extra: &[Arc<dyn Tool>]) -> anyhow::Result<Segment> {
    let jail = Arc::new(
        Jail::new(root).with_context(|| format!("cannot open workspace {}", root.display()))?,
    );
    let mut registry = ToolRegistry::new();
    pp_tools::register_file_tools(&mut registry, Arc::clone(&jail))?;
    for tool in extra {
        registry.register_unchecked(Arc::clone(tool))?;
    }
    Ok(Segment {
        registry,
        gate: Gate::new(jail),
    })
}

/// The system prompt for a registry.
pub(crate) fn prompt_for(registry: &ToolRegistry) -> String {
    system_prompt(registry, &PromptContext::default())
}

/// The workspace root from `--workspace` (with `~` expanded) or the current directory.
pub(crate) fn workspace_root(flag: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    let path = match flag {
        Some(path) => expand_tilde(path)?,
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    if !path.is_dir() {
        return Err(Exit::usage(format!("workspace {} is not a directory", path.display())).into());
    }
    Ok(path)
}

fn expand_tilde(path: PathBuf) -> anyhow::Result<PathBuf> {
    let Ok(rest) = path.strip_prefix("~") else {
        return Ok(path);
    };
    let home = env::home().ok_or_else(|| Exit::usage("cannot expand `~`: HOME is not set"))?;
    Ok(PathBuf::from(home).join(rest))
}
