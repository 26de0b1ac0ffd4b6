//! Every client of the benchmarks does the work it is timed for, against
//! the fixture server: a benchmark of a client that fails fast is no figure.

use spear_benches::fixture::{TEN_THOUSAND_TOOLS, fixture_server};
use spear_benches::floor::Floor;
use spear_benches::floor_async::AsyncFloor;
use spear_benches::floor_provider::ProviderFloor;
use spear_benches::official;
use spear_benches::ours::{self, Gateway};
use spear_benches::system::runtime;
use spear_benches::yardstick::{self, check_echo};
use spear_capabilities::{CallRequest, Provider};

#[test]
fn the_floor_echoes_keeps_calls_in_flight_and_lists_every_page() {
    let fixture = fixture_server().expect("fixture");
    let mut floor = Floor::start(&fixture, &[]).expect("starts");
    floor.call_echo().expect("echo");
    for window in [1, 8, 64] {
        floor.calls_in_flight(500, window).expect("calls");
    }
    // Its ids stay in step after the windows: the next echo is answered as
    // its own (`call_echo` checks the answer's id).
    floor.call_echo().expect("echo");
    assert_eq!(floor.list_all().expect("listed").len(), 9);
    let mut big = Floor::start(&fixture, TEN_THOUSAND_TOOLS).expect("starts");
    let tools = big.list_all().expect("listed");
    assert_eq!(tools.len(), 10_000);
    assert_eq!(tools[9_999]["name"], "gen_9990");
}

/// The async floor answers each call in order with its own id, alone and
/// with many in flight, on both runtimes (its reader is a task of its own).
#[test]
fn the_async_floor_keeps_calls_in_flight_on_both_runtimes() {
    let fixture = fixture_server().expect("fixture");
    for multi in [false, true] {
        let rt = runtime(multi);
        rt.block_on(async {
            let mut floor = AsyncFloor::start(&fixture, &[]).await.expect("starts");
            floor.call_echo().await.expect("echo");
            for window in [1, 8, 64, 1000] {
                floor.calls_in_flight(500, window).await.expect("calls");
            }
            floor.call_echo().await.expect("the ids are still in step");
        });
    }
}

/// The provider floor answers every call with its own echo, alone and with
/// many in flight, on both runtimes; a call dropped before it was answered,
/// whether it owed the flush or joined one, leaves no slot behind and the
/// others their answers.
#[test]
fn the_provider_floor_echoes_in_flight_and_a_dropped_call_leaves_no_slot() {
    let fixture = fixture_server().expect("fixture");
    let echo = || CallRequest::new("echo", ours::echo_arguments());
    for multi in [false, true] {
        let rt = runtime(multi);
        rt.block_on(async {
            let p = ProviderFloor::start(&fixture, &[]).await.expect("starts");
            check_echo(&p.call_tool(echo()).await.expect("echo")).expect("the echo");
            for window in [1, 8, 64] {
                yardstick::calls_in_flight(&p, 500, window)
                    .await
                    .expect("calls");
            }
            assert_eq!(p.pending(), 0);

            // The first call owes the flush and yields; the second joins it.
            let mut owes = p.call_tool(echo());
            assert!(futures::poll!(&mut owes).is_pending());
            let mut joins = p.call_tool(echo());
            assert!(futures::poll!(&mut joins).is_pending());
            assert_eq!(p.pending(), 2);
            drop(joins);
            assert_eq!(p.pending(), 1);
            check_echo(&owes.await.expect("echo")).expect("the echo");
            assert_eq!(p.pending(), 0);

            // Dropped while it owes the flush: the call that joined it is
            // still written and answered.
            let mut owes = p.call_tool(echo());
            assert!(futures::poll!(&mut owes).is_pending());
            let joins = p.call_tool(echo());
            drop(owes);
            let answered = tokio::time::timeout(std::time::Duration::from_secs(10), joins)
                .await
                .expect("the dropped call's flush is still written");
            check_echo(&answered.expect("echo")).expect("the echo");
            assert_eq!(p.pending(), 0);
            yardstick::calls_in_flight(&p, 100, 8)
                .await
                .expect("the ids are still in step");

            p.shutdown().await.expect("stops");
            assert!(p.call_tool(echo()).await.is_err(), "shut down");
        });
    }
}

/// A floor that took a wrong answer for a right one would be no floor: an
/// answer to another id, or an error, is refused.
#[test]
fn the_floor_check_refuses_other_ids_and_errors() {
    let ok = br#"{"jsonrpc":"2.0","id":7,"result":{"content":[]}}"#;
    assert!(spear_benches::floor::check_reply(ok, 7).is_ok());
    assert!(spear_benches::floor::check_reply(ok, 8).is_err());
    let error = br#"{"jsonrpc":"2.0","id":7,"error":{"code":-1,"message":"no"}}"#;
    assert!(spear_benches::floor::check_reply(error, 7).is_err());
    assert!(spear_benches::floor::check_reply(b"not json", 7).is_err());
}

#[tokio::test]
async fn mcp_stdio_and_the_gateway_echo_and_list_every_page() {
    let fixture = fixture_server().expect("fixture");
    let provider = ours::start(&fixture, TEN_THOUSAND_TOOLS)
        .await
        .expect("starts");
    ours::call_echo(&provider).await.expect("echo");
    assert_eq!(
        provider.list_tools().await.expect("listed").tools.len(),
        10_000
    );
    provider.shutdown().await.expect("stops");

    let gateway = Gateway::open(&fixture, &[]).await.expect("opens");
    gateway.call_echo(&ours::invoke_line()).await.expect("echo");
    let wrong = gateway
        .call_echo("spear-capability invoke fx/echo '{\"nope\": 1}'")
        .await;
    assert!(wrong.is_err(), "an argument outside the schema is refused");
    gateway.close().await;
}

#[tokio::test]
async fn rmcp_speaks_2025_06_18_echoes_and_lists_every_page() {
    let fixture = fixture_server().expect("fixture");
    let log = tempfile::NamedTempFile::new().expect("temp file");
    let log_path = log.path().display().to_string();
    let mut args = vec!["--log", &log_path];
    args.extend_from_slice(TEN_THOUSAND_TOOLS);
    let client = official::start(&fixture, &args).await.expect("starts");
    official::call_echo(&client).await.expect("echo");
    assert_eq!(
        official::list_all(&client).await.expect("listed").len(),
        10_000
    );
    official::close(client).await;
    let sent = std::fs::read_to_string(log.path()).expect("log");
    let first: serde_json::Value =
        serde_json::from_str(sent.lines().next().expect("a line")).expect("json");
    assert_eq!(first["method"], "initialize");
    assert_eq!(first["params"]["protocolVersion"], "2025-06-18");
}
