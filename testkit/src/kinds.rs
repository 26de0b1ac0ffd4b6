//! Building blocks for provider kinds that tests register themselves.
//!
//! ```ignore
//! spear_capabilities::inventory::submit! {
//!     ProviderKind { name: "mock", keys: &[], validate: spear_testkit::kinds::accept_any,
//!                    connect: spear_testkit::kinds::started_elsewhere }
//! }
//! ```

use spear_capabilities::{ConnectFuture, ConnectRequest, EntryProblem, Error, KindSettings};

/// A `validate` that accepts every setting.
pub fn accept_any(_: &KindSettings) -> Vec<EntryProblem> {
    Vec::new()
}

/// A `connect` for kinds whose providers a test starts some other way (a
/// `MockConnector`): it always fails to start, saying so.
pub fn started_elsewhere(request: ConnectRequest) -> ConnectFuture {
    Box::pin(async move {
        Err(Error::Start {
            provider: request.provider,
            reason: "this test kind is started by the test's own connector".into(),
            stderr: String::new(),
        })
    })
}
