//! Issue 33.3, a cold start can finish: `--wait SECONDS` lets a provider's
//! start (its handshake, its listing) go on past its entry's `timeout`, for
//! `list`, `get --start`, `invoke` and `turn`, through the built binary and
//! a fixture server that answers `initialize` only after a delay longer
//! than its timeout. Without `--wait` the entry's timeout rules.

mod common;

use common::{cli, on_a_terminal, on_registry, sibling, text};

use std::path::{Path, PathBuf};

use serde_json::json;

/// How long the fixture takes to answer `initialize`: more than twice its
/// 1 s timeout, so that a start without `--wait` surely times out.
const START_DELAY_MS: &str = "2500";

/// A registry in `dir` with `cold`, the fixture server answering
/// `initialize` after [`START_DELAY_MS`], with a 1 s `timeout`.
fn registry(dir: &Path) -> PathBuf {
    let file = dir.join("capabilities.json");
    let entry = json!({
        "id": "cold", "scope": "global", "timeout": 1, "read": ["echo", "sleep"],
        "command": [sibling("spear-fixture-server"), "--start-delay", START_DELAY_MS],
    });
    std::fs::write(&file, json!({ "providers": [entry] }).to_string()).expect("write");
    file
}

#[test]
fn list_waits_for_a_start_longer_than_its_timeout_only_when_asked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = registry(dir.path());
    let out = on_registry(&file, &["list"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("failed   cold: unavailable (timed_out)"),
        "{stdout}"
    );
    let out = on_registry(&file, &["list", "--wait", "30"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("ok       cold: ready in "), "{stdout}");
    assert!(stdout.contains("cold/echo"), "{stdout}");
}

#[test]
fn invoke_and_turn_wait_for_a_cold_start_and_calls_keep_their_timeout() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = registry(dir.path());
    let out = on_registry(
        &file,
        &["invoke", "cold/echo", r#"{"text": "warm"}"#, "--wait", "30"],
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("warm"), "{stdout}");
    // A call still gets the entry's 1 s, however long the start may take.
    let out = on_registry(
        &file,
        &["invoke", "cold/sleep", r#"{"ms": 3000}"#, "--wait", "30"],
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.starts_with("`cold/sleep` took longer than its 1 s timeout"),
        "{stdout}"
    );
    let out = on_registry(
        &file,
        &["turn", "--wait", "30", "--command", "spear-capability list"],
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("  cold/echo "), "{stdout}");
    assert!(!stdout.contains("unavailable"), "{stdout}");
}

#[test]
fn get_start_waits_for_a_cold_start_only_when_asked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = registry(dir.path());
    let path = file.to_str().expect("utf-8");
    let out = cli(&["get", "cold", "--start", "--capabilities", path]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let out = cli(&[
        "get",
        "cold",
        "--start",
        "--wait",
        "30",
        "--capabilities",
        path,
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("tools: 9"), "{stdout}");
    // A wait is a start's: without --start it is bad usage.
    let out = cli(&["get", "cold", "--wait", "30", "--capabilities", path]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

#[test]
fn a_terminal_is_told_the_start_is_waited_for_and_how_long() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = registry(dir.path());
    let path = file.to_str().expect("utf-8");
    let screen = on_a_terminal(&[
        "list",
        "--wait",
        "30",
        "--capabilities",
        path,
        "--project",
        "demo",
    ]);
    assert!(
        screen.contains("starting cold: starting for ")
            && screen.contains(", waiting up to 30 s (--wait)"),
        "{screen:?}"
    );
    assert!(screen.contains("ok       cold: ready in "), "{screen:?}");
}

#[test]
fn a_wait_that_is_not_a_positive_number_of_seconds_is_bad_usage() {
    for bad in ["0", "-1", "soon"] {
        let wait = format!("--wait={bad}");
        let out = cli(&["list", &wait, "--project", "demo"]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(
            text(&out.stderr).contains("--wait"),
            "{}",
            text(&out.stderr)
        );
    }
}

/// Issue 46, operator 8: a start that timed out says, on the CLI's line
/// for it, that `--wait SECONDS` lets a slow start finish: `list`'s
/// provider line, `check --start`'s and `get --start`'s start line, and
/// for `invoke` and `turn`, whose standard output is the turn's, a line on
/// standard error. The turn is never told of the flag.
#[test]
fn a_start_that_timed_out_says_that_wait_lets_a_slow_start_finish() {
    const HINT: &str = "; `--wait SECONDS` lets a slow start finish";
    let dir = tempfile::tempdir().expect("tempdir");
    let file = registry(dir.path());
    let path = file.to_str().expect("utf-8");
    let line_of = |text: &str, start: &str| {
        let at = text
            .find(start)
            .unwrap_or_else(|| panic!("{start:?} in {text}"));
        text[at..].lines().next().unwrap_or_default().to_owned()
    };
    let list = text(&on_registry(&file, &["list"]).stdout);
    let line = line_of(&list, "  failed   cold: unavailable (timed_out): ");
    assert!(line.ends_with(HINT), "{line}");
    let check = text(&cli(&["check", "--start", path]).stdout);
    let line = line_of(&check, "           start failed: provider `cold` timed out");
    assert!(line.ends_with(HINT), "{line}");
    let get = text(&cli(&["get", "cold", "--start", "--capabilities", path]).stdout);
    let line = line_of(&get, "start failed: provider `cold` timed out");
    assert!(line.ends_with(HINT), "{line}");
    for args in [
        vec!["invoke", "cold/echo", r#"{"text": "x"}"#],
        vec!["turn", "--command", "spear-capability list"],
    ] {
        let out = on_registry(&file, &args);
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert!(
            stderr.contains(&format!(
                "spear-capabilities: `cold` timed out starting{HINT}\n"
            )),
            "{args:?}: {stderr}"
        );
        assert!(!stdout.contains("--wait"), "{args:?}: {stdout}");
    }
}
