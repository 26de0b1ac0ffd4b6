//! Fuzzes the capabilities-file parser with every linked kind: no panic,
//! registered ids valid and unique, refusals with a reason, syntax errors
//! with a real position. Body: `spear_testkit::fuzz::registry`.
//!
//! `cargo +nightly fuzz run registry /tmp/registry corpus/registry` (new inputs go to the
//! first folder; `corpus/registry` holds the committed seeds)

#![no_main]

use spear_providers as _;

libfuzzer_sys::fuzz_target!(|data: &[u8]| spear_testkit::fuzz::run("registry", data));
