//! Each subcommand's examples, written once as data: the command line and
//! what it does. `--help` ends with them ([`help`]); each manual page has
//! them as its EXAMPLES section ([`roff`]), every command on a line of its
//! own that is never filled or justified, so that it reads as typed.

use roff::{Roff, roman};

/// One example: a command line, and what it does.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Example {
    /// The command line, as typed.
    pub(crate) line: &'static str,
    /// What it does, in a sentence.
    pub(crate) what: &'static str,
}

impl Example {
    pub(crate) const fn new(line: &'static str, what: &'static str) -> Self {
        Example { line, what }
    }
}

/// `--help`'s end: `Examples:`, then each command line and, under it,
/// what it does.
pub(crate) fn help(examples: &[Example]) -> String {
    let mut text = "Examples:".to_owned();
    for e in examples {
        text.push_str(&format!("\n  {}\n      {}", e.line, e.what));
    }
    text
}

/// The EXAMPLES section of a manual page (roff, without the preamble the
/// page already has): what each example does, then its command line in a
/// block that is not filled.
pub(crate) fn roff(examples: &[Example]) -> String {
    let mut page = Roff::new();
    page.control("SH", ["EXAMPLES"]);
    for e in examples {
        page.control("PP", [] as [&str; 0])
            .text([roman(format!("{}:", e.what))])
            .control("RS", ["4"])
            .control("nf", [] as [&str; 0])
            .text([roman(e.line)])
            .control("fi", [] as [&str; 0])
            .control("RE", [] as [&str; 0]);
    }
    let text = page.render();
    // `render` starts with the apostrophe string's definition, which the
    // page has already; what follows uses it.
    let body = text.find(".SH").map_or(text.as_str(), |at| &text[at..]);
    body.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_example_is_one_unfilled_line_in_roff_and_two_in_help() {
        let e = [Example::new(
            "spear-capabilities invoke n/t '{\"a\": 1}' --json",
            "Call it",
        )];
        assert_eq!(
            help(&e),
            "Examples:\n  spear-capabilities invoke n/t '{\"a\": 1}' --json\n      Call it"
        );
        let page = roff(&e);
        assert!(page.starts_with(".SH EXAMPLES\n"), "{page}");
        assert!(
            page.contains(
                ".nf\nspear\\-capabilities invoke n/t \\*(Aq{\"a\": 1}\\*(Aq \\-\\-json\n.fi\n"
            ),
            "{page}"
        );
    }
}
