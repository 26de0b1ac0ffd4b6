//! The lexer's unit tests.

use super::*;

/// Every word's text and whether it stands in command position, in the
/// order words start.
fn words(line: &str) -> Vec<(String, bool)> {
    let lexed = lex(line);
    let mut tokens = lexed.tokens.clone();
    tokens.sort_by_key(|t| t.start);
    tokens
        .iter()
        .filter_map(|t| match t.kind {
            TokenKind::Word {
                command_position, ..
            } => Some((lexed.text(t)?.to_owned(), command_position)),
            _ => None,
        })
        .collect()
}

fn commands(line: &str) -> Vec<String> {
    words(line)
        .into_iter()
        .filter(|(_, c)| *c)
        .map(|(w, _)| w)
        .collect()
}

#[test]
fn command_positions_follow_the_separators() {
    assert_eq!(
        commands("a b; c | d && e || f & g |& h ;; i\nj (k) $(l m) `n o` x=$(p)"),
        [
            "a", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "n", "p"
        ]
    );
}

#[test]
fn nothing_else_is_a_command_position() {
    assert_eq!(
        commands("VAR=1 a >out b 2>&1 c <<<d e; ) f; { g; } ! h"),
        ["VAR=1", "{", "}"]
    );
    assert_eq!(commands("echo $((a + (b)))"), ["echo"]);
    assert_eq!(commands("arr=(a b c) d"), ["arr=(a b c)"]);
}

#[test]
fn quotes_are_removed_and_nothing_is_expanded() {
    let got: Vec<String> = words(r#"a'b c'd "e $f \" \x" $'g\th' \i ${j:-k l} ~ * {m,n}"#)
        .into_iter()
        .map(|(w, _)| w)
        .collect();
    assert_eq!(
        got,
        [
            "ab cd",
            r#"e $f " \x"#,
            "g\th",
            "i",
            "${j:-k l}",
            "~",
            "*",
            "{m,n}"
        ]
    );
}

#[test]
fn a_substitution_stays_verbatim_in_its_word() {
    let got: Vec<String> = words(r#"x"$(a "b c")"y"#)
        .into_iter()
        .map(|(w, _)| w)
        .collect();
    assert_eq!(got, ["x$(a \"b c\")y", "a", "b c"]);
}

#[test]
fn spans_and_depths_locate_each_token() {
    let line = "ab $(cd) # ef\r\ngh";
    let lexed = lex(line);
    let find = |text: &str| {
        lexed
            .tokens
            .iter()
            .find(|t| lexed.text(t) == Some(text))
            .map(|t| (&line[t.start..t.end], t.depth))
    };
    assert_eq!(find("ab"), Some(("ab", 0)));
    assert_eq!(find("cd"), Some(("cd", 1)));
    assert_eq!(find("$(cd)"), Some(("$(cd)", 0)));
    let comment = lexed
        .tokens
        .iter()
        .find(|t| t.kind == TokenKind::Comment)
        .expect("a comment");
    assert_eq!(&line[comment.start..comment.end], "# ef");
    assert!(
        lexed
            .tokens
            .iter()
            .any(|t| t.kind == TokenKind::Newline && &line[t.start..t.end] == "\r\n")
    );
}

#[test]
fn heredoc_bodies_are_one_data_token() {
    let line = "cat <<A <<-'B'\nx\nA\n\ty\n\tB\nz";
    let lexed = lex(line);
    let bodies: Vec<&str> = lexed
        .tokens
        .iter()
        .filter(|t| t.kind == TokenKind::HeredocBody)
        .map(|t| &line[t.start..t.end])
        .collect();
    assert_eq!(bodies, ["x\n", "\ty\n"]);
    assert_eq!(commands(line), ["cat", "z"]);
}

#[test]
fn the_innermost_open_construct_is_reported() {
    let open = |line: &str| lex(line).unterminated.map(|u| (u.construct, u.start));
    assert_eq!(open("a 'b"), Some((Construct::SingleQuote, 2)));
    assert_eq!(open("a \"$(b 'c"), Some((Construct::SingleQuote, 7)));
    assert_eq!(open("a \"$(b"), Some((Construct::CommandSubstitution, 3)));
    assert_eq!(open("a \"b"), Some((Construct::DoubleQuote, 2)));
    assert_eq!(open("(a"), Some((Construct::Parenthesis, 0)));
    assert_eq!(open("a `b"), Some((Construct::Backquote, 2)));
    assert_eq!(open("a $((1"), Some((Construct::Arithmetic, 2)));
    assert_eq!(open("a ${b"), Some((Construct::ParameterExpansion, 2)));
    assert_eq!(open("a $'b"), Some((Construct::AnsiCQuote, 2)));
    assert_eq!(open("a \\"), Some((Construct::Backslash, 2)));
    assert_eq!(open("a 'b' \"c\" $(d) `e` ${f} $((1))"), None);
}

#[test]
fn top_level_tokens_come_in_the_lines_order() {
    let line = "a \"$(b `c`)\" (d; e) <<X f\nbody\nX\n# g\nh=(i j) $((1))";
    let starts: Vec<usize> = lex(line)
        .tokens
        .iter()
        .filter(|t| t.depth == 0)
        .map(|t| t.start)
        .collect();
    assert!(starts.windows(2).all(|w| w[0] < w[1]), "{starts:?}");
}

#[test]
fn heredocs_left_open_end_at_the_end_of_the_line() {
    // Found by the fuzzer: the later bodies are empty, at the line's end.
    let line = "a <<A <<B\nx\n# c";
    let lexed = lex(line);
    let bodies: Vec<(usize, usize)> = lexed
        .tokens
        .iter()
        .filter(|t| t.kind == TokenKind::HeredocBody)
        .map(|t| (t.start, t.end))
        .collect();
    assert_eq!(bodies, [(10, 15), (15, 15)]);
    let starts: Vec<usize> = lexed.tokens.iter().map(|t| t.start).collect();
    assert!(starts.windows(2).all(|w| w[0] <= w[1]), "{starts:?}");
}

#[test]
fn deep_nesting_keeps_the_texts_linear() {
    let n = 20_000;
    let line = format!("echo {}x{}", "\"$(a `b ".repeat(n), "`)\"".repeat(n));
    let lexed = lex(&line);
    assert_eq!(lexed.unterminated, None);
    let total: usize = lexed
        .tokens
        .iter()
        .filter_map(|t| lexed.text(t))
        .map(str::len)
        .sum();
    assert!(
        total <= 2 * line.len(),
        "{total} bytes of text for {} bytes",
        line.len()
    );
    let outer = lexed.tokens.last().expect("the outer word");
    // The top-level word keeps its substitution whole, quotes removed.
    let whole = &line[6..line.len() - 1];
    assert!(
        lexed.text(outer) == Some(whole),
        "the outer word lost its text"
    );
}

#[test]
fn operators_take_their_longest_form() {
    let line = "a;;&b&>>c|&d<<<e<>f>|g 2>&1";
    let ops: Vec<&str> = lex(line)
        .tokens
        .iter()
        .filter(|t| t.kind == TokenKind::Operator)
        .map(|t| &line[t.start..t.end])
        .collect();
    assert_eq!(ops, [";;&", "&>>", "|&", "<<<", "<>", ">|", ">&"]);
}

#[test]
fn an_unquoted_bodys_substitutions_are_lexed_one_level_down() {
    let line = "cat <<A\n$(b c) `d` ${e:-$(f)} $((1+$(g))) '$(h)' \"#\" $(i\nj)\nA\nz";
    assert_eq!(
        commands(line),
        ["cat", "b", "d", "f", "g", "h", "i", "j", "z"]
    );
    let lexed = lex(line);
    let depth_of = |name: &str| {
        lexed
            .tokens
            .iter()
            .find(|t| lexed.text(t) == Some(name))
            .map(|t| t.depth)
    };
    assert_eq!(depth_of("b"), Some(1));
    assert_eq!(depth_of("z"), Some(0));
    // The body leaves nothing open for the line, and its own text is no word.
    assert_eq!(lex("cat <<A\n$(b\nA\n").unterminated, None);
    let texts: Vec<String> = words("cat <<A\n$(b) y\nA")
        .into_iter()
        .map(|(w, _)| w)
        .collect();
    assert_eq!(texts, ["cat", "A", "b"]);
}

#[test]
fn a_quoted_delimiters_body_and_escaped_substitutions_stay_text() {
    for line in [
        "cat <<'A'\n$(b)\nA",
        "cat <<\"A\"\n$(b)\nA",
        "cat <<\\A\n$(b)\nA",
        "cat <<A\n\\$(b) \\`c`\nA",
    ] {
        assert_eq!(commands(line), ["cat"], "{line:?}");
    }
}

#[test]
fn bodies_nested_past_the_cap_are_said_and_not_read() {
    let nest = |levels: usize| {
        let mut line = String::from("x");
        for _ in 0..levels {
            line = format!("cat <<A\n$({line}\n)\nA");
        }
        line
    };
    let at_cap = lex(&nest(MAX_NESTED_BODIES));
    assert!(!at_cap.nested_too_deep);
    let too_deep = lex(&nest(MAX_NESTED_BODIES + 1));
    assert!(too_deep.nested_too_deep);
    // Every body but the deepest was read: its `x` only at the cap.
    let read_x = |lexed: &Lexed| lexed.tokens.iter().any(|t| lexed.text(t) == Some("x"));
    let cats = |lexed: &Lexed| {
        lexed
            .tokens
            .iter()
            .filter(|t| lexed.text(t) == Some("cat"))
            .count()
    };
    assert!(read_x(&at_cap));
    assert!(!read_x(&too_deep));
    assert_eq!(cats(&too_deep), MAX_NESTED_BODIES + 1);
}

#[test]
fn a_carriage_return_is_an_ordinary_character_but_at_a_lines_end() {
    assert_eq!(
        words("a\rb c\r\nd e\r"),
        [
            ("a\rb".to_owned(), true),
            ("c".to_owned(), false),
            ("d".to_owned(), true),
            ("e".to_owned(), false)
        ]
    );
    assert_eq!(commands("\ra; \rb"), ["\ra", "\rb"]);
}
