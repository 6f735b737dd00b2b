//! Runs the built-in tools' synchronous bodies on tokio's blocking pool.
//!
//! Reading, hashing, diffing and writing files can take long (a slow disk, a huge file);
//! done on an async thread they would stall every other task and the HTTP server. Each
//! built-in tool (files, memory, skills) implements [`SyncTool`] and is registered
//! wrapped in [`OffThread`], which is the [`Tool`] the loop sees.

use std::sync::Arc;

use pp_agent::{BoxFuture, Tool, ToolContext};
use pp_types::{EffectPreview, Snapshot, TargetState, ToolOutput, ToolSpec};
use serde_json::Value;

/// A tool whose work is synchronous (file IO through the jail).
pub(crate) trait SyncTool: Send + Sync + 'static {
    /// The tool's specification.
    fn spec(&self) -> &ToolSpec;

    /// The approval card's description of a call; `None` for tools without an effect.
    fn describe(&self, _context: &ToolContext, _arguments: &Value) -> Option<EffectPreview> {
        None
    }

    /// The call's target as the model wrote it; by default the first path argument.
    fn target(&self, arguments: &Value) -> Option<String> {
        self.spec().first_path(arguments).map(str::to_owned)
    }

    /// The target's state now, for the stale check; `None` for tools without one.
    fn state(&self, _context: &ToolContext, _arguments: &Value) -> Option<TargetState> {
        None
    }

    /// What the files the call would change hold now (see [`Tool::snapshot`]).
    fn snapshot(
        &self,
        _context: &ToolContext,
        _arguments: &Value,
        _keep_up_to: u64,
    ) -> Vec<Snapshot> {
        Vec::new()
    }

    /// Runs the call.
    fn call(&self, context: &ToolContext, arguments: &Value) -> ToolOutput;
}

/// A [`SyncTool`] whose preview and execution run on the blocking pool.
pub(crate) struct OffThread<T>(pub(crate) Arc<T>);

impl<T: SyncTool> Tool for OffThread<T> {
    fn spec(&self) -> &ToolSpec {
        self.0.spec()
    }

    fn preview<'a>(
        &'a self,
        context: &'a ToolContext,
        arguments: &'a Value,
    ) -> BoxFuture<'a, Option<EffectPreview>> {
        let (tool, context, arguments) = (Arc::clone(&self.0), context.clone(), arguments.clone());
        Box::pin(async move {
            tokio::task::spawn_blocking(move || tool.describe(&context, &arguments))
                .await
                .unwrap_or(None)
        })
    }

    fn target(&self, arguments: &Value) -> Option<String> {
        self.0.target(arguments)
    }

    fn target_state<'a>(
        &'a self,
        context: &'a ToolContext,
        arguments: &'a Value,
    ) -> BoxFuture<'a, Option<TargetState>> {
        let (tool, context, arguments) = (Arc::clone(&self.0), context.clone(), arguments.clone());
        Box::pin(async move {
            tokio::task::spawn_blocking(move || tool.state(&context, &arguments))
                .await
                .unwrap_or(None)
        })
    }

    fn snapshot<'a>(
        &'a self,
        context: &'a ToolContext,
        arguments: &'a Value,
        keep_up_to: u64,
    ) -> BoxFuture<'a, Vec<Snapshot>> {
        let (tool, context, arguments) = (Arc::clone(&self.0), context.clone(), arguments.clone());
        Box::pin(async move {
            tokio::task::spawn_blocking(move || tool.snapshot(&context, &arguments, keep_up_to))
                .await
                .unwrap_or_default()
        })
    }

    fn execute<'a>(
        &'a self,
        context: &'a ToolContext,
        arguments: &'a Value,
    ) -> BoxFuture<'a, ToolOutput> {
        let (tool, context, arguments) = (Arc::clone(&self.0), context.clone(), arguments.clone());
        Box::pin(async move {
            tokio::task::spawn_blocking(move || tool.call(&context, &arguments))
                .await
                .unwrap_or_else(|error| {
                    ToolOutput::error(format!("the tool stopped unexpectedly: {error}"))
                })
        })
    }
}
