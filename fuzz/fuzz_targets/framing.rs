//! Fuzzes the sanitiser and the frame: nothing hidden survives, one line is
//! one bounded line, the frame cannot be closed from inside, JSON text stays
//! JSON. Body: `spear_testkit::fuzz::framing`.
//!
//! `cargo +nightly fuzz run framing /tmp/framing corpus/framing` (new inputs go to the
//! first folder; `corpus/framing` holds the committed seeds)

#![no_main]

use spear_providers as _;

libfuzzer_sys::fuzz_target!(|data: &[u8]| spear_testkit::fuzz::run("framing", data));
