//! The kinds this crate links, and the mcp-stdio kind's entry checks seen
//! through the registry.

use std::path::Path;

use spear_capabilities::{Audit, Kinds, Registry};

#[test]
fn the_built_in_kinds_are_exactly_the_linked_ones() {
    let names = spear_providers::kinds().expect("no duplicates").names();
    assert_eq!(names, ["mcp-stdio"]);
    assert_eq!(names, spear_providers::BUILT_IN_KINDS);
    // Naming this crate links them, so the inventory finds the same set.
    assert_eq!(Kinds::linked().expect("linked").names(), names);
}

fn problems(entry: &str) -> Vec<String> {
    let text = format!(r#"{{"providers": [{entry}]}}"#);
    let r = Registry::parse(
        text.as_bytes(),
        Path::new("/etc/capabilities.json"),
        &spear_providers::kinds().expect("built-in kinds"),
        &Audit::null(),
    )
    .expect("parses");
    r.refused()
        .iter()
        .flat_map(|e| e.problems.iter().map(ToString::to_string))
        .collect()
}

#[test]
fn an_entry_without_kind_is_mcp_stdio_and_needs_a_command() {
    assert!(
        problems(r#"{"id": "t", "command": ["srv"], "env": {"TOKEN_FILE": "/etc/t"}}"#).is_empty()
    );
    let cases = [
        (
            r#"{"id": "t"}"#,
            r#"key "command": missing; give the server to start as a list"#,
        ),
        (
            r#"{"id": "t", "command": []}"#,
            r#"key "command": is empty"#,
        ),
        (
            r#"{"id": "t", "command": "srv --stdio"}"#,
            r#"key "command": must be a list of strings (the program and its arguments; no shell), found a string"#,
        ),
        (
            r#"{"id": "t", "command": ["srv", {}]}"#,
            r#"key "command": every word must be a string, found an object"#,
        ),
        (
            r#"{"id": "t", "command": ["srv"], "env": {"N": 1}}"#,
            r#"key "env": the value of "N" must be a string, found a number"#,
        ),
        (
            r#"{"id": "t", "command": ["srv"], "env": "N=1"}"#,
            r#"key "env": must be an object of string values, found a string"#,
        ),
        (
            r#"{"id": "t", "command": ["srv"], "args": []}"#,
            r#"key "args": unknown key; allowed for kind "mcp-stdio": id, kind, scope, tasks, read, write, enabled, timeout, command, env"#,
        ),
    ];
    for (entry, want) in cases {
        let got = problems(entry);
        assert_eq!(got.len(), 1, "{entry}: {got:?}");
        assert!(
            got[0].starts_with(want),
            "{entry}:\n got {}\nwant {want}",
            got[0]
        );
    }
}
