//! What the audit trail costs a READ call through the whole gateway, on
//! the yardstick's call rows (median and p99 round trip, the client's CPU
//! per call): sequential `invoke`s of the fixture's `echo` (a READ) on a
//! current-thread runtime, rounds alternating between no trail (the
//! yardstick's path: `Audit::null`) and a `JsonLinesSink` file, each call
//! writing its `capability_invoked` record. The ratios are file / none,
//! paired per round.
//!
//! `cargo bench -p spear-benches --bench audit_cost`. It uses only what
//! the crates exported before the trail was chained, so the same file
//! builds against an earlier checkout for a before/after comparison
//! (docs/performance.md).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use spear_benches::fixture::fixture_server;
use spear_benches::ours::invoke_line;
use spear_capabilities::{
    AnswerStatus, Audit, Auto, Registry, Session, SessionOptions, Turn, TurnContext, TurnKind,
    audit::JsonLinesSink,
};

const ROUNDS: usize = 15;
const CALLS: usize = 2000;

fn main() {
    // `cargo bench` passes `--bench`; there is nothing to filter.
    if let Err(e) = run() {
        eprintln!("audit_cost: {e}");
        std::process::exit(2);
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn p99(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() * 99 / 100]
}

/// The CPU time this process's threads have run, from the scheduler's
/// per-thread accounting (nanoseconds, unlike getrusage's ticks here).
fn cpu() -> Duration {
    let mut total = 0u64;
    for task in std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten()
    {
        let stat = std::fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
        total += stat
            .split_whitespace()
            .next()
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0);
    }
    Duration::from_nanos(total)
}

/// A session recording into `audit` and its turn, `fx/echo` described.
async fn open(fixture: &Path, audit: Audit) -> Result<(Session, Turn), String> {
    let file = json!({"providers": [{
        "id": "fx", "command": [fixture], "scope": "global", "read": ["echo"]
    }]});
    let registry = Registry::parse(
        file.to_string().as_bytes(),
        // Its folder is where the server runs: one that exists.
        &fixture.with_file_name("capabilities.json"),
        &spear_providers::kinds().map_err(|e| e.to_string())?,
        &Audit::null(),
    )
    .map_err(|e| e.to_string())?;
    let options = SessionOptions::new("bench", Arc::new(Auto)).with_audit(audit);
    let session = Session::open(Arc::new(registry), options);
    let context = TurnContext::new("/bench/tree", TurnKind::Implementation).with_project("p");
    let turn = session
        .begin_turn(context)
        .await
        .map_err(|e| e.to_string())?;
    match turn.answer("spear-capability describe fx/echo").await {
        Some(a) if a.status == AnswerStatus::Ok => Ok((session, turn)),
        other => Err(format!("describe: {other:?}")),
    }
}

/// One round of sequential calls: each call's µs, and the CPU a call.
async fn round(turn: &Turn) -> Result<(Vec<f64>, f64), String> {
    let line = invoke_line();
    let mut each = Vec::with_capacity(CALLS);
    let before = cpu();
    for _ in 0..CALLS {
        let t = Instant::now();
        match turn.answer(&line).await {
            Some(a) if a.status == AnswerStatus::Ok => {}
            other => return Err(format!("unexpected answer {other:?}")),
        }
        each.push(t.elapsed().as_secs_f64() * 1e6);
    }
    let per_call = (cpu() - before).as_secs_f64() * 1e6 / CALLS as f64;
    Ok((each, per_call))
}

fn run() -> Result<(), String> {
    let fixture = fixture_server()?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let trail = dir.path().join("audit.jsonl");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("no runtime: {e}"))?;
    // [none, file] × [median, p99, cpu] per round, and the paired ratios.
    let mut cells: [[Vec<f64>; 3]; 2] = Default::default();
    let mut ratios: [Vec<f64>; 3] = Default::default();
    runtime.block_on(async {
        let sink = JsonLinesSink::append(&trail).map_err(|e| e.to_string())?;
        let opened = [
            open(&fixture, Audit::null()).await?,
            open(&fixture, Audit::new(Arc::new(sink))).await?,
        ];
        for (_, turn) in &opened {
            round(turn).await?;
        }
        for _ in 0..ROUNDS {
            let mut row = [[0.0; 3]; 2];
            for (i, (_, turn)) in opened.iter().enumerate() {
                let (each, per_call) = round(turn).await?;
                row[i] = [median(each.clone()), p99(each), per_call];
            }
            for k in 0..3 {
                cells[0][k].push(row[0][k]);
                cells[1][k].push(row[1][k]);
                ratios[k].push(row[1][k] / row[0][k]);
            }
        }
        for (session, turn) in opened {
            drop(turn);
            session.close().await;
        }
        Ok::<_, String>(())
    })?;
    println!(
        "{ROUNDS} rounds of {CALLS} sequential READ calls through the gateway, current-thread runtime"
    );
    println!("| row | no trail | file trail | file / none |");
    println!("|---|---:|---:|---:|");
    for (k, name) in [
        "call round trip, median (µs)",
        "call round trip, p99 (µs)",
        "client CPU per call (µs)",
    ]
    .iter()
    .enumerate()
    {
        println!(
            "| {name} | {:.1} | {:.1} | {:.3} |",
            median(cells[0][k].clone()),
            median(cells[1][k].clone()),
            median(ratios[k].clone())
        );
    }
    Ok(())
}
