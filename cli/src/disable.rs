//! `disable`: an entry kept without being used (its `enabled` set to
//! `false`), changed in place as `set` changes one
//! ([`crate::set::switch`]).

use crate::error::Failure;
use crate::examples::{self, Example};
use crate::named::EntryArgs;

/// The examples of `disable`.
pub(crate) const EXAMPLES: &[Example] = &[
    Example::new(
        "spear-capabilities disable notes",
        "Keep the entry without using it",
    ),
    Example::new(
        "spear-capabilities disable tracker --capabilities /etc/spear/capabilities.json",
        "The same in another file",
    ),
];

/// Disable an entry: kept in the file, used by no turn.
///
/// Its `enabled` becomes false; nothing else changes. A disabled entry's
/// program that cannot run is only a warning, as `check` says.
///
/// Exit status: 0 disabled (or already so), 1 refused (no such entry, or
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
        crate::set::switch(&self.entry.file, &self.entry.id, false).await
    }
}
