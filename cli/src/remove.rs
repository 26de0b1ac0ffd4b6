//! `remove`: an entry taken out of the registry from the command line, as
//! `codex mcp remove` does. The file is edited in place
//! ([`crate::file`]): every other entry keeps its bytes, and the write is
//! atomic.

use crate::error::Failure;
use crate::file;
use crate::flags::RegistryArgs;
use crate::out::out;

/// Remove an entry from the registry.
///
/// Every entry with the id goes; every other is kept byte for byte, and
/// the file is replaced atomically.
///
/// Exit status: 0 removed, 1 when no entry has the id, 2 when the file
/// cannot be read, parsed or written, or a file named with
/// --capabilities does not exist.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  spear-capabilities remove notes
  spear-capabilities remove tracker --capabilities /etc/spear/capabilities.json")]
pub(crate) struct Args {
    /// The provider's id.
    id: String,
    #[command(flatten)]
    file: RegistryArgs,
}

impl Args {
    /// Takes out every entry with the id, writes.
    pub(crate) async fn run(self) -> Result<(), Failure> {
        let path = self.file.path();
        self.file.named_file_exists()?;
        let Some((text, _)) = file::read(&path)? else {
            return Err(Failure::Refused(format!(
                "no capabilities file at {}, so no provider `{}` to remove",
                path.display(),
                self.id
            )));
        };
        let (new_text, removed) =
            file::without_entry(&text, &self.id).map_err(file::cannot_edit(&path))?;
        if removed == 0 {
            let known: Vec<String> = file::ids(&text).into_iter().flatten().collect();
            let known = if known.is_empty() {
                "it has none".to_owned()
            } else {
                format!("its providers: {}", known.join(", "))
            };
            return Err(Failure::Refused(format!(
                "no provider `{}` in {}; {known}",
                self.id,
                path.display()
            )));
        }
        file::edited(&new_text, &path)?;
        file::write(&path, &new_text)?;
        let how_many = if removed == 1 {
            String::new()
        } else {
            format!(" ({removed} entries had this id)")
        };
        out!("removed `{}` from {}{how_many}", self.id, path.display())?;
        Ok(())
    }
}
