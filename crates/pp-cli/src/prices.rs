//! `[model] prices`: per-model token prices for the cost estimate of each model call.
//!
//! ```toml
//! [model.prices."gpt-4o-mini"]
//! prompt = 0.15        # per million uncached prompt tokens
//! completion = 0.60    # per million completion tokens (reasoning included)
//! cached = 0.075       # per million cached prompt tokens (default: the prompt price)
//! currency = "USD"     # ISO 4217 code (default USD)
//! ```

use std::collections::BTreeMap;

use pp_types::{DEFAULT_CURRENCY, ModelPrice, Prices};
use serde::Deserialize;

use crate::Exit;

/// One `[model.prices."<model>"]` entry, as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FilePrice {
    prompt: f64,
    completion: f64,
    cached: Option<f64>,
    currency: Option<String>,
}

/// The price table, or a usage error naming the entry and the field that is wrong.
pub(crate) fn resolve(file: Option<&BTreeMap<String, FilePrice>>) -> anyhow::Result<Prices> {
    let Some(file) = file else {
        return Ok(Prices::default());
    };
    let mut models = BTreeMap::new();
    for (model, price) in file {
        if model.trim().is_empty() {
            return Err(
                Exit::usage("`[model] prices` has an entry with an empty model name").into(),
            );
        }
        let amount = |field: &str, value: f64| -> anyhow::Result<f64> {
            if value.is_finite() && value >= 0.0 {
                Ok(value)
            } else {
                Err(Exit::usage(format!(
                    "`[model] prices` for `{model}`: `{field}` must be a number of at least 0 \
                     (per million tokens), not {value}"
                ))
                .into())
            }
        };
        let currency = match price.currency.as_deref() {
            None => DEFAULT_CURRENCY.to_owned(),
            Some(code) if code.len() == 3 && code.chars().all(|c| c.is_ascii_alphabetic()) => {
                code.to_ascii_uppercase()
            }
            Some(code) => {
                return Err(Exit::usage(format!(
                    "`[model] prices` for `{model}`: `currency` must be a three-letter code \
                     such as \"USD\", not {code:?}"
                ))
                .into());
            }
        };
        models.insert(
            model.clone(),
            ModelPrice {
                prompt: amount("prompt", price.prompt)?,
                completion: amount("completion", price.completion)?,
                cached: price
                    .cached
                    .map(|cached| amount("cached", cached))
                    .transpose()?,
                currency,
            },
        );
    }
    Ok(Prices::new(models))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse;
    use pp_types::Usage;

    fn prices(text: &str) -> anyhow::Result<Prices> {
        let config = parse(text).map_err(anyhow::Error::msg)?;
        resolve(
            config
                .model
                .as_ref()
                .and_then(|model| model.prices.as_ref()),
        )
    }

    #[test]
    fn a_price_table_parses_and_prices_a_call() {
        let prices = prices(
            r#"
            [model]
            model = "gpt-x"
            [model.prices."gpt-x"]
            prompt = 1.0
            completion = 4
            cached = 0.25
            currency = "eur"
            [model.prices.other]
            prompt = 3
            completion = 15
            "#,
        )
        .unwrap();
        let usage = Usage {
            prompt_tokens: 2_000_000,
            completion_tokens: 1_000_000,
            cached_tokens: 1_000_000,
            reasoning_tokens: 0,
        };
        let cost = prices.cost("openai-compatible:gpt-x", Some(usage)).unwrap();
        assert_eq!(cost.currency, "EUR");
        assert!((cost.amount - (1.0 + 0.25 + 4.0)).abs() < 1e-9, "{cost:?}");
        let other = prices.cost("other", Some(usage)).unwrap();
        assert_eq!(other.currency, "USD");
        assert!((other.amount - (6.0 + 15.0)).abs() < 1e-9, "{other:?}");
        assert!(prices.cost("unpriced", Some(usage)).is_none());
    }

    #[test]
    fn no_table_means_no_prices() {
        assert!(prices("").unwrap().is_empty());
        assert!(prices("[model]\nmodel = \"m\"\n").unwrap().is_empty());
    }

    #[test]
    fn bad_prices_are_refused_with_the_entry_named() {
        let message = |text: &str| format!("{:#}", prices(text).unwrap_err());
        let negative = message("[model.prices.m]\nprompt = -1\ncompletion = 1\n");
        assert!(
            negative.contains("for `m`: `prompt` must be a number of at least 0"),
            "{negative}"
        );
        let nan = message("[model.prices.m]\nprompt = 1\ncompletion = nan\n");
        assert!(nan.contains("`completion` must be"), "{nan}");
        let cached = message("[model.prices.m]\nprompt = 1\ncompletion = 1\ncached = -0.5\n");
        assert!(cached.contains("`cached` must be"), "{cached}");
        let currency =
            message("[model.prices.m]\nprompt = 1\ncompletion = 1\ncurrency = \"dollars\"\n");
        assert!(currency.contains("three-letter code"), "{currency}");
        let empty = message("[model.prices.\"\"]\nprompt = 1\ncompletion = 1\n");
        assert!(empty.contains("empty model name"), "{empty}");
        // Parse errors: a missing field, an unknown one, a string for a number.
        let missing = message("[model.prices.m]\nprompt = 1\n");
        assert!(missing.contains("completion"), "{missing}");
        let unknown = message("[model.prices.m]\nprompt = 1\ncompletion = 1\ninput = 2\n");
        assert!(unknown.contains("input"), "{unknown}");
        let text = message("[model.prices.m]\nprompt = \"cheap\"\ncompletion = 1\n");
        assert!(text.contains("prompt"), "{text}");
    }
}
