//! `make_dir`: creates a folder and its missing parents.
//!
//! ## What it does
//! Creates the folder `path`, and every missing folder above it, through the jail's
//! root handle (links inside the workspace along the way are followed, as for a write).
//! A path where something already exists — a folder too — is an ordinary error: the
//! call is meant to create something.
//!
//! Its [`pp_agent::Tool::preview`] shows the approval card the label `create_folder`,
//! the path as written and resolved, and (as `notice`) the parents it creates too. The
//! change log records one `folder_created` per folder created; a revert removes a
//! folder that is still empty.
//!
//! ## Capabilities needed
//! `file:create` (requires approval), risk medium; `path` is a path parameter, checked
//! by the jail by the policy and again when the folders are created.
//!
//! ## Example
//! ```json
//! {"path": "invoices/2026"}
//! ```
//! ```text
//! created folder `invoices/2026`
//! ```

use std::sync::Arc;

use pp_agent::ToolContext;
use pp_gate::{Jail, JailError};
use pp_types::{
    Capability, ChangeRoot, EffectPreview, FileOp, Prior, Risk, Snapshot, TargetState, ToolOutput,
    ToolSpec, WriteLabel,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::common::{jail_error, resolved_path, respond};
use super::entries::unless_stopped;
use crate::args::parse;
use crate::blocking::SyncTool;

/// What the model reads about the tool.
const DESCRIPTION: &str = "Create a folder in the workspace, with any missing parent \
folders. An existing path is an error. Needs the operator's approval.";

/// The arguments of `make_dir`.
#[derive(Debug, Deserialize)]
pub(crate) struct Arguments<'a> {
    /// The folder to create, relative to the workspace root.
    pub(crate) path: &'a str,
}

/// The `make_dir` tool.
pub(crate) struct MakeDir {
    /// The only way to the filesystem.
    jail: Arc<Jail>,
    spec: ToolSpec,
}

impl MakeDir {
    pub(crate) fn new(jail: Arc<Jail>) -> Self {
        let spec = ToolSpec {
            name: "make_dir".to_owned(),
            description: DESCRIPTION.to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "minLength": 1,
                        "description": "Folder to create, relative to the workspace root"
                    }
                },
                "required": ["path"],
                "additionalProperties": false
            }),
            capability: Some(Capability::new("file:create")),
            risk: Risk::Medium,
            path_params: vec!["path".to_owned()],
            root: pp_types::PathRoot::Workspace,
        };
        Self { jail, spec }
    }

    /// The folders the call would create, outermost first, or the error it would give.
    fn missing(&self, path: &str) -> Result<Vec<String>, ToolOutput> {
        self.jail
            .missing_dirs(path)
            .map(|folders| {
                folders
                    .iter()
                    .map(|folder| folder.to_string_lossy().into_owned())
                    .collect()
            })
            .map_err(|error| refusal(path, &error))
    }

    fn run(&self, context: &ToolContext, arguments: &Value) -> Result<String, ToolOutput> {
        let Arguments { path } = parse(arguments)?;
        self.missing(path)?;
        unless_stopped(context, "created")?;
        let created = self
            .jail
            .create_dir_all(path)
            .map_err(|error| refusal(path, &error))?;
        let mut text = format!("created folder `{path}`");
        if created.len() > 1 {
            let parents: Vec<String> = created[..created.len() - 1]
                .iter()
                .map(|folder| format!("`{}`", folder.to_string_lossy()))
                .collect();
            text.push_str(&format!(" (and its parents {})", parents.join(", ")));
        }
        Ok(text)
    }

    /// Whether a folder (not a file, not a link to one) is at `path`.
    fn is_folder(&self, path: &str) -> bool {
        self.jail
            .probe_entry(path)
            .is_ok_and(|probe| probe.kind == Some(pp_gate::EntryKind::Dir))
    }

    /// The card's and the stale check's fingerprint: which folders are missing.
    fn fingerprint(&self, path: &str) -> String {
        match self.missing(path) {
            Ok(folders) => format!("absent; creates {}", folders.join(", ")),
            Err(_) => "exists".to_owned(),
        }
    }

    fn preview_of(&self, arguments: &Value) -> Option<EffectPreview> {
        let Arguments { path } = parse(arguments).ok()?;
        let folders = match self.jail.missing_dirs(path) {
            Ok(folders) => folders
                .iter()
                .map(|folder| folder.to_string_lossy().into_owned())
                .collect::<Vec<_>>(),
            Err(error) => {
                let mut preview = EffectPreview {
                    target: path.to_owned(),
                    resolved: resolved_path(&self.jail, path),
                    label: WriteLabel::CreateFolder,
                    fingerprint: self.fingerprint(path),
                    ..Default::default()
                };
                // A folder already there is what the call asks for; anything else (a
                // file in the way, a refusal) is why it would fail.
                match &error {
                    JailError::AlreadyExists { .. } if self.is_folder(path) => {
                        preview.no_change = true;
                        preview.notice = Some(format!("the folder `{path}` already exists"));
                    }
                    _ => preview.failing(&refusal(path, &error)),
                }
                return Some(preview);
            }
        };
        let parents = &folders[..folders.len().saturating_sub(1)];
        Some(EffectPreview {
            target: path.to_owned(),
            resolved: resolved_path(&self.jail, path),
            label: WriteLabel::CreateFolder,
            notice: (!parents.is_empty()).then(|| {
                format!(
                    "also creates {}",
                    parents
                        .iter()
                        .map(|folder| format!("`{folder}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }),
            fingerprint: self.fingerprint(path),
            ..Default::default()
        })
    }
}

/// What the model reads when the folder cannot be created.
fn refusal(path: &str, error: &JailError) -> ToolOutput {
    match error {
        JailError::AlreadyExists { .. } => {
            ToolOutput::error(format!("`{path}` already exists; nothing was created"))
        }
        JailError::NotADirectory { .. } => ToolOutput::error(format!(
            "a part of `{path}` is a file, not a folder; nothing was created"
        )),
        other => jail_error(other),
    }
}

impl SyncTool for MakeDir {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn describe(&self, _context: &ToolContext, arguments: &Value) -> Option<EffectPreview> {
        self.preview_of(arguments)
    }

    fn state(&self, _context: &ToolContext, arguments: &Value) -> Option<TargetState> {
        let Arguments { path } = parse(arguments).ok()?;
        Some(TargetState {
            identity: resolved_path(&self.jail, path).unwrap_or_else(|| path.to_owned()),
            fingerprint: self.fingerprint(path),
        })
    }

    /// One entry per folder the call creates, each absent now.
    fn snapshot(
        &self,
        _context: &ToolContext,
        arguments: &Value,
        _keep_up_to: u64,
    ) -> Vec<Snapshot> {
        let Ok(Arguments { path }) = parse(arguments) else {
            return Vec::new();
        };
        self.missing(path)
            .unwrap_or_default()
            .into_iter()
            .map(|folder| Snapshot {
                root: ChangeRoot::Workspace,
                path: folder,
                partial: false,
                op: FileOp::CreateFolder,
                prior: Prior::Absent,
            })
            .collect()
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
        crate::args_check::assert_matches::<Arguments<'static>>("make_dir");
    }
}
