//! `completions SHELL`: a shell's completion script, generated from the
//! CLI's own clap definitions, so that it cannot drift from the flags the
//! parser takes.

use clap::CommandFactory;
use clap_complete::Shell;

use crate::error::Failure;
use crate::out::emit;

/// Print a shell's completion script for spear-capabilities.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  spear-capabilities completions bash > ~/.local/share/bash-completion/completions/spear-capabilities
  spear-capabilities completions zsh > ~/.zfunc/_spear-capabilities")]
pub(crate) struct Args {
    /// The shell.
    shell: Shell,
}

impl Args {
    /// Writes the script to standard output.
    pub(crate) async fn run(self) -> Result<(), Failure> {
        let mut command = crate::Cli::command();
        let name = command.get_name().to_owned();
        let mut script = Vec::new();
        clap_complete::generate(self.shell, &mut command, &name, &mut script);
        let script = String::from_utf8_lossy(&script);
        if self.shell == Shell::Bash {
            emit(&bash_hyphen_fix(&script, &name))?;
        } else {
            emit(&script)?;
        }
        Ok(())
    }
}

/// clap_complete's bash script spells the state of a subcommand of a
/// hyphenated program two ways (clap-rs/clap#6421, open): its loop sets
/// `spear__capabilities__subcmd__check`, its case arms expect
/// `spear__subcmd__capabilities__subcmd__check`, so no subcommand's flags
/// ever complete. The arms are given the loop's spelling.
fn bash_hyphen_fix(script: &str, name: &str) -> String {
    let arm = name.replace('-', "__subcmd__");
    let state = name.replace('-', "__");
    if arm == state {
        return script.to_owned();
    }
    script.replace(&arm, &state)
}
