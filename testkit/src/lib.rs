//! Test doubles for SPEAR's external capabilities.
//!
//! - [`MockProvider`]: a scripted provider, built as a `(provider, handle)`
//!   pair; the handle scripts tools, answers, latencies and failures and
//!   records every call.
//! - [`RecordingSink`]: an audit sink that keeps every record for assertions.
#![forbid(unsafe_code)]

mod mock;
mod recording;

pub use mock::{MockFailure, MockHandle, MockProvider};
pub use recording::RecordingSink;
