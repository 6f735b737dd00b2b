//! Integration tests of the file tools against a real jail on a temporary tree.
#![allow(
    clippy::expect_used,
    clippy::disallowed_methods,
    reason = "test fixtures and helpers set up trees with std::fs and panic on setup failure"
)]

mod edit_file;
mod escapes;
mod file_ops;
mod list_files;
mod read_file;
mod registry;
mod schemas;
mod search_files;
mod skills;
mod toolbox;
mod write_file;

use std::sync::Arc;

use pp_agent::{Tool, ToolContext};
use pp_gate::Jail;
use pp_test_support::TempTree;
use pp_tools::Limits;
use pp_types::{DenyRule, EffectPreview, ToolOutput};
use serde_json::Value;

/// A temporary tree and the four tools working in its `workspace/`.
pub(crate) struct Fixture {
    pub(crate) tree: TempTree,
    tools: Vec<Arc<dyn Tool>>,
}

impl Fixture {
    pub(crate) fn new() -> Self {
        Self::with_limits(Limits::default())
    }

    pub(crate) fn with_limits(limits: Limits) -> Self {
        let tree = TempTree::new();
        let jail = Arc::new(Jail::new(tree.workspace()).expect("jail on the temp workspace"));
        let tools = pp_tools::file_tools_with(jail, limits);
        Self { tree, tools }
    }

    pub(crate) fn tool(&self, name: &str) -> &Arc<dyn Tool> {
        self.tools
            .iter()
            .find(|tool| tool.spec().name == name)
            .unwrap_or_else(|| panic!("no tool named {name}"))
    }

    /// Runs a tool directly, bypassing schema and policy.
    pub(crate) async fn call(&self, name: &str, arguments: Value) -> ToolOutput {
        self.tool(name)
            .execute(&ToolContext::default(), &arguments)
            .await
    }

    /// A tool's approval preview, from synchronous tests (on a runtime of its own: the
    /// preview's file work runs on the blocking pool).
    pub(crate) fn preview(&self, name: &str, arguments: &Value) -> Option<EffectPreview> {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime")
            .block_on(self.tool(name).preview(&ToolContext::default(), arguments))
    }

    /// Runs a tool and returns its success text, failing the test otherwise.
    pub(crate) async fn ok(&self, name: &str, arguments: Value) -> String {
        match self.call(name, arguments).await {
            ToolOutput::Success { content } => content,
            other => panic!("expected success, got {other:?}"),
        }
    }

    /// Runs a tool and returns its error message, failing the test otherwise.
    pub(crate) async fn err(&self, name: &str, arguments: Value) -> String {
        match self.call(name, arguments).await {
            ToolOutput::Error { message } => message,
            other => panic!("expected an ordinary error, got {other:?}"),
        }
    }

    /// Runs a tool and returns the rule of its denial, failing the test otherwise.
    pub(crate) async fn denied(&self, name: &str, arguments: Value) -> DenyRule {
        match self.call(name, arguments).await {
            ToolOutput::Denied(denial) => denial.rule,
            other => panic!("expected a denial, got {other:?}"),
        }
    }
}

/// Replaces each `YYYY-MM-DDTHH:MM:SSZ` timestamp with `<time>` so listings compare
/// exactly.
pub(crate) fn redact_times(text: &str) -> String {
    text.lines()
        .map(|line| {
            line.split(' ')
                .map(|word| {
                    let bytes = word.as_bytes();
                    let is_time = bytes.len() == 20
                        && bytes[4] == b'-'
                        && bytes[10] == b'T'
                        && bytes[19] == b'Z';
                    if is_time { "<time>" } else { word }
                })
                .collect::<Vec<_>>()
                .join(" ")
                + "\n"
        })
        .collect()
}
