//! A `tools/call` result, mapped onto the core's transport-neutral type.

use serde_json::{Map, Value};
use spear_capabilities::{CallResult, Content, ResourceBody};

use crate::codec::Raw;
use crate::{scan, wire};

/// Maps a `CallToolResult` as the server wrote it: straight from the text
/// when it is well formed (by hand, [`scan`], where it is the plainest
/// case; else [`wire`]), else through [`call_result`], which
/// words what is wrong.
///
/// # Errors
/// As [`call_result`].
pub(crate) fn call_result_raw(raw: &Raw) -> Result<CallResult, String> {
    let text = raw.get();
    match scan::call_result(text).or_else(|| wire::call_result(text)) {
        Some(result) => Ok(result),
        None => call_result(raw.to_value()),
    }
}

/// Maps a `CallToolResult`. Unknown fields are ignored; a block of a type
/// MCP 2025-06-18 does not define becomes a short note, so that a newer
/// server's result still arrives and the turn can see something is missing.
///
/// # Errors
/// What is malformed, as a lower-case phrase (a protocol fault).
pub(crate) fn call_result(result: Value) -> Result<CallResult, String> {
    let Value::Object(mut result) = result else {
        return Err("the tools/call result is not a JSON object".into());
    };
    let blocks = match result.remove("content") {
        Some(Value::Array(blocks)) => blocks,
        None | Some(Value::Null) => Vec::new(),
        Some(_) => return Err("the tools/call result's content is not an array".into()),
    };
    let content = blocks
        .into_iter()
        .enumerate()
        .map(|(i, b)| block(b).map_err(|e| format!("content block {i}: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    let mut mapped = CallResult::new(content);
    if let Some(structured) = result.remove("structuredContent").filter(|v| !v.is_null()) {
        mapped = mapped.with_structured(structured);
    }
    match result.remove("isError") {
        None | Some(Value::Null) => {}
        Some(Value::Bool(is_error)) => mapped = mapped.with_error(is_error),
        Some(_) => return Err("the tools/call result's isError is not a boolean".into()),
    }
    Ok(mapped)
}

fn block(block: Value) -> Result<Content, String> {
    let Value::Object(mut b) = block else {
        return Err("not a JSON object".into());
    };
    let kind = match b.remove("type") {
        Some(Value::String(kind)) => kind,
        _ => return Err("no type".into()),
    };
    Ok(match kind.as_str() {
        "text" => Content::text(string(&mut b, "text")?),
        "image" => Content::Image {
            mime_type: string(&mut b, "mimeType")?,
            data: string(&mut b, "data")?,
        },
        "audio" => Content::Audio {
            mime_type: string(&mut b, "mimeType")?,
            data: string(&mut b, "data")?,
        },
        "resource_link" => Content::ResourceLink {
            uri: string(&mut b, "uri")?,
            name: string(&mut b, "name")?,
            title: optional(&mut b, "title"),
            description: optional(&mut b, "description"),
            mime_type: optional(&mut b, "mimeType"),
            size: b.get("size").and_then(Value::as_u64),
        },
        "resource" => {
            let Some(Value::Object(mut r)) = b.remove("resource") else {
                return Err("a resource block without a resource object".into());
            };
            let body = match (r.remove("text"), r.remove("blob")) {
                (Some(Value::String(text)), _) => ResourceBody::Text(text),
                (_, Some(Value::String(blob))) => ResourceBody::Blob(blob),
                _ => return Err("a resource with neither text nor blob".into()),
            };
            Content::Resource {
                uri: string(&mut r, "uri")?,
                mime_type: optional(&mut r, "mimeType"),
                body,
            }
        }
        other => unsupported(other),
    })
}

/// The note that stands for a block of a type MCP 2025-06-18 does not define.
pub(crate) fn unsupported(kind: &str) -> Content {
    let kind: String = kind.chars().take(40).collect();
    Content::text(format!(
        "[a content block of unsupported type {kind:?} was left out]"
    ))
}

fn string(obj: &mut Map<String, Value>, key: &str) -> Result<String, String> {
    match obj.remove(key) {
        Some(Value::String(s)) => Ok(s),
        _ => Err(format!("no string {key}")),
    }
}

fn optional(obj: &mut Map<String, Value>, key: &str) -> Option<String> {
    match obj.remove(key) {
        Some(Value::String(s)) => Some(s),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_content_type_maps() {
        let got = call_result(json!({
            "content": [
                {"type": "text", "text": "hi", "annotations": {"audience": ["user"]}},
                {"type": "image", "data": "aGk=", "mimeType": "image/png"},
                {"type": "audio", "data": "UklG", "mimeType": "audio/wav"},
                {"type": "resource_link", "uri": "file:///a", "name": "a", "size": 3, "mimeType": "text/plain"},
                {"type": "resource", "resource": {"uri": "mem://t", "text": "body", "mimeType": "text/plain"}},
                {"type": "resource", "resource": {"uri": "mem://b", "blob": "AAE="}},
                {"type": "hologram", "data": "?"}
            ],
            "structuredContent": {"n": 1},
            "isError": true,
            "_meta": {"x": 1}
        }))
        .expect("maps");
        assert!(got.is_error);
        assert_eq!(got.structured, Some(json!({"n": 1})));
        assert_eq!(
            got.content,
            vec![
                Content::text("hi"),
                Content::Image {
                    mime_type: "image/png".into(),
                    data: "aGk=".into()
                },
                Content::Audio {
                    mime_type: "audio/wav".into(),
                    data: "UklG".into()
                },
                Content::ResourceLink {
                    uri: "file:///a".into(),
                    name: "a".into(),
                    title: None,
                    description: None,
                    mime_type: Some("text/plain".into()),
                    size: Some(3)
                },
                Content::Resource {
                    uri: "mem://t".into(),
                    mime_type: Some("text/plain".into()),
                    body: ResourceBody::Text("body".into())
                },
                Content::Resource {
                    uri: "mem://b".into(),
                    mime_type: None,
                    body: ResourceBody::Blob("AAE=".into())
                },
                Content::text("[a content block of unsupported type \"hologram\" was left out]"),
            ]
        );
    }

    /// The typed reading (`wire`) takes the plain results, gives up on the
    /// rest, and wherever it answers it answers as the `Value` path does.
    #[test]
    fn the_typed_reading_agrees_with_the_value_reading() {
        let plain = [
            r#"{"content":[{"type":"text","text":"hi"}]}"#,
            r#"{"content":[{"text":"hi","type":"text","annotations":{"audience":["user"]}}],"_meta":{"a":[1,2]}}"#,
            r#"{"content":[],"structuredContent":{"n":1},"isError":true}"#,
            r#"{"content":null,"structuredContent":null,"isError":null}"#,
            r#"{}"#,
            r#"{"content":[{"type":"text","text":"a\"\n\u00e9\ud83d\ude00"}]}"#,
            r#"{"content":[{"type":"image","data":"aGk=","mimeType":"image/png"},{"type":"audio","data":"UklG","mimeType":"audio/wav"}]}"#,
            r#"{"content":[{"type":"resource_link","uri":"file:///a","name":"a","size":3,"title":null,"mimeType":"text/plain"}]}"#,
            r#"{"content":[{"type":"resource","resource":{"uri":"mem://t","text":"body","blob":"AAE="}}]}"#,
            r#"{"content":[{"type":"resource","resource":{"uri":"mem://b","blob":"AAE=","text":null}}]}"#,
            r#"{"content":[{"type":"hologram","data":"?"}]}"#,
            // A type with escapes is read unborrowed, and still matches.
            r#"{"content":[{"type":"t\u0065xt","text":"hi"},{"type":"hol\u006fgram"}]}"#,
        ];
        // Duplicates go the `Value` path, which reads them alike.
        let other = [
            r#"{"content":[{"type":"text","text":"first"}],"content":[{"type":"text","text":"second"}]}"#,
            r#"{"isError":true,"isError":false}"#,
            r#"[]"#,
            r#"[[{"type":"text","text":"hi"}]]"#,
            r#"{"content":[["text","hi"]]}"#,
            r#"{"content":{}}"#,
            r#"{"content":[{"type":"text"}]}"#,
            r#"{"content":[{"type":"text","text":5}]}"#,
            r#"{"content":[{"type":"image","data":"x","mimeType":"image/png","text":5}]}"#,
            r#"{"content":[{"type":"resource_link","uri":"u","name":"n","size":-1,"title":7}]}"#,
            r#"{"content":[{"type":"resource_link","uri":"u","name":"n","size":1.5}]}"#,
            r#"{"content":[{"type":"resource","resource":{"uri":"u","text":5,"blob":"AA=="}}]}"#,
            r#"{"content":[{"type":"resource","resource":{"uri":"u"}}]}"#,
            r#"{"content":[{"type":"resource","resource":null}]}"#,
            r#"{"content":[{"type":null,"text":"x"}]}"#,
            r#"{"content":[{"text":"x"}]}"#,
            r#"{"content":5,"content":[]}"#,
            r#"{"isError":"yes"}"#,
            r#"{"content":[{"type":"hologram","data":5}]}"#,
            r#""text""#,
            "null",
        ];
        for json in plain.iter().chain(&other) {
            let raw = Raw::of(json);
            let slow = call_result(raw.to_value());
            let fast = wire::call_result(raw.get());
            assert_eq!(fast.is_some(), plain.contains(json), "{json}");
            if let Some(fast) = fast {
                assert_eq!(Ok(fast), slow, "{json}");
            }
            assert_eq!(call_result_raw(&raw), slow, "{json}");
        }
    }

    #[test]
    fn a_plain_result_is_not_an_error() {
        let got = call_result(json!({"content": [{"type": "text", "text": "ok"}]})).expect("ok");
        assert_eq!(got, CallResult::text("ok"));
    }

    #[test]
    fn malformed_results_are_named() {
        let cases = [
            (json!([]), "the tools/call result is not a JSON object"),
            (
                json!({"content": {}}),
                "the tools/call result's content is not an array",
            ),
            (
                json!({"content": [{"type": "text"}]}),
                "content block 0: no string text",
            ),
            (
                json!({"content": [{"text": "x"}]}),
                "content block 0: no type",
            ),
            (
                json!({"content": [], "isError": "yes"}),
                "the tools/call result's isError is not a boolean",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(call_result(input.clone()), Err(want.to_owned()), "{input}");
        }
    }
}
