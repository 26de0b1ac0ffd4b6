//! How a session starts a provider from its registry entry.

use std::fmt::Debug;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;

use crate::kind::{ConnectRequest, find_kind};
use crate::registry::ProviderEntry;
use crate::{Error, Provider};

/// Starts providers for a session. [`KindConnector`] uses the linked kinds;
/// tests substitute their own (e.g. `spear_testkit::MockConnector`).
#[async_trait]
pub trait Connector: Debug + Send + Sync {
    /// Starts the provider of `entry`; `base_dir` is the capabilities file's
    /// folder.
    ///
    /// # Errors
    /// When the provider cannot be started.
    ///
    /// # Cancel safety
    /// Dropping the future must not leave anything running.
    async fn connect(
        &self,
        entry: &ProviderEntry,
        base_dir: &Path,
    ) -> Result<Arc<dyn Provider>, Error>;
}

/// Starts each entry with the kind its `kind` names.
#[derive(Debug, Clone, Copy, Default)]
pub struct KindConnector;

#[async_trait]
impl Connector for KindConnector {
    async fn connect(
        &self,
        entry: &ProviderEntry,
        base_dir: &Path,
    ) -> Result<Arc<dyn Provider>, Error> {
        let kind = find_kind(&entry.kind)?;
        (kind.connect)(ConnectRequest::new(
            entry.id.clone(),
            entry.settings.clone(),
            entry.timeout,
            base_dir,
        ))
        .await
    }
}
