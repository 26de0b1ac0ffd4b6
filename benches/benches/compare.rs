//! The floor, our mcp-stdio client, the full gateway path and rmcp, side by
//! side against the same fixture server, interleaved within each round.
//!
//! `cargo bench -p spear-benches --bench compare` (add `-- --rounds 5` for a
//! quick look, `-- --only rtt` for one row group). Client and server are
//! pinned to one CPU (`--cpu N`, default 0; `--no-pin` to leave them free).
//! Within a round every client runs once, in an order that flips each round
//! (A B C D, D C B A, ...); a row reports the median of the per-round values
//! with their range, and the median of per-round ratios to the floor.
//! The tokio clients' calls run in a task of their own, as a server's
//! callers do (`--root` runs them in the runtime's root future instead,
//! where every wake of the caller costs the runtime one more poll of its
//! event loop, whatever the client). `--multi` runs them on tokio's
//! multi-thread runtime (what `#[tokio::main]` gives; one worker under the
//! pin) instead of the current-thread one.
//! `--only provider` runs the rows of calls in flight made as the shared
//! yardstick makes them (always in the root future; see
//! [`spear_benches::yardstick`]), for the floor, the provider floor and
//! mcp-stdio, with each client's ratio to the provider floor.
//! The figures and what bounds them are in `docs/performance.md`.

use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::join_all;
use spear_benches::fixture::{TEN_THOUSAND_TOOLS, fixture_server};
use spear_benches::floor::Floor;
use spear_benches::floor_async::AsyncFloor;
use spear_benches::floor_provider::ProviderFloor;
use spear_benches::official;
use spear_benches::ours::{self, Gateway};
use spear_benches::stats::{median_range, ratios, round_order, summarize};
use spear_benches::system::{allowed_cpus, pin_to_cpu, runtime};
use spear_benches::yardstick;
use spear_capabilities::Provider;
use spear_testkit::procfs::resident;
use tokio::runtime::Runtime;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Client {
    Floor,
    AsyncFloor,
    ProviderFloor,
    Mcp,
    Gateway,
    Rmcp,
}

impl Client {
    fn name(self) -> &'static str {
        match self {
            Client::Floor => "floor",
            Client::AsyncFloor => "async floor",
            Client::ProviderFloor => "provider floor",
            Client::Mcp => "mcp-stdio",
            Client::Gateway => "gateway",
            Client::Rmcp => "rmcp",
        }
    }
}

/// Every client that calls, the async floor (the least a tokio client pays,
/// one call at a time and many in flight) among them.
const CALLERS: [Client; 5] = [
    Client::Floor,
    Client::AsyncFloor,
    Client::Mcp,
    Client::Gateway,
    Client::Rmcp,
];
const STARTERS: [Client; 3] = [Client::Floor, Client::Mcp, Client::Rmcp];
/// The clients of the rows driven as the yardstick drives a provider.
const PROVIDERS: [Client; 3] = [Client::Floor, Client::ProviderFloor, Client::Mcp];

/// Where the tokio clients' calls run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Caller {
    /// A spawned task: the usual place of a caller in a server.
    Task,
    /// The root future given to `block_on`.
    Root,
}

/// Runs `f` where `caller` says and waits for it.
fn drive<T: Send + 'static>(
    rt: &Runtime,
    caller: Caller,
    f: impl Future<Output = T> + Send + 'static,
) -> T {
    match caller {
        Caller::Task => rt.block_on(async { tokio::spawn(f).await.expect("the caller task ends") }),
        Caller::Root => rt.block_on(f),
    }
}

struct Args {
    rounds: usize,
    cpu: Option<usize>,
    caller: Caller,
    multi: bool,
    only: Vec<String>,
    memory_child: Option<(String, usize)>,
}

fn parse_args() -> Args {
    let mut args = Args {
        rounds: 15,
        cpu: Some(0),
        caller: Caller::Task,
        multi: false,
        only: Vec::new(),
        memory_child: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--rounds" => args.rounds = it.next().and_then(|v| v.parse().ok()).unwrap_or(15),
            "--cpu" => args.cpu = it.next().and_then(|v| v.parse().ok()),
            "--no-pin" => args.cpu = None,
            "--root" => args.caller = Caller::Root,
            "--multi" => args.multi = true,
            "--only" => args.only.extend(it.next()),
            "--memory-child" => {
                let client = it.next().unwrap_or_default();
                let n = it.next().and_then(|v| v.parse().ok()).unwrap_or(32);
                args.memory_child = Some((client, n));
            }
            // `cargo bench` passes `--bench`; filters are not used here.
            _ => {}
        }
    }
    args
}

fn main() {
    let args = parse_args();
    let fixture = fixture_server().unwrap_or_else(|e| panic!("{e}"));
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    if let Some(cpu) = args.cpu {
        pin_to_cpu(cpu).unwrap_or_else(|e| panic!("{e}"));
    }
    let rt = runtime(args.multi);
    if let Some((client, n)) = &args.memory_child {
        memory_child(&rt, &fixture, client, *n);
        return;
    }
    let wanted = |group: &str| args.only.is_empty() || args.only.iter().any(|o| o == group);
    println!("# spear-capabilities: clients side by side");
    println!();
    println!(
        "machine: {} CPUs ({}), {}; pinned: {}; runtime: tokio {}, callers in {}; rounds: {}",
        cpus,
        cpu_model(),
        kernel(),
        match args.cpu {
            Some(_) => format!(
                "client and server on CPU {:?} (sched_setaffinity, inherited by the server)",
                allowed_cpus()
            ),
            None => "no".to_owned(),
        },
        if args.multi {
            "multi_thread"
        } else {
            "current_thread"
        },
        match args.caller {
            Caller::Task => "a spawned task",
            Caller::Root => "the root future (block_on)",
        },
        args.rounds
    );
    println!("fixture: {}", fixture.display());
    println!();
    if ["rtt", "throughput", "start", "list", "memory"]
        .iter()
        .any(|g| wanted(g))
    {
        header(Client::AsyncFloor);
    }
    if wanted("rtt") {
        round_trip(&rt, &fixture, args.rounds, args.caller);
    }
    if wanted("throughput") {
        for window in [1, 8, 64] {
            throughput(&rt, &fixture, args.rounds, window, args.caller);
        }
    }
    if wanted("start") {
        start(&rt, &fixture, args.rounds, 1);
        start(&rt, &fixture, args.rounds, 8);
    }
    if wanted("list") {
        list(&rt, &fixture, args.rounds);
    }
    if wanted("memory") {
        memory(&fixture, args.rounds.min(5), args.cpu);
    }
    if wanted("provider") {
        println!();
        // Whatever `--root` says: the yardstick calls from its root future.
        println!("callers of the rows below: the root future (block_on), as the yardstick's");
        println!();
        header(Client::ProviderFloor);
        for window in [1, 8, 64] {
            provider_throughput(&rt, &fixture, args.rounds, window);
        }
    }
}

/// The head of a table whose last column is the ratio to `base`.
fn header(base: Client) {
    println!(
        "| row | client | median (range over rounds) | ratio to floor, median (range) | ratio to {} |",
        base.name()
    );
    println!("|---|---|---|---|---|");
}

/// One table row per client: its per-round values, their ratio to the
/// floor's and, for the tokio clients, to the async floor's (each paired
/// within its round).
fn report(row: &str, unit: &str, digits: usize, values: &[(Client, Vec<f64>)]) {
    report_against(row, unit, digits, values, Client::AsyncFloor);
}

/// [`report`], the last column being the ratio to `base`.
fn report_against(
    row: &str,
    unit: &str,
    digits: usize,
    values: &[(Client, Vec<f64>)],
    base: Client,
) {
    let paired = |base: Client, client: Client, v: &[f64]| match values
        .iter()
        .find(|(c, _)| *c == base)
    {
        Some((_, b)) if client != base && client != Client::Floor => median_range(&ratios(v, b), 2),
        Some(_) if client == base => "1".to_owned(),
        _ => "-".to_owned(),
    };
    for (client, v) in values {
        let to_floor = match values.iter().find(|(c, _)| *c == Client::Floor) {
            Some((_, f)) if *client != Client::Floor => median_range(&ratios(v, f), 2),
            _ => "1".to_owned(),
        };
        println!(
            "| {row} | {} | {} {unit} | {to_floor} | {} |",
            client.name(),
            median_range(v, digits),
            paired(base, *client, v)
        );
    }
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The clients that call, each with one started connection.
struct Callers {
    floor: Floor,
    mcp: Arc<spear_mcp_stdio::McpProvider>,
    gateway: Arc<Gateway>,
    rmcp: Arc<official::Client>,
}

impl Callers {
    fn open(rt: &Runtime, fixture: &Path) -> Callers {
        let floor = Floor::start(fixture, &[]).expect("floor starts");
        rt.block_on(async {
            Callers {
                floor,
                mcp: Arc::new(ours::start(fixture, &[]).await.expect("mcp-stdio starts")),
                gateway: Arc::new(Gateway::open(fixture, &[]).await.expect("gateway opens")),
                rmcp: Arc::new(official::start(fixture, &[]).await.expect("rmcp starts")),
            }
        })
    }

    /// Runs `calls` with the given tokio client where `caller` says.
    fn run<T: Send + 'static, Fut: Future<Output = T> + Send + 'static>(
        &self,
        rt: &Runtime,
        caller: Caller,
        client: Client,
        calls: impl FnOnce(Tokio) -> Fut,
    ) -> T {
        let tokio = match client {
            Client::Mcp => Tokio::Mcp(Arc::clone(&self.mcp)),
            Client::Gateway => Tokio::Gateway(Arc::clone(&self.gateway)),
            Client::Rmcp => Tokio::Rmcp(Arc::clone(&self.rmcp)),
            Client::Floor | Client::AsyncFloor | Client::ProviderFloor => {
                unreachable!("not a shared client")
            }
        };
        drive(rt, caller, calls(tokio))
    }

    fn close(self, rt: &Runtime) {
        drop(self.floor);
        let only = "no caller keeps a client";
        let mcp = Arc::try_unwrap(self.mcp).expect(only);
        let gateway = Arc::try_unwrap(self.gateway).expect(only);
        let rmcp = Arc::try_unwrap(self.rmcp).expect(only);
        rt.block_on(async {
            let _ = mcp.shutdown().await;
            gateway.close().await;
            official::close(rmcp).await;
        });
    }
}

/// One tokio client, owned by the future that calls it.
enum Tokio {
    Mcp(Arc<spear_mcp_stdio::McpProvider>),
    Gateway(Arc<Gateway>),
    Rmcp(Arc<official::Client>),
}

impl Tokio {
    /// One echo call.
    async fn call_echo(&self, line: &str) -> Result<(), String> {
        match self {
            Tokio::Mcp(p) => ours::call_echo(p).await,
            Tokio::Gateway(g) => g.call_echo(line).await,
            Tokio::Rmcp(c) => official::call_echo(c).await,
        }
    }
}

/// Times `n` sequential calls one by one, in microseconds.
async fn timed_calls<F, Fut>(n: usize, mut call: F) -> Vec<f64>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), String>>,
{
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let began = Instant::now();
        call().await.unwrap_or_else(|e| panic!("{e}"));
        out.push(micros(began.elapsed()));
    }
    out
}

fn round_trip(rt: &Runtime, fixture: &Path, rounds: usize, caller: Caller) {
    // As many as the shared yardstick times.
    const CALLS: usize = 5000;
    let mut c = Callers::open(rt, fixture);
    let mut async_floor = Some(
        rt.block_on(AsyncFloor::start(fixture, &[]))
            .expect("async floor starts"),
    );
    let line: Arc<str> = ours::invoke_line().into();
    let mut medians: Vec<(Client, Vec<f64>)> = CALLERS.iter().map(|&c| (c, vec![])).collect();
    let mut p99s: Vec<(Client, Vec<f64>)> = CALLERS.iter().map(|&c| (c, vec![])).collect();
    for round in 0..=rounds {
        for client in round_order(&CALLERS, round) {
            let samples = match client {
                Client::Floor => rt.block_on(timed_calls(CALLS, || {
                    let r = c.floor.call_echo().map_err(|e| e.to_string());
                    async { r }
                })),
                Client::AsyncFloor => {
                    let mut f = async_floor.take().expect("the async floor is back");
                    let (f, samples) = drive(rt, caller, async move {
                        let mut out = Vec::with_capacity(CALLS);
                        for _ in 0..CALLS {
                            let began = Instant::now();
                            f.call_echo().await.unwrap_or_else(|e| panic!("{e}"));
                            out.push(micros(began.elapsed()));
                        }
                        (f, out)
                    });
                    async_floor = Some(f);
                    samples
                }
                _ => {
                    let line = Arc::clone(&line);
                    c.run(rt, caller, client, |t| async move {
                        timed_calls(CALLS, || t.call_echo(&line)).await
                    })
                }
            };
            // Round 0 warms every client up and is not counted.
            if round == 0 {
                continue;
            }
            let s = summarize(&samples);
            let i = CALLERS.iter().position(|&x| x == client).expect("known");
            medians[i].1.push(s.median);
            p99s[i].1.push(s.p99);
        }
    }
    report("call round trip, median", "us", 1, &medians);
    report("call round trip, p99", "us", 1, &p99s);
    rt.block_on(async { drop(async_floor) });
    c.close(rt);
}

/// Runs `total` calls with `window` callers each calling in a loop.
async fn in_flight<F, Fut>(total: usize, window: usize, call: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<(), String>>,
{
    // Atomic only so that the future can move to a task.
    let left = std::sync::atomic::AtomicUsize::new(total);
    let take = || {
        left.fetch_update(
            std::sync::atomic::Ordering::Relaxed,
            std::sync::atomic::Ordering::Relaxed,
            |n| n.checked_sub(1),
        )
        .is_ok()
    };
    join_all((0..window).map(|_| async {
        while take() {
            call().await.unwrap_or_else(|e| panic!("{e}"));
        }
    }))
    .await;
}

fn throughput(rt: &Runtime, fixture: &Path, rounds: usize, window: usize, caller: Caller) {
    const CALLS: usize = 20_000;
    let mut c = Callers::open(rt, fixture);
    let mut async_floor = Some(
        rt.block_on(AsyncFloor::start(fixture, &[]))
            .expect("async floor starts"),
    );
    let line: Arc<str> = ours::invoke_line().into();
    let mut rates: Vec<(Client, Vec<f64>)> = CALLERS.iter().map(|&c| (c, vec![])).collect();
    for round in 0..=rounds {
        for client in round_order(&CALLERS, round) {
            let began = Instant::now();
            match client {
                Client::Floor => c.floor.calls_in_flight(CALLS, window).expect("floor calls"),
                Client::AsyncFloor => {
                    let mut f = async_floor.take().expect("the async floor is back");
                    async_floor = Some(drive(rt, caller, async move {
                        f.calls_in_flight(CALLS, window)
                            .await
                            .unwrap_or_else(|e| panic!("{e}"));
                        f
                    }));
                }
                _ => {
                    let line = Arc::clone(&line);
                    c.run(rt, caller, client, |t| async move {
                        in_flight(CALLS, window, || t.call_echo(&line)).await;
                    });
                }
            }
            let rate = CALLS as f64 / began.elapsed().as_secs_f64() / 1000.0;
            if round > 0 {
                let i = CALLERS.iter().position(|&x| x == client).expect("known");
                rates[i].1.push(rate);
            }
        }
    }
    report(
        &format!("throughput, {window} in flight"),
        "k calls/s",
        1,
        &rates,
    );
    rt.block_on(async { drop(async_floor) });
    c.close(rt);
}

/// The rows of issue 15's bound: the floor as in [`throughput`], and the
/// provider floor and mcp-stdio each driven by [`yardstick::calls_in_flight`]
/// in the root future, as the yardstick drives ours, whatever `--root` says.
fn provider_throughput(rt: &Runtime, fixture: &Path, rounds: usize, window: usize) {
    const CALLS: usize = 20_000;
    let mut floor = Floor::start(fixture, &[]).expect("floor starts");
    let (provider_floor, mcp) = rt.block_on(async {
        (
            ProviderFloor::start(fixture, &[])
                .await
                .expect("provider floor starts"),
            ours::start(fixture, &[]).await.expect("mcp-stdio starts"),
        )
    });
    let mut rates: Vec<(Client, Vec<f64>)> = PROVIDERS.iter().map(|&c| (c, vec![])).collect();
    for round in 0..=rounds {
        for client in round_order(&PROVIDERS, round) {
            let began = Instant::now();
            match client {
                Client::Floor => floor.calls_in_flight(CALLS, window).expect("floor calls"),
                Client::ProviderFloor => rt
                    .block_on(yardstick::calls_in_flight(&provider_floor, CALLS, window))
                    .unwrap_or_else(|e| panic!("provider floor: {e}")),
                Client::Mcp => rt
                    .block_on(yardstick::calls_in_flight(&mcp, CALLS, window))
                    .unwrap_or_else(|e| panic!("mcp-stdio: {e}")),
                _ => unreachable!("not a provider row's client"),
            }
            let rate = CALLS as f64 / began.elapsed().as_secs_f64() / 1000.0;
            // Round 0 warms every client up and is not counted.
            if round > 0 {
                let i = PROVIDERS.iter().position(|&x| x == client).expect("known");
                rates[i].1.push(rate);
            }
        }
    }
    report_against(
        &format!("throughput as the yardstick drives a provider, {window} in flight"),
        "k calls/s",
        1,
        &rates,
        Client::ProviderFloor,
    );
    drop(floor);
    rt.block_on(async {
        let _ = provider_floor.shutdown().await;
        let _ = mcp.shutdown().await;
    });
}

/// Spawn, initialize and list every tool of `n` servers at once; the
/// time until all are listed, in milliseconds. Stopping is not timed.
fn start_once(rt: &Runtime, fixture: &Path, client: Client, n: usize) -> f64 {
    let began = Instant::now();
    match client {
        Client::Floor => {
            let mut floors: Vec<Floor> = (0..n)
                .map(|_| Floor::spawn(fixture, &[]).expect("spawned"))
                .collect();
            for f in &mut floors {
                f.send_initialize().expect("initialize");
            }
            for f in &mut floors {
                f.finish_initialize().expect("initialized");
                f.send_list(None).expect("list");
            }
            for f in &mut floors {
                assert_eq!(f.read_pages().expect("listed").len(), 9);
            }
            let t = millis(began.elapsed());
            drop(floors);
            t
        }
        Client::Mcp => rt.block_on(async {
            let started = join_all((0..n).map(|_| async {
                let p = ours::start(fixture, &[]).await.expect("started");
                assert_eq!(p.list_tools().await.expect("listed").tools.len(), 9);
                p
            }))
            .await;
            let t = millis(began.elapsed());
            join_all(started.iter().map(|p| p.shutdown())).await;
            t
        }),
        Client::Rmcp => rt.block_on(async {
            let started = join_all((0..n).map(|_| async {
                let c = official::start(fixture, &[]).await.expect("started");
                assert_eq!(official::list_all(&c).await.expect("listed").len(), 9);
                c
            }))
            .await;
            let t = millis(began.elapsed());
            join_all(started.into_iter().map(official::close)).await;
            t
        }),
        Client::Gateway | Client::AsyncFloor | Client::ProviderFloor => {
            unreachable!("not a starter")
        }
    }
}

fn start(rt: &Runtime, fixture: &Path, rounds: usize, n: usize) {
    let mut times: Vec<(Client, Vec<f64>)> = STARTERS.iter().map(|&c| (c, vec![])).collect();
    for round in 0..=rounds {
        for client in round_order(&STARTERS, round) {
            let t = start_once(rt, fixture, client, n);
            if round > 0 {
                let i = STARTERS.iter().position(|&x| x == client).expect("known");
                times[i].1.push(t);
            }
        }
    }
    let row = if n == 1 {
        "spawn + initialize + tools/list, 1 server".to_owned()
    } else {
        format!("spawn + initialize + tools/list, {n} servers at once")
    };
    report(&row, "ms", 2, &times);
}

fn list(rt: &Runtime, fixture: &Path, rounds: usize) {
    const LISTINGS: usize = 3;
    let mut floor = Floor::start(fixture, TEN_THOUSAND_TOOLS).expect("floor starts");
    let (mcp, rmcp) = rt.block_on(async {
        (
            ours::start(fixture, TEN_THOUSAND_TOOLS)
                .await
                .expect("starts"),
            official::start(fixture, TEN_THOUSAND_TOOLS)
                .await
                .expect("starts"),
        )
    });
    let mut times: Vec<(Client, Vec<f64>)> = STARTERS.iter().map(|&c| (c, vec![])).collect();
    for round in 0..=rounds {
        for client in round_order(&STARTERS, round) {
            let mut samples = Vec::new();
            for _ in 0..LISTINGS {
                let began = Instant::now();
                let n = match client {
                    Client::Floor => floor.list_all().expect("listed").len(),
                    Client::Mcp => rt.block_on(mcp.list_tools()).expect("listed").tools.len(),
                    Client::Rmcp => rt
                        .block_on(official::list_all(&rmcp))
                        .expect("listed")
                        .len(),
                    Client::Gateway | Client::AsyncFloor | Client::ProviderFloor => {
                        unreachable!("not a lister")
                    }
                };
                samples.push(millis(began.elapsed()));
                assert_eq!(n, 10_000);
            }
            if round > 0 {
                let i = STARTERS.iter().position(|&x| x == client).expect("known");
                times[i].1.push(summarize(&samples).median);
            }
        }
    }
    report("tools/list, 10 000 tools in 100 pages", "ms", 2, &times);
    drop(floor);
    rt.block_on(async {
        let _ = mcp.shutdown().await;
        official::close(rmcp).await;
    });
}

/// Resident memory per idle connection: each client in a fresh process of
/// its own (this executable again), so that no client reuses memory another
/// freed.
fn memory(fixture: &Path, rounds: usize, cpu: Option<usize>) {
    const CONNECTIONS: usize = 32;
    let exe = std::env::current_exe().expect("this executable");
    let mut per: Vec<(Client, Vec<f64>)> = STARTERS.iter().map(|&c| (c, vec![])).collect();
    for round in 0..rounds {
        for client in round_order(&STARTERS, round) {
            let mut command = std::process::Command::new(&exe);
            command.env("SPEAR_FIXTURE_SERVER", fixture).args([
                "--memory-child",
                client.name(),
                &CONNECTIONS.to_string(),
            ]);
            match cpu {
                Some(cpu) => command.args(["--cpu", &cpu.to_string()]),
                None => command.arg("--no-pin"),
            };
            let out = command.output().expect("memory child runs");
            let text = String::from_utf8_lossy(&out.stdout);
            let bytes: f64 = text
                .trim()
                .parse()
                .unwrap_or_else(|_| panic!("memory child said {text:?}, {:?}", out.status));
            let i = STARTERS.iter().position(|&x| x == client).expect("known");
            per[i].1.push(bytes / 1024.0);
        }
    }
    report(
        &format!("resident memory per idle connection ({CONNECTIONS} open)"),
        "KiB",
        0,
        &per,
    );
}

fn memory_child(rt: &Runtime, fixture: &Path, client: &str, n: usize) {
    fn settle() {
        std::thread::sleep(Duration::from_millis(200));
    }
    let bytes = match client {
        "floor" => {
            let warm = Floor::start(fixture, &[]).expect("starts");
            drop(warm);
            settle();
            let before = resident().expect("/proc");
            let open: Vec<Floor> = (0..n)
                .map(|_| Floor::start(fixture, &[]).expect("starts"))
                .collect();
            settle();
            let after = resident().expect("/proc");
            drop(open);
            after.saturating_sub(before)
        }
        "mcp-stdio" => rt.block_on(async {
            let warm = ours::start(fixture, &[]).await.expect("starts");
            let _ = warm.shutdown().await;
            drop(warm);
            idle().await;
            let before = resident().expect("/proc");
            let mut open = Vec::new();
            for _ in 0..n {
                open.push(ours::start(fixture, &[]).await.expect("starts"));
            }
            idle().await;
            let after = resident().expect("/proc");
            join_all(open.iter().map(|p| p.shutdown())).await;
            after.saturating_sub(before)
        }),
        "rmcp" => rt.block_on(async {
            let warm = official::start(fixture, &[]).await.expect("starts");
            official::close(warm).await;
            idle().await;
            let before = resident().expect("/proc");
            let mut open = Vec::new();
            for _ in 0..n {
                open.push(official::start(fixture, &[]).await.expect("starts"));
            }
            idle().await;
            let after = resident().expect("/proc");
            join_all(open.into_iter().map(official::close)).await;
            after.saturating_sub(before)
        }),
        other => panic!("no client {other}"),
    };
    println!("{}", bytes as f64 / n as f64);
}

/// Lets every task reach its idle state.
async fn idle() {
    tokio::time::sleep(Duration::from_millis(200)).await;
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned())
}

fn kernel() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| format!("Linux {}", s.trim()))
        .unwrap_or_else(|_| "unknown kernel".to_owned())
}
