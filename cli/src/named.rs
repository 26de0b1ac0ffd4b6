//! The entry an edit names: its id (completed from the registry) and the
//! file it is in, as `remove`, `set`, `enable` and `disable` take them.

use clap::Args;
use clap_complete::ArgValueCandidates;

use crate::complete;
use crate::flags::RegistryArgs;

/// One entry of a capabilities file, by its id.
#[derive(Debug, Clone, Args)]
pub(crate) struct EntryArgs {
    /// The provider's id.
    #[arg(add = ArgValueCandidates::new(complete::provider_ids))]
    pub(crate) id: String,
    #[command(flatten)]
    pub(crate) file: RegistryArgs,
}
