//! What `recognize` costs on every command a turn types.
//!
//! `cargo bench -p spear-capabilities --bench recognizer`; the figures are in
//! `docs/performance.md`. Targets: a 200-byte line that is not ours under
//! 1 us, one that is ours under 5 us, time linear in the line's length.

// `criterion_group!` defines an undocumented public function.
#![allow(missing_docs)]

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use spear_capabilities::internals::command::{recognize, recognize_unfiltered};

/// A typical terminal command, not ours, about 200 bytes.
const NOT_OURS: &str = "cd /work/project && cargo test --workspace --all-features -- --nocapture 2>&1 | grep -E 'error|warning' | head -50 && git status --short && echo \"done at $(date +%H:%M) in $PWD\" # check";
/// Not ours, but it holds the name, so the pre-filter lets it through to the lexer.
const NOT_OURS_NAMED: &str = "cd /work/project && grep -rn 'spear-capability' docs/ src/ | sort | uniq -c | head -50 && git log --oneline -- core/src/command.rs | head -20 && echo \"done at $(date +%H:%M)\" # check";
/// Not ours: a here-document whose unquoted body holds the name and
/// substitutions, which are lexed (before issue 47 the body was skipped).
const NOT_OURS_HEREDOC: &str = "cat > notes.md <<EOF\n# Notes of $(date +%F) by `whoami`\nRun spear-capability list to see what the turn is offered; ${EDITOR:-vi} opens this file.\nTotal: $((2 + 3)) notes\nEOF";
/// A typical invoke, about 200 bytes.
const OURS: &str = r#"spear-capability invoke tracker/search_issues '{"query": "crash in firmware loader", "state": "open", "labels": ["bug", "p1"], "limit": 20, "sort": "updated", "project": "firmware-a"}'"#;

fn typical(c: &mut Criterion) {
    let mut group = c.benchmark_group("typical");
    for (name, line) in [
        ("not_ours", NOT_OURS),
        ("not_ours_naming_it", NOT_OURS_NAMED),
        ("not_ours_heredoc", NOT_OURS_HEREDOC),
        ("ours", OURS),
    ] {
        group.throughput(Throughput::Bytes(line.len() as u64));
        group.bench_with_input(BenchmarkId::new(name, line.len()), line, |b, l| {
            b.iter(|| recognize(black_box(l)))
        });
    }
    group.finish();
}

/// `len` bytes of `unit` repeated, cut at a char boundary.
fn repeat_to(unit: &str, len: usize) -> String {
    let mut s = unit.repeat(len / unit.len() + 1);
    s.truncate(len);
    s
}

fn scaling(c: &mut Criterion) {
    let mut group = c.benchmark_group("scaling");
    group.sample_size(20);
    for len in [200, 1 << 10, 64 << 10, 1 << 20] {
        let not_ours = repeat_to(&format!("{NOT_OURS}\n"), len);
        let named = repeat_to(&format!("{NOT_OURS_NAMED}\n"), len);
        let prefix = r#"spear-capability invoke tracker/search_issues '{"query": ""#;
        let filler = repeat_to("crash in loader; $(x) `y` \\\" ", len - prefix.len() - 3);
        let ours = format!("{prefix}{filler}\"}}'");
        group.throughput(Throughput::Bytes(len as u64));
        group.bench_with_input(BenchmarkId::new("not_ours", len), &not_ours, |b, l| {
            b.iter(|| recognize(black_box(l)))
        });
        group.bench_with_input(
            BenchmarkId::new("not_ours_lexed", len),
            &not_ours,
            |b, l| b.iter(|| recognize_unfiltered(black_box(l))),
        );
        group.bench_with_input(
            BenchmarkId::new("not_ours_naming_it", len),
            &named,
            |b, l| b.iter(|| recognize(black_box(l))),
        );
        group.bench_with_input(BenchmarkId::new("ours", len), &ours, |b, l| {
            b.iter(|| recognize(black_box(l)))
        });
        // The worst shape for a lexer that copies substitutions into words.
        let depth = len / 16;
        let nested = format!(
            "spear-capability list {}x{}",
            "\"$(a `b ".repeat(depth),
            "`)\"".repeat(depth)
        );
        group.bench_with_input(BenchmarkId::new("nested", len), &nested, |b, l| {
            b.iter(|| recognize(black_box(l)))
        });
        // A here-document's unquoted body of `len` bytes, full of
        // substitutions; then bodies nested in one another's substitutions
        // as deep as the length allows (the lexer reads 16 levels).
        let body = repeat_to("text $(x y) `z` ${v:-w} spear-capability\n", len);
        let heredoc = format!("cat <<EOF\n{body}\nEOF");
        group.bench_with_input(BenchmarkId::new("heredoc", len), &heredoc, |b, l| {
            b.iter(|| recognize(black_box(l)))
        });
        let depth = len / 24;
        let bodies = format!(
            "{}spear-capability list{}",
            "cat <<A\n$(cat <<B\n$(".repeat(depth),
            "\n)\nB\n)\nA".repeat(depth)
        );
        group.bench_with_input(BenchmarkId::new("heredoc_nested", len), &bodies, |b, l| {
            b.iter(|| recognize(black_box(l)))
        });
    }
    group.finish();
}

criterion_group!(benches, typical, scaling);
criterion_main!(benches);
