//! `mcp-stdio`: SPEAR's provider kind for MCP servers over stdio, the kind
//! of every entry that names none.
//!
//! It speaks MCP 2025-06-18 (initialize, tools/list, tools/call) to a child
//! process, refuses any other version, follows `tools/list` pages with caps
//! and a cursor-cycle guard, bounds each line while reading it, and ends the
//! server's whole process group on shutdown and drop. Selection, exposure
//! and framing are the core's. Unsafe code is denied but for the spawn
//! (`process/spawn.rs`, with its safety argument).
#![deny(unsafe_code)]

pub mod config;
// For the fuzz crate and its corpus replay only: not API.
#[doc(hidden)]
pub mod fuzzing;

mod codec;
mod connection;
mod content;
mod error;
mod outbox;
mod process;
mod program;
mod provider;
mod tools;

use std::sync::Arc;

use spear_capabilities::Provider;
use spear_capabilities::kind::{ConnectFuture, ConnectRequest, ProviderKind};

pub use codec::MAX_LINE;
pub use config::ServerConfig;
pub use connection::{Stats, TRACE_LINE_KEPT, WIRE};
pub use outbox::MAX_UNREAD;
pub use process::STDERR_KEPT;
pub use provider::{DEFAULT_TIMEOUT, McpProvider, Options, PROTOCOL_VERSION};
pub use tools::{MAX_LISTING_BYTES, MAX_PAGES, MAX_TOOLS};

/// The kind's name in `capabilities.json`.
pub const NAME: &str = "mcp-stdio";

/// The kind record this crate registers.
pub const KIND: ProviderKind = ProviderKind::new(
    NAME,
    config::KEYS,
    |s| ServerConfig::from_settings(s).err().unwrap_or_default(),
    connect,
)
.with_check(program::check);

spear_capabilities::kind::inventory::submit! { KIND }

fn connect(request: ConnectRequest) -> ConnectFuture {
    Box::pin(async move {
        let id = &request.provider;
        let config = ServerConfig::from_settings(&request.settings).map_err(|problems| {
            let reason: Vec<String> = problems.iter().map(ToString::to_string).collect();
            error::Failure::Start(reason.join("; ")).into_error(id, "", String::new())
        })?;
        // Calls are timed by their caller; the start's requests here.
        let options = Options::default().with_timeout(request.start_timeout);
        let provider = McpProvider::start(id, &config, &request.base_dir, options);
        Ok(Arc::new(provider.await?) as Arc<dyn Provider>)
    })
}
