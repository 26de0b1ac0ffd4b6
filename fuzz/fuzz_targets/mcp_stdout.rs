//! Fuzzes what a server writes on stdout: the bounded line reader (the
//! first two bytes pick its buffer and line bound), the JSON-RPC message
//! classification, the tool checks of a `tools` answer and the mapping of a
//! call result. Body: `spear_mcp_stdio::fuzzing::fuzz_stdout`.
//!
//! `cargo +nightly fuzz run mcp_stdout /tmp/mcp_stdout corpus/mcp_stdout` (new inputs go to the
//! first folder; `corpus/mcp_stdout` holds the committed seeds)

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    spear_mcp_stdio::fuzzing::fuzz_stdout(data);
});
