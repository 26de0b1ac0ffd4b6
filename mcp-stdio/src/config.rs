//! The entry keys of kind `mcp-stdio`: `command` and `env`.

use std::collections::BTreeMap;

use serde_json::Value;
use spear_capabilities::kind::EntryProblemKind::{EmptyCommand, WrongType};
use spear_capabilities::kind::{EntryProblem, Fields, KindSettings, type_name};

/// The keys this kind accepts besides the common ones.
pub const KEYS: &[&str] = &["command", "env"];

/// What starts one server: its argument list and its extra environment.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerConfig {
    /// The program and its arguments; never run through a shell.
    pub command: Vec<String>,
    /// Variables added to the server's environment besides `PATH` and
    /// `HOME`, as written: `${NAME}` in a value is the host's variable
    /// `NAME`, read when the server starts, and `$$` is one `$`.
    pub env: BTreeMap<String, String>,
}

impl ServerConfig {
    /// A server started as `command` (program first), with no extra variables.
    pub fn new<S: Into<String>>(command: impl IntoIterator<Item = S>) -> Self {
        Self {
            command: command.into_iter().map(Into::into).collect(),
            env: BTreeMap::new(),
        }
    }

    /// Adds one variable to the server's environment.
    pub fn with_env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(name.into(), value.into());
        self
    }

    /// Reads the settings of an entry.
    ///
    /// # Errors
    /// Every problem found, each naming its key.
    pub fn from_settings(settings: &KindSettings) -> Result<Self, Vec<EntryProblem>> {
        const GIVE: &str =
            "give the server to start as a list, e.g. [\"/usr/bin/server\", \"--stdio\"]";
        let mut fields = Fields::new(settings);
        let words = fields.required(
            "command",
            "a list of strings (the program and its arguments; no shell)",
            GIVE,
            Value::as_array,
        );
        let mut command = Vec::new();
        match words {
            None => {}
            Some(items) if items.is_empty() => {
                let empty = EntryProblem::new("command", format!("is empty; {GIVE}"));
                fields.push(empty.with_kind(EmptyCommand));
            }
            Some(items) => {
                command = items
                    .iter()
                    .filter_map(|v| Some(v.as_str()?.to_owned()))
                    .collect();
                if let Some(bad) = items.iter().find(|v| !v.is_string()) {
                    let why = format!("every word must be a string, found {}", type_name(bad));
                    fields.push(EntryProblem::new("command", why).with_kind(WrongType));
                } else if command[0].is_empty() {
                    let empty = EntryProblem::new("command", "the program name is empty");
                    fields.push(empty.with_kind(EmptyCommand));
                } else if command.iter().any(|w| w.contains('\0')) {
                    fields.problem("command", "a word contains a NUL character");
                }
            }
        }
        let env = fields.host_strings("env").unwrap_or_default();
        let bad = |name: &&String| name.is_empty() || name.contains(['=', '\0']);
        for name in env.keys().filter(bad) {
            let why = format!("{name:?} is not a variable name (empty, or has '=' or NUL)");
            fields.problem("env", why);
        }
        if fields.has_problems() {
            Err(fields.into_problems())
        } else {
            Ok(Self { command, env })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use spear_capabilities::kind::EntryProblemKind;

    /// The kind's `validate`, as `KIND` has it.
    fn validate(settings: &KindSettings) -> Vec<EntryProblem> {
        (crate::KIND.validate)(settings)
    }

    fn problems(v: Value) -> Vec<String> {
        let Value::Object(map) = v else {
            panic!("object")
        };
        ServerConfig::from_settings(&map)
            .err()
            .unwrap_or_default()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn a_good_entry_has_no_problem() {
        assert!(problems(json!({"command": ["srv", "--x"], "env": {"A": "1"}})).is_empty());
        let Value::Object(map) = json!({"command": ["srv"], "env": {"A": "1"}}) else {
            panic!()
        };
        let cfg = ServerConfig::from_settings(&map).expect("valid");
        assert_eq!(cfg.command, ["srv"]);
        assert_eq!(cfg.env.get("A").map(String::as_str), Some("1"));
    }

    #[test]
    fn bad_commands_and_envs_are_named() {
        let cases = [
            (json!({}), r#"key "command": missing"#),
            (json!({"command": []}), r#"key "command": is empty"#),
            (
                json!({"command": "srv --x"}),
                r#"key "command": must be a list of strings"#,
            ),
            (
                json!({"command": ["srv", 3]}),
                r#"key "command": every word must be a string, found a number"#,
            ),
            (
                json!({"command": [""]}),
                r#"key "command": the program name is empty"#,
            ),
            (
                json!({"command": ["s"], "env": {"A": 1}}),
                r#"key "env": the value of "A" must be a string, found a number"#,
            ),
            (
                json!({"command": ["s"], "env": ["A=1"]}),
                r#"key "env": must be an object of string values, found an array"#,
            ),
            (
                json!({"command": ["s"], "env": {"A=B": "1"}}),
                r#"key "env": "A=B" is not a variable name"#,
            ),
        ];
        for (input, want) in cases {
            let got = problems(input.clone());
            assert_eq!(got.len(), 1, "{input}: {got:?}");
            assert!(got[0].starts_with(want), "{input}: {got:?}");
        }
    }

    #[test]
    fn an_env_value_names_a_host_variable_set_or_unset_and_keeps_its_template() {
        // PATH is set wherever tests run.
        let Value::Object(map) =
            json!({"command": ["s"], "env": {"P": "${PATH}:$$", "Q": "cost $$5"}})
        else {
            panic!()
        };
        let cfg = ServerConfig::from_settings(&map).expect("valid");
        assert_eq!(cfg.env["P"], "${PATH}:$$", "the template, never the value");
        let got = problems(json!({"command": ["s"], "env": {"T": "a ${SPEAR_TEST_NEVER_SET_46}"}}));
        assert_eq!(
            got,
            [
                r#"key "env": the value of "T" names ${SPEAR_TEST_NEVER_SET_46}, which is not set in this environment (set it where the server starts, or write $$ for a literal $)"#
            ]
        );
        let got = problems(json!({"command": ["s"], "env": {"T": "${X"}}));
        assert_eq!(
            got,
            [
                r#"key "env": the value of "T": "${" is not closed by "}"; write ${NAME} for the host's variable NAME, $$ for a literal $"#
            ]
        );
    }

    #[test]
    fn each_problem_says_its_kind() {
        for (input, want) in [
            (json!({}), EntryProblemKind::MissingKey),
            (json!({"command": []}), EntryProblemKind::EmptyCommand),
            (json!({"command": [""]}), EntryProblemKind::EmptyCommand),
            (json!({"command": "srv"}), EntryProblemKind::WrongType),
            (json!({"command": ["s", 3]}), EntryProblemKind::WrongType),
            (
                json!({"command": ["s"], "env": {"A": 1}}),
                EntryProblemKind::WrongType,
            ),
            (
                json!({"command": ["s"], "env": {"A=B": "1"}}),
                EntryProblemKind::BadValue,
            ),
            (
                json!({"command": ["s"], "env": {"A": "$HOME"}}),
                EntryProblemKind::BadValue,
            ),
            (
                json!({"command": ["s"], "env": {"A": "${SPEAR_TEST_NEVER_SET_46}"}}),
                EntryProblemKind::UnsetVariable,
            ),
        ] {
            let Value::Object(map) = input.clone() else {
                panic!("object")
            };
            let kinds: Vec<EntryProblemKind> = validate(&map).iter().map(|p| p.kind).collect();
            assert_eq!(kinds, [want], "{input}");
        }
    }
}
