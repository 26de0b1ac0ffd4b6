//! `completions SHELL`: the shell's completion script. The script asks the
//! binary at each TAB ([`crate::complete`]), so it completes every
//! subcommand and flag the parser takes, and provider ids from the
//! registry.

use std::path::PathBuf;

use clap_complete::Shell;
use clap_complete::env::Shells;

use crate::complete::VAR;
use crate::error::Failure;
use crate::examples::{Example, help};
use crate::out::emit;

/// The examples of `completions`.
pub(crate) const EXAMPLES: &[Example] = &[
    Example::new(
        "spear-capabilities completions bash > ~/.local/share/bash-completion/completions/spear-capabilities",
        "Install bash's completion; each TAB asks spear-capabilities, so subcommands, flags and provider ids complete",
    ),
    Example::new(
        "spear-capabilities completions zsh > ~/.zfunc/_spear-capabilities",
        "Install zsh's, in a folder of $fpath",
    ),
    Example::new(
        "spear-capabilities completions fish > ~/.config/fish/completions/spear-capabilities.fish",
        "Install fish's",
    ),
];

/// Print a shell's completion script for spear-capabilities.
///
/// At each TAB the script runs spear-capabilities to ask what completes
/// the words typed so far: subcommands and flags, and for `get`, `set`,
/// `enable`, `disable` and `remove` the ids of the registry the line
/// names (--capabilities, --projects, $SPEAR_CAPABILITIES_FILE), for
/// `invoke` the start of a capability id (`notes/`).
#[derive(Debug, clap::Args)]
#[command(after_help = help(EXAMPLES))]
pub(crate) struct Args {
    /// The shell.
    shell: Shell,
}

impl Args {
    /// Writes the script to standard output.
    pub(crate) async fn run(self) -> Result<(), Failure> {
        let command = crate::command();
        let name = command.get_name();
        let shells = Shells::builtins();
        let shell = shells
            .completer(&self.shell.to_string())
            .ok_or_else(|| Failure::Usage(format!("no completion for {}", self.shell)))?;
        let mut script = Vec::new();
        shell
            .write_registration(VAR, name, name, &completer(), &mut script)
            .map_err(|e| Failure::Usage(format!("cannot write the script: {e}")))?;
        Ok(emit(&String::from_utf8_lossy(&script))?)
    }
}

/// The program the script runs at each TAB: this one as it was run (a bare
/// name is looked up on `PATH` then; a relative path is made absolute), as
/// clap's own `SPEAR_CAPABILITIES_COMPLETE=bash spear-capabilities` does.
fn completer() -> String {
    let program = PathBuf::from(std::env::args_os().next().unwrap_or_default());
    let program = match std::env::current_dir() {
        Ok(dir) if program.components().count() > 1 => dir.join(program),
        _ => program,
    };
    program.to_string_lossy().into_owned()
}
