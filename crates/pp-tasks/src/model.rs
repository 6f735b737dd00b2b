//! Which model runs a task.

use std::sync::Arc;

use pp_agent::Model;
use pp_model::ScriptedModel;
use pp_types::TaskRecord;

use crate::error::{Error, Result};

/// Where tasks get their model from.
#[derive(Clone)]
pub enum ModelSource {
    /// Every task carries its own script (tests, demos, `--script`).
    Scripted,
    /// One configured provider for every task without a script.
    Provider(Arc<dyn Model>),
    /// Nothing is configured: tasks without a script fail at once with this message.
    Unconfigured(String),
    /// Every task run by this service is driven by this model, whatever its script says:
    /// `pocketpilot mcp serve`, where an MCP client's calls are the assistant turns
    /// ([`crate::ClientLink`]). The task's script is what another process resumes it with
    /// after an approval.
    Driven(Arc<dyn Model>),
}

impl std::fmt::Debug for ModelSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Scripted => f.write_str("Scripted"),
            Self::Provider(_) => f.write_str("Provider(..)"),
            Self::Unconfigured(message) => write!(f, "Unconfigured({message:?})"),
            Self::Driven(_) => f.write_str("Driven(..)"),
        }
    }
}

/// The model of one run segment.
pub(crate) enum TaskModel {
    /// A script replayed from the task's stored position.
    Scripted(ScriptedModel),
    /// The shared provider.
    Provider(Arc<dyn Model>),
}

impl TaskModel {
    /// The model for `task`: its script if it has one, else the configured provider.
    pub(crate) fn for_task(source: &ModelSource, task: &TaskRecord) -> Result<Self> {
        if let ModelSource::Driven(model) = source {
            return Ok(Self::Provider(Arc::clone(model)));
        }
        if let Some(script) = &task.script {
            let position = usize::try_from(task.script_position).unwrap_or(usize::MAX);
            let model = ScriptedModel::from_value(script.clone())
                .map_err(|error| Error::Model(error.to_string()))?
                .with_position(position);
            return Ok(Self::Scripted(model));
        }
        match source {
            ModelSource::Provider(model) => Ok(Self::Provider(Arc::clone(model))),
            ModelSource::Scripted => Err(Error::Model(
                "this server runs scripted tasks only and the task has no script".into(),
            )),
            ModelSource::Unconfigured(message) => Err(Error::Model(message.clone())),
            ModelSource::Driven(model) => Ok(Self::Provider(Arc::clone(model))),
        }
    }

    /// The model to drive the loop with.
    pub(crate) fn as_model(&self) -> &dyn Model {
        match self {
            Self::Scripted(model) => model,
            Self::Provider(model) => model.as_ref(),
        }
    }

    /// The script position to store after the segment.
    pub(crate) fn script_position(&self) -> Option<u64> {
        match self {
            Self::Scripted(model) => u64::try_from(model.turns_used()).ok(),
            Self::Provider(_) => None,
        }
    }
}
