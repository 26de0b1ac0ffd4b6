//! `spear-capabilities`: the operator's view of SPEAR's external capabilities.
//!
//! SIGINT, SIGTERM and SIGHUP stop every provider through the normal close
//! path, then the CLI exits 130, 143 or 129; a standard output closed under
//! it (`| head`) does the same and exits 141. The process is marked
//! non-dumpable, so that a server running as the same user cannot read its
//! memory or `/proc/<pid>/environ`.
#![forbid(unsafe_code)]

mod arguments;
mod check;
mod context;
mod edit;
mod file;
mod gateway;
mod generate;
mod get;
mod lines;
mod out;
mod permission;
mod report;
mod starting;
mod view;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, CommandFactory, Parser, Subcommand};

use context::ContextArgs;
use permission::{Confirm, Mode};

/// Check and try SPEAR's external capability providers: what a turn is
/// shown, and how SPEAR answers its `spear-capability` commands.
#[derive(Debug, Parser)]
#[command(name = "spear-capabilities", version)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
    /// Write every JSON-RPC line sent to and received from each server to
    /// FILE, one JSON object a line: time (ms since the epoch), provider,
    /// direction, line.
    #[arg(long, global = true, value_name = "FILE")]
    trace: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Validate a capabilities file: print each provider and every refusal.
    ///
    /// Exit status: 0 when every entry is valid, 1 when some are refused
    /// (or, enabled and with a scope, name a program that cannot run) or
    /// with --start a start failed, 2 when the file cannot be read or
    /// parsed, or a file named here does not exist. A warning (an entry without a scope, the program of one
    /// that nothing starts) leaves it 0.
    #[command(after_help = "Examples:
  spear-capabilities check
  spear-capabilities check /etc/spear/capabilities.json
  spear-capabilities check --capabilities /etc/spear/capabilities.json
  spear-capabilities check --json capabilities.json | jq '.refused'
  spear-capabilities check --start --wait 60")]
    Check {
        /// The file (default: $SPEAR_CAPABILITIES_FILE, else
        /// capabilities.json beside --projects).
        file: Option<PathBuf>,
        /// The file, as the other subcommands name it (the same as FILE).
        #[arg(long = "capabilities", value_name = "FILE", conflicts_with = "file")]
        capabilities: Option<PathBuf>,
        /// The projects.json whose folder holds capabilities.json.
        #[arg(long, default_value = "projects.json")]
        projects: PathBuf,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
        /// Also start each enabled entry whose program can run (whatever
        /// its scope), and say what its server offers, or why it did not
        /// start; a failed start makes the exit status 1.
        #[arg(long)]
        start: bool,
        /// With --start: let each start go on up to SECONDS (a server that
        /// downloads itself on first use), however short its `timeout`.
        #[arg(long, value_name = "SECONDS", requires = "start", value_parser = crate::context::wait_seconds)]
        wait: Option<std::time::Duration>,
    },
    /// Start what a turn would select; show each provider's state, each
    /// capability and the exposure.
    ///
    /// Exit status: 0, 1 when a selected provider is unavailable or the
    /// registry refused an entry (as `check`), 2 when the registry cannot be
    /// read or a file named with --capabilities does not exist.
    #[command(after_help = "Examples:
  spear-capabilities list --project demo
  spear-capabilities list --project firmware-a --family boards --task general
  spear-capabilities list --capabilities examples/capabilities.json --project demo --json")]
    List {
        #[command(flatten)]
        context: ContextArgs,
        /// Print the `shown` JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Print exactly what a turn is shown, then answer each command as SPEAR
    /// would (the --command values, else each line of standard input).
    ///
    /// Exit status: 0, 1 when the registry refused an entry (as `check`;
    /// said on stderr, or as a `refused` line with --json), 2 when the
    /// registry cannot be read or a file named with --capabilities does not
    /// exist.
    #[command(after_help = "Examples:
  spear-capabilities turn --project demo < examples/turn.txt
  spear-capabilities turn --project demo --command 'spear-capability list'
  spear-capabilities turn --project demo --mode auto --json --command 'spear-capability describe notes/get_note'")]
    Turn {
        #[command(flatten)]
        context: ContextArgs,
        #[command(flatten)]
        permission: PermissionArgs,
        /// A command line the turn types (repeatable).
        #[arg(long = "command", value_name = "CMD")]
        commands: Vec<String>,
        /// Print JSON Lines instead of text.
        #[arg(long)]
        json: bool,
    },
    /// One checked call through the full gateway.
    ///
    /// Exit status: 0 when the call succeeded, 1 when it was refused, failed
    /// or its provider is unavailable, or the registry refused an entry (as
    /// `check`), 2 on bad usage, an unreadable registry or a file named with
    /// --capabilities that does not exist.
    #[command(after_help = "Examples:
  spear-capabilities invoke notes/search_notes '{\"query\": \"flaky\"}' --project demo
  spear-capabilities invoke notes/add_note '{\"title\": \"Ship it\", \"text\": \"Friday\"}' --project demo --confirm yes
  spear-capabilities invoke notes/get_note '{\"id\": 1}' --project demo --json
  spear-capabilities invoke notes/add_note @note.json --project demo --confirm no
  echo '{\"id\": 1}' | spear-capabilities invoke notes/get_note - --project demo")]
    Invoke {
        /// The capability, `<provider>/<tool>`.
        id: String,
        /// The arguments, one JSON object (default `{}`); `@FILE` reads
        /// them from FILE, `-` from standard input.
        arguments: Option<String>,
        #[command(flatten)]
        context: ContextArgs,
        #[command(flatten)]
        permission: PermissionArgs,
        /// Print the `answer` JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Show one registry entry; with --start, what its server offers.
    ///
    /// The entry's command, the names of its `env` variables (never their
    /// values) and its selection settings; --start starts the server
    /// whatever the entry's scope or `enabled`, and shows its name, version
    /// and protocol and each tool with its class and full schema.
    ///
    /// Exit status: 0, 1 when no entry has the id, the registry refuses it
    /// (or, as `check`, its program cannot run) or --start failed, 2 when
    /// the file cannot be read or parsed, or a file named with
    /// --capabilities does not exist.
    #[command(after_help = "Examples:
  spear-capabilities get notes
  spear-capabilities get notes --capabilities /etc/spear/capabilities.json --start
  spear-capabilities get notes --start --json | jq '.started.tools[].name'")]
    Get(get::GetArgs),
    /// Add an entry to the registry, validated as `check` validates it.
    ///
    /// An entry with the same id is never replaced; every other entry is
    /// kept byte for byte, and the file is replaced atomically. A file that
    /// does not exist yet is created (readable by its owner only).
    ///
    /// Exit status: 0 added, 1 refused (the entry is invalid, its program
    /// cannot run, or its id is taken; the file is left as it was), 2 on
    /// bad usage or when the file cannot be read, parsed or written.
    #[command(after_help = "Examples:
  spear-capabilities add notes --scope 'corpus demo' --read search_notes,get_note -- /opt/notes-mcp/bin/notes-mcp --stdio
  spear-capabilities add tracker --scope global --write confirm --env TRACKER_TOKEN_FILE=/etc/t --timeout 10 -- npx -y tracker-mcp
  spear-capabilities add time --capabilities /etc/spear/capabilities.json --scope global --tasks implementation,general -- uvx mcp-server-time")]
    Add(edit::AddArgs),
    /// Remove an entry from the registry.
    ///
    /// Every entry with the id goes; every other is kept byte for byte, and
    /// the file is replaced atomically.
    ///
    /// Exit status: 0 removed, 1 when no entry has the id, 2 when the file
    /// cannot be read, parsed or written, or a file named with
    /// --capabilities does not exist.
    #[command(after_help = "Examples:
  spear-capabilities remove notes
  spear-capabilities remove tracker --capabilities /etc/spear/capabilities.json")]
    Remove(edit::RemoveArgs),
    /// Print a shell's completion script for spear-capabilities.
    #[command(after_help = "Examples:
  spear-capabilities completions bash > ~/.local/share/bash-completion/completions/spear-capabilities
  spear-capabilities completions zsh > ~/.zfunc/_spear-capabilities")]
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff), or write one a subcommand with --dir.
    #[command(after_help = "Examples:
  spear-capabilities man | man -l -
  spear-capabilities man --dir /usr/local/share/man/man1")]
    Man {
        /// Write spear-capabilities.1 and a page for each subcommand
        /// (spear-capabilities-list.1, ...) into DIR.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

/// How WRITE capabilities are allowed.
#[derive(Debug, Args)]
struct PermissionArgs {
    /// The session's permission mode.
    #[arg(long, value_enum, default_value_t = Mode::Ask)]
    mode: Mode,
    /// Answer every confirmation (ask mode) without asking.
    #[arg(long, value_enum)]
    confirm: Option<Confirm>,
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
            eprintln!(
                "spear-capabilities: RUST_LOG={} is not a filter ({e}); logging is off",
                directives.to_string_lossy()
            );
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
    if let Some(path) = &cli.trace {
        if let Err(e) = spear_mcp_stdio::trace_to(path) {
            eprintln!(
                "spear-capabilities: cannot write the trace to {}: {e}",
                path.display()
            );
            return ExitCode::from(2);
        }
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("spear-capabilities: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let code = runtime.block_on(async {
        let mut signals = match out::Signals::new() {
            Ok(s) => s,
            Err(e) => {
                eprintln!("spear-capabilities: cannot handle signals: {e}");
                return ExitCode::from(2);
            }
        };
        tokio::select! {
            code = run(cli.command) => code,
            code = signals.first() => {
                out::say_stopping();
                // A second signal ends the servers at once (dropped: SIGKILL).
                tokio::select! {
                    () = out::close_all() => {}
                    _ = signals.first() => {}
                }
                ExitCode::from(code)
            }
        }
    });
    // A thread still blocked reading standard input must not hold the exit.
    runtime.shutdown_background();
    code
}

async fn run(command: Cmd) -> ExitCode {
    match command {
        Cmd::Check {
            file,
            capabilities,
            projects,
            json,
            start,
            wait,
        } => {
            let options = check::CheckOptions { json, start, wait };
            check::run(file.or(capabilities), &projects, options).await
        }
        Cmd::List { context, json } => gateway::list(&context, json).await,
        Cmd::Turn {
            context,
            permission,
            commands,
            json,
        } => {
            gateway::turn(
                &context,
                permission.mode,
                permission.confirm,
                commands,
                json,
            )
            .await
        }
        Cmd::Invoke {
            id,
            arguments,
            context,
            permission,
            json,
        } => {
            gateway::invoke(
                &context,
                &id,
                arguments.as_deref(),
                permission.mode,
                permission.confirm,
                json,
            )
            .await
        }
        Cmd::Get(args) => get::get(&args).await,
        Cmd::Add(args) => edit::add(&args),
        Cmd::Remove(args) => edit::remove(&args),
        Cmd::Completions { shell } => generate::completions(Cli::command(), shell),
        Cmd::Man { dir } => generate::man(Cli::command(), dir.as_deref()),
    }
}
