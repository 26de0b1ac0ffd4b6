//! `audit verify`: whether an audit trail is the one that was written.
//!
//! Each file is read to its end with the core's `audit::verify`: every
//! chain must be whole (under the deployment's key, when the trail was
//! written with one) and every session must have ended. The command says
//! so per file, names the first bad line and why, and gives the last
//! line's hash for the deployment to keep elsewhere (a trail cut after it
//! then shows). The key's bytes are never printed.

use std::io::BufReader;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use spear_capabilities::audit::{AuditKey, TrailStatus, Verdict, verify};

use crate::error::Failure;
use crate::examples::{self, Example};
use crate::out::{Closed, out};

/// The variable naming the deployment's audit key file, for `--audit` and
/// `audit verify` alike.
pub(crate) const AUDIT_KEY_FILE_VAR: &str = "SPEAR_AUDIT_KEY_FILE";

/// The examples of `audit`.
pub(crate) const EXAMPLES: &[Example] = &[
    Example::new(
        "spear-capabilities audit verify /var/log/spear/audit.jsonl",
        "Check that a trail is whole and every session ended; keep the last hash it prints elsewhere",
    ),
    Example::new(
        "SPEAR_AUDIT_KEY_FILE=/etc/spear/audit.key spear-capabilities audit verify audit.jsonl",
        "A trail chained under the deployment's key",
    ),
    Example::new(
        "spear-capabilities audit verify --json a.jsonl b.jsonl | jq '.files[].last_hash'",
        "Each trail's last hash, for a script",
    ),
];

/// Work with an audit trail (`--audit`): `audit verify FILE...`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: AuditCommand,
}

#[derive(Debug, clap::Subcommand)]
enum AuditCommand {
    /// Check that each trail is whole: every record chained to the line
    /// before it, every session ended.
    ///
    /// Prints, for each FILE, its records, sessions and WRITEs and the last
    /// record's hash (keep it elsewhere: a trail cut after it then shows);
    /// a session without an end record by name; the first line that breaks
    /// the trail, and why. Records of schema 1 carry no chain: they are
    /// counted as unchained, never as broken.
    ///
    /// Exit status: 0 when every trail is whole and every session ended; 1
    /// when a session has no end record (its process died, or the file was
    /// cut at a record boundary); 2 when a trail is broken (a record
    /// changed, removed, reordered or torn, a line that is not a record, a
    /// wrong key) or cannot be read, or the key file cannot be used.
    #[command(after_help = examples::help(EXAMPLES))]
    Verify(VerifyArgs),
}

/// What `audit verify` is asked.
#[derive(Debug, clap::Args)]
struct VerifyArgs {
    /// The trails (`-`: standard input).
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// The key the trails were chained under (default:
    /// $SPEAR_AUDIT_KEY_FILE; neither: the plain SHA-256 chain).
    #[arg(long, value_name = "FILE")]
    key_file: Option<PathBuf>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

impl Args {
    /// Runs the `audit` subcommand asked for.
    pub(crate) async fn run(self) -> Result<(), Failure> {
        match self.command {
            AuditCommand::Verify(verify) => verify.run(),
        }
    }
}

/// A file's outcome: its verdict, or why it could not be read.
type Outcome = Result<Verdict, String>;

impl VerifyArgs {
    fn run(self) -> Result<(), Failure> {
        let key_file = self
            .key_file
            .clone()
            .or_else(|| std::env::var_os(AUDIT_KEY_FILE_VAR).map(PathBuf::from));
        let key = key_file
            .as_deref()
            .map(AuditKey::from_file)
            .transpose()
            .map_err(|e| Failure::Usage(e.to_string()))?;
        let outcomes: Vec<(&Path, Outcome)> = self
            .files
            .iter()
            .map(|file| (file.as_path(), verify_file(file, key.as_ref())))
            .collect();
        let code = outcomes
            .iter()
            .map(|(_, outcome)| exit_code(outcome))
            .max()
            .unwrap_or(0);
        if self.json {
            print_json(&outcomes, code)?;
        } else {
            for (file, outcome) in &outcomes {
                print_text(file, outcome)?;
            }
        }
        match code {
            0 => Ok(()),
            1 => Err(Failure::Said),
            _ => Err(Failure::Broken),
        }
    }
}

fn verify_file(file: &Path, key: Option<&AuditKey>) -> Outcome {
    if file == Path::new("-") {
        return Ok(verify(std::io::stdin().lock(), key));
    }
    let opened = std::fs::File::open(file).map_err(|e| e.to_string())?;
    Ok(verify(BufReader::with_capacity(256 * 1024, opened), key))
}

fn exit_code(outcome: &Outcome) -> u8 {
    match outcome.as_ref().map(Verdict::status) {
        Ok(TrailStatus::Whole) => 0,
        Ok(TrailStatus::Unended) => 1,
        _ => 2,
    }
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn print_text(file: &Path, outcome: &Outcome) -> Result<(), Closed> {
    let name = file.display();
    let v = match outcome {
        Ok(v) => v,
        Err(e) => return out!("{name}: cannot be read: {e}"),
    };
    let unchained = match v.unchained {
        0 => String::new(),
        n => format!(" ({n} unchained, schema 1)"),
    };
    out!(
        "{name}: {}: {}{unchained}, {}, {}{}",
        v.status(),
        plural(v.records, "record", "records"),
        plural(v.sessions, "session", "sessions"),
        plural(v.writes, "WRITE", "WRITEs"),
        if v.keyed { ", keyed" } else { "" },
    )?;
    for unended in &v.unended {
        out!(
            "  session {} (begun at line {}) has no end record",
            unended.session,
            unended.line
        )?;
    }
    if let Some(broken) = &v.broken {
        out!("  {broken}")?;
    }
    match &v.last_hash {
        Some(hash) if v.broken.is_none() => out!("  last hash {hash}"),
        _ => Ok(()),
    }
}

fn print_json(outcomes: &[(&Path, Outcome)], code: u8) -> Result<(), Closed> {
    let files: Vec<Value> = outcomes
        .iter()
        .map(|(file, outcome)| {
            let file = file.display().to_string();
            match outcome {
                Ok(v) => {
                    let mut value = serde_json::to_value(v).unwrap_or_default();
                    value["file"] = json!(file);
                    value["status"] = json!(v.status().as_str());
                    if let Some(broken) = &v.broken {
                        value["broken"]["message"] = json!(broken.to_string());
                    }
                    value
                }
                Err(e) => json!({"file": file, "status": "unreadable", "error": e}),
            }
        })
        .collect();
    let status = match code {
        0 => "whole",
        1 => "unended",
        _ => "broken",
    };
    out!("{}", json!({"status": status, "files": files}))
}
