//! Two crates registering the same kind name is an error, never a silent pick.

use spear_capabilities::{Error, ProviderKind, find_kind, kinds};
use spear_testkit::kinds::{accept_any as ok, started_elsewhere as connect};

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
