//! Calls in flight made as the shared yardstick makes them of our client
//! (`calls_in_flight` of its `ours` client): a `call_tool` future per call,
//! `buffer_unordered` keeping `window` of them in flight, each result's text
//! checked, the whole under one timeout. Whatever that shape costs (the
//! arguments cloned, the boxed future of `#[async_trait]`, the
//! `FuturesUnordered`) every provider driven so pays, so the rows that use
//! it compare providers, not ways of calling them.

use std::time::Duration;

use futures::StreamExt;
use spear_capabilities::{CallRequest, CallResult, Content, Provider};

use crate::ECHO_TEXT;
use crate::ours::echo_arguments;

/// The yardstick's timeout of one step.
const STEP_TIMEOUT: Duration = Duration::from_secs(120);

/// `total` echo calls with up to `window` in flight through `provider`.
/// The yardstick runs this future in `Runtime::block_on` on the main thread.
///
/// # Errors
/// When a call fails, an answer is not the echo, or the step times out.
pub async fn calls_in_flight<P: Provider>(
    provider: &P,
    total: usize,
    window: usize,
) -> Result<(), String> {
    if total == 0 || window == 0 {
        return Ok(());
    }
    let args = echo_arguments();
    let calls = async {
        let mut replies = futures::stream::iter(0..total)
            .map(|_| provider.call_tool(CallRequest::new("echo", args.clone())))
            .buffer_unordered(window);
        let mut done = 0usize;
        while let Some(result) = replies.next().await {
            check_echo(&result.map_err(|e| e.to_string())?)?;
            done += 1;
        }
        if done != total {
            return Err(format!("{done} replies for {total} calls"));
        }
        Ok(())
    };
    match tokio::time::timeout(STEP_TIMEOUT, calls).await {
        Ok(r) => r,
        Err(_) => Err(format!("calls in flight timed out after {STEP_TIMEOUT:?}")),
    }
}

/// The yardstick's check of one result: the echoed text, not an error.
///
/// # Errors
/// When it is anything else.
pub fn check_echo(result: &CallResult) -> Result<(), String> {
    match result.content.first() {
        Some(Content::Text { text }) if text == ECHO_TEXT && !result.is_error => Ok(()),
        other => Err(format!("unexpected tools/call result: {other:?}")),
    }
}
