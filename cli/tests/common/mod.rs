//! What the CLI's tests share: the built binary, its sibling binaries, and
//! a plain run of it.
#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The CLI as built for these tests.
pub const CLI: &str = env!("CARGO_BIN_EXE_spear-capabilities");

/// A binary of the workspace built beside the CLI (`cargo test --workspace`
/// builds them all), e.g. `spear-fixture-server`.
pub fn sibling(name: &str) -> PathBuf {
    let path = Path::new(CLI).with_file_name(name);
    assert!(
        path.exists(),
        "{} is missing: build the workspace first (cargo build --workspace)",
        path.display()
    );
    path
}

/// `body` written as `capabilities.json` in a new folder (kept while the
/// `TempDir` lives).
pub fn registry(body: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("capabilities.json");
    std::fs::write(&file, body).expect("write");
    (dir, file)
}

/// A path as a command-line argument.
pub fn utf8(p: &Path) -> &str {
    p.to_str().expect("utf8")
}

/// The names in `dir`, sorted.
pub fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("reads")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Output bytes as text.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs the CLI with `args`: no default capabilities file, no colour
/// setting, no logging, stdin empty; stdout and stderr captured.
pub fn cli(args: &[&str]) -> Output {
    command(args).output().expect("runs")
}

/// The command [`cli`] runs, to change before it does.
pub fn command(args: &[&str]) -> Command {
    let mut command = Command::new(CLI);
    command
        .args(args)
        .env_remove("SPEAR_CAPABILITIES_FILE")
        .env_remove("NO_COLOR")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null());
    command
}

/// Whether the tests run as root, which a scene with another user needs
/// (CI runs them as root); says so when they do not.
pub fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    let root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
    if !root {
        eprintln!("not root: another user's scene cannot be set, nothing to test");
    }
    root
}

/// The CLI run as user and group 65534 (`nobody`), through `setpriv`.
pub fn as_nobody(args: &[&str]) -> Output {
    Command::new("setpriv")
        .args([
            "--reuid",
            "65534",
            "--regid",
            "65534",
            "--clear-groups",
            CLI,
        ])
        .args(args)
        .env_remove("SPEAR_CAPABILITIES_FILE")
        .stdin(Stdio::null())
        .output()
        .expect("setpriv runs")
}

/// The CLI's output under a pseudo-terminal (util-linux `script` gives it
/// one: standard output and error both go to it), `NO_COLOR` set, `TERM` a
/// terminal that moves its cursor: what the terminal received.
pub fn on_a_terminal(args: &[&str]) -> String {
    let quoted: Vec<String> = std::iter::once(CLI)
        .chain(args.iter().copied())
        .map(|a| format!("'{}'", a.replace('\'', r"'\''")))
        .collect();
    let out = Command::new("script")
        .args(["-qec", &quoted.join(" "), "/dev/null"])
        .env_remove("SPEAR_CAPABILITIES_FILE")
        .env_remove("RUST_LOG")
        .env("NO_COLOR", "1")
        .env("TERM", "xterm")
        .stdin(Stdio::null())
        .output()
        .expect("util-linux `script` runs");
    text(&out.stdout)
}

/// Runs the CLI with `args`, then `--capabilities FILE --project demo`: a
/// turn in project `demo` over the registry `file`.
pub fn on_registry(file: &Path, args: &[&str]) -> Output {
    let mut all = args.to_vec();
    all.extend(["--capabilities", file.to_str().expect("utf-8")]);
    all.extend(["--project", "demo"]);
    cli(&all)
}

/// The command of `spear-script-server` playing `script` (its format is in
/// `testkit/src/bin/script_server.rs`), written to `dir/<name>.json`.
pub fn script_server(dir: &Path, name: &str, script: &serde_json::Value) -> Vec<PathBuf> {
    let file = dir.join(format!("{name}.json"));
    std::fs::write(&file, script.to_string()).expect("script");
    vec![sibling("spear-script-server"), file]
}

/// The command of a scripted server in `dir` whose `initialize` declares
/// only `prompts` (no `tools`: a provider with no capabilities), and whose
/// `tools/list`, which must never be sent, would fail.
pub fn no_tools_server(dir: &Path) -> Vec<PathBuf> {
    let init = serde_json::json!({"result": {
        "protocolVersion": "2025-06-18",
        "capabilities": {"prompts": {}},
        "serverInfo": {"name": "bare", "version": "1"}
    }});
    let body = serde_json::json!({"initialize": [init],
        "tools/list": {"": [{"line": {"jsonrpc": "2.0", "id": "$ID",
            "error": {"code": -32601, "message": "method not found"}}}]}});
    script_server(dir, "no-tools", &body)
}

/// A capabilities file in `dir` with one global provider `fix`, the
/// fixture server with `args`: `echo` is its READ (every other tool a
/// WRITE, allowed).
pub fn fixture_registry(dir: &Path, args: &[&str]) -> PathBuf {
    let mut command = vec![sibling("spear-fixture-server").display().to_string()];
    command.extend(args.iter().map(|a| (*a).to_owned()));
    let file = dir.join("capabilities.json");
    let body = serde_json::json!({"providers": [{"id": "fix", "command": command,
        "scope": "global", "read": ["echo"], "write": "allow", "timeout": 10}]});
    std::fs::write(&file, body.to_string()).expect("write");
    file
}

/// The command lines of a turn with a READ, a WRITE and a READ.
pub const READ_WRITE_READ: [&str; 5] = [
    "spear-capability describe fix/echo",
    r#"spear-capability invoke fix/echo '{"text": "one"}'"#,
    "spear-capability describe fix/mixed",
    "spear-capability invoke fix/mixed '{}'",
    r#"spear-capability invoke fix/echo '{"text": "two"}'"#,
];

/// `turn` in project `p` over `registry`, auditing to `trail`, in auto
/// mode, answering `commands`; not started yet.
pub fn audited_turn(registry: &Path, trail: &Path, commands: &[&str]) -> Command {
    let mut command = Command::new(CLI);
    command
        .args(["turn", "--project", "p", "--mode", "auto", "--capabilities"])
        .arg(registry)
        .arg("--audit")
        .arg(trail)
        .env_remove("SPEAR_CAPABILITIES_FILE")
        .env_remove("SPEAR_AUDIT_KEY_FILE")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null());
    for c in commands {
        command.args(["--command", c]);
    }
    command
}

/// `audit verify` of `files` with `args` (no key unless given).
pub fn audit_verify(files: &[&Path], args: &[&str]) -> Output {
    Command::new(CLI)
        .args(["audit", "verify"])
        .args(files)
        .args(args)
        .env_remove("SPEAR_AUDIT_KEY_FILE")
        .stdin(Stdio::null())
        .output()
        .expect("runs")
}

/// What bash completes for `words` (the line as bash splits it) with the
/// word at `current` under the cursor, through the script `completions
/// bash` prints, run with `env` set: one candidate a line.
pub fn bash_complete(words: &str, current: usize, env: &[(&str, &str)]) -> String {
    let script = format!(
        "source <('{CLI}' completions bash) || exit 3
         f=$(complete -p spear-capabilities | sed -n 's/.*-F \\([^ ]*\\) .*/\\1/p')
         COMP_WORDS=({words}); COMP_CWORD={current}
         \"$f\" spear-capabilities \"${{COMP_WORDS[$COMP_CWORD]}}\" \"${{COMP_WORDS[$COMP_CWORD-1]}}\"
         printf '%s\\n' \"${{COMPREPLY[@]}}\""
    );
    let out = Command::new("bash")
        .args(["-c", &script])
        .env_remove("SPEAR_CAPABILITIES_FILE")
        .envs(env.iter().copied())
        .output()
        .expect("bash runs");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    text(&out.stdout)
}
