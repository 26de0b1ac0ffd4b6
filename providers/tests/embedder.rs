//! Issue 46, embedder 4: what the README sends an embedder to is reachable
//! from the two crates it tells them to depend on (`spear-capabilities`
//! and `spear-providers`), through their public API only: the mcp-stdio
//! kind's own items (`--trace`'s library side, its limits) and the call
//! that makes the process non-dumpable.

#[test]
fn the_trace_target_and_the_mcp_stdio_limits_are_reachable_from_spear_providers() {
    // `--trace`'s library side: the `tracing` target an embedder's
    // subscriber takes the JSON-RPC lines from (the library writes no file).
    assert_eq!(spear_providers::mcp_stdio::WIRE, "spear_mcp_stdio::wire");
    assert_eq!(spear_providers::mcp_stdio::TRACE_LINE_KEPT, 64 * 1024);
    assert_eq!(spear_providers::mcp_stdio::MAX_LINE, 16 * 1024 * 1024);
    assert_eq!(spear_providers::mcp_stdio::NAME, "mcp-stdio");
}

#[test]
fn set_non_dumpable_leaves_the_process_non_dumpable() {
    // This test binary is a process of its own: the flag stays with it.
    spear_providers::set_non_dumpable().expect("the flag is set");
    assert_eq!(
        rustix::process::dumpable_behavior().expect("the flag is read"),
        rustix::process::DumpableBehavior::NotDumpable
    );
}
