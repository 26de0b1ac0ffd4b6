//! `enable`: an entry a turn may use again (its `enabled` set to `true`),
//! changed in place as `set` changes one ([`crate::set::change`]).

use serde_json::json;

use crate::error::Failure;
use crate::flags::RegistryArgs;
use crate::set::{Verb, change};
use crate::tree::Changes;

/// Enable an entry: a turn whose scope and task it covers gets it again.
///
/// Its `enabled` becomes true; nothing else changes. As `add`, an entry
/// that a turn would start must have a program that can run.
///
/// Exit status: 0 enabled (or already so), 1 refused (no such entry, or
/// the entry would be refused; the file is left as it was), 2 when the
/// file cannot be read, parsed, locked or written.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  spear-capabilities enable notes
  spear-capabilities enable tracker --capabilities /etc/spear/capabilities.json")]
pub(crate) struct Args {
    /// The provider's id.
    id: String,
    #[command(flatten)]
    file: RegistryArgs,
}

impl Args {
    pub(crate) async fn run(self) -> Result<(), Failure> {
        let changes = Changes {
            keys: vec![("enabled", json!(true))],
            ..Changes::default()
        };
        change(&self.file, &self.id, &changes, Verb::Enable).await
    }
}
