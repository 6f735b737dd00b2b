//! [`Money`]: an amount in integer cents (fen), so sums are exact.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An amount of yuan in cents. Serialised as a decimal string with two places
/// (`"1130.00"`); read from such a string (with or without `¥`, `￥`, thousands commas)
/// or from a JSON number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Money(pub i64);

impl Money {
    /// The amount in cents.
    pub fn cents(self) -> i64 {
        self.0
    }

    /// Parses `¥1,130.00`, `-12.5`, `100`; `None` for anything else (more than two
    /// non-zero decimals, letters, an empty string).
    pub fn parse(text: &str) -> Option<Money> {
        let cleaned: String = text
            .trim()
            .chars()
            .filter(|c| !matches!(c, '¥' | '￥' | ',' | '，' | ' ' | '\u{3000}'))
            .collect();
        let (negative, body) = match cleaned.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, cleaned.as_str()),
        };
        let (whole, fraction) = body.split_once('.').unwrap_or((body, ""));
        if whole.is_empty() || whole.len() > 15 || !whole.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        if !fraction.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let (kept, rest) = fraction.split_at(fraction.len().min(2));
        if rest.bytes().any(|b| b != b'0') {
            return None;
        }
        let whole: i64 = whole.parse().ok()?;
        let mut cents: i64 = kept.parse::<i64>().unwrap_or(0);
        if kept.len() == 1 {
            cents *= 10;
        }
        let value = whole.checked_mul(100)?.checked_add(cents)?;
        Some(Money(if negative { -value } else { value }))
    }

    /// The amount from a JSON value (a string or a number); `None` when it is neither or
    /// not an amount.
    pub fn from_json(value: &serde_json::Value) -> Option<Money> {
        match value {
            serde_json::Value::String(text) => Money::parse(text),
            serde_json::Value::Number(number) => Money::parse(&number.to_string()),
            _ => None,
        }
    }
}

impl std::fmt::Display for Money {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        let absolute = self.0.unsigned_abs();
        write!(formatter, "{sign}{}.{:02}", absolute / 100, absolute % 100)
    }
}

impl Serialize for Money {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Money {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        Money::from_json(&value)
            .ok_or_else(|| serde::de::Error::custom(format!("not an amount of money: {value}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_parse_exactly() {
        assert_eq!(Money::parse("¥1,130.00"), Some(Money(113_000)));
        assert_eq!(Money::parse("￥ 0.1"), Some(Money(10)));
        assert_eq!(Money::parse("-12.34"), Some(Money(-1234)));
        assert_eq!(Money::parse("7"), Some(Money(700)));
        assert_eq!(Money::parse("1.2300"), Some(Money(123)));
        assert_eq!(Money::parse("1.234"), None);
        assert_eq!(Money::parse("12a"), None);
        assert_eq!(Money::parse(""), None);
        assert_eq!(Money::parse(".5"), None);
    }

    #[test]
    fn amounts_print_with_two_places_and_round_trip_through_json() {
        assert_eq!(Money(-5).to_string(), "-0.05");
        assert_eq!(Money(113_000).to_string(), "1130.00");
        let json = serde_json::to_string(&Money(1234)).unwrap();
        assert_eq!(json, "\"12.34\"");
        assert_eq!(serde_json::from_str::<Money>(&json).unwrap(), Money(1234));
        assert_eq!(serde_json::from_str::<Money>("12.5").unwrap(), Money(1250));
        assert!(serde_json::from_str::<Money>("true").is_err());
    }
}
