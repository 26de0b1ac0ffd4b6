//! `man`: the manual pages, generated from the CLI's own clap definitions,
//! so that they cannot drift from the flags the parser takes; each with
//! the EXAMPLES its `--help` ends with, one command a line as typed
//! ([`crate::examples`]).

use std::path::{Path, PathBuf};

use crate::error::Failure;
use crate::examples::{self, Example};
use crate::out::emit;

/// The examples of `man`.
pub(crate) const EXAMPLES: &[Example] = &[
    Example::new(
        "spear-capabilities man | man -l -",
        "Read the manual page of the program",
    ),
    Example::new(
        "spear-capabilities man --dir /usr/local/share/man/man1",
        "Install a page for the program and one for each subcommand (man spear-capabilities-list); a missing folder is created",
    ),
];

/// Print the manual page (roff), or write one a subcommand with --dir.
#[derive(Debug, clap::Args)]
#[command(after_help = examples::help(EXAMPLES))]
pub(crate) struct Args {
    /// Write spear-capabilities.1 and a page for each subcommand
    /// (spear-capabilities-list.1, ...) into DIR, created if missing.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

impl Args {
    /// Writes the page of the program to standard output (roff, section
    /// 1); with `--dir`, one page for it and one for each subcommand into
    /// the folder instead (`spear-capabilities.1`,
    /// `spear-capabilities-list.1`, ...), each path written said on
    /// standard output.
    pub(crate) async fn run(self) -> Result<(), Failure> {
        let mut command = crate::command().disable_help_subcommand(true);
        command.build();
        // Each page names the program and its version, a subcommand's too.
        let source = format!(
            "{} {}",
            command.get_name(),
            command.get_version().unwrap_or_default()
        );
        let Some(dir) = &self.dir else {
            return Ok(emit(&page(&command, &source, crate::EXAMPLES)?)?);
        };
        std::fs::create_dir_all(dir).map_err(|e| cannot_write(dir, &e))?;
        let subcommands = command.get_subcommands().filter(|s| !s.is_hide_set());
        let pages = std::iter::once((&command, crate::EXAMPLES))
            .chain(subcommands.map(|s| (s, crate::examples_of(s.get_name()))));
        for (c, examples) in pages {
            let name = clap_mangen::Man::new(c.clone()).get_filename();
            let path = dir.join(name);
            std::fs::write(&path, page(c, &source, examples)?)
                .map_err(|e| cannot_write(dir, &e))?;
            emit(&format!("{}\n", path.display()))?;
        }
        Ok(())
    }
}

/// The page of `command` (roff): clap_mangen's sections, with `examples`
/// as its EXAMPLES section before VERSION in place of the `--help` text
/// clap_mangen would fill as a paragraph.
fn page(command: &clap::Command, source: &str, examples: &[Example]) -> Result<String, Failure> {
    let plain = command.clone().after_help(None::<&str>);
    let mut roff = Vec::new();
    clap_mangen::Man::new(plain)
        .source(source)
        .render(&mut roff)
        .map_err(|e| Failure::Usage(format!("cannot render the manual page: {e}")))?;
    let mut page = String::from_utf8_lossy(&roff).into_owned();
    if !examples.is_empty() {
        let at = page.find(".SH VERSION").unwrap_or(page.len());
        page.insert_str(at, &examples::roff(examples));
    }
    Ok(page)
}

fn cannot_write(dir: &Path, e: &std::io::Error) -> Failure {
    Failure::Usage(format!(
        "cannot write a manual page into {}: {e}",
        dir.display()
    ))
}
