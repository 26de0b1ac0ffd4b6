//! Parsing a recognized line into a [`Command`], or refusing it with a
//! message that teaches the right form.

use serde_json::Value;

use super::token::{Lexed, TokenKind};
use super::{COMMAND_NAME, CapabilityId, Command, MAX_NESTED_BODIES, Refusal};

const LIST: &str = "spear-capability list";
const DESCRIBE: &str = "spear-capability describe <provider>/<tool> [<property>...]";
const INVOKE: &str = "spear-capability invoke <provider>/<tool> '<arguments as one JSON object>'";
/// The longest piece of the line a refusal quotes.
const QUOTE_CHARS: usize = 40;

/// Parses the line whose token `name` is the recognized command name.
pub(super) fn parse(line: &str, lexed: &Lexed, name: usize) -> Result<Command, Refusal> {
    let name_token = &lexed.tokens[name];
    let before = lexed
        .tokens
        .iter()
        .any(|t| t.start < name_token.start && t.kind != TokenKind::Newline);
    if before || name_token.depth > 0 {
        let text = quote(&tail(line[..name_token.start].trim()));
        return Err(Refusal::new(format!(
            "{COMMAND_NAME} must stand alone on its line: {text} comes before it; \
             type it as a command of its own"
        )));
    }
    // Top-level tokens come in the line's order: only nested ones (inside
    // a word's substitution) are reported before the word that holds them.
    let after = lexed
        .tokens
        .iter()
        .filter(|t| t.start > name_token.start && t.depth == 0);
    let mut words = Vec::new();
    let mut line_ended = false;
    // Where the command's line ends: its first newline outside quotes.
    let mut line_end = line.len();
    // A word of digits glued to an operator is a redirection's fd: `2>&1`.
    let mut prev_fd: Option<(usize, usize)> = None;
    for token in after {
        match &token.kind {
            TokenKind::Newline if !line_ended => {
                line_ended = true;
                line_end = token.start;
            }
            TokenKind::Newline => {}
            TokenKind::Word { .. } if !line_ended => {
                let text = lexed.text(token).unwrap_or_default();
                words.push(text);
                let digits = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
                prev_fd = digits.then_some((token.start, token.end));
            }
            _ => {
                let start = match prev_fd {
                    Some((start, end)) if end == token.start && !line_ended => start,
                    _ => token.start,
                };
                let end = line[start..].find('\n').map_or(line.len(), |n| start + n);
                let text = quote(&head(line[start..end].trim()));
                let place = if line_ended { "on a later line" } else { "it" };
                return Err(Refusal::new(format!(
                    "{COMMAND_NAME} must stand alone on its line: {text} follows {place}; \
                     type it as a command of its own"
                )));
            }
        }
    }
    if let Some(open) = lexed.unterminated {
        let column = line[..open.start]
            .rsplit('\n')
            .next()
            .map_or(0, |l| l.chars().count())
            + 1;
        return Err(Refusal::new(format!(
            "unterminated {} (the {} at column {column}); close it",
            open.construct,
            quote(open.construct.opener())
        )));
    }
    // A line break inside the command itself: in a quoted word, or a
    // backslash-newline (which bash would join, but the manual says one line).
    if line[name_token.start..line_end].contains('\n') {
        return Err(Refusal::new(format!(
            "{COMMAND_NAME} must stand on one line: this one goes on to the next line \
             (inside quotes, or after a backslash); write it on one line, JSON arguments \
             included (JSON needs no line breaks)"
        )));
    }
    command(&words)
}

/// The refusal of a line whose here-documents lie too deep in one another.
pub(super) fn too_deep() -> Refusal {
    Refusal::new(format!(
        "here-documents nested more than {MAX_NESTED_BODIES} deep in one another's bodies: \
         whether this line runs {COMMAND_NAME} cannot be told, so none of it runs; \
         type the command as a line of its own"
    ))
}

/// The words after the name, as the verb's form wants them.
pub(super) fn command<W: AsRef<str>>(words: &[W]) -> Result<Command, Refusal> {
    let Some((verb, rest)) = words.split_first() else {
        return Err(Refusal::new(format!(
            "{COMMAND_NAME} needs a verb: {LIST} | {DESCRIBE} | {INVOKE}"
        )));
    };
    match verb.as_ref() {
        "list" => {
            too_many(rest, 0, LIST)?;
            Ok(Command::List)
        }
        "describe" => {
            let id = id(rest.first(), DESCRIBE)?;
            let property = rest[1..].iter().map(|w| w.as_ref().to_owned()).collect();
            Ok(Command::Describe { id, property })
        }
        "invoke" => {
            let id = id(rest.first(), INVOKE)?;
            too_many(rest, 2, INVOKE)?;
            let arguments = match rest.get(1) {
                None => serde_json::Map::new(),
                Some(json) => arguments(json.as_ref())?,
            };
            Ok(Command::Invoke { id, arguments })
        }
        other => Err(Refusal::new(format!(
            "unknown verb {}; the verbs: {LIST} | {DESCRIBE} | {INVOKE}",
            quote(&head(other))
        ))),
    }
}

fn id<W: AsRef<str>>(word: Option<&W>, form: &str) -> Result<CapabilityId, Refusal> {
    let Some(word) = word.map(AsRef::as_ref) else {
        return Err(Refusal::new(format!("missing capability id: {form}")));
    };
    CapabilityId::parse(word).ok_or_else(|| {
        Refusal::new(format!(
            "malformed capability id {}: an id is <provider>/<tool>, both non-empty, \
             such as tracker/search_issues: {form}",
            quote(&head(word))
        ))
    })
}

fn too_many<W: AsRef<str>>(rest: &[W], allowed: usize, form: &str) -> Result<(), Refusal> {
    match rest.get(allowed).map(AsRef::as_ref) {
        None => Ok(()),
        Some(extra) => {
            let hint = if form == INVOKE {
                "; quote the JSON object as one word, in single quotes"
            } else {
                ""
            };
            Err(Refusal::new(format!(
                "too many words: {} is one too many{hint}: {form}",
                quote(&head(extra))
            )))
        }
    }
}

fn arguments(json: &str) -> Result<serde_json::Map<String, Value>, Refusal> {
    if json.trim().is_empty() {
        return Err(Refusal::new(format!(
            "the arguments are empty; give one JSON object, such as '{{}}': {INVOKE}"
        )));
    }
    match serde_json::from_str::<Value>(json) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => {
            let kind = match other {
                Value::Null => "null",
                Value::Bool(_) => "a boolean",
                Value::Number(_) => "a number",
                Value::String(_) => "a string",
                Value::Array(_) => "an array",
                Value::Object(_) => unreachable!("matched above"),
            };
            Err(Refusal::new(format!(
                "the arguments must be one JSON object, not {kind}: {INVOKE}"
            )))
        }
        Err(e) => Err(Refusal::new(format!(
            "the arguments are not valid JSON ({e}); give one JSON object in single quotes: {INVOKE}"
        ))),
    }
}

/// The end of `text`, on one line and at most [`QUOTE_CHARS`] long.
fn tail(text: &str) -> String {
    let flat = flatten(text);
    let count = flat.chars().count();
    if count <= QUOTE_CHARS {
        return flat;
    }
    let kept: String = flat.chars().skip(count - QUOTE_CHARS).collect();
    format!("...{kept}")
}

/// The start of `text`, on one line and at most [`QUOTE_CHARS`] long.
fn head(text: &str) -> String {
    let flat = flatten(text);
    if flat.chars().count() <= QUOTE_CHARS {
        return flat;
    }
    let kept: String = flat.chars().take(QUOTE_CHARS).collect();
    format!("{kept}...")
}

/// `text` in backquotes, doubled when it holds one itself.
fn quote(text: &str) -> String {
    if text.contains('`') {
        format!("`` {text} ``")
    } else {
        format!("`{text}`")
    }
}

fn flatten(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
