//! Why a call is asked for: the model's own text of the turn that made it, and what the
//! task took in since the person's last message ([`Provenance`], on every approval card).
//!
//! Pure functions over what an approval already stores — its checkpoint's messages and
//! pending call's id — and its task's record (`created_by`, `origin`): no store reads, no
//! disk. The gate still decides every call; this only shows the person the chain that
//! led to it, and marks a side effect that follows untrusted input
//! ([`Provenance::untrusted_input`]).
//!
//! What counts as an input, from the last `user` message (the task's prompt, or in a
//! chat session the person's latest message; the start of the conversation when there
//! is none) up to the model turn that made the pending call:
//!
//! - the prompt itself, by who created the task: the operator's `prompt`, a chat turn's
//!   `message` (both trusted), a `webhook`'s, a `schedule`'s or an `mcp_client`'s
//!   (untrusted; `source` is the task's `origin`);
//! - the answer to every call of a tool that brings outside text in, as the built-in
//!   tools classify themselves ([`pp_tools::input_of`]: the task service names no tool
//!   argument): `read_file`, `list_files`, `search_files` and `run_command`
//!   (`file_read`: what the workspace or a command gave back), `extract_document`,
//!   `extract_invoice`, `analyze_table` (`document`), `expand_skill`, `read_skill_file`
//!   (`skill`); and every MCP tool, whose model name is `<server>__<tool>`
//!   (`mcp_output`, also for an MCP write: the server's answer is its own text).
//!
//! Not inputs: the answers to the built-in tools that change things
//! ([`pp_tools::OWN_REPORTS`]: `write_file`, `edit_file`, `move_file`, `delete_file`,
//! `make_dir`, `memory_write`), which are PocketPilot's own reports of what it did, and
//! answers to tools no one offered (the loop's "unknown tool" error). An answer counts whether the call succeeded or not: the
//! text alone cannot tell a failure from content made to look like one, and hiding a
//! read behind a forged "error:" would hide untrusted input. The answers to the calls
//! the pending call's own turn made before it are not inputs either: the model asked
//! for them all at once and had read none of them.
//!
//! A chat turn is told from an operator's task by its conversation: a turn after the
//! first carries the session's earlier turns before its message. The first turn of a
//! session carries none and reads as `prompt` (both are the person's own words; the
//! session itself is not on the task record, and reading it would cost a store read per
//! card).

use std::collections::HashMap;

use pp_tools::InputSource;
use pp_types::{Actor, Message, TaskRecord, ToolCall};
use serde::{Deserialize, Serialize};

/// The most inputs a card lists (the newest); [`Provenance::more`] counts the rest.
pub const MAX_INPUTS: usize = 20;

/// The longest [`Input::source`], in characters (longer ones end in `…`): a source is
/// written by the model or an outside sender and is shown on every card of a list.
pub const MAX_SOURCE_CHARS: usize = 200;

pp_types::wire_enum! {
    /// Where an input came from.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum InputKind {
        /// The operator's own prompt.
        Prompt => "prompt",
        /// The person's message in a chat session.
        Message => "message",
        /// A prompt a webhook delivered.
        Webhook => "webhook",
        /// A prompt a schedule started.
        Schedule => "schedule",
        /// A prompt (a call) an MCP client sent to `pocketpilot mcp serve`.
        McpClient => "mcp_client",
        /// What an MCP server's tool answered.
        McpOutput => "mcp_output",
        /// The text a document tool extracted (`extract_document`, `extract_invoice`,
        /// `analyze_table`).
        Document => "document",
        /// What a file tool read, listed or found, or what a command printed.
        FileRead => "file_read",
        /// A skill's instructions or files.
        Skill => "skill",
    }
}

impl InputKind {
    /// Everything but the person's own prompt and messages is untrusted.
    pub fn untrusted(self) -> bool {
        !matches!(self, Self::Prompt | Self::Message)
    }
}

/// One thing the task took in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Input {
    /// Where it came from.
    pub kind: InputKind,
    /// Which one: the webhook channel, schedule or MCP client (the task's `origin`), the
    /// path or query read, `server:tool`, the skill; the team user or `operator` for a
    /// person's own words. At most [`MAX_SOURCE_CHARS`] characters.
    pub source: String,
    /// Whether a person did not write it ([`InputKind::untrusted`]).
    pub untrusted: bool,
}

impl Input {
    fn new(kind: InputKind, source: &str) -> Self {
        Self {
            kind,
            source: capped(source),
            untrusted: kind.untrusted(),
        }
    }
}

/// Why a call is asked for (see the module documentation for what counts as an input).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    /// The model's visible text in the turn that made the call, whole (the model's
    /// words, to be shown quoted); `null` when it wrote none.
    pub model_text: Option<String>,
    /// What the task took in since the person's last message, newest first, at most
    /// [`MAX_INPUTS`].
    pub inputs: Vec<Input>,
    /// How many older inputs were left out of `inputs`.
    pub more: usize,
    /// Whether any input, listed or left out, is untrusted: the call follows untrusted
    /// input.
    pub untrusted_input: bool,
}

impl Provenance {
    /// The provenance of the pending call `call_id` (a checkpoint's `pending.call.id`)
    /// after `messages` (the checkpoint's), in `task` (`None`: the task could not be
    /// read, so who wrote its prompt is unknown and the prompt is left out).
    pub fn of(messages: &[Message], call_id: &str, task: Option<&TaskRecord>) -> Self {
        // The turn that made the pending call: the assistant message holding it (the
        // last one in any checkpoint the loop writes).
        let turn = messages
            .iter()
            .rposition(|message| match message {
                Message::Assistant { tool_calls, .. } => {
                    tool_calls.iter().any(|call| call.id == call_id)
                }
                _ => false,
            })
            .or_else(|| {
                messages
                    .iter()
                    .rposition(|message| matches!(message, Message::Assistant { .. }))
            });
        let model_text = turn
            .and_then(|index| messages.get(index))
            .and_then(|message| match message {
                Message::Assistant { content, .. } => content.clone(),
                _ => None,
            })
            .filter(|text| !text.trim().is_empty());
        let before_turn = messages
            .get(..turn.unwrap_or(messages.len()))
            .unwrap_or(messages);
        let user = before_turn
            .iter()
            .rposition(|message| matches!(message, Message::User { .. }));

        // Oldest first while collecting.
        let mut inputs = Vec::new();
        if let (Some(user), Some(task)) = (user, task) {
            let earlier = before_turn.get(..user).unwrap_or_default();
            let chat = earlier
                .iter()
                .any(|message| !matches!(message, Message::System { .. }));
            inputs.push(prompt_input(task, chat));
        }
        let since = before_turn
            .get(user.map_or(0, |user| user + 1)..)
            .unwrap_or_default();
        let calls: HashMap<&str, &ToolCall> = since
            .iter()
            .flat_map(|message| match message {
                Message::Assistant { tool_calls, .. } => tool_calls.as_slice(),
                _ => &[],
            })
            .map(|call| (call.id.as_str(), call))
            .collect();
        inputs.extend(since.iter().filter_map(|message| {
            match message {
                Message::Tool { tool_call_id, .. } => calls
                    .get(tool_call_id.as_str())
                    .and_then(|call| answer_input(call)),
                _ => None,
            }
        }));

        let untrusted_input = inputs.iter().any(|input| input.untrusted);
        let more = inputs.len().saturating_sub(MAX_INPUTS);
        inputs.reverse();
        inputs.truncate(MAX_INPUTS);
        Self {
            model_text,
            inputs,
            more,
            untrusted_input,
        }
    }
}

/// The task's prompt as an input: by who created it (`chat`: a chat session's turn).
fn prompt_input(task: &TaskRecord, chat: bool) -> Input {
    let origin = |fallback: &str| task.origin.clone().unwrap_or_else(|| fallback.to_owned());
    let person = || {
        task.created_by_user
            .clone()
            .unwrap_or_else(|| Actor::Operator.as_str().to_owned())
    };
    match task.created_by {
        Actor::Webhook => Input::new(InputKind::Webhook, &origin("webhook")),
        Actor::Scheduler => Input::new(InputKind::Schedule, &origin("schedule")),
        Actor::McpClient => Input::new(InputKind::McpClient, &origin("mcp_client")),
        // The agent never creates a task; a person's prompt is the only other road.
        Actor::Operator | Actor::Agent if chat => Input::new(InputKind::Message, &person()),
        Actor::Operator | Actor::Agent => Input::new(InputKind::Prompt, &person()),
    }
}

/// The answer to `call` as an input, if its tool brings outside text in: a built-in
/// tool says so itself ([`pp_tools::input_of`]: the tools own their argument names);
/// an MCP server's tool always does.
fn answer_input(call: &ToolCall) -> Option<Input> {
    if let Some((source, from)) = pp_tools::input_of(&call.name, &call.arguments) {
        let kind = match source {
            InputSource::Workspace => InputKind::FileRead,
            InputSource::Document => InputKind::Document,
            InputSource::Skill => InputKind::Skill,
        };
        return Some(Input::new(kind, &from));
    }
    // pp-mcp names a server's tool `<server>__<tool>`; no built-in tool has `__`.
    let (server, tool) = call.name.split_once("__")?;
    if server.is_empty() || tool.is_empty() {
        return None;
    }
    Some(Input::new(
        InputKind::McpOutput,
        &format!("{server}:{tool}"),
    ))
}

/// `text`, cut at [`MAX_SOURCE_CHARS`] characters with `…`.
fn capped(text: &str) -> String {
    if text.chars().count() <= MAX_SOURCE_CHARS {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(MAX_SOURCE_CHARS - 1).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
#[path = "provenance_tests.rs"]
mod tests;
