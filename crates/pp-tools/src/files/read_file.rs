//! `read_file`: reads a text file, or a window of its lines.
//!
//! ## What it does
//! Returns the text of a workspace file exactly as stored, from line `offset` (0-based,
//! default 0) for at most `limit` lines (default: as many as fit). Only the first
//! [`super::Limits::max_read_bytes`] bytes of a file are read, and at most
//! [`super::Limits::max_output_chars`] characters are returned. Whenever the output stops
//! before the end of the file it ends with a `[truncated: …]` marker giving the lines
//! shown and the `offset` to continue from. A file with a NUL byte in its first 8 KiB, or
//! that is not UTF-8, is refused as binary with a pointer to `extract_document`.
//!
//! ## Capabilities needed
//! `file:read` (allowed without approval), risk low; `path` is a path parameter, checked
//! by the jail both by the policy and again when the file is opened.
//!
//! ## Example
//! ```json
//! {"path": "notes/log.txt", "offset": 100, "limit": 50}
//! ```
//! ```text
//! …lines 101 to 150 of the file…
//! [truncated: showing lines 101-150 of 900; call read_file with offset=150 to read more]
//! ```

use std::sync::Arc;

use pp_agent::ToolContext;
use pp_gate::Jail;
use pp_types::{Capability, Risk, ToolOutput, ToolSpec};
use serde::Deserialize;
use serde_json::{Value, json};

use super::Limits;
use super::common::{
    binary_error, decode_text, jail_error, prefix_chars, respond, truncation_marker,
};
use crate::args::{AtLeast, parse};
use crate::blocking::SyncTool;

/// What the model reads about the tool.
const DESCRIPTION: &str = "Read a UTF-8 text file in the workspace. Returns the text \
exactly as stored. For long files pass `offset` (first line, 0-based) and `limit` (number \
of lines); when output is cut, a final `[truncated: …]` line says which offset to use \
next. Binary files are refused; use extract_document for PDF, DOCX, XLSX and similar.";

/// The arguments of `read_file`.
#[derive(Debug, Deserialize)]
pub(crate) struct Arguments<'a> {
    /// The file, relative to the workspace root.
    pub(crate) path: &'a str,
    /// The first line to return, 0-based (default 0).
    pub(crate) offset: Option<AtLeast<0>>,
    /// The most lines to return (default: as many as fit).
    pub(crate) limit: Option<AtLeast<1>>,
}

/// The `read_file` tool.
pub(crate) struct ReadFile {
    /// The only way to the filesystem.
    jail: Arc<Jail>,
    limits: Limits,
    spec: ToolSpec,
}

impl ReadFile {
    pub(crate) fn new(jail: Arc<Jail>, limits: Limits) -> Self {
        let spec = ToolSpec {
            name: "read_file".to_owned(),
            description: DESCRIPTION.to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "minLength": 1,
                        "description": "File to read, relative to the workspace root"
                    },
                    "offset": {
                        "type": "integer",
                        "minimum": 0,
                        "description": "First line to return, 0-based (default 0)"
                    },
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "Largest number of lines to return (default: as many as fit)"
                    }
                },
                "required": ["path"],
                "additionalProperties": false
            }),
            capability: Some(Capability::new("file:read")),
            risk: Risk::Low,
            path_params: vec!["path".to_owned()],
            root: pp_types::PathRoot::Workspace,
        };
        Self { jail, limits, spec }
    }

    fn run(&self, arguments: &Value) -> Result<String, ToolOutput> {
        let Arguments {
            path,
            offset,
            limit,
        } = parse(arguments)?;
        let offset = offset.map_or(0, |offset| offset.0);
        let limit = limit.map_or(usize::MAX, |limit| limit.0);

        let content = self
            .jail
            .read(path, self.limits.max_read_bytes)
            .map_err(|err| jail_error(&err))?;
        let text = decode_text(&content.bytes, content.truncated)
            .map_err(|why| binary_error(path, content.size, why))?;
        window(
            text,
            Window {
                offset,
                limit,
                max_chars: self.limits.max_output_chars,
                byte_cap: content
                    .truncated
                    .then_some((content.bytes.len(), content.size)),
            },
        )
        .map_err(ToolOutput::error)
    }
}

impl SyncTool for ReadFile {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(&self, _context: &ToolContext, arguments: &Value) -> ToolOutput {
        respond(self.run(arguments))
    }
}

/// Which part of the text to return.
#[derive(Debug, Clone, Copy)]
struct Window {
    /// First line, 0-based.
    offset: usize,
    /// Largest number of lines.
    limit: usize,
    /// Largest number of characters of file text in the output.
    max_chars: usize,
    /// `Some((bytes_read, file_size))` when the file was larger than the read cap.
    byte_cap: Option<(usize, u64)>,
}

/// The requested lines of `text`, ending with a truncation marker whenever the output
/// stops before the end of the file; an error message when `offset` is past the end.
fn window(text: &str, window: Window) -> Result<String, String> {
    let mut lines: Vec<&str> = text.split_inclusive('\n').collect();
    // A line cut by the byte cap is not shown: it is not the line in the file.
    if window.byte_cap.is_some() && lines.last().is_some_and(|line| !line.ends_with('\n')) {
        lines.pop();
    }
    let total = lines.len();
    let total_text = match window.byte_cap {
        Some(_) => format!("at least {total}"),
        None => total.to_string(),
    };
    if total == 0 && window.offset == 0 {
        return Ok(match window.byte_cap {
            Some((read, size)) => format!(
                "{}\n",
                truncation_marker(&format!(
                    "the first line is longer than the {read} bytes read_file reads of this {size}-byte file"
                ))
            ),
            None => "[empty file]\n".to_owned(),
        });
    }
    if window.offset >= total {
        return Err(format!(
            "offset {} is past the end of the file ({total_text} lines; offsets start at 0)",
            window.offset
        ));
    }

    let mut out = String::new();
    let mut chars = 0;
    let mut next = window.offset;
    let mut cut_line = false;
    for line in lines.iter().skip(window.offset).take(window.limit) {
        let line_chars = line.chars().count();
        if chars + line_chars > window.max_chars {
            if next == window.offset {
                // Not even the first line fits: show its start rather than nothing.
                let (start, _) = prefix_chars(line, window.max_chars);
                out.push_str(start);
                cut_line = true;
                next += 1;
            }
            break;
        }
        out.push_str(line);
        chars += line_chars;
        next += 1;
    }

    let more_lines = next < total;
    if !more_lines && !cut_line && window.byte_cap.is_none() {
        return Ok(out);
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    let shown = format!("showing lines {}-{next} of {total_text}", window.offset + 1);
    let detail = if cut_line {
        format!(
            "line {next} is longer than {} characters and was cut; {shown}",
            window.max_chars
        )
    } else {
        shown
    };
    let detail = match (more_lines, window.byte_cap) {
        (true, _) => format!("{detail}; call read_file with offset={next} to read more"),
        (false, Some((read, size))) => format!(
            "{detail}; read_file reads only the first {read} bytes of this {size}-byte file"
        ),
        (false, None) => detail,
    };
    out.push_str(&truncation_marker(&detail));
    out.push('\n');
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_arguments_match_the_schema() {
        crate::args_check::assert_matches::<Arguments<'static>>("read_file");
    }

    fn view(text: &str, offset: usize, limit: usize, max_chars: usize) -> Result<String, String> {
        window(
            text,
            Window {
                offset,
                limit,
                max_chars,
                byte_cap: None,
            },
        )
    }

    const TEXT: &str = "one\ntwo\nthree\nfour\n";

    #[test]
    fn whole_file_is_returned_verbatim() {
        assert_eq!(view(TEXT, 0, usize::MAX, 1000), Ok(TEXT.to_owned()));
        assert_eq!(
            view("no newline", 0, usize::MAX, 1000),
            Ok("no newline".to_owned())
        );
        assert_eq!(
            view("", 0, usize::MAX, 1000),
            Ok("[empty file]\n".to_owned())
        );
    }

    #[test]
    fn line_window_with_next_offset() {
        assert_eq!(
            view(TEXT, 1, 2, 1000),
            Ok("two\nthree\n[truncated: showing lines 2-3 of 4; call read_file with offset=3 to read more]\n".to_owned())
        );
        // The last lines need no marker.
        assert_eq!(view(TEXT, 2, 10, 1000), Ok("three\nfour\n".to_owned()));
    }

    #[test]
    fn offset_past_the_end_is_an_error() {
        assert_eq!(
            view(TEXT, 4, 1, 1000),
            Err("offset 4 is past the end of the file (4 lines; offsets start at 0)".to_owned())
        );
    }

    #[test]
    fn character_cap_stops_at_a_line_boundary() {
        assert_eq!(
            view(TEXT, 0, usize::MAX, 9),
            Ok("one\ntwo\n[truncated: showing lines 1-2 of 4; call read_file with offset=2 to read more]\n".to_owned())
        );
    }

    #[test]
    fn an_overlong_first_line_is_cut() {
        assert_eq!(
            view("abcdefgh\nx\n", 0, usize::MAX, 3),
            Ok("abc\n[truncated: line 1 is longer than 3 characters and was cut; showing lines 1-1 of 2; call read_file with offset=1 to read more]\n".to_owned())
        );
    }

    #[test]
    fn byte_cap_drops_the_partial_last_line_and_says_so() {
        let text = "one\ntwo\nthr";
        assert_eq!(
            window(text, Window { offset: 0, limit: usize::MAX, max_chars: 1000, byte_cap: Some((11, 50)) }),
            Ok("one\ntwo\n[truncated: showing lines 1-2 of at least 2; read_file reads only the first 11 bytes of this 50-byte file]\n".to_owned())
        );
    }
}
