//! What a `tracing` subscriber at `info` costs a call: the library emits
//! no per-call event at info (a call's span is at debug), so a call under
//! such a subscriber should cost what it costs with none. Sequential calls
//! to the fixture server on a current-thread runtime, rounds alternating
//! between no subscriber and a `fmt` subscriber at `info` writing to a sink;
//! the row is the median call in each, and their ratio paired per round.
//!
//! `cargo bench -p spear-benches --bench tracing_cost`

use std::time::Instant;

use spear_benches::fixture::fixture_server;
use spear_benches::ours;
use spear_capabilities::Provider;

const ROUNDS: usize = 15;
const CALLS: usize = 2000;

fn main() {
    // `cargo bench` passes `--bench`; there is nothing to filter.
    if let Err(e) = run() {
        eprintln!("tracing_cost: {e}");
        std::process::exit(2);
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn run() -> Result<(), String> {
    let fixture = fixture_server()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("no runtime: {e}"))?;
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::INFO)
        .with_writer(std::io::sink)
        .finish();
    let dispatch = tracing::Dispatch::new(subscriber);
    let (mut bare, mut traced, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    runtime.block_on(async {
        let provider = ours::start(&fixture, &[]).await?;
        // Warm-up.
        for _ in 0..CALLS {
            ours::call_echo(&provider).await?;
        }
        for _ in 0..ROUNDS {
            let mut round = [0.0; 2];
            for (i, with) in [false, true].into_iter().enumerate() {
                let _guard = with.then(|| tracing::dispatcher::set_default(&dispatch));
                let mut each = Vec::with_capacity(CALLS);
                for _ in 0..CALLS {
                    let t = Instant::now();
                    ours::call_echo(&provider).await?;
                    each.push(t.elapsed().as_secs_f64() * 1e6);
                }
                round[i] = median(each);
            }
            bare.push(round[0]);
            traced.push(round[1]);
            ratios.push(round[1] / round[0]);
        }
        let _ = provider.shutdown().await;
        Ok::<_, String>(())
    })?;
    println!(
        "{ROUNDS} rounds of {CALLS} sequential calls: median call {:.2} µs with no subscriber, \
         {:.2} µs with a fmt subscriber at info; ratio {:.3} (paired per round, median)",
        median(bare),
        median(traced),
        median(ratios)
    );
    Ok(())
}
