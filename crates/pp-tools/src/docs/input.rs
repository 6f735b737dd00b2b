//! Reading one document through the jail: its bytes (capped) and its format.

use pp_docs::Format;
use pp_gate::Jail;
use pp_types::{Capability, PathRoot, Risk, ToolOutput, ToolSpec};

use crate::files::common::jail_error;

/// The bytes of the workspace file `path` and the format its extension names. A path
/// the jail refuses is a denial; an unknown extension, a missing file or one larger than
/// `max_bytes` an ordinary error that says so (nothing is parsed then).
pub(crate) fn read_document(
    jail: &Jail,
    path: &str,
    max_bytes: u64,
) -> Result<(Vec<u8>, Format), ToolOutput> {
    let content = jail
        .read(path, max_bytes)
        .map_err(|error| jail_error(&error))?;
    let Some(format) = Format::from_path(path) else {
        let known: Vec<&str> = Format::ALL.iter().map(|format| format.name()).collect();
        return Err(ToolOutput::error(format!(
            "`{path}`: unknown document format (by its extension); readable formats: {}",
            known.join(", ")
        )));
    };
    if content.truncated {
        return Err(ToolOutput::error(format!(
            "`{path}` is {} bytes, larger than the {max_bytes}-byte limit for documents; \
             nothing was parsed",
            content.size
        )));
    }
    Ok((content.bytes, format))
}

/// The tool error for a document the parser could not read: the path and the reason.
pub(crate) fn docs_error(path: &str, error: &pp_docs::DocsError) -> ToolOutput {
    ToolOutput::error(format!("`{path}`: {error}"))
}

/// The spec every document tool shares: `file:read`, low risk, `path` a workspace path.
pub(crate) fn read_spec(name: &str, description: &str, parameters: serde_json::Value) -> ToolSpec {
    ToolSpec {
        name: name.to_owned(),
        description: description.to_owned(),
        parameters,
        capability: Some(Capability::new("file:read")),
        risk: Risk::Low,
        path_params: vec!["path".to_owned()],
        root: PathRoot::Workspace,
    }
}
