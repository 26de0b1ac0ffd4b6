//! The conformance suite against the mock and against the real mcp-stdio
//! provider (started through the public kind API, as the core starts it).

mod common;

use std::time::Duration;

use serde_json::json;
use spear_capabilities::ConnectRequest;
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
