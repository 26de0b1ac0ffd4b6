//! `enable`: an entry a turn may use again (its `enabled` set to `true`),
//! changed in place as `set` changes one ([`crate::set::switch`]).

use crate::error::Failure;
use crate::examples::{self, Example};
use crate::named::EntryArgs;

/// The examples of `enable`.
pub(crate) const EXAMPLES: &[Example] = &[
    Example::new(
        "spear-capabilities enable notes",
        "Use the entry again (its program checked, as `add` checks it)",
    ),
    Example::new(
        "spear-capabilities enable tracker --capabilities /etc/spear/capabilities.json",
        "The same in another file",
    ),
];

/// Enable an entry: a turn whose scope and task it covers gets it again.
///
/// Its `enabled` becomes true; nothing else changes. As `add`, an entry
/// that a turn would start must have a program that can run.
///
/// Exit status: 0 enabled (or already so), 1 refused (no such entry, or
/// the entry would be refused; the file is left as it was), 2 when the
/// file cannot be read, parsed, locked or written.
#[derive(Debug, clap::Args)]
#[command(after_help = examples::help(EXAMPLES))]
pub(crate) struct Args {
    #[command(flatten)]
    entry: EntryArgs,
}

impl Args {
    pub(crate) async fn run(self) -> Result<(), Failure> {
        crate::set::switch(&self.entry.file, &self.entry.id, true).await
    }
}
