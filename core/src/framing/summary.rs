//! A call's result as plain text, before it is framed: text blocks as they
//! are, everything else summarised by type and size, never dumped.

use std::borrow::Cow;
use std::fmt::Write as _;

use super::sanitise::{json_text, one_line};
use crate::provider::{CallResult, Content, ResourceBody};

/// The plain text of a call result, before framing. Borrows the text of a
/// result that is one non-empty text block.
///
/// Structured content is read once: MCP 2025-06-18 asks a tool that returns
/// it to send it serialised in a text block too, so when a text block is
/// JSON equal to it (or to the one value of an object that only wraps it)
/// only the text is shown; when they differ,
/// both are.
pub(crate) fn result_text(result: &CallResult) -> Cow<'_, str> {
    let structured = result
        .structured
        .as_ref()
        .filter(|s| !result.content.iter().any(|c| repeats(c, s)));
    if let ([Content::Text { text }], None) = (result.content.as_slice(), structured) {
        if !text.is_empty() {
            return Cow::Borrowed(text);
        }
    }
    let mut out = String::new();
    for (i, c) in result.content.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        match c {
            Content::Text { text } => out.push_str(text),
            Content::Image { mime_type, data } => {
                let _ = write!(
                    out,
                    "[image: {}, {} bytes]",
                    one_line(mime_type, 80),
                    base64_len(data)
                );
            }
            Content::Audio { mime_type, data } => {
                let _ = write!(
                    out,
                    "[audio: {}, {} bytes]",
                    one_line(mime_type, 80),
                    base64_len(data)
                );
            }
            Content::ResourceLink {
                uri,
                name,
                mime_type,
                size,
                ..
            } => {
                let _ = write!(
                    out,
                    "[resource link: {} <{}>",
                    one_line(name, 200),
                    one_line(uri, 500)
                );
                if let Some(m) = mime_type {
                    let _ = write!(out, ", {}", one_line(m, 80));
                }
                if let Some(s) = size {
                    let _ = write!(out, ", {s} bytes");
                }
                out.push(']');
            }
            Content::Resource {
                uri,
                mime_type,
                body,
            } => {
                let mime = mime_type.as_deref().map(|m| one_line(m, 80));
                let mime = mime.map_or(String::new(), |m| format!(", {m}"));
                match body {
                    ResourceBody::Text(text) => {
                        let _ = write!(out, "[resource <{}>{mime}]\n{text}", one_line(uri, 500));
                    }
                    ResourceBody::Blob(data) => {
                        let _ = write!(
                            out,
                            "[resource <{}>{mime}, {} bytes of binary data]",
                            one_line(uri, 500),
                            base64_len(data)
                        );
                    }
                }
            }
        }
    }
    if let Some(structured) = structured {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str("[structured content]\n");
        out.push_str(&json_text(structured));
    }
    if out.is_empty() {
        out.push_str("[no content]");
    }
    Cow::Owned(out)
}

/// Whether `block` is `structured` again, as text: JSON equal to it, or to
/// the one value of an object that only wraps it (SDKs wrap a tool's output
/// that is not an object, e.g. `{"result": [...]}` beside the bare array).
fn repeats(block: &Content, structured: &serde_json::Value) -> bool {
    let Content::Text { text } = block else {
        return false;
    };
    // Only text that looks like JSON is parsed.
    if !text.trim_start().starts_with(['{', '[']) {
        return false;
    }
    let Ok(parsed) = serde_json::from_str::<serde_json::Value>(text) else {
        return false;
    };
    if &parsed == structured {
        return true;
    }
    match structured.as_object() {
        Some(members) if members.len() == 1 => members.values().next() == Some(&parsed),
        _ => false,
    }
}

/// The decoded size of base64 `data`, without decoding it.
fn base64_len(data: &str) -> usize {
    let len = data.trim_end().len();
    let pad = data
        .trim_end()
        .bytes()
        .rev()
        .take_while(|&b| b == b'=')
        .count();
    ((len / 4) * 3 + (len % 4).saturating_sub(1)).saturating_sub(pad.min(2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_single_text_block_is_the_result_text_and_an_empty_one_is_no_content() {
        assert_eq!(
            result_text(&CallResult::new(vec![Content::text("a\nb")])),
            "a\nb"
        );
        assert_eq!(
            result_text(&CallResult::new(vec![Content::text("")])),
            "[no content]"
        );
        assert_eq!(result_text(&CallResult::new(Vec::new())), "[no content]");
    }

    #[test]
    fn non_text_content_is_summarised_never_dumped() {
        let r = CallResult::new(vec![
            Content::text("hello"),
            Content::Image {
                mime_type: "image/png".into(),
                data: "iVBORw0KGgo=".into(),
            },
            Content::Audio {
                mime_type: "audio/wav".into(),
                data: "UklGRg==".into(),
            },
            Content::Resource {
                uri: "file:///x".into(),
                mime_type: None,
                body: ResourceBody::Blob("AAAA".into()),
            },
        ]);
        assert_eq!(
            result_text(&r),
            "hello\n[image: image/png, 8 bytes]\n[audio: audio/wav, 4 bytes]\n[resource <file:///x>, 3 bytes of binary data]"
        );
    }

    /// A `tools/call` result as a capture holds it, mapped the way the
    /// mcp-stdio kind maps it (text blocks and structured content).
    fn captured(call: &serde_json::Value) -> CallResult {
        let blocks = call["result"]["content"].as_array().expect("content");
        let content = blocks
            .iter()
            .map(|b| Content::text(b["text"].as_str().expect("a text block")))
            .collect();
        CallResult::new(content).with_structured(call["result"]["structuredContent"].clone())
    }

    fn captures(file: &str) -> Vec<serde_json::Value> {
        let path = format!("{}/tests/data/results/{file}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).expect("the capture");
        let capture: serde_json::Value = serde_json::from_str(&text).expect("json");
        capture["calls"].as_array().expect("calls").clone()
    }

    #[test]
    fn structured_content_that_a_text_block_repeats_is_read_once() {
        // Real answers of mcp-server-time and server-memory: each sends its
        // structured content again as a text block.
        let calls: Vec<_> = captures("mcp-server-time.json")
            .into_iter()
            .chain(captures("server-memory.json"))
            .collect();
        assert_eq!(calls.len(), 4);
        for call in &calls {
            let result = captured(call);
            let text = result_text(&result);
            assert!(
                !text.contains("[structured content]"),
                "{}: {text}",
                call["name"]
            );
            assert_eq!(text, result.joined_text(), "{}", call["name"]);
        }
    }

    #[test]
    fn structured_content_that_differs_from_the_text_is_shown_too() {
        let result = CallResult::text("{\"a\": 1}").with_structured(serde_json::json!({"a": 2}));
        assert_eq!(
            result_text(&result),
            "{\"a\": 1}\n[structured content]\n{\"a\":2}"
        );
        let prose =
            CallResult::text("It is noon in Paris.").with_structured(serde_json::json!({"h": 12}));
        assert!(result_text(&prose).ends_with("[structured content]\n{\"h\":12}"));
        let two_members =
            CallResult::text("[1]").with_structured(serde_json::json!({"a": [1], "b": 2}));
        assert!(result_text(&two_members).contains("[structured content]"));
        let wrapped = CallResult::text("[1]").with_structured(serde_json::json!({"result": [1]}));
        assert_eq!(result_text(&wrapped), "[1]");
    }
}
