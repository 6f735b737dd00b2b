//! `delete_file`: deletes a file, a link or an empty folder.
//!
//! ## What it does
//! Removes the entry at `path` with one `unlinkat` on the jail's handle of its folder.
//! A symbolic link is deleted as a link: what it points to is never touched. A folder
//! is deleted only when empty; a folder with content is refused (an ordinary error), so
//! one call never deletes more than one thing.
//!
//! Its [`pp_agent::Tool::preview`] shows the approval card the label `delete`, the
//! path as written and resolved, the file's size and its first lines (at most 20 lines
//! or 2 KiB of text; a `notice` instead for a binary file, a link or a folder). Whether
//! it can be undone is decided by the service from the size (`[revert] max_bytes`):
//! the content of a deleted file is kept for a revert when small enough; a deleted
//! link is not kept.
//!
//! ## Capabilities needed
//! `file:delete` (requires approval), risk high; `path` is a path parameter, checked by
//! the jail by the policy and again when the entry is removed.
//!
//! ## Example
//! ```json
//! {"path": "drafts/old-notes.txt"}
//! ```
//! ```text
//! deleted `drafts/old-notes.txt` (312 bytes)
//! ```

use std::sync::Arc;

use pp_agent::ToolContext;
use pp_gate::{EntryKind, Jail, JailError, Probe};
use pp_types::{
    Capability, EffectPreview, FileOp, Risk, Snapshot, TargetState, ToolOutput, ToolSpec,
    WriteLabel,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::Limits;
use super::common::{jail_error, respond};
use super::entries::{
    entry_fingerprint, entry_snapshot, first_lines, is_empty_folder, resolved_entry, unless_stopped,
};
use crate::args::parse;
use crate::blocking::SyncTool;

/// What the model reads about the tool.
const DESCRIPTION: &str = "Delete a file, a symbolic link (the link itself, never what it \
points to) or an empty folder in the workspace. A folder with content is refused: delete \
what is inside first. Needs the operator's approval.";

/// The arguments of `delete_file`.
#[derive(Debug, Deserialize)]
pub(crate) struct Arguments<'a> {
    /// The file, link or empty folder to delete, relative to the workspace root.
    pub(crate) path: &'a str,
}

/// The `delete_file` tool.
pub(crate) struct DeleteFile {
    /// The only way to the filesystem.
    jail: Arc<Jail>,
    limits: Limits,
    spec: ToolSpec,
}

impl DeleteFile {
    pub(crate) fn new(jail: Arc<Jail>, limits: Limits) -> Self {
        let spec = ToolSpec {
            name: "delete_file".to_owned(),
            description: DESCRIPTION.to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "minLength": 1,
                        "description": "File, link or empty folder to delete, relative to the workspace root"
                    }
                },
                "required": ["path"],
                "additionalProperties": false
            }),
            capability: Some(Capability::new("file:delete")),
            risk: Risk::High,
            path_params: vec!["path".to_owned()],
            root: pp_types::PathRoot::Workspace,
        };
        Self { jail, limits, spec }
    }

    /// What is at `path` when it can be deleted, or the error the call would give.
    fn plan(&self, path: &str) -> Result<Probe, ToolOutput> {
        // The policy's check, again: a link leading outside is a denial.
        self.jail.check(path).map_err(|error| jail_error(&error))?;
        let probe = self
            .jail
            .probe_entry(path)
            .map_err(|error| jail_error(&error))?;
        match probe.kind {
            None => Err(ToolOutput::error(format!("`{path}` does not exist"))),
            Some(EntryKind::Dir) => match is_empty_folder(&self.jail, path) {
                Ok(true) => Ok(probe),
                Ok(false) => Err(not_empty(path)),
                Err(error) => Err(jail_error(&error)),
            },
            Some(_) => Ok(probe),
        }
    }

    fn run(&self, context: &ToolContext, arguments: &Value) -> Result<String, ToolOutput> {
        let Arguments { path } = parse(arguments)?;
        self.plan(path)?;
        unless_stopped(context, "deleted")?;
        let kind = self.jail.remove_entry(path).map_err(|error| match error {
            JailError::NotEmpty { .. } => not_empty(path),
            other => jail_error(&other),
        })?;
        Ok(match kind {
            EntryKind::Dir => format!("deleted the empty folder `{path}`"),
            EntryKind::Symlink => format!("deleted the link `{path}` (not what it points to)"),
            EntryKind::File | EntryKind::Other => format!("deleted `{path}`"),
        })
    }

    fn preview_of(&self, arguments: &Value) -> Option<EffectPreview> {
        let Arguments { path } = parse(arguments).ok()?;
        let fingerprint = entry_fingerprint(&self.jail, path, self.limits.hash_max_bytes)?;
        let mut preview = EffectPreview {
            target: path.to_owned(),
            label: WriteLabel::Delete,
            fingerprint,
            ..Default::default()
        };
        let probe = match self.plan(path) {
            Ok(probe) => probe,
            Err(output) => {
                preview.resolved = resolved_entry(&self.jail, path);
                preview.failing(&output);
                return Some(preview);
            }
        };
        preview.resolved = Some(probe.resolved.to_string_lossy().into_owned());
        match probe.kind {
            Some(EntryKind::File) => {
                preview.size = Some(probe.size);
                match first_lines(&self.jail, path) {
                    Ok(lines) => preview.content = Some(lines),
                    Err(notice) => preview.notice = Some(notice),
                }
            }
            Some(EntryKind::Dir) => preview.notice = Some("an empty folder".to_owned()),
            Some(EntryKind::Symlink) => {
                preview.notice = Some(
                    "a symbolic link: the link is deleted, never what it points to".to_owned(),
                );
            }
            Some(EntryKind::Other) | None => {
                preview.notice = Some("not a regular file".to_owned());
            }
        }
        Some(preview)
    }
}

fn not_empty(path: &str) -> ToolOutput {
    ToolOutput::error(format!(
        "folder `{path}` is not empty; delete_file only deletes files, links and empty \
         folders — delete what is inside first"
    ))
}

impl SyncTool for DeleteFile {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn describe(&self, _context: &ToolContext, arguments: &Value) -> Option<EffectPreview> {
        self.preview_of(arguments)
    }

    fn state(&self, _context: &ToolContext, arguments: &Value) -> Option<TargetState> {
        let Arguments { path } = parse(arguments).ok()?;
        Some(TargetState {
            identity: resolved_entry(&self.jail, path).unwrap_or_else(|| path.to_owned()),
            fingerprint: entry_fingerprint(&self.jail, path, self.limits.hash_max_bytes)
                .unwrap_or_else(|| "unavailable".to_owned()),
        })
    }

    fn snapshot(
        &self,
        _context: &ToolContext,
        arguments: &Value,
        keep_up_to: u64,
    ) -> Vec<Snapshot> {
        match parse(arguments) {
            Ok(Arguments { path }) => entry_snapshot(&self.jail, path, FileOp::Delete, keep_up_to),
            Err(_) => Vec::new(),
        }
    }

    fn call(&self, context: &ToolContext, arguments: &Value) -> ToolOutput {
        respond(self.run(context, arguments))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_arguments_match_the_schema() {
        crate::args_check::assert_matches::<Arguments<'static>>("delete_file");
    }
}
