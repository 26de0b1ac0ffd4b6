//! A connector that hands sessions mock providers instead of starting kinds.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use spear_capabilities::{Error, Provider, kind::Connector, registry::ProviderEntry};

use crate::{MockFailure, MockProvider};

#[derive(Debug, Default)]
struct State {
    providers: HashMap<String, Arc<MockProvider>>,
    failures: HashMap<String, MockFailure>,
    latency: HashMap<String, Duration>,
    connects: Vec<String>,
    start_timeouts: Vec<Duration>,
}

/// Starts the registry's entries as the mock providers added to it, by id.
#[derive(Debug, Default)]
pub struct MockConnector {
    state: Mutex<State>,
}

impl MockConnector {
    /// An empty connector: every entry fails to start until a mock is added.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Serves `provider` for the entry with its id.
    pub fn add(&self, provider: Arc<MockProvider>) -> &Self {
        let id = spear_capabilities::Provider::id(&*provider).to_owned();
        self.lock().providers.insert(id, provider);
        self
    }

    /// Makes the start of provider `id` fail with `failure`.
    pub fn fail_start(&self, id: &str, failure: MockFailure) -> &Self {
        self.lock().failures.insert(id.to_owned(), failure);
        self
    }

    /// Makes the start of provider `id` take `latency`.
    pub fn start_latency(&self, id: &str, latency: Duration) -> &Self {
        self.lock().latency.insert(id.to_owned(), latency);
        self
    }

    /// The ids of every start so far, in order.
    pub fn connects(&self) -> Vec<String> {
        self.lock().connects.clone()
    }

    /// The start timeout each start so far was given, in order.
    pub fn start_timeouts(&self) -> Vec<Duration> {
        self.lock().start_timeouts.clone()
    }
}

#[async_trait]
impl Connector for MockConnector {
    async fn connect(
        &self,
        entry: &ProviderEntry,
        _: &Path,
        start_timeout: Duration,
    ) -> Result<Arc<dyn Provider>, Error> {
        let (latency, outcome) = {
            let mut s = self.lock();
            s.connects.push(entry.id.clone());
            s.start_timeouts.push(start_timeout);
            let outcome = match (s.failures.get(&entry.id), s.providers.get(&entry.id)) {
                (Some(f), _) => Err(f.to_error(&entry.id, "")),
                (None, Some(p)) => {
                    p.revive();
                    Ok(Arc::clone(p) as Arc<dyn Provider>)
                }
                (None, None) => Err(Error::Start {
                    provider: entry.id.clone(),
                    reason: "no mock provider was added for it".to_owned(),
                    stderr: String::new(),
                }),
            };
            (
                s.latency.get(&entry.id).copied().unwrap_or_default(),
                outcome,
            )
        };
        tokio::time::sleep(latency).await;
        outcome
    }
}
