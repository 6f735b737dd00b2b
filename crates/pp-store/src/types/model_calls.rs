//! The model calls a task made, with their usage and estimated cost.

use pp_types::{Cost, Timestamp, Usage};

/// One model call to record.
#[derive(Debug, Clone, PartialEq)]
pub struct NewModelCall {
    /// The loop step that made it.
    pub step: u32,
    /// The model's display name (`openai-compatible:gpt-4o-mini`).
    pub model: String,
    /// What the provider reported; `None` counts the call with zero tokens.
    pub usage: Option<Usage>,
    /// The estimate from the price table, when the model has a price.
    pub cost: Option<Cost>,
}

/// One recorded model call.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelCallRow {
    /// The loop step that made it.
    pub step: u32,
    /// The model's display name.
    pub model: String,
    /// What the provider reported (`None`: nothing).
    pub usage: Option<Usage>,
    /// The estimated cost, if the model had a price.
    pub cost: Option<Cost>,
    /// When it was recorded.
    pub at: Timestamp,
}
