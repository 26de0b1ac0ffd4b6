//! The default token estimate, measured against a real BPE tokenizer (OpenAI
//! o200k) over the descriptions and schemas of six real MCP servers. The
//! estimate must never count fewer tokens than the tokenizer for a server's
//! family (it errs towards the index, never towards an over-long context),
//! and must not overshoot by more than 2x.

use std::path::Path;

use spear_capabilities::internals::framing::{MAX_DESCRIPTION_CHARS, block, json_text};
use spear_capabilities::{EstimatedTokens, TokenCounter};

#[test]
fn the_estimate_errs_on_the_side_of_more_tokens_on_real_servers() {
    let bpe = tiktoken_rs::o200k_base().expect("the vocabulary ships in the crate");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/real-tools");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("fixtures")
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    assert_eq!(files.len(), 6);
    let mut report = String::new();
    for file in files {
        let v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&file).expect("read")).expect("json");
        let (mut real, mut estimate) = (0usize, 0usize);
        for tool in v["tools"].as_array().expect("tools") {
            let description = block(
                tool["description"].as_str().unwrap_or_default(),
                MAX_DESCRIPTION_CHARS,
            );
            let schema = json_text(&tool["inputSchema"]);
            for text in [&*description, &schema] {
                real += bpe.encode_ordinary(text).len();
                estimate += EstimatedTokens.count(text);
            }
        }
        let ratio = estimate as f64 / real as f64;
        report.push_str(&format!(
            "{:<34} o200k {real:>5}  estimate {estimate:>5}  ratio {ratio:.2}\n",
            file.file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
        ));
        assert!(ratio >= 1.0, "{} under-counts: {report}", file.display());
        assert!(
            ratio <= 2.0,
            "{} over-counts too much: {report}",
            file.display()
        );
    }
    // Shown with --nocapture; the figures are quoted in docs/performance.md.
    println!("{report}");
}
