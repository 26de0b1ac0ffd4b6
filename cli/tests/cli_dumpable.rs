//! Issue 18.6: a server runs as the CLI's own user, and a process of the
//! same user may read another's `/proc/<pid>/environ` (and memory) unless
//! that process is non-dumpable. The CLI marks itself so.

use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CLI: &str = env!("CARGO_BIN_EXE_spear-capabilities");

/// The server tries to read its parent's (the CLI's) environment and says
/// what happened in a file; as root the test runs the CLI as `nobody`
/// (root could read it whatever the flag).
#[test]
fn a_server_of_the_same_user_cannot_read_the_clis_environment() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let seen = dir.path().join("seen");
    let probe = format!(
        "if cat /proc/$PPID/environ >/dev/null 2>&1; then echo readable; else echo refused; fi > {}; exec sleep 1000",
        seen.display()
    );
    let file = dir.path().join("capabilities.json");
    let body = serde_json::json!({"providers": [{"id": "srv", "command": ["sh", "-c", probe],
        "scope": "global", "timeout": 30}]});
    std::fs::write(&file, body.to_string()).expect("write");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let args = [
        "list",
        "--project",
        "p",
        "--capabilities",
        file.to_str().expect("utf8"),
    ];
    let mut command = if rustix::process::getuid().is_root() {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", CLI]);
        c
    } else {
        Command::new(CLI)
    };
    let mut child = command
        .args(args)
        .env("SPEAR_SECRET_FOR_THE_TEST", "s3cret")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the CLI runs");
    let deadline = Instant::now() + Duration::from_secs(20);
    let said = loop {
        match std::fs::read_to_string(&seen) {
            Ok(s) if !s.is_empty() => break s,
            _ if Instant::now() > deadline => break String::new(),
            _ => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let status = child.wait().expect("the CLI ends");
    assert_eq!(
        said.trim(),
        "refused",
        "the server read the CLI's environment"
    );
    assert_eq!(status.code(), Some(130));
}
