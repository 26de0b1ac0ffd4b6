//! A scripted provider and the handle that scripts it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::json;
use spear_capabilities::{
    CallRequest, CallResult, Error, Provider, ProviderInfo, RejectedTool, ToolList, ToolSpec,
};

/// A failure the mock can be told to produce.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MockFailure {
    /// [`Error::Start`].
    Start,
    /// [`Error::Timeout`] (immediately; add latency to make it slow as well).
    Timeout,
    /// [`Error::Crashed`].
    Crash,
    /// [`Error::Protocol`].
    Protocol,
    /// [`Error::CallError`] with this code and message.
    Reject(i64, String),
}

impl MockFailure {
    pub(crate) fn to_error(&self, provider: &str, tool: &str) -> Error {
        let provider = provider.to_owned();
        match self {
            MockFailure::Start => Error::Start {
                provider,
                reason: "mock told not to start".into(),
                stderr: "mock stderr".into(),
            },
            MockFailure::Timeout => Error::Timeout {
                provider,
                after: Duration::from_secs(1),
                stderr: String::new(),
            },
            MockFailure::Crash => Error::Crashed {
                provider,
                status: "exit status: 70".into(),
                stderr: "mock crashed".into(),
            },
            MockFailure::Protocol => Error::Protocol {
                provider,
                message: "mock broke the protocol".into(),
                stderr: String::new(),
            },
            MockFailure::Reject(code, message) => Error::CallError {
                provider,
                tool: tool.to_owned(),
                code: *code,
                message: message.clone(),
            },
        }
    }
}

#[derive(Debug, Default)]
struct State {
    tools: Vec<ToolSpec>,
    rejected: Vec<RejectedTool>,
    answers: HashMap<String, Result<CallResult, MockFailure>>,
    latency: Duration,
    tool_latency: HashMap<String, Duration>,
    list_failure: Option<MockFailure>,
    /// It declares it offers no tools at all ([`ToolList::declared_none`]).
    declares_no_tools: bool,
    calls: Vec<CallRequest>,
    lists: usize,
    shutdowns: usize,
    /// Shut down, until the connector starts it again.
    down: bool,
    /// A failure it reports without being asked ([`Provider::failure`]).
    failure: Option<MockFailure>,
}

/// A provider whose every answer is scripted through its [`MockHandle`].
///
/// A call of a tool with no scripted answer returns one text block of JSON,
/// `{"tool": …, "arguments": …}`, so tests can see what reached it.
#[derive(Debug, Clone)]
pub struct MockProvider {
    id: String,
    state: Arc<Mutex<State>>,
}

/// Scripts a [`MockProvider`] and reads what happened to it.
#[derive(Debug, Clone)]
pub struct MockHandle {
    id: String,
    state: Arc<Mutex<State>>,
}

impl MockProvider {
    /// A mock provider with id `id` and no tools, and its handle.
    pub fn new(id: impl Into<String>) -> (Arc<MockProvider>, MockHandle) {
        let id = id.into();
        let state = Arc::new(Mutex::new(State::default()));
        (
            Arc::new(MockProvider {
                id: id.clone(),
                state: Arc::clone(&state),
            }),
            MockHandle { id, state },
        )
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts the mock again, as a new process of the same server would
    /// be: usable after a shutdown, with no failure of its own.
    pub(crate) fn revive(&self) {
        let mut s = self.lock();
        s.down = false;
        s.failure = None;
    }
}

impl MockHandle {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds a tool.
    pub fn add_tool(&self, tool: ToolSpec) -> &Self {
        self.lock().tools.push(tool);
        self
    }

    /// Adds a tool with an object schema of string properties `props`.
    pub fn add_simple_tool(&self, name: &str, description: &str, props: &[&str]) -> &Self {
        let properties: serde_json::Map<String, serde_json::Value> = props
            .iter()
            .map(|p| ((*p).to_owned(), json!({"type": "string"})))
            .collect();
        self.add_tool(
            ToolSpec::new(name, json!({"type": "object", "properties": properties}))
                .with_description(description),
        )
    }

    /// Adds a tool the provider reports as unusable.
    pub fn add_rejected(&self, name: &str, reason: &str) -> &Self {
        self.lock().rejected.push(RejectedTool::new(name, reason));
        self
    }

    /// Makes every call of `tool` answer `answer`.
    pub fn answer(&self, tool: &str, answer: CallResult) -> &Self {
        self.lock().answers.insert(tool.to_owned(), Ok(answer));
        self
    }

    /// Makes every call of `tool` fail with `failure`.
    pub fn fail_call(&self, tool: &str, failure: MockFailure) -> &Self {
        self.lock().answers.insert(tool.to_owned(), Err(failure));
        self
    }

    /// Makes it declare that it offers no tools at all, as an MCP server
    /// without the `tools` capability: its listing is
    /// [`ToolList::declared_none`].
    pub fn declare_no_tools(&self) -> &Self {
        self.lock().declares_no_tools = true;
        self
    }

    /// Makes `list_tools` fail with `failure`.
    pub fn fail_list(&self, failure: MockFailure) -> &Self {
        self.lock().list_failure = Some(failure);
        self
    }

    /// Makes the provider report `failure` without being asked
    /// ([`Provider::failure`]), as a server that exited between turns.
    pub fn fail_now(&self, failure: MockFailure) -> &Self {
        self.lock().failure = Some(failure);
        self
    }

    /// Delays every answer (listing and calls) by `latency`.
    pub fn latency(&self, latency: Duration) -> &Self {
        self.lock().latency = latency;
        self
    }

    /// Delays the answers to `tool` by `latency`, instead of the common one.
    pub fn tool_latency(&self, tool: &str, latency: Duration) -> &Self {
        self.lock().tool_latency.insert(tool.to_owned(), latency);
        self
    }

    /// Every call received so far, in order.
    pub fn calls(&self) -> Vec<CallRequest> {
        self.lock().calls.clone()
    }

    /// How many times the tools were listed.
    pub fn list_count(&self) -> usize {
        self.lock().lists
    }

    /// How many times the provider was shut down.
    pub fn shutdown_count(&self) -> usize {
        self.lock().shutdowns
    }

    /// The provider's id.
    pub fn id(&self) -> &str {
        &self.id
    }
}

#[async_trait]
impl Provider for MockProvider {
    fn id(&self) -> &str {
        &self.id
    }

    fn info(&self) -> ProviderInfo {
        ProviderInfo::new("mock").with_detail("tools", self.lock().tools.len().to_string())
    }

    async fn list_tools(&self) -> Result<ToolList, Error> {
        let (latency, outcome) = {
            let mut s = self.lock();
            s.lists += 1;
            let outcome = match (&s.list_failure, s.down) {
                (_, true) => Err(Error::ShutDown {
                    provider: self.id.clone(),
                }),
                (Some(f), false) => Err(f.to_error(&self.id, "")),
                (None, false) if s.declares_no_tools => Ok(ToolList::declared_none()),
                (None, false) => {
                    Ok(ToolList::new(s.tools.clone()).with_rejected(s.rejected.clone()))
                }
            };
            (s.latency, outcome)
        };
        tokio::time::sleep(latency).await;
        outcome
    }

    async fn call_tool(&self, request: CallRequest) -> Result<CallResult, Error> {
        let (latency, outcome) = {
            let mut s = self.lock();
            s.calls.push(request.clone());
            let latency = s
                .tool_latency
                .get(&request.tool)
                .copied()
                .unwrap_or(s.latency);
            let outcome = if s.down {
                Err(Error::ShutDown {
                    provider: self.id.clone(),
                })
            } else {
                match s.answers.get(&request.tool) {
                    Some(Ok(result)) => Ok(result.clone()),
                    Some(Err(f)) => Err(f.to_error(&self.id, &request.tool)),
                    None => Ok(CallResult::text(
                        json!({"tool": request.tool, "arguments": request.arguments}).to_string(),
                    )),
                }
            };
            (latency, outcome)
        };
        tokio::time::sleep(latency).await;
        // Shut down while the call waited: a stopped server answers nothing.
        if self.lock().down {
            return Err(Error::ShutDown {
                provider: self.id.clone(),
            });
        }
        outcome
    }

    fn failure(&self) -> Option<Error> {
        self.lock()
            .failure
            .as_ref()
            .map(|f| f.to_error(&self.id, ""))
    }

    async fn shutdown(&self) -> Result<(), Error> {
        let mut s = self.lock();
        s.shutdowns += 1;
        s.down = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_handle_scripts_and_records() {
        let (p, h) = MockProvider::new("m");
        h.add_simple_tool("get", "reads", &["q"])
            .answer("get", CallResult::text("got"))
            .fail_call("put", MockFailure::Reject(-1, "no".into()))
            .latency(Duration::from_millis(5));
        assert_eq!(p.list_tools().await.expect("list").tools.len(), 1);
        let before = tokio::time::Instant::now();
        let r = p
            .call_tool(CallRequest::new("get", Default::default()))
            .await;
        assert_eq!(r.expect("ok"), CallResult::text("got"));
        assert!(before.elapsed() >= Duration::from_millis(5));
        let e = p
            .call_tool(CallRequest::new("put", Default::default()))
            .await;
        assert!(matches!(e, Err(Error::CallError { code: -1, .. })));
        let echo = p
            .call_tool(CallRequest::new("other", Default::default()))
            .await;
        assert_eq!(
            echo.expect("echo"),
            CallResult::text(r#"{"arguments":{},"tool":"other"}"#)
        );
        assert_eq!(h.calls().len(), 3);
        p.shutdown().await.expect("shutdown");
        assert_eq!(h.shutdown_count(), 1);
        assert!(matches!(p.list_tools().await, Err(Error::ShutDown { .. })));
    }
}
