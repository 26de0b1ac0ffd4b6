//! What the audit trail's file sink costs a record: records per second
//! into a file, with the plain chain (SHA-256), the keyed chain
//! (HMAC-SHA-256 under a key file) and synced (each record made durable,
//! `fdatasync`, as a WRITE's approval is), and of records longer than a
//! page (failure records carrying 5 KiB and 64 KiB of stderr, written as
//! whole pages with direct I/O). The short record is a READ's
//! `capability_invoked`, as a gateway writes it. Rounds rotate through the rows; each cell is the
//! median over rounds.
//!
//! `cargo bench -p spear-benches --bench audit_sink` (the files go to the
//! temporary folder: `TMPDIR` chooses its file system).

use std::sync::Arc;
use std::time::Instant;

use serde_json::json;
use spear_capabilities::audit::JsonLinesOptions;
use spear_capabilities::{
    Audit,
    audit::{AuditEvent, JsonLinesSink},
};

const ROUNDS: usize = 7;

/// One row: its name, records a round, and how each is written.
struct Row {
    name: &'static str,
    records: usize,
    keyed: bool,
    synced: bool,
    /// The bytes of stderr its failure record carries; 0: a READ's record.
    stderr: usize,
}

const ROWS: [Row; 5] = [
    Row {
        name: "plain",
        records: 20_000,
        keyed: false,
        synced: false,
        stderr: 0,
    },
    Row {
        name: "keyed",
        records: 20_000,
        keyed: true,
        synced: false,
        stderr: 0,
    },
    Row {
        name: "synced",
        records: 300,
        keyed: false,
        synced: true,
        stderr: 0,
    },
    Row {
        name: "5 KiB record",
        records: 1000,
        keyed: false,
        synced: false,
        stderr: 5_000,
    },
    Row {
        name: "64 KiB record",
        records: 300,
        keyed: false,
        synced: false,
        stderr: 65_536,
    },
];

fn main() {
    // `cargo bench` passes `--bench`; there is nothing to filter.
    if let Err(e) = run() {
        eprintln!("audit_sink: {e}");
        std::process::exit(2);
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn invoked() -> AuditEvent {
    serde_json::from_value(json!({
        "event": "capability_invoked", "capability": "tracker/search_issues",
        "class": "READ", "arguments": {"query": "flaky test in the build", "limit": 20},
        "outcome": "ok", "duration_ms": 4
    }))
    .expect("an event")
}

fn failed(stderr: usize) -> AuditEvent {
    AuditEvent::ProviderFailed {
        provider: "tracker".into(),
        reason: spear_capabilities::UnavailableReason::ProtocolError,
        message: format!(
            "provider `tracker` broke the protocol; stderr: {}",
            "e".repeat(stderr)
        ),
    }
}

/// Records per second of `row`, into a fresh file in `dir`.
fn one(row: &Row, dir: &std::path::Path, key: &std::path::Path) -> Result<f64, String> {
    let path = dir.join(format!("{}.jsonl", row.name.replace(' ', "-")));
    let _ = std::fs::remove_file(&path);
    let mut options = JsonLinesOptions::new();
    if row.keyed {
        options = options.with_key_file(key);
    }
    let sink = JsonLinesSink::append_with(&path, &options).map_err(|e| e.to_string())?;
    let audit = Audit::new(Arc::new(sink))
        .for_session("bench")
        .for_turn("1");
    let event = match row.stderr {
        0 => invoked(),
        bytes => failed(bytes),
    };
    let began = Instant::now();
    for _ in 0..row.records {
        let written = if row.synced {
            audit.try_emit_durable(event.clone())
        } else {
            audit.try_emit(event.clone())
        };
        written.map_err(|e| e.to_string())?;
    }
    let rate = row.records as f64 / began.elapsed().as_secs_f64();
    std::fs::remove_file(&path).map_err(|e| e.to_string())?;
    Ok(rate)
}

fn run() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let key = dir.path().join("audit.key");
    std::fs::write(&key, [0x5a; 32]).map_err(|e| e.to_string())?;
    let private = std::os::unix::fs::PermissionsExt::from_mode(0o600);
    std::fs::set_permissions(&key, private).map_err(|e| e.to_string())?;
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); ROWS.len()];
    for _ in 0..ROUNDS {
        for (row, rates) in ROWS.iter().zip(&mut rates) {
            rates.push(one(row, dir.path(), &key)?);
        }
    }
    println!("audit sink, {ROUNDS} rounds, records per second (median; min–max):");
    for (row, rates) in ROWS.iter().zip(rates) {
        let (lo, hi) = rates
            .iter()
            .fold((f64::MAX, 0.0f64), |(lo, hi), &r| (lo.min(r), hi.max(r)));
        let mid = median(rates);
        println!(
            "  {:<14} {:>9.0}/s  ({:.0}–{:.0}), {:.2} µs a record",
            row.name,
            mid,
            lo,
            hi,
            1e6 / mid
        );
    }
    Ok(())
}
