//! Generative tests of what the model hands the loop: tool-argument text and the schema
//! validator that checks it.
//!
//! - Any schema and any value: `schema::validate` answers, and an error names its path.
//! - Values generated to fit a generated schema (types, nullable types, required and
//!   optional properties, closed objects, enums, arrays, ranges, lengths) validate.
//! - The same value with one required property removed, or one typed value replaced by
//!   a value of another type, is refused with a message naming that spot.
//! - Any argument text through the loop: the tool runs exactly when the text is JSON that
//!   fits the tool's schema (checked by an oracle written here, not by the validator),
//!   and sees that value; otherwise the model gets an error answer and nothing runs.

use std::collections::BTreeMap;

use pp_agent::schema::validate;
use pp_agent::{Agent, EventLog, Outcome, ToolRegistry};
use pp_types::{Decision, Message, Risk, ToolSpec};
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{Map, Value, json};

use crate::fakes::{QueueModel, RecordingTool, calls, text};

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------------------------------
// Arbitrary schemas and values

const KEYWORDS: [&str; 12] = [
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "path",
    "content",
];

const TYPE_NAMES: [&str; 8] = [
    "object", "array", "string", "boolean", "null", "number", "integer", "float",
];

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(KEYWORDS.to_vec()).prop_map(str::to_owned),
        1 => ".{0,6}",
    ]
}

/// Any JSON, with schema keywords and type names common enough to reach every branch.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        prop::sample::select(TYPE_NAMES.to_vec()).prop_map(Value::from),
        ".{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..6)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

// ---------------------------------------------------------------------------------------
// Generated schemas with values that fit them

/// A schema shape; [`Shape::schema`] writes it as JSON Schema, [`fitting`] generates
/// values that fit it.
#[derive(Debug, Clone)]
enum Shape {
    /// `{}`: anything.
    Any,
    Null,
    Boolean,
    /// `type: string` (or `["string", "null"]`), with an optional length range.
    String {
        nullable: bool,
        min: Option<usize>,
        max: Option<usize>,
    },
    Integer {
        min: Option<i64>,
        max: Option<i64>,
    },
    Number {
        min: Option<i32>,
        max: Option<i32>,
    },
    /// `enum` without a type.
    Enum(Vec<Value>),
    /// `type: string` with an `enum`.
    StringEnum(Vec<String>),
    Array(Box<Shape>),
    Object {
        /// Name → (shape, required).
        properties: BTreeMap<String, (Shape, bool)>,
        /// `additionalProperties: false`.
        closed: bool,
    },
}

impl Shape {
    fn schema(&self) -> Value {
        match self {
            Self::Any => json!({}),
            Self::Null => json!({"type": "null"}),
            Self::Boolean => json!({"type": "boolean"}),
            Self::String { nullable, min, max } => {
                let mut schema = if *nullable {
                    json!({"type": ["string", "null"]})
                } else {
                    json!({"type": "string"})
                };
                if let Some(min) = min {
                    schema["minLength"] = json!(min);
                }
                if let Some(max) = max {
                    schema["maxLength"] = json!(max);
                }
                schema
            }
            Self::Integer { min, max } => {
                let mut schema = json!({"type": "integer"});
                if let Some(min) = min {
                    schema["minimum"] = json!(min);
                }
                if let Some(max) = max {
                    schema["maximum"] = json!(max);
                }
                schema
            }
            Self::Number { min, max } => {
                let mut schema = json!({"type": "number"});
                if let Some(min) = min {
                    schema["minimum"] = json!(min);
                }
                if let Some(max) = max {
                    schema["maximum"] = json!(max);
                }
                schema
            }
            Self::Enum(values) => json!({ "enum": values }),
            Self::StringEnum(values) => json!({"type": "string", "enum": values}),
            Self::Array(items) => json!({"type": "array", "items": items.schema()}),
            Self::Object { properties, closed } => {
                let required: Vec<&String> = properties
                    .iter()
                    .filter(|(_, (_, required))| *required)
                    .map(|(name, _)| name)
                    .collect();
                let properties: Map<String, Value> = properties
                    .iter()
                    .map(|(name, (shape, _))| (name.clone(), shape.schema()))
                    .collect();
                let mut schema =
                    json!({"type": "object", "properties": properties, "required": required});
                if *closed {
                    schema["additionalProperties"] = json!(false);
                }
                schema
            }
        }
    }

    /// The type names the schema declares, if it declares any.
    fn types(&self) -> Option<Vec<&'static str>> {
        Some(match self {
            Self::Any | Self::Enum(_) => return None,
            Self::Null => vec!["null"],
            Self::Boolean => vec!["boolean"],
            Self::String { nullable: true, .. } => vec!["string", "null"],
            Self::String { .. } | Self::StringEnum(_) => vec!["string"],
            Self::Integer { .. } => vec!["integer"],
            Self::Number { .. } => vec!["number"],
            Self::Array(_) => vec!["array"],
            Self::Object { .. } => vec!["object"],
        })
    }
}

/// Two optional bounds, the lower never above the upper.
fn bounds<T: Ord + Copy + std::fmt::Debug + 'static>(
    values: impl Strategy<Value = T> + Clone + 'static,
) -> impl Strategy<Value = (Option<T>, Option<T>)> {
    (
        proptest::option::of(values.clone()),
        proptest::option::of(values),
    )
        .prop_map(|(a, b)| match (a, b) {
            (Some(a), Some(b)) => (Some(a.min(b)), Some(a.max(b))),
            other => other,
        })
}

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(Value::from),
        "[a-z]{0,4}".prop_map(Value::String),
    ]
}

fn shape() -> impl Strategy<Value = Shape> {
    let leaf = prop_oneof![
        Just(Shape::Any),
        Just(Shape::Null),
        Just(Shape::Boolean),
        (any::<bool>(), bounds(0usize..6)).prop_map(|(nullable, (min, max))| Shape::String {
            nullable,
            min,
            max
        }),
        bounds(-1000i64..1000).prop_map(|(min, max)| Shape::Integer { min, max }),
        bounds(-1000i32..1000).prop_map(|(min, max)| Shape::Number { min, max }),
        prop::collection::vec(scalar(), 1..4).prop_map(Shape::Enum),
        prop::collection::vec("[a-z]{1,5}", 1..4).prop_map(Shape::StringEnum),
    ];
    leaf.prop_recursive(4, 32, 5, |inner| {
        prop_oneof![
            inner
                .clone()
                .prop_map(|items| Shape::Array(Box::new(items))),
            (
                prop::collection::btree_map("[a-w][a-z]{0,5}", (inner, any::<bool>()), 0..5),
                any::<bool>()
            )
                .prop_map(|(properties, closed)| Shape::Object { properties, closed }),
        ]
    })
}

/// An object schema with at least one required property, at the top as tool schemas are.
fn tool_shape() -> impl Strategy<Value = Shape> {
    (
        "[a-w][a-z]{0,5}",
        shape(),
        prop::collection::btree_map("[a-w][a-z]{0,5}", (shape(), any::<bool>()), 0..4),
        any::<bool>(),
    )
        .prop_map(|(name, first, mut properties, closed)| {
            properties.insert(name, (first, true));
            Shape::Object { properties, closed }
        })
}

/// Values that fit `shape`.
fn fitting(shape: &Shape) -> BoxedStrategy<Value> {
    match shape.clone() {
        Shape::Any => any_json().boxed(),
        Shape::Null => Just(Value::Null).boxed(),
        Shape::Boolean => any::<bool>().prop_map(Value::Bool).boxed(),
        Shape::String { nullable, min, max } => {
            let min = min.unwrap_or(0);
            let max = max.unwrap_or(min + 8);
            let text = prop::collection::vec(any::<char>(), min..=max)
                .prop_map(|chars| Value::String(chars.into_iter().collect()));
            if nullable {
                prop_oneof![Just(Value::Null), text].boxed()
            } else {
                text.boxed()
            }
        }
        Shape::Integer { min, max } => {
            let min = min.unwrap_or(i64::MIN);
            let max = max.unwrap_or(i64::MAX);
            (min..=max).prop_map(Value::from).boxed()
        }
        Shape::Number { min, max } => {
            let min = min.unwrap_or(-1_000_000);
            let max = max.unwrap_or(1_000_000);
            if min >= max {
                // proptest's float sampler panics on a one-point range ("invalid range").
                return Just(Value::from(min)).boxed();
            }
            prop_oneof![
                (f64::from(min)..=f64::from(max)).prop_map(Value::from),
                // Integers are numbers too.
                (min..=max).prop_map(Value::from),
            ]
            .boxed()
        }
        Shape::Enum(values) => prop::sample::select(values).boxed(),
        Shape::StringEnum(values) => prop::sample::select(values).prop_map(Value::from).boxed(),
        Shape::Array(items) => prop::collection::vec(fitting(&items), 0..4)
            .prop_map(Value::Array)
            .boxed(),
        Shape::Object { properties, closed } => {
            let fields: Vec<BoxedStrategy<Option<(String, Value)>>> = properties
                .into_iter()
                .map(|(name, (shape, required))| {
                    let field = fitting(&shape).prop_map(move |value| (name.clone(), value));
                    if required {
                        field.prop_map(Some).boxed()
                    } else {
                        proptest::option::of(field).boxed()
                    }
                })
                .collect();
            // Open objects may carry fields the schema does not name (`z…` never is).
            let extra = if closed {
                Just(Vec::new()).boxed()
            } else {
                prop::collection::vec(("z[a-z]{0,4}", any_json()), 0..3).boxed()
            };
            (fields, extra)
                .prop_map(|(fields, extra)| {
                    Value::Object(fields.into_iter().flatten().chain(extra).collect())
                })
                .boxed()
        }
    }
}

fn shape_and_value() -> impl Strategy<Value = (Shape, Value)> {
    tool_shape().prop_flat_map(|shape| {
        let value = fitting(&shape);
        (Just(shape), value)
    })
}

/// One step into a value.
#[derive(Debug, Clone)]
enum Step {
    Field(String),
    Item(usize),
}

/// The path as the validator writes it: `arguments.a[0].b`.
fn render(path: &[Step]) -> String {
    let mut text = "arguments".to_owned();
    for step in path {
        match step {
            Step::Field(name) => text.push_str(&format!(".{name}")),
            Step::Item(index) => text.push_str(&format!("[{index}]")),
        }
    }
    text
}

fn at_mut<'a>(value: &'a mut Value, path: &[Step]) -> &'a mut Value {
    path.iter().fold(value, |value, step| match step {
        Step::Field(name) => &mut value[name.as_str()],
        Step::Item(index) => &mut value[*index],
    })
}

/// Every spot of `value` whose schema declares types: (path, the declared types).
fn typed_spots(
    shape: &Shape,
    value: &Value,
    path: &mut Vec<Step>,
    out: &mut Vec<(Vec<Step>, Vec<&'static str>)>,
) {
    if let Some(types) = shape.types() {
        out.push((path.clone(), types));
    }
    match (shape, value) {
        (Shape::Array(items), Value::Array(values)) => {
            for (index, item) in values.iter().enumerate() {
                path.push(Step::Item(index));
                typed_spots(items, item, path, out);
                path.pop();
            }
        }
        (Shape::Object { properties, .. }, Value::Object(fields)) => {
            for (name, (field_shape, _)) in properties {
                if let Some(field) = fields.get(name) {
                    path.push(Step::Field(name.clone()));
                    typed_spots(field_shape, field, path, out);
                    path.pop();
                }
            }
        }
        _ => {}
    }
}

/// Every required property of every object in `value`: (path of the object, name).
fn required_spots(
    shape: &Shape,
    value: &Value,
    path: &mut Vec<Step>,
    out: &mut Vec<(Vec<Step>, String)>,
) {
    match (shape, value) {
        (Shape::Array(items), Value::Array(values)) => {
            for (index, item) in values.iter().enumerate() {
                path.push(Step::Item(index));
                required_spots(items, item, path, out);
                path.pop();
            }
        }
        (Shape::Object { properties, .. }, Value::Object(fields)) => {
            for (name, (field_shape, required)) in properties {
                if *required {
                    out.push((path.clone(), name.clone()));
                }
                if let Some(field) = fields.get(name) {
                    path.push(Step::Field(name.clone()));
                    required_spots(field_shape, field, path, out);
                    path.pop();
                }
            }
        }
        _ => {}
    }
}

/// Whether `value` is of the JSON Schema type `name` (an oracle independent of the
/// validator's own).
fn is_type(name: &str, value: &Value) -> bool {
    match name {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "string" => value.is_string(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "number" => value.is_number(),
        "integer" => value.as_f64().is_some() && !value.to_string().contains(['.', 'e', 'E']),
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

/// Values of every type, one of which is wrong for any declared type list.
fn wrong_values() -> Vec<Value> {
    vec![
        Value::Null,
        json!(true),
        json!(7),
        json!(2.5),
        json!("text"),
        json!([1]),
        json!({"k": 1}),
    ]
}

// ---------------------------------------------------------------------------------------
// Tool-argument text through the loop

/// The recording tool's schema, as an oracle: an object with a string `path`, maybe a
/// string `content`, nothing else.
fn fits_recording_tool(value: &Value) -> bool {
    let Some(object) = value.as_object() else {
        return false;
    };
    object.get("path").is_some_and(Value::is_string)
        && object.get("content").is_none_or(Value::is_string)
        && object
            .keys()
            .all(|name| name == "path" || name == "content")
}

/// Argument text as a model might write it: good JSON, almost-good JSON, junk.
fn argument_text() -> impl Strategy<Value = String> {
    let fitting = (".{0,10}", proptest::option::of(".{0,10}")).prop_map(|(path, content)| {
        let mut value = json!({ "path": path });
        if let Some(content) = content {
            value["content"] = content.into();
        }
        value.to_string()
    });
    prop_oneof![
        3 => fitting.clone(),
        2 => any_json().prop_map(|value| value.to_string()),
        2 => (fitting, any::<Index>()).prop_map(|(text, cut)| {
            let end = cut.index(text.len() + 1);
            text.get(..end).unwrap_or(&text).to_owned()
        }),
        1 => "\\PC{0,20}",
        1 => "[ \t\r\n]{0,4}",
        1 => "[{}\\[\\]\":,a-z0-9 ]{0,20}",
    ]
}

/// Runs one turn calling the recording tool with `arguments` under a policy that allows
/// everything; returns what the tool saw and the answer the model got.
fn run_call(arguments: &str) -> (Vec<Value>, String) {
    let tool = RecordingTool::new("read_thing", "file:read", Risk::Low);
    let mut registry = ToolRegistry::new();
    registry.register(tool.clone()).unwrap();
    let log = EventLog::new();
    let model = QueueModel::new(vec![calls(0, &[("read_thing", arguments)]), text("done")]);
    let allow = |_: &ToolSpec, _: &Value| Decision::Allow;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let outcome = runtime
        .block_on(Agent::new(&model, &registry, &allow, &log).start("system".into(), "prompt"));
    assert!(
        matches!(outcome, Outcome::Completed { .. }),
        "not completed: {outcome:?}"
    );
    let requests = model.requests();
    let answer = match requests.last().and_then(|request| request.messages.last()) {
        Some(Message::Tool { content, .. }) => content.clone(),
        other => panic!("the last message is not a tool answer: {other:?}"),
    };
    (tool.executions(), answer)
}

// ---------------------------------------------------------------------------------------
// Properties

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_schema_and_value_get_an_answer_naming_the_path(
        schema in any_json(),
        value in any_json(),
    ) {
        if let Err(message) = validate(&schema, &value) {
            prop_assert!(message.starts_with("arguments"), "{}", message);
        }
        prop_assert_eq!(validate(&json!({}), &value), Ok(()));
        prop_assert_eq!(validate(&json!(true), &value), Ok(()));
        prop_assert!(validate(&json!(false), &value).is_err());
    }

    #[test]
    fn values_that_fit_validate((shape, value) in shape_and_value()) {
        let schema = shape.schema();
        prop_assert_eq!(validate(&schema, &value), Ok(()), "schema {}", schema);
    }

    #[test]
    fn a_missing_required_property_is_refused(
        (shape, mut value) in shape_and_value(),
        pick in any::<Index>(),
    ) {
        let mut spots = Vec::new();
        required_spots(&shape, &value, &mut Vec::new(), &mut spots);
        prop_assert!(!spots.is_empty(), "the top object has a required property");
        let (path, name) = pick.get(&spots).clone();
        let removed = at_mut(&mut value, &path)
            .as_object_mut()
            .and_then(|object| object.remove(&name));
        prop_assert!(removed.is_some());
        prop_assert_eq!(
            validate(&shape.schema(), &value),
            Err(format!("{} is missing the required field `{name}`", render(&path)))
        );
    }

    #[test]
    fn a_value_of_the_wrong_type_is_refused(
        (shape, mut value) in shape_and_value(),
        pick in any::<Index>(),
        wrong in any::<Index>(),
    ) {
        let mut spots = Vec::new();
        typed_spots(&shape, &value, &mut Vec::new(), &mut spots);
        prop_assert!(!spots.is_empty(), "the top object is typed");
        let (path, types) = pick.get(&spots).clone();
        let candidates: Vec<Value> = wrong_values()
            .into_iter()
            .filter(|candidate| !types.iter().any(|name| is_type(name, candidate)))
            .collect();
        let replacement = wrong.get(&candidates).clone();
        let expected = format!(
            "{} must be {}, not {}",
            render(&path),
            types.join(" or "),
            type_name(&replacement)
        );
        *at_mut(&mut value, &path) = replacement;
        prop_assert_eq!(validate(&shape.schema(), &value), Err(expected));
    }

    #[test]
    fn tool_arguments_run_the_tool_exactly_when_they_fit(arguments in argument_text()) {
        let parsed: Option<Value> = if arguments.trim().is_empty() {
            Some(json!({}))
        } else {
            serde_json::from_str(&arguments).ok()
        };
        let (executions, answer) = run_call(&arguments);
        match parsed {
            Some(value) if fits_recording_tool(&value) => {
                prop_assert_eq!(executions, vec![value]);
                prop_assert!(!answer.starts_with("error: invalid arguments"), "{}", answer);
                prop_assert!(!answer.starts_with("error: arguments are not"), "{}", answer);
            }
            Some(_) => {
                prop_assert!(executions.is_empty());
                prop_assert!(answer.starts_with("error: invalid arguments: arguments"), "{}", answer);
            }
            None => {
                prop_assert!(executions.is_empty());
                prop_assert!(answer.starts_with("error: arguments are not valid JSON"), "{}", answer);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Fixed cases

#[test]
fn regression_nested_wrong_type_and_missing_field_are_named() {
    let schema = json!({
        "type": "object",
        "properties": {
            "rows": {"type": "array", "items": {
                "type": "object",
                "properties": {"n": {"type": "integer"}, "tag": {"type": ["string", "null"]}},
                "required": ["n"]
            }}
        },
        "required": ["rows"]
    });
    assert_eq!(
        validate(
            &schema,
            &json!({"rows": [{"n": 1, "tag": null}, {"n": 2.5}]})
        ),
        Err("arguments.rows[1].n must be integer, not a number".to_owned())
    );
    assert_eq!(
        validate(&schema, &json!({"rows": [{"n": 1}, {"tag": "x"}]})),
        Err("arguments.rows[1] is missing the required field `n`".to_owned())
    );
    assert_eq!(
        validate(&schema, &json!({"rows": [{"n": 1, "tag": 3}]})),
        Err("arguments.rows[0].tag must be string or null, not a number".to_owned())
    );
}

#[test]
fn regression_argument_text_edges() {
    let (executions, answer) = run_call("  ");
    assert!(executions.is_empty());
    assert!(
        answer.starts_with("error: invalid arguments: arguments is missing"),
        "{answer}"
    );
    let (executions, answer) = run_call(r#"{"path": "a.txt""#);
    assert!(executions.is_empty());
    assert!(
        answer.starts_with("error: arguments are not valid JSON"),
        "{answer}"
    );
    let (executions, _) = run_call(r#"{"path": "a.txt", "content": "é"}"#);
    assert_eq!(executions, vec![json!({"path": "a.txt", "content": "é"})]);
}
