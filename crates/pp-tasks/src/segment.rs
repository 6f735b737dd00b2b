//! What one run segment needs, built fresh for every run and every resume.

use std::path::Path;
use std::sync::Arc;

use pp_agent::{PromptContext, Tool, ToolRegistry, system_prompt};
use pp_gate::{Gate, Jail};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::{Error, Result};

/// A fresh jail, the built-in tools bound to it, and the gate.
///
/// An approval never reuses a jail or a policy from before the person decided: the
/// service builds a new `Segment` for every resume.
pub struct Segment {
    /// The built-in tools (plus any extra ones).
    pub registry: ToolRegistry,
    /// The policy: the jail for path arguments, then the capability table.
    pub gate: Gate,
}

impl Segment {
    /// Builds a segment on the workspace `root` with the default tool limits; `extra`
    /// tools are registered without the capability check (evals use this to exercise the
    /// engine's own denials). Touches the disk: call it off the async threads.
    pub fn build(root: &Path, extra: &[Arc<dyn Tool>]) -> Result<Self> {
        Self::build_with(root, extra, pp_tools::Limits::default())
    }

    /// Like [`Segment::build`], with the built-in tools' `limits`.
    pub fn build_with(
        root: &Path,
        extra: &[Arc<dyn Tool>],
        limits: pp_tools::Limits,
    ) -> Result<Self> {
        let jail = Arc::new(Jail::new(root).map_err(|source| Error::Workspace {
            path: root.display().to_string(),
            source,
        })?);
        let mut registry = ToolRegistry::new();
        pp_tools::register_file_tools_with(&mut registry, Arc::clone(&jail), limits)
            .map_err(|error| Error::Model(error.to_string()))?;
        for tool in extra {
            registry
                .register_unchecked(Arc::clone(tool))
                .map_err(|error| Error::BadRequest(error.to_string()))?;
        }
        Ok(Self {
            registry,
            gate: Gate::new(jail),
        })
    }

    /// The jail of this segment.
    pub fn jail(&self) -> &Jail {
        self.gate.jail()
    }

    /// The system prompt listing this segment's tools.
    pub fn system_prompt(&self) -> String {
        system_prompt(&self.registry, &PromptContext::default())
    }
}

/// `sha256:<hex>` of the canonical JSON of `arguments` (object keys sorted), for the
/// audit ledger.
pub fn arguments_hash(arguments: &Value) -> String {
    let canonical = serde_json::to_string(arguments).unwrap_or_default();
    let digest = Sha256::digest(canonical.as_bytes());
    let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
    format!("sha256:{hex}")
}
