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
mod completions;
mod disable;
mod enable;
mod entry;
mod error;
mod file;
mod flags;
mod get;
mod invoke;
mod lines;
mod list;
mod man;
mod out;
mod permission;
mod probe;
mod remove;
mod report;
mod session;
mod set;
mod starting;
mod tree;
mod turn;
mod view;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use error::Failure;

/// Check and try SPEAR's external capability providers: what a turn is
/// shown, and how SPEAR answers its `spear-capability` commands.
#[derive(Debug, Parser)]
#[command(name = "spear-capabilities", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Write every JSON-RPC line sent to and received from each server to
    /// FILE, one JSON object a line: time (ms since the epoch), provider,
    /// direction, line.
    #[arg(long, global = true, value_name = "FILE")]
    trace: Option<PathBuf>,
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
/// Never on stdout, where `--json` output goes.
fn logging() {
    let Some(directives) = std::env::var_os("RUST_LOG") else {
        return;
    };
    let filter = match tracing_subscriber::EnvFilter::try_from_default_env() {
        Ok(filter) => filter,
        Err(e) => {
            out::tell(format_args!(
                "RUST_LOG={} is not a filter ({e}); logging is off",
                directives.to_string_lossy()
            ));
            return;
        }
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

fn main() -> ExitCode {
    // A server runs as our user: non-dumpable, this process's memory and
    // environment are closed to it (ptrace, /proc/<pid>/mem, environ).
    // Best effort: a failure leaves the process as it was.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let _ = rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable);
    let cli = Cli::parse();
    logging();
    match run(cli) {
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
fn run(cli: Cli) -> Result<(), Failure> {
    if let Some(path) = &cli.trace {
        spear_mcp_stdio::trace_to(path).map_err(|e| {
            Failure::Usage(format!("cannot write the trace to {}: {e}", path.display()))
        })?;
    }
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
