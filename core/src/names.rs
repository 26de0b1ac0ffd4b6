//! Enums whose values have names: each name is written once.
//!
//! The name of a value is what `capabilities.json`, the audit trail, the
//! CLI's JSON and the turn's text call it. `named!` declares such an enum
//! with each value's name beside it, and derives from that one place its
//! [`Name`] impl, `Display`, `FromStr`, `Serialize` and `Deserialize`, so no
//! name is kept by hand anywhere else.

use std::fmt;

/// An enum of named values (declared with `named!`).
pub trait Name: Copy + Eq + fmt::Debug + Send + Sync + 'static {
    /// Every value, in the order messages list them.
    const ALL: &'static [Self];

    /// The value's name.
    fn as_str(self) -> &'static str;

    /// The value named `name`, if any.
    fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|v| v.as_str() == name)
    }
}

/// Every name of `T`, quoted and comma-separated, as messages list them:
/// `"refuse", "confirm", "allow"`.
pub(crate) fn quoted_names<T: Name>() -> String {
    T::ALL
        .iter()
        .map(|v| format!("{:?}", v.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A name that is not one of an enum's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{found:?} is not one of {allowed}")]
pub struct UnknownName {
    /// The name given.
    pub found: String,
    /// The names there are, quoted and comma-separated.
    pub allowed: String,
}

/// Declares an enum whose values' names are written once, beside them.
///
/// ```ignore
/// named! {
///     /// READ or WRITE.
///     pub enum CapabilityClass {
///         /// Only reads.
///         Read = "READ",
///         /// Everything else.
///         Write = "WRITE",
///     }
/// }
/// ```
///
/// The enum gets `Debug, Clone, Copy, PartialEq, Eq, Hash` (more derives
/// can be put on it), [`Name`], `Display` and `FromStr` by name, and
/// `Serialize`/`Deserialize` as its name. A value's former names, when it
/// had others, follow its name (`Value = "name" | "former"`): they are
/// read as the value, never written.
macro_rules! named {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal $(| $alias:literal)* ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant ),+
        }

        impl $name {
            /// The value's name, as files, audit records and messages spell it.
            $vis const fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $text ),+
                }
            }
        }

        impl $crate::names::Name for $name {
            const ALL: &'static [Self] = &[$( $name::$variant ),+];
            fn as_str(self) -> &'static str {
                $name::as_str(self)
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = $crate::names::UnknownName;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                if let Some(value) = <$name as $crate::names::Name>::from_name(s) {
                    return Ok(value);
                }
                match s {
                    $( $( $alias => Ok($name::$variant), )* )+
                    _ => Err($crate::names::UnknownName {
                        found: s.to_owned(),
                        allowed: $crate::names::quoted_names::<$name>(),
                    }),
                }
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let name = <::std::borrow::Cow<'de, str>>::deserialize(d)?;
                name.parse().map_err(<D::Error as ::serde::de::Error>::custom)
            }
        }
    };
}

pub(crate) use named;

#[cfg(test)]
mod tests {
    use super::*;

    named! {
        /// A test enum.
        pub(crate) enum Colour {
            /// Red.
            Red = "red",
            /// Dark blue.
            DarkBlue = "dark-blue",
        }
    }

    #[test]
    fn one_name_serves_display_parsing_and_serde() {
        assert_eq!(Colour::DarkBlue.to_string(), "dark-blue");
        assert_eq!("red".parse::<Colour>(), Ok(Colour::Red));
        assert_eq!(
            serde_json::to_string(&Colour::DarkBlue).expect("json"),
            "\"dark-blue\""
        );
        let back: Colour = serde_json::from_str("\"dark-blue\"").expect("json");
        assert_eq!(back, Colour::DarkBlue);
        assert_eq!(Colour::ALL, [Colour::Red, Colour::DarkBlue]);
    }

    #[test]
    fn an_unknown_name_lists_the_names_there_are() {
        let err = "green".parse::<Colour>().expect_err("no green");
        assert_eq!(
            err.to_string(),
            r#""green" is not one of "red", "dark-blue""#
        );
        let err = serde_json::from_str::<Colour>("\"green\"").expect_err("no green");
        assert!(
            err.to_string().contains(r#""green" is not one of"#),
            "{err}"
        );
    }
}
