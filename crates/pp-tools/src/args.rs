//! How a built-in tool reads its arguments: into one `#[derive(Deserialize)]` type per
//! tool, through [`parse`].
//!
//! [`parse`] walks the fields the type declares (serde hands them over) and looks each
//! one up in the arguments object; an absent field, or `null`, counts as missing, so an
//! `Option` field is `None` and any other field is an error. Names the type does not
//! declare are ignored (the schema's `additionalProperties: false` refuses them earlier,
//! in the agent's validator). Strings are borrowed from the arguments, not copied.
//!
//! The errors are the ones the model has always seen, and name the argument:
//! ``argument `path` must be a string``, `… must be true or false`; a field type with a
//! wording of its own ([`AtLeast`] here, `run_command`'s `Program`, `memory_write`'s
//! `Mode`, …) says it through `serde::de::Error::custom`, and [`parse`] puts the
//! argument's name in front. Values a field hands on to
//! serde (enums, lists of objects) fail with serde's message after `bad arguments: `,
//! and a missing one with ``bad arguments: missing field `op` ``.

use std::fmt;

use pp_types::ToolOutput;
use serde::Deserialize;
use serde::de::value::BorrowedStrDeserializer;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde_json::Value;

/// Reads `arguments` into the tool's argument type; the error is what the model sees.
pub(crate) fn parse<'a, T: Deserialize<'a>>(arguments: &'a Value) -> Result<T, ToolOutput> {
    T::deserialize(Arguments(arguments)).map_err(|error| ToolOutput::error(error.to_string()))
}

/// Why arguments could not be read.
#[derive(Debug)]
pub(crate) enum ArgError {
    /// One argument is wrong: ``argument `<name>` <message>``.
    Argument {
        /// The argument, once known.
        name: Option<&'static str>,
        /// What it must be (`must be a string`).
        message: String,
    },
    /// serde's own message for a value handed on to it: `bad arguments: <message>`.
    Serde(String),
}

impl ArgError {
    /// The error, naming `name` if it names no argument yet.
    fn at(self, field: &'static str) -> Self {
        match self {
            Self::Argument {
                name: None,
                message,
            } => Self::Argument {
                name: Some(field),
                message,
            },
            other => other,
        }
    }
}

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Argument {
                name: Some(name),
                message,
            } => write!(f, "argument `{name}` {message}"),
            Self::Argument {
                name: None,
                message,
            } => f.write_str(message),
            Self::Serde(message) => write!(f, "bad arguments: {message}"),
        }
    }
}

impl std::error::Error for ArgError {}

impl de::Error for ArgError {
    fn custom<T: fmt::Display>(message: T) -> Self {
        Self::Argument {
            name: None,
            message: message.to_string(),
        }
    }
}

impl From<serde_json::Error> for ArgError {
    fn from(error: serde_json::Error) -> Self {
        Self::Serde(error.to_string())
    }
}

/// The arguments object (anything else reads as an empty object).
struct Arguments<'a>(&'a Value);

impl<'de> Deserializer<'de> for Arguments<'de> {
    type Error = ArgError;

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, ArgError> {
        Err(de::Error::custom(
            "a tool's argument type must be a struct with named fields",
        ))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ArgError> {
        visitor.visit_map(Fields {
            object: self.0.as_object(),
            fields: fields.iter(),
            current: None,
        })
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

/// Every field the type declares, in its order, with its value (or none).
struct Fields<'a> {
    object: Option<&'a serde_json::Map<String, Value>>,
    fields: std::slice::Iter<'static, &'static str>,
    current: Option<&'static str>,
}

impl<'de> MapAccess<'de> for Fields<'de> {
    type Error = ArgError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, ArgError> {
        let Some(name) = self.fields.next() else {
            return Ok(None);
        };
        self.current = Some(name);
        seed.deserialize(BorrowedStrDeserializer::new(name))
            .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, ArgError> {
        let name = self.current.take().unwrap_or_default();
        let value = self
            .object
            .and_then(|object| object.get(name))
            .filter(|value| !value.is_null());
        seed.deserialize(Field { name, value })
            .map_err(|error| error.at(name))
    }
}

/// One argument's value; `None` when absent or `null`.
struct Field<'a> {
    name: &'static str,
    value: Option<&'a Value>,
}

impl<'de> Field<'de> {
    /// The value, for what serde reads itself; a missing one is serde's missing field.
    fn present(&self) -> Result<&'de Value, ArgError> {
        self.value
            .ok_or_else(|| ArgError::Serde(format!("missing field `{}`", self.name)))
    }

    fn string(&self) -> Result<&'de str, ArgError> {
        self.value
            .and_then(Value::as_str)
            .ok_or_else(|| de::Error::custom("must be a string"))
    }
}

/// Hands one kind of value on to serde's reading of the JSON value.
macro_rules! forward_to_json {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ArgError> {
            Ok(self.present()?.$method(visitor)?)
        }
    )*};
}

impl<'de> Deserializer<'de> for Field<'de> {
    type Error = ArgError;

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ArgError> {
        match self.value {
            None => visitor.visit_none(),
            Some(_) => visitor.visit_some(self),
        }
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ArgError> {
        visitor.visit_borrowed_str(self.string()?)
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ArgError> {
        visitor.visit_borrowed_str(self.string()?)
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ArgError> {
        match self.value {
            Some(Value::Bool(flag)) => visitor.visit_bool(*flag),
            _ => Err(de::Error::custom("must be true or false")),
        }
    }

    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ArgError> {
        match self.value.and_then(Value::as_u64) {
            Some(number) => visitor.visit_u64(number),
            None => Err(de::Error::custom("must be a non-negative integer")),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, ArgError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ArgError> {
        Ok(self.present()?.deserialize_struct(name, fields, visitor)?)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ArgError> {
        Ok(self.present()?.deserialize_enum(name, variants, visitor)?)
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, ArgError> {
        Ok(self.present()?.deserialize_unit_struct(name, visitor)?)
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, ArgError> {
        Ok(self.present()?.deserialize_tuple(len, visitor)?)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, ArgError> {
        Ok(self
            .present()?
            .deserialize_tuple_struct(name, len, visitor)?)
    }

    forward_to_json! {
        deserialize_any deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
        deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u128
        deserialize_f32 deserialize_f64 deserialize_char deserialize_bytes
        deserialize_byte_buf deserialize_unit deserialize_seq deserialize_map
        deserialize_identifier deserialize_ignored_any
    }
}

/// A whole number of at least `MIN` (``argument `limit` must be an integer of at least 1``).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AtLeast<const MIN: u64>(pub(crate) usize);

impl<'de, const MIN: u64> Deserialize<'de> for AtLeast<MIN> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match u64::deserialize(deserializer) {
            Ok(number) if number >= MIN => Ok(Self(usize::try_from(number).unwrap_or(usize::MAX))),
            _ => Err(de::Error::custom(format!(
                "must be an integer of at least {MIN}"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[derive(Debug, PartialEq, Deserialize)]
    struct Example<'a> {
        path: &'a str,
        flag: Option<bool>,
        count: Option<AtLeast<1>>,
        note: Option<String>,
    }

    fn error(arguments: &Value) -> String {
        match parse::<Example<'_>>(arguments) {
            Err(ToolOutput::Error { message }) => message,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn fields_are_read_by_their_declared_names() {
        let arguments = json!({"path": "a", "flag": true, "count": 3, "note": null, "x": 1});
        assert_eq!(
            parse::<Example<'_>>(&arguments),
            Ok(Example {
                path: "a",
                flag: Some(true),
                count: Some(AtLeast(3)),
                note: None
            })
        );
    }

    #[test]
    fn errors_name_the_argument_as_before() {
        let must_be_string = "argument `path` must be a string";
        assert_eq!(error(&json!({})), must_be_string);
        assert_eq!(error(&json!({"path": null})), must_be_string);
        assert_eq!(error(&json!({"path": 1})), must_be_string);
        assert_eq!(error(&json!("not an object")), must_be_string);
        assert_eq!(
            error(&json!({"path": "a", "flag": "yes"})),
            "argument `flag` must be true or false"
        );
        for count in [json!(0), json!(-1), json!(1.5), json!("2")] {
            assert_eq!(
                error(&json!({"path": "a", "count": count})),
                "argument `count` must be an integer of at least 1"
            );
        }
    }

    #[test]
    fn counts_keep_their_minimum() {
        let read = |value: Value| {
            AtLeast::<0>::deserialize(Field {
                name: "n",
                value: Some(&value),
            })
        };
        assert_eq!(read(json!(0)).ok(), Some(AtLeast(0)));
        assert!(read(json!(-1)).is_err());
        let value = json!(3);
        let field = || Field {
            name: "n",
            value: Some(&value),
        };
        assert_eq!(AtLeast::<3>::deserialize(field()).ok(), Some(AtLeast(3)));
        let four = AtLeast::<4>::deserialize(field()).map_err(|error| error.at("n").to_string());
        assert_eq!(
            four,
            Err("argument `n` must be an integer of at least 4".to_owned())
        );
    }
}
