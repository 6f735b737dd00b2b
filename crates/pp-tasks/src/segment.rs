//! What one run segment needs, built fresh for every run and every resume.

use std::path::Path;
use std::sync::Arc;

use pp_agent::{PromptContext, ToolRegistry, system_prompt};
use pp_gate::{Gate, Jail};
use pp_tools::Toolbox;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::error::{Error, Result};

/// A fresh jail, the tools the toolbox's providers bind to it, and the gate.
///
/// An approval never reuses a jail or a policy from before the person decided: the
/// service builds a new `Segment` for every resume.
pub struct Segment {
    /// The tools offered to the model.
    pub registry: ToolRegistry,
    /// The policy: the jail (or scoped root) for path arguments, then the capability.
    pub gate: Gate,
    /// The prompt sections the providers contributed (skills, memory).
    pub prompt: PromptContext,
}

impl Segment {
    /// Equips a segment on the workspace `root` from `toolbox`, with the built-in tools'
    /// `limits`. Touches the disk: call it off the async threads.
    pub fn build(root: &Path, toolbox: &Toolbox, limits: pp_tools::Limits) -> Result<Self> {
        let jail = Arc::new(Jail::new(root).map_err(|source| Error::Workspace {
            path: root.display().to_string(),
            source,
        })?);
        let equipment = toolbox
            .equip(&jail, limits)
            .map_err(|error| Error::Tools(error.to_string()))?;
        Ok(Self {
            registry: equipment.registry,
            gate: equipment.gate,
            prompt: equipment.prompt,
        })
    }

    /// The system prompt: this segment's tools and prompt sections, plus `summary` (a
    /// chat session's summary of earlier turns).
    pub fn system_prompt(&self, summary: Option<&str>) -> String {
        let mut prompt = self.prompt.clone();
        prompt.summary = summary.map(str::to_owned);
        system_prompt(&self.registry, &prompt)
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
