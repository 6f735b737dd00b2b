//! `[model] prices`: what a model's tokens cost, for the cost estimate of each call
//! (beside [`Cost`], the estimate it yields).

use std::collections::BTreeMap;

use crate::{Cost, Usage};

/// The currency of a price that names none.
pub const DEFAULT_CURRENCY: &str = "USD";

/// One model's prices, per million tokens.
///
/// A call costs `(prompt − cached) × prompt + cached × cached_price + completion ×
/// completion_price`, over a million (reasoning tokens are part of the completion and
/// billed as such).
#[derive(Debug, Clone, PartialEq)]
pub struct ModelPrice {
    /// Per million uncached prompt tokens.
    pub prompt: f64,
    /// Per million completion tokens (reasoning included).
    pub completion: f64,
    /// Per million cached prompt tokens (`None`: the prompt price).
    pub cached: Option<f64>,
    /// The currency code (`USD` unless configured).
    pub currency: String,
}

// The configuration accepts finite, non-negative prices only, so equality is reflexive.
impl Eq for ModelPrice {}

impl ModelPrice {
    /// The estimated cost of one call's `usage`.
    pub fn cost(&self, usage: Usage) -> Cost {
        let cached = usage.cached_tokens.min(usage.prompt_tokens);
        let uncached = usage.prompt_tokens - cached;
        // Token counts stay far below 2^53, where f64 is exact.
        #[expect(clippy::cast_precision_loss, reason = "token counts are below 2^53")]
        let amount = (uncached as f64 * self.prompt
            + cached as f64 * self.cached.unwrap_or(self.prompt)
            + usage.completion_tokens as f64 * self.completion)
            / 1_000_000.0;
        Cost {
            amount,
            currency: self.currency.clone(),
        }
    }
}

/// The price table: model name → prices. Empty by default (no cost estimates).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prices {
    models: BTreeMap<String, ModelPrice>,
}

impl Prices {
    /// A table of `models`, keyed by the model's name as `[model] name` writes it.
    pub fn new(models: BTreeMap<String, ModelPrice>) -> Self {
        Self { models }
    }

    /// Whether no model has a price.
    pub fn is_empty(&self) -> bool {
        self.models.is_empty()
    }

    /// The price of `model`: a display name (`openai-compatible:gpt-4o-mini`) is looked
    /// up whole first, then by the part after its provider prefix (`gpt-4o-mini`).
    pub fn price(&self, model: &str) -> Option<&ModelPrice> {
        self.models.get(model).or_else(|| {
            let (_, name) = model.split_once(':')?;
            self.models.get(name)
        })
    }

    /// The estimated cost of one call of `model`; `None` without a price or a usage
    /// report (a call whose tokens are unknown has an unknown cost).
    pub fn cost(&self, model: &str, usage: Option<Usage>) -> Option<Cost> {
        Some(self.price(model)?.cost(usage?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn price() -> ModelPrice {
        ModelPrice {
            prompt: 2.0,
            completion: 8.0,
            cached: Some(0.5),
            currency: "EUR".into(),
        }
    }

    #[test]
    fn cached_tokens_get_their_own_price() {
        let usage = Usage {
            prompt_tokens: 1_000_000,
            completion_tokens: 500_000,
            cached_tokens: 400_000,
            reasoning_tokens: 100_000,
        };
        // 600k × 2 + 400k × 0.5 + 500k × 8, per million.
        let cost = price().cost(usage);
        assert!((cost.amount - (1.2 + 0.2 + 4.0)).abs() < 1e-9, "{cost:?}");
        assert_eq!(cost.currency, "EUR");
        let no_cached_price = ModelPrice {
            cached: None,
            ..price()
        };
        assert!((no_cached_price.cost(usage).amount - (2.0 + 4.0)).abs() < 1e-9);
    }

    #[test]
    fn models_are_found_with_or_without_their_provider_prefix() {
        let prices = Prices::new(BTreeMap::from([("gpt-x".to_owned(), price())]));
        let usage = Some(Usage {
            prompt_tokens: 1000,
            ..Usage::default()
        });
        assert!(prices.cost("openai-compatible:gpt-x", usage).is_some());
        assert!(prices.cost("gpt-x", usage).is_some());
        assert!(prices.cost("openai-compatible:gpt-y", usage).is_none());
        assert!(prices.cost("scripted", usage).is_none());
        assert!(prices.cost("gpt-x", None).is_none(), "no report, no cost");
    }
}
