//! Test doubles: a queue model, tools that record executions, a policy by action word.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use pp_agent::{BoxFuture, Model, ModelError, ModelErrorKind, ModelRequest, ModelResponse, Tool};
use pp_types::{
    Capability, Decision, Denial, DenyRule, EffectPreview, Message, Risk, ToolCall, ToolOutput,
    ToolSpec, Usage, WriteLabel,
};
use serde_json::{Value, json};

/// Replays responses and records requests.
pub(crate) struct QueueModel {
    responses: Mutex<Vec<ModelResponse>>,
    pub(crate) requests: Mutex<Vec<ModelRequest>>,
}

impl QueueModel {
    pub(crate) fn new(mut responses: Vec<ModelResponse>) -> Self {
        responses.reverse();
        Self {
            responses: Mutex::new(responses),
            requests: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn requests(&self) -> Vec<ModelRequest> {
        self.requests.lock().unwrap().clone()
    }
}

impl Model for QueueModel {
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        assert_every_call_answered_once(&request.messages);
        self.requests.lock().unwrap().push(request.clone());
        let next = self.responses.lock().unwrap().pop();
        Box::pin(async move {
            next.ok_or_else(|| ModelError::new(ModelErrorKind::ScriptExhausted, "no more turns"))
        })
    }
}

/// A text-only turn.
pub(crate) fn text(content: &str) -> ModelResponse {
    ModelResponse {
        content: Some(content.into()),
        ..ModelResponse::default()
    }
}

/// A turn with tool calls `(name, raw arguments)`; ids are `c<turn>_<i>`.
pub(crate) fn calls(turn: usize, calls: &[(&str, &str)]) -> ModelResponse {
    ModelResponse {
        tool_calls: calls
            .iter()
            .enumerate()
            .map(|(i, (name, arguments))| ToolCall {
                id: format!("c{turn}_{i}"),
                name: (*name).into(),
                arguments: (*arguments).into(),
            })
            .collect(),
        usage: Some(Usage {
            prompt_tokens: 10,
            completion_tokens: 5,
            ..Usage::default()
        }),
        ..ModelResponse::default()
    }
}

/// Every tool call in `messages` is answered exactly once, and every tool answer
/// answers a call made before it.
pub(crate) fn assert_every_call_answered_once(messages: &[Message]) {
    let mut open: HashMap<String, usize> = HashMap::new();
    for message in messages {
        match message {
            Message::Assistant { tool_calls, .. } => {
                for call in tool_calls {
                    assert!(
                        open.insert(call.id.clone(), 0).is_none(),
                        "duplicate id {}",
                        call.id
                    );
                }
            }
            Message::Tool { tool_call_id, .. } => {
                let count = open
                    .get_mut(tool_call_id)
                    .unwrap_or_else(|| panic!("orphan tool answer {tool_call_id}"));
                *count += 1;
            }
            Message::System { .. } | Message::User { .. } => {}
        }
    }
    for (id, count) in open {
        assert_eq!(count, 1, "call {id} answered {count} times");
    }
}

/// A tool that records every execution.
pub(crate) struct RecordingTool {
    spec: ToolSpec,
    pub(crate) executed: Arc<Mutex<Vec<Value>>>,
}

impl RecordingTool {
    pub(crate) fn new(name: &str, capability: &str, risk: Risk) -> Arc<Self> {
        Arc::new(Self {
            spec: ToolSpec {
                name: name.into(),
                description: format!("{name} test tool"),
                parameters: json!({
                    "type": "object",
                    "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                    "required": ["path"],
                    "additionalProperties": false
                }),
                capability: Some(Capability::new(capability)),
                risk,
                path_params: vec!["path".into()],
                root: pp_types::PathRoot::Workspace,
            },
            executed: Arc::new(Mutex::new(Vec::new())),
        })
    }

    pub(crate) fn executions(&self) -> Vec<Value> {
        self.executed.lock().unwrap().clone()
    }
}

impl Tool for RecordingTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn preview<'a>(
        &'a self,
        _context: &'a pp_agent::ToolContext,
        arguments: &'a Value,
    ) -> BoxFuture<'a, Option<EffectPreview>> {
        let preview = EffectPreview {
            target: arguments["path"].as_str().unwrap_or_default().into(),
            resolved: None,
            label: WriteLabel::Create,
            diff: None,
            content: arguments["content"].as_str().map(str::to_owned),
            notice: None,
            fingerprint: "absent".into(),
            scope: None,
            added: None,
            removed: None,
            ..Default::default()
        };
        Box::pin(async move { Some(preview) })
    }

    fn execute<'a>(
        &'a self,
        _context: &'a pp_agent::ToolContext,
        arguments: &'a Value,
    ) -> BoxFuture<'a, ToolOutput> {
        self.executed.lock().unwrap().push(arguments.clone());
        let path = arguments["path"].as_str().unwrap_or_default().to_owned();
        Box::pin(async move {
            if path == "missing" {
                ToolOutput::error("missing not found")
            } else if path == "swapped" {
                ToolOutput::Denied(Denial::new(
                    DenyRule::SymlinkEscape,
                    "swapped leads outside",
                ))
            } else {
                ToolOutput::success(format!("ok {path}"))
            }
        })
    }
}

/// A policy by action word: read → allow, write and delete → ask, paths starting `/` or
/// `..` → deny.
pub(crate) fn fake_policy(spec: &ToolSpec, arguments: &Value) -> Decision {
    for param in &spec.path_params {
        if let Some(path) = arguments.get(param).and_then(Value::as_str)
            && (path.starts_with('/') || path.starts_with(".."))
        {
            return Decision::Deny(Denial::new(
                DenyRule::Escapes,
                format!("path `{path}` escapes"),
            ));
        }
    }
    match spec.capability.as_ref().and_then(Capability::action) {
        Some("read") => Decision::Allow,
        Some(action @ ("write" | "delete")) => Decision::Ask {
            action: action.into(),
        },
        _ => Decision::Deny(Denial::new(
            DenyRule::UnknownCapability,
            "unknown capability",
        )),
    }
}
