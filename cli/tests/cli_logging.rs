//! Issue 35.3: the CLI writes the libraries' `tracing` events to stderr
//! when `RUST_LOG` is set, never on stdout, and nothing without it.

mod common;

use common::{CLI, sibling};

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

/// A registry with `fix`, the fixture server, given an environment value.
fn registry(dir: &Path) -> PathBuf {
    let server = sibling("spear-fixture-server");
    let file = dir.join("capabilities.json");
    let providers = json!({"providers": [{
        "id": "fix", "command": [server], "scope": "global", "timeout": 10,
        "env": {"SPEAR_TEST_SECRET": "env-value-5518"},
    }]});
    std::fs::write(&file, providers.to_string()).expect("write");
    file
}

fn list_json(file: &Path, rust_log: Option<&str>) -> Output {
    let mut command = Command::new(CLI);
    command
        .args(["list", "--json", "--capabilities"])
        .arg(file)
        .args(["--project", "p"])
        .env_remove("RUST_LOG")
        .env_remove("SPEAR_CAPABILITIES_FILE")
        .stdin(Stdio::null());
    if let Some(filter) = rust_log {
        command.env("RUST_LOG", filter);
    }
    command.output().expect("runs")
}

#[test]
fn rust_log_sends_events_to_stderr_and_leaves_json_on_stdout_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = registry(dir.path());

    let out = list_json(&file, Some("debug"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let v: Value = serde_json::from_slice(&out.stdout).expect("stdout is one JSON object");
    assert_eq!(v["providers"][0]["id"], "fix", "{v}");
    for event in [
        "provider starting",
        "provider ready",
        "provider stopped",
        "server stopped",
    ] {
        assert!(stderr.contains(event), "no {event:?} in:\n{stderr}");
    }
    assert!(
        !stderr.contains("env-value-5518"),
        "an environment value:\n{stderr}"
    );

    let quiet = list_json(&file, None);
    assert_eq!(quiet.status.code(), Some(0));
    assert!(
        !String::from_utf8_lossy(&quiet.stderr).contains("provider ready"),
        "events without RUST_LOG"
    );
}

#[test]
fn a_rust_log_that_is_no_filter_is_said_and_logging_stays_off() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = list_json(&registry(dir.path()), Some("fix=[{"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.starts_with("spear-capabilities: RUST_LOG=fix=[{ is not a filter ("),
        "{stderr}"
    );
    assert!(!stderr.contains("provider ready"), "{stderr}");
    serde_json::from_slice::<Value>(&out.stdout).expect("stdout is one JSON object");
}
