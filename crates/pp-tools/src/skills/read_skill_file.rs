//! `read_skill_file`: reads one file of a skill, with the skill's folder as the root.
//!
//! ## What it does
//! Returns the text of one file of the skill `name` (a path `expand_skill` listed). The
//! path is relative to the skill's own folder: `..` out of it, an absolute path, or a
//! link that leads out of it is denied, by the gate before the call and by the skill's
//! jail again when the file is opened — the same rules as workspace paths. Output is
//! capped like `read_file`'s, with a `[truncated: …]` marker.
//!
//! ## Capabilities needed
//! `skill:read` (allowed without approval), risk low; `path` is a path parameter whose
//! root is the folder of the skill named by `name` (`PathRoot::Scoped { scope: "skill",
//! key_param: "name" }`). An unknown skill name has no root: the gate denies the call.
//!
//! ## Example
//! ```json
//! {"name": "tidy-notes", "path": "templates/note.md"}
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;

use pp_agent::ToolContext;
use pp_types::{Capability, PathRoot, Risk, ToolOutput, ToolSpec};
use serde::Deserialize;
use serde_json::{Value, json};

use super::catalog::SkillEntry;
use crate::Limits;
use crate::args::parse;
use crate::blocking::SyncTool;
use crate::files::common::{
    binary_error, cap_for_display, decode_text, jail_error, respond, truncation_marker,
};

/// What the model reads about the tool.
const DESCRIPTION: &str = "Read one file of a skill (a path expand_skill listed). The \
path is relative to the skill's own folder; paths leaving it are refused.";

/// The arguments of `read_skill_file`.
#[derive(Debug, Deserialize)]
pub(crate) struct Arguments<'a> {
    /// The skill (it chooses the folder `path` is checked against).
    pub(crate) name: &'a str,
    /// The file, relative to the skill's folder.
    pub(crate) path: &'a str,
}

/// The `read_skill_file` tool over this run's valid skills.
pub(crate) struct ReadSkillFile {
    skills: Arc<BTreeMap<String, SkillEntry>>,
    limits: Limits,
    spec: ToolSpec,
}

impl ReadSkillFile {
    pub(crate) fn new(skills: Arc<BTreeMap<String, SkillEntry>>, limits: Limits) -> Self {
        let spec = ToolSpec {
            name: "read_skill_file".to_owned(),
            description: DESCRIPTION.to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "name": {
                        "type": "string",
                        "minLength": 1,
                        "description": "The skill's name"
                    },
                    "path": {
                        "type": "string",
                        "minLength": 1,
                        "description": "File to read, relative to the skill's folder"
                    }
                },
                "required": ["name", "path"],
                "additionalProperties": false
            }),
            capability: Some(Capability::new("skill:read")),
            risk: Risk::Low,
            path_params: vec!["path".to_owned()],
            root: PathRoot::Scoped {
                scope: super::SKILL_SCOPE.to_owned(),
                key_param: "name".to_owned(),
            },
        };
        Self {
            skills,
            limits,
            spec,
        }
    }

    fn run(&self, arguments: &Value) -> Result<String, ToolOutput> {
        let Arguments { name, path } = parse(arguments)?;
        let jail = self
            .skills
            .get(name)
            .and_then(|entry| entry.jail.as_ref())
            .ok_or_else(|| ToolOutput::error(format!("no skill named `{name}`")))?;
        let content = jail
            .read(path, self.limits.max_read_bytes)
            .map_err(|error| jail_error(&error))?;
        let text = decode_text(&content.bytes, content.truncated)
            .map_err(|why| binary_error(path, content.size, why))?;
        let mut out = cap_for_display(text, self.limits.max_output_chars);
        if content.truncated {
            if !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&truncation_marker(&format!(
                "read_skill_file reads only the first {} bytes of this {}-byte file",
                content.bytes.len(),
                content.size
            )));
        }
        Ok(out)
    }
}

impl SyncTool for ReadSkillFile {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn target(&self, arguments: &Value) -> Option<String> {
        let Arguments { name, path } = parse(arguments).ok()?;
        Some(format!("{name}/{path}"))
    }

    fn call(&self, _context: &ToolContext, arguments: &Value) -> ToolOutput {
        respond(self.run(arguments))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_arguments_match_the_schema() {
        crate::args_check::assert_matches::<Arguments<'static>>("read_skill_file");
    }
}
