//! The recognizer, line by line: what a turn types and what must happen.
//!
//! Rows are grouped by the SPEAR manual's phrases (3.6.2); each group's name
//! is the test that `docs/spec-coverage.md` points at.

use serde_json::Value;
use spear_capabilities::Command;
use spear_capabilities::internals::command::{Recognized, recognize, recognize_unfiltered};

/// What a row expects.
#[derive(Debug, Clone, Copy)]
enum Expect {
    /// Handed to the shell.
    Shell,
    /// `list`.
    List,
    /// `describe <id>`.
    Describe(&'static str),
    /// `describe <id> <property>...`, the path joined by spaces.
    DescribeProperty(&'static str, &'static str),
    /// `invoke <id> <json>`.
    Invoke(&'static str, &'static str),
    /// Refused with a message containing this text.
    Refused(&'static str),
}
use Expect::*;

fn check(rows: &[(&str, Expect)]) {
    let mut failures = Vec::new();
    for &(line, expect) in rows {
        let got = recognize(line);
        // The pre-filter must never change an answer.
        assert_eq!(got, recognize_unfiltered(line), "pre-filter on {line:?}");
        let ok = match (&got, expect) {
            (Recognized::NotOurs, Shell) => true,
            (Recognized::Ours(Ok(Command::List)), List) => true,
            (Recognized::Ours(Ok(Command::Describe { id, property })), Describe(want)) => {
                property.is_empty() && id.to_string() == want
            }
            (
                Recognized::Ours(Ok(Command::Describe { id, property })),
                DescribeProperty(want, path),
            ) => id.to_string() == want && property.join(" ") == path,
            (Recognized::Ours(Ok(Command::Invoke { id, arguments })), Invoke(want, json)) => {
                let want_args: Value = serde_json::from_str(json).expect("row's json");
                id.to_string() == want && Value::Object(arguments.clone()) == want_args
            }
            (Recognized::Ours(Err(refusal)), Refused(text)) => {
                // "one short message": one line, bounded whatever the input.
                let m = refusal.message();
                m.contains(text) && !m.contains('\n') && m.chars().count() <= 240
            }
            _ => false,
        };
        if !ok {
            failures.push(format!(
                "{line:?}\n    expected {expect:?}\n    got      {got:?}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} rows failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

const ALONE: &str = "must stand alone on its line";
const ONE_LINE: &str = "must stand on one line";

/// "as the first word": leading white space and blank lines do not matter,
/// nor do trailing ones or Windows line endings.
#[test]
fn first_word() {
    check(FIRST_WORD);
}

const FIRST_WORD: &[(&str, Expect)] = &[
    ("spear-capability list", List),
    ("  spear-capability list", List),
    ("\tspear-capability list", List),
    ("\n\n  spear-capability list", List),
    (" \t \n \r\n\tspear-capability list", List),
    ("spear-capability\tlist", List),
    ("spear-capability   list", List),
    ("spear-capability list\n", List),
    ("spear-capability list\r\n", List),
    ("\r\nspear-capability list\r\n", List),
    ("spear-capability list   ", List),
    ("spear-capability list\n\n\n", List),
    // A carriage return that ends the line ends it, as in `\r\n`.
    ("spear-capability list\r", List),
    // Only a newline continues a line: before `\r\n` a backslash quotes
    // the carriage return, so bash runs the id as a command of its own.
    (
        "spear-capability describe \\\r\n tracker/get_issue",
        Refused(ALONE),
    ),
];

/// "or after ;, &, |, a newline, (, a backquote or $(": recognized there,
/// and then refused because it does not stand alone.
#[test]
fn after_separators() {
    check(AFTER_SEPARATORS);
}

const AFTER_SEPARATORS: &[(&str, Expect)] = &[
    (
        "cd x && spear-capability list",
        Refused("`cd x &&` comes before it"),
    ),
    (
        "cd x; spear-capability list",
        Refused("`cd x;` comes before it"),
    ),
    ("cd x;spear-capability list", Refused(ALONE)),
    (
        "make & spear-capability list",
        Refused("`make &` comes before it"),
    ),
    ("make &spear-capability list", Refused(ALONE)),
    ("true || spear-capability list", Refused(ALONE)),
    ("a && b || spear-capability list", Refused(ALONE)),
    (
        "ls | spear-capability list",
        Refused("`ls |` comes before it"),
    ),
    ("ls|spear-capability list", Refused(ALONE)),
    ("ls |& spear-capability list", Refused(ALONE)),
    ("true ;; spear-capability list", Refused(ALONE)),
    ("ls\nspear-capability list", Refused("`ls` comes before it")),
    (
        "ls\r\nspear-capability list",
        Refused("`ls` comes before it"),
    ),
    ("cd x &&\nspear-capability list", Refused(ALONE)),
    (
        "# note\nspear-capability list",
        Refused("`# note` comes before it"),
    ),
    ("(spear-capability list)", Refused("`(` comes before it")),
    ("( spear-capability list )", Refused(ALONE)),
    ("(cd x; spear-capability list)", Refused(ALONE)),
    ("diff <(spear-capability list) x", Refused(ALONE)),
    (
        "echo `spear-capability list`",
        Refused("`` echo ` `` comes before it"),
    ),
    ("`spear-capability list`", Refused(ALONE)),
    (
        "echo $(spear-capability list)",
        Refused("`echo $(` comes before it"),
    ),
    ("$(spear-capability list)", Refused(ALONE)),
    ("echo \"$(spear-capability list)\"", Refused(ALONE)),
    ("x=$(spear-capability list)", Refused(ALONE)),
    ("echo $(echo $(spear-capability list))", Refused(ALONE)),
    (
        "echo \"a $(echo \"b $(spear-capability list)\")\"",
        Refused(ALONE),
    ),
    ("echo ${x:-$(spear-capability list)}", Refused(ALONE)),
    ("echo `echo \\`spear-capability list\\``", Refused(ALONE)),
    ("FOO=1; spear-capability list", Refused(ALONE)),
    (
        "echo 日本語; spear-capability list",
        Refused("`echo 日本語;` comes before it"),
    ),
    ("echo \\$(spear-capability list)", Refused(ALONE)),
    ("if true; then x; fi; spear-capability list", Refused(ALONE)),
    (
        "echo $((1<<2))\nspear-capability list",
        Refused("`echo $((1<<2))` comes before it"),
    ),
    (
        "((x <<= 1)); spear-capability list",
        Refused("`((x <<= 1));` comes before it"),
    ),
    ("((x++))\nspear-capability list", Refused(ALONE)),
];

/// Positions a shell would run but the manual does not list: not ours.
#[test]
fn positions_outside_the_list() {
    check(POSITIONS_OUTSIDE_THE_LIST);
}

const POSITIONS_OUTSIDE_THE_LIST: &[(&str, Expect)] = &[
    ("VAR=1 spear-capability list", Shell),
    ("A=1 B=2 spear-capability list", Shell),
    ("{ spear-capability list; }", Shell),
    ("! spear-capability list", Shell),
    ("time spear-capability list", Shell),
    ("sudo spear-capability list", Shell),
    ("env spear-capability list", Shell),
    ("exec spear-capability list", Shell),
    ("command spear-capability list", Shell),
    ("nohup spear-capability list &", Shell),
    ("xargs spear-capability list", Shell),
    ("if true; then spear-capability list; fi", Shell),
    ("while true; do spear-capability list; done", Shell),
    (">out spear-capability list", Shell),
    ("2>/dev/null spear-capability list", Shell),
    ("case x in x) spear-capability list;; esac", Shell),
    ("echo `ls` spear-capability list", Shell),
    ("(ls) spear-capability list", Shell),
];

/// "a word counts when quote removal makes it spear-capability".
#[test]
fn quote_removal() {
    check(QUOTE_REMOVAL);
}

const QUOTE_REMOVAL: &[(&str, Expect)] = &[
    ("'spear-capability' list", List),
    ("\"spear-capability\" list", List),
    ("spear\\-capability list", List),
    ("\\spear-capability list", List),
    ("spear'-'capability list", List),
    ("sp\"\"ear-capability list", List),
    ("sp''ear-capability list", List),
    ("\"spear\"-'capability' list", List),
    ("s\\p\\e\\a\\r\\-\\c\\a\\p\\a\\b\\i\\l\\i\\t\\y list", List),
    // Recognized (bash joins the lines), then refused: not on one line.
    ("spear-\\\ncapability list", Refused(ONE_LINE)),
    ("$'spear-capability' list", List),
    ("$'\\x73pear-capability' list", List),
    ("$'\\163pear-capability' list", List),
    ("$'\\u0073pear-capability' list", List),
    ("$\"spear-capability\" list", List),
    ("spear$'-'capability list", List),
    ("'spear-capability' 'list'", List),
    ("cd x && 'spear-capability' list", Refused(ALONE)),
];

/// "The name anywhere else, such as an argument to grep, is ordinary text".
#[test]
fn name_elsewhere_is_text() {
    check(NAME_ELSEWHERE_IS_TEXT);
}

const NAME_ELSEWHERE_IS_TEXT: &[(&str, Expect)] = &[
    ("grep spear-capability notes.md", Shell),
    ("grep -rn 'spear-capability' .", Shell),
    ("echo spear-capability list", Shell),
    ("echo a|grep spear-capability", Shell),
    ("man spear-capability", Shell),
    ("which spear-capability", Shell),
    ("type spear-capability", Shell),
    ("command -v spear-capability", Shell),
    ("ls spear-capability/", Shell),
    ("cd spear-capability && ls", Shell),
    ("echo x > spear-capability", Shell),
    ("cat < spear-capability", Shell),
    ("FOO=bar cargo run -- spear-capability list", Shell),
    ("npx spear-capability list", Shell),
    ("git commit -m \"use spear-capability list\"", Shell),
    (
        "find . -name '*.rs' -exec grep -l spear-capability {} \\;",
        Shell,
    ),
    ("python3 -c \"print('spear-capability')\"", Shell),
    ("echo $'spear-capability\\n'", Shell),
];

/// Inside a larger quoted string, escaped separators.
#[test]
fn inside_quotes() {
    check(INSIDE_QUOTES);
}

const INSIDE_QUOTES: &[(&str, Expect)] = &[
    ("echo \"a; spear-capability list\"", Shell),
    ("echo 'a; spear-capability list'", Shell),
    ("echo \"a && spear-capability list\"", Shell),
    ("echo 'a | spear-capability list'", Shell),
    ("echo \"a\nspear-capability list\"", Shell),
    ("echo 'a\nspear-capability list'", Shell),
    ("echo a \\; spear-capability list", Shell),
    ("echo a ';' spear-capability list", Shell),
    ("echo a\";\" spear-capability list", Shell),
    ("echo a \\| spear-capability list", Shell),
    ("echo a \\& spear-capability list", Shell),
    ("echo \\( spear-capability list", Shell),
    ("echo '$(spear-capability list)'", Shell),
    ("echo \"\\$(spear-capability list)\"", Shell),
    ("echo \"\\`spear-capability list\\`\"", Shell),
    ("echo \"$(echo 'spear-capability list')\"", Shell),
    ("echo \"spear-capability list\"", Shell),
    ("\"spear-capability list\"", Shell),
    ("'spear-capability '", Shell),
    ("echo 'unterminated; spear-capability list", Shell),
    ("echo \"unterminated\nspear-capability list", Shell),
    ("echo ${x:-;spear-capability list}", Shell),
    ("echo ${x:-a b; spear-capability list}", Shell),
    ("echo $'a\\'; spear-capability list'", Shell),
];

/// In a comment or a here-document body.
#[test]
fn comments_and_heredocs() {
    check(COMMENTS_AND_HEREDOCS);
}

const COMMENTS_AND_HEREDOCS: &[(&str, Expect)] = &[
    ("# spear-capability list", Shell),
    ("ls # spear-capability list", Shell),
    ("ls #; spear-capability list", Shell),
    ("ls # a\n# spear-capability list\n", Shell),
    ("echo ok # comment with spear-capability", Shell),
    ("cat <<EOF\nspear-capability list\nEOF\n", Shell),
    ("cat <<'EOF'\nspear-capability list\nEOF", Shell),
    ("cat << \"EOF\"\nspear-capability list\nEOF", Shell),
    ("cat <<-EOF\n\tspear-capability list\n\tEOF\n", Shell),
    ("cat <<'EOF'\n$(spear-capability list)\nEOF", Shell),
    ("cat <<\"EOF\"\n$(spear-capability list)\nEOF", Shell),
    ("cat <<\\EOF\n$(spear-capability list)\nEOF", Shell),
    ("cat <<E'O'F\n`spear-capability list`\nEOF", Shell),
    ("cat <<EOF\n\\$(spear-capability list)\nEOF", Shell),
    (
        "cat <<EOF\n$(cat <<X\nspear-capability list\nX\n)\nEOF",
        Shell,
    ),
    ("cat <<EOF\n$(echo spear-capability list)\nEOF", Shell),
    ("cat <<EOF\n$((spear-capability))\nEOF", Shell),
    // In an unquoted body bash runs what `$(` and backquotes hold, in
    // `${...}` and `$((...))` too: recognized, and refused, since the
    // command does not stand alone.
    (
        "cat <<EOF\n$(spear-capability list)\nEOF",
        Refused("`cat <<EOF $(` comes before it"),
    ),
    (
        "cat <<-EOF\n\t$(spear-capability list)\n\tEOF",
        Refused(ALONE),
    ),
    ("cat <<EOF\n`spear-capability list`\nEOF", Refused(ALONE)),
    (
        "cat <<EOF\n${x:-$(spear-capability list)}\nEOF",
        Refused(ALONE),
    ),
    (
        "cat <<EOF\n$((1+$(spear-capability list)))\nEOF",
        Refused(ALONE),
    ),
    ("cat <<EOF\n'$(spear-capability list)'\nEOF", Refused(ALONE)),
    (
        "cat <<EOF\n# \"$(spear-capability list)\nEOF",
        Refused(ALONE),
    ),
    (
        "x=$(cat <<EOF\n$(spear-capability list)\nEOF\n)",
        Refused(ALONE),
    ),
    ("cat <<EOF | grep x\nspear-capability list\nEOF", Shell),
    (
        "cat <<A <<B\nspear-capability list\nA\nspear-capability list\nB\n",
        Shell,
    ),
    ("cat <<EOF\r\nspear-capability list\r\nEOF\r\n", Shell),
    ("cat <<EOF\nspear-capability list\n", Shell),
    ("x=$(cat <<EOF\nspear-capability list\nEOF\n)", Shell),
    (
        "cat <<EOF\nbody\nEOF\nspear-capability list",
        Refused(ALONE),
    ),
    (
        "cat <<EOF; spear-capability list\nbody\nEOF",
        Refused(ALONE),
    ),
    ("cat <<<spear-capability", Shell),
    ("cat <<< 'x'; spear-capability list", Refused(ALONE)),
];

/// As part of a longer word, in another script, or not the name at all.
#[test]
fn longer_words_and_look_alikes() {
    check(LONGER_WORDS_AND_LOOK_ALIKES);
}

const LONGER_WORDS_AND_LOOK_ALIKES: &[(&str, Expect)] = &[
    ("spear-capability2 list", Shell),
    ("./spear-capability list", Shell),
    ("/usr/bin/spear-capability list", Shell),
    ("spear-capabilities list", Shell),
    ("spear-capability-list", Shell),
    ("xspear-capability list", Shell),
    ("spear_capability list", Shell),
    ("Spear-Capability list", Shell),
    ("SPEAR-CAPABILITY list", Shell),
    ("spear capability list", Shell),
    ("spear-capability=1", Shell),
    ("spear-capability=1 ls", Shell),
    ("spear-capability\u{a0}list", Shell),
    ("\u{ff53}pear-capability list", Shell),
    ("spear\u{2010}capability list", Shell),
    ("spear-capability\u{200b} list", Shell),
    ("echo $((spear-capability))", Shell),
    ("((spear-capability))", Shell),
    ("(( spear-capability - 1 ))", Shell),
    ("arr=(spear-capability list)", Shell),
    ("echo ${x:-spear-capability}", Shell),
    ("spear-cap'ability list'", Shell),
    ("\"spear\" \"-capability\" list", Shell),
    ("spear${x}-capability list", Shell),
    ("~/spear-capability list", Shell),
    // A carriage return is a character to bash, not a blank.
    ("\rspear-capability list", Shell),
    ("spear-capability\rlist", Shell),
    ("ls; \rspear-capability list", Shell),
];

/// Ordinary terminal traffic: pipelines, loops, subshells, tools.
#[test]
fn everyday_commands() {
    check(EVERYDAY_COMMANDS);
}

const EVERYDAY_COMMANDS: &[(&str, Expect)] = &[
    ("", Shell),
    ("   ", Shell),
    ("\n\n", Shell),
    ("ls -la", Shell),
    ("cargo test --workspace 2>&1 | tail -20", Shell),
    ("cd /work && git status && git diff --stat", Shell),
    ("for f in *.rs; do echo \"$f\"; done", Shell),
    ("(cd core && cargo build) || exit 1", Shell),
    ("echo $(date) `whoami` $((1 + 2)) ${HOME:-/}", Shell),
    (
        "cat > notes.md <<'EOF'\n# Notes\nrun `ls`; then $(x)\nEOF",
        Shell,
    ),
    ("grep -E 'a|b' file | sort | uniq -c", Shell),
    ("jq '.items[] | select(.name == \"x\")' data.json", Shell),
    ("python3 - <<'PY'\nprint('hi')\nPY", Shell),
    ("echo \"unicode ✓ → ok\"; ls", Shell),
    ("sed -i 's/a;b/c/' f.txt", Shell),
    ("cut -d$'\\t' -f1 data.tsv", Shell),
    ("git log --oneline | head -5\r\n", Shell),
    ("echo \"it's\"; echo spear-capability", Shell),
    ("npm run build && npm test", Shell),
];

/// "it must stand alone on one line": whatever comes before or after is named.
#[test]
fn stand_alone() {
    check(STAND_ALONE);
}

const STAND_ALONE: &[(&str, Expect)] = &[
    (
        "spear-capability list | jq .",
        Refused("`| jq .` follows it"),
    ),
    ("spear-capability list; ls", Refused("`; ls` follows it")),
    (
        "spear-capability list && echo ok",
        Refused("`&& echo ok` follows it"),
    ),
    ("spear-capability list &", Refused("`&` follows it")),
    ("spear-capability list &&", Refused(ALONE)),
    (
        "spear-capability list > out.txt",
        Refused("`> out.txt` follows it"),
    ),
    ("spear-capability list 2>&1", Refused("`2>&1` follows it")),
    (
        "spear-capability list\nls",
        Refused("`ls` follows on a later line"),
    ),
    (
        "spear-capability list\r\nls\r\n",
        Refused("`ls` follows on a later line"),
    ),
    ("spear-capability list # hi", Refused("`# hi` follows it")),
    (
        "spear-capability list\n# hi",
        Refused("`# hi` follows on a later line"),
    ),
    ("spear-capability list)", Refused("`)` follows it")),
    ("spear-capability(", Refused("`(` follows it")),
    ("spear-capability list (x)", Refused(ALONE)),
    ("spear-capability list <<EOF\nx\nEOF", Refused(ALONE)),
    (
        "spear-capability list\nspear-capability list",
        Refused(ALONE),
    ),
    (
        "ls; spear-capability list; ls",
        Refused("`ls;` comes before it"),
    ),
    // "on one line": a quoted line break or a backslash-newline inside the
    // command is refused, whatever the JSON would parse to.
    (
        "spear-capability invoke a/b '{\n  \"q\": \"multi\",\n  \"n\": 2\n}'",
        Refused(ONE_LINE),
    ),
    (
        "spear-capability invoke a/b '{\"q\":\n1}'\n\n",
        Refused(ONE_LINE),
    ),
    (
        "spear-capability invoke a/b \"{\\\"q\\\":\n1}\"",
        Refused(ONE_LINE),
    ),
    ("spear-capability invoke a/b $'{\n}'", Refused(ONE_LINE)),
    (
        "spear-capability invoke a/b '{\"q\":\r\n1}'",
        Refused(ONE_LINE),
    ),
    ("spear-capability list \\\n", Refused(ONE_LINE)),
    ("spear-capability \\\nlist", Refused(ONE_LINE)),
    ("spear-capability invoke \\\n a/b '{}'", Refused(ONE_LINE)),
    ("spear-capability invoke a/b \\\n'{}'\n", Refused(ONE_LINE)),
    ("spear-capability invoke a/b '{}' \\\n\n", Refused(ONE_LINE)),
    // A line break elsewhere is not the command's: blank lines around it,
    // a quoted one inside an escape (`$'\n'` is two characters), `\r\n`.
    ("\n\nspear-capability list\n\n", List),
    (
        "spear-capability invoke a/b $'{\"q\": \"a\\\\nb\"}'\r\n",
        Invoke("a/b", r#"{"q": "a\nb"}"#),
    ),
];

/// "its words are split but never expanded".
#[test]
fn split_never_expanded() {
    check(SPLIT_NEVER_EXPANDED);
}

const SPLIT_NEVER_EXPANDED: &[(&str, Expect)] = &[
    (
        "spear-capability describe tracker/search_issues",
        Describe("tracker/search_issues"),
    ),
    (
        "spear-capability describe 'tracker/search_issues'",
        Describe("tracker/search_issues"),
    ),
    (
        "spear-capability describe tracker/a/b",
        Describe("tracker/a/b"),
    ),
    ("spear-capability describe $HOME/x", Describe("$HOME/x")),
    ("spear-capability describe ~/x", Describe("~/x")),
    ("spear-capability describe {a,b}/c", Describe("{a,b}/c")),
    ("spear-capability describe a/*", Describe("a/*")),
    (
        "spear-capability describe $(echo a)/b",
        Describe("$(echo a)/b"),
    ),
    ("spear-capability describe a/b\\ c", Describe("a/b c")),
    ("spear-capability describe \"a/$x\"", Describe("a/$x")),
    ("spear-capability invoke a/b", Invoke("a/b", "{}")),
    ("spear-capability invoke a/b '{}'", Invoke("a/b", "{}")),
    (
        "spear-capability invoke tracker/search_issues '{\"query\": \"crash\", \"limit\": 5}'",
        Invoke("tracker/search_issues", r#"{"query": "crash", "limit": 5}"#),
    ),
    (
        "spear-capability invoke a/b \"{\\\"x\\\": 1}\"",
        Invoke("a/b", r#"{"x": 1}"#),
    ),
    (
        "spear-capability invoke a/b {\\\"x\\\":1}",
        Invoke("a/b", r#"{"x": 1}"#),
    ),
    (
        "spear-capability invoke a/b '{\"p\": \"$HOME/*.rs\"}'",
        Invoke("a/b", r#"{"p": "$HOME/*.rs"}"#),
    ),
    (
        "spear-capability invoke a/b \"{\\\"p\\\": \\\"$HOME\\\"}\"",
        Invoke("a/b", r#"{"p": "$HOME"}"#),
    ),
    (
        "spear-capability invoke a/b \"{\\\"q\\\": \\\"$(whoami)\\\"}\"",
        Invoke("a/b", r#"{"q": "$(whoami)"}"#),
    ),
    (
        "spear-capability invoke a/b \"{\\\"q\\\": \\\"`id`\\\"}\"",
        Invoke("a/b", r#"{"q": "`id`"}"#),
    ),
    (
        "spear-capability invoke a/b '{\"q\": \"~\"}'",
        Invoke("a/b", r#"{"q": "~"}"#),
    ),
    (
        "spear-capability invoke a/b '{\"q\": \"a;b|c&d\"}'",
        Invoke("a/b", r#"{"q": "a;b|c&d"}"#),
    ),
    (
        "spear-capability invoke a/b '{\"q\": \"it'\"'\"'s\"}'",
        Invoke("a/b", r#"{"q": "it's"}"#),
    ),
    (
        "spear-capability invoke a/b $'{\"q\": \"a\\\\nb\"}'",
        Invoke("a/b", r#"{"q": "a\nb"}"#),
    ),
    (
        "spear-capability invoke a/b '{\"名前\": \"値 ✓\"}'",
        Invoke("a/b", r#"{"名前": "値 ✓"}"#),
    ),
    (
        "spear-capability invoke a/b '{\"q\": \"x\"}'\r\n",
        Invoke("a/b", r#"{"q": "x"}"#),
    ),
    (
        "spear-capability invoke a/b\t'{\"q\":1}'",
        Invoke("a/b", r#"{"q": 1}"#),
    ),
    (
        "spear-capability   invoke   a/b   '{}'  ",
        Invoke("a/b", "{}"),
    ),
    (
        "spear-capability invoke a/b ' {\"x\": 1} '",
        Invoke("a/b", r#"{"x": 1}"#),
    ),
    (
        "spear-capability invoke a/b '{\"n\": {\"d\": [1, {\"x\": null}]}}'",
        Invoke("a/b", r#"{"n": {"d": [1, {"x": null}]}}"#),
    ),
    (
        "spear-capability invoke a/b '{\"q\": \"# not a comment\"}'",
        Invoke("a/b", r##"{"q": "# not a comment"}"##),
    ),
    (
        "spear-capability invoke a/b '{\"q\":'\"1\"'}'",
        Invoke("a/b", r#"{"q": 1}"#),
    ),
    (
        "spear-capability invoke a/b '{\"q\": 1}'\n\n",
        Invoke("a/b", r#"{"q": 1}"#),
    ),
];

/// "Once recognised it is answered by SPEAR - with a result or a refusal -
/// whatever is wrong with it": each wrong form says what and the right form.
#[test]
fn refusals_teach() {
    check(REFUSALS_TEACH);
}

const REFUSALS_TEACH: &[(&str, Expect)] = &[
    ("spear-capability", Refused("needs a verb")),
    ("spear-capability\n", Refused("needs a verb")),
    ("spear-capability help", Refused("unknown verb `help`")),
    ("spear-capability --help", Refused("unknown verb `--help`")),
    ("spear-capability LIST", Refused("unknown verb `LIST`")),
    (
        "spear-capability lsit",
        Refused("; the verbs: spear-capability list | spear-capability describe"),
    ),
    (
        "spear-capability call a/b '{}'",
        Refused("unknown verb `call`"),
    ),
    (
        "spear-capability list extra",
        Refused("too many words: `extra`"),
    ),
    (
        "spear-capability list extra",
        Refused("spear-capability list"),
    ),
    (
        "spear-capability describe",
        Refused("missing capability id"),
    ),
    (
        "spear-capability describe tracker",
        Refused("malformed capability id `tracker`"),
    ),
    (
        "spear-capability describe /search",
        Refused("malformed capability id"),
    ),
    (
        "spear-capability describe tracker/",
        Refused("malformed capability id"),
    ),
    (
        "spear-capability describe /",
        Refused("malformed capability id"),
    ),
    (
        "spear-capability describe ''",
        Refused("malformed capability id"),
    ),
    (
        "spear-capability describe a/b c",
        DescribeProperty("a/b", "c"),
    ),
    (
        "spear-capability describe a/b filter 'date range'",
        DescribeProperty("a/b", "filter date range"),
    ),
    ("spear-capability invoke", Refused("missing capability id")),
    (
        "spear-capability invoke trackersearch '{}'",
        Refused("<provider>/<tool>"),
    ),
    (
        "spear-capability invoke a/b '{}' extra",
        Refused("too many words: `extra`"),
    ),
    (
        "spear-capability invoke a/b {\"x\": 1}",
        Refused("quote the JSON object as one word"),
    ),
    (
        "spear-capability invoke a/b {\"x\":1}",
        Refused("not valid JSON (key must be a string at line 1 column 2)"),
    ),
    (
        "spear-capability invoke a/b '{\"x\":}'",
        Refused("line 1 column 6"),
    ),
    (
        "spear-capability invoke a/b '{\"x\":1, \"y\"}'",
        Refused("line 1 column 12"),
    ),
    (
        "spear-capability invoke a/b '[1,2]'",
        Refused("one JSON object, not an array"),
    ),
    (
        "spear-capability invoke a/b '\"s\"'",
        Refused("not a string"),
    ),
    ("spear-capability invoke a/b 42", Refused("not a number")),
    ("spear-capability invoke a/b null", Refused("not null")),
    ("spear-capability invoke a/b true", Refused("not a boolean")),
    (
        "spear-capability invoke a/b ''",
        Refused("the arguments are empty"),
    ),
    (
        "spear-capability invoke a/b '{\"a\":1}{\"b\":2}'",
        Refused("not valid JSON (trailing characters"),
    ),
    (
        "spear-capability invoke a/b \"$(cat args.json)\"",
        Refused("not valid JSON"),
    ),
    (
        "spear-capability invoke a/b '{\"x\":1}",
        Refused("unterminated single quote (the `'` at column 29)"),
    ),
    (
        "spear-capability invoke a/b \"{\\\"x\\\":1}",
        Refused("unterminated double quote"),
    ),
    (
        "spear-capability invoke a/b $'{\"x\":1}",
        Refused("unterminated $'...' quote"),
    ),
    (
        "spear-capability invoke a/b \"$(cat args.json",
        Refused("unterminated command substitution"),
    ),
    (
        "spear-capability invoke a/b `cat x",
        Refused("unterminated backquote"),
    ),
    (
        "spear-capability invoke a/b ${x",
        Refused("unterminated parameter expansion"),
    ),
    (
        "spear-capability invoke a/b '{}' \\",
        Refused("unterminated backslash"),
    ),
    (
        "spear-capability invoke a/b '{\"x\": 1}\nls",
        Refused("unterminated single quote"),
    ),
    ("\"spear-capability", Refused("unterminated double quote")),
];

#[test]
fn the_table_has_at_least_150_rows() {
    let rows: usize = [
        FIRST_WORD.len(),
        AFTER_SEPARATORS.len(),
        POSITIONS_OUTSIDE_THE_LIST.len(),
        QUOTE_REMOVAL.len(),
        NAME_ELSEWHERE_IS_TEXT.len(),
        INSIDE_QUOTES.len(),
        COMMENTS_AND_HEREDOCS.len(),
        LONGER_WORDS_AND_LOOK_ALIKES.len(),
        EVERYDAY_COMMANDS.len(),
        STAND_ALONE.len(),
        SPLIT_NEVER_EXPANDED.len(),
        REFUSALS_TEACH.len(),
    ]
    .iter()
    .sum();
    assert!(rows >= 150, "only {rows} rows");
}
