//! Tool specifications, outputs and approval previews.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Capability, Denial, Risk};

/// Everything the gate and the model know about a tool.
///
/// The policy engine reads only `capability`, `path_params` and `root`; it never looks at
/// `name`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The name the model calls the tool by.
    pub name: String,
    /// The short description the model sees.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
    /// The declared capability; a tool without one is always denied.
    pub capability: Option<Capability>,
    /// How dangerous the tool is; shown in approval cards.
    pub risk: Risk,
    /// Pointers to the arguments that are paths: `"path"` names a top-level string,
    /// `"paths[]"` every string element of a top-level array. Each path is checked
    /// against `root` before the capability is considered.
    pub path_params: Vec<String>,
    /// What the paths are relative to: the workspace, or a folder the tool's provider
    /// names (a skill's own folder).
    #[serde(default, skip_serializing_if = "PathRoot::is_workspace")]
    pub root: PathRoot,
}

/// The folder a tool's path arguments are checked against.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PathRoot {
    /// The task's workspace (file tools).
    #[default]
    Workspace,
    /// One of a family of folders, chosen by a string argument: the skill named by
    /// `name`, say (`scope = "skill"`, `key_param = "name"`). The gate looks the folder
    /// up under [`PathRoot::key`]; the provider that registered the tool registers the
    /// folders for the same segment.
    Scoped {
        /// The family of folders (`skill`).
        scope: String,
        /// The argument naming the folder.
        key_param: String,
    },
}

impl PathRoot {
    /// Whether this is the workspace.
    pub fn is_workspace(&self) -> bool {
        matches!(self, Self::Workspace)
    }

    /// The key a scoped root is registered under: `"{scope}:{name}"`.
    pub fn key(scope: &str, name: &str) -> String {
        format!("{scope}:{name}")
    }

    /// The key of the folder `arguments` choose, for a scoped root; `None` for the
    /// workspace, and `Some(Err(()))` when the naming argument is missing or not a string.
    pub fn key_for(&self, arguments: &Value) -> Option<Result<String, ()>> {
        match self {
            Self::Workspace => None,
            Self::Scoped { scope, key_param } => Some(
                arguments
                    .get(key_param)
                    .and_then(Value::as_str)
                    .map(|name| Self::key(scope, name))
                    .ok_or(()),
            ),
        }
    }
}

/// The property a path pointer refers to: `"paths[]"` → `"paths"`, `"path"` → `"path"`.
pub fn pointer_property(pointer: &str) -> &str {
    pointer.strip_suffix("[]").unwrap_or(pointer)
}

/// A path argument that is not what its pointer promises.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotAPath {
    /// The pointer (`"path"`, `"paths[]"`).
    pub pointer: String,
}

impl std::fmt::Display for NotAPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.pointer.strip_suffix("[]") {
            Some(array) => write!(f, "path argument {array:?} is not an array of strings"),
            None => write!(f, "path argument {:?} is not a string", self.pointer),
        }
    }
}

/// Every path the `pointer` designates in `arguments`, in order: the string at a
/// top-level property (`"path"`), or each string element of a top-level array
/// (`"paths[]"`). A missing property designates nothing; a value of the wrong shape is
/// an error (the gate denies it).
pub fn pointer_paths<'a>(pointer: &str, arguments: &'a Value) -> Result<Vec<&'a str>, NotAPath> {
    let wrong = || NotAPath {
        pointer: pointer.to_owned(),
    };
    let Some(value) = arguments.get(pointer_property(pointer)) else {
        return Ok(Vec::new());
    };
    if pointer.ends_with("[]") {
        let items = value.as_array().ok_or_else(wrong)?;
        items
            .iter()
            .map(|item| item.as_str().ok_or_else(wrong))
            .collect()
    } else {
        value.as_str().map(|path| vec![path]).ok_or_else(wrong)
    }
}

impl ToolSpec {
    /// The first path the spec's pointers designate in `arguments`: the call's target
    /// for the audit ledger and the approval card, unless the tool says otherwise.
    pub fn first_path<'a>(&self, arguments: &'a Value) -> Option<&'a str> {
        self.path_params.iter().find_map(|pointer| {
            pointer_paths(pointer, arguments)
                .ok()
                .and_then(|paths| paths.first().copied())
        })
    }
}

/// The state of a call's target now, compared with what the approval card showed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetState {
    /// What the target designates once resolved (a workspace-relative path, `memory.md`):
    /// two argument sets with the same identity change the same thing.
    pub identity: String,
    /// The target's fingerprint now, in the format the tool's preview used.
    pub fingerprint: String,
}

/// What a tool returned to the model.
///
/// `Err` in a tool's signature would mean our infrastructure broke; everything the model
/// should see — success, an ordinary failure, a refusal by the jail — is data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ToolOutput {
    /// The tool ran; `content` is what the model reads.
    Success {
        /// Output text (size-capped by the tool, with a visible truncation marker).
        content: String,
    },
    /// An ordinary failure: missing file, bad arguments, ambiguous edit.
    Error {
        /// What went wrong, for the model.
        message: String,
    },
    /// The workspace jail refused a path while the tool ran; counts as a denial.
    Denied(Denial),
}

impl ToolOutput {
    /// A successful result.
    pub fn success(content: impl Into<String>) -> Self {
        Self::Success {
            content: content.into(),
        }
    }

    /// An ordinary failure.
    pub fn error(message: impl Into<String>) -> Self {
        Self::Error {
            message: message.into(),
        }
    }
}

crate::wire_enum! {
    /// What kind of effect a call has on its target: a write creates a new file or replaces
    /// an existing one; a move, a delete, a new folder or a command say so.
    ///
    /// The label is for the person approving; it is not a second policy.
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
    pub enum WriteLabel {
        /// The target does not exist yet.
        #[default]
        Create => "create",
        /// The target exists and will be replaced or edited.
        Overwrite => "overwrite",
        /// The target is moved or renamed to [`EffectPreview::destination`] (`move_file`).
        Move => "move",
        /// The target (a file, a link or an empty folder) is deleted (`delete_file`).
        Delete => "delete",
        /// A folder is created at the target (`make_dir`).
        CreateFolder => "create_folder",
        /// A command runs ([`EffectPreview::command`], `run_command`).
        Run => "run",
    }
}

/// The command a `run_command` call would run, as its approval card shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandPreview {
    /// The program and its arguments, exactly as they will be passed to `execve` (no
    /// shell unless `argv[0]` is one).
    pub argv: Vec<String>,
    /// The working directory, workspace-relative with links resolved (`""`: the
    /// workspace's root).
    pub cwd: String,
    /// Whether the program is a shell given a script (`sh -c …`, `bash -c …`): the card
    /// says so in words.
    pub shell: bool,
    /// Whether the process runs confined (Landlock on Linux). `false` only where
    /// `[shell] allow_unconfined = true` let the tool be offered without confinement:
    /// every card then says "NOT confined" in the strongest style.
    pub confined: bool,
    /// The limits the process runs under.
    pub limits: CommandLimits,
    /// Bytes given on standard input, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin_bytes: Option<u64>,
    /// What ends every process the command starts when the call ends ("a PID
    /// namespace: …" or "a subreaper: …"). `None` in checkpoints written before it
    /// existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub containment: Option<String>,
    /// How much of the workspace a revert of this command could not cover: files
    /// larger than `[revert] max_bytes`, beyond `[shell] snapshot_max_bytes` in total,
    /// or matched by `[shell] snapshot_ignore` (measured when the card was made).
    /// `None` in checkpoints written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncovered: Option<Uncovered>,
}

/// Files and bytes of a workspace whose content a command's snapshot does not keep
/// (too large, beyond the total budget, or ignored): what a revert could not restore.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Uncovered {
    /// Regular files not kept.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// The limits a confined command runs under (`[shell]` in the config, the call's
/// `timeout_secs` within them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandLimits {
    /// Wall-clock time before the process group is killed.
    pub timeout_secs: u64,
    /// CPU time (RLIMIT_CPU).
    pub cpu_secs: u64,
    /// Address space (RLIMIT_AS), in MiB.
    pub memory_mb: u64,
    /// Processes (RLIMIT_NPROC).
    pub processes: u64,
    /// The largest file the process may write (RLIMIT_FSIZE), in MiB.
    pub file_size_mb: u64,
    /// The most bytes kept of stdout and of stderr each; more is cut with a marker.
    pub output_bytes: u64,
    /// Whether the process may use the network (always `false` when confined).
    pub network: bool,
}

/// What a person sees before approving a call: the target, the label and the change.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EffectPreview {
    /// The workspace path as the model wrote it.
    pub target: String,
    /// The workspace-relative path it designates after `..` and links inside the
    /// workspace are resolved; shown next to `target` so a forged-looking path cannot
    /// hide which file changes. `None` in checkpoints written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved: Option<String>,
    /// Create or overwrite, decided when the approval was requested.
    pub label: WriteLabel,
    /// A unified diff for overwrites and edits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// The new content for creates (capped for display).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Why part of the preview cannot be shown, e.g. "cannot show the current content:
    /// permission denied" for an overwrite of an unreadable file. The label still comes
    /// from whether the target exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
    /// A fingerprint of the target as shown (hash of its bytes, or `absent`), so a
    /// change between request and approval can be noticed.
    pub fingerprint: String,
    /// How much of the target the call changes, so a card can show risk in proportion
    /// (a one-line edit is not a whole-file replacement). `None` for previews that do
    /// not say, and in checkpoints written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<EffectScope>,
    /// Lines the call adds (a new file: all of its lines); `None` when unknown (binary
    /// or too large to diff).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub added: Option<u32>,
    /// Lines the call removes; `None` when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removed: Option<u32>,
    /// `move_file`: where the target goes, as the model wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination: Option<String>,
    /// `move_file`: the workspace-relative path the destination designates, links
    /// resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination_resolved: Option<String>,
    /// `move_file` with `overwrite: true`: the existing file the move replaces
    /// (workspace-relative, links resolved); the card names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaces: Option<String>,
    /// Bytes of the file a `delete_file` deletes, or of the file an overwriting
    /// `move_file` replaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// `run_command`: the exact command, its working directory and its limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<CommandPreview>,
    /// A call to an MCP server's tool: the server, the tool and the resolved action (the
    /// card shows the arguments next to them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp: Option<crate::McpCallPreview>,
    /// Why the call cannot apply to its target as it is now — the error the tool would
    /// give if it ran (an edit whose text is gone, a move whose source is gone or whose
    /// destination is taken, a delete of nothing). Only a tool that knows says so; MCP
    /// tools never do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub will_fail: Option<String>,
    /// Applying the call would leave its target exactly as it is (a write of identical
    /// content, an edit that replaces text with itself, a folder that exists).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_change: bool,
}

impl EffectPreview {
    /// The preview of a call the tool knows would fail with `output` (its error text,
    /// or the jail's denial).
    pub fn failing(&mut self, output: &ToolOutput) {
        self.will_fail = Some(match output {
            ToolOutput::Error { message } => message.clone(),
            ToolOutput::Denied(denial) => denial.message.clone(),
            ToolOutput::Success { content } => content.clone(),
        });
    }
}

crate::wire_enum! {
    /// How much of its target a call changes, as the tool's preview describes it.
    ///
    /// Like [`WriteLabel`], this is for the person approving; the policy never reads it.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum EffectScope {
        /// The target does not exist yet.
        NewFile => "new_file",
        /// Part of an existing target changes.
        Edit => "edit",
        /// An existing target is replaced whole.
        ReplacesWholeFile => "replaces_whole_file",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pointers_designate_strings_and_array_elements() {
        let arguments = json!({"path": "a.txt", "paths": ["b", "c"], "n": 3, "bad": ["x", 1]});
        assert_eq!(pointer_paths("path", &arguments), Ok(vec!["a.txt"]));
        assert_eq!(pointer_paths("paths[]", &arguments), Ok(vec!["b", "c"]));
        assert_eq!(pointer_paths("missing", &arguments), Ok(vec![]));
        assert_eq!(pointer_paths("missing[]", &arguments), Ok(vec![]));
        assert!(pointer_paths("n", &arguments).is_err());
        assert!(
            pointer_paths("path[]", &arguments).is_err(),
            "a string is not an array"
        );
        assert!(
            pointer_paths("paths", &arguments).is_err(),
            "an array is not a string"
        );
        let error = pointer_paths("bad[]", &arguments).unwrap_err();
        assert_eq!(
            error.to_string(),
            "path argument \"bad\" is not an array of strings"
        );
    }

    #[test]
    fn previews_without_scope_or_counts_still_deserialize() {
        // A checkpoint stored before `scope`, `added` and `removed` existed.
        let old =
            json!({"target": "a.txt", "label": "overwrite", "diff": "", "fingerprint": "absent"});
        let preview: EffectPreview = serde_json::from_value(old).unwrap();
        assert_eq!(
            (preview.scope, preview.added, preview.removed),
            (None, None, None)
        );
        let mut new = preview.clone();
        new.scope = Some(EffectScope::ReplacesWholeFile);
        new.added = Some(2);
        new.removed = Some(0);
        let value = serde_json::to_value(&new).unwrap();
        assert_eq!(value["scope"], "replaces_whole_file");
        assert_eq!(
            (value["added"].clone(), value["removed"].clone()),
            (json!(2), json!(0))
        );
        assert_eq!(serde_json::from_value::<EffectPreview>(value).unwrap(), new);
        assert_eq!(
            serde_json::to_value(&preview).unwrap().get("scope"),
            None,
            "an unknown scope is left out"
        );
        for scope in [
            EffectScope::NewFile,
            EffectScope::Edit,
            EffectScope::ReplacesWholeFile,
        ] {
            assert_eq!(serde_json::to_value(scope).unwrap(), json!(scope.as_str()));
        }
    }

    #[test]
    fn scoped_roots_are_chosen_by_an_argument() {
        let root = PathRoot::Scoped {
            scope: "skill".into(),
            key_param: "name".into(),
        };
        assert_eq!(
            root.key_for(&json!({"name": "pdf"})),
            Some(Ok("skill:pdf".into()))
        );
        assert_eq!(root.key_for(&json!({"name": 1})), Some(Err(())));
        assert_eq!(PathRoot::Workspace.key_for(&json!({})), None);
        let spec: ToolSpec = serde_json::from_value(json!({
            "name": "t", "description": "", "parameters": {}, "capability": null,
            "risk": "low", "path_params": []
        }))
        .unwrap();
        assert!(
            spec.root.is_workspace(),
            "older specs default to the workspace"
        );
    }
}
