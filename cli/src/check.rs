//! `check`: a registry validated, each entry as the registry has it, what
//! the library's check finds of its program and, with `--start`, what its
//! server offers ([`crate::probe`]).

use std::path::{Path, PathBuf};

use serde_json::json;
use spear_capabilities::{
    Audit, Error, Registry,
    registry::{EntryCheck, EntryWarning},
};

use crate::entry;
use crate::error::{Failure, said_unless};
use crate::examples::{self, Example};
use crate::flags::{RegistryArgs, WaitArgs};
use crate::out::{self, Closed, out};
use crate::probe::{self, Started};
use crate::report::{refused_json, refused_lines};

/// The examples of `check`.
pub(crate) const EXAMPLES: &[Example] = &[
    Example::new(
        "spear-capabilities check",
        "Validate the registry SPEAR reads (capabilities.json beside ./projects.json, or $SPEAR_CAPABILITIES_FILE): each entry, each problem where it is in the file",
    ),
    Example::new(
        "spear-capabilities check /etc/spear/capabilities.json",
        "Validate one file",
    ),
    Example::new(
        "spear-capabilities check --capabilities /etc/spear/capabilities.json",
        "The same, with the flag the other subcommands take",
    ),
    Example::new(
        "spear-capabilities check --json capabilities.json | jq '.refused'",
        "Each refused entry with its problems, for a script",
    ),
    Example::new(
        "spear-capabilities check --start --wait 60",
        "Also start each enabled entry and say what its server offers, letting a first npx or uvx download take up to a minute",
    ),
];

/// Validate a capabilities file: print each provider and every refusal.
///
/// Exit status: 0 when every entry is valid, 1 when some are refused
/// (or, enabled and with a scope, name a program that cannot run) or
/// with --start a start failed, 2 when the file cannot be read or
/// parsed, or a file named here does not exist. A warning (an entry
/// without a scope, the program of one that nothing starts, with --start
/// a `read` name its server does not offer) leaves it 0.
#[derive(Debug, clap::Args)]
#[command(after_help = examples::help(EXAMPLES))]
#[command(mut_arg("wait", |a| a.requires("start")))]
pub(crate) struct Args {
    /// The file (default: $SPEAR_CAPABILITIES_FILE, else
    /// capabilities.json beside --projects); the same as --capabilities.
    #[arg(conflicts_with = "capabilities")]
    file: Option<PathBuf>,
    #[command(flatten)]
    registry: RegistryArgs,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// Also start each enabled entry whose program can run (whatever
    /// its scope), and say what its server offers, or why it did not
    /// start; a failed start makes the exit status 1.
    #[arg(long)]
    start: bool,
    #[command(flatten)]
    wait: WaitArgs,
}

/// Each entry's start with `--start` (`None` for an entry not started).
type Starts = Vec<Option<Result<Started, Error>>>;

impl Args {
    pub(crate) async fn run(self) -> Result<(), Failure> {
        let named = RegistryArgs {
            capabilities: self.file.clone().or(self.registry.capabilities.clone()),
            ..self.registry.clone()
        };
        let registry = named.load(&Audit::null())?;
        let path = named.path();
        // Is each program there and runnable: the library's check, as an
        // embedder would ask it.
        let findings = registry.check();
        let started = if self.start {
            start_all(&registry, &findings, self.wait.wait).await
        } else {
            Vec::new()
        };
        if self.json {
            let providers = registry.entries().iter().zip(&findings).enumerate();
            let providers = providers.map(|(i, (e, f))| {
                let mut v = entry::json(e, f);
                if let Some(Some(started)) = started.get(i) {
                    v["started"] = probe::json(started);
                }
                v
            });
            out::json(&json!({
                "file": path.display().to_string(),
                "notice": registry.notice(),
                "providers": providers.collect::<Vec<_>>(),
                "refused": refused_json(&registry),
            }))?;
        } else {
            print_text(&path, &registry, &findings, &started)?;
        }
        let all_started = started.iter().flatten().all(Result::is_ok);
        said_unless(
            registry.refused().is_empty()
                && findings.iter().all(|f| f.cannot_run.is_none())
                && all_started,
        )
    }
}

/// Starts, all at once, each enabled entry whose program can run (a start
/// per entry, as `get --start` makes it); `None` for the others, among
/// them an unscoped entry whose program the check found cannot run (a
/// warning, which a start must not turn into a failure).
async fn start_all(
    registry: &Registry,
    findings: &[EntryCheck],
    wait: Option<std::time::Duration>,
) -> Starts {
    let starts = registry
        .entries()
        .iter()
        .zip(findings)
        .map(|(e, f)| async move {
            let runs = f.cannot_run.is_none()
                && !f
                    .warnings
                    .iter()
                    .any(|w| matches!(w, EntryWarning::CannotRunUnused { .. }));
            if e.enabled && runs {
                Some(probe::start(registry, e, wait).await)
            } else {
                None
            }
        });
    futures::future::join_all(starts).await
}

fn print_text(
    path: &Path,
    registry: &Registry,
    findings: &[EntryCheck],
    started: &Starts,
) -> Result<(), Closed> {
    if let Some(notice) = registry.notice() {
        return out!("{notice}");
    }
    out!("{}", path.display())?;
    let mut warnings: usize = findings.iter().map(|f| f.warnings.len()).sum();
    for (i, (e, f)) in registry.entries().iter().zip(findings).enumerate() {
        out!("{}", entry::check_lines(e, f))?;
        if let Some(Some(started)) = started.get(i) {
            out!("           {}", probe::summary(started, &e.id))?;
            // What only a start can tell, on the entry's own lines.
            for w in probe::warnings(started) {
                out!("           warning: {w}")?;
                warnings += 1;
            }
        }
    }
    for line in refused_lines(registry, false) {
        out!("{line}")?;
    }
    let unrunnable = findings.iter().filter(|f| f.cannot_run.is_some()).count();
    let failed = started.iter().flatten().filter(|s| s.is_err()).count();
    let failed = match failed {
        0 => String::new(),
        n => format!(", {n} failed to start"),
    };
    let warned = match warnings {
        0 => String::new(),
        1 => ", 1 warning".to_owned(),
        n => format!(", {n} warnings"),
    };
    out!(
        "{} registered, {} refused{warned}{failed}",
        registry.entries().len() - unrunnable,
        registry.refused().len() + unrunnable
    )
}
