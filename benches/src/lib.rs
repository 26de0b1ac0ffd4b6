//! Benchmarks of SPEAR's external capabilities, side by side with the floor
//! (blocking pipe I/O, no framework) and the official Rust MCP SDK `rmcp`.
//!
//! Every client here talks to the same server, `spear-fixture-server` from
//! `spear-testkit`, so only the client differs. The bench binaries in
//! `benches/benches/` drive them; `docs/performance.md` has the figures and
//! the command that reproduces them.
//!
//! This crate is never part of SPEAR: it exists so that `rmcp` and the bench
//! code stay out of the other crates' builds.
#![forbid(unsafe_code)]

pub mod fixture;
pub mod floor;
pub mod floor_async;
pub mod floor_provider;
pub mod official;
pub mod ours;
pub mod stats;
pub mod system;
pub mod yardstick;

/// The text every echo call sends and expects back: 14 bytes, the shared
/// yardstick's text, so that the rows both measure carry the same load.
pub const ECHO_TEXT: &str = "hello, fixture";
