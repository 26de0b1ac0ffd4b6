//! Does a caller whose answers come quickly starve the other tasks of its
//! runtime? The placement of a one-CPU container: this process and the
//! server pinned to one CPU, a current-thread runtime, a server spending
//! 1 ms of CPU on each answer. A ticker on the same runtime asks to wake
//! every millisecond while 600 calls are made one after another; the row is
//! how long it waited past its millisecond, at worst and at the 99th
//! percentile. The bound the client must hold: never more than 10 ms.
//!
//! `cargo bench -p spear-benches --bench starvation`

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use spear_benches::fixture::fixture_server;
use spear_benches::ours;
use spear_benches::system::pin_to_cpu;
use spear_capabilities::Provider;

const CALLS: usize = 600;
const TICK: Duration = Duration::from_millis(1);
const BOUND: Duration = Duration::from_millis(10);

fn main() {
    // `cargo bench` passes `--bench`; there is nothing to filter.
    if let Err(e) = run() {
        eprintln!("starvation: {e}");
        std::process::exit(2);
    }
}

fn run() -> Result<(), String> {
    let fixture = fixture_server()?;
    pin_to_cpu(0)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("no runtime: {e}"))?;
    let (waits, took) = runtime.block_on(async {
        let provider = ours::start(&fixture, &["--work-us", "1000"]).await?;
        let waits = Arc::new(Mutex::new(Vec::with_capacity(CALLS * 2)));
        let ticker = tokio::spawn({
            let waits = Arc::clone(&waits);
            async move {
                loop {
                    let asked = Instant::now();
                    tokio::time::sleep(TICK).await;
                    let late = asked.elapsed().saturating_sub(TICK);
                    waits.lock().unwrap_or_else(|p| p.into_inner()).push(late);
                }
            }
        });
        let began = Instant::now();
        for _ in 0..CALLS {
            ours::call_echo(&provider).await?;
        }
        let took = began.elapsed();
        ticker.abort();
        let _ = provider.shutdown().await;
        let waits = std::mem::take(&mut *waits.lock().unwrap_or_else(|p| p.into_inner()));
        Ok::<_, String>((waits, took))
    })?;
    let mut sorted = waits.clone();
    sorted.sort_unstable();
    let worst = sorted.last().copied().unwrap_or_default();
    let p99 = sorted
        .get(sorted.len().saturating_sub(1) * 99 / 100)
        .copied()
        .unwrap_or_default();
    let over = waits.iter().filter(|w| **w > BOUND).count();
    println!(
        "starvation: {CALLS} calls in {:.0} ms, {} ticks; ticker wait past 1 ms: worst {:.2} ms, p99 {:.2} ms, {over} over {} ms",
        took.as_secs_f64() * 1e3,
        waits.len(),
        worst.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3,
        BOUND.as_millis()
    );
    if worst > BOUND {
        println!("starvation: SHORT: the ticker waited {worst:?}, past the bound of {BOUND:?}");
        std::process::exit(1);
    }
    Ok(())
}
