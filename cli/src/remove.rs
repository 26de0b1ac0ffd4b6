//! `remove`: an entry taken out of the registry from the command line, as
//! `codex mcp remove` does. The file is edited in place ([`crate::tree`])
//! by the locked, atomic writer ([`crate::file`]): every other entry keeps
//! its bytes.

use crate::error::Failure;
use crate::examples::{self, Example};
use crate::file::{self, Edited};
use crate::named::EntryArgs;
use crate::out::out;
use crate::tree;

/// The examples of `remove`.
pub(crate) const EXAMPLES: &[Example] = &[
    Example::new(
        "spear-capabilities remove notes",
        "Take the entry out of the file",
    ),
    Example::new(
        "spear-capabilities remove tracker --capabilities /etc/spear/capabilities.json",
        "The same in another file",
    ),
];

/// Remove an entry from the registry.
///
/// Every entry with the id goes (a refused one too); every other is kept
/// byte for byte, and the file is replaced atomically, one editor at a
/// time.
///
/// Exit status: 0 removed, 1 when no entry has the id, 2 when the file
/// cannot be read, parsed, locked or written, or a file named with
/// --capabilities does not exist.
#[derive(Debug, clap::Args)]
#[command(after_help = examples::help(EXAMPLES))]
pub(crate) struct Args {
    #[command(flatten)]
    entry: EntryArgs,
}

impl Args {
    /// Takes out every entry with the id, writes.
    pub(crate) async fn run(self) -> Result<(), Failure> {
        let path = self.entry.file.path();
        self.entry.file.named_file_exists()?;
        let removed = file::edit(&path, |current| {
            if current.created {
                return Err(Failure::Refused(format!(
                    "no capabilities file at {}, so no provider `{}` to remove",
                    path.display(),
                    self.entry.id
                )));
            }
            let indices = current.indices(&self.entry.id);
            if indices.is_empty() {
                return Err(no_such_provider(&self.entry.id, current));
            }
            let new_text = tree::without_entries(&current.text, &indices)
                .map_err(|e| current.cannot_edit(e))?;
            current.edited(&new_text)?;
            Ok(Edited::Write(new_text, indices.len()))
        })
        .await?;
        let how_many = if removed == 1 {
            String::new()
        } else {
            format!(" ({removed} entries had this id)")
        };
        out!(
            "removed `{}` from {}{how_many}",
            self.entry.id,
            path.display()
        )?;
        Ok(())
    }
}

/// The refusal of an edit of `id`, which no entry of the file has.
pub(crate) fn no_such_provider(id: &str, current: &file::Current) -> Failure {
    let known = current.ids();
    let known = if known.is_empty() {
        "it has none".to_owned()
    } else {
        format!("its providers: {}", known.join(", "))
    };
    Failure::Refused(format!(
        "no provider `{id}` in {}; {known}",
        current.path.display()
    ))
}
