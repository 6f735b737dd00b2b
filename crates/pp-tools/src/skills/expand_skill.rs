//! `expand_skill`: the instructions of one skill and the list of its files.
//!
//! ## What it does
//! Returns the Markdown body of the skill's `SKILL.md` (as loaded for this run) and the
//! paths of the skill's other files, which `read_skill_file` reads. Only skills listed
//! in the system prompt (valid ones) can be expanded.
//!
//! ## Capabilities needed
//! `skill:read` (allowed without approval), risk low. No path parameter: the skill is
//! chosen by name among this run's skills.
//!
//! ## Example
//! ```json
//! {"name": "tidy-notes"}
//! ```
//! ```text
//! # Skill `tidy-notes`
//! …the body of SKILL.md…
//!
//! ## Files (read them with read_skill_file)
//! - templates/note.md
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;

use pp_agent::ToolContext;
use pp_types::{Capability, Risk, ToolOutput, ToolSpec};
use serde::Deserialize;
use serde_json::{Value, json};

use super::catalog::SkillEntry;
use crate::args::parse;
use crate::blocking::SyncTool;
use crate::files::common::cap_for_display;

/// What the model reads about the tool.
const DESCRIPTION: &str = "Read the instructions of one of the skills listed in the \
system prompt, and the list of its files (read those with read_skill_file). A skill \
describes a procedure; it grants no permission.";

/// The arguments of `expand_skill`.
#[derive(Debug, Deserialize)]
pub(crate) struct Arguments<'a> {
    /// The skill, as the system prompt lists it.
    pub(crate) name: &'a str,
}

/// The `expand_skill` tool over this run's valid skills.
pub(crate) struct ExpandSkill {
    skills: Arc<BTreeMap<String, SkillEntry>>,
    max_output_chars: usize,
    spec: ToolSpec,
}

impl ExpandSkill {
    pub(crate) fn new(skills: Arc<BTreeMap<String, SkillEntry>>, max_output_chars: usize) -> Self {
        let spec = ToolSpec {
            name: "expand_skill".to_owned(),
            description: DESCRIPTION.to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "name": {
                        "type": "string",
                        "minLength": 1,
                        "description": "The skill's name, as listed in the system prompt"
                    }
                },
                "required": ["name"],
                "additionalProperties": false
            }),
            capability: Some(Capability::new("skill:read")),
            risk: Risk::Low,
            path_params: Vec::new(),
            root: pp_types::PathRoot::Workspace,
        };
        Self {
            skills,
            max_output_chars,
            spec,
        }
    }
}

impl SyncTool for ExpandSkill {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn target(&self, arguments: &Value) -> Option<String> {
        parse(arguments)
            .ok()
            .map(|Arguments { name }| name.to_owned())
    }

    fn call(&self, _context: &ToolContext, arguments: &Value) -> ToolOutput {
        let name = match parse(arguments) {
            Ok(Arguments { name }) => name,
            Err(output) => return output,
        };
        let Some(entry) = self.skills.get(name) else {
            let known: Vec<&str> = self.skills.keys().map(String::as_str).collect();
            return ToolOutput::error(format!(
                "no skill named `{name}`; the skills are: {}",
                known.join(", ")
            ));
        };
        let Ok(skill) = &entry.status else {
            return ToolOutput::error(format!("skill `{name}` is not valid"));
        };
        let mut text = format!("# Skill `{name}`\n{}", skill.body);
        if !text.ends_with('\n') {
            text.push('\n');
        }
        let files = entry.files();
        if files.is_empty() {
            text.push_str("\n(The skill has no other files.)\n");
        } else {
            text.push_str("\n## Files (read them with read_skill_file)\n");
            for file in files {
                text.push_str(&format!("- {file}\n"));
            }
        }
        ToolOutput::success(cap_for_display(&text, self.max_output_chars))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_arguments_match_the_schema() {
        crate::args_check::assert_matches::<Arguments<'static>>("expand_skill");
    }
}
