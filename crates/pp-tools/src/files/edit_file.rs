//! `edit_file`: replaces one exact piece of text in a file, atomically.
//!
//! ## What it does
//! Finds `old_text` in the file at `path` and replaces it with `new_text`. The match is
//! exact (whitespace and line endings included) and must be unique: no match, or more
//! than one (overlapping matches count), is an ordinary error that says what to do, and
//! an empty `old_text` is refused. The file must be UTF-8 text no larger than
//! [`super::Limits::max_read_bytes`]. The result is written through the jail's atomic
//! write, so the file is either fully edited or untouched.
//!
//! Its [`pp_agent::Tool::preview`] shows the approval card an `overwrite` label (scope
//! `edit`, with the lines added and removed), the unified diff of the edit and the file's
//! fingerprint; there is no preview when the edit cannot apply
//! (the call would fail anyway).
//!
//! ## Capabilities needed
//! `file:update` (requires approval), risk high; `path` is a path parameter, checked by
//! the jail both by the policy and again when the file is read and written.
//!
//! ## Example
//! ```json
//! {"path": "src/config.toml", "old_text": "port = 8080", "new_text": "port = 9090"}
//! ```
//! ```text
//! edited `src/config.toml`: replaced 1 occurrence (11 → 11 characters)
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
    cap_for_display, file_snapshot, file_state, line_diff, read_whole_text, resolved_path, respond,
    write_unless_stopped,
};
use crate::args::parse;
use crate::blocking::SyncTool;

/// What the model reads about the tool.
const DESCRIPTION: &str = "Edit a text file by replacing one exact occurrence of \
`old_text` with `new_text`. `old_text` must match the file exactly (including whitespace \
and indentation) and exactly once; include surrounding lines to make it unique. Needs the \
operator's approval.";

/// The arguments of `edit_file`.
#[derive(Debug, Deserialize)]
pub(crate) struct Arguments<'a> {
    /// The file, relative to the workspace root.
    pub(crate) path: &'a str,
    /// The exact text to replace; it must occur once.
    pub(crate) old_text: &'a str,
    /// What replaces it.
    pub(crate) new_text: &'a str,
}

/// The `edit_file` tool.
pub(crate) struct EditFile {
    /// The only way to the filesystem.
    jail: Arc<Jail>,
    limits: Limits,
    spec: ToolSpec,
}

/// An edit that can apply: the new content and the texts it swapped.
struct Planned<'a> {
    path: &'a str,
    old: String,
    new: String,
    old_text: &'a str,
    new_text: &'a str,
}

impl EditFile {
    pub(crate) fn new(jail: Arc<Jail>, limits: Limits) -> Self {
        let spec = ToolSpec {
            name: "edit_file".to_owned(),
            description: DESCRIPTION.to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "minLength": 1,
                        "description": "File to edit, relative to the workspace root"
                    },
                    "old_text": {
                        "type": "string",
                        "minLength": 1,
                        "description": "Exact text to replace; must occur exactly once"
                    },
                    "new_text": {
                        "type": "string",
                        "description": "Text to put in its place (may be empty to delete)"
                    }
                },
                "required": ["path", "old_text", "new_text"],
                "additionalProperties": false
            }),
            capability: Some(Capability::new("file:update")),
            risk: Risk::High,
            path_params: vec!["path".to_owned()],
            root: pp_types::PathRoot::Workspace,
        };
        Self { jail, limits, spec }
    }

    /// Reads the file and works out the edit, or the error the model should see.
    fn plan<'a>(&self, arguments: &'a Value) -> Result<Planned<'a>, ToolOutput> {
        let Arguments {
            path,
            old_text,
            new_text,
        } = parse(arguments)?;
        if old_text.is_empty() {
            return Err(ToolOutput::error(
                "old_text must not be empty; to create or replace a whole file use write_file",
            ));
        }
        let old = read_whole_text(&self.jail, path, self.limits.max_read_bytes)?;
        let new = replace_unique(&old, old_text, new_text)
            .map_err(|problem| ToolOutput::error(problem.message(path, &old, old_text)))?;
        Ok(Planned {
            path,
            old,
            new,
            old_text,
            new_text,
        })
    }

    fn run(&self, context: &ToolContext, arguments: &Value) -> Result<String, ToolOutput> {
        let planned = self.plan(arguments)?;
        write_unless_stopped(&self.jail, context, planned.path, planned.new.as_bytes())?;
        Ok(format!(
            "edited `{}`: replaced 1 occurrence ({} → {} characters)",
            planned.path,
            planned.old_text.chars().count(),
            planned.new_text.chars().count()
        ))
    }

    fn preview_of(&self, arguments: &Value) -> Option<EffectPreview> {
        let Arguments { path, .. } = parse(arguments).ok()?;
        // Fingerprint first: a change while we read makes the stored fingerprint stale,
        // which the approval check notices.
        let fingerprint = self
            .jail
            .fingerprint_with(path, self.limits.hash_max_bytes)
            .ok()?;
        let mut preview = EffectPreview {
            target: path.to_owned(),
            resolved: resolved_path(&self.jail, path),
            label: WriteLabel::Overwrite,
            fingerprint,
            scope: Some(EffectScope::Edit),
            ..Default::default()
        };
        match self.plan(arguments) {
            Ok(planned) => {
                let diff = line_diff(path, &planned.old, &planned.new);
                preview.diff = Some(cap_for_display(&diff.unified, self.limits.max_output_chars));
                (preview.added, preview.removed) = (Some(diff.added), Some(diff.removed));
            }
            // Replacing a text with itself changes nothing when the text is there once;
            // otherwise the call fails for the reason the tool gives.
            Err(output) if self.changes_nothing(arguments) => {
                preview.no_change = true;
                preview.diff = Some(String::new());
                preview.notice = Some(match output {
                    ToolOutput::Error { message } => message,
                    _ => "nothing to change".to_owned(),
                });
                (preview.added, preview.removed) = (Some(0), Some(0));
            }
            Err(output) => preview.failing(&output),
        }
        Some(preview)
    }

    /// Whether the call replaces a text that occurs exactly once with itself.
    fn changes_nothing(&self, arguments: &Value) -> bool {
        let Ok(Arguments {
            path,
            old_text,
            new_text,
        }) = parse(arguments)
        else {
            return false;
        };
        old_text == new_text
            && read_whole_text(&self.jail, path, self.limits.max_read_bytes)
                .is_ok_and(|content| replace_unique(&content, old_text, "").is_ok())
    }
}

impl SyncTool for EditFile {
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
            Some(path) => file_snapshot(&self.jail, ChangeRoot::Workspace, &path, true, keep_up_to),
            None => Vec::new(),
        }
    }

    fn call(&self, context: &ToolContext, arguments: &Value) -> ToolOutput {
        respond(self.run(context, arguments))
    }
}

/// Why an exact replacement cannot apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Problem {
    /// `old_text` does not occur.
    Absent,
    /// `old_text` occurs more than once (overlapping occurrences counted).
    Ambiguous,
    /// Replacing changes nothing.
    NoChange,
}

impl Problem {
    fn message(self, path: &str, content: &str, old_text: &str) -> String {
        match self {
            Self::Absent => {
                let mut message = format!(
                    "old_text was not found in `{path}`; it must match the file exactly, \
                     including whitespace and indentation — read the file again and copy the text"
                );
                if content.contains("\r\n") && old_text.contains('\n') && !old_text.contains("\r\n")
                {
                    message.push_str(" (note: the file uses CRLF line endings)");
                }
                message
            }
            Self::Ambiguous => format!(
                "old_text matches more than one place in `{path}`; it must match exactly one \
                 — include more surrounding lines to make it unique"
            ),
            Self::NoChange => "old_text and new_text are identical; nothing to change".to_owned(),
        }
    }
}

/// `content` with the single occurrence of `old_text` replaced by `new_text`.
fn replace_unique(content: &str, old_text: &str, new_text: &str) -> Result<String, Problem> {
    if old_text == new_text {
        return Err(Problem::NoChange);
    }
    let mut starts = Vec::with_capacity(2);
    let mut from = 0;
    // Two occurrences are enough to know the edit is ambiguous; stopping there keeps a
    // pathological text (a long run of one character) linear.
    while starts.len() < 2
        && let Some(found) = content.get(from..).and_then(|rest| rest.find(old_text))
    {
        let start = from + found;
        starts.push(start);
        // Step one character, so overlapping occurrences are counted too.
        let step = content[start..].chars().next().map_or(1, char::len_utf8);
        from = start + step;
    }
    match starts.as_slice() {
        [] => Err(Problem::Absent),
        [start] => {
            let end = start + old_text.len();
            Ok(format!(
                "{}{new_text}{}",
                &content[..*start],
                &content[end..]
            ))
        }
        _ => Err(Problem::Ambiguous),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_arguments_match_the_schema() {
        crate::args_check::assert_matches::<Arguments<'static>>("edit_file");
    }

    #[test]
    fn replaces_the_single_occurrence() {
        assert_eq!(replace_unique("a b c", "b", "B"), Ok("a B c".to_owned()));
        assert_eq!(
            replace_unique("héllo wörld", "wörld", "all"),
            Ok("héllo all".to_owned())
        );
        assert_eq!(
            replace_unique("keep\ndrop\n", "drop\n", ""),
            Ok("keep\n".to_owned())
        );
    }

    #[test]
    fn absent_ambiguous_and_no_change() {
        assert_eq!(replace_unique("abc", "x", "y"), Err(Problem::Absent));
        assert_eq!(replace_unique("x x x", "x", "y"), Err(Problem::Ambiguous));
        // Overlapping occurrences make the target ambiguous too.
        assert_eq!(replace_unique("aaa", "aa", "b"), Err(Problem::Ambiguous));
        assert_eq!(replace_unique("abc", "b", "b"), Err(Problem::NoChange));
    }

    #[test]
    fn messages_say_what_to_do() {
        let absent = Problem::Absent.message("f.txt", "a\r\nb\r\n", "a\nb");
        assert!(absent.contains("not found in `f.txt`"), "{absent}");
        assert!(absent.contains("CRLF"), "{absent}");
        let ambiguous = Problem::Ambiguous.message("f.txt", "", "x");
        assert_eq!(
            ambiguous,
            "old_text matches more than one place in `f.txt`; it must match exactly one — include more surrounding lines to make it unique"
        );
    }
}
