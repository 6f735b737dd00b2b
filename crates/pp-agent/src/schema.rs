//! A small JSON Schema validator for tool arguments.
//!
//! Tool schemas use a plain subset of JSON Schema: `type` (one name or a list),
//! `properties`, `required`, `additionalProperties` (boolean), `items`, `enum`,
//! `minimum`/`maximum`, `minLength`/`maxLength`. Anything else in a schema is ignored,
//! so a richer schema from an MCP server validates at least as strictly as this subset.
//! Errors name the JSON path of the first offending value.

use serde_json::{Map, Value};

/// Checks `value` against `schema`; the error names the offending path.
pub fn validate(schema: &Value, value: &Value) -> Result<(), String> {
    check(schema, value, "arguments")
}

/// Whether `schema` declares a top-level property `name`.
pub fn has_property(schema: &Value, name: &str) -> bool {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|properties| properties.contains_key(name))
}

fn check(schema: &Value, value: &Value, at: &str) -> Result<(), String> {
    let Some(schema) = schema.as_object() else {
        // `true`, `{}` or a non-object schema accepts anything.
        return match schema {
            Value::Bool(false) => Err(format!("{at} is not allowed")),
            _ => Ok(()),
        };
    };
    if let Some(expected) = schema.get("type") {
        check_type(expected, value, at)?;
    }
    if let Some(Value::Array(allowed)) = schema.get("enum")
        && !allowed.contains(value)
    {
        return Err(format!(
            "{at} must be one of {}",
            Value::Array(allowed.clone())
        ));
    }
    match value {
        Value::Object(object) => check_object(schema, object, at),
        Value::Array(items) => match schema.get("items") {
            Some(item_schema) => items
                .iter()
                .enumerate()
                .try_for_each(|(index, item)| check(item_schema, item, &format!("{at}[{index}]"))),
            None => Ok(()),
        },
        Value::Number(number) => check_range(schema, number.as_f64().unwrap_or(f64::NAN), at),
        Value::String(text) => check_length(schema, text.chars().count(), at),
        Value::Null | Value::Bool(_) => Ok(()),
    }
}

fn check_type(expected: &Value, value: &Value, at: &str) -> Result<(), String> {
    let names: Vec<&str> = match expected {
        Value::String(name) => vec![name.as_str()],
        Value::Array(names) => names.iter().filter_map(Value::as_str).collect(),
        _ => return Ok(()),
    };
    if names.iter().any(|name| type_matches(name, value)) {
        Ok(())
    } else {
        Err(format!(
            "{at} must be {}, not {}",
            names.join(" or "),
            type_name(value)
        ))
    }
}

fn type_matches(name: &str, value: &Value) -> bool {
    match name {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        "number" => value.is_number(),
        "integer" => value.is_i64() || value.is_u64(),
        _ => false,
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn check_object(
    schema: &Map<String, Value>,
    object: &Map<String, Value>,
    at: &str,
) -> Result<(), String> {
    if let Some(Value::Array(required)) = schema.get("required") {
        for name in required.iter().filter_map(Value::as_str) {
            if !object.contains_key(name) {
                return Err(format!("{at} is missing the required field `{name}`"));
            }
        }
    }
    let properties = schema.get("properties").and_then(Value::as_object);
    let closed = matches!(schema.get("additionalProperties"), Some(Value::Bool(false)));
    for (name, field) in object {
        match properties.and_then(|properties| properties.get(name)) {
            Some(field_schema) => check(field_schema, field, &format!("{at}.{name}"))?,
            None if closed => return Err(format!("{at} has an unknown field `{name}`")),
            None => {}
        }
    }
    Ok(())
}

fn check_range(schema: &Map<String, Value>, number: f64, at: &str) -> Result<(), String> {
    if let Some(minimum) = schema.get("minimum").and_then(Value::as_f64)
        && number < minimum
    {
        return Err(format!("{at} must be at least {minimum}"));
    }
    if let Some(maximum) = schema.get("maximum").and_then(Value::as_f64)
        && number > maximum
    {
        return Err(format!("{at} must be at most {maximum}"));
    }
    Ok(())
}

fn check_length(schema: &Map<String, Value>, length: usize, at: &str) -> Result<(), String> {
    let length = length as u64;
    if let Some(minimum) = schema.get("minLength").and_then(Value::as_u64)
        && length < minimum
    {
        return Err(format!("{at} must be at least {minimum} characters long"));
    }
    if let Some(maximum) = schema.get("maxLength").and_then(Value::as_u64)
        && length > maximum
    {
        return Err(format!("{at} must be at most {maximum} characters long"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn write_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "minLength": 1},
                "content": {"type": "string"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 10},
                "mode": {"enum": ["a", "b"]},
                "tags": {"type": "array", "items": {"type": "string"}}
            },
            "required": ["path", "content"],
            "additionalProperties": false
        })
    }

    #[test]
    fn accepts_valid_arguments() {
        let args = json!({"path": "a.txt", "content": "x", "limit": 3, "mode": "a", "tags": ["t"]});
        assert_eq!(validate(&write_schema(), &args), Ok(()));
    }

    #[test]
    fn names_the_offending_field() {
        let schema = write_schema();
        let cases = [
            (
                json!({"path": "a"}),
                "arguments is missing the required field `content`",
            ),
            (
                json!({"path": 1, "content": ""}),
                "arguments.path must be string, not a number",
            ),
            (
                json!({"path": "", "content": ""}),
                "arguments.path must be at least 1 characters long",
            ),
            (
                json!({"path": "a", "content": "", "x": 1}),
                "arguments has an unknown field `x`",
            ),
            (
                json!({"path": "a", "content": "", "limit": 1.5}),
                "arguments.limit must be integer, not a number",
            ),
            (
                json!({"path": "a", "content": "", "limit": 11}),
                "arguments.limit must be at most 10",
            ),
            (
                json!({"path": "a", "content": "", "mode": "c"}),
                "arguments.mode must be one of [\"a\",\"b\"]",
            ),
            (
                json!({"path": "a", "content": "", "tags": [1]}),
                "arguments.tags[0] must be string, not a number",
            ),
            (json!([1]), "arguments must be object, not an array"),
        ];
        for (args, expected) in cases {
            assert_eq!(
                validate(&schema, &args),
                Err(expected.to_string()),
                "{args}"
            );
        }
    }

    #[test]
    fn empty_schema_accepts_anything() {
        assert_eq!(validate(&json!({}), &json!({"any": [1, 2]})), Ok(()));
        assert_eq!(validate(&json!(true), &json!(3)), Ok(()));
        assert!(validate(&json!(false), &json!(3)).is_err());
    }
}
