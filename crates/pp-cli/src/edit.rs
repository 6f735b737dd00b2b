//! `e` at an approval card: the call's arguments as a text a person can edit in their
//! own editor, and that text read back into arguments.
//!
//! The document always starts with a TOML header between two `+++` lines holding the
//! arguments that are not text (the path, flags). Below it:
//! - `write_file`: the file's new content, exactly;
//! - `edit_file`: `old_text`, read-only, then [`MARKER`], then `new_text` to edit;
//! - any other tool: nothing (every argument is in the header).
//!
//! Only the first two `+++` lines are the header's, so content whose own first line is
//! `+++` reads back as it was. The editor command runs through the shell
//! (`sh -c '$EDITOR "$1"'`), so `code --wait` and `vim -u NONE` work as editors.

use std::io::Write as _;

use anyhow::Context as _;
use serde_json::{Map, Value};
use thiserror::Error;

use crate::env;

/// The line between `edit_file`'s read-only `old_text` and the editable `new_text`.
pub(crate) const MARKER: &str =
    "=== PocketPilot: the text above is old_text (read-only); edit new_text below ===";

/// The header's first and last line.
const FENCE: &str = "+++";

/// Why an edited document does not give arguments back.
#[derive(Debug, Error, PartialEq, Eq)]
pub(crate) enum EditError {
    /// The header's `+++` lines are missing.
    #[error(
        "the edited text does not start with the `+++` header (its first line and the line \
         ending it must be exactly `+++`)"
    )]
    NoHeader,
    /// The header is not TOML.
    #[error("the header between the `+++` lines is not valid TOML: {0}")]
    Header(String),
    /// A text argument moved into the header.
    #[error("`{0}` is the text below the header; remove it from the header")]
    TextInHeader(&'static str),
    /// `edit_file`'s read-only part was changed, or its marker line removed.
    #[error(
        "old_text above the marker line is read-only and the marker line must stay; edit \
         new_text below the marker"
    )]
    OldTextChanged,
    /// Text below the header of a tool that takes none.
    #[error("this tool takes no text below the header; put every argument in the header")]
    UnexpectedBody,
    /// Arguments that TOML cannot hold (a `null`, or not an object).
    #[error("these arguments cannot be edited as TOML ({0}); use `d` to see them")]
    NotToml(String),
}

/// The text argument the body holds for `tool`, if any.
fn body_key(tool: &str) -> Option<&'static str> {
    match tool {
        "write_file" => Some("content"),
        "edit_file" => Some("new_text"),
        _ => None,
    }
}

/// The document to edit for `tool` called with `arguments`.
pub(crate) fn document(tool: &str, arguments: &Value) -> Result<String, EditError> {
    let object = arguments
        .as_object()
        .ok_or_else(|| EditError::NotToml("the arguments are not an object".to_owned()))?;
    let body = body_key(tool).filter(|key| object.get(*key).is_some_and(Value::is_string));
    let mut header = object.clone();
    let mut text = String::new();
    if let Some(key) = body {
        header.remove(key);
        if key == "new_text"
            && let Some(Value::String(old)) = header.remove("old_text")
        {
            text.push_str(&old);
            if !old.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(MARKER);
            text.push('\n');
        }
        if let Some(Value::String(value)) = object.get(key) {
            text.push_str(value);
        }
    }
    let header = toml::to_string(&header).map_err(|error| EditError::NotToml(error.to_string()))?;
    Ok(format!("{FENCE}\n{header}{FENCE}\n{text}"))
}

/// The arguments an edited `document` gives, for the call `original` (whose read-only
/// parts it checks).
pub(crate) fn parse(tool: &str, original: &Value, edited: &str) -> Result<Value, EditError> {
    let rest = edited
        .strip_prefix(FENCE)
        .and_then(|rest| {
            rest.strip_prefix('\n')
                .or_else(|| rest.strip_prefix("\r\n"))
        })
        .ok_or(EditError::NoHeader)?;
    let (header, body) = split_at_fence(rest).ok_or(EditError::NoHeader)?;
    let table: toml::Table =
        toml::from_str(header).map_err(|error| EditError::Header(error.to_string()))?;
    let mut arguments: Map<String, Value> = serde_json::to_value(table)
        .ok()
        .and_then(|value| value.as_object().cloned())
        .ok_or_else(|| EditError::Header("not a table".to_owned()))?;
    let key = body_key(tool).filter(|key| original.get(*key).is_some_and(Value::is_string));
    let Some(key) = key else {
        if !body.trim().is_empty() {
            return Err(EditError::UnexpectedBody);
        }
        return Ok(Value::Object(arguments));
    };
    if arguments.contains_key(key) {
        return Err(EditError::TextInHeader(key));
    }
    let mut text = body;
    if key == "new_text" {
        if arguments.contains_key("old_text") {
            return Err(EditError::TextInHeader("old_text"));
        }
        if let Some(old) = original.get("old_text").and_then(Value::as_str) {
            let mut above = old.to_owned();
            if !old.ends_with('\n') {
                above.push('\n');
            }
            above.push_str(MARKER);
            above.push('\n');
            text = body.strip_prefix(&above).ok_or(EditError::OldTextChanged)?;
            arguments.insert("old_text".to_owned(), Value::String(old.to_owned()));
        }
    }
    // Editors end the file with a newline; one the original text did not have is theirs.
    let before = original.get(key).and_then(Value::as_str).unwrap_or("");
    let text = match text.strip_suffix('\n') {
        Some(trimmed) if !before.ends_with('\n') => trimmed,
        _ => text,
    };
    arguments.insert(key.to_owned(), Value::String(text.to_owned()));
    Ok(Value::Object(arguments))
}

/// Splits after the header's closing `+++` line: (header, body).
fn split_at_fence(rest: &str) -> Option<(&str, &str)> {
    let mut start = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end_matches(['\n', '\r']) == FENCE {
            return Some((&rest[..start], &rest[start + line.len()..]));
        }
        start += line.len();
    }
    None
}

/// Opens `$VISUAL`/`$EDITOR` (through the shell) on the call's document; the edited
/// arguments, or `None` when they did not change.
#[expect(
    clippy::disallowed_methods,
    reason = "reads back a temporary file this command created, not a model-supplied path"
)]
pub(crate) fn edit_arguments(tool: &str, arguments: &Value) -> anyhow::Result<Option<Value>> {
    let text = document(tool, arguments)?;
    let mut file = tempfile::Builder::new()
        .prefix("pocketpilot-call-")
        .suffix(".txt")
        .tempfile()
        .context("cannot create a temporary file for editing")?;
    file.write_all(text.as_bytes())?;
    file.flush()?;
    run_editor(file.path(), "nothing was changed")?;
    let edited = std::fs::read_to_string(file.path())?;
    let edited = parse(tool, arguments, &edited)?;
    Ok((&edited != arguments).then_some(edited))
}

/// Runs `$VISUAL`/`$EDITOR` on `path` through the shell (`sh -c '$EDITOR "$1"'`), so an
/// editor setting with arguments (`code --wait`) works; `unchanged` ends the error when
/// the editor fails or cannot be found.
pub(crate) fn run_editor(path: &std::path::Path, unchanged: &str) -> anyhow::Result<()> {
    let editor = env::editor();
    let editor = editor.to_string_lossy();
    // `$1` keeps the path out of the command's words; the editor's own words are the
    // person's setting, split by the shell as any program would.
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(path)
        .status()
        .with_context(|| format!("cannot start the editor {editor}"))?;
    if status.code() == Some(127) {
        anyhow::bail!("the editor `{editor}` was not found (set VISUAL or EDITOR); {unchanged}");
    }
    if !status.success() {
        anyhow::bail!("the editor exited with {status}; {unchanged}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_write_round_trips_and_content_starting_with_the_fence_is_kept() {
        let arguments = json!({"path": "notes.md", "content": "+++\ntitle = 1\n+++\nbody\n"});
        let text = document("write_file", &arguments).unwrap();
        assert_eq!(
            text,
            "+++\npath = \"notes.md\"\n+++\n+++\ntitle = 1\n+++\nbody\n"
        );
        assert_eq!(parse("write_file", &arguments, &text).unwrap(), arguments);
        let edited = text.replace("body", "changed");
        assert_eq!(
            parse("write_file", &arguments, &edited).unwrap()["content"],
            "+++\ntitle = 1\n+++\nchanged\n"
        );
    }

    #[test]
    fn the_header_edits_the_path_and_a_newline_the_editor_added_is_dropped() {
        let arguments = json!({"path": "a.txt", "content": "no newline"});
        let text = document("write_file", &arguments).unwrap();
        let edited = format!("{}\n", text.replace("a.txt", "b.txt"));
        assert_eq!(
            parse("write_file", &arguments, &edited).unwrap(),
            json!({"path": "b.txt", "content": "no newline"})
        );
    }

    #[test]
    fn an_edit_shows_old_text_read_only_above_the_marker() {
        let arguments = json!({"path": "a.txt", "old_text": "one\ntwo", "new_text": "ONE\n"});
        let text = document("edit_file", &arguments).unwrap();
        assert_eq!(
            text,
            format!("+++\npath = \"a.txt\"\n+++\none\ntwo\n{MARKER}\nONE\n")
        );
        let edited = text.replace("ONE", "Uno");
        assert_eq!(
            parse("edit_file", &arguments, &edited).unwrap(),
            json!({"path": "a.txt", "old_text": "one\ntwo", "new_text": "Uno\n"})
        );
        let touched = text.replace("two", "deux");
        assert_eq!(
            parse("edit_file", &arguments, &touched),
            Err(EditError::OldTextChanged)
        );
        let no_marker = text.replace(MARKER, "");
        assert_eq!(
            parse("edit_file", &arguments, &no_marker),
            Err(EditError::OldTextChanged)
        );
    }

    #[test]
    fn other_tools_are_all_header_and_bad_documents_are_refused() {
        let arguments = json!({"path": "a.txt", "destination": "b.txt", "overwrite": false});
        let text = document("move_file", &arguments).unwrap();
        assert!(
            text.starts_with("+++\n") && text.ends_with("+++\n"),
            "{text}"
        );
        assert_eq!(parse("move_file", &arguments, &text).unwrap(), arguments);
        assert_eq!(
            parse("move_file", &arguments, &format!("{text}stray")),
            Err(EditError::UnexpectedBody)
        );
        assert_eq!(
            parse("move_file", &arguments, "path = 1\n"),
            Err(EditError::NoHeader)
        );
        assert!(matches!(
            parse("move_file", &arguments, "+++\npath = \n+++\n"),
            Err(EditError::Header(_))
        ));
        let write = json!({"path": "a", "content": "x"});
        assert_eq!(
            parse("write_file", &write, "+++\ncontent = \"y\"\n+++\nx"),
            Err(EditError::TextInHeader("content"))
        );
        assert!(matches!(
            document("move_file", &json!({"path": null})),
            Err(EditError::NotToml(_))
        ));
    }
}
