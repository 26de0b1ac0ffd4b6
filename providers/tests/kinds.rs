//! The kinds this crate links, and the mcp-stdio kind's entry checks seen
//! through the registry.

use std::path::Path;

use spear_capabilities::{Audit, Registry, kind::Kinds};

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

/// The workspace's folder.
fn root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The `[dependencies]` (not dev) of the workspace member in `folder`.
fn member_dependencies(folder: &str) -> Vec<String> {
    let manifest =
        std::fs::read_to_string(root().join(folder).join("Cargo.toml")).expect("Cargo.toml");
    let section = manifest
        .split_once("\n[dependencies]\n")
        .map_or("", |(_, rest)| rest.split("\n[").next().unwrap_or(""));
    section
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| l.split(['.', ' ', '=']).next())
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
        .collect()
}

/// What building `name` as a dependency compiles: the normal dependencies
/// of the workspace members it reaches, then what `Cargo.lock` says each
/// third-party package needs (the lock holds no dev-dependencies of those).
fn build_closure(name: &str) -> std::collections::BTreeSet<String> {
    let lock = std::fs::read_to_string(root().join("Cargo.lock")).expect("Cargo.lock");
    let mut deps: std::collections::HashMap<String, Vec<String>> = Default::default();
    for package in lock.split("[[package]]").skip(1) {
        let Some(pkg) = package
            .lines()
            .find_map(|l| l.strip_prefix("name = \""))
            .map(|v| v.trim_end_matches('"').to_owned())
        else {
            continue;
        };
        let list = package
            .split_once("dependencies = [")
            .map_or("", |(_, rest)| rest.split(']').next().unwrap_or(""));
        let names = list
            .split(',')
            .filter_map(|d| d.trim().trim_matches('"').split(' ').next())
            .filter(|d| !d.is_empty())
            .map(str::to_owned);
        deps.entry(pkg).or_default().extend(names);
    }
    let members = [
        ("spear-capabilities", "core"),
        ("spear-mcp-stdio", "mcp-stdio"),
        ("spear-providers", "providers"),
        ("spear-cli", "cli"),
    ];
    let mut seen = std::collections::BTreeSet::new();
    let mut todo = vec![name.to_owned()];
    while let Some(p) = todo.pop() {
        if seen.insert(p.clone()) {
            match members.iter().find(|(m, _)| *m == p) {
                Some((_, folder)) => todo.extend(member_dependencies(folder)),
                None => todo.extend(deps.get(&p).into_iter().flatten().cloned()),
            }
        }
    }
    seen
}

/// Issue 17 item 7: linking the built-in kinds costs an embedder only the
/// kinds; the operator CLI (and its clap) is the `spear-cli` package.
#[test]
fn linking_the_kinds_builds_no_cli_parser() {
    let providers = build_closure("spear-providers");
    assert!(providers.contains("spear-mcp-stdio"), "{providers:?}");
    assert!(providers.contains("tokio"), "{providers:?}");
    for cli_only in ["clap", "clap_builder", "spear-cli"] {
        assert!(!providers.contains(cli_only), "{cli_only} in {providers:?}");
    }
    assert!(build_closure("spear-cli").contains("clap"));
}

/// The mcp-stdio kind's check, through the library: a program missing, not
/// executable, a folder, or not on the server's `PATH` cannot run; one that
/// is there and executable can. Nothing is started.
#[test]
fn the_library_check_says_whether_each_program_can_run() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let script = dir.path().join("srv");
    std::fs::write(&script, "#!/bin/sh\n").expect("write");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let plain = dir.path().join("plain");
    std::fs::write(&plain, "").expect("write");
    let text = format!(
        r#"{{"providers": [
  {{"id": "ok", "command": ["./srv"], "scope": "global"}},
  {{"id": "gone", "command": ["./nope"], "scope": "global"}},
  {{"id": "plain", "command": ["{}"], "scope": "global"}},
  {{"id": "folder", "command": ["{}"], "scope": "global"}},
  {{"id": "path", "command": ["srv"], "env": {{"PATH": "{}"}}, "scope": "global"}},
  {{"id": "notpath", "command": ["srv"], "env": {{"PATH": "/nonexistent"}}, "scope": "global"}}
]}}"#,
        plain.display(),
        dir.path().display(),
        dir.path().display()
    );
    let r = Registry::parse(
        text.as_bytes(),
        &dir.path().join("capabilities.json"),
        &spear_providers::kinds().expect("built-in kinds"),
        &Audit::null(),
    )
    .expect("parses");
    let said: Vec<(String, Option<String>)> = r
        .check()
        .into_iter()
        .map(|c| (c.provider, c.cannot_run))
        .collect();
    let gone = dir.path().join("./nope");
    assert_eq!(
        said,
        [
            ("ok".into(), None),
            (
                "gone".into(),
                Some(format!(
                    "cannot start `{}`: No such file or directory (os error 2)",
                    gone.display()
                ))
            ),
            (
                "plain".into(),
                Some(format!(
                    "cannot start `{}`: Permission denied (os error 13)",
                    plain.display()
                ))
            ),
            (
                "folder".into(),
                Some(format!(
                    "cannot start `{}`: Permission denied (os error 13)",
                    dir.path().display()
                ))
            ),
            ("path".into(), None),
            (
                "notpath".into(),
                Some("cannot start `srv`: No such file or directory (os error 2)".into())
            ),
        ]
    );
}
