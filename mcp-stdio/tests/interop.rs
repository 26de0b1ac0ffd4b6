//! Interop: the `mcp-stdio` client against MCP servers that others wrote.
//!
//! - `@modelcontextprotocol/server-everything` (TypeScript SDK), pinned in
//!   `interop/package-lock.json`, started directly with `node`, through `npx`
//!   and through `sh -c`;
//! - `interop/python_server.py`, written with the official Python SDK (`mcp`,
//!   pinned in `interop/requirements.txt`), with tools/list in pages.
//!
//! Both are installed into `.interop/` by `scripts/interop-setup` (which
//! `scripts/test` and `.ci/run` call). Without it every test here fails and
//! says so: a silent skip would let CI pass without ever meeting a real server.
//!
//! Every test ends by stopping the provider and checking that no process the
//! server started survives (see `interop/procs.rs`).

#[path = "interop/everything.rs"]
mod everything;
#[path = "interop/procs.rs"]
mod procs;
#[path = "interop/python.rs"]
mod python;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Map, Value, json};
use spear_capabilities::{
    CallRequest, CallResult, Error, Provider, ToolSpec,
    kind::{ConnectRequest, Kinds},
};
use spear_providers as _;

/// Generous: `npx` and a cold Python import take a second or two on a slow
/// machine, and a timeout here would be a false failure, not a finding.
const TIMEOUT: Duration = Duration::from_secs(30);

/// How long the processes of a stopped server may take to disappear: a
/// SIGKILL to a group is delivered asynchronously.
const GONE_WITHIN: Duration = Duration::from_secs(5);

/// How long a server's processes may take to show in `/proc` as tagged: a
/// process in the middle of `execve` shows no environment yet.
const SEEN_WITHIN: Duration = Duration::from_secs(5);

/// The workspace root (this crate's parent folder).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("mcp-stdio sits inside the workspace")
        .to_path_buf()
}

/// A path under `.interop/`, which must exist.
fn installed(relative: &str) -> PathBuf {
    let path = root().join(".interop").join(relative);
    assert!(
        path.exists(),
        "{} is missing: run scripts/interop-setup first (it installs the pinned \
         third-party MCP servers these tests need into .interop/)",
        path.display()
    );
    path
}

fn string(path: &Path) -> String {
    path.to_str().expect("paths here are UTF-8").to_owned()
}

/// The tools of a captured tool list (`relative` to the workspace root), as
/// the client reads them: name, schema, title, description, output schema.
fn captured_tools(relative: &str) -> Vec<ToolSpec> {
    let raw = std::fs::read_to_string(root().join(relative)).expect("the capture is committed");
    let capture: Value = serde_json::from_str(&raw).expect("the capture is JSON");
    capture["tools"]
        .as_array()
        .expect("a tools array")
        .iter()
        .map(|t| {
            let mut spec =
                ToolSpec::new(t["name"].as_str().expect("name"), t["inputSchema"].clone());
            if let Some(title) = t["title"].as_str() {
                spec = spec.with_title(title);
            }
            if let Some(description) = t["description"].as_str() {
                spec = spec.with_description(description);
            }
            if let Some(output) = t.get("outputSchema") {
                spec = spec.with_output_schema(output.clone());
            }
            // The operator's hint (`get --start`), read as given.
            if let Some(read_only) = t["annotations"]["readOnlyHint"].as_bool() {
                spec = spec.with_read_only_hint(read_only);
            }
            spec
        })
        .collect()
}

/// A started server and the tag its processes carry in their environment.
struct Running {
    provider: Arc<dyn Provider>,
    tag: String,
}

/// Starts `command` as the mcp-stdio provider `id`, tagging every process of
/// the server with a variable unique to this start.
async fn start(id: &str, command: Vec<String>) -> Running {
    static STARTS: AtomicUsize = AtomicUsize::new(0);
    let tag = format!(
        "{}-{id}-{}",
        std::process::id(),
        STARTS.fetch_add(1, Ordering::Relaxed)
    );
    let settings = json!({
        "command": command,
        "env": {procs::TAG_VAR: tag},
    });
    let Value::Object(settings) = settings else {
        unreachable!("a json object")
    };
    let kind = &spear_mcp_stdio::KIND;
    let provider = (kind.connect)(ConnectRequest::new(id, settings, TIMEOUT, root()))
        .await
        .unwrap_or_else(|e| panic!("{id} did not start: {e}"));
    Running { provider, tag }
}

impl Running {
    /// Calls `tool` with `arguments` (a JSON object), expecting an answer.
    async fn call(&self, tool: &str, arguments: Value) -> CallResult {
        self.provider
            .call_tool(CallRequest::new(tool, object(arguments)))
            .await
            .unwrap_or_else(|e| panic!("calling {tool} failed: {e}"))
    }

    /// The processes of this server, at least `at_least` of them.
    async fn processes(&self, at_least: usize) -> Vec<procs::Proc> {
        let found = procs::at_least(&self.tag, at_least, SEEN_WITHIN).await;
        assert!(
            found.len() >= at_least,
            "expected at least {at_least} processes tagged {}, found {found:?}",
            self.tag
        );
        found
    }

    /// Shuts the provider down and checks that every process of the server,
    /// `at_least` of which must be running, is gone and reaped.
    async fn shutdown_leaving_nothing(self, at_least: usize) {
        let before = self.processes(at_least).await;
        self.provider
            .shutdown()
            .await
            .expect("the provider shuts down cleanly");
        let left =
            procs::survivors(&before, &self.tag, procs::Reaping::Required, GONE_WITHIN).await;
        assert!(left.is_empty(), "still there after shutdown: {left:?}");
        let after = self
            .provider
            .list_tools()
            .await
            .expect_err("a shut-down provider refuses work");
        assert!(
            matches!(after, Error::ShutDown { .. }),
            "unexpected error after shutdown: {after}"
        );
    }
}

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(map) => map,
        other => panic!("arguments must be an object, got {other}"),
    }
}

/// The base64 of the 8-byte PNG signature, which every PNG's data starts with.
const PNG_BASE64_PREFIX: &str = "iVBORw0KGgo";

#[test]
fn the_kind_is_registered_once_through_the_dev_dependency_cycle() {
    // mcp-stdio dev-depends on spear-providers, which depends on mcp-stdio:
    // were the crate linked twice, `inventory` would hold the kind twice.
    let names = Kinds::linked().expect("no duplicate kind").names();
    assert_eq!(names, ["mcp-stdio"]);
}
