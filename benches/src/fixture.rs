//! Where the fixture server is, and the flags each row starts it with.

use std::path::PathBuf;
use std::process::Command;

/// The environment variable that names the fixture binary, overriding the
/// search.
pub const FIXTURE_VAR: &str = "SPEAR_FIXTURE_SERVER";

/// Flags for a server with 10 000 tools (its 9 own and 9 991 generated)
/// listed in pages of 100.
pub const TEN_THOUSAND_TOOLS: &[&str] = &["--tools", "9991", "--page-size", "100"];

/// The fixture binary: `$SPEAR_FIXTURE_SERVER`, else the one in the
/// running executable's profile folder (`target/<profile>/` for a bench or
/// test in `target/<profile>/deps/`, an example in `.../examples/`), built
/// there if it is missing.
///
/// # Errors
/// When it is not there and cannot be built.
pub fn fixture_server() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os(FIXTURE_VAR) {
        return Ok(PathBuf::from(path));
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    let mut dir = exe.parent().ok_or("this executable has no folder")?;
    if dir.ends_with("deps") || dir.ends_with("examples") {
        dir = dir.parent().ok_or("deps has no parent")?;
    }
    let path = dir.join("spear-fixture-server");
    if path.is_file() {
        return Ok(path);
    }
    // Not built by `cargo bench` or `cargo test` of this package: a bin
    // target of another package is only built when asked for.
    let cargo = option_env!("CARGO").unwrap_or("cargo");
    let mut build = Command::new(cargo);
    build.args([
        "build",
        "-p",
        "spear-testkit",
        "--bin",
        "spear-fixture-server",
    ]);
    if !dir.ends_with("debug") {
        // `bench` writes to `target/release`, as `release` does.
        build.args(["--profile", "bench"]);
    }
    let status = build
        .status()
        .map_err(|e| format!("cannot run {cargo}: {e}"))?;
    if !status.success() {
        return Err(format!("building spear-fixture-server failed: {status}"));
    }
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!("spear-fixture-server is not in {}", dir.display()))
    }
}
