//! Tests' check that a tool's argument type and its hand-written schema say the same
//! thing: every schema property is a field of the type and every field a property,
//! `required` lists exactly the fields that are not `Option`, each field reads the JSON
//! type its property declares, and the path pointers (and a scoped root's key) name
//! string fields. The schema stays hand-written (the model sees it byte for byte, see
//! `tests/it/schemas.rs`); this keeps the type from drifting away from it.

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use pp_gate::Jail;
use pp_types::{PathRoot, ToolSpec, pointer_property};
use serde::Deserialize;
use serde::de::value::BorrowedStrDeserializer;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde_json::Value;

use crate::args::ArgError;

/// What one field reads, as far as the schema can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Str,
    Bool,
    Integer,
    Number,
    Seq,
    Object,
    Enum,
    Any,
    Other,
}

/// One field of an argument type: whether it is optional and what it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Shape {
    optional: bool,
    kind: Kind,
}

/// Checks `T`, the argument type of the built-in tool `tool`, against the tool's spec.
pub(crate) fn assert_matches<T: Deserialize<'static>>(tool: &str) {
    let spec = builtin_spec(tool);
    let fields = shapes::<T>();
    let properties: BTreeSet<&str> = spec.parameters["properties"]
        .as_object()
        .map(|properties| properties.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let names: BTreeSet<&str> = fields.keys().copied().collect();
    assert_eq!(
        names, properties,
        "`{tool}`: the argument type's fields are not the schema's properties"
    );
    let required: BTreeSet<&str> = spec.parameters["required"]
        .as_array()
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let not_optional: BTreeSet<&str> = fields
        .iter()
        .filter(|(_, shape)| !shape.optional)
        .map(|(name, _)| *name)
        .collect();
    assert_eq!(
        not_optional, required,
        "`{tool}`: the fields that are not `Option` are not the schema's `required`"
    );
    for (name, shape) in &fields {
        let property = &spec.parameters["properties"][*name];
        assert!(
            reads(property, shape.kind),
            "`{tool}`: field `{name}` reads {:?}, its schema says {property}",
            shape.kind
        );
    }
    let mut path_fields: Vec<&str> = spec
        .path_params
        .iter()
        .map(|pointer| pointer_property(pointer))
        .collect();
    if let PathRoot::Scoped { key_param, .. } = &spec.root {
        path_fields.push(key_param);
    }
    for name in path_fields {
        assert_eq!(
            fields.get(name).map(|shape| shape.kind),
            Some(Kind::Str),
            "`{tool}`: path pointer `{name}` does not name a string field"
        );
    }
}

/// Whether a field reading `kind` fits the property's declared JSON type.
fn reads(property: &Value, kind: Kind) -> bool {
    match property.get("type").and_then(Value::as_str) {
        Some("string") if property.get("enum").is_some() => {
            matches!(kind, Kind::Str | Kind::Enum)
        }
        Some("string") => kind == Kind::Str,
        Some("boolean") => kind == Kind::Bool,
        Some("integer") => kind == Kind::Integer,
        Some("number") => matches!(kind, Kind::Integer | Kind::Number),
        Some("array") => kind == Kind::Seq,
        Some("object") => kind == Kind::Object,
        // No single type (`anyOf`): the field reads whatever comes.
        None => kind == Kind::Any,
        Some(_) => false,
    }
}

/// Every field of `T` and its shape, probed through serde (nothing is parsed).
fn shapes<T: Deserialize<'static>>() -> BTreeMap<&'static str, Shape> {
    let fields = Cell::new(None);
    let _ = T::deserialize(FieldNames(&fields));
    let fields: &'static [&'static str] = fields.get().unwrap_or_default();
    fields
        .iter()
        .map(|name| {
            let shape = Cell::new(Shape {
                optional: false,
                kind: Kind::Other,
            });
            let _ = T::deserialize(OneField {
                name,
                shape: &shape,
            });
            (*name, shape.get())
        })
        .collect()
}

/// Hands over the type's field names, then stops.
struct FieldNames<'a>(&'a Cell<Option<&'static [&'static str]>>);

impl<'de> Deserializer<'de> for FieldNames<'_> {
    type Error = ArgError;

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, ArgError> {
        Err(de::Error::custom("not a struct"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, ArgError> {
        self.0.set(Some(fields));
        Err(de::Error::custom("probed"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

/// An object with the one field `name`, whose value records what the field reads.
struct OneField<'a> {
    name: &'static str,
    shape: &'a Cell<Shape>,
}

impl<'de> Deserializer<'de> for OneField<'_> {
    type Error = ArgError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ArgError> {
        visitor.visit_map(OneEntry {
            name: Some(self.name),
            shape: self.shape,
        })
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

struct OneEntry<'a> {
    name: Option<&'static str>,
    shape: &'a Cell<Shape>,
}

impl<'de> MapAccess<'de> for OneEntry<'_> {
    type Error = ArgError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, ArgError> {
        match self.name {
            Some(name) => seed
                .deserialize(BorrowedStrDeserializer::new(name))
                .map(Some),
            None => Ok(None),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, ArgError> {
        self.name = None;
        seed.deserialize(Probe(self.shape))
    }
}

/// Records the first thing a field asks to read (through `Option` and newtypes).
struct Probe<'a>(&'a Cell<Shape>);

impl Probe<'_> {
    fn record<T>(&self, kind: Kind) -> Result<T, ArgError> {
        let mut shape = self.0.get();
        shape.kind = kind;
        self.0.set(shape);
        Err(de::Error::custom("probed"))
    }
}

macro_rules! probe {
    ($($method:ident => $kind:ident,)*) => {$(
        fn $method<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, ArgError> {
            self.record(Kind::$kind)
        }
    )*};
}

impl<'de> Deserializer<'de> for Probe<'_> {
    type Error = ArgError;

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ArgError> {
        let mut shape = self.0.get();
        shape.optional = true;
        self.0.set(shape);
        visitor.visit_some(self)
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
        _name: &'static str,
        _fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, ArgError> {
        self.record(Kind::Object)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, ArgError> {
        self.record(Kind::Enum)
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _visitor: V,
    ) -> Result<V::Value, ArgError> {
        self.record(Kind::Other)
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        _visitor: V,
    ) -> Result<V::Value, ArgError> {
        self.record(Kind::Seq)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        _visitor: V,
    ) -> Result<V::Value, ArgError> {
        self.record(Kind::Seq)
    }

    probe! {
        deserialize_any => Any,
        deserialize_bool => Bool,
        deserialize_i8 => Integer,
        deserialize_i16 => Integer,
        deserialize_i32 => Integer,
        deserialize_i64 => Integer,
        deserialize_i128 => Integer,
        deserialize_u8 => Integer,
        deserialize_u16 => Integer,
        deserialize_u32 => Integer,
        deserialize_u64 => Integer,
        deserialize_u128 => Integer,
        deserialize_f32 => Number,
        deserialize_f64 => Number,
        deserialize_char => Str,
        deserialize_str => Str,
        deserialize_string => Str,
        deserialize_bytes => Other,
        deserialize_byte_buf => Other,
        deserialize_unit => Other,
        deserialize_seq => Seq,
        deserialize_map => Object,
        deserialize_identifier => Str,
        deserialize_ignored_any => Any,
    }
}

/// The spec of the built-in tool `name`, from a toolbox with every provider on.
fn builtin_spec(name: &str) -> ToolSpec {
    builtin_specs()
        .into_iter()
        .find(|spec| spec.name == name)
        .unwrap_or_else(|| panic!("no built-in tool `{name}`"))
}

/// The spec of every built-in tool, from a toolbox with every provider on.
#[allow(
    clippy::disallowed_methods,
    reason = "the test writes its skill directly"
)]
pub(crate) fn builtin_specs() -> Vec<ToolSpec> {
    let root = tempfile::tempdir().expect("temp dir");
    let (workspace, data, skills) = (
        root.path().join("workspace"),
        root.path().join("data"),
        root.path().join("skills"),
    );
    for dir in [&workspace, &data, &skills.join("demo")] {
        std::fs::create_dir_all(dir).expect("a folder");
    }
    std::fs::write(
        skills.join("demo/SKILL.md"),
        "---\nname: demo\ndescription: The demo skill.\n---\nBody.\n",
    )
    .expect("a skill");
    let mut shell = crate::ShellSettings::new(
        pp_sandbox::Sandbox::new("pocketpilot".into(), vec!["__sandbox".to_owned()]),
        data.clone(),
    );
    shell.support = pp_sandbox::Support::default();
    shell.set_containment(pp_sandbox::Containment::default());
    shell.allow_unconfined = true;
    let parser = pp_docs::Parser::new("/bin/false".into(), Vec::new());
    let toolbox = crate::Toolbox::files()
        .with(Arc::new(crate::DocsProvider::new(
            crate::DocsSettings::new(parser),
        )))
        .with(Arc::new(crate::MemoryProvider::new(
            crate::MemorySettings::new(&data),
        )))
        .with(Arc::new(crate::ShellProvider::new(shell)))
        .with(Arc::new(crate::SkillsProvider::new(
            crate::SkillsSettings::new(&skills),
        )));
    let jail = Arc::new(Jail::new(&workspace).expect("workspace jail"));
    let equipment = toolbox
        .equip(&jail, crate::Limits::default())
        .expect("every provider equips");
    equipment.registry.specs().cloned().collect()
}

mod tests {
    use super::*;

    /// `read_file`'s arguments with `limit` forgotten.
    #[derive(Deserialize)]
    #[allow(dead_code, reason = "only the shape is probed")]
    struct Forgotten<'a> {
        path: &'a str,
        offset: Option<u64>,
    }

    /// `read_file`'s arguments with `path` optional and `offset` a string.
    #[derive(Deserialize)]
    #[allow(dead_code, reason = "only the shape is probed")]
    struct Mistyped<'a> {
        #[serde(borrow)]
        path: Option<&'a str>,
        #[serde(borrow)]
        offset: Option<&'a str>,
        limit: Option<u64>,
    }

    /// `read_file`'s arguments with the path a number.
    #[derive(Deserialize)]
    #[allow(dead_code, reason = "only the shape is probed")]
    struct NumberPath {
        path: u64,
        offset: Option<u64>,
        limit: Option<u64>,
    }

    fn fails(check: fn()) -> String {
        let Err(panic) = std::panic::catch_unwind(check) else {
            panic!("the check passed");
        };
        panic.downcast_ref::<String>().cloned().unwrap_or_default()
    }

    #[test]
    fn a_type_that_drifts_from_its_schema_fails_the_check() {
        let message = fails(|| assert_matches::<Forgotten<'static>>("read_file"));
        assert!(
            message.contains("`read_file`: the argument type's fields"),
            "{message}"
        );
        let message = fails(|| assert_matches::<Mistyped<'static>>("read_file"));
        assert!(message.contains("not the schema's `required`"), "{message}");
        let message = fails(|| assert_matches::<NumberPath>("read_file"));
        assert!(message.contains("field `path` reads Integer"), "{message}");
    }
}
