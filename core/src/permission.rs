//! Whether a WRITE may run: the provider's write policy and the session's
//! permission mode must both allow it.
//!
//! | policy \ mode | read-only | ask | auto |
//! |---|---|---|---|
//! | `refuse` | refused | refused | refused |
//! | `confirm` | refused | the person is asked | allowed |
//! | `allow` | refused | allowed | allowed |
//!
//! The gateway refuses a `refuse` policy itself, so no mode can widen it; the
//! mode decides the rest. SPEAR implements [`PermissionMode`] for its own
//! modes; [`ReadOnly`], [`Ask`] and [`Auto`] are the built-in ones.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use futures::future::BoxFuture;
use serde_json::{Map, Value};

use crate::audit::bounded_arguments;
use crate::framing::{block, json_text, one_line};
use crate::registry::WritePolicy;

#[cfg(doc)]
use crate::audit::MAX_AUDIT_ARGUMENT_BYTES;

/// A WRITE the turn wants to run, as shown to the person asked.
///
/// A person approves only what they can see: [`WriteRequest::question`]
/// names every argument with its value, each value bounded on its own, so
/// no argument can push another out of sight.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct WriteRequest {
    /// The capability id, `<provider>/<tool>`.
    pub capability: String,
    /// The arguments as one line of compact JSON (for logs), bounded as the
    /// audit trail bounds them: cut *as JSON* past
    /// [`MAX_AUDIT_ARGUMENT_BYTES`], then followed by a note of their whole
    /// size.
    pub arguments: String,
    /// Every argument, in order: its name and its value as compact JSON,
    /// each plain text and cut at [`WriteRequest::MAX_SHOWN_VALUE_CHARS`]
    /// with a note saying how much was left out.
    pub each: Vec<(String, String)>,
}

impl WriteRequest {
    /// How many characters of one argument's value a person is shown.
    pub const MAX_SHOWN_VALUE_CHARS: usize = 300;
    /// How many characters of one argument's name a person is shown.
    pub const MAX_SHOWN_NAME_CHARS: usize = 100;

    /// The request for `capability` with `arguments`.
    pub fn new(capability: impl Into<String>, arguments: &Map<String, Value>) -> Self {
        // Compact JSON has no raw line break, and no hidden character
        // survives json_text: `block` only cuts it, saying how much.
        let each = arguments
            .iter()
            .map(|(name, value)| {
                let value = block(&json_text(value), Self::MAX_SHOWN_VALUE_CHARS).into_owned();
                (one_line(name, Self::MAX_SHOWN_NAME_CHARS), value)
            })
            .collect();
        let (kept, cut) = bounded_arguments(arguments);
        let mut text = json_text(&kept);
        if let Some(whole) = cut {
            text.push_str(&format!(" … (cut: {whole} bytes in all)"));
        }
        Self {
            capability: capability.into(),
            arguments: text,
            each,
        }
    }

    /// The question a person is asked: the capability, then each argument
    /// on its own line.
    pub fn question(&self) -> String {
        let mut out = format!("Allow the WRITE {}", self.capability);
        if self.each.is_empty() {
            out.push_str(" with no arguments?");
            return out;
        }
        out.push_str(" with these arguments?");
        for (name, value) in &self.each {
            out.push_str(&format!("\n  {name}: {value}"));
        }
        out
    }
}

/// A session's permission mode, as far as WRITE capabilities go.
///
/// # Example
///
/// A mode of SPEAR's own: WRITEs of the capabilities the deployment lists
/// run, every other WRITE is refused (the gateway has already refused a
/// `refuse` policy, whatever the mode says).
///
/// ```
/// use std::collections::BTreeSet;
/// use std::sync::Arc;
///
/// use spear_capabilities::serde_json::Map;
/// use spear_capabilities::{
///     PermissionMode, SessionOptions, WritePolicy, WriteRequest, async_trait,
/// };
///
/// #[derive(Debug)]
/// struct Listed(BTreeSet<String>);
///
/// #[async_trait]
/// impl PermissionMode for Listed {
///     fn name(&self) -> &str {
///         "listed" // in messages and in the audit trail's `mode`
///     }
///
///     async fn allow_write(&self, _policy: WritePolicy, request: &WriteRequest) -> bool {
///         self.0.contains(&request.capability)
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let mode = Listed(BTreeSet::from(["notes/add_note".to_owned()]));
/// let add = WriteRequest::new("notes/add_note", &Map::new());
/// let wipe = WriteRequest::new("notes/drop_all", &Map::new());
/// assert!(mode.allow_write(WritePolicy::Confirm, &add).await);
/// assert!(!mode.allow_write(WritePolicy::Allow, &wipe).await);
/// // A session takes it as it takes a built-in mode.
/// let _options = SessionOptions::new("session-1", Arc::new(mode));
/// # }
/// ```
#[async_trait]
pub trait PermissionMode: Send + Sync {
    /// The mode's name for messages and the audit trail, e.g. `ask`.
    fn name(&self) -> &str;

    /// Whether `request` may run under a provider policy of `confirm` or
    /// `allow` (never called for `refuse`). The gateway records an approval
    /// as soon as this returns `true`.
    ///
    /// # Cancel safety
    /// The future is dropped when the turn's answer is dropped (the turn
    /// was cancelled): nothing is approved or run then.
    async fn allow_write(&self, policy: WritePolicy, request: &WriteRequest) -> bool;
}

/// Nothing is written: every WRITE is refused.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadOnly;

#[async_trait]
impl PermissionMode for ReadOnly {
    fn name(&self) -> &str {
        "read-only"
    }
    async fn allow_write(&self, _: WritePolicy, _: &WriteRequest) -> bool {
        false
    }
}

/// Writes run without asking, where the provider's policy allows them.
#[derive(Debug, Clone, Copy, Default)]
pub struct Auto;

#[async_trait]
impl PermissionMode for Auto {
    fn name(&self) -> &str {
        "auto"
    }
    async fn allow_write(&self, _: WritePolicy, _: &WriteRequest) -> bool {
        true
    }
}

/// The person is asked, through a callback, before a WRITE of a `confirm`
/// provider runs; an `allow` provider's WRITE runs without asking.
#[derive(Clone)]
pub struct Ask {
    ask: Arc<dyn Fn(WriteRequest) -> BoxFuture<'static, bool> + Send + Sync>,
}

impl Ask {
    /// Asks through `ask`, which answers `true` to let the WRITE run.
    pub fn new<F>(ask: F) -> Self
    where
        F: Fn(WriteRequest) -> BoxFuture<'static, bool> + Send + Sync + 'static,
    {
        Self { ask: Arc::new(ask) }
    }
}

impl fmt::Debug for Ask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ask").finish_non_exhaustive()
    }
}

#[async_trait]
impl PermissionMode for Ask {
    fn name(&self) -> &str {
        "ask"
    }
    async fn allow_write(&self, policy: WritePolicy, request: &WriteRequest) -> bool {
        match policy {
            WritePolicy::Allow => true,
            WritePolicy::Confirm => (self.ask)(request.clone()).await,
            WritePolicy::Refuse => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::MAX_AUDIT_ARGUMENT_BYTES;
    use serde_json::json;

    #[test]
    fn a_long_write_request_is_cut_as_the_audit_trail_cuts_it() {
        let Value::Object(long) = json!({"title": "t", "body": "x".repeat(10_000)}) else {
            unreachable!()
        };
        let request = WriteRequest::new("notes/add", &long);
        let whole = serde_json::to_vec(&long).expect("json").len();
        let (kept, _) = bounded_arguments(&long);
        assert_eq!(
            request.arguments,
            format!("{} … (cut: {whole} bytes in all)", json_text(&kept))
        );
        assert!(request.arguments.len() < MAX_AUDIT_ARGUMENT_BYTES + 40);
        assert_eq!(request.each[0].0, "body");
        assert!(
            request.each[0].1.chars().count() < 400,
            "{:?}",
            request.each[0]
        );
        let Value::Object(short) = json!({"text": "hi"}) else {
            unreachable!()
        };
        assert_eq!(
            WriteRequest::new("notes/add", &short).arguments,
            r#"{"text":"hi"}"#
        );
    }
}
