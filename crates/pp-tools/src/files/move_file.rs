//! `move_file`: moves or renames a file or folder inside the workspace, atomically.
//!
//! ## What it does
//! Moves the entry at `from` to `to` with one `renameat` between the jail's handles on
//! the two folders (never a copy followed by a delete). A link is moved as a link. The
//! folder of `to` must exist. Something already at `to` is refused unless `overwrite`
//! is `true`, and even then a folder is never replaced (nor does a moved folder
//! replace anything); without `overwrite` the kernel itself refuses a destination that
//! appears at the last moment (`RENAME_NOREPLACE` on Linux).
//!
//! Its [`pp_agent::Tool::preview`] shows the approval card the label `move`, `from` as
//! written (`target`) and resolved, `to` as written (`destination`) and resolved, and —
//! for an overwrite of an existing file — the file it replaces (`replaces`) and its
//! size. The fingerprint covers both paths, so a change to either between the request
//! and the approval makes the approval stale.
//!
//! ## Capabilities needed
//! `file:update` (requires approval), risk high; `from` and `to` are both path
//! parameters, checked by the jail by the policy and again when the entry is moved.
//!
//! ## Example
//! ```json
//! {"from": "inbox/scan-0113.pdf", "to": "invoices/2026-01-acme.pdf"}
//! ```
//! ```text
//! moved `inbox/scan-0113.pdf` to `invoices/2026-01-acme.pdf`
//! ```

use std::sync::Arc;

use pp_agent::ToolContext;
use pp_gate::{EntryKind, Jail, JailError};
use pp_types::{
    Capability, EffectPreview, FileOp, Risk, Snapshot, TargetState, ToolOutput, ToolSpec,
    WriteLabel,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::Limits;
use super::common::{jail_error, respond};
use super::entries::{entry_fingerprint, entry_prior, resolved_entry, unless_stopped};
use crate::args::parse;
use crate::blocking::SyncTool;

/// What the model reads about the tool.
const DESCRIPTION: &str = "Move or rename a file or folder inside the workspace. The \
destination's folder must exist (create it with make_dir). An existing destination is \
refused unless overwrite is true (a folder is never replaced). Needs the operator's \
approval.";

/// The `move_file` tool.
pub(crate) struct MoveFile {
    /// The only way to the filesystem.
    jail: Arc<Jail>,
    limits: Limits,
    spec: ToolSpec,
}

/// The arguments of `move_file`.
#[derive(Debug, Clone, Copy, Deserialize)]
pub(crate) struct Arguments<'a> {
    /// The file or folder to move, relative to the workspace root.
    pub(crate) from: &'a str,
    /// Its new path, relative to the workspace root.
    pub(crate) to: &'a str,
    /// Whether to replace an existing file at `to` (default false).
    pub(crate) overwrite: Option<bool>,
}

impl MoveFile {
    pub(crate) fn new(jail: Arc<Jail>, limits: Limits) -> Self {
        let spec = ToolSpec {
            name: "move_file".to_owned(),
            description: DESCRIPTION.to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "from": {
                        "type": "string",
                        "minLength": 1,
                        "description": "File or folder to move, relative to the workspace root"
                    },
                    "to": {
                        "type": "string",
                        "minLength": 1,
                        "description": "Its new path (not the folder to move it into), relative to the workspace root"
                    },
                    "overwrite": {
                        "type": "boolean",
                        "description": "Replace an existing file at `to` (default false; a folder is never replaced)"
                    }
                },
                "required": ["from", "to"],
                "additionalProperties": false
            }),
            capability: Some(Capability::new("file:update")),
            risk: Risk::High,
            path_params: vec!["from".to_owned(), "to".to_owned()],
            root: pp_types::PathRoot::Workspace,
        };
        Self { jail, limits, spec }
    }

    fn request(arguments: &Value) -> Result<Arguments<'_>, ToolOutput> {
        parse(arguments)
    }

    /// What is at `from` and `to` now, or the error the call would give.
    fn plan(&self, request: &Arguments<'_>) -> Result<Plan, ToolOutput> {
        let Arguments {
            from,
            to,
            overwrite,
        } = *request;
        let overwrite = overwrite.unwrap_or(false);
        // The policy's check, again: a link at either end leading outside is a denial
        // even though the move itself would not follow it.
        for path in [from, to] {
            self.jail.check(path).map_err(|error| jail_error(&error))?;
        }
        let source = self
            .jail
            .probe_entry(from)
            .map_err(|error| jail_error(&error))?;
        let target = self
            .jail
            .probe_entry(to)
            .map_err(|error| jail_error(&error))?;
        let Some(kind) = source.kind else {
            return Err(ToolOutput::error(format!("`{from}` does not exist")));
        };
        if source.resolved == target.resolved {
            return Err(ToolOutput::error(format!(
                "`{from}` and `{to}` are the same path; nothing to move"
            )));
        }
        if kind == EntryKind::Dir && target.resolved.starts_with(&source.resolved) {
            return Err(ToolOutput::error(format!(
                "`{to}` is inside `{from}`; a folder cannot be moved into itself"
            )));
        }
        let replaces = match target.kind {
            None => None,
            Some(EntryKind::Dir) => {
                return Err(ToolOutput::error(format!(
                    "`{to}` is an existing folder and a move never replaces a folder; give \
                     the full new path, e.g. `{to}/<name>`"
                )));
            }
            Some(_) if kind == EntryKind::Dir => {
                return Err(ToolOutput::error(format!(
                    "`{to}` already exists; a folder is only moved to a free path"
                )));
            }
            Some(_) if !overwrite => {
                return Err(ToolOutput::error(format!(
                    "`{to}` already exists; pass \"overwrite\": true to replace it"
                )));
            }
            Some(_) => Some(target.size),
        };
        Ok(Plan {
            from: source.resolved.to_string_lossy().into_owned(),
            to: target.resolved.to_string_lossy().into_owned(),
            folder: kind == EntryKind::Dir,
            replaces,
        })
    }

    fn run(&self, context: &ToolContext, arguments: &Value) -> Result<String, ToolOutput> {
        let request = Self::request(arguments)?;
        let plan = self.plan(&request)?;
        unless_stopped(context, "moved")?;
        let Arguments {
            from,
            to,
            overwrite,
        } = request;
        let outcome = self
            .jail
            .rename(from, to, overwrite.unwrap_or(false))
            .map_err(|error| match error {
                JailError::AlreadyExists { .. } => ToolOutput::error(format!(
                    "`{to}` already exists (it appeared just now); nothing was moved"
                )),
                other => jail_error(&other),
            })?;
        let what = if plan.folder { "folder " } else { "" };
        let mut text = format!("moved {what}`{from}` to `{to}`");
        if outcome.replaced {
            text.push_str(" (the file that was there is replaced)");
        }
        Ok(text)
    }

    /// Both paths' entry fingerprints: the card's and the stale check's.
    fn fingerprint(&self, from: &str, to: &str) -> Option<String> {
        let hash_max = self.limits.hash_max_bytes;
        let from = entry_fingerprint(&self.jail, from, hash_max)?;
        let to = entry_fingerprint(&self.jail, to, hash_max)?;
        Some(format!("from: {from}; to: {to}"))
    }

    fn preview_of(&self, arguments: &Value) -> Option<EffectPreview> {
        let request = Self::request(arguments).ok()?;
        // Fingerprint first: a change while we look makes it stale, which is noticed.
        let fingerprint = self.fingerprint(request.from, request.to)?;
        let plan = match self.plan(&request) {
            Ok(plan) => plan,
            Err(output) => {
                let mut preview = EffectPreview {
                    target: request.from.to_owned(),
                    resolved: resolved_entry(&self.jail, request.from),
                    label: WriteLabel::Move,
                    fingerprint,
                    destination: Some(request.to.to_owned()),
                    destination_resolved: resolved_entry(&self.jail, request.to),
                    ..Default::default()
                };
                preview.failing(&output);
                return Some(preview);
            }
        };
        Some(EffectPreview {
            target: request.from.to_owned(),
            resolved: Some(plan.from),
            label: WriteLabel::Move,
            notice: plan
                .folder
                .then(|| "moves a folder with everything in it".to_owned()),
            fingerprint,
            destination: Some(request.to.to_owned()),
            destination_resolved: Some(plan.to.clone()),
            replaces: plan.replaces.map(|_| plan.to),
            size: plan.replaces,
            ..Default::default()
        })
    }
}

/// A move that can happen.
struct Plan {
    /// `from` resolved.
    from: String,
    /// `to` resolved.
    to: String,
    /// Whether a folder moves.
    folder: bool,
    /// Bytes of the file the move replaces, if it replaces one.
    replaces: Option<u64>,
}

impl SyncTool for MoveFile {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn describe(&self, _context: &ToolContext, arguments: &Value) -> Option<EffectPreview> {
        self.preview_of(arguments)
    }

    fn state(&self, _context: &ToolContext, arguments: &Value) -> Option<TargetState> {
        let request = Self::request(arguments).ok()?;
        let identity = format!(
            "{} -> {}",
            resolved_entry(&self.jail, request.from).unwrap_or_else(|| request.from.to_owned()),
            resolved_entry(&self.jail, request.to).unwrap_or_else(|| request.to.to_owned())
        );
        let fingerprint = self
            .fingerprint(request.from, request.to)
            .unwrap_or_else(|| "unavailable".to_owned());
        Some(TargetState {
            identity,
            fingerprint,
        })
    }

    /// The destination before the move: nothing, or the file an overwrite replaces (a
    /// revert moves the entry back and restores it).
    fn snapshot(
        &self,
        _context: &ToolContext,
        arguments: &Value,
        keep_up_to: u64,
    ) -> Vec<Snapshot> {
        let Ok(request) = Self::request(arguments) else {
            return Vec::new();
        };
        let Some(from) = resolved_entry(&self.jail, request.from) else {
            return Vec::new();
        };
        entry_prior(&self.jail, request.to, keep_up_to)
            .map(|(to, prior)| Snapshot {
                root: pp_types::ChangeRoot::Workspace,
                path: to,
                partial: false,
                op: FileOp::MoveFrom(from),
                prior,
            })
            .into_iter()
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
        crate::args_check::assert_matches::<Arguments<'static>>("move_file");
    }
}
