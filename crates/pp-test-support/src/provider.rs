//! Tool providers that exist only for tests.
//!
//! [`Fixed`] offers a fixed list of tools (test tools that sleep or block). [`Stamps`]
//! is the acceptance test of the tool seam: a provider the task service has never heard
//! of, with a path-array argument (`"paths[]"`), its own capability (`stamp:update`),
//! its own preview and its own stale check — offered, gated, previewed and stale-checked
//! with no change to `pp-tasks`.

use std::sync::Arc;

use pp_agent::{BoxFuture, Tool, ToolContext};
use pp_gate::Jail;
use pp_tools::{ProviderError, Provision, Scope, ToolProvider};
use pp_types::{
    Capability, EffectPreview, PathRoot, Risk, TargetState, ToolOutput, ToolSpec, WriteLabel,
    pointer_paths,
};
use serde_json::{Value, json};

/// A provider offering the same tools to every segment.
pub struct Fixed {
    name: String,
    tools: Vec<Arc<dyn Tool>>,
}

impl Fixed {
    /// A provider called `name` offering `tools`.
    pub fn new(name: &str, tools: Vec<Arc<dyn Tool>>) -> Self {
        Self {
            name: name.to_owned(),
            tools,
        }
    }
}

impl ToolProvider for Fixed {
    fn name(&self) -> &str {
        &self.name
    }

    fn provide(&self, _scope: &Scope<'_>, provision: &mut Provision) -> Result<(), ProviderError> {
        for tool in &self.tools {
            provision.tool(Arc::clone(tool));
        }
        Ok(())
    }
}

/// Offers `stamp_files {paths: [..], stamp}`: appends the line `stamp` to every file
/// in `paths` (workspace paths), capability `stamp:update`, risk high.
#[derive(Debug, Default, Clone, Copy)]
pub struct Stamps;

impl ToolProvider for Stamps {
    fn name(&self) -> &str {
        "stamps"
    }

    fn provide(&self, scope: &Scope<'_>, provision: &mut Provision) -> Result<(), ProviderError> {
        provision.tool(Arc::new(StampFiles {
            jail: Arc::clone(scope.workspace),
            spec: ToolSpec {
                name: "stamp_files".into(),
                description: "appends a line to each of several files".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "paths": {"type": "array", "items": {"type": "string"}},
                        "stamp": {"type": "string"}
                    },
                    "required": ["paths", "stamp"]
                }),
                capability: Some(Capability::new("stamp:update")),
                risk: Risk::High,
                path_params: vec!["paths[]".into()],
                root: PathRoot::Workspace,
            },
        }));
        Ok(())
    }
}

struct StampFiles {
    jail: Arc<Jail>,
    spec: ToolSpec,
}

impl StampFiles {
    fn paths(&self, arguments: &Value) -> Vec<String> {
        pointer_paths("paths[]", arguments)
            .unwrap_or_default()
            .into_iter()
            .map(str::to_owned)
            .collect()
    }

    /// Every path's fingerprint, joined: a change to any file makes the approval stale.
    fn state(jail: &Jail, paths: &[String]) -> TargetState {
        let fingerprints: Vec<String> = paths
            .iter()
            .map(|path| {
                jail.fingerprint(path)
                    .unwrap_or_else(|error| format!("unavailable: {error}"))
            })
            .collect();
        TargetState {
            identity: paths.join(","),
            fingerprint: fingerprints.join(";"),
        }
    }
}

impl Tool for StampFiles {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn preview<'a>(
        &'a self,
        _context: &'a ToolContext,
        arguments: &'a Value,
    ) -> BoxFuture<'a, Option<EffectPreview>> {
        let (jail, paths) = (Arc::clone(&self.jail), self.paths(arguments));
        let stamp = arguments["stamp"].as_str().unwrap_or_default().to_owned();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                let state = Self::state(&jail, &paths);
                Some(EffectPreview {
                    target: paths.first()?.clone(),
                    resolved: None,
                    label: WriteLabel::Overwrite,
                    diff: None,
                    content: Some(format!("append {stamp:?} to {}", paths.join(", "))),
                    notice: None,
                    fingerprint: state.fingerprint,
                    scope: None,
                    added: None,
                    removed: None,
                    ..Default::default()
                })
            })
            .await
            .ok()
            .flatten()
        })
    }

    fn target_state<'a>(
        &'a self,
        _context: &'a ToolContext,
        arguments: &'a Value,
    ) -> BoxFuture<'a, Option<TargetState>> {
        let (jail, paths) = (Arc::clone(&self.jail), self.paths(arguments));
        Box::pin(async move {
            tokio::task::spawn_blocking(move || Self::state(&jail, &paths))
                .await
                .ok()
        })
    }

    fn execute<'a>(
        &'a self,
        context: &'a ToolContext,
        arguments: &'a Value,
    ) -> BoxFuture<'a, ToolOutput> {
        let (jail, paths) = (Arc::clone(&self.jail), self.paths(arguments));
        let stamp = arguments["stamp"].as_str().unwrap_or_default().to_owned();
        let context = context.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                for path in &paths {
                    let mut text = match jail.read(path, 1 << 20) {
                        Ok(content) => String::from_utf8_lossy(&content.bytes).into_owned(),
                        Err(error) => return ToolOutput::error(error.to_string()),
                    };
                    text.push_str(&stamp);
                    text.push('\n');
                    if let Err(error) =
                        jail.write_atomic_unless(path, text.as_bytes(), &|| context.should_stop())
                    {
                        return ToolOutput::error(error.to_string());
                    }
                }
                ToolOutput::success(format!("stamped {} files", paths.len()))
            })
            .await
            .unwrap_or_else(|error| ToolOutput::error(error.to_string()))
        })
    }
}

/// A provider offering `stubborn_wait`: a read tool (capability `test:read`, risk low,
/// so it runs without an approval) that blocks a thread for `millis` milliseconds and
/// ignores the task's interrupt meanwhile — a call that does not stop promptly when its
/// task is cancelled (a slow command, a remote call without a timeout).
#[derive(Debug, Default, Clone, Copy)]
pub struct Stubborn;

impl ToolProvider for Stubborn {
    fn name(&self) -> &str {
        "stubborn"
    }

    fn provide(&self, _scope: &Scope<'_>, provision: &mut Provision) -> Result<(), ProviderError> {
        provision.tool(Arc::new(StubbornWait));
        Ok(())
    }
}

/// The files toolbox plus [`Stubborn`].
pub fn stubborn_toolbox() -> pp_tools::Toolbox {
    pp_tools::Toolbox::files().with(Arc::new(Stubborn))
}

struct StubbornWait;

static STUBBORN_SPEC: std::sync::LazyLock<ToolSpec> = std::sync::LazyLock::new(|| ToolSpec {
    name: "stubborn_wait".into(),
    description: "blocks for `millis` milliseconds, whatever happens".into(),
    parameters: json!({"type": "object", "properties": {"millis": {"type": "integer"}}}),
    capability: Some(Capability::new("test:read")),
    risk: Risk::Low,
    path_params: Vec::new(),
    root: PathRoot::Workspace,
});

impl Tool for StubbornWait {
    fn spec(&self) -> &ToolSpec {
        &STUBBORN_SPEC
    }

    fn execute<'a>(
        &'a self,
        _context: &'a ToolContext,
        arguments: &'a Value,
    ) -> BoxFuture<'a, ToolOutput> {
        let millis = arguments["millis"].as_u64().unwrap_or(0);
        Box::pin(async move {
            let waited = tokio::task::spawn_blocking(move || {
                // The sleep is this tool's behaviour (a call that ignores interrupts), not
                // a test waiting for something.
                std::thread::sleep(std::time::Duration::from_millis(millis));
            })
            .await;
            match waited {
                Ok(()) => ToolOutput::success("waited"),
                Err(error) => ToolOutput::error(format!("the wait failed: {error}")),
            }
        })
    }
}
