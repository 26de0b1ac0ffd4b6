//! `mcp-stdio`: SPEAR's provider kind for MCP servers over stdio.
//!
//! It speaks MCP 2025-06-18 (initialize, tools/list, tools/call) to a child
//! process over its stdin and stdout, and registers itself with the core as
//! the kind `mcp-stdio`, the kind of every entry that names none.
#![forbid(unsafe_code)]

pub mod config;

use spear_capabilities::{ConnectFuture, ConnectRequest, Error, ProviderKind};

/// The kind's name in `capabilities.json`.
pub const NAME: &str = "mcp-stdio";

/// The kind record this crate registers.
pub const KIND: ProviderKind = ProviderKind {
    name: NAME,
    keys: config::KEYS,
    validate: config::validate,
    connect,
};

spear_capabilities::inventory::submit! { KIND }

fn connect(request: ConnectRequest) -> ConnectFuture {
    Box::pin(async move {
        Err(Error::Start {
            provider: request.provider,
            reason: "the mcp-stdio client is not built yet".to_owned(),
            stderr: String::new(),
        })
    })
}
