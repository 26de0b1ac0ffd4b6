//! Test doubles for SPEAR's external capabilities.
//!
//! - [`MockProvider`]: a scripted provider, built as a `(provider, handle)`
//!   pair; the handle scripts tools, answers, latencies and failures and
//!   records every call.
//! - [`MockConnector`]: starts a session's providers as mocks, by id.
//! - [`RecordingSink`]: an audit sink that keeps every record for assertions.
#![forbid(unsafe_code)]

mod connector;
mod mock;
mod recording;

pub use connector::MockConnector;
pub use mock::{MockFailure, MockHandle, MockProvider};
pub use recording::RecordingSink;
