//! `docs/spec-coverage.md` maps each spec sentence to the tests that pin it.
//! A renamed or deleted test would leave a row citing nothing: every test
//! name the map cites must be a function in the file (or crate) it names.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// The workspace root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("core sits in the workspace")
        .to_path_buf()
}

/// Where a cited crate path (`core::...`, `spear_mcp_stdio::...`) or one of
/// the map's own abbreviations (declared in its text) is looked for.
fn place(head: &str) -> Option<&'static str> {
    Some(match head {
        "core" | "spear_capabilities" => "core/src",
        "spear_mcp_stdio" => "mcp-stdio/src",
        "spear_testkit" => "testkit/src",
        "spear_providers" => "providers/src",
        "cli" => "cli/src",
        "T" => "core/tests/command_table.rs",
        "P" => "core/tests/command_properties.rs",
        "L" => "core/src/command/lexer",
        "I::everything" => "mcp-stdio/tests/interop/everything.rs",
        "I::python" => "mcp-stdio/tests/interop/python.rs",
        _ => return None,
    })
}

/// Every `fn` name in `path`, a file or a folder of them.
fn functions(path: &Path, into: &mut BTreeSet<String>) {
    if path.is_dir() {
        for entry in fs::read_dir(path).expect("a readable folder").flatten() {
            functions(&entry.path(), into);
        }
    } else if path.extension().is_some_and(|e| e == "rs") {
        let text = fs::read_to_string(path).expect("a readable source file");
        let mut words = text.split(|c: char| !(c.is_alphanumeric() || c == '_'));
        while let Some(word) = words.next() {
            if word == "fn" {
                let name = words.by_ref().find(|w| !w.is_empty());
                into.extend(name.map(str::to_owned));
            }
        }
    }
}

fn is_test_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// The cited names (backticked, with `::`) in the test cells of the map's
/// table rows, each with the file or folder it must be in. `::name` is in
/// the place cited last in the same row.
fn citations(map: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for row in map.lines().filter(|l| l.starts_with('|')) {
        let tests = row.splitn(3, '|').nth(2).unwrap_or("");
        let mut here: Option<String> = None;
        for cited in tests.split('`').skip(1).step_by(2) {
            if !cited.contains("::") || cited.contains(' ') {
                continue;
            }
            let (head, name) = cited.rsplit_once("::").expect("has ::");
            if head.ends_with(".rs") {
                here = Some(head.to_owned());
            } else if !head.contains("::") && head.len() > 1 {
                // `core::session`: a module (its doc example), not a test.
                continue;
            } else if !head.is_empty() {
                let first = head.split("::").next().unwrap_or(head);
                here = place(head).or_else(|| place(first)).map(str::to_owned);
            }
            if let (Some(place), true) = (&here, is_test_name(name)) {
                out.push((cited.to_owned(), place.clone()));
            }
        }
    }
    out
}

#[test]
fn every_test_the_coverage_map_cites_exists() {
    let root = root();
    let map = fs::read_to_string(root.join("docs/spec-coverage.md")).expect("the map");
    let cited = citations(&map);
    assert!(cited.len() > 300, "only {} citations read", cited.len());
    let missing: Vec<String> = cited
        .iter()
        .filter(|(cited, place)| {
            let mut names = BTreeSet::new();
            functions(&root.join(place), &mut names);
            let name = cited.rsplit_once("::").map_or("", |(_, n)| n);
            !names.contains(name)
        })
        .map(|(cited, place)| format!("{cited} (looked in {place})"))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/spec-coverage.md cites tests that do not exist:\n{}",
        missing.join("\n")
    );
}

#[test]
fn a_renamed_test_is_found_missing() {
    let map =
        "| a sentence | `core/tests/registry.rs::no_such_test_here`, `::defaults_are_the_specs` |";
    let cited = citations(map);
    assert_eq!(cited.len(), 2);
    let mut names = BTreeSet::new();
    functions(&root().join("core/tests/registry.rs"), &mut names);
    assert!(!names.contains("no_such_test_here"));
    assert!(names.contains("defaults_are_the_specs"));
}
