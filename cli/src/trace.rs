//! `--trace FILE`: every JSON-RPC line sent to and received from each
//! server, one JSON object a line (`time` in milliseconds since the epoch,
//! `provider`, `direction`, `line`, and `cut_at_bytes` when the line was
//! cut), written from the `tracing` events mcp-stdio emits on its
//! [`WIRE`] target: the library writes no file of its own.
//!
//! The file holds what the servers are sent and say, arguments and results
//! included, so it is created readable by its owner only (0600), as the
//! registry is.

use std::fs::{File, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::json;
use spear_mcp_stdio::WIRE;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

/// The layer that writes the trace to FILE (created, or emptied, 0600).
pub(crate) fn layer<S>(path: &Path) -> io::Result<impl Layer<S> + Send + Sync>
where
    S: tracing::Subscriber + for<'span> LookupSpan<'span>,
{
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    // A file that was there keeps its mode when opened: narrowed too.
    file.set_permissions(Permissions::from_mode(0o600))?;
    let wire = Targets::new().with_target(WIRE, tracing::Level::TRACE);
    Ok(Trace(Mutex::new(file)).with_filter(wire))
}

struct Trace(Mutex<File>);

impl<S: tracing::Subscriber> Layer<S> for Trace {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let time = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let mut record = json!({
            "time": time,
            "provider": fields.provider,
            "direction": fields.direction,
            "line": fields.line,
        });
        if let Some(cut) = fields.cut_at_bytes {
            record["cut_at_bytes"] = json!(cut);
        }
        let mut line = record.to_string();
        line.push('\n');
        // One write a record, so that records never interleave.
        let mut file = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let _ = file.write_all(line.as_bytes());
    }
}

/// The fields of one [`WIRE`] event.
#[derive(Default)]
struct Fields {
    provider: String,
    direction: String,
    line: String,
    cut_at_bytes: Option<u64>,
}

impl tracing::field::Visit for Fields {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        match field.name() {
            "provider" => self.provider = value.to_owned(),
            "direction" => self.direction = value.to_owned(),
            "line" => self.line = value.to_owned(),
            _ => {}
        }
    }

    fn record_u64(&mut self, field: &tracing::field::Field, value: u64) {
        if field.name() == "cut_at_bytes" {
            self.cut_at_bytes = Some(value);
        }
    }

    fn record_debug(&mut self, _: &tracing::field::Field, _: &dyn std::fmt::Debug) {}
}
