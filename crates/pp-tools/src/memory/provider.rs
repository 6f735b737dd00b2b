//! [`MemoryProvider`]: puts the capped memory into the system prompt and offers
//! `memory_write`.

use std::sync::Arc;

use super::memory_write::MemoryWrite;
use super::{MAX_MEMORY_BYTES, MemoryError, MemorySettings, prompt_section, read};
use crate::blocking::OffThread;
use crate::{ProviderError, Provision, Scope, ToolProvider};

/// The memory tool provider. Holds only where the memory lives: the memory is read again
/// for every run segment (an operator's edit shows in the next run or resume), through a
/// jail built fresh for that segment on the data directory (or, for the team's memory,
/// on this process's mirror, brought up to the database first).
#[derive(Debug, Clone)]
pub struct MemoryProvider {
    settings: Arc<MemorySettings>,
}

impl MemoryProvider {
    /// A provider for the memory file of `settings`.
    pub fn new(settings: MemorySettings) -> Self {
        Self {
            settings: Arc::new(settings),
        }
    }
}

impl ToolProvider for MemoryProvider {
    fn name(&self) -> &str {
        "memory"
    }

    fn provide(&self, scope: &Scope<'_>, provision: &mut Provision) -> Result<(), ProviderError> {
        let error = |error: MemoryError| ProviderError(error.to_string());
        let memory = self.settings.memory();
        let jail = Arc::new(memory.open().map_err(error)?);
        provision.prompt().memory = match read(&jail) {
            Ok(snapshot) => prompt_section(&snapshot.content, self.settings.max_prompt_bytes),
            // Only a change made behind PocketPilot's back gets here (every write is
            // capped): say so rather than fail every task.
            Err(MemoryError::TooLarge) => Some(format!(
                "[memory.md is larger than {MAX_MEMORY_BYTES} bytes and is not shown; ask the \
                 operator to shorten it]"
            )),
            Err(other) => return Err(error(other)),
        };
        provision.tool(Arc::new(OffThread(Arc::new(MemoryWrite::new(
            memory,
            jail,
            scope.limits,
        )))));
        Ok(())
    }
}

#[cfg(test)]
#[allow(
    clippy::disallowed_methods,
    reason = "the test writes the memory file behind the jail's back"
)]
mod tests {
    use super::*;
    use crate::{Limits, Toolbox};
    use pp_gate::Jail;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_prompt_gets_the_capped_memory_and_the_tool_is_offered() {
        let data = tempfile::tempdir().unwrap();
        let workspace = tempfile::tempdir().unwrap();
        std::fs::write(data.path().join("memory.md"), "likes tea\nand more").unwrap();
        // A memory.md in the workspace is just a file: never read.
        std::fs::write(workspace.path().join("memory.md"), "workspace text").unwrap();
        let provider = MemoryProvider::new(MemorySettings {
            max_prompt_bytes: 10,
            ..MemorySettings::new(data.path())
        });
        let toolbox = Toolbox::new().with(Arc::new(provider));
        let jail = Arc::new(Jail::new(workspace.path()).unwrap());
        let equipment = toolbox.equip(&jail, Limits::default()).unwrap();
        assert_eq!(
            equipment.prompt.memory.as_deref(),
            Some("likes tea\n[truncated: memory.md is 18 bytes; only the first 10 are shown]")
        );
        let spec = equipment.registry.get("memory_write").unwrap().spec();
        assert_eq!(spec.capability.as_ref().unwrap().as_str(), "memory:write");
        assert_eq!(spec.risk, pp_types::Risk::High);
        assert!(spec.path_params.is_empty());
    }

    #[test]
    fn a_memory_too_large_to_read_is_a_notice_not_a_failure() {
        let data = tempfile::tempdir().unwrap();
        let size = usize::try_from(MAX_MEMORY_BYTES).unwrap() + 1;
        std::fs::write(data.path().join("memory.md"), "x".repeat(size)).unwrap();
        let provider = MemoryProvider::new(MemorySettings::new(data.path()));
        let workspace = Arc::new(Jail::new(data.path()).unwrap());
        let equipment = Toolbox::new()
            .with(Arc::new(provider))
            .equip(&workspace, Limits::default())
            .unwrap();
        let memory = equipment.prompt.memory.unwrap();
        assert!(memory.contains("is not shown"), "{memory}");
    }

    #[test]
    fn a_missing_data_directory_is_a_provider_error() {
        let data = tempfile::tempdir().unwrap();
        let provider = MemoryProvider::new(MemorySettings::new(data.path().join("missing")));
        let workspace = Arc::new(Jail::new(data.path()).unwrap());
        let error = Toolbox::new()
            .with(Arc::new(provider))
            .equip(&workspace, Limits::default())
            .err()
            .unwrap();
        assert!(error.to_string().contains("memory"), "{error}");
    }
}
