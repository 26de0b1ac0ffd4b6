//! A provider kind of its own, in its own crate: `calculator`, an in-process
//! provider (no process, no MCP). It proves that a new kind needs no change to
//! the core: a const [`ProviderKind`] record registered with `inventory`, a
//! `validate` for the entry's own keys, and a [`Provider`].
//!
//! An entry of this kind:
//!
//! ```json
//! {"id": "calc", "kind": "calculator", "max": 1000000, "scope": "global", "read": ["add", "multiply"]}
//! ```
//!
//! A program links it by naming the crate (`use spear_example_kind as _;`).
#![forbid(unsafe_code)]

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};
use spear_capabilities::{
    CallRequest, CallResult, Error, Provider, ProviderInfo, ToolList, ToolSpec,
    kind::{ConnectFuture, ConnectRequest, EntryProblem, KindSettings, ProviderKind},
};

/// The kind's name in `capabilities.json`.
pub const NAME: &str = "calculator";

/// The kind record.
pub const KIND: ProviderKind = ProviderKind::new(NAME, &["max"], validate, connect);

spear_capabilities::kind::inventory::submit! { KIND }

/// `max`, if given, must be a positive integer: the largest operand allowed.
fn validate(settings: &KindSettings) -> Vec<EntryProblem> {
    match settings.get("max") {
        None => Vec::new(),
        Some(v) if v.as_u64().is_some_and(|n| n > 0) => Vec::new(),
        Some(v) => vec![EntryProblem::new(
            "max",
            format!("must be a positive integer, found {v}"),
        )],
    }
}

fn connect(request: ConnectRequest) -> ConnectFuture {
    Box::pin(async move {
        let max = request
            .settings
            .get("max")
            .and_then(Value::as_u64)
            .unwrap_or(u64::from(u32::MAX));
        Ok(Arc::new(Calculator {
            id: request.provider,
            max,
        }) as Arc<dyn Provider>)
    })
}

/// The in-process provider.
#[derive(Debug)]
pub struct Calculator {
    id: String,
    max: u64,
}

#[async_trait]
impl Provider for Calculator {
    fn id(&self) -> &str {
        &self.id
    }

    fn info(&self) -> ProviderInfo {
        ProviderInfo::new(NAME).with_detail("max", self.max.to_string())
    }

    async fn list_tools(&self) -> Result<ToolList, Error> {
        let schema = json!({"type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"]});
        Ok(ToolList::new(vec![
            ToolSpec::new("add", schema.clone()).with_description("Adds two integers."),
            ToolSpec::new("multiply", schema).with_description("Multiplies two integers."),
        ]))
    }

    async fn call_tool(&self, request: CallRequest) -> Result<CallResult, Error> {
        let arg = |k: &str| request.arguments.get(k).and_then(Value::as_u64);
        let (Some(a), Some(b)) = (arg("a"), arg("b")) else {
            return Ok(CallResult::text("a and b must be non-negative integers").with_error(true));
        };
        if a > self.max || b > self.max {
            return Ok(
                CallResult::text(format!("operands above {} are refused", self.max))
                    .with_error(true),
            );
        }
        let value = match request.tool.as_str() {
            "add" => a.checked_add(b),
            "multiply" => a.checked_mul(b),
            other => {
                return Err(Error::CallError {
                    provider: self.id.clone(),
                    tool: other.to_owned(),
                    code: -32602,
                    message: "no such tool".to_owned(),
                });
            }
        };
        Ok(match value {
            Some(v) => CallResult::text(v.to_string()).with_structured(json!({"value": v})),
            None => CallResult::text("the result overflows").with_error(true),
        })
    }

    /// In-process: nothing of its own can fail between calls.
    fn failure(&self) -> Option<Error> {
        None
    }

    async fn shutdown(&self) -> Result<(), Error> {
        Ok(())
    }
}
