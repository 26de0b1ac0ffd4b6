//! An audit sink that keeps every record.

use std::sync::{Arc, Mutex};

use spear_capabilities::{
    Audit,
    audit::{AuditRecord, AuditSink},
};

/// Keeps every audit record in memory, in order.
#[derive(Debug, Default)]
pub struct RecordingSink {
    records: Mutex<Vec<AuditRecord>>,
}

impl RecordingSink {
    /// A new, empty sink and an [`Audit`] handle writing to it.
    pub fn new() -> (Arc<RecordingSink>, Audit) {
        let sink = Arc::new(RecordingSink::default());
        let audit = Audit::new(sink.clone());
        (sink, audit)
    }

    /// Every record so far.
    pub fn records(&self) -> Vec<AuditRecord> {
        self.lock().clone()
    }

    /// Every record so far as JSON, as a JSON Lines sink would write it.
    pub fn json(&self) -> Vec<serde_json::Value> {
        self.lock()
            .iter()
            .map(|r| serde_json::to_value(r).unwrap_or_default())
            .collect()
    }

    /// The event names so far, e.g. `["provider_registered", ...]`.
    pub fn names(&self) -> Vec<String> {
        self.json()
            .iter()
            .map(|v| v["event"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    /// The records of the events named `name`, as JSON.
    pub fn named(&self, name: &str) -> Vec<serde_json::Value> {
        self.json()
            .into_iter()
            .filter(|v| v["event"] == name)
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<AuditRecord>> {
        self.records.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl AuditSink for RecordingSink {
    fn record(&self, record: AuditRecord) -> Result<(), spear_capabilities::audit::AuditError> {
        self.lock().push(record);
        Ok(())
    }
}
