//! Test doubles for SPEAR's external capabilities.
//!
//! - [`MockProvider`]: a scripted provider, built as a `(provider, handle)`
//!   pair; the handle scripts tools, answers, latencies and failures and
//!   records every call.
//! - [`MockConnector`]: starts a session's providers as mocks, by id.
//! - [`RecordingSink`]: an audit sink that keeps every record for assertions.
//! - [`conformance`]: checks every provider implementation must pass.
//! - [`fuzz`]: the bodies of the fuzz targets, for `cargo fuzz` and the
//!   corpus replay alike.
//! - [`procfs`]: what `/proc` says, to prove a server's processes are gone.
//! - [`schemas`]: schemas written to cost the gateway, for its budgets.
//! - [`ours`]: SPEAR's answer to a line a turn types, for tests that expect
//!   the line to be a `spear-capability` command.
//! - the binary `spear-fixture-server`: a scriptable MCP server over stdio
//!   (`spear-fixture-server --help` lists what it can be told to do).
#![forbid(unsafe_code)]

pub mod conformance;
mod connector;
pub mod fuzz;
pub mod kinds;
mod mock;
pub mod procfs;
mod recording;
pub mod schemas;
mod turns;

pub use connector::MockConnector;
pub use mock::{MockFailure, MockHandle, MockProvider};
pub use recording::RecordingSink;
pub use turns::ours;
