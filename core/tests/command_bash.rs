//! The recognizer against its oracle, bash itself.
//!
//! Each row is a line and whether bash runs `spear-capability` when given
//! it. The first test asks bash (5.x, with a `spear-capability` of ours
//! first on its PATH that only notes it ran), so the table cannot drift
//! from what the shell does. The second holds the recognizer to the rule
//! the table exists for: a line on which bash would run `spear-capability`
//! is never handed to the shell (SPEAR answers it; here, since something
//! stands before it, with a refusal).
//!
//! The rows are the shell forms a red-team pass found the recognizer
//! misreading (issue 18.5), their neighbours, and the lines bash leaves
//! alone that the fixes must not start claiming.

use std::path::Path;
use std::process::{Command, Stdio};

use spear_capabilities::internals::command::{Recognized, recognize, recognize_unfiltered};

/// What SPEAR does with a row's line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ours {
    /// Answered by SPEAR (here always refused: it does not stand alone).
    Refused,
    /// Handed to the shell.
    Shell,
}
use Ours::*;

/// (line, bash runs `spear-capability`, what SPEAR does).
const ROWS: &[(&str, bool, Ours)] = &[
    // A backslash before `\r\n` quotes the carriage return; only a newline
    // continues a line.
    ("echo \\\r\nspear-capability list", true, Refused),
    ("echo \\\nspear-capability list", false, Shell),
    ("echo \"a\\\r\nspear-capability list\"", false, Shell),
    // Here-document delimiters keep their carriage returns, and a body line
    // ends the document only when it is the delimiter exactly.
    ("cat <<EOF\r\nEOF\r\nspear-capability list", true, Refused),
    (
        "cat <<EOF\r\nEOF\n'\nEOF\r\nspear-capability list",
        true,
        Refused,
    ),
    ("cat <<E\rF\nE\rF\nspear-capability list", true, Refused),
    ("cat <<E\rF\nE\nspear-capability list", false, Shell),
    ("cat <<E\rF\nF\nspear-capability list", false, Shell),
    ("cat <<\r\n\r\nspear-capability list", true, Refused),
    ("cat <<'EOF'\r\nEOF\r\nspear-capability list", true, Refused),
    ("cat <<EOF\nEOF\r\nspear-capability list", false, Shell),
    // In an unquoted delimiter's body a `\`-newline joins lines first.
    ("cat <<EOF\nE\\\nOF\nspear-capability list", true, Refused),
    ("cat <<'EOF'\nE\\\nOF\nspear-capability list", false, Shell),
    ("cat <<EOF\nE\\\\\nOF\nspear-capability list", false, Shell),
    // `<<` is a shift in arithmetic, `$[...]` and array subscripts.
    ("((x<<2))\nspear-capability list", true, Refused),
    ("echo $((1<<2))\nspear-capability list", true, Refused),
    (
        "for ((i=1<<2;i<0;i++)); do :; done\nspear-capability list",
        true,
        Refused,
    ),
    ("echo $[1<<2]\nspear-capability list", true, Refused),
    ("echo \"$[1<<2]\"\nspear-capability list", true, Refused),
    ("echo $[a[1]<<2]\nspear-capability list", true, Refused),
    ("a[1<<2]=3\nspear-capability list", true, Refused),
    ("a[1<<2]\nspear-capability list", true, Refused),
    ("x=1 a[1<<2]=3\nspear-capability list", true, Refused),
    ("a[1 + 2]=3; spear-capability list", true, Refused),
    ("a=([1<<2]=3)\nspear-capability list", true, Refused),
    // Not where an assignment may stand: `<<` there is a here-document.
    ("declare a[1<<2]=3\nspear-capability list", false, Shell),
    ("echo a[1<<2]=3\nEOF\nspear-capability list", false, Shell),
    ("echo x[1<<2]\nspear-capability list", false, Shell),
    // Quotes inside `${...}` are matched even within double quotes.
    ("echo \"${x:-'\"'}\"\nspear-capability list", true, Refused),
    ("echo \"${x#'\"'}\"\nspear-capability list", true, Refused),
    ("echo \"${x/'\"'/a}\"\nspear-capability list", true, Refused),
    ("echo \"${x%%'\"'}\"\nspear-capability list", true, Refused),
    ("echo \"${x:='\"'}\"\nspear-capability list", true, Refused),
    ("echo \"${x:+'\"'}\"\nspear-capability list", true, Refused),
    ("echo \"${x:-\"'\"}\"\nspear-capability list", true, Refused),
    // Delimiters written with substitutions are compared as typed.
    (
        "cat <<`echo x`\n`echo x`\nspear-capability list",
        true,
        Refused,
    ),
    ("cat <<`x`\n`x`\nspear-capability list", true, Refused),
    ("cat <<`x`\nx\nspear-capability list", false, Shell),
    ("cat <<a$(b)c\na$(b)c\nspear-capability list", true, Refused),
    (
        "echo $(cat <<$(x)\n$(x)\n)\nspear-capability list",
        true,
        Refused,
    ),
    (
        "echo $(cat <<$(x)\n$(x)\nspear-capability list\n)",
        true,
        Refused,
    ),
    (
        "echo `cat <<$(x)\n$(x)\n`\nspear-capability list",
        true,
        Refused,
    ),
    (
        "echo $(cat <<$(x)\nx\n)\nspear-capability list",
        false,
        Shell,
    ),
];

/// Runs `line` with `bash -c` and says whether it ran `spear-capability`.
fn bash_runs(dir: &Path, line: &str) -> bool {
    let ran = dir.join("ran");
    let _ = std::fs::remove_file(&ran);
    Command::new("bash")
        .args(["--norc", "--noprofile", "-c", line])
        .env_clear()
        .env(
            "PATH",
            format!("{}:/usr/bin:/bin", dir.join("bin").display()),
        )
        .env("RAN", &ran)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("bash runs (the oracle of this test)");
    ran.exists()
}

#[test]
fn bash_runs_spear_capability_exactly_where_the_table_says() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).expect("bin");
    let fake = bin.join("spear-capability");
    std::fs::write(&fake, "#!/bin/sh\n: > \"$RAN\"\n").expect("fake");
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let wrong: Vec<String> = ROWS
        .iter()
        .filter(|&&(line, runs, _)| bash_runs(dir.path(), line) != runs)
        .map(|(line, runs, _)| format!("{line:?}: the table says bash runs it: {runs}"))
        .collect();
    assert!(wrong.is_empty(), "bash disagrees:\n{}", wrong.join("\n"));
}

#[test]
fn a_line_bash_would_run_it_on_is_never_handed_to_the_shell() {
    let mut wrong = Vec::new();
    for &(line, runs, want) in ROWS {
        let got = recognize(line);
        assert_eq!(got, recognize_unfiltered(line), "pre-filter on {line:?}");
        let seen = match &got {
            Recognized::NotOurs => Shell,
            Recognized::Ours(Err(r)) if r.message().contains("must stand alone") => Refused,
            Recognized::Ours(_) => {
                wrong.push(format!("{line:?}: {got:?}"));
                continue;
            }
        };
        // The rule: what bash would run is ours. The table then pins the
        // rest exactly, so no fix starts claiming lines bash leaves alone.
        if (runs && seen == Shell) || seen != want {
            wrong.push(format!("{line:?}: expected {want:?}, got {got:?}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} rows:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}
