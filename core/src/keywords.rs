//! JSON Schema's keywords as the gateway walks a schema: which ones hold
//! subschemas, and how. Vetting ([`crate::vetting`]) and the schema a turn
//! is shown ([`crate::framing::schema`]) walk a schema by this one table,
//! so that no keyword is followed by one and skipped by the other.
//!
//! Every draft a server may write is covered: draft-7's `definitions`,
//! `dependencies` (whose values are schemas, or arrays of names that hold
//! none) and array form of `items`, and 2019-09/2020-12's `$defs`,
//! `dependentSchemas`, `prefixItems` and the `unevaluated*` keywords.

/// What the value of a keyword holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Holds {
    /// A subschema, or an array of subschemas (`items` is either, by
    /// draft; `allOf` and its kin always an array).
    Schemas,
    /// An object whose every value is a subschema, by name (`properties`,
    /// `patternProperties`, `dependentSchemas`, `dependencies`).
    NamedSchemas,
    /// An object of subschemas that only a reference reaches (`$defs`,
    /// `definitions`): not applied where they stand.
    Definitions,
    /// A reference to a subschema (`$ref` and its dynamic kin).
    Reference,
    /// No subschema.
    Nothing,
}

/// What the value of `keyword` holds.
pub(crate) fn holds(keyword: &str) -> Holds {
    match keyword {
        "additionalProperties"
        | "unevaluatedProperties"
        | "items"
        | "additionalItems"
        | "unevaluatedItems"
        | "prefixItems"
        | "contains"
        | "propertyNames"
        | "not"
        | "if"
        | "then"
        | "else"
        | "allOf"
        | "anyOf"
        | "oneOf" => Holds::Schemas,
        "properties" | "patternProperties" | "dependentSchemas" | "dependencies" => {
            Holds::NamedSchemas
        }
        "$defs" | "definitions" => Holds::Definitions,
        "$ref" | "$dynamicRef" | "$recursiveRef" => Holds::Reference,
        _ => Holds::Nothing,
    }
}

/// The keywords whose subschemas apply to the very instance the schema
/// holding them applies to (not to a part of it): what such a subschema
/// declares, the schema declares.
pub(crate) const IN_PLACE: &[&str] = &[
    "allOf",
    "anyOf",
    "oneOf",
    "if",
    "then",
    "else",
    "dependentSchemas",
    "dependencies",
];

/// The keywords that combine subschemas, each an array of them.
pub(crate) const COMBINATIONS: &[&str] = &["allOf", "anyOf", "oneOf"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_in_place_keyword_holds_schemas() {
        for keyword in IN_PLACE.iter().chain(COMBINATIONS) {
            assert!(
                matches!(holds(keyword), Holds::Schemas | Holds::NamedSchemas),
                "{keyword}"
            );
        }
        assert_eq!(holds("dependencies"), holds("dependentSchemas"));
        assert_eq!(holds("description"), Holds::Nothing);
    }
}
