//! The fuzz corpora replayed on stable: every file of `fuzz/corpus/<target>`
//! through the very function the `cargo fuzz` target calls, so CI on a fresh
//! machine checks every input the fuzzers kept or found, without nightly.

use std::path::PathBuf;

use spear_testkit::fuzz;
// The registry target validates mcp-stdio entries, as SPEAR's binary does.
use spear_providers as _;

fn corpus(target: &str) -> Vec<PathBuf> {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../fuzz/corpus")).join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

fn replay(target: &str) {
    let files = corpus(target);
    assert!(files.len() >= 5, "{target}: only {} seeds", files.len());
    for file in files {
        let data = std::fs::read(&file).expect("readable");
        let outcome = std::panic::catch_unwind(|| match target {
            "mcp_stdout" => {
                spear_mcp_stdio::fuzzing::fuzz_stdout(&data);
            }
            _ => fuzz::run(target, &data),
        });
        assert!(
            outcome.is_ok(),
            "{target}: {} breaks an invariant",
            file.display()
        );
    }
}

#[test]
fn the_lexer_corpus_replays() {
    replay("lexer");
}

#[test]
fn the_mcp_stdout_corpus_replays() {
    replay("mcp_stdout");
}

#[test]
fn the_registry_corpus_replays() {
    replay("registry");
}

#[test]
fn the_framing_corpus_replays() {
    replay("framing");
}

#[test]
fn every_target_has_a_corpus() {
    for target in fuzz::TARGETS.into_iter().chain(["mcp_stdout"]) {
        assert!(!corpus(target).is_empty(), "{target}");
    }
}
