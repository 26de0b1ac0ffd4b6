//! What the operator is shown and a turn never is: each provider's state
//! with its server's name, version and protocol, and a call's raw result in
//! MCP's shape. Shared by `list`, `invoke`, `check --start`, `get --start`
//! and the live start display.
//!
//! Everything a server says, of itself or through what it makes the CLI
//! say about it (an error's message, its stderr tail), is untrusted text:
//! it reaches a terminal only through the core's sanitiser
//! ([`one_line`], [`json_text`]), so that no escape sequence, control,
//! bidi, zero-width or tag character gets through, and nothing a server
//! wrote stands as a line of its own.

use std::io::IsTerminal;

use serde_json::ser::{Formatter, PrettyFormatter};
use serde_json::{Map, Value, json};
use spear_capabilities::internals::framing::{json_text, one_line};
use spear_capabilities::{
    CallResult, Content, ProviderInfo, ProviderState, ResourceBody, UnavailableReason,
};

use crate::flags::WaitArgs;

/// The most characters of one fact a server gives about itself (name,
/// version) that the CLI prints.
pub(crate) const MAX_FACT_CHARS: usize = 200;

/// The details of a [`ProviderInfo`] the operator reads first, in this
/// order, when the kind gives them (the `mcp-stdio` kind does).
const SERVER_DETAILS: [&str; 3] = ["server", "server_version", "protocol"];

/// The warning for a name in an entry's `read` that its server does not
/// offer (a typo makes a READ tool a WRITE), as `list`, `check --start`
/// and `get --start` say it.
pub(crate) fn read_not_offered(name: &str) -> String {
    format!(
        "read names `{}`, which its server does not offer (a tool of another name stays a WRITE)",
        one_line(name, MAX_FACT_CHARS)
    )
}

/// A failure's message (which may carry what a server wrote: its error's
/// message, its stderr tail) whole, on one line.
pub(crate) fn failure_line(message: &str) -> String {
    one_line(message, usize::MAX)
}

/// `value` as indented JSON text (as `serde_json` lays it out) with
/// nothing hidden: each character of a string that [`json_text`] escapes
/// is escaped the same way, so the text is still the same JSON.
pub(crate) fn pretty_json(value: &Value) -> String {
    let mut text = Vec::new();
    let mut serializer =
        serde_json::Serializer::with_formatter(&mut text, Visible(PrettyFormatter::new()));
    // Writing a JSON value to memory cannot fail.
    let _ = serde::Serialize::serialize(value, &mut serializer);
    String::from_utf8(text).unwrap_or_default()
}

/// serde_json's pretty layout, with each run of a string's plain
/// characters written as the core's [`json_text`] writes it (the
/// characters that JSON must escape never reach a run: serde_json escapes
/// them itself).
struct Visible(PrettyFormatter<'static>);

impl Formatter for Visible {
    fn write_string_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        let quoted = json_text(fragment);
        let inner = quoted
            .strip_prefix('"')
            .and_then(|q| q.strip_suffix('"'))
            .unwrap_or(&quoted);
        writer.write_all(inner.as_bytes())
    }
    fn begin_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object_value(w)
    }
}

/// A provider's state as the operator reads it: a status word, then what
/// it means.
pub(crate) fn state_line(state: &ProviderState) -> (&'static str, String) {
    match state {
        ProviderState::Ready {
            started_in,
            declares_no_tools: true,
            ..
        } => (
            "ok",
            format!(
                "ready in {} ms, declares no tools (a provider with no capabilities)",
                started_in.as_millis()
            ),
        ),
        ProviderState::Ready {
            started_in, tools, ..
        } => (
            "ok",
            format!(
                "ready in {} ms, {tools} {}",
                started_in.as_millis(),
                if *tools == 1 { "tool" } else { "tools" }
            ),
        ),
        // Only a start happens before the CLI reads a state: one that
        // timed out is a start that was too slow.
        ProviderState::Unavailable {
            reason: UnavailableReason::TimedOut,
            message,
        } => (
            "failed",
            format!(
                "unavailable (timed_out): {}; {}",
                failure_line(message),
                WaitArgs::slow_start_hint()
            ),
        ),
        ProviderState::Unavailable { reason, message } => (
            "failed",
            format!("unavailable ({reason}): {}", failure_line(message)),
        ),
        ProviderState::Starting { since } => {
            ("starting", format!("starting for {} ms", since.as_millis()))
        }
        ProviderState::Stopped => ("stopped", "stopped".to_owned()),
        other => ("unknown", format!("{other:?}")),
    }
}

/// What a started provider's kind says of it, in one line:
/// `mcp-stdio: server NAME VERSION, protocol P` (each part as given).
pub(crate) fn info_line(info: &ProviderInfo) -> String {
    let detail = |name: &str| {
        info.details
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| one_line(v, MAX_FACT_CHARS))
    };
    let mut parts = Vec::new();
    match (detail("server"), detail("server_version")) {
        (Some(name), Some(version)) => parts.push(format!("server {name} {version}")),
        (Some(name), None) => parts.push(format!("server {name}")),
        (None, Some(version)) => parts.push(format!("server version {version}")),
        (None, None) => {}
    }
    if let Some(protocol) = detail("protocol") {
        parts.push(format!("protocol {protocol}"));
    }
    let kind = one_line(&info.kind, MAX_FACT_CHARS);
    if parts.is_empty() {
        kind
    } else {
        format!("{kind}: {}", parts.join(", "))
    }
}

/// A [`ProviderInfo`] as JSON: `kind`, then the server's facts by name
/// (`server`, `server_version`, `protocol` first), then every other detail
/// the kind gives (a process id, counters) under `details`, a whole number
/// as a JSON number.
pub(crate) fn info_json(info: &ProviderInfo) -> Value {
    let mut v = json!({"kind": info.kind});
    let mut others = Map::new();
    for (name, value) in &info.details {
        if SERVER_DETAILS.contains(&name.as_str()) {
            // A version such as "2" is a name, not a count.
            v[name.as_str()] = json!(one_line(value, MAX_FACT_CHARS));
        } else {
            others.insert(name.clone(), detail_json(value));
        }
    }
    v["details"] = Value::Object(others);
    v
}

/// A detail's value: a whole number (a process id, a counter) as a number,
/// anything else as one line of plain text.
fn detail_json(value: &str) -> Value {
    match value.parse::<u64>() {
        Ok(n) if n.to_string() == value => json!(n),
        _ => json!(one_line(value, MAX_FACT_CHARS)),
    }
}

/// Whether output to a stream gets colour: the stream is a terminal, and
/// no `NO_COLOR` (<https://no-color.org>: set and not empty).
pub(crate) fn colour_on(is_terminal: bool) -> bool {
    is_terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Whether standard output gets colour.
pub(crate) fn colour() -> bool {
    colour_on(std::io::stdout().is_terminal())
}

/// The style of a status word: green ok, red failed or refused, yellow starting;
/// none when `colour` is false.
pub(crate) fn status_style(status: &str, colour: bool) -> anstyle::Style {
    use anstyle::{AnsiColor, Style};
    let colour_of = match status {
        "ok" => AnsiColor::Green,
        "failed" | "refused" => AnsiColor::Red,
        "starting" => AnsiColor::Yellow,
        _ => return Style::new(),
    };
    if colour {
        Style::new().fg_color(Some(colour_of.into())).bold()
    } else {
        Style::new()
    }
}

/// A provider's state as JSON for scripts; a ready one with `info`.
pub(crate) fn state_json(id: &str, state: &ProviderState) -> Value {
    let (status, detail) = state_line(state);
    let mut v = json!({"id": id, "status": status, "detail": detail});
    match state {
        ProviderState::Ready {
            started_in,
            tools,
            declares_no_tools,
            info,
        } => {
            v["started_in_ms"] = json!(u64::try_from(started_in.as_millis()).unwrap_or(u64::MAX));
            v["tools"] = json!(tools);
            v["declares_no_tools"] = json!(declares_no_tools);
            v["info"] = info_json(info);
        }
        ProviderState::Unavailable { reason, message } => {
            v["reason"] = json!(reason.to_string());
            v["message"] = json!(message);
        }
        ProviderState::Starting { since } => {
            v["starting_for_ms"] = json!(u64::try_from(since.as_millis()).unwrap_or(u64::MAX));
        }
        _ => {}
    }
    v
}

/// A call's result as the provider returned it, in MCP's shape:
/// `content` blocks, `structuredContent` (when given), `isError`.
pub(crate) fn result_json(result: &CallResult) -> Value {
    let mut v = json!({
        "content": result.content.iter().map(content_json).collect::<Vec<_>>(),
        "isError": result.is_error,
    });
    if let Some(structured) = &result.structured {
        v["structuredContent"] = structured.clone();
    }
    v
}

/// One content block in MCP's shape (`mimeType`, an embedded resource
/// under `resource`).
fn content_json(content: &Content) -> Value {
    let mut v = match content {
        Content::Text { text } => json!({"type": "text", "text": text}),
        Content::Image { mime_type, data } => {
            json!({"type": "image", "data": data, "mimeType": mime_type})
        }
        Content::Audio { mime_type, data } => {
            json!({"type": "audio", "data": data, "mimeType": mime_type})
        }
        Content::ResourceLink {
            uri,
            name,
            title,
            description,
            mime_type,
            size,
        } => {
            let mut v = json!({"type": "resource_link", "uri": uri, "name": name});
            for (key, value) in [
                ("title", title.as_ref().map(|t| json!(t))),
                ("description", description.as_ref().map(|d| json!(d))),
                ("mimeType", mime_type.as_ref().map(|m| json!(m))),
                ("size", size.map(|s| json!(s))),
            ] {
                if let Some(value) = value {
                    v[key] = value;
                }
            }
            v
        }
        Content::Resource {
            uri,
            mime_type,
            body,
        } => {
            let mut resource = json!({"uri": uri});
            if let Some(m) = mime_type {
                resource["mimeType"] = json!(m);
            }
            match body {
                ResourceBody::Text(text) => resource["text"] = json!(text),
                ResourceBody::Blob(blob) => resource["blob"] = json!(blob),
                other => resource["body"] = serde_json::to_value(other).unwrap_or(Value::Null),
            }
            json!({"type": "resource", "resource": resource})
        }
        // A block kind added to the core later: its own serialisation.
        other => serde_json::to_value(other).unwrap_or(Value::Null),
    };
    if v.is_null() {
        v = json!({"type": "unknown"});
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pretty_schema_escapes_what_a_terminal_would_hide_and_stays_the_same_json() {
        let plain = json!({"type": "object", "properties": {"q": {"type": "string"}}});
        assert_eq!(
            pretty_json(&plain),
            serde_json::to_string_pretty(&plain).expect("json")
        );
        let hostile =
            json!({"d\u{202e}": ["a\u{9b}b\u{200b}c\u{7f}\u{e0041}", "\u{1b}[2J\n"], "n": 1});
        let text = pretty_json(&hostile);
        assert!(text.is_ascii(), "{text}");
        assert!(text.contains("\n  \"d\\u202e\": [\n"), "{text}");
        assert_eq!(serde_json::from_str::<Value>(&text).expect("json"), hostile);
    }

    #[test]
    fn info_line_names_server_version_and_protocol() {
        let info = ProviderInfo::new("mcp-stdio")
            .with_detail("pid", "42")
            .with_detail("server", "srv\x1b]0;x\x07\u{202e}")
            .with_detail("server_version", "1.2")
            .with_detail("protocol", "2025-06-18");
        assert_eq!(
            info_line(&info),
            "mcp-stdio: server srv 1.2, protocol 2025-06-18"
        );
        assert_eq!(info_line(&ProviderInfo::new("builtin")), "builtin");
        let v = info_json(&info);
        assert_eq!(v["server_version"], "1.2");
        assert_eq!(v["details"], json!({"pid": 42}));
    }

    #[test]
    fn results_have_mcps_shape() {
        let r = CallResult::new(vec![
            Content::text("t"),
            Content::Image {
                mime_type: "image/png".into(),
                data: "AA==".into(),
            },
        ])
        .with_structured(json!({"n": 1}))
        .with_error(true);
        assert_eq!(
            result_json(&r),
            json!({
                "content": [{"type": "text", "text": "t"}, {"type": "image", "data": "AA==", "mimeType": "image/png"}],
                "structuredContent": {"n": 1},
                "isError": true,
            })
        );
        assert!(
            result_json(&CallResult::text("x"))
                .get("structuredContent")
                .is_none()
        );
    }
}
