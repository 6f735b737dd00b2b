//! `memory_write`: appends to or replaces the memory file.
//!
//! ## What it does
//! `mode: "append"` adds `content` at the end of `memory.md`, on a line of its own (a newline
//! is added before it and after it where missing);
//! `mode: "replace"` makes `content` the whole memory. The write is atomic (temp file and
//! rename through the data directory's jail) and a compare-and-swap on the version read
//! just before, so an operator's edit in between is never overwritten.
//!
//! Its preview is the approval card: target `memory.md`, `create` or `overwrite` from
//! whether the file exists, a unified diff of the memory file, and the file's fingerprint
//! ([`pp_gate::Jail::fingerprint_with`]). The target state for the stale check has the
//! same identity and fingerprint format, so memory edited by the operator after the
//! request makes the approval `stale`.
//!
//! Its snapshot ([`pp_agent::Tool::snapshot`]) is the memory file, relative to the
//! memory root (`ChangeRoot::Memory`): an approved call is logged `created` (no memory
//! yet), `edited` (append) or `overwritten` (replace), and can be reverted.
//!
//! ## Capabilities needed
//! `memory:write` (requires approval), risk high; no path parameter: the tool can reach
//! nothing but `memory.md`.
//!
//! ## Example
//! ```json
//! {"mode": "append", "content": "The user prefers metric units.\n"}
//! ```
//! ```text
//! appended 31 bytes to memory.md
//! ```

use std::sync::Arc;

use pp_agent::ToolContext;
use pp_gate::Jail;
use pp_types::{
    Capability, ChangeRoot, EffectPreview, EffectScope, Risk, TargetState, ToolOutput, ToolSpec,
    WriteLabel,
};
use serde::{Deserialize, Deserializer, de};
use serde_json::{Value, json};

use super::{MEMORY_FILE, Memory, MemoryError, read};
use crate::Limits;
use crate::args::parse;
use crate::blocking::SyncTool;
use crate::files::common::{
    cap_for_display, file_snapshot, jail_error, line_count, line_diff, respond,
};

/// What the model reads about the tool.
const DESCRIPTION: &str = "Change your memory file (memory.md, kept between tasks and shown \
to you at the start of each): mode \"append\" adds content at the end, mode \"replace\" \
replaces the whole memory. Needs the operator's approval. Keep it short: facts and \
preferences worth remembering.";

/// How the memory changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Append,
    Replace,
}

/// Errors: ``argument `mode` must be a string``, or ``… must be "append" or "replace", not "x"``.
impl<'de> Deserialize<'de> for Mode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match <&str>::deserialize(deserializer)? {
            "append" => Ok(Self::Append),
            "replace" => Ok(Self::Replace),
            other => Err(de::Error::custom(format!(
                "must be \"append\" or \"replace\", not {other:?}"
            ))),
        }
    }
}

/// The arguments of `memory_write`.
#[derive(Debug, Deserialize)]
pub(crate) struct Arguments<'a> {
    /// Append to the memory, or replace it.
    mode: Mode,
    /// The text appended, or the whole new memory.
    content: &'a str,
}

impl Mode {
    /// The memory after the call, from the memory before it. An appended entry starts
    /// on a new line and ends with one, so the file stays a list of lines.
    fn apply(self, old: &str, content: &str) -> String {
        match self {
            Self::Replace => content.to_owned(),
            Self::Append => {
                let before = if old.is_empty() || old.ends_with('\n') {
                    ""
                } else {
                    "\n"
                };
                let after = if content.is_empty() || content.ends_with('\n') {
                    ""
                } else {
                    "\n"
                };
                format!("{old}{before}{content}{after}")
            }
        }
    }
}

/// The `memory_write` tool.
pub(crate) struct MemoryWrite {
    /// Where the memory is (the file, or the team's in the database).
    memory: Memory,
    /// The jail on the memory's folder; only [`MEMORY_FILE`] is ever named in it. With
    /// the team's memory it holds this process's mirror, refreshed before each read.
    jail: Arc<Jail>,
    limits: Limits,
    spec: ToolSpec,
}

impl MemoryWrite {
    pub(crate) fn new(memory: Memory, jail: Arc<Jail>, limits: Limits) -> Self {
        let spec = ToolSpec {
            name: "memory_write".to_owned(),
            description: DESCRIPTION.to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "mode": {
                        "type": "string",
                        "enum": ["append", "replace"],
                        "description": "append: add at the end; replace: the whole new memory"
                    },
                    "content": {
                        "type": "string",
                        "description": "The text to append, or the complete new memory"
                    }
                },
                "required": ["mode", "content"],
                "additionalProperties": false
            }),
            capability: Some(Capability::new("memory:write")),
            risk: Risk::High,
            path_params: Vec::new(),
            root: pp_types::PathRoot::Workspace,
        };
        Self {
            memory,
            jail,
            limits,
            spec,
        }
    }

    /// Brings the team's memory's mirror up to the database before a read (nothing for
    /// the file); a failure shows in the read after it.
    fn refresh(&self) {
        let _ = self.memory.refresh(&self.jail);
    }

    fn fingerprint(&self) -> String {
        self.refresh();
        self.jail
            .fingerprint_with(MEMORY_FILE, self.limits.hash_max_bytes)
            .unwrap_or_else(|error| format!("unavailable: {error}"))
    }

    fn run(&self, context: &ToolContext, arguments: &Value) -> Result<String, ToolOutput> {
        let Arguments { mode, content } = parse(arguments)?;
        self.memory
            .refresh(&self.jail)
            .map_err(|error| memory_error(&error))?;
        let before = read(&self.jail).map_err(|error| memory_error(&error))?;
        let after = mode.apply(&before.content, content);
        let stop = || context.should_stop();
        self.memory
            .replace_unless(&self.jail, &before.version, &after, &stop)
            .map_err(|error| match error {
                MemoryError::Jail(pp_gate::JailError::Aborted { .. }) => ToolOutput::error(
                    "not written: the task was cancelled or ran out of time before memory.md \
                 was replaced",
                ),
                other => memory_error(&other),
            })?;
        Ok(match mode {
            Mode::Append => format!("appended {} bytes to {MEMORY_FILE}", content.len()),
            Mode::Replace => format!("replaced {MEMORY_FILE} ({} bytes)", after.len()),
        })
    }

    fn preview_of(&self, arguments: &Value) -> Option<EffectPreview> {
        let Arguments { mode, content } = parse(arguments).ok()?;
        // Fingerprint first: a change while we read is noticed at approval.
        let fingerprint = self.fingerprint();
        let exists = self.jail.exists(MEMORY_FILE).ok()?;
        let max_chars = self.limits.max_output_chars;
        let mut preview = EffectPreview {
            target: MEMORY_FILE.to_owned(),
            resolved: Some(MEMORY_FILE.to_owned()),
            label: if exists {
                WriteLabel::Overwrite
            } else {
                WriteLabel::Create
            },
            diff: None,
            content: None,
            notice: None,
            fingerprint,
            scope: Some(match mode {
                _ if !exists => EffectScope::NewFile,
                Mode::Append => EffectScope::Edit,
                Mode::Replace => EffectScope::ReplacesWholeFile,
            }),
            added: None,
            removed: None,
            ..Default::default()
        };
        match read(&self.jail) {
            Ok(before) => {
                let after = mode.apply(&before.content, content);
                if exists && after == before.content {
                    preview.no_change = true;
                    preview.diff = Some(String::new());
                    preview.notice = Some(format!("{MEMORY_FILE} already holds exactly this"));
                    (preview.added, preview.removed) = (Some(0), Some(0));
                } else if exists {
                    let diff = line_diff(MEMORY_FILE, &before.content, &after);
                    preview.diff = Some(cap_for_display(&diff.unified, max_chars));
                    (preview.added, preview.removed) = (Some(diff.added), Some(diff.removed));
                } else {
                    preview.content = Some(cap_for_display(&after, max_chars));
                    (preview.added, preview.removed) = (Some(line_count(&after)), Some(0));
                }
            }
            Err(error) => {
                preview.notice = Some(format!("cannot show the current memory: {error}"));
                preview.content = Some(cap_for_display(content, max_chars));
            }
        }
        Some(preview)
    }
}

fn memory_error(error: &MemoryError) -> ToolOutput {
    match error {
        MemoryError::Jail(error) => jail_error(error),
        other => ToolOutput::error(other.to_string()),
    }
}

impl SyncTool for MemoryWrite {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn describe(&self, _context: &ToolContext, arguments: &Value) -> Option<EffectPreview> {
        self.preview_of(arguments)
    }

    fn target(&self, _arguments: &Value) -> Option<String> {
        Some(MEMORY_FILE.to_owned())
    }

    fn state(&self, _context: &ToolContext, _arguments: &Value) -> Option<TargetState> {
        Some(TargetState {
            identity: MEMORY_FILE.to_owned(),
            fingerprint: self.fingerprint(),
        })
    }

    fn snapshot(
        &self,
        _context: &ToolContext,
        arguments: &Value,
        keep_up_to: u64,
    ) -> Vec<pp_types::Snapshot> {
        self.refresh();
        match parse(arguments) {
            Ok(Arguments { mode, .. }) => file_snapshot(
                &self.jail,
                ChangeRoot::Memory,
                MEMORY_FILE,
                mode == Mode::Append,
                keep_up_to,
            ),
            Err(_) => Vec::new(),
        }
    }

    fn call(&self, context: &ToolContext, arguments: &Value) -> ToolOutput {
        respond(self.run(context, arguments))
    }
}

#[cfg(test)]
#[allow(
    clippy::disallowed_methods,
    reason = "the tests inspect the memory file behind the jail's back"
)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_arguments_match_the_schema() {
        crate::args_check::assert_matches::<Arguments<'static>>("memory_write");
    }

    fn tool() -> (tempfile::TempDir, MemoryWrite) {
        let dir = tempfile::tempdir().unwrap();
        let jail = Arc::new(Jail::new(dir.path()).unwrap());
        let tool = MemoryWrite::new(Memory::file(dir.path()), jail, Limits::default());
        (dir, tool)
    }

    fn memory(dir: &tempfile::TempDir) -> String {
        std::fs::read_to_string(dir.path().join(MEMORY_FILE)).unwrap()
    }

    #[test]
    fn spec_needs_approval_and_has_no_path() {
        let (_dir, tool) = tool();
        assert_eq!(tool.spec.capability, Some(Capability::new("memory:write")));
        assert_eq!(tool.spec.risk, Risk::High);
        assert!(tool.spec.path_params.is_empty());
        assert_eq!(tool.target(&json!({})), Some("memory.md".to_owned()));
    }

    #[test]
    fn label_is_create_then_overwrite_with_a_diff() {
        let (dir, tool) = tool();
        let context = ToolContext::default();
        let append = json!({"mode": "append", "content": "one\n"});
        let first = tool.preview_of(&append).unwrap();
        assert_eq!(first.label, WriteLabel::Create);
        assert_eq!(first.content.as_deref(), Some("one\n"));
        assert_eq!(first.fingerprint, "absent");
        assert_eq!(
            (first.scope, first.added, first.removed),
            (Some(EffectScope::NewFile), Some(1), Some(0))
        );
        assert_eq!(
            tool.run(&context, &append),
            Ok("appended 4 bytes to memory.md".to_owned())
        );
        let second = tool
            .preview_of(&json!({"mode": "append", "content": "two"}))
            .unwrap();
        assert_eq!(second.label, WriteLabel::Overwrite);
        assert_eq!(second.target, "memory.md");
        assert_eq!(
            second.diff.as_deref(),
            Some("--- a/memory.md\n+++ b/memory.md\n@@ -1 +1,2 @@\n one\n+two\n")
        );
        assert_eq!(
            (second.scope, second.added, second.removed),
            (Some(EffectScope::Edit), Some(1), Some(0))
        );
        let replace = tool
            .preview_of(&json!({"mode": "replace", "content": "new\n"}))
            .unwrap();
        assert_eq!(
            (replace.scope, replace.added, replace.removed),
            (Some(EffectScope::ReplacesWholeFile), Some(1), Some(1))
        );
        assert_eq!(
            tool.state(&context, &json!({}))
                .map(|state| state.fingerprint),
            Some(second.fingerprint)
        );
        tool.run(&context, &json!({"mode": "append", "content": "two"}))
            .unwrap();
        tool.run(&context, &json!({"mode": "append", "content": "three\n"}))
            .unwrap();
        assert_eq!(memory(&dir), "one\ntwo\nthree\n");
        assert_eq!(
            tool.run(&context, &json!({"mode": "replace", "content": "fresh\n"})),
            Ok("replaced memory.md (6 bytes)".to_owned())
        );
        assert_eq!(memory(&dir), "fresh\n");
    }

    #[test]
    fn an_operator_edit_changes_the_target_state() {
        let (dir, tool) = tool();
        let context = ToolContext::default();
        tool.run(&context, &json!({"mode": "replace", "content": "a\n"}))
            .unwrap();
        let preview = tool
            .preview_of(&json!({"mode": "replace", "content": "b\n"}))
            .unwrap();
        std::fs::write(dir.path().join(MEMORY_FILE), "edited\n").unwrap();
        let state = tool.state(&context, &json!({})).unwrap();
        assert_eq!(state.identity, "memory.md");
        assert_ne!(state.fingerprint, preview.fingerprint);
    }

    #[test]
    fn snapshot_names_the_memory_root_and_the_scope() {
        use pp_types::{Prior, Snapshot};
        let (_dir, tool) = tool();
        let context = ToolContext::default();
        let append = json!({"mode": "append", "content": "one\n"});
        let replace = json!({"mode": "replace", "content": "new\n"});
        let snapshot = |partial, prior| {
            vec![Snapshot {
                root: ChangeRoot::Memory,
                path: MEMORY_FILE.to_owned(),
                partial,
                op: pp_types::FileOp::Write,
                prior,
            }]
        };
        assert_eq!(
            tool.snapshot(&context, &append, 100),
            snapshot(true, Prior::Absent)
        );
        tool.run(&context, &append).unwrap();
        assert_eq!(
            tool.snapshot(&context, &replace, 100),
            snapshot(false, Prior::Content(b"one\n".to_vec()))
        );
        assert_eq!(
            tool.snapshot(&context, &append, 0),
            snapshot(true, Prior::TooLarge { size: 4 })
        );
        assert!(
            tool.snapshot(&context, &json!({"mode": "x"}), 100)
                .is_empty()
        );
    }

    #[test]
    fn a_bad_mode_is_an_error_and_writes_nothing() {
        let (dir, tool) = tool();
        let output = tool.call(
            &ToolContext::default(),
            &json!({"mode": "prepend", "content": "x"}),
        );
        assert!(matches!(output, ToolOutput::Error { .. }), "{output:?}");
        assert!(!dir.path().join(MEMORY_FILE).exists());
    }
}
