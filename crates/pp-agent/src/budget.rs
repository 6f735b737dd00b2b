//! The token budget: would the next model call pass it?
//!
//! A call's usage is known only after it ran, so the loop estimates the next call before
//! making it and stops the task when `tokens used + estimate > budget`:
//!
//! - **its prompt**: when the last call reported usage, the next request is that
//!   request plus the answer it got plus what was added since (the tool results), so the
//!   estimate is `last prompt_tokens + last completion_tokens` plus the
//!   [`estimate_tokens`] of the messages after the last assistant turn. Without a
//!   report (the first call, or a provider that sends none), it is the
//!   [`estimate_tokens`] of every message sent plus the tool definitions' JSON at four
//!   characters a token.
//! - **its answer**: as long as the last one (`last completion_tokens`; 0 before any
//!   report).
//!
//! The estimate uses the provider's own figures wherever it can, so it errs by the size
//! of the newest tool results' estimate and the difference between two answers.

use pp_types::{Message, Usage};

use crate::{ToolDefinition, estimate_tokens};

/// The estimated tokens of the next call: its prompt (`sent`, or the last call's
/// `last` figures plus what `history` gained after its last assistant turn) plus an
/// answer as long as the last one.
pub fn estimate_next_call(
    sent: &[Message],
    definitions: &[ToolDefinition],
    history: &[Message],
    last: Option<Usage>,
) -> u64 {
    match last {
        Some(last) => {
            let newest = history
                .iter()
                .rposition(|message| matches!(message, Message::Assistant { .. }))
                .map_or(history, |index| {
                    history.get(index + 1..).unwrap_or_default()
                });
            let added: u64 = newest.iter().map(estimate_tokens).sum();
            last.prompt_tokens
                .saturating_add(last.completion_tokens)
                .saturating_add(added)
                .saturating_add(last.completion_tokens)
        }
        None => {
            let messages: u64 = sent.iter().map(estimate_tokens).sum();
            let tools: usize = definitions
                .iter()
                .map(|tool| {
                    tool.name.len() + tool.description.len() + tool.parameters.to_string().len()
                })
                .sum();
            messages.saturating_add(u64::try_from(tools.div_ceil(4)).unwrap_or(u64::MAX))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pp_types::ToolCall;
    use serde_json::json;

    fn usage(prompt_tokens: u64, completion_tokens: u64) -> Usage {
        Usage {
            prompt_tokens,
            completion_tokens,
            ..Usage::default()
        }
    }

    #[test]
    fn without_a_report_the_whole_request_is_estimated() {
        let sent = vec![
            Message::system("s".repeat(40)),
            Message::user("u".repeat(8)),
        ];
        let tools = vec![ToolDefinition {
            name: "read".into(),
            description: "read it".into(),
            parameters: json!({}),
        }];
        // (40/4 + 4) + (8/4 + 4) for the messages; "read" + "read it" + "{}" = 13 chars
        // → 4 tokens for the tools.
        assert_eq!(estimate_next_call(&sent, &tools, &sent, None), 14 + 6 + 4);
    }

    #[test]
    fn after_a_report_the_last_figures_and_the_new_results_count() {
        let history = vec![
            Message::system("s".repeat(4000)),
            Message::user("go"),
            Message::Assistant {
                content: None,
                tool_calls: vec![ToolCall {
                    id: "c".into(),
                    name: "read".into(),
                    arguments: "{}".into(),
                }],
                reasoning_content: None,
            },
            Message::tool("c", "r".repeat(399)),
        ];
        // The tool answer: (1 + 399) / 4 + 4 = 104; the prompt repeats the last request
        // and answer (100 + 20); the answer is assumed as long as the last (20).
        assert_eq!(
            estimate_next_call(&history, &[], &history, Some(usage(100, 20))),
            100 + 20 + 104 + 20
        );
    }
}
