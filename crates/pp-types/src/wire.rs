//! Names on the wire from one list: [`wire_enum!`](crate::wire_enum) turns one list of
//! `Variant => "wire"` pairs into an enum, its wire string, its parser and the list of
//! all its values, so that no table of names is ever written out twice.

/// A name that is not one of an enum's wire names: what [`std::str::FromStr`] of a
/// [`wire_enum!`](crate::wire_enum) enum returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownName {
    /// The enum's Rust name (`TaskState`, …).
    pub what: &'static str,
    /// The text that matched no name.
    pub value: String,
    /// Every accepted name, in declaration order.
    pub expected: &'static [&'static str],
}

impl std::fmt::Display for UnknownName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "unknown {} `{}`; expected one of: {}",
            self.what,
            self.value,
            self.expected.join(", ")
        )
    }
}

impl std::error::Error for UnknownName {}

/// Defines an enum whose values have one name each on the wire, from one list of
/// `Variant => "wire"` pairs.
///
/// **Unit variants** (`Variant => "wire"`): the enum (which must derive `Copy`) gets
/// `Serialize`/`Deserialize` through the wire names (derived, with a `rename` per
/// variant: the caller depends on `serde` and does not derive them itself), and
/// - `ALL`: every value, in declaration order, and `NAMES`: their wire names;
/// - `as_str(self) -> &'static str` and `parse(&str) -> Option<Self>`;
/// - `FromStr` (error [`UnknownName`], naming the bad value and the accepted ones)
///   and `Display` (the wire name).
///
/// **Variants with data**, written `pub enum Name as Tag { Variant { … } => "wire", … }`:
/// the enum keeps its own derives (it must derive `Serialize`/`Deserialize`, usually
/// internally tagged: `#[serde(tag = "type")]`); each variant gets `#[serde(rename =
/// "wire")]`, `Tag` is defined as the unit-variant enum of the same names (above), and
/// `Name::tag(&self) -> Tag` says which one a value is.
///
/// ```
/// pp_types::wire_enum! {
///     /// A colour.
///     #[derive(Debug, Clone, Copy, PartialEq, Eq)]
///     pub enum Colour {
///         /// Red.
///         Red => "red",
///         /// Light blue.
///         LightBlue => "light_blue",
///     }
/// }
/// assert_eq!(Colour::LightBlue.as_str(), "light_blue");
/// assert_eq!("red".parse::<Colour>(), Ok(Colour::Red));
/// assert_eq!(Colour::ALL, [Colour::Red, Colour::LightBlue]);
/// assert_eq!(serde_json::to_string(&Colour::Red).unwrap(), r#""red""#);
/// let error = "blue".parse::<Colour>().unwrap_err();
/// assert_eq!(error.to_string(), "unknown Colour `blue`; expected one of: red, light_blue");
/// ```
#[macro_export]
macro_rules! wire_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident => $wire:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(::serde::Serialize, ::serde::Deserialize)]
        $vis enum $name {
            $( $(#[$vmeta])* #[serde(rename = $wire)] $variant, )+
        }

        impl $name {
            /// Every value, in declaration order.
            #[allow(dead_code)]
            $vis const ALL: [Self; [$($wire),+].len()] = [$(Self::$variant),+];

            /// The wire name of every value, in declaration order.
            #[allow(dead_code)]
            $vis const NAMES: [&'static str; [$($wire),+].len()] = [$($wire),+];

            /// The name used on the wire (and in the store, the CLI, the console).
            #[allow(dead_code)]
            $vis fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $wire,)+
                }
            }

            /// The value named `text` on the wire, if there is one.
            #[allow(dead_code)]
            $vis fn parse(text: &str) -> ::std::option::Option<Self> {
                match text {
                    $($wire => ::std::option::Option::Some(Self::$variant),)+
                    _ => ::std::option::Option::None,
                }
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = $crate::UnknownName;

            fn from_str(text: &str) -> ::std::result::Result<Self, Self::Err> {
                Self::parse(text).ok_or_else(|| $crate::UnknownName {
                    what: stringify!($name),
                    value: text.to_owned(),
                    expected: &Self::NAMES,
                })
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident as $tag:ident {
            $(
                $(#[$vmeta:meta])*
                $variant:ident $({ $($fields:tt)* })? $(( $($tuple:tt)* ))? => $wire:literal
            ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis enum $name {
            $(
                $(#[$vmeta])*
                #[serde(rename = $wire)]
                $variant $({ $($fields)* })? $(( $($tuple)* ))?,
            )+
        }

        $crate::wire_enum! {
            #[doc = concat!("Which variant a [`", stringify!($name), "`] is: its wire name.")]
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
            $vis enum $tag {
                $( $(#[$vmeta])* $variant => $wire, )+
            }
        }

        impl $name {
            /// Which variant this is.
            #[allow(dead_code)]
            $vis fn tag(&self) -> $tag {
                match self {
                    $(Self::$variant { .. } => $tag::$variant,)+
                }
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    crate::wire_enum! {
        /// A test enum.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        enum Shade {
            /// Light.
            #[default]
            Light => "light",
            /// Very dark.
            VeryDark => "very_dark",
        }
    }

    crate::wire_enum! {
        /// A test enum with data.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "type")]
        enum Shape as ShapeKind {
            /// A dot.
            Dot => "dot",
            /// A circle.
            Circle {
                /// Its radius.
                radius: u32,
            } => "round_circle",
            /// A named shape.
            Named(Named) => "named",
        }
    }

    /// A named shape.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Named {
        name: String,
    }

    #[test]
    fn unit_variants_have_one_name_everywhere() {
        assert_eq!(Shade::ALL, [Shade::Light, Shade::VeryDark]);
        assert_eq!(Shade::NAMES, ["light", "very_dark"]);
        for shade in Shade::ALL {
            assert_eq!(Shade::parse(shade.as_str()), Some(shade));
            assert_eq!(shade.as_str().parse::<Shade>(), Ok(shade));
            assert_eq!(shade.to_string(), shade.as_str());
            let json = serde_json::to_value(shade).unwrap();
            assert_eq!(json, serde_json::json!(shade.as_str()));
            assert_eq!(serde_json::from_value::<Shade>(json).unwrap(), shade);
        }
        assert_eq!(Shade::default(), Shade::Light);
        assert_eq!(Shade::parse("dark"), None);
        let error = "dark".parse::<Shade>().unwrap_err();
        assert_eq!(
            error.to_string(),
            "unknown Shade `dark`; expected one of: light, very_dark"
        );
        let error = serde_json::from_str::<Shade>(r#""dark""#).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("unknown variant `dark`, expected `light` or `very_dark`"),
            "{error}"
        );
    }

    #[test]
    fn data_variants_carry_their_name_as_the_tag() {
        let circle = Shape::Circle { radius: 2 };
        let json = serde_json::to_value(&circle).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"type": "round_circle", "radius": 2})
        );
        assert_eq!(serde_json::from_value::<Shape>(json).unwrap(), circle);
        assert_eq!(circle.tag(), ShapeKind::Circle);
        assert_eq!(circle.tag().as_str(), "round_circle");
        let named = Shape::Named(Named { name: "n".into() });
        assert_eq!(named.tag(), ShapeKind::Named);
        assert_eq!(
            serde_json::to_value(&named).unwrap(),
            serde_json::json!({"type": "named", "name": "n"})
        );
        assert_eq!(
            serde_json::to_value(Shape::Dot).unwrap(),
            serde_json::json!({"type": "dot"})
        );
        assert_eq!(ShapeKind::NAMES, ["dot", "round_circle", "named"]);
    }
}
