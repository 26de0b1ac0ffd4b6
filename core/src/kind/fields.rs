//! Reading the keys of one registry entry, collecting every problem.
//!
//! The core's common keys and each kind's own keys are read the same way:
//! a key that is absent is `None`, one of the right JSON type is read, and
//! one of another type is a problem saying what it must be and what was
//! found. Problems are collected, not returned at the first, so that an
//! operator sees everything wrong with an entry at once.

use serde_json::{Map, Value};

use super::{EntryProblem, EntryProblemKind};
use crate::names::{Name, quoted_names};

/// The JSON type of `v`, for messages: `a string`, `an array`, ...
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The keys of one entry (or of its kind-specific part) and the problems
/// found so far.
#[derive(Debug)]
pub struct Fields<'a> {
    map: &'a Map<String, Value>,
    problems: Vec<EntryProblem>,
}

impl<'a> Fields<'a> {
    /// Reads `map`.
    pub fn new(map: &'a Map<String, Value>) -> Self {
        Self {
            map,
            problems: Vec::new(),
        }
    }

    /// The value of `key`, if present.
    pub fn raw(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key)
    }

    /// `key` read by `read`, `None` when it is absent; when `read` does not
    /// accept it, a problem ([`EntryProblemKind::WrongType`]): "must be
    /// `expected`, found" and its JSON type.
    pub fn get<T>(
        &mut self,
        key: &str,
        expected: &str,
        read: impl FnOnce(&'a Value) -> Option<T>,
    ) -> Option<T> {
        let value = self.map.get(key)?;
        let read = read(value);
        if read.is_none() {
            self.push(
                EntryProblem::new(
                    key,
                    format!("must be {expected}, found {}", type_name(value)),
                )
                .with_kind(EntryProblemKind::WrongType),
            );
        }
        read
    }

    /// As [`Fields::get`], and a problem "missing; `hint`"
    /// ([`EntryProblemKind::MissingKey`]) when `key` is absent.
    pub fn required<T>(
        &mut self,
        key: &str,
        expected: &str,
        hint: &str,
        read: impl FnOnce(&'a Value) -> Option<T>,
    ) -> Option<T> {
        if !self.map.contains_key(key) {
            self.push(
                EntryProblem::new(key, format!("missing; {hint}"))
                    .with_kind(EntryProblemKind::MissingKey),
            );
            return None;
        }
        self.get(key, expected, read)
    }

    /// `key` as a string, if present.
    pub fn string(&mut self, key: &str) -> Option<&'a str> {
        self.get(key, "a string", Value::as_str)
    }

    /// `key` as the name of a `T` (`what` names the kind of thing, e.g. `a
    /// write policy`), if present; an unknown name or another type is a
    /// problem that lists the names there are.
    pub fn name<T: Name>(&mut self, key: &str, what: &str) -> Option<T> {
        let expected = format!("one of {}", quoted_names::<T>());
        let name = self.get(key, &expected, Value::as_str)?;
        let value = T::from_name(name);
        if value.is_none() {
            self.problem(
                key,
                format!("{name:?} is not {what}; allowed: {}", quoted_names::<T>()),
            );
        }
        value
    }

    /// Records a problem with `key`, of kind
    /// [`EntryProblemKind::BadValue`].
    pub fn problem(&mut self, key: &str, message: impl Into<String>) {
        self.push(EntryProblem::new(key, message));
    }

    /// Records `problem`, of whatever kind it is.
    pub fn push(&mut self, problem: EntryProblem) {
        self.problems.push(problem);
    }

    /// Whether any problem was found so far.
    pub fn has_problems(&self) -> bool {
        !self.problems.is_empty()
    }

    /// Every problem found, in the order found.
    pub fn into_problems(self) -> Vec<EntryProblem> {
        self.problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::WritePolicy;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    #[test]
    fn every_problem_is_collected_with_its_key() {
        let m = map(json!({"a": 1, "w": "sometimes", "x": "fine", "y": "allow"}));
        let mut f = Fields::new(&m);
        assert_eq!(f.string("a"), None);
        assert_eq!(f.string("x"), Some("fine"));
        assert_eq!(f.string("absent"), None);
        assert_eq!(f.name::<WritePolicy>("w", "a write policy"), None);
        assert_eq!(
            f.name::<WritePolicy>("y", "a write policy"),
            Some(WritePolicy::Allow)
        );
        assert_eq!(
            f.required("gone", "a list", "give one", Value::as_array),
            None
        );
        let problems = f.into_problems();
        let kinds: Vec<EntryProblemKind> = problems.iter().map(|p| p.kind).collect();
        assert_eq!(
            kinds,
            [
                EntryProblemKind::WrongType,
                EntryProblemKind::BadValue,
                EntryProblemKind::MissingKey
            ]
        );
        let problems: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(
            problems,
            [
                r#"key "a": must be a string, found a number"#,
                r#"key "w": "sometimes" is not a write policy; allowed: "refuse", "confirm", "allow""#,
                r#"key "gone": missing; give one"#,
            ]
        );
    }
}
