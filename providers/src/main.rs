//! `spear-capabilities`: the operator's view of SPEAR's external capabilities.
#![forbid(unsafe_code)]

mod check;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Check and inspect SPEAR's external capability providers.
#[derive(Debug, Parser)]
#[command(name = "spear-capabilities", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Validate a capabilities file: print each provider and every refusal.
    ///
    /// Exit status: 0 when every entry is valid, 1 when some are refused, 2
    /// when the file cannot be read or parsed.
    Check {
        /// The file (default: $SPEAR_CAPABILITIES_FILE, else
        /// capabilities.json beside --projects).
        file: Option<PathBuf>,
        /// The projects.json whose folder holds capabilities.json.
        #[arg(long, default_value = "projects.json")]
        projects: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    spear_providers::link();
    let cli = Cli::parse();
    match cli.command {
        Command::Check {
            file,
            projects,
            json,
        } => check::run(file, &projects, json),
    }
}
