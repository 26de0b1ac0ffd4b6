//! `man`: the manual pages, generated from the CLI's own clap definitions,
//! so that they cannot drift from the flags the parser takes.

use std::path::PathBuf;

use clap::CommandFactory;

use crate::error::Failure;
use crate::out::emit;

/// Print the manual page (roff), or write one a subcommand with --dir.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  spear-capabilities man | man -l -
  spear-capabilities man --dir /usr/local/share/man/man1")]
pub(crate) struct Args {
    /// Write spear-capabilities.1 and a page for each subcommand
    /// (spear-capabilities-list.1, ...) into DIR.
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
        let mut command = crate::Cli::command().disable_help_subcommand(true);
        command.build();
        // Each page names the program and its version, a subcommand's too.
        let source = format!(
            "{} {}",
            command.get_name(),
            command.get_version().unwrap_or_default()
        );
        let page = |c: &clap::Command| clap_mangen::Man::new(c.clone()).source(source.clone());
        let Some(dir) = &self.dir else {
            let mut roff = Vec::new();
            page(&command)
                .render(&mut roff)
                .map_err(|e| Failure::Usage(format!("cannot render the manual page: {e}")))?;
            return Ok(emit(&String::from_utf8_lossy(&roff))?);
        };
        let commands =
            std::iter::once(&command).chain(command.get_subcommands().filter(|s| !s.is_hide_set()));
        for c in commands {
            let written = page(c).generate_to(dir).map_err(|e| {
                Failure::Usage(format!(
                    "cannot write a manual page into {}: {e}",
                    dir.display()
                ))
            })?;
            emit(&format!("{}\n", written.display()))?;
        }
        Ok(())
    }
}
