//! `completions SHELL` and `man`: the shell completions and the manual
//! pages, generated from the CLI's own clap definitions, so that neither
//! can drift from the flags the parser takes.

use std::path::Path;
use std::process::ExitCode;

use clap_complete::Shell;

use crate::out::emit;

/// Writes `shell`'s completion script for `command` to standard output.
pub(crate) fn completions(mut command: clap::Command, shell: Shell) -> ExitCode {
    let name = command.get_name().to_owned();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, &name, &mut script);
    if shell == Shell::Bash {
        script = bash_hyphen_fix(&script, &name).into_bytes();
    }
    write(&script)
}

/// clap_complete's bash script spells the state of a subcommand of a
/// hyphenated program two ways (clap-rs/clap#6421, open): its loop sets
/// `spear__capabilities__subcmd__check`, its case arms expect
/// `spear__subcmd__capabilities__subcmd__check`, so no subcommand's flags
/// ever complete. The arms are given the loop's spelling.
fn bash_hyphen_fix(script: &[u8], name: &str) -> String {
    let script = String::from_utf8_lossy(script);
    let arm = name.replace('-', "__subcmd__");
    let state = name.replace('-', "__");
    if arm == state {
        return script.into_owned();
    }
    script.replace(&arm, &state)
}

/// Writes the manual page of `command` to standard output (roff, section
/// 1); with `dir`, one page for it and one for each subcommand into `dir`
/// instead (`spear-capabilities.1`, `spear-capabilities-list.1`, ...),
/// each path written said on standard output.
pub(crate) fn man(command: clap::Command, dir: Option<&Path>) -> ExitCode {
    let mut command = command.disable_help_subcommand(true);
    command.build();
    // Each page names the program and its version, a subcommand's too.
    let source = format!(
        "{} {}",
        command.get_name(),
        command.get_version().unwrap_or_default()
    );
    let page = |c: &clap::Command| clap_mangen::Man::new(c.clone()).source(source.clone());
    let Some(dir) = dir else {
        let mut roff = Vec::new();
        if let Err(e) = page(&command).render(&mut roff) {
            eprintln!("spear-capabilities: cannot render the manual page: {e}");
            return ExitCode::from(2);
        }
        return write(&roff);
    };
    let commands =
        std::iter::once(&command).chain(command.get_subcommands().filter(|s| !s.is_hide_set()));
    for c in commands {
        let written = match page(c).generate_to(dir) {
            Ok(path) => path,
            Err(e) => {
                eprintln!(
                    "spear-capabilities: cannot write a manual page into {}: {e}",
                    dir.display()
                );
                return ExitCode::from(2);
            }
        };
        if let Err(closed) = emit(&format!("{}\n", written.display())) {
            return closed.code();
        }
    }
    ExitCode::SUCCESS
}

fn write(bytes: &[u8]) -> ExitCode {
    match emit(&String::from_utf8_lossy(bytes)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(closed) => closed.code(),
    }
}
