//! `spear-capabilities`: the operator's view of SPEAR's external capabilities.
//!
//! Each subcommand is a module with an `Args` struct (its flags, help and
//! examples, the shared ones flattened from `flags`) and one `Args::run`,
//! which returns its `Failure` here: `main` alone says an error and picks
//! the exit status (`error`). A new subcommand is a module and a line in
//! the `subcommands!` list.
//!
//! SIGINT, SIGTERM and SIGHUP stop every provider through the normal close
//! path, then the CLI exits 130, 143 or 129; a standard output closed under
//! it (`| head`) does the same and exits 141. The process is marked
//! non-dumpable, so that a server running as the same user cannot read its
//! memory or `/proc/<pid>/environ`.
#![forbid(unsafe_code)]

mod add;
mod arguments;
mod audit;
mod check;
mod complete;
mod completions;
mod disable;
mod enable;
mod entry;
mod error;
mod examples;
mod file;
mod flags;
mod get;
mod invoke;
mod lines;
mod list;
mod man;
mod named;
mod out;
mod permission;
mod probe;
mod remove;
mod report;
mod session;
mod set;
mod starting;
mod trace;
mod tree;
mod turn;
mod view;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, Registry};

use error::Failure;

/// The examples of the program as a whole.
const EXAMPLES: &[examples::Example] = &[
    examples::Example::new(
        "spear-capabilities check",
        "Validate the registry SPEAR reads: each entry, each refusal where it is in the file",
    ),
    examples::Example::new(
        "spear-capabilities add notes --scope 'corpus demo' --read search_notes,get_note -- /opt/notes-mcp/bin/notes-mcp",
        "Register a server for the project demo, two of its tools READ",
    ),
    examples::Example::new(
        "spear-capabilities get notes --start",
        "Start its server: each tool with its class and the server's read-only hints",
    ),
    examples::Example::new(
        "spear-capabilities list --project demo",
        "What a turn in demo is offered: each provider's state, each capability",
    ),
    examples::Example::new(
        "spear-capabilities turn --project demo --command 'spear-capability list'",
        "Answer a command line as SPEAR answers a turn's",
    ),
    examples::Example::new(
        "spear-capabilities invoke notes/search_notes '{\"query\": \"flaky\"}' --project demo",
        "One checked call through the whole gateway",
    ),
];

/// Check and try SPEAR's external capability providers: what a turn is
/// shown, and how SPEAR answers its `spear-capability` commands.
#[derive(Debug, Parser)]
#[command(name = "spear-capabilities", version, after_help = examples::help(EXAMPLES))]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The subcommands that start servers, and so take `--trace` (`check` and
/// `get` with `--start`, the flag that starts them).
const TRACED: [&str; 5] = ["check", "list", "turn", "invoke", "get"];

/// The CLI as clap parses it, and as its completions and manual pages
/// describe it: [`Cli`], with `--trace` on each subcommand that starts a
/// server ([`TRACED`]), and only there.
pub(crate) fn command() -> clap::Command {
    Cli::command().mut_subcommands(|sub| {
        if !TRACED.contains(&sub.get_name()) {
            return sub;
        }
        let starts = sub.get_arguments().any(|a| a.get_id() == "start");
        let trace = clap::Arg::new("trace")
            .long("trace")
            .value_name("FILE")
            .value_parser(clap::value_parser!(PathBuf))
            .help(
                "Write every JSON-RPC line sent to and received from each server to \
                 FILE, one JSON object a line: time (ms since the epoch), provider, \
                 direction, line",
            );
        sub.arg(if starts {
            trace.requires("start")
        } else {
            trace
        })
    })
}

/// The subcommand enum, one variant a module (`Name => module`: the
/// variant `Name(module::Args)`, in `--help`'s order), and its dispatch to
/// `module::Args::run`.
macro_rules! subcommands {
    ($($name:ident => $module:ident),+ $(,)?) => {
        #[derive(Debug, Subcommand)]
        enum Command {
            $($name($module::Args)),+
        }

        impl Command {
            async fn run(self) -> Result<(), Failure> {
                match self {
                    $(Command::$name(args) => args.run().await),+
                }
            }
        }

        /// The examples of the subcommand `name` (each module is named as
        /// its subcommand), for its manual page.
        fn examples_of(name: &str) -> &'static [examples::Example] {
            match name {
                $(stringify!($module) => $module::EXAMPLES,)+
                _ => &[],
            }
        }
    };
}

subcommands! {
    Check => check,
    List => list,
    Turn => turn,
    Invoke => invoke,
    Get => get,
    Add => add,
    Set => set,
    Enable => enable,
    Disable => disable,
    Remove => remove,
    Audit => audit,
    Completions => completions,
    Man => man,
}

/// Writes the libraries' `tracing` events to stderr when `RUST_LOG` is set
/// (read as `tracing-subscriber`'s `EnvFilter` reads it); nothing otherwise.
/// Never on stdout, where `--json` output goes. `trace`, `--trace`'s layer,
/// goes beside it.
fn logging(trace: Option<impl Layer<Registry> + Send + Sync>) {
    let filter = std::env::var_os("RUST_LOG").and_then(|directives| {
        tracing_subscriber::EnvFilter::try_from_default_env()
            .inspect_err(|e| {
                out::tell(format_args!(
                    "RUST_LOG={} is not a filter ({e}); logging is off",
                    directives.to_string_lossy()
                ));
            })
            .ok()
    });
    let log = filter.map(|filter| {
        let stderr = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
        stderr.with_filter(filter)
    });
    if trace.is_some() || log.is_some() {
        let _ = tracing_subscriber::registry()
            .with(trace)
            .with(log)
            .try_init();
    }
}

fn main() -> ExitCode {
    // A server runs as our user: non-dumpable, this process's memory and
    // environment are closed to it (ptrace, /proc/<pid>/mem, environ).
    // Best effort: a failure leaves the process as it was.
    let _ = spear_providers::set_non_dumpable();
    // A TAB's completion request: answered, then exit, before any output.
    complete::answer_if_asked();
    let matches = command().get_matches();
    let trace = matches
        .subcommand()
        .and_then(|(_, sub)| sub.try_get_one::<PathBuf>("trace").ok().flatten())
        .cloned();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    match run(cli, trace) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            if let Some(message) = failure.message() {
                out::tell(message);
            }
            failure.exit_code()
        }
    }
}

/// Runs the subcommand on a runtime of its own, until it ends or a signal
/// ends it (every provider stopped first).
fn run(cli: Cli, trace: Option<PathBuf>) -> Result<(), Failure> {
    let trace = match &trace {
        Some(path) => Some(trace::layer(path).map_err(|e| {
            Failure::Usage(format!("cannot write the trace to {}: {e}", path.display()))
        })?),
        None => None,
    };
    logging(trace);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Usage(format!("cannot start the async runtime: {e}")))?;
    let result = runtime.block_on(async {
        let mut signals = out::Signals::new()
            .map_err(|e| Failure::Usage(format!("cannot handle signals: {e}")))?;
        tokio::select! {
            result = cli.command.run() => result,
            code = signals.first() => {
                out::say_stopping();
                // A second signal ends the servers at once (dropped: SIGKILL).
                tokio::select! {
                    () = out::close_all() => {}
                    _ = signals.first() => {}
                }
                Err(Failure::Signal(code))
            }
        }
    });
    // A thread still blocked reading standard input must not hold the exit.
    runtime.shutdown_background();
    result
}
