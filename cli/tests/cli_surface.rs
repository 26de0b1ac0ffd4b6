//! Issue 46, operator 9: what the CLI offers an operator besides its
//! subcommands' work, through the built binary. `--trace` is taken only by
//! the subcommands that start a server; each manual page has its
//! examples as `--help` has them, each command on a line of its own as
//! typed, and `man --dir` creates a missing folder; completion knows the
//! registry's provider ids.

mod common;

use common::{CLI, bash_complete, cli, text, utf8};

use std::process::{Command, Stdio};

/// The subcommands that start a server (`check` and `get` with `--start`).
const STARTING: [&str; 5] = ["check", "list", "turn", "invoke", "get"];

/// Every other subcommand, with what it needs to parse.
const OTHERS: [&[&str]; 8] = [
    &["add", "x", "--", "srv"],
    &["set", "x", "--scope", "global"],
    &["enable", "x"],
    &["disable", "x"],
    &["remove", "x"],
    &["audit", "verify", "a.jsonl"],
    &["completions", "bash"],
    &["man"],
];

#[test]
fn trace_is_offered_only_by_the_subcommands_that_start_a_server() {
    for sub in STARTING {
        let help = text(&cli(&[sub, "--help"]).stdout);
        assert!(help.contains("--trace <FILE>"), "{sub}: {help}");
    }
    let top = text(&cli(&["--help"]).stdout);
    assert!(!top.contains("--trace"), "{top}");
    // In a folder of its own: nothing a run might write lands elsewhere.
    let dir = tempfile::tempdir().expect("tempdir");
    let run = |args: &[&str]| {
        Command::new(CLI)
            .args(args)
            .current_dir(dir.path())
            .env_remove("SPEAR_CAPABILITIES_FILE")
            .stdin(Stdio::null())
            .output()
            .expect("runs")
    };
    for args in OTHERS {
        let help = text(&cli(&[args[0], "--help"]).stdout);
        assert!(!help.contains("--trace"), "{args:?}: {help}");
        let out = run(&traced(args));
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            text(&out.stderr).contains("unexpected argument '--trace'"),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(
            common::listing(dir.path()).is_empty(),
            "{args:?} wrote {:?}",
            common::listing(dir.path())
        );
    }
    // `check` and `get` start a server only with --start.
    for args in [["check", "c.json"], ["get", "x"]] {
        let out = run(&traced(&args));
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            text(&out.stderr).contains("--start"),
            "{}",
            text(&out.stderr)
        );
    }
}

/// `args` with `--trace FILE` after the subcommand's own words (before a
/// `--`, after which it would be the server's).
fn traced<'a>(args: &[&'a str]) -> Vec<&'a str> {
    let mut traced = args.to_vec();
    let at = traced
        .iter()
        .position(|a| *a == "--")
        .unwrap_or(traced.len());
    traced.splice(at..at, ["--trace", "t.jsonl"]);
    traced
}

/// The command lines a `--help` ends with, in order.
fn help_examples(help: &str) -> Vec<String> {
    let at = help.find("\nExamples:\n").expect("examples");
    help[at..]
        .lines()
        .skip(2)
        .filter(|l| l.starts_with("  ") && !l.starts_with("      "))
        .map(|l| l[2..].to_owned())
        .collect()
}

/// The command lines of a page's EXAMPLES section, each a line of roff
/// between `.nf` and `.fi`, unescaped; and the sentence before each.
fn page_examples(page: &str) -> Vec<(String, String)> {
    let at = page.find(".SH EXAMPLES\n").expect("an EXAMPLES section");
    let section = &page[at..];
    let section = &section[..section[1..].find("\n.SH ").map_or(section.len(), |e| e + 1)];
    let lines: Vec<&str> = section.lines().collect();
    let unescape = |l: &str| {
        l.replace("\\-", "-")
            .replace("\\*(Aq", "'")
            .replace("\\&", "")
    };
    lines
        .windows(5)
        .filter(|w| w[2] == ".nf" && w[4] == ".fi")
        .map(|w| (unescape(w[0]), unescape(w[3])))
        .collect()
}

#[test]
fn each_manual_page_has_its_examples_one_command_a_line_as_typed() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A folder that does not exist yet, two levels down, is created.
    let pages = dir.path().join("share/man1");
    let out = cli(&["man", "--dir", utf8(&pages)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let mut subs: Vec<&str> = STARTING.to_vec();
    subs.extend(OTHERS.iter().map(|a| a[0]));
    for sub in std::iter::once("").chain(subs) {
        let (name, args) = if sub.is_empty() {
            ("spear-capabilities.1".to_owned(), vec!["--help"])
        } else {
            (format!("spear-capabilities-{sub}.1"), vec![sub, "--help"])
        };
        let page = std::fs::read_to_string(pages.join(&name)).expect(&name);
        assert!(
            !page.contains(".SH EXTRA"),
            "{name}: --help's text filled as a paragraph"
        );
        let mut help = text(&cli(&args).stdout);
        if sub == "audit" {
            // Its examples are its one subcommand's.
            help = text(&cli(&["audit", "verify", "--help"]).stdout);
        }
        let expected = help_examples(&help);
        let examples = page_examples(&page);
        assert!(examples.len() >= 2, "{name}: {examples:?}");
        let commands: Vec<String> = examples.iter().map(|(_, c)| c.clone()).collect();
        assert_eq!(commands, expected, "{name}");
        for (what, _) in &examples {
            assert!(what.len() > 10 && what.ends_with(':'), "{name}: {what:?}");
        }
    }
    // What `man` prints is the program's page, examples and all.
    let printed = text(&cli(&["man"]).stdout);
    assert_eq!(
        printed,
        std::fs::read_to_string(pages.join("spear-capabilities.1")).expect("page")
    );
}

/// The candidates that are not flags (an empty word completes both).
fn ids(candidates: &str) -> Vec<&str> {
    candidates.lines().filter(|l| !l.starts_with('-')).collect()
}

#[test]
fn completion_offers_the_registrys_provider_ids() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("capabilities.json");
    std::fs::write(
        &file,
        r#"{"providers": [
            {"id": "notes", "command": ["srv"], "scope": "global"},
            {"id": "tracker", "command": ["srv"]},
            {"id": "typo", "command": ["srv"], "timout": 5}
        ]}"#,
    )
    .expect("write");
    let path = utf8(&file);
    for sub in ["get", "set", "enable", "disable", "remove"] {
        let words = format!("spear-capabilities {sub} --capabilities {path} ''");
        // A refused entry's id too: `get` shows it, `remove` takes it out.
        assert_eq!(
            ids(&bash_complete(&words, 4, &[])),
            ["notes", "tracker", "typo"],
            "{sub}"
        );
        let words = format!("spear-capabilities {sub} --capabilities={path} tr");
        assert_eq!(bash_complete(&words, 3, &[]), "tracker\n", "{sub}");
    }
    // Without --capabilities: the file the variable names, as a run reads it.
    let by_variable = bash_complete(
        "spear-capabilities get ''",
        2,
        &[("SPEAR_CAPABILITIES_FILE", path)],
    );
    assert_eq!(ids(&by_variable), ["notes", "tracker", "typo"]);
    // `invoke` gets the start of a capability id of a registered entry.
    let words = format!("spear-capabilities invoke --capabilities {path} ''");
    assert_eq!(ids(&bash_complete(&words, 4, &[])), ["notes/", "tracker/"]);
}
