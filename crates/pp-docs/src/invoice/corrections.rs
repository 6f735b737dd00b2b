//! The model's corrections to a record: `{"<field>": value}`, applied in the parent and
//! then validated like extracted values (never trusted).

use serde_json::{Map, Value};

use super::{FIELDS, InvoiceItem, InvoiceKind, InvoiceRecord, Money, parse_date};

/// Applies `corrections` to `record`; returns the corrected field names. An unknown
/// field or a value of the wrong shape is an error naming it (nothing is applied then).
pub fn apply(
    record: &mut InvoiceRecord,
    corrections: &Map<String, Value>,
) -> Result<Vec<String>, String> {
    let mut corrected = record.clone();
    let mut names = Vec::new();
    for (field, value) in corrections {
        set(&mut corrected, field, value)?;
        corrected.confidence.insert(field.clone(), 1.0);
        names.push(field.clone());
    }
    *record = corrected;
    Ok(names)
}

fn text(field: &str, value: &Value) -> Result<Option<String>, String> {
    match value {
        Value::Null => Ok(None),
        Value::String(text) => Ok(super::clean(text)),
        Value::Number(number) => Ok(Some(number.to_string())),
        other => Err(format!("`{field}` must be a string (or null), not {other}")),
    }
}

fn money(field: &str, value: &Value) -> Result<Option<Money>, String> {
    if value.is_null() {
        return Ok(None);
    }
    Money::from_json(value).map(Some).ok_or_else(|| {
        format!("`{field}` must be an amount like \"1130.00\" (at most two decimals), not {value}")
    })
}

fn set(record: &mut InvoiceRecord, field: &str, value: &Value) -> Result<(), String> {
    match field {
        "kind" => {
            record.kind = serde_json::from_value::<InvoiceKind>(value.clone()).map_err(|_| {
                format!(
                    "`kind` must be one of fully_digital, special_vat, ordinary_vat, other; not {value}"
                )
            })?;
        }
        "number" => record.number = text(field, value)?,
        "code" => record.code = text(field, value)?,
        "issue_date" => {
            record.issue_date = match text(field, value)? {
                None => None,
                Some(date) => Some(parse_date(&date).ok_or_else(|| {
                    format!("`issue_date` must be a date like 2024-05-12, not `{date}`")
                })?),
            };
        }
        "buyer_name" => record.buyer_name = text(field, value)?,
        "buyer_tax_id" => record.buyer_tax_id = text(field, value)?,
        "seller_name" => record.seller_name = text(field, value)?,
        "seller_tax_id" => record.seller_tax_id = text(field, value)?,
        "total_in_words" => record.total_in_words = text(field, value)?,
        "remarks" => record.remarks = text(field, value)?,
        "amount" => record.amount = money(field, value)?,
        "tax" => record.tax = money(field, value)?,
        "total" => record.total = money(field, value)?,
        "items" => {
            record.items =
                serde_json::from_value::<Vec<InvoiceItem>>(value.clone()).map_err(|error| {
                    format!(
                        "`items` must be an array of {{name, spec, unit, quantity, unit_price, \
                         amount, tax_rate, tax}}: {error}"
                    )
                })?;
        }
        "source" => {
            return Err(
                "`source` cannot be corrected: it says where the record was read".to_owned(),
            );
        }
        other => {
            return Err(format!(
                "unknown field `{other}`; fields that can be corrected: {}",
                FIELDS
                    .iter()
                    .filter(|name| **name != "source")
                    .copied()
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(value: &Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn corrections_set_fields_and_mark_them_sure() {
        let mut record = InvoiceRecord::default();
        let names = apply(
            &mut record,
            &map(
                &json!({"total": "1130.00", "issue_date": "2024年5月2日", "kind": "special_vat",
                        "items": [{"name": "纸", "amount": 12.5}]}),
            ),
        )
        .unwrap();
        assert_eq!(names.len(), 4);
        assert_eq!(record.total, Some(Money(113_000)));
        assert_eq!(record.issue_date.as_deref(), Some("2024-05-02"));
        assert_eq!(record.kind, InvoiceKind::SpecialVat);
        assert_eq!(record.items[0].amount, Some(Money(1250)));
        assert_eq!(record.confidence.get("total"), Some(&1.0));
    }

    #[test]
    fn bad_corrections_are_errors_and_change_nothing() {
        let mut record = InvoiceRecord::default();
        for (bad, said) in [
            (json!({"totl": "1"}), "unknown field `totl`"),
            (
                json!({"number": "1", "total": "abc"}),
                "`total` must be an amount",
            ),
            (
                json!({"issue_date": "tomorrow"}),
                "`issue_date` must be a date",
            ),
            (json!({"kind": "receipt"}), "`kind` must be one of"),
            (json!({"source": "xml"}), "cannot be corrected"),
            (json!({"items": "many"}), "`items` must be an array"),
        ] {
            let error = apply(&mut record, &map(&bad)).unwrap_err();
            assert!(error.contains(said), "{error}");
        }
        assert_eq!(record, InvoiceRecord::default());
    }
}
