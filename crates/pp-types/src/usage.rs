//! What a task's model calls used, in tokens and (with a price table) money.

use serde::{Deserialize, Serialize};

use crate::Usage;

/// The sum of a task's model calls, as `GET /api/tasks/{id}` and `tasks show` give it.
///
/// Calls whose provider reported no usage count in `model_calls` only.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskUsage {
    /// Tokens in the requests (cached ones included).
    pub prompt_tokens: u64,
    /// Tokens in the answers (reasoning included).
    pub completion_tokens: u64,
    /// Of `prompt_tokens`, those served from the provider's prompt cache.
    pub cached_tokens: u64,
    /// Of `completion_tokens`, those spent on hidden reasoning.
    pub reasoning_tokens: u64,
    /// `prompt_tokens + completion_tokens`: what `[tasks] max_tokens` limits.
    pub total_tokens: u64,
    /// Model calls made, answered or not by a usage report.
    pub model_calls: u64,
    /// The estimated cost; absent when a call's model has no price in `[model] prices`
    /// (or the prices mix currencies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Cost>,
}

impl TaskUsage {
    /// Adds one call's usage (and counts the call).
    pub fn add_call(&mut self, usage: Option<Usage>) {
        self.model_calls = self.model_calls.saturating_add(1);
        if let Some(usage) = usage {
            self.prompt_tokens = self.prompt_tokens.saturating_add(usage.prompt_tokens);
            self.completion_tokens = self
                .completion_tokens
                .saturating_add(usage.completion_tokens);
            self.cached_tokens = self.cached_tokens.saturating_add(usage.cached_tokens);
            self.reasoning_tokens = self.reasoning_tokens.saturating_add(usage.reasoning_tokens);
            self.total_tokens = self.total_tokens.saturating_add(usage.total());
        }
    }
}

/// An amount of money, estimated from a price table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    /// The amount, in `currency` units (not rounded: front ends round for display).
    pub amount: f64,
    /// The price table's currency code (`USD` unless configured otherwise).
    pub currency: String,
}
