//! The provider abstraction: what any kind of provider offers the gateway.
//!
//! These types are transport-neutral on purpose: an MCP server, an in-process
//! table of functions or an HTTP service all map onto them.

use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::Error;

mod call;

pub use call::{CallRequest, CallResult, Content, ResourceBody};

/// One tool as its provider describes it. Everything in it is untrusted text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolSpec {
    /// The tool's name, unique within its provider.
    pub name: String,
    /// A human-readable title, if the provider gives one.
    pub title: Option<String>,
    /// What the tool does, if the provider says.
    pub description: Option<String>,
    /// The JSON Schema of the tool's arguments (an object schema).
    pub input_schema: Value,
    /// The JSON Schema its structured results must match, if it declares
    /// one (MCP's `outputSchema`): the gateway checks them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Whether the provider says the tool only reads (MCP's
    /// `annotations.readOnlyHint`), if it says: the operator's to read
    /// (`get --start` suggests adopting it). It never makes a class and a
    /// turn is never shown it: a tool is READ only when its entry's `read`
    /// names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool declares an output schema its kind could not read as a
    /// JSON value (nested past what its parser reads, say): why. The tool
    /// stays; the gateway leaves its results unchecked and says so once,
    /// as for any output schema it cannot use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreadable_output_schema: Option<String>,
}

impl ToolSpec {
    /// A tool with a name and an argument schema, and no title or description.
    pub fn new(name: impl Into<String>, input_schema: Value) -> Self {
        Self {
            name: name.into(),
            title: None,
            description: None,
            input_schema,
            output_schema: None,
            read_only_hint: None,
            unreadable_output_schema: None,
        }
    }

    /// Sets what the provider says of the tool only reading (never its
    /// class: [`ToolSpec::read_only_hint`]).
    pub fn with_read_only_hint(mut self, read_only: bool) -> Self {
        self.read_only_hint = Some(read_only);
        self
    }

    /// Sets the schema its structured results must match.
    pub fn with_output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// Says the tool declares an output schema that could not be read, and
    /// why ([`ToolSpec::unreadable_output_schema`]).
    pub fn with_unreadable_output_schema(mut self, reason: impl Into<String>) -> Self {
        self.unreadable_output_schema = Some(reason.into());
        self
    }

    /// Sets the title.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
}

/// A tool that cannot be used, with the reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RejectedTool {
    /// The tool's name as offered (possibly truncated; untrusted text).
    pub name: String,
    /// Why it was left out.
    pub reason: String,
}

impl RejectedTool {
    /// A rejected tool and why.
    pub fn new(name: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            reason: reason.into(),
        }
    }
}

/// What a provider offers: its tools as offered, and the entries it could
/// not read as a tool at all.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolList {
    /// The tools, in the provider's order, not yet admitted: the gateway
    /// checks names, duplicates and schemas (the gateway's admission).
    pub tools: Vec<ToolSpec>,
    /// Entries that are not a tool at all (not an object, no name), with the
    /// reason; the gateway records them with its own rejections.
    pub rejected: Vec<RejectedTool>,
    /// The provider declares that it offers no tools at all (an MCP server
    /// without the `tools` capability), which is not the same as a listing
    /// that came back empty: it is a provider with no capabilities, and the
    /// gateway says so in those words.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub declares_no_tools: bool,
}

impl ToolList {
    /// A list of usable tools with nothing rejected.
    pub fn new(tools: Vec<ToolSpec>) -> Self {
        Self {
            tools,
            rejected: Vec::new(),
            declares_no_tools: false,
        }
    }

    /// The list of a provider that declares it offers no tools.
    pub fn declared_none() -> Self {
        Self {
            declares_no_tools: true,
            ..Self::default()
        }
    }

    /// Adds the tools that were left out.
    pub fn with_rejected(mut self, rejected: Vec<RejectedTool>) -> Self {
        self.rejected = rejected;
        self
    }
}

/// Facts about a running provider, for the deployment's operator only.
///
/// A turn is never shown any of it: server names, versions and process ids
/// are the deployment's own.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ProviderInfo {
    /// The provider kind's name.
    pub kind: String,
    /// Kind-specific facts as `(name, value)` pairs, e.g. server name and pid.
    pub details: Vec<(String, String)>,
}

impl ProviderInfo {
    /// Info for a provider of `kind` with no details.
    pub fn new(kind: impl Into<String>) -> Self {
        Self {
            kind: kind.into(),
            details: Vec::new(),
        }
    }

    /// Adds one fact.
    pub fn with_detail(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.details.push((name.into(), value.into()));
        self
    }
}

/// A started provider: a source of tools.
///
/// The core only ever holds `Arc<dyn Provider>`.
///
/// # Contract
///
/// Who times what, so that no rule is kept by two timers:
///
/// - **A call's deadline is its caller's.** The gateway bounds each
///   [`Provider::call_tool`] by the entry's `timeout` (and a second's grace,
///   its own checks included) and drops the call's future when it passes. A
///   kind sets no deadline of its own on a call.
/// - **A start's own requests are the kind's.** Inside
///   [`ProviderKind::connect`](crate::kind::ProviderKind::connect) and
///   [`Provider::list_tools`], each request the caller cannot see into (an
///   MCP server's `initialize`, each page of its listing) is bounded by the
///   kind, by [`ConnectRequest::start_timeout`](crate::kind::ConnectRequest::start_timeout).
///   The caller bounds the start as a whole (its start budget) and may drop
///   its future.
///
/// What a dropped future means:
///
/// - Dropping a `call_tool` future abandons **that call only**: the kind
///   tells its server when it can (MCP: `notifications/cancelled`), forgets
///   the call's answer when it comes, and stays usable: the next call is
///   answered at once, and [`Provider::failure`] does not report it.
/// - Dropping a `list_tools` future abandons the listing; dropping a
///   `connect` future releases what it started.
///
/// `spear_testkit::conformance` holds every kind to this
/// (`a_call_has_no_deadline_of_the_kinds_own`,
/// `a_dropped_call_is_abandoned_alone`).
///
/// # Example
///
/// A provider answered in the process, with one tool. A kind's `connect`
/// returns it as an `Arc<dyn Provider>` ([`ProviderKind`](crate::kind::ProviderKind);
/// `examples/custom-kind/` is a whole kind), and `spear_testkit::conformance`
/// is the suite every provider should pass.
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicBool, Ordering};
///
/// use spear_capabilities::serde_json::{Map, json};
/// use spear_capabilities::{
///     CallRequest, CallResult, Error, Provider, ProviderInfo, ToolList, ToolSpec, async_trait,
/// };
///
/// #[derive(Debug, Default)]
/// struct Capitals {
///     stopped: AtomicBool,
/// }
///
/// #[async_trait]
/// impl Provider for Capitals {
///     fn id(&self) -> &str {
///         "capitals"
///     }
///
///     fn info(&self) -> ProviderInfo {
///         ProviderInfo::new("capitals").with_detail("version", "1")
///     }
///
///     async fn list_tools(&self) -> Result<ToolList, Error> {
///         let schema = json!({"type": "object", "required": ["text"],
///                             "properties": {"text": {"type": "string"}}});
///         let upper = ToolSpec::new("upper", schema).with_description("The text in capitals.");
///         Ok(ToolList::new(vec![upper]))
///     }
///
///     async fn call_tool(&self, request: CallRequest) -> Result<CallResult, Error> {
///         if self.stopped.load(Ordering::Acquire) {
///             return Err(Error::ShutDown { provider: self.id().to_owned() });
///         }
///         // The gateway has checked the arguments against the schema.
///         let text = request.arguments.get("text").and_then(|t| t.as_str());
///         Ok(CallResult::text(text.unwrap_or_default().to_uppercase()))
///     }
///
///     fn failure(&self) -> Option<Error> {
///         None // nothing of its own (a process, a connection) can fail
///     }
///
///     async fn shutdown(&self) -> Result<(), Error> {
///         self.stopped.store(true, Ordering::Release);
///         Ok(())
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Error> {
/// let provider: Arc<dyn Provider> = Arc::new(Capitals::default());
/// assert_eq!(provider.list_tools().await?.tools[0].name, "upper");
/// let mut arguments = Map::new();
/// arguments.insert("text".into(), json!("ship it"));
/// let result = provider.call_tool(CallRequest::new("upper", arguments)).await?;
/// assert_eq!(result, CallResult::text("SHIP IT"));
/// provider.shutdown().await?;
/// # Ok(())
/// # }
/// ```
#[async_trait]
pub trait Provider: Debug + Send + Sync + 'static {
    /// The provider's registered id.
    fn id(&self) -> &str;

    /// Facts for the operator (kind, version, process), never shown to a turn.
    fn info(&self) -> ProviderInfo;

    /// Lists every tool the provider offers, following all pages: what it
    /// offered, as it offered it. The gateway decides which are usable
    /// (names, duplicates, schemas: its admission); a kind reports in
    /// [`ToolList::rejected`] only entries it could not read as a tool at all.
    ///
    /// # Errors
    /// Any [`Error`] whose [`Error::unavailable_reason`] is set makes the
    /// provider unavailable to the session.
    ///
    /// # Cancel safety
    /// Dropping the future abandons the listing; the provider stays usable.
    async fn list_tools(&self) -> Result<ToolList, Error>;

    /// Calls one tool.
    ///
    /// # Errors
    /// [`Error::CallError`] when the provider answered this call with an
    /// error; any other error means the provider itself failed.
    ///
    /// # Cancel safety
    /// Dropping the future abandons this call only (see the contract above).
    async fn call_tool(&self, request: CallRequest) -> Result<CallResult, Error>;

    /// Why the provider has failed, if it knows without being asked: its
    /// process exited, its connection broke, the runtime that ran its I/O
    /// ended. A session asks before each turn, so a provider that died
    /// between turns is reported (and started again) instead of offered.
    /// `None` for a provider with nothing of its own that can fail.
    fn failure(&self) -> Option<Error>;

    /// Stops the provider and releases everything it holds. Later calls fail
    /// with [`Error::ShutDown`]. Calling it twice is harmless.
    ///
    /// # Errors
    /// Only when the provider could not be stopped cleanly; it is still
    /// released as far as possible.
    ///
    /// # Cancel safety
    /// Not cancel-safe: a dropped shutdown may leave the provider half-stopped
    /// (dropping the provider then finishes the job).
    async fn shutdown(&self) -> Result<(), Error>;
}

macro_rules! forward_provider {
    ($ty:ty) => {
        #[deny(clippy::missing_trait_methods)]
        #[async_trait]
        impl<T: Provider + ?Sized> Provider for $ty {
            fn id(&self) -> &str {
                (**self).id()
            }
            fn info(&self) -> ProviderInfo {
                (**self).info()
            }
            async fn list_tools(&self) -> Result<ToolList, Error> {
                (**self).list_tools().await
            }
            // The inner future as it is, not boxed again in a future of
            // this impl's own: calls go through `Arc<dyn Provider>`, and a
            // second allocation and poll layer on every call is measurable.
            fn call_tool<'life0, 'async_trait>(
                &'life0 self,
                request: CallRequest,
            ) -> Pin<Box<dyn Future<Output = Result<CallResult, Error>> + Send + 'async_trait>>
            where
                'life0: 'async_trait,
                Self: 'async_trait,
            {
                (**self).call_tool(request)
            }
            fn failure(&self) -> Option<Error> {
                (**self).failure()
            }
            async fn shutdown(&self) -> Result<(), Error> {
                (**self).shutdown().await
            }
        }
    };
}

forward_provider!(Arc<T>);
forward_provider!(Box<T>);

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync + ?Sized>() {}

    #[test]
    fn dyn_provider_is_object_safe_send_and_sync() {
        assert_send_sync::<dyn Provider>();
        assert_send_sync::<Arc<dyn Provider>>();
        fn _takes_boxed(p: Box<dyn Provider>) -> Arc<dyn Provider> {
            Arc::new(p)
        }
    }

    #[test]
    fn joined_text_keeps_only_text_blocks() {
        let r = CallResult::new(vec![
            Content::text("a"),
            Content::Image {
                mime_type: "image/png".into(),
                data: "AAAA".into(),
            },
            Content::text("b"),
        ]);
        assert_eq!(r.joined_text(), "a\nb");
    }

    #[test]
    fn content_serialises_with_a_type_tag() {
        let v = serde_json::to_value(Content::text("hi")).expect("serialises");
        assert_eq!(v, serde_json::json!({"type": "text", "text": "hi"}));
    }
}
