//! Fuzzes the command lexer and recognizer: no panic, spans inside the line
//! and on character boundaries, top-level tokens in the line's order, and a
//! pre-filter that never changes an answer. The body is
//! `spear_testkit::fuzz::lexer`, which the corpus replay also runs on stable.
//!
//! `cargo +nightly fuzz run lexer -- -dict=fuzz/lexer.dict`

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| spear_testkit::fuzz::run("lexer", data));
