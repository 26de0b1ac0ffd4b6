//! The default token estimate, measured against a real BPE tokenizer (OpenAI
//! o200k, `tiktoken-rs`, a dev-dependency only) over what the exposure
//! counts (each tool's title, description, input and output schema, as
//! `ShownCapability::whole_tokens` counts them) for the real MCP servers in
//! `tests/data/real-tools` and the interop tests' Python SDK server in
//! `tests/data/interop-tools`.
//!
//! On each server's tools the estimate is within 15% of o200k and never
//! more than 5% under it (DESIGN: err on the side of more tokens). The
//! figures, per server, are in `docs/performance.md` ("The token
//! estimate"), and this test holds the page to them.

use std::path::{Path, PathBuf};

use serde_json::Value;
use spear_capabilities::exposure::{CapabilityClass, ShownCapability};
use spear_capabilities::{EstimatedTokens, TokenCounter};

/// The real tokenizer, as a counter.
struct O200k(tiktoken_rs::CoreBPE);

impl TokenCounter for O200k {
    fn count(&self, text: &str) -> usize {
        self.0.encode_ordinary(text).len()
    }
}

/// The most the estimate may be over o200k on a server's tools, and under.
const MAX_OVER: f64 = 0.15;
const MAX_UNDER: f64 = 0.05;

fn fixtures() -> Vec<PathBuf> {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut files = Vec::new();
    for dir in ["real-tools", "interop-tools"] {
        let mut found: Vec<PathBuf> = std::fs::read_dir(data.join(dir))
            .expect("fixtures")
            .map(|e| e.expect("entry").path())
            .collect();
        found.sort();
        files.extend(found);
    }
    files
}

/// The capabilities a turn would be shown for a server's captured tools,
/// as the gateway builds them (the title is `title`, else
/// `annotations.title`, as mcp-stdio reads it).
fn capabilities(capture: &Value) -> Vec<ShownCapability> {
    capture["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| {
            let title = t["title"].as_str().or(t["annotations"]["title"].as_str());
            let shown = ShownCapability::new(
                format!("p/{}", t["name"].as_str().expect("name")),
                CapabilityClass::Write,
                title,
                t["description"].as_str(),
                &t["inputSchema"],
            );
            match t.get("outputSchema") {
                Some(output) => shown.with_output_schema(output),
                None => shown,
            }
        })
        .collect()
}

#[test]
fn the_estimate_is_within_15_percent_of_o200k_and_never_5_percent_under_on_real_servers() {
    let o200k = O200k(tiktoken_rs::o200k_base().expect("the vocabulary ships in the crate"));
    let files = fixtures();
    assert_eq!(
        files.len(),
        7,
        "six real servers and the interop Python server"
    );
    let mut rows = Vec::new();
    let mut wrong = Vec::new();
    for file in &files {
        let capture: Value =
            serde_json::from_slice(&std::fs::read(file).expect("read")).expect("json");
        let shown = capabilities(&capture);
        let real: usize = shown.iter().map(|c| c.whole_tokens(&o200k)).sum();
        let estimate: usize = shown.iter().map(|c| c.whole_tokens(&EstimatedTokens)).sum();
        let error = estimate as f64 / real as f64 - 1.0;
        let name = file
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        rows.push(format!(
            "| `{name}` | {} | {real} | {estimate} | {:+.1}% |",
            shown.len(),
            error * 100.0
        ));
        if !(-MAX_UNDER..=MAX_OVER).contains(&error) {
            wrong.push(format!("{name}: {:+.1}%", error * 100.0));
        }
    }
    let table = rows.join("\n");
    assert!(
        wrong.is_empty(),
        "the estimate is off on {}:\n{table}",
        wrong.join(", ")
    );
    // The page quotes these figures; it must say what this test measures.
    let page = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/performance.md");
    let page = std::fs::read_to_string(page).expect("docs/performance.md");
    assert!(
        page.contains(&table),
        "docs/performance.md must hold the measured figures, row for row:\n{table}"
    );
}
