//! `extract_document`: a document's text in reading order.
//!
//! ## What it does
//! Reads a PDF, DOCX, XLSX, PPTX, HTML, Markdown, TXT, CSV, JSON or XML file of the
//! workspace through the jail (at most [`DocsSettings::max_input_bytes`]; a larger file
//! is refused unparsed) and returns `{format, pages, title, encoding, text, truncated}`
//! as JSON. PDF text follows the visual layout (lines top to bottom, spans left to
//! right, whatever order the file drew them in); Office files come as Markdown (tables,
//! headers and footers, speaker notes); XLSX sheets and PPTX slides count as pages;
//! TXT/CSV/HTML in GBK or GB18030 are decoded. `pages` (`"3-5,9"`) selects pages;
//! `max_chars` (at most [`DocsSettings::max_output_chars`]) caps the text, with a
//! visible `[… truncated at N characters of M]` marker. The parsing runs in a child
//! process under CPU, memory, output and time limits: a hostile file costs an error.
//!
//! ## Capabilities needed
//! `file:read` (allowed without approval), risk low; `path` is a path parameter.
//!
//! ## Example
//! ```json
//! {"path": "invoices/2024-03.pdf", "pages": "1"}
//! ```
//! ```json
//! {"format":"pdf","pages":2,"title":null,"encoding":null,
//!  "text":"--- page 1 ---\n发票号码:    24112000000012345678\n…","truncated":false}
//! ```

use std::sync::Arc;

use pp_agent::ToolContext;
use pp_docs::extract::ExtractOptions;
use pp_docs::{Job, JobOutput};
use pp_gate::Jail;
use pp_types::{ToolOutput, ToolSpec};

use super::input::read_spec;
use serde::Deserialize;
use serde_json::{Value, json};

use super::input::{docs_error, read_document};
use super::settings::DocsSettings;
use crate::args::{AtLeast, parse};
use crate::blocking::SyncTool;
use crate::files::common::respond;

/// What the model reads about the tool.
const DESCRIPTION: &str = "Extract the text of a document in the workspace: PDF, DOCX, \
XLSX, PPTX, HTML, Markdown, TXT, CSV, JSON or XML. PDF text follows the page layout \
(labels and their values on one line); Office files come as Markdown with tables; XLSX \
sheets and PPTX slides count as pages. Pass `pages` like \"3-5,9\" to read part of a long \
document, and `max_chars` to cap the text (a final `[… truncated …]` line shows a cut). \
Returns JSON {format, pages, title, encoding, text, truncated}. No OCR: a scanned page \
says it has no text layer.";

/// The arguments of `extract_document`.
#[derive(Debug, Deserialize)]
pub(crate) struct Arguments<'a> {
    /// The document, relative to the workspace root.
    pub(crate) path: &'a str,
    /// The pages to read, like `3-5,9` (default: all).
    #[serde(borrow)]
    pub(crate) pages: Option<&'a str>,
    /// The most characters of text returned.
    pub(crate) max_chars: Option<AtLeast<1>>,
}

/// The `extract_document` tool.
pub(crate) struct ExtractDocument {
    /// The only way to the filesystem.
    jail: Arc<Jail>,
    settings: Arc<DocsSettings>,
    spec: ToolSpec,
}

impl ExtractDocument {
    pub(crate) fn new(jail: Arc<Jail>, settings: Arc<DocsSettings>) -> Self {
        let spec = read_spec(
            "extract_document",
            DESCRIPTION,
            json!({
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "minLength": 1,
                        "description": "Document to read, relative to the workspace root"
                    },
                    "pages": {
                        "type": "string",
                        "description": "Pages (PDF), sheets (XLSX) or slides (PPTX) to read, \
                                        from 1, like \"3-5,9\" (default: all)"
                    },
                    "max_chars": {
                        "type": "integer",
                        "minimum": 1,
                        "description": format!(
                            "Largest number of characters of text to return (default and \
                             maximum {})",
                            settings.max_output_chars
                        )
                    }
                },
                "required": ["path"],
                "additionalProperties": false
            }),
        );
        Self {
            jail,
            settings,
            spec,
        }
    }

    fn run(&self, context: &ToolContext, arguments: &Value) -> Result<String, ToolOutput> {
        let Arguments {
            path,
            pages,
            max_chars,
        } = parse(arguments)?;
        let max_chars = max_chars
            .map_or(self.settings.max_output_chars, |count| count.0)
            .min(self.settings.max_output_chars);
        let (bytes, format) = read_document(&self.jail, path, self.settings.max_input_bytes)?;
        let job = Job::Extract {
            format,
            options: ExtractOptions {
                pages: pages.map(str::to_owned),
                max_chars,
            },
        };
        let output = self
            .settings
            .parser
            .run_until(&job, &bytes, context.deadline, &|| context.should_stop())
            .map_err(|error| docs_error(path, &error))?;
        let JobOutput::Document(document) = output else {
            return Err(ToolOutput::error(format!(
                "`{path}`: the parser answered with something other than a document"
            )));
        };
        serde_json::to_string(&document)
            .map_err(|error| ToolOutput::error(format!("cannot encode the result: {error}")))
    }
}

impl SyncTool for ExtractDocument {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(&self, context: &ToolContext, arguments: &Value) -> ToolOutput {
        respond(self.run(context, arguments))
    }
}

#[cfg(test)]
#[allow(
    clippy::disallowed_methods,
    reason = "the tests make workspace files behind the jail's back"
)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use pp_types::Risk;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_arguments_match_the_schema() {
        crate::args_check::assert_matches::<Arguments<'static>>("extract_document");
    }

    /// A tool whose "parser" is a shell script printing `answer` (no real parsing).
    fn tool(workspace: &std::path::Path, answer: &str) -> ExtractDocument {
        let script = format!("cat >/dev/null; printf '%s' '{answer}'");
        let parser = pp_docs::Parser::new(PathBuf::from("/bin/sh"), vec!["-c".into(), script]);
        let mut settings = DocsSettings::new(parser);
        settings.max_input_bytes = 1 << 20;
        settings.max_output_chars = 500;
        ExtractDocument::new(Arc::new(Jail::new(workspace).unwrap()), Arc::new(settings))
    }

    fn call(tool: &ExtractDocument, arguments: &Value) -> ToolOutput {
        tool.call(&ToolContext::default(), arguments)
    }

    #[test]
    fn the_spec_is_a_low_risk_file_read_with_a_path_parameter() {
        let workspace = tempfile::tempdir().unwrap();
        let tool = tool(workspace.path(), "");
        let spec = tool.spec();
        assert_eq!(spec.name, "extract_document");
        assert_eq!(spec.capability.as_ref().unwrap().as_str(), "file:read");
        assert_eq!(spec.risk, Risk::Low);
        assert_eq!(spec.path_params, ["path"]);
    }

    #[test]
    fn the_parsers_document_is_returned_as_json() {
        let workspace = tempfile::tempdir().unwrap();
        std::fs::write(workspace.path().join("a.txt"), "hello").unwrap();
        let answer = r#"{"ok":{"output":"document","value":{"format":"txt","pages":1,"title":null,"encoding":"UTF-8","text":"hello","truncated":false}}}"#;
        let output = call(&tool(workspace.path(), answer), &json!({"path": "a.txt"}));
        let ToolOutput::Success { content: text } = output else {
            panic!("{output:?}");
        };
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["text"], "hello");
        assert_eq!(value["format"], "txt");
    }

    #[test]
    fn a_parser_error_names_the_file() {
        let workspace = tempfile::tempdir().unwrap();
        std::fs::write(workspace.path().join("b.pdf"), "%PDF-1.4").unwrap();
        let answer = r#"{"error":{"kind":"encrypted"}}"#;
        let output = call(&tool(workspace.path(), answer), &json!({"path": "b.pdf"}));
        assert_eq!(
            output,
            ToolOutput::error(
                "`b.pdf`: the file is encrypted; PocketPilot does not read encrypted documents"
            )
        );
    }

    #[test]
    fn a_huge_sparse_file_is_refused_before_any_parsing() {
        let workspace = tempfile::tempdir().unwrap();
        let file = std::fs::File::create(workspace.path().join("huge.pdf")).unwrap();
        file.set_len(1 << 30).unwrap();
        // The "parser" would answer with a document: it must never be asked.
        let answer = r#"{"ok":{"output":"document","value":{"format":"pdf","pages":1,"title":null,"encoding":null,"text":"parsed","truncated":false}}}"#;
        let started = std::time::Instant::now();
        let output = call(
            &tool(workspace.path(), answer),
            &json!({"path": "huge.pdf"}),
        );
        let ToolOutput::Error { message } = output else {
            panic!("{output:?}");
        };
        assert!(
            message.contains("larger than the 1048576-byte limit"),
            "{message}"
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
    }

    #[test]
    fn paths_outside_the_workspace_are_denied() {
        let workspace = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.pdf"), "%PDF").unwrap();
        let link = workspace.path().join("link.pdf");
        std::os::unix::fs::symlink(outside.path().join("secret.pdf"), &link).unwrap();
        let tool = tool(workspace.path(), "");
        let absolute = outside.path().join("secret.pdf");
        for path in ["../secret.pdf", absolute.to_str().unwrap(), "link.pdf"] {
            let output = call(&tool, &json!({"path": path}));
            assert!(
                matches!(output, ToolOutput::Denied(_)),
                "{path}: {output:?}"
            );
        }
    }

    #[test]
    fn bad_arguments_and_unknown_formats_are_clear_errors() {
        let workspace = tempfile::tempdir().unwrap();
        std::fs::write(workspace.path().join("x.exe"), "MZ").unwrap();
        let tool = tool(workspace.path(), "");
        let output = call(&tool, &json!({"path": "x.exe"}));
        assert!(
            matches!(&output, ToolOutput::Error { message } if message.contains("unknown document format")),
            "{output:?}"
        );
        let output = call(&tool, &json!({"path": "x.exe", "max_chars": 0}));
        assert!(
            matches!(&output, ToolOutput::Error { message } if message.contains("max_chars")),
            "{output:?}"
        );
    }
}
