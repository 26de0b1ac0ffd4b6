//! One client's work in a loop, for a profiler: `valgrind --tool=callgrind
//! target/release/examples/profile list|call|gateway [n]`.
//!
//! `list` lists 10 000 tools in 100 pages with mcp-stdio, `call` makes echo
//! calls with mcp-stdio (`call-task`: from a spawned task, as the compare
//! bench does), `gateway` makes them through a turn, `floor` makes them with
//! the floor client, `async-floor` with the async floor (in a task), `rmcp`
//! with the official SDK. `session-list` opens a session's first turn over a
//! server of 10 000 tools with a schema each (spawn, initialize, 100 pages,
//! admission and its schema vetting, the exposure) n times and prints the
//! median and range in milliseconds: the whole start the yardstick's
//! listing row measures only the client's part of.

use spear_benches::fixture::{TEN_THOUSAND_TOOLS, fixture_server};

/// 10 000 tools in 100 pages, each with a schema of its own.
const OWN_SCHEMAS: &[&str] = &["--tools", "9991", "--page-size", "100", "--own-schemas"];
use spear_benches::floor::Floor;
use spear_benches::floor_async::AsyncFloor;
use spear_benches::official;
use spear_benches::ours::{self, Gateway};
use spear_capabilities::Provider;

fn main() {
    let mut args = std::env::args().skip(1);
    let what = args.next().unwrap_or_else(|| "list".to_owned());
    let n: usize = args.next().and_then(|v| v.parse().ok()).unwrap_or(5);
    let fixture = fixture_server().unwrap_or_else(|e| panic!("{e}"));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(async {
        match what.as_str() {
            "list" => {
                let p = ours::start(&fixture, TEN_THOUSAND_TOOLS)
                    .await
                    .expect("starts");
                for _ in 0..n {
                    assert_eq!(p.list_tools().await.expect("listed").tools.len(), 10_000);
                }
                let _ = p.shutdown().await;
            }
            "call" => {
                let p = ours::start(&fixture, &[]).await.expect("starts");
                for _ in 0..n {
                    ours::call_echo(&p).await.expect("echo");
                }
                let _ = p.shutdown().await;
            }
            "call-task" => {
                let p = ours::start(&fixture, &[]).await.expect("starts");
                let p = tokio::spawn(async move {
                    for _ in 0..n {
                        ours::call_echo(&p).await.expect("echo");
                    }
                    p
                })
                .await
                .expect("the task ends");
                let _ = p.shutdown().await;
            }
            "session-list" => {
                let mut ms = Vec::with_capacity(n);
                for _ in 0..n {
                    let began = std::time::Instant::now();
                    let g = Gateway::open(&fixture, OWN_SCHEMAS).await.expect("opens");
                    ms.push(began.elapsed().as_secs_f64() * 1000.0);
                    g.close().await;
                }
                ms.sort_by(f64::total_cmp);
                println!(
                    "session start, 10 000 tools with a schema each: median {:.1} ms ({:.1} to {:.1}), {n} runs",
                    ms[ms.len() / 2],
                    ms[0],
                    ms[ms.len() - 1]
                );
            }
            "gateway" => {
                let g = Gateway::open(&fixture, &[]).await.expect("opens");
                let line = ours::invoke_line();
                for _ in 0..n {
                    g.call_echo(&line).await.expect("echo");
                }
                g.close().await;
            }
            "async-floor" => {
                let mut f = AsyncFloor::start(&fixture, &[]).await.expect("starts");
                f = tokio::spawn(async move {
                    for _ in 0..n {
                        f.call_echo().await.expect("echo");
                    }
                    f
                })
                .await
                .expect("the task ends");
                drop(f);
            }
            "floor" => {
                let mut f = Floor::start(&fixture, &[]).expect("starts");
                for _ in 0..n {
                    f.call_echo().expect("echo");
                }
            }
            "rmcp" => {
                let c = official::start(&fixture, &[]).await.expect("starts");
                for _ in 0..n {
                    official::call_echo(&c).await.expect("echo");
                }
                official::close(c).await;
            }
            other => panic!("no such profile: {other}"),
        }
    });
}
