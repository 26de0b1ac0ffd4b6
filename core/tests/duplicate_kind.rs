//! Two crates registering the same kind name is an error, never a silent pick.

use spear_capabilities::{
    ConnectFuture, ConnectRequest, EntryProblem, Error, KindSettings, ProviderKind, find_kind,
    kinds,
};

fn ok(_: &KindSettings) -> Vec<EntryProblem> {
    Vec::new()
}

fn connect(r: ConnectRequest) -> ConnectFuture {
    Box::pin(async move {
        Err(Error::Start {
            provider: r.provider,
            reason: "test".into(),
            stderr: String::new(),
        })
    })
}

spear_capabilities::inventory::submit! { ProviderKind { name: "twice", keys: &[], validate: ok, connect } }
spear_capabilities::inventory::submit! { ProviderKind { name: "twice", keys: &[], validate: ok, connect } }

#[test]
fn a_duplicate_kind_name_is_an_error() {
    let err = kinds().expect_err("duplicate");
    assert_eq!(
        err.to_string(),
        "provider kind `twice` is registered more than once"
    );
    assert!(matches!(
        find_kind("twice"),
        Err(Error::DuplicateKind { .. })
    ));
}
