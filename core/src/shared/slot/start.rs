//! A provider's start: the kind's `connect`, the listing, the admission of
//! its tools, each audited; and its stop in the background.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::time::Instant;

use super::super::Shared;
use super::super::state::Ready;
use super::Slot;
use crate::admission::admit;
use crate::audit::AuditEvent;
use crate::error::Error;
use crate::framing::one_line;
use crate::provider::Provider;

/// Connects `slot`'s provider, lists its tools and admits the usable ones.
/// Each request is bounded by the provider itself; the whole start by its
/// caller's budget.
pub(super) async fn start(inner: &Shared, slot: &Slot) -> Result<Ready, Error> {
    let entry = &slot.entry;
    let began = Instant::now();
    let start_timeout = inner.options.start_timeout(entry.timeout);
    let provider = inner
        .connector
        .connect(entry, inner.registry.base_dir(), start_timeout)
        .await?;
    slot.connected();
    let listed = match provider.list_tools().await {
        Ok(list) => list,
        Err(e) => {
            let _ = provider.shutdown().await;
            return Err(e);
        }
    };
    let declares_no_tools = listed.declares_no_tools;
    // Vetting compiles the listing's patterns: bounded work, but off the
    // runtime's I/O threads.
    let owned = entry.clone();
    let admission = match tokio::task::spawn_blocking(move || admit(&owned, listed)).await {
        Ok(admission) => admission,
        Err(_) => {
            let _ = provider.shutdown().await;
            return Err(Error::Protocol {
                provider: entry.id.clone(),
                message: "its tool list could not be vetted".to_owned(),
                stderr: String::new(),
            });
        }
    };
    for rejected in &admission.rejected {
        inner.audit.emit(AuditEvent::ToolRejected {
            provider: entry.id.clone(),
            tool: one_line(&rejected.name, 200),
            reason: one_line(&rejected.reason, 500),
        });
    }
    for (tool, reason) in &admission.unchecked_outputs {
        inner.audit.emit(AuditEvent::OutputUnchecked {
            provider: entry.id.clone(),
            tool: one_line(tool, 200),
            reason: one_line(reason, 500),
        });
    }
    for tool in &admission.read_not_offered {
        inner.audit.emit(AuditEvent::ReadNotOffered {
            provider: entry.id.clone(),
            tool: one_line(tool, 200),
        });
    }
    inner.audit.emit(AuditEvent::ProviderStarted {
        provider: entry.id.clone(),
        tools: admission.tools.len(),
        rejected_tools: admission.rejected.len(),
        duration_ms: millis(began.elapsed()),
    });
    Ok(Ready {
        provider,
        tools: admission.tools,
        started_in: began.elapsed(),
        declares_no_tools,
        ended: OnceLock::new(),
    })
}

/// Shuts `provider` down in the background, recording the stop.
pub(super) fn stop(inner: &Shared, id: &str, provider: Arc<dyn Provider>) {
    let (audit, id) = (inner.audit.clone(), id.to_owned());
    inner.stop_in_background(async move {
        let error = provider.shutdown().await.err().map(|e| e.to_string());
        audit.emit(AuditEvent::ProviderStopped {
            provider: id,
            error,
        });
    });
}

/// `d` in whole milliseconds, for audit records.
pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
