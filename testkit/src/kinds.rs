//! Provider kinds for tests: [`MOCK`] (the kind of mock providers) and the
//! building blocks of kinds a test makes itself.
//!
//! ```
//! use spear_capabilities::kind::{Kinds, ProviderKind};
//! const PROC: ProviderKind = ProviderKind::new(
//!     "proc",
//!     &["command"],
//!     spear_testkit::kinds::accept_any,
//!     spear_testkit::kinds::started_elsewhere,
//! );
//! let kinds = Kinds::new([&PROC, &spear_testkit::kinds::MOCK]).unwrap();
//! assert_eq!(kinds.names(), ["mock", "proc"]);
//! ```

use spear_capabilities::{
    Error,
    kind::{ConnectFuture, ConnectRequest, EntryProblem, KindSettings, Kinds, ProviderKind},
};

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

/// The kind `mock`: accepts any settings and is started by the test's own
/// connector (a `MockConnector`).
pub const MOCK: ProviderKind = ProviderKind::new("mock", &[], accept_any, started_elsewhere);

/// The set of the one kind [`MOCK`], for registries of mock providers.
pub fn mock() -> Kinds {
    // One kind cannot be a duplicate.
    Kinds::new([&MOCK]).unwrap_or_else(|_| unreachable!("one kind"))
}
