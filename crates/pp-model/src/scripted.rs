//! The scripted model: replays assistant turns from JSON.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use pp_agent::{BoxFuture, Model, ModelError, ModelErrorKind, ModelRequest, ModelResponse};
use pp_types::{ToolCall, Usage};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};

/// One assistant turn of a script: text, tool calls, or both.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptTurn {
    /// Visible text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Tool calls, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ScriptedCall>,
    /// The token usage this turn reports, as a provider would (none by default), so
    /// scripts can exercise accounting and the token budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

/// One scripted tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedCall {
    /// Optional call id; generated as `call_<turn>_<index>` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The tool's name.
    pub name: String,
    /// An object (serialised for the loop) or a string passed verbatim, which lets
    /// scripts send malformed JSON.
    #[serde(default)]
    pub arguments: Value,
}

/// A model that replays a fixed list of turns and records every request.
///
/// The position in the script is explicit ([`ScriptedModel::turns_used`],
/// [`ScriptedModel::with_position`]) so a task resumed in another process continues at
/// the right turn.
#[derive(Debug)]
pub struct ScriptedModel {
    turns: Vec<ScriptTurn>,
    position: AtomicUsize,
    requests: Mutex<Vec<ModelRequest>>,
}

impl ScriptedModel {
    /// A model replaying `turns` from the start.
    pub fn new(turns: Vec<ScriptTurn>) -> Result<Self> {
        if let Some(turn) = turns
            .iter()
            .position(|turn| turn.content.is_none() && turn.tool_calls.is_empty())
        {
            return Err(Error::EmptyTurn { turn });
        }
        Ok(Self {
            turns,
            position: AtomicUsize::new(0),
            requests: Mutex::new(Vec::new()),
        })
    }

    /// Parses a script: a JSON list of turns.
    pub fn from_json(text: &str) -> Result<Self> {
        Self::new(serde_json::from_str(text).map_err(Error::InvalidScript)?)
    }

    /// Parses a script from an already-parsed JSON value.
    pub fn from_value(value: Value) -> Result<Self> {
        Self::new(serde_json::from_value(value).map_err(Error::InvalidScript)?)
    }

    /// Continues from turn `position` (turns already used elsewhere).
    pub fn with_position(self, position: usize) -> Self {
        self.position.store(position, Ordering::SeqCst);
        self
    }

    /// The script's turns.
    pub fn turns(&self) -> &[ScriptTurn] {
        &self.turns
    }

    /// How many turns the script has.
    pub fn len(&self) -> usize {
        self.turns.len()
    }

    /// Whether the script has no turns.
    pub fn is_empty(&self) -> bool {
        self.turns.is_empty()
    }

    /// How many turns have been replayed.
    pub fn turns_used(&self) -> usize {
        self.position.load(Ordering::SeqCst)
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.requests
            .lock()
            .map(|requests| requests.clone())
            .unwrap_or_default()
    }

    fn next_turn(&self, request: &ModelRequest) -> std::result::Result<ModelResponse, ModelError> {
        if let Ok(mut requests) = self.requests.lock() {
            requests.push(request.clone());
        }
        let index = self.position.fetch_add(1, Ordering::SeqCst);
        let Some(turn) = self.turns.get(index) else {
            return Err(ModelError::new(
                ModelErrorKind::ScriptExhausted,
                format!(
                    "the script has {} turns and the model was asked for turn {}",
                    self.turns.len(),
                    index + 1
                ),
            ));
        };
        let tool_calls = turn
            .tool_calls
            .iter()
            .enumerate()
            .map(|(call_index, call)| ToolCall {
                id: call
                    .id
                    .clone()
                    .unwrap_or_else(|| format!("call_{index}_{call_index}")),
                name: call.name.clone(),
                arguments: match &call.arguments {
                    Value::String(raw) => raw.clone(),
                    Value::Null => "{}".to_owned(),
                    other => other.to_string(),
                },
            })
            .collect();
        Ok(ModelResponse {
            content: turn.content.clone(),
            tool_calls,
            reasoning_content: None,
            usage: turn.usage,
        })
    }
}

impl Model for ScriptedModel {
    fn name(&self) -> String {
        "scripted".to_owned()
    }

    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> BoxFuture<'a, std::result::Result<ModelResponse, ModelError>> {
        let response = self.next_turn(request);
        Box::pin(async move { response })
    }
}

#[cfg(test)]
mod tests {
    use pp_types::Message;
    use pretty_assertions::assert_eq;

    use super::*;

    fn request() -> ModelRequest {
        ModelRequest {
            messages: vec![Message::user("hi")],
            tools: [].into(),
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn replays_turns_and_records_requests() {
        let model = ScriptedModel::from_json(
            r#"[{"tool_calls": [{"name": "read_file", "arguments": {"path": "a"}},
                                {"name": "x", "arguments": "{not json", "id": "mine"}]},
                {"content": "done"}]"#,
        )
        .unwrap();
        let first = model.complete(&request()).await.unwrap();
        assert_eq!(
            first.tool_calls,
            vec![
                ToolCall {
                    id: "call_0_0".into(),
                    name: "read_file".into(),
                    arguments: r#"{"path":"a"}"#.into()
                },
                ToolCall {
                    id: "mine".into(),
                    name: "x".into(),
                    arguments: "{not json".into()
                },
            ]
        );
        let second = model.complete(&request()).await.unwrap();
        assert_eq!(second.content.as_deref(), Some("done"));
        let error = model.complete(&request()).await.unwrap_err();
        assert_eq!(error.kind, ModelErrorKind::ScriptExhausted);
        assert_eq!(
            error.to_string(),
            "script exhausted: the script has 2 turns and the model was asked for turn 3"
        );
        assert_eq!(model.requests().len(), 3);
        assert_eq!(model.turns_used(), 3);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn continues_from_a_position() {
        let model = ScriptedModel::from_json(r#"[{"content": "a"}, {"content": "b"}]"#)
            .unwrap()
            .with_position(1);
        let turn = model.complete(&request()).await.unwrap();
        assert_eq!(turn.content.as_deref(), Some("b"));
    }

    #[test]
    fn rejects_bad_scripts() {
        assert!(matches!(
            ScriptedModel::from_json(r#"[{}]"#),
            Err(Error::EmptyTurn { turn: 0 })
        ));
        assert!(matches!(
            ScriptedModel::from_json(r#"[{"contnet": "typo"}]"#),
            Err(Error::InvalidScript(_))
        ));
        assert!(matches!(
            ScriptedModel::from_json(r#"{"content": "x"}"#),
            Err(Error::InvalidScript(_))
        ));
    }
}
