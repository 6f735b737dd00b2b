//! Fitting a conversation into a context window: drop the oldest turns first, never
//! split an assistant tool call from its results, never drop the system prompt or the
//! latest user message.

use pp_types::Message;

/// Rough token count of one message: characters / 4, rounded up, plus 4 for the role
/// and framing. Good enough to stay under a window; use the provider's figures
/// (`Usage::prompt_tokens`) when they are known.
pub fn estimate_tokens(message: &Message) -> u64 {
    let chars = match message {
        Message::System { content } | Message::User { content } => content.chars().count(),
        Message::Tool {
            tool_call_id,
            content,
        } => tool_call_id.chars().count() + content.chars().count(),
        Message::Assistant {
            content,
            tool_calls,
            reasoning_content,
        } => {
            content.as_deref().map_or(0, |text| text.chars().count())
                + reasoning_content
                    .as_deref()
                    .map_or(0, |text| text.chars().count())
                + tool_calls
                    .iter()
                    .map(|call| {
                        call.id.chars().count()
                            + call.name.chars().count()
                            + call.arguments.chars().count()
                    })
                    .sum::<usize>()
        }
    };
    u64::try_from(chars.div_ceil(4))
        .unwrap_or(u64::MAX)
        .saturating_add(4)
}

/// The result of [`trim_to_window`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trimmed {
    /// The messages to send, in order.
    pub kept: Vec<Message>,
    /// What was left out, in original order (for a `context_trimmed` event).
    pub dropped: Vec<Message>,
    /// The estimate of `kept`.
    pub kept_tokens: u64,
    /// Whether `kept` fits the window (false when even the pinned messages do not).
    pub fits: bool,
}

/// Drops the oldest droppable groups of `messages` until the estimate fits in
/// `window_tokens`.
///
/// A group is a single message, or an assistant turn with tool calls together with the
/// tool results that follow it. System messages and the latest user message (and the
/// group it sits in) are never dropped. Tool results whose assistant turn is gone
/// already are dropped first, as they are useless alone.
pub fn trim_to_window(
    messages: Vec<Message>,
    window_tokens: u64,
    estimate: impl Fn(&Message) -> u64,
) -> Trimmed {
    let costs: Vec<u64> = messages.iter().map(&estimate).collect();
    let total: u64 = costs.iter().sum();
    if total <= window_tokens {
        return Trimmed {
            kept: messages,
            dropped: Vec::new(),
            kept_tokens: total,
            fits: true,
        };
    }
    let groups = groups(&messages);
    let last_user = messages
        .iter()
        .rposition(|message| matches!(message, Message::User { .. }));
    let mut drop = vec![false; messages.len()];
    let mut kept_tokens = total;
    // Orphaned tool results first, then everything else oldest first.
    let orphans = groups.iter().filter(|group| group.orphan);
    let rest = groups.iter().filter(|group| !group.orphan);
    for group in orphans.chain(rest) {
        if kept_tokens <= window_tokens && !group.orphan {
            break;
        }
        let pinned = (group.start..group.end).any(|index| {
            Some(index) == last_user || matches!(messages.get(index), Some(Message::System { .. }))
        });
        if pinned {
            continue;
        }
        for index in group.start..group.end {
            if let Some(flag) = drop.get_mut(index) {
                *flag = true;
            }
            kept_tokens = kept_tokens.saturating_sub(costs.get(index).copied().unwrap_or(0));
        }
    }
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    for (message, dropped_flag) in messages.into_iter().zip(drop) {
        if dropped_flag {
            dropped.push(message);
        } else {
            kept.push(message);
        }
    }
    Trimmed {
        kept,
        dropped,
        kept_tokens,
        fits: kept_tokens <= window_tokens,
    }
}

struct Group {
    start: usize,
    end: usize,
    /// Tool results with no assistant turn before them.
    orphan: bool,
}

fn groups(messages: &[Message]) -> Vec<Group> {
    let mut groups = Vec::new();
    let mut index = 0;
    while index < messages.len() {
        let start = index;
        let opens_calls = matches!(
            messages.get(index),
            Some(Message::Assistant { tool_calls, .. }) if !tool_calls.is_empty()
        );
        let orphan = matches!(messages.get(index), Some(Message::Tool { .. }));
        index += 1;
        if opens_calls || orphan {
            while matches!(messages.get(index), Some(Message::Tool { .. })) {
                index += 1;
            }
        }
        groups.push(Group {
            start,
            end: index,
            orphan,
        });
    }
    groups
}

#[cfg(test)]
mod tests {
    use pp_types::ToolCall;
    use pretty_assertions::assert_eq;

    use super::*;

    fn assistant_call(id: &str) -> Message {
        Message::Assistant {
            content: None,
            tool_calls: vec![ToolCall {
                id: id.into(),
                name: "read_file".into(),
                arguments: "{}".into(),
            }],
            reasoning_content: None,
        }
    }

    fn text(message: &str) -> Message {
        Message::Assistant {
            content: Some(message.into()),
            tool_calls: Vec::new(),
            reasoning_content: None,
        }
    }

    /// Every message costs 10.
    fn ten(_: &Message) -> u64 {
        10
    }

    #[test]
    fn keeps_everything_that_fits() {
        let messages = vec![Message::system("s"), Message::user("u")];
        let trimmed = trim_to_window(messages.clone(), 20, ten);
        assert_eq!(trimmed.kept, messages);
        assert!(trimmed.dropped.is_empty() && trimmed.fits);
    }

    #[test]
    fn drops_oldest_groups_whole_and_pins_system_and_latest_user() {
        let messages = vec![
            Message::system("s"),
            Message::user("old question"),
            assistant_call("a"),
            Message::tool("a", "result a"),
            text("old answer"),
            Message::user("new question"),
            assistant_call("b"),
            Message::tool("b", "result b"),
        ];
        // 80 in all; a window of 50 must drop 30: the old user (10), then the whole
        // call group a (20) — never the call without its result.
        let trimmed = trim_to_window(messages.clone(), 50, ten);
        assert_eq!(
            trimmed.dropped,
            vec![
                Message::user("old question"),
                assistant_call("a"),
                Message::tool("a", "result a")
            ]
        );
        assert_eq!(trimmed.kept_tokens, 50);
        assert!(trimmed.fits);
        // A window too small for anything keeps only the pinned messages.
        let tiny = trim_to_window(messages, 5, ten);
        assert_eq!(
            tiny.kept,
            vec![Message::system("s"), Message::user("new question")]
        );
        assert!(!tiny.fits);
    }

    #[test]
    fn drops_orphaned_tool_results_first() {
        let messages = vec![
            Message::system("s"),
            Message::tool("gone", "orphan"),
            Message::user("q1"),
            Message::user("q2"),
        ];
        let trimmed = trim_to_window(messages, 30, ten);
        assert_eq!(trimmed.dropped, vec![Message::tool("gone", "orphan")]);
    }

    #[test]
    fn estimates_by_characters() {
        assert_eq!(estimate_tokens(&Message::user("12345678")), 6);
        assert_eq!(estimate_tokens(&Message::user("")), 4);
    }
}
