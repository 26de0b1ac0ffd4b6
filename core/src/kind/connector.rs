//! How a session starts a provider from its registry entry.

use std::fmt::Debug;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::{ConnectRequest, Kinds};
use crate::error::Error;
use crate::provider::Provider;
use crate::registry::ProviderEntry;

/// Starts providers for a session. [`KindConnector`] uses provider kinds;
/// tests substitute their own (e.g. `spear_testkit::MockConnector`).
#[async_trait]
pub trait Connector: Debug + Send + Sync {
    /// Starts the provider of `entry`; `base_dir` is the capabilities file's
    /// folder; each request of the start itself may take `start_timeout`
    /// ([`ConnectRequest::start_timeout`]: the entry's timeout, unless the
    /// operator let starts run longer).
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
        start_timeout: Duration,
    ) -> Result<Arc<dyn Provider>, Error>;
}

/// Starts each entry with the kind its `kind` names, from a set of kinds
/// (a session's default is its registry's, [`crate::Registry::kinds`]).
#[derive(Debug, Clone)]
pub struct KindConnector {
    kinds: Kinds,
}

impl KindConnector {
    /// Starts entries with `kinds`.
    pub fn new(kinds: Kinds) -> Self {
        Self { kinds }
    }
}

#[async_trait]
impl Connector for KindConnector {
    async fn connect(
        &self,
        entry: &ProviderEntry,
        base_dir: &Path,
        start_timeout: Duration,
    ) -> Result<Arc<dyn Provider>, Error> {
        let kind = self.kinds.find(&entry.kind)?;
        (kind.connect)(
            ConnectRequest::new(
                entry.id.clone(),
                entry.settings.clone(),
                entry.timeout,
                base_dir,
            )
            .with_start_timeout(start_timeout),
        )
        .await
    }
}
