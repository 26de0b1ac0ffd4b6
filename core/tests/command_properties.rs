//! Properties of the recognizer over generated command lines.
//!
//! The number of cases per property is 4096, or `PROPTEST_CASES`.

use proptest::prelude::*;
use proptest::sample::select;
use spear_capabilities::internals::command::{
    COMMAND_NAME, Recognized, lex, recognize, recognize_unfiltered,
};

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4096);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Pieces that make lines a shell lexer finds hard: quotes, escapes,
/// substitutions, separators, here-documents and fragments of the name.
const PIECES: &[&str] = &[
    "spear-capability",
    "spear",
    "-",
    "capability",
    "capa",
    "bility",
    "s",
    "'",
    "\"",
    "\\",
    "$",
    "$'",
    "$\"",
    "$(",
    "$((",
    "${",
    "}",
    "`",
    "\\`",
    "(",
    ")",
    ";",
    ";;",
    "&",
    "&&",
    "|",
    "||",
    "|&",
    "\n",
    "\r\n",
    "\r",
    " ",
    "\t",
    "#",
    "<<",
    "<<-",
    "<<<",
    "EOF",
    "'EOF'",
    "=",
    "a=",
    "list",
    "describe",
    "invoke",
    "a/b",
    "'{\"x\":1}'",
    "é",
    "日本",
    "\\x73",
    "\\163",
    "\\u0073",
    ">",
    "<",
    "2>&1",
    "*",
    "~",
    "{",
    "!",
    "\u{a0}",
    "\0",
];

/// The pieces of simple command lines, and a few that make a line not
/// simple after all.
const SIMPLE_PIECES: &[&str] = &[
    "spear-capability ",
    "spear-capability",
    "'spear-capability'",
    "spear'-'capability",
    " ",
    " ",
    "\t",
    "list",
    "describe ",
    "invoke ",
    "a/b ",
    "/b",
    "a/",
    "'{\"x\": 1}'",
    "'{\"x\": \"a b; c\"}'",
    "'{}'",
    "'[1]'",
    "'{'",
    "''",
    "'",
    "x",
    "é",
    "#",
    "=",
    "(",
    ";",
    "$",
    "\"",
    "\n",
    "{",
    "*",
];

fn shellish() -> impl Strategy<Value = String> {
    prop::collection::vec(select(PIECES), 0..32).prop_map(|p| p.concat())
}

/// One character of the name, written in one of the ways quote removal
/// turns back into that character.
fn quoted_char(c: char) -> impl Strategy<Value = String> {
    prop_oneof![
        Just(c.to_string()),
        Just(format!("\\{c}")),
        Just(format!("'{c}'")),
        Just(format!("\"{c}\"")),
        Just(format!("{c}''")),
        Just(format!("\"\"{c}")),
        Just(format!("$'{c}'")),
        Just(format!("$'\\x{:02x}'", u32::from(c))),
        Just(format!("$'\\{:o}'", u32::from(c))),
        Just(format!("$\"{c}\"")),
        Just(format!("\\\n{c}")),
    ]
}

/// The name, each character quoted its own way (or the whole word quoted).
fn quoted_name() -> impl Strategy<Value = String> {
    let per_char: Vec<_> = COMMAND_NAME.chars().map(quoted_char).collect();
    prop_oneof![
        per_char.prop_map(|parts| parts.concat()),
        Just(format!("'{COMMAND_NAME}'")),
        Just(format!("\"{COMMAND_NAME}\"")),
    ]
}

/// A piece of a word and the text quote removal makes of it.
fn word_piece() -> impl Strategy<Value = (String, String)> {
    let text = select(
        &[
            "spear",
            "-",
            "capability",
            "spear-capability",
            "spear-capabilit",
            "2",
            "./",
            "x",
            "list",
            "a/b",
            "é",
            ";",
            " ",
            "|",
            "&",
            "(",
            "#",
            "\n",
            "spear-capability list",
        ][..],
    );
    (text, 0..4u8).prop_map(|(text, how)| {
        let plain = text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-./".contains(&b))
            || !text.is_ascii();
        let raw = match how {
            0 if plain => text.to_owned(),
            0 | 1 => format!("'{text}'"),
            2 => format!("\"{text}\""),
            _ => text
                .chars()
                .map(|c| {
                    if c == '\n' {
                        "'\n'".to_owned()
                    } else {
                        format!("\\{c}")
                    }
                })
                .collect(),
        };
        (raw, text.to_owned())
    })
}

/// A word: its source and its text after quote removal.
fn word() -> impl Strategy<Value = (String, String)> {
    prop::collection::vec(word_piece(), 1..4).prop_map(|pieces| {
        let raw = pieces.iter().map(|(r, _)| r.as_str()).collect();
        let text = pieces.iter().map(|(_, t)| t.as_str()).collect();
        (raw, text)
    })
}

/// A simple command's words, maybe with a comment after them.
fn segment() -> impl Strategy<Value = (String, Vec<String>)> {
    let blank = select(&[" ", "\t", "  "][..]);
    (
        prop::collection::vec((word(), blank), 1..5),
        select(&["", "", " # spear-capability list", " #spear-capability"][..]),
    )
        .prop_map(|(words, comment)| {
            let mut raw = String::new();
            let mut texts = Vec::new();
            for ((w, text), blank) in words {
                raw.push_str(&w);
                raw.push_str(blank);
                texts.push(text);
            }
            raw.push_str(comment);
            (raw, texts)
        })
}

/// Simple commands joined by separators; some are here-documents whose body
/// holds the name.
fn command_list() -> impl Strategy<Value = (String, Vec<Vec<String>>)> {
    let separator = select(&[";", "&", "|", "&&", "||", "|&", "\n", " ; ", "\r\n"][..]);
    let heredoc = Just("cat <<EOF\nspear-capability list\nEOF\n".to_owned());
    (prop::collection::vec(
        (segment(), separator, prop::option::weighted(0.1, heredoc)),
        1..5,
    ),)
        .prop_map(|(parts,)| {
            let mut raw = String::new();
            let mut segments = Vec::new();
            for ((seg, texts), sep, heredoc) in parts {
                if let Some(doc) = heredoc {
                    raw.push_str(&doc);
                    segments.push(vec!["cat".to_owned(), "EOF".to_owned()]);
                }
                // A comment would swallow a separator on its line.
                let seg = if sep.contains('\n') {
                    seg
                } else {
                    seg.split(" #").next().unwrap_or("").to_owned()
                };
                raw.push_str(&seg);
                raw.push_str(sep);
                segments.push(texts);
            }
            (raw, segments)
        })
}

proptest! {
    #![proptest_config(config())]

    /// Never panics on any input, refusals stay one short line, and the
    /// pre-filter never changes an answer.
    #[test]
    fn never_panics_and_the_prefilter_is_exact(line in prop_oneof![shellish(), any::<String>()]) {
        let lexed = lex(&line);
        for t in &lexed.tokens {
            prop_assert!(t.start <= t.end && t.end <= line.len());
            prop_assert!(line.is_char_boundary(t.start) && line.is_char_boundary(t.end));
        }
        let got = recognize(&line);
        if let Recognized::Ours(Err(refusal)) = &got {
            // One short line, whatever the input.
            let m = refusal.message();
            prop_assert!(!m.contains('\n') && m.chars().count() <= 240, "{:?}", m);
        }
        prop_assert_eq!(got, recognize_unfiltered(&line));
    }

    /// The longest refusal: an unknown verb quoted at its bound, with
    /// backquotes inside, found by a run of 300 000 cases at 245 characters
    /// before the message was shortened.
    #[test]
    fn the_unknown_verb_refusal_stays_short(verb in "[`$a-z]{41,80}") {
        let line = format!("spear-capability {verb}");
        if let Recognized::Ours(Err(refusal)) = recognize(&line) {
            let m = refusal.message();
            prop_assert!(m.chars().count() <= 240, "{} chars: {:?}", m.chars().count(), m);
        }
    }

    /// Lines that are mostly the plain words and single-quoted strings of a
    /// command (the recognizer's simple-line path) get the lexer's answer,
    /// and so do their near misses.
    #[test]
    fn simple_lines_get_the_lexers_answer(
        pieces in prop::collection::vec(select(SIMPLE_PIECES), 0..12),
    ) {
        let line = pieces.concat();
        prop_assert_eq!(recognize(&line), recognize_unfiltered(&line), "{:?}", line);
    }

    /// Any input whose first word is `spear-capability` is never "not ours".
    #[test]
    fn the_name_as_first_word_is_always_ours(
        lead in select(&["", " ", "\t", "\n", "\r\n", " \n\t", "\n\n  "][..]),
        name in quoted_name(),
        sep in select(&["", " ", "\t", "\n", "\r\n", ";", "&", "|", "(", ")", "<", ">"][..]),
        tail in shellish(),
    ) {
        let tail = if sep.is_empty() { String::new() } else { tail };
        let line = format!("{lead}{name}{sep}{tail}");
        prop_assert!(recognize(&line).is_ours(), "{:?}", line);
    }

    /// In a here-document's body, a substitution of the command is ours
    /// (refused: it does not stand alone) exactly when the delimiter is
    /// unquoted, whatever text, quotes or `#` stand around it.
    #[test]
    fn a_body_substitution_is_ours_exactly_when_the_delimiter_is_unquoted(
        quote in select(&["", "'", "\"", "\\"][..]),
        dash in select(&["", "-"][..]),
        before in "[a-z '\"#;|&(){}<>\n\t]{0,24}",
        form in select(&[
            "$(spear-capability list)",
            "`spear-capability list`",
            "${x:-$(spear-capability list)}",
            "$((1+$(spear-capability list)))",
            "$(echo\nspear-capability list)",
        ][..]),
        after in "[a-z '\"#;|&(){}<>\n\t]{0,24}",
    ) {
        let close = if quote == "\\" { "" } else { quote };
        let line = format!("cat <<{dash}{quote}EOF{close}\n{before}{form}{after}\nEOF\n");
        let got = recognize(&line);
        prop_assert_eq!(&got, &recognize_unfiltered(&line));
        match got {
            Recognized::Ours(Err(r)) if quote.is_empty() => {
                prop_assert!(r.message().contains("must stand alone"), "{:?}: {}", line, r);
            }
            Recognized::NotOurs if !quote.is_empty() => {}
            other => prop_assert!(false, "{:?}: {:?}", line, other),
        }
    }

    /// A line where no word becomes `spear-capability` after quote removal
    /// is never ours; one where a command's first word does always is.
    #[test]
    fn ours_exactly_when_a_command_word_is_the_name((line, segments) in command_list()) {
        let got = recognize(&line);
        let first_is_name = segments.iter().any(|s| s.first().is_some_and(|w| w == COMMAND_NAME));
        let any_is_name = segments.iter().flatten().any(|w| w == COMMAND_NAME);
        if first_is_name {
            prop_assert!(got.is_ours(), "{:?}", line);
        } else if !any_is_name {
            prop_assert_eq!(got, Recognized::NotOurs, "{:?}", line);
        } else {
            prop_assert_eq!(got, Recognized::NotOurs, "{:?} (the name only as an argument)", line);
        }
    }
}
