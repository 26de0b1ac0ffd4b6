//! The conformance suite against the mock and against the real mcp-stdio
//! provider (started through the public kind API, as the core starts it).

mod common;

use std::time::Duration;

use serde_json::json;
use spear_capabilities::{CallRequest, kind::ConnectRequest};
use spear_mcp_stdio as _;
use spear_testkit::{MockProvider, conformance};

#[tokio::test]
async fn the_mock_provider_conforms() {
    let (p, h) = MockProvider::new("mock");
    conformance::script_mock(&h);
    conformance::run_all(p.as_ref(), "mock").await;
}

#[tokio::test]
async fn the_mcp_stdio_provider_conforms() {
    let serde_json::Value::Object(settings) = json!({"command": [common::FIXTURE]}) else {
        unreachable!()
    };
    let kind = &spear_mcp_stdio::KIND;
    let request = ConnectRequest::new("fx", settings, Duration::from_secs(20), "/");
    let p = (kind.connect)(request).await.expect("connects");
    let pid: u32 = common::detail(p.as_ref(), "pid").parse().expect("pid");
    conformance::run_all(p.as_ref(), "mcp-stdio").await;
    common::assert_gone(pid);
}

/// Issue 42.11: the contract's deadline, held against mcp-stdio with a short
/// start timeout: a call that takes longer than it is answered (the kind
/// sets no deadline of its own on a call; the gateway keeps it).
#[tokio::test]
async fn the_mcp_stdio_provider_sets_no_deadline_of_its_own_on_a_call() {
    let serde_json::Value::Object(settings) = json!({"command": [common::FIXTURE]}) else {
        unreachable!()
    };
    let start_timeout = Duration::from_millis(500);
    let request = ConnectRequest::new("fx", settings, start_timeout, "/");
    let p = (spear_mcp_stdio::KIND.connect)(request)
        .await
        .expect("connects");
    let serde_json::Value::Object(slow) = json!({"ms": 1500}) else {
        unreachable!()
    };
    let slow = CallRequest::new("sleep", slow);
    conformance::a_call_has_no_deadline_of_the_kinds_own(p.as_ref(), slow, start_timeout).await;
    p.shutdown().await.expect("shutdown");
}
