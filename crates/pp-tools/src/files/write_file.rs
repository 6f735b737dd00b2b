//! `write_file`: creates or overwrites a file, atomically.
//!
//! ## What it does
//! Writes `content` to `path`, replacing the file if it exists and creating missing
//! parent directories. The jail writes a temporary file in the same directory, syncs it
//! and renames it over the target, so a crash never leaves a half-written file. Writing
//! through a symbolic link that stays inside the workspace writes the link's target; a
//! link leading outside is refused.
//!
//! Its [`pp_agent::Tool::preview`] is what the approval card shows: `create` or `overwrite`
//! depending on whether the target exists at that moment (scope `new_file` or
//! `replaces_whole_file`, with the lines added and removed), a unified diff of the old
//! text against the new for an overwrite, the new content for a create, and the target's
//! fingerprint so a change between approval request and execution can be noticed.
//!
//! ## Capabilities needed
//! `file:write` (requires approval), risk high; `path` is a path parameter, checked by
//! the jail both by the policy and again when the file is written.
//!
//! ## Example
//! ```json
//! {"path": "notes/todo.txt", "content": "buy milk\n"}
//! ```
//! ```text
//! created `notes/todo.txt` (9 bytes)
//! ```

use std::sync::Arc;

use pp_agent::ToolContext;
use pp_gate::Jail;
use pp_types::{
    Capability, ChangeRoot, EffectPreview, EffectScope, Risk, TargetState, ToolOutput, ToolSpec,
    WriteLabel,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::Limits;
use super::common::{
    cap_for_display, decode_text, file_snapshot, file_state, line_count, line_diff, resolved_path,
    respond, unreadable_notice, write_unless_stopped,
};
use crate::args::parse;
use crate::blocking::SyncTool;

/// What the model reads about the tool.
const DESCRIPTION: &str = "Create a text file or replace a file's whole content in the \
workspace (parent directories are created). Needs the operator's approval. To change part \
of an existing file prefer edit_file.";

/// The arguments of `write_file`.
#[derive(Debug, Deserialize)]
pub(crate) struct Arguments<'a> {
    /// The file, relative to the workspace root.
    pub(crate) path: &'a str,
    /// The whole new content.
    pub(crate) content: &'a str,
}

/// The `write_file` tool.
pub(crate) struct WriteFile {
    /// The only way to the filesystem.
    jail: Arc<Jail>,
    limits: Limits,
    spec: ToolSpec,
}

impl WriteFile {
    pub(crate) fn new(jail: Arc<Jail>, limits: Limits) -> Self {
        let spec = ToolSpec {
            name: "write_file".to_owned(),
            description: DESCRIPTION.to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "minLength": 1,
                        "description": "File to write, relative to the workspace root"
                    },
                    "content": {
                        "type": "string",
                        "description": "The complete new content of the file"
                    }
                },
                "required": ["path", "content"],
                "additionalProperties": false
            }),
            capability: Some(Capability::new("file:write")),
            risk: Risk::High,
            path_params: vec!["path".to_owned()],
            root: pp_types::PathRoot::Workspace,
        };
        Self { jail, limits, spec }
    }

    fn run(&self, context: &ToolContext, arguments: &Value) -> Result<String, ToolOutput> {
        let Arguments { path, content } = parse(arguments)?;
        let outcome = write_unless_stopped(&self.jail, context, path, content.as_bytes())?;
        let verb = if outcome.created {
            "created"
        } else {
            "overwrote"
        };
        Ok(format!("{verb} `{path}` ({} bytes)", content.len()))
    }

    fn preview_of(&self, arguments: &Value) -> Option<EffectPreview> {
        let Arguments { path, content } = parse(arguments).ok()?;
        // Fingerprint first: if the file changes while we read it, the fingerprint is
        // the older one and the change is noticed when it is compared at approval. The
        // fingerprint needs no read permission and hashes at most `hash_max_bytes`.
        let fingerprint = self
            .jail
            .fingerprint_with(path, self.limits.hash_max_bytes)
            .ok()?;
        // The label comes from existence, never from readability.
        let exists = self.jail.exists(path).ok()?;
        let max_chars = self.limits.max_output_chars;
        let mut preview = EffectPreview {
            target: path.to_owned(),
            resolved: resolved_path(&self.jail, path),
            label: WriteLabel::Create,
            diff: None,
            content: None,
            notice: None,
            fingerprint,
            scope: Some(EffectScope::NewFile),
            added: Some(line_count(content)),
            removed: Some(0),
            ..Default::default()
        };
        if !exists {
            preview.content = Some(cap_for_display(content, max_chars));
            return Some(preview);
        }
        preview.label = WriteLabel::Overwrite;
        preview.scope = Some(EffectScope::ReplacesWholeFile);
        (preview.added, preview.removed) = (None, None);
        match self.jail.read(path, self.limits.max_read_bytes) {
            Ok(old) if !old.truncated && old.bytes == content.as_bytes() => {
                preview.no_change = true;
                // An empty diff: the card's "no change on disk".
                preview.diff = Some(String::new());
                preview.scope = Some(EffectScope::Edit);
                (preview.added, preview.removed) = (Some(0), Some(0));
                preview.notice = Some(format!("`{path}` already holds exactly this content"));
                return Some(preview);
            }
            Ok(old) => match decode_text(&old.bytes, false) {
                Ok(old_text) if !old.truncated => {
                    let diff = line_diff(path, old_text, content);
                    preview.diff = Some(cap_for_display(&diff.unified, max_chars));
                    (preview.added, preview.removed) = (Some(diff.added), Some(diff.removed));
                }
                // Too large or binary: no line diff is meaningful; show what will be
                // written (the line counts stay unknown).
                _ => {}
            },
            Err(error) => preview.notice = Some(unreadable_notice(&error)),
        }
        if preview.diff.is_none() {
            preview.content = Some(cap_for_display(content, max_chars));
        }
        Some(preview)
    }
}

impl SyncTool for WriteFile {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn describe(&self, _context: &ToolContext, arguments: &Value) -> Option<EffectPreview> {
        self.preview_of(arguments)
    }

    fn state(&self, _context: &ToolContext, arguments: &Value) -> Option<TargetState> {
        let path = self.target(arguments)?;
        Some(file_state(&self.jail, &path, self.limits.hash_max_bytes))
    }

    fn snapshot(
        &self,
        _context: &ToolContext,
        arguments: &Value,
        keep_up_to: u64,
    ) -> Vec<pp_types::Snapshot> {
        match self.target(arguments) {
            Some(path) => {
                file_snapshot(&self.jail, ChangeRoot::Workspace, &path, false, keep_up_to)
            }
            None => Vec::new(),
        }
    }

    fn call(&self, context: &ToolContext, arguments: &Value) -> ToolOutput {
        respond(self.run(context, arguments))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_arguments_match_the_schema() {
        crate::args_check::assert_matches::<Arguments<'static>>("write_file");
    }

    fn tool() -> (tempfile::TempDir, WriteFile) {
        let dir = tempfile::tempdir().expect("temp dir");
        let jail = Arc::new(Jail::new(dir.path()).expect("jail"));
        (dir, WriteFile::new(jail, Limits::default()))
    }

    #[test]
    fn spec_needs_approval_and_names_its_path() {
        let (_dir, tool) = tool();
        assert_eq!(tool.spec.capability, Some(Capability::new("file:write")));
        assert_eq!(tool.spec.risk, Risk::High);
        assert_eq!(tool.spec.path_params, ["path"]);
        assert_eq!(tool.spec.parameters["required"], json!(["path", "content"]));
    }

    #[test]
    fn run_reports_create_then_overwrite() {
        let (_dir, tool) = tool();
        let arguments = json!({"path": "a.txt", "content": "héllo"});
        assert_eq!(
            tool.run(&ToolContext::default(), &arguments),
            Ok("created `a.txt` (6 bytes)".to_owned())
        );
        assert_eq!(
            tool.run(&ToolContext::default(), &arguments),
            Ok("overwrote `a.txt` (6 bytes)".to_owned())
        );
        // Writing the same content again changes nothing, and the card says so.
        let same = tool.preview_of(&arguments).unwrap();
        assert!(same.no_change);
        assert_eq!(
            (same.diff.as_deref(), same.added, same.removed, same.label),
            (Some(""), Some(0), Some(0), WriteLabel::Overwrite)
        );
        let other = tool
            .preview_of(&json!({"path": "a.txt", "content": "hello"}))
            .unwrap();
        assert!(!other.no_change);
        assert_eq!(other.scope, Some(EffectScope::ReplacesWholeFile));
    }

    #[test]
    fn snapshot_keeps_what_the_write_replaces_up_to_the_limit() {
        use pp_types::{Prior, Snapshot};
        let (_dir, tool) = tool();
        let context = ToolContext::default();
        let arguments = json!({"path": "d/../a.txt", "content": "new"});
        let absent = vec![Snapshot {
            root: ChangeRoot::Workspace,
            path: "a.txt".into(),
            partial: false,
            op: pp_types::FileOp::Write,
            prior: Prior::Absent,
        }];
        assert_eq!(tool.snapshot(&context, &arguments, 100), absent);
        tool.run(&context, &json!({"path": "a.txt", "content": "old!"}))
            .unwrap();
        let kept = tool.snapshot(&context, &arguments, 4);
        assert_eq!(kept[0].prior, Prior::Content(b"old!".to_vec()));
        let measured = tool.snapshot(&context, &arguments, 0);
        assert_eq!(measured[0].prior, Prior::TooLarge { size: 4 });
        assert!(
            tool.snapshot(&context, &json!({"path": "../x", "content": ""}), 9)
                .is_empty()
        );
    }
}
