//! The registry as the core sees it: finding the file, reading it, checking
//! the common keys, handing the rest to the kind, auditing every entry.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use spear_capabilities::registry::{self, DEFAULT_TIMEOUT, MAX_REGISTRY_BYTES};
use spear_capabilities::{
    Error, Registry, WritePolicy,
    kind::{EntryProblem, EntryProblemKind, KindSettings, Kinds, ProviderKind},
    registry::{EntryWarning, RequestClass, Scope},
};
use spear_testkit::RecordingSink;

fn validate(settings: &KindSettings) -> Vec<EntryProblem> {
    match settings.get("command") {
        Some(Value::Array(a)) if !a.is_empty() => Vec::new(),
        _ => vec![EntryProblem::new("command", "must be a non-empty list")],
    }
}

/// This kind's program "cannot run" when it is named `missing`.
fn check(settings: &KindSettings, _base: &Path) -> Result<(), String> {
    match settings.get("command").and_then(|c| c.get(0)) {
        Some(Value::String(p)) if p == "missing" => Err(format!("cannot start `{p}`: not here")),
        _ => Ok(()),
    }
}

/// The one kind of these tests: takes `command` and `env`, like mcp-stdio.
const PROC: ProviderKind = ProviderKind::new(
    "proc",
    &["command", "env"],
    validate,
    spear_testkit::kinds::started_elsewhere,
)
.with_check(check);

fn kinds() -> Kinds {
    Kinds::new([&PROC]).expect("one kind")
}

const FILE: &str = "/etc/spear/capabilities.json";

fn parse(text: &str) -> (Registry, std::sync::Arc<RecordingSink>) {
    let (sink, audit) = RecordingSink::new();
    let r = Registry::parse(text.as_bytes(), Path::new(FILE), &kinds(), &audit).expect("parses");
    (r, sink)
}

/// The problems of the only entry, which must be refused.
fn problems(entry: &str) -> Vec<String> {
    let (r, _) = parse(&format!(r#"{{"providers": [{entry}]}}"#));
    assert!(r.entries().is_empty(), "{entry} was accepted");
    assert_eq!(r.refused().len(), 1);
    r.refused()[0]
        .problems
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn ok_entry(extra: &str) -> String {
    format!(r#"{{"id": "t", "kind": "proc", "command": ["x"]{extra}}}"#)
}

#[test]
fn the_spec_example_registers_with_its_values() {
    let (r, sink) = parse(
        r#"{"providers": [
  {"id": "tracker",
   "kind": "proc",
   "command": ["/opt/tracker-mcp/bin/tracker-mcp", "--readonly-token-file", "/etc/t"],
   "scope": "corpus firmware-a",
   "tasks": ["implementation", "mixed"],
   "read": ["search_issues", "get_issue"],
   "write": "refuse",
   "timeout": 10}
]}"#,
    );
    assert!(r.refused().is_empty(), "{:?}", r.refused());
    let e = &r.entries()[0];
    assert_eq!(e.id, "tracker");
    assert_eq!(e.kind, "proc");
    assert_eq!(e.scope, Some(Scope::Corpus(vec!["firmware-a".into()])));
    assert_eq!(
        e.tasks.iter().copied().collect::<Vec<_>>(),
        [RequestClass::Implementation, RequestClass::Mixed]
    );
    assert_eq!(
        e.read.iter().map(String::as_str).collect::<Vec<_>>(),
        ["get_issue", "search_issues"]
    );
    assert_eq!(e.write, WritePolicy::Refuse);
    assert!(e.enabled);
    assert_eq!(e.timeout.as_secs(), 10);
    assert_eq!(e.settings.keys().collect::<Vec<_>>(), ["command"]);
    let rec = &sink.named("provider_registered")[0];
    assert_eq!(rec["provider"], "tracker");
    assert_eq!(rec["scope"], "corpus firmware-a");
    assert_eq!(rec["file"], FILE);
}

#[test]
fn defaults_are_the_specs() {
    let (r, _) = parse(&format!(r#"{{"providers": [{}]}}"#, ok_entry("")));
    let e = &r.entries()[0];
    assert_eq!(e.scope, None, "without a scope it applies nowhere");
    assert_eq!(
        e.tasks.iter().copied().collect::<Vec<_>>(),
        [RequestClass::Implementation, RequestClass::Mixed]
    );
    assert!(e.read.is_empty());
    assert_eq!(e.write, WritePolicy::Refuse);
    assert!(e.enabled);
    // DESIGN's figure, not only the constant: a changed default fails here.
    assert_eq!(e.timeout, Duration::from_secs(30));
    assert_eq!(DEFAULT_TIMEOUT, Duration::from_secs(30));
}

#[test]
fn fractional_and_integer_timeouts_are_seconds() {
    let (r, _) = parse(&format!(
        r#"{{"providers": [{}]}}"#,
        ok_entry(r#", "timeout": 0.25"#)
    ));
    assert_eq!(r.entries()[0].timeout.as_millis(), 250);
}

#[test]
fn enabled_false_keeps_the_entry() {
    let (r, _) = parse(&format!(
        r#"{{"providers": [{}]}}"#,
        ok_entry(r#", "enabled": false"#)
    ));
    assert!(!r.entries()[0].enabled);
}

#[test]
fn each_bad_common_key_is_named_with_what_is_allowed() {
    let cases: &[(&str, &str)] = &[
        (
            r#""id": "Tracker""#,
            r#"key "id": "Tracker" is not a lower-case name; allowed: a letter a-z, then a-z, 0-9, '_' or '-'"#,
        ),
        (
            r#""id": "9lives""#,
            r#"key "id": "9lives" is not a lower-case name"#,
        ),
        (
            r#""id": "a/b""#,
            r#"key "id": "a/b" is not a lower-case name"#,
        ),
        (r#""id": """#, r#"key "id": "" is not a lower-case name"#),
        (
            r#""id": 7"#,
            r#"key "id": must be a string, found a number"#,
        ),
        (
            r#""tasks": ["implementation", "chat"]"#,
            r#"key "tasks": "chat" is not a task class; allowed: "implementation", "mixed", "general""#,
        ),
        (
            r#""tasks": "general""#,
            r#"key "tasks": must be a list of task classes, found a string"#,
        ),
        (
            r#""tasks": []"#,
            r#"key "tasks": must list at least one task class"#,
        ),
        (
            r#""tasks": ["mixed", "mixed"]"#,
            r#"key "tasks": lists "mixed" twice"#,
        ),
        (
            r#""write": "sometimes""#,
            r#"key "write": "sometimes" is not a write policy; allowed: "refuse", "confirm", "allow""#,
        ),
        (
            r#""write": true"#,
            r#"key "write": must be one of "refuse", "confirm", "allow", found a boolean"#,
        ),
        (
            r#""timeout": 0"#,
            r#"key "timeout": 0 is out of range; allowed: more than 0 and at most 86400 seconds"#,
        ),
        (r#""timeout": -3"#, r#"key "timeout": -3 is out of range"#),
        (
            r#""timeout": 1e300"#,
            r#"key "timeout": 1e+300 is out of range"#,
        ),
        (
            r#""timeout": "10""#,
            r#"key "timeout": must be a positive number of seconds, found a string"#,
        ),
        (
            r#""read": "get_issue""#,
            r#"key "read": must be a list of tool names, found a string"#,
        ),
        (
            r#""read": ["a", 1]"#,
            r#"key "read": must be a list of tool names (strings), found a number"#,
        ),
        (r#""read": [""]"#, r#"key "read": has an empty tool name"#),
        (
            r#""enabled": "no""#,
            r#"key "enabled": must be true or false, found a string"#,
        ),
        (
            r#""scope": "everywhere""#,
            r#"key "scope": "everywhere": unknown scope keyword `everywhere`; allowed: `global`, `corpus <project>[, ...]`, `family <name>[, ...]` or `path <dir>`"#,
        ),
        (
            r#""scope": ["global"]"#,
            r#"key "scope": must be a string, found an array"#,
        ),
        (
            r#""kind": "http""#,
            r#"key "kind": unknown provider kind `http`; available kinds: proc"#,
        ),
        (
            r#""kind": 1"#,
            r#"key "kind": must be a string, found a number"#,
        ),
        (
            r#""colour": "red""#,
            r#"key "colour": unknown key; allowed for kind "proc": id, kind, scope, tasks, read, write, enabled, timeout, command, env"#,
        ),
    ];
    for (extra, want) in cases {
        let mut entry: serde_json::Map<String, Value> =
            serde_json::from_str(&ok_entry("")).expect("json");
        let patch: serde_json::Map<String, Value> =
            serde_json::from_str(&format!("{{{extra}}}")).expect("json");
        entry.extend(patch);
        let got = problems(&Value::Object(entry).to_string());
        assert_eq!(got.len(), 1, "{extra}: {got:?}");
        assert!(
            got[0].starts_with(want),
            "{extra}:\n got {}\nwant {want}",
            got[0]
        );
    }
}

#[test]
fn the_kind_validates_its_own_keys() {
    let got = problems(r#"{"id": "t", "kind": "proc", "command": []}"#);
    assert_eq!(got, [r#"key "command": must be a non-empty list"#]);
}

#[test]
fn every_problem_of_an_entry_is_reported_at_once() {
    let got = problems(r#"{"id": "X", "kind": "proc", "write": "no", "tasks": ["x"]}"#);
    assert_eq!(got.len(), 4, "{got:?}");
}

#[test]
fn an_entry_that_is_not_an_object_or_has_no_id_is_named_by_index() {
    let (r, sink) = parse(&format!(
        r#"{{"providers": [{}, "tracker", {{"kind": "proc", "command": ["x"]}}]}}"#,
        ok_entry("")
    ));
    assert_eq!(r.entries().len(), 1);
    assert_eq!(
        r.refused()[0].to_string(),
        "providers[1] refused: an entry must be a JSON object;"
    );
    assert_eq!(
        r.refused()[1].to_string(),
        r#"providers[2] refused: key "id": missing; every entry needs an id;"#
    );
    assert_eq!(
        sink.names(),
        [
            "provider_registered",
            "provider_refused",
            "provider_refused"
        ]
    );
    assert_eq!(sink.named("provider_refused")[0]["entry"], "providers[1]");
}

#[test]
fn a_duplicate_id_is_refused_and_the_first_registers() {
    let (r, _) = parse(&format!(r#"{{"providers": [{0}, {0}]}}"#, ok_entry("")));
    assert_eq!(r.entries().len(), 1);
    assert_eq!(
        r.refused()[0].to_string(),
        r#"providers[1] ("t") refused: key "id": "t" is already used by providers[0]; ids must be unique;"#
    );
}

#[test]
fn an_entry_without_kind_is_of_the_default_kind() {
    // The registry knows only the `proc` kind, so the default kind is
    // missing and the refusal names it.
    let got = problems(r#"{"id": "t", "command": ["x"]}"#);
    assert_eq!(
        got,
        ["key \"kind\": unknown provider kind `mcp-stdio`; available kinds: proc"]
    );
}

#[test]
fn valid_entries_register_beside_invalid_ones() {
    let (r, sink) = parse(&format!(
        r#"{{"providers": [{}, {{"id": "u", "kind": "proc", "command": ["y"], "write": "x"}}, {}]}}"#,
        ok_entry(""),
        ok_entry("").replace(r#""t""#, r#""v""#)
    ));
    let ids: Vec<_> = r.entries().iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["t", "v"]);
    assert_eq!(r.refused()[0].id.as_deref(), Some("u"));
    assert_eq!(sink.named("provider_registered").len(), 2);
    assert_eq!(sink.named("provider_refused").len(), 1);
}

#[test]
fn a_relative_path_scope_is_relative_to_the_file() {
    let (r, _) = parse(&format!(
        r#"{{"providers": [{}]}}"#,
        ok_entry(r#", "scope": "path ../trees/fw""#)
    ));
    assert_eq!(
        r.entries()[0].scope,
        Some(Scope::Path(PathBuf::from("/etc/trees/fw")))
    );
}

#[test]
fn syntax_errors_name_the_file_line_and_column() {
    let (_, audit) = RecordingSink::new();
    let err = Registry::parse(
        b"{\"providers\": [\n  {\"id\": \"t\",}\n]}",
        Path::new(FILE),
        &kinds(),
        &audit,
    )
    .expect_err("not JSON");
    assert!(
        matches!(
            err,
            Error::RegistrySyntax {
                line: 2,
                column: 13,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "capabilities file /etc/spear/capabilities.json:2:13: trailing commas are not allowed"
    );
}

#[test]
fn a_fault_before_a_lines_first_character_is_at_column_1() {
    // Found by the `registry` fuzz target, when serde_json read the file:
    // its column 0. An unterminated array is placed at its `[`.
    for (text, want) in [
        (
            "",
            "capabilities file /etc/spear/capabilities.json:1:1: the file is empty; expected an object {\"providers\": [...]}",
        ),
        (
            "{\"providers\": [\n",
            "capabilities file /etc/spear/capabilities.json:1:15: unterminated array",
        ),
        (
            "{\"providers\": []}\n]",
            "capabilities file /etc/spear/capabilities.json:2:1: text cannot contain more than one JSON value",
        ),
    ] {
        let err = Registry::parse(
            text.as_bytes(),
            Path::new(FILE),
            &kinds(),
            &spear_capabilities::Audit::null(),
        )
        .expect_err("not JSON");
        assert_eq!(err.to_string(), want);
    }
}

#[test]
fn the_file_must_be_an_object_of_providers() {
    for (text, want) in [
        ("[]", r#"expected an object {"providers": [...]}"#),
        ("{}", r#"expected "providers" to be an array of entries"#),
        (
            r#"{"providers": {}}"#,
            r#"expected "providers" to be an array of entries"#,
        ),
        (
            r#"{"providers": [], "extra": 1}"#,
            r#"unknown top-level key "extra"; allowed: "providers""#,
        ),
    ] {
        let err = Registry::parse(
            text.as_bytes(),
            Path::new(FILE),
            &kinds(),
            &RecordingSink::new().1,
        )
        .expect_err(text);
        assert_eq!(err.to_string(), format!("capabilities file {FILE}: {want}"));
    }
}

#[test]
fn a_missing_file_is_no_providers_and_says_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("capabilities.json");
    let r = Registry::load(&path, &kinds(), &RecordingSink::new().1).expect("missing is fine");
    assert!(r.entries().is_empty() && r.refused().is_empty());
    assert_eq!(
        r.notice(),
        Some(format!(
            "no capabilities file at {}: no providers are registered",
            path.display()
        ))
    );
}

#[test]
fn an_unreadable_file_is_one_error_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A directory cannot be read as a file, even by root.
    let err =
        Registry::load(dir.path(), &kinds(), &RecordingSink::new().1).expect_err("unreadable");
    let msg = err.to_string();
    assert!(matches!(err, Error::RegistryRead { .. }), "{err:?}");
    assert!(
        msg.starts_with(&format!(
            "cannot read capabilities file {}: ",
            dir.path().display()
        )),
        "{msg}"
    );
}

#[test]
fn a_file_on_disk_loads_and_relative_paths_use_its_folder() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("capabilities.json");
    std::fs::write(
        &path,
        format!(
            r#"{{"providers": [{}]}}"#,
            ok_entry(r#", "scope": "path trees""#)
        ),
    )
    .expect("write");
    let r = Registry::load(&path, &kinds(), &RecordingSink::new().1).expect("loads");
    assert_eq!(r.file(), Some(path.as_path()));
    assert_eq!(
        r.entries()[0].scope,
        Some(Scope::Path(dir.path().join("trees")))
    );
    assert_eq!(r.notice(), None);
}

#[test]
fn the_file_is_beside_projects_json_unless_the_variable_names_one() {
    let projects = Path::new("/srv/spear/projects.json");
    assert_eq!(
        Registry::locate(projects, None),
        PathBuf::from("/srv/spear/capabilities.json")
    );
    assert_eq!(
        Registry::locate(projects, Some("/etc/caps.json".into())),
        PathBuf::from("/etc/caps.json")
    );
    assert_eq!(
        Registry::locate(projects, Some("".into())),
        PathBuf::from("/srv/spear/capabilities.json"),
        "an empty variable counts as unset"
    );
    assert_eq!(registry::CAPABILITIES_FILE_VAR, "SPEAR_CAPABILITIES_FILE");
}

/// A refused entry says where it is and where each faulty key is, as a
/// syntax error does; a kind's problem is placed too, and a key the entry
/// lacks is placed at the entry.
#[test]
fn a_refused_entrys_problems_carry_the_line_and_column_of_their_key() {
    let (r, _) = parse(
        "{\"providers\": [\n  {\"id\": \"ok\", \"kind\": \"proc\", \"command\": [\"x\"]},\n  {\"id\": \"bad\",\n   \"kind\": \"proc\",\n   \"write\": \"maybe\",\n   \"timeout\": -1}\n]}",
    );
    let refused = &r.refused()[0];
    assert_eq!(refused.position.map(|p| (p.line, p.column)), Some((3, 3)));
    let at = |key: &str| {
        let p = refused
            .problems
            .iter()
            .find(|p| p.key == key)
            .unwrap_or_else(|| panic!("no problem with {key:?}: {:?}", refused.problems));
        p.position.map(|p| p.to_string())
    };
    assert_eq!(at("write").as_deref(), Some("5:4"));
    assert_eq!(at("timeout").as_deref(), Some("6:4"));
    // The kind's own problem: `command` is missing, so the entry's place.
    assert_eq!(at("command").as_deref(), Some("3:3"));
}

/// Every public problem type is a `std::error::Error`: an embedder can `?`
/// it into its own error type or box it.
#[test]
fn registry_problems_are_std_errors() {
    fn boxed(e: impl std::error::Error + Send + Sync + 'static) -> Box<dyn std::error::Error> {
        Box::new(e)
    }
    let (r, _) = parse(r#"{"providers": [{"id": "x", "kind": "proc"}]}"#);
    let refused = r.refused()[0].clone();
    let problem = refused.problems[0].clone();
    assert!(boxed(problem).to_string().contains("command"));
    assert!(boxed(refused).to_string().starts_with("providers[0]"));
}

/// The library says what `spear-capabilities check` says, before any
/// turn: a program that cannot run refuses an entry a turn would start,
/// and is a warning for one nothing starts (disabled, or without a scope).
#[test]
fn a_check_refuses_a_program_that_cannot_run_only_where_a_turn_would_start_it() {
    let (r, _) = parse(
        r#"{"providers": [
  {"id": "runs", "kind": "proc", "command": ["x"], "scope": "global"},
  {"id": "used", "kind": "proc", "command": ["missing"], "scope": "global"},
  {"id": "off", "kind": "proc", "command": ["missing"], "scope": "global", "enabled": false},
  {"id": "nowhere", "kind": "proc", "command": ["missing"]}
]}"#,
    );
    let checks = r.check();
    let ids: Vec<&str> = checks.iter().map(|c| c.provider.as_str()).collect();
    assert_eq!(ids, ["runs", "used", "off", "nowhere"]);
    assert!(checks[0].is_ok() && checks[0].warnings.is_empty());
    assert_eq!(
        checks[1].cannot_run.as_deref(),
        Some("cannot start `missing`: not here")
    );
    assert!(!checks[1].is_ok());
    assert!(checks[2].is_ok());
    assert_eq!(
        checks[2].warnings,
        [EntryWarning::CannotRunUnused {
            reason: "cannot start `missing`: not here".into(),
            disabled: true
        }]
    );
    assert_eq!(
        checks[2].warnings[0].to_string(),
        "cannot start `missing`: not here; a warning only: it is disabled, so nothing starts it"
    );
    assert!(checks[3].is_ok());
    assert_eq!(checks[3].warnings.len(), 2);
    assert_eq!(checks[3].warnings[0], EntryWarning::NoScope);
    assert_eq!(
        checks[3].warnings[1].to_string(),
        "cannot start `missing`: not here; a warning only: it has no scope, so nothing starts it"
    );
    assert_eq!(r.check_entry(&r.entries()[1]), checks[1]);
}

/// One reading, one meaning: a key given twice inside an entry refuses the
/// entry (at the second copy, at any depth), neither copy counting; an id
/// given twice names no entry and claims no id.
#[test]
fn a_key_given_twice_refuses_its_entry_at_the_second_copy() {
    let (r, sink) = parse(
        "{\"providers\": [\n  {\"id\": \"w\", \"kind\": \"proc\", \"command\": [\"x\"], \"write\": \"refuse\", \"write\": \"allow\"},\n  {\"id\": \"e\", \"kind\": \"proc\", \"command\": [\"x\"], \"env\": {\"A\": \"1\", \"A\": \"2\"}},\n  {\"id\": \"y\", \"kind\": \"proc\", \"command\": [\"x\"], \"id\": \"z\"},\n  {\"id\": \"z\", \"kind\": \"proc\", \"command\": [\"x\"]}\n]}",
    );
    let ids: Vec<&str> = r.entries().iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["z"], "the id given twice claims neither copy");
    assert_eq!(r.entries()[0].index, 3);
    let said: Vec<(String, Option<String>, Vec<String>)> = r
        .refused()
        .iter()
        .map(|refused| {
            let problems = refused.problems.iter().map(|p| {
                assert_eq!(p.kind, EntryProblemKind::DuplicateKey, "{p}");
                format!("{} {p}", p.position.expect("placed"))
            });
            (refused.label(), refused.id.clone(), problems.collect())
        })
        .collect();
    assert_eq!(
        said,
        [
            (
                "providers[0] (\"w\")".to_owned(),
                Some("w".to_owned()),
                vec![
                    "2:68 key \"write\": given twice (first at 2:49); a key may be given once"
                        .to_owned()
                ]
            ),
            (
                "providers[1] (\"e\")".to_owned(),
                Some("e".to_owned()),
                vec![
                    "3:67 key \"env\": \"A\" given twice (first at 3:57); a key may be given once"
                        .to_owned()
                ]
            ),
            (
                "providers[2]".to_owned(),
                None,
                vec![
                    "4:49 key \"id\": given twice (first at 4:4); a key may be given once"
                        .to_owned()
                ]
            ),
        ]
    );
    assert_eq!(sink.named("provider_refused").len(), 3);
}

#[test]
fn a_key_given_twice_outside_the_entries_is_an_error_of_the_file() {
    let err = Registry::parse(
        b"{\"providers\": [],\n \"providers\": [{\"id\": \"x\", \"kind\": \"proc\", \"command\": [\"x\"]}]}",
        Path::new(FILE),
        &kinds(),
        &spear_capabilities::Audit::null(),
    )
    .expect_err("neither copy counts");
    assert!(
        matches!(
            err,
            Error::RegistrySyntax {
                line: 2,
                column: 2,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        format!(
            "capabilities file {FILE}:2:2: key \"providers\" given twice (first at 1:2); a key may be given once"
        )
    );
}

/// Every problem says its kind, for a program to match on; each is placed,
/// and an entry's problems are in file order.
#[test]
fn every_problem_has_a_kind_and_a_place_in_file_order() {
    let (r, _) = parse(
        r#"{"providers": [
  {"id": "a", "kind": "proc", "command": ["x"]},
  7,
  {"kind": "proc", "timeout": "soon", "tasks": ["nope"], "command": ["x"]},
  {"id": "a", "kind": "nokind", "scope": "corpus"},
  {"id": "b", "kind": "proc", "Timeout": 3, "read": [1], "write": "maybe"}
]}"#,
    );
    let kinds: Vec<Vec<(String, EntryProblemKind, String)>> = r
        .refused()
        .iter()
        .map(|refused| {
            refused
                .problems
                .iter()
                .map(|p| {
                    (
                        p.key.clone(),
                        p.kind,
                        p.position.expect("placed").to_string(),
                    )
                })
                .collect()
        })
        .collect();
    use EntryProblemKind::*;
    let k = |key: &str, kind, at: &str| (key.to_owned(), kind, at.to_owned());
    assert_eq!(
        kinds,
        [
            vec![k("", NotAnObject, "3:3")],
            vec![
                k("id", MissingKey, "4:3"),
                k("timeout", WrongType, "4:20"),
                k("tasks", BadValue, "4:39"),
            ],
            vec![
                k("id", DuplicateId, "5:4"),
                k("kind", UnknownKind, "5:15"),
                k("scope", BadValue, "5:33"),
            ],
            vec![
                // The kind's: `command` is missing, placed at the entry.
                k("command", BadValue, "6:3"),
                k("Timeout", UnknownKey, "6:31"),
                k("read", WrongType, "6:45"),
                k("write", BadValue, "6:58"),
            ],
        ]
    );
    let timeout = &r.refused()[3].problems[1];
    assert_eq!(timeout.message, "unknown key; did you mean \"timeout\"?");
    // A kind's own problem is a bad value unless the kind says otherwise.
    let (r, _) = parse(r#"{"providers": [{"id": "c", "kind": "proc"}]}"#);
    assert_eq!(r.refused()[0].problems[0].kind, BadValue);
}

/// A UTF-8 byte-order mark is read over, and not counted in a column; the
/// file's own faults keep their places.
#[test]
fn a_byte_order_mark_is_accepted_and_not_counted() {
    let (r, _) = parse(
        "\u{feff}{\"providers\": [{\"id\": \"t\", \"kind\": \"proc\", \"command\": [\"x\"], \"x\": 1}]}",
    );
    let problem = &r.refused()[0].problems[0];
    assert_eq!(
        problem.position.map(|p| p.to_string()).as_deref(),
        Some("1:62")
    );
}

/// Only a regular file is read, and never waited on: a FIFO (which would
/// block until a writer came) is refused at once, with what it is.
#[test]
fn a_fifo_is_refused_at_once_without_waiting_for_a_writer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("capabilities.json");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo")
            .success()
    );
    let err = Registry::load(&fifo, &kinds(), &spear_capabilities::Audit::null())
        .expect_err("not a regular file");
    assert!(matches!(err, Error::RegistryRead { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!(
            "cannot read capabilities file {}: not a regular file (a FIFO); a capabilities file must be a regular file",
            fifo.display()
        )
    );
}

#[test]
fn a_file_past_its_bound_is_refused_and_one_at_it_is_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("capabilities.json");
    let body = r#"{"providers": []}"#;
    let at_bound = format!(
        "{body}{}",
        " ".repeat(MAX_REGISTRY_BYTES as usize - body.len())
    );
    std::fs::write(&path, &at_bound).expect("write");
    Registry::load(&path, &kinds(), &spear_capabilities::Audit::null()).expect("at the bound");
    std::fs::write(&path, format!("{at_bound} ")).expect("write");
    let err = Registry::load(&path, &kinds(), &spear_capabilities::Audit::null())
        .expect_err("past the bound");
    assert_eq!(
        err.to_string(),
        format!(
            "cannot read capabilities file {}: it has 1048577 bytes, more than the 1 MiB (1048576 bytes) a capabilities file may have",
            path.display()
        )
    );
}
