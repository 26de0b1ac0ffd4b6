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
    /// Answered by SPEAR (here always refused: it does not stand alone, or
    /// not on one line).
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
    // The body of an unquoted here-document: bash runs what `$(` and
    // backquotes hold in it, also inside `${...}`, `$((...))` and `$[...]`,
    // whatever quotes or `#` stand around them (they are text there).
    ("cat <<EOF\n$(spear-capability list)\nEOF", true, Refused),
    (
        "cat <<-EOF\n\t$(spear-capability list)\n\tEOF",
        true,
        Refused,
    ),
    ("cat <<EOF\n`spear-capability list`\nEOF", true, Refused),
    (
        "cat <<EOF\n${x:-$(spear-capability list)}\nEOF",
        true,
        Refused,
    ),
    (
        "cat <<EOF\n$((1+$(spear-capability list)))\nEOF",
        true,
        Refused,
    ),
    (
        "cat <<EOF\n$[1+$(spear-capability list)]\nEOF",
        true,
        Refused,
    ),
    (
        "cat <<EOF\n${x:-`spear-capability list`}\nEOF",
        true,
        Refused,
    ),
    (
        "cat <<EOF\n${x:-${y:-$(spear-capability list)}}\nEOF",
        true,
        Refused,
    ),
    (
        "cat <<EOF\n${x:-'$(spear-capability list)'}\nEOF",
        true,
        Refused,
    ),
    (
        "cat <<EOF\n${x:-\"$(spear-capability list)\"}\nEOF",
        true,
        Refused,
    ),
    (
        "cat <<EOF\n\"$(spear-capability list)\"\nEOF",
        true,
        Refused,
    ),
    ("cat <<EOF\n'$(spear-capability list)'\nEOF", true, Refused),
    ("cat <<EOF\n# $(spear-capability list)\nEOF", true, Refused),
    (
        "cat <<EOF\n' \" $(spear-capability list)\nEOF",
        true,
        Refused,
    ),
    (
        "cat <<EOF\n\\\\$(spear-capability list)\nEOF",
        true,
        Refused,
    ),
    (
        "cat <<EOF\nx\\\n$(spear-capability list)\nEOF",
        true,
        Refused,
    ),
    (
        "cat <<EOF\n$(\\\nspear-capability list)\nEOF",
        true,
        Refused,
    ),
    (
        "cat <<EOF\n$(spear-capab\\\nility list)\nEOF",
        true,
        Refused,
    ),
    (
        "cat <<EOF\n$(echo a\nspear-capability list)\nEOF",
        true,
        Refused,
    ),
    (
        "cat <<EOF\n$(echo; spear-capability list)\nEOF",
        true,
        Refused,
    ),
    (
        "cat <<EOF\n$(echo ')'; spear-capability list)\nEOF",
        true,
        Refused,
    ),
    (
        "cat <<EOF\n$( (spear-capability list) )\nEOF",
        true,
        Refused,
    ),
    (
        "cat <<EOF\n$(x=$(spear-capability list))\nEOF",
        true,
        Refused,
    ),
    (
        "cat <<EOF\n`echo \\`spear-capability list\\``\nEOF",
        true,
        Refused,
    ),
    (
        "cat <<EOF\r\n$(spear-capability list)\r\nEOF\r\n",
        true,
        Refused,
    ),
    (
        "cat <<a$(b)c\n$(spear-capability list)\na$(b)c",
        true,
        Refused,
    ),
    (
        "cat <<A <<B\n$(spear-capability list)\nA\nx\nB",
        true,
        Refused,
    ),
    (
        "cat <<EOF\n$(cat <<X\nX\nspear-capability list)\nEOF",
        true,
        Refused,
    ),
    (
        "echo $(cat <<EOF\n$(spear-capability list)\nEOF\n)",
        true,
        Refused,
    ),
    (
        "x=$(cat <<EOF\n$(spear-capability list)\nEOF\n)",
        true,
        Refused,
    ),
    // A body ends at its delimiter's line, whatever is open in it.
    (
        "cat <<EOF\n$(echo a\nEOF\nspear-capability list\n)\nEOF",
        true,
        Refused,
    ),
    (
        "cat <<EOF\n$(echo \"\nEOF\n\"; spear-capability list)\nEOF",
        false,
        Shell,
    ),
    // On the side of more: bash does not run a substitution a body leaves
    // open; SPEAR answers the line all the same.
    ("cat <<EOF\n$(spear-capability list\nEOF", false, Refused),
    // A quoted delimiter, any part of it, makes the body data; so does an
    // escaped `$`, a `\`-newline joining a word, arithmetic, a nested
    // quoted body, an argument.
    ("cat <<'EOF'\n$(spear-capability list)\nEOF", false, Shell),
    ("cat <<\"EOF\"\n$(spear-capability list)\nEOF", false, Shell),
    ("cat <<\\EOF\n$(spear-capability list)\nEOF", false, Shell),
    ("cat <<E\"O\"F\n$(spear-capability list)\nEOF", false, Shell),
    ("cat <<E'O'F\n`spear-capability list`\nEOF", false, Shell),
    (
        "cat <<-'EOF'\n\t$(spear-capability list)\n\tEOF",
        false,
        Shell,
    ),
    ("cat <<EOF\n\\$(spear-capability list)\nEOF", false, Shell),
    ("cat <<EOF\n\\`spear-capability list`\nEOF", false, Shell),
    (
        "cat <<EOF\n$(echo \\\nspear-capability list)\nEOF",
        false,
        Shell,
    ),
    ("cat <<EOF\n$((spear-capability))\nEOF", false, Shell),
    (
        "cat <<EOF\n$(echo spear-capability list)\nEOF",
        false,
        Shell,
    ),
    (
        "cat <<EOF\n$(cat <<X\nspear-capability list\nX\n)\nEOF",
        false,
        Shell,
    ),
    (
        "cat <<'A' <<B\n$(spear-capability list)\nA\nx\nB",
        false,
        Shell,
    ),
    (
        "cat <<A <<'B'\nx\nA\n$(spear-capability list)\nB",
        false,
        Shell,
    ),
    // Within double quotes too, bash runs a `$(` between single quotes
    // inside `${...}`; unquoted, the single quotes quote it.
    ("echo \"${x:-'$(spear-capability list)'}\"", true, Refused),
    (
        "echo \"${x:-'\"'$(spear-capability list)'\"'}\"",
        true,
        Refused,
    ),
    ("echo ${x:-'$(spear-capability list)'}", false, Shell),
    // A carriage return is an ordinary character to bash, not a blank.
    ("\rspear-capability list", false, Shell),
    (" \r spear-capability list", false, Shell),
    ("spear-capability\rlist", false, Shell),
    ("cd /tmp;\rspear-capability list", false, Shell),
    ("echo x\r\nspear-capability list", true, Refused),
    ("echo x \rspear-capability list", false, Shell),
    // One line: bash runs these; SPEAR refuses them, saying so.
    ("spear-capability invoke a/b '{\n}'", true, Refused),
    ("spear-capability \\\nlist", true, Refused),
    ("spear-\\\ncapability list", true, Refused),
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
            Recognized::Ours(Err(r))
                if r.message().contains("must stand alone")
                    || r.message().contains("must stand on one line") =>
            {
                Refused
            }
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
