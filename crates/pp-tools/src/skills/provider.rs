//! [`SkillsProvider`]: lists the valid skills in the system prompt and offers
//! `expand_skill` and `read_skill_file`, each skill's folder a scoped root of the gate.

use std::collections::BTreeMap;
use std::sync::Arc;

use pp_types::PathRoot;

use super::catalog::Catalog;
use super::expand_skill::ExpandSkill;
use super::read_skill_file::ReadSkillFile;
use super::{SKILL_SCOPE, SkillsSettings};
use crate::blocking::OffThread;
use crate::{ProviderError, Provision, Scope, ToolProvider};

/// The skills tool provider. Holds only where skills live: the catalog is read again for
/// every run segment (so an edit shows in the next run or resume), and each skill's jail
/// is built fresh for that segment.
#[derive(Debug, Clone)]
pub struct SkillsProvider {
    settings: Arc<SkillsSettings>,
}

impl SkillsProvider {
    /// A provider reading the skills folders of `settings`.
    pub fn new(settings: SkillsSettings) -> Self {
        Self {
            settings: Arc::new(settings),
        }
    }
}

impl ToolProvider for SkillsProvider {
    fn name(&self) -> &str {
        "skills"
    }

    fn provide(&self, scope: &Scope<'_>, provision: &mut Provision) -> Result<(), ProviderError> {
        super::refresh(&self.settings).map_err(|error| ProviderError(error.to_string()))?;
        let catalog = Catalog::load(&self.settings);
        let mut valid = BTreeMap::new();
        for entry in catalog.valid() {
            let Some(jail) = &entry.jail else { continue };
            // One line per skill in the prompt, whatever the YAML's line breaks.
            let description = entry
                .description()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            provision
                .prompt()
                .skills
                .push((entry.name.clone(), description));
            provision.root(PathRoot::key(SKILL_SCOPE, &entry.name), Arc::clone(jail));
            valid.insert(entry.name.clone(), entry.clone());
        }
        if valid.is_empty() {
            // No skill, no skill tools: nothing to expand or read.
            return Ok(());
        }
        let valid = Arc::new(valid);
        provision.tool(Arc::new(OffThread(Arc::new(ExpandSkill::new(
            Arc::clone(&valid),
            scope.limits.max_output_chars,
        )))));
        provision.tool(Arc::new(OffThread(Arc::new(ReadSkillFile::new(
            valid,
            scope.limits,
        )))));
        Ok(())
    }
}
