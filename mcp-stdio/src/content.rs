//! A `tools/call` result, read from the text the server wrote straight into
//! the core's transport-neutral type.

use serde::{Deserialize, Deserializer};
use serde_json::Value;
use serde_json::value::RawValue;
use spear_capabilities::{CallResult, Content, ResourceBody};

/// A `CallToolResult` (unknown members skipped, one given twice unreadable).
#[derive(Deserialize)]
struct ToolResult<'a> {
    #[serde(borrow, default)]
    content: Option<Vec<&'a RawValue>>,
    #[serde(default, rename = "structuredContent")]
    structured: Option<Value>,
    #[serde(default, rename = "isError")]
    is_error: Option<bool>,
}

/// One content block, every member of every type ([`Block::map`] picks);
/// `size` and `resource` kept raw, so that what they nest is skipped.
#[derive(Default, Deserialize)]
#[serde(default)]
struct Block<'a> {
    #[serde(rename = "type")]
    kind: Loose,
    text: Loose,
    data: Loose,
    #[serde(rename = "mimeType")]
    mime_type: Loose,
    uri: Loose,
    name: Loose,
    title: Loose,
    description: Loose,
    #[serde(borrow)]
    size: Option<&'a RawValue>,
    #[serde(borrow)]
    resource: Option<&'a RawValue>,
}

/// An embedded resource's members (others skipped, however they nest).
#[derive(Default, Deserialize)]
#[serde(default)]
struct Resource {
    uri: Loose,
    #[serde(rename = "mimeType")]
    mime_type: Loose,
    text: Loose,
    blob: Loose,
}

/// A string member; a member of another type counts as absent.
#[derive(Default)]
pub(crate) struct Loose(pub(crate) Option<String>);

impl<'de> Deserialize<'de> for Loose {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::String(s) => Ok(Loose(Some(s))),
            _ => Ok(Loose(None)),
        }
    }
}

/// Reads a `CallToolResult` and maps it, or says why it cannot (the call
/// fails, the connection does not). A block of a type MCP 2025-06-18 does
/// not define becomes a short note: a newer server's result still arrives.
pub(crate) fn call_result(raw: &RawValue) -> Result<CallResult, String> {
    // A derived struct would also take an array, member by member.
    if !raw.get().starts_with('{') {
        return Err("the tools/call result is not a JSON object".into());
    }
    let result: ToolResult<'_> = serde_json::from_str(raw.get())
        .map_err(|e| format!("the tools/call result cannot be read: {e}"))?;
    let blocks = result.content.unwrap_or_default().into_iter().enumerate();
    let content = blocks.map(|(i, block)| Block::read(i, block));
    let mut mapped = CallResult::new(content.collect::<Result<Vec<_>, _>>()?);
    if let Some(structured) = result.structured.filter(|v| !v.is_null()) {
        mapped = mapped.with_structured(structured);
    }
    Ok(mapped.with_error(result.is_error.unwrap_or(false)))
}

impl Block<'_> {
    /// Block `i`, or why it cannot be mapped.
    fn read(i: usize, block: &RawValue) -> Result<Content, String> {
        let block = match block.get().starts_with('{') {
            true => serde_json::from_str::<Block<'_>>(block.get())
                .map_err(|e| format!("it cannot be read: {e}")),
            false => Err("it is not a JSON object".to_owned()),
        };
        block
            .and_then(Block::map)
            .map_err(|e| format!("content block {i}: {e}"))
    }

    fn map(self) -> Result<Content, String> {
        let need = |v: Option<String>, key: &str| v.ok_or_else(|| format!("no string {key}"));
        let Some(kind) = self.kind.0 else {
            return Err("no type".into());
        };
        Ok(match kind.as_str() {
            "text" => Content::text(need(self.text.0, "text")?),
            "image" => Content::Image {
                mime_type: need(self.mime_type.0, "mimeType")?,
                data: need(self.data.0, "data")?,
            },
            "audio" => Content::Audio {
                mime_type: need(self.mime_type.0, "mimeType")?,
                data: need(self.data.0, "data")?,
            },
            "resource_link" => Content::ResourceLink {
                uri: need(self.uri.0, "uri")?,
                name: need(self.name.0, "name")?,
                title: self.title.0,
                description: self.description.0,
                mime_type: self.mime_type.0,
                // A whole number, however written (`3.0` is one).
                size: self.size.and_then(|size| {
                    let whole = |f: f64| (f.fract() == 0.0 && f >= 0.0).then_some(f as u64);
                    let float = || whole(serde_json::from_str(size.get()).ok()?);
                    serde_json::from_str(size.get()).ok().or_else(float)
                }),
            },
            "resource" => {
                let Some(r) = self.resource.filter(|r| r.get().starts_with('{')) else {
                    return Err("a resource block without a resource object".into());
                };
                let r: Resource = serde_json::from_str(r.get())
                    .map_err(|e| format!("its resource cannot be read: {e}"))?;
                let body = match (r.text.0, r.blob.0) {
                    (Some(text), _) => ResourceBody::Text(text),
                    (_, Some(blob)) => ResourceBody::Blob(blob),
                    _ => return Err("a resource with neither text nor blob".into()),
                };
                Content::Resource {
                    uri: need(r.uri.0, "uri")?,
                    mime_type: r.mime_type.0,
                    body,
                }
            }
            other => unsupported(other),
        })
    }
}

/// The note that stands for a block of a type MCP 2025-06-18 does not define.
pub(crate) fn unsupported(kind: &str) -> Content {
    let kind: String = kind.chars().take(40).collect();
    let note = format!("[a content block of unsupported type {kind:?} was left out]");
    Content::text(note)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn raw(json: &str) -> Box<RawValue> {
        RawValue::from_string(json.to_owned()).expect("valid JSON")
    }

    #[test]
    fn every_content_type_maps() {
        let got = call_result(&raw(&json!({
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
        }).to_string()))
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

    #[test]
    fn a_plain_result_is_not_an_error() {
        let got = call_result(&raw(r#"{"content":[{"type":"text","text":"ok"}]}"#)).expect("ok");
        assert_eq!(got, CallResult::text("ok"));
    }

    #[test]
    fn malformed_results_fail_with_a_reason() {
        let cases = [
            ("[]", "the tools/call result is not a JSON object"),
            ("null", "the tools/call result is not a JSON object"),
            (
                r#"[[{"type":"text","text":"hi"}]]"#,
                "the tools/call result is not a JSON object",
            ),
            (
                r#"{"content":{}}"#,
                "the tools/call result cannot be read: invalid type: map",
            ),
            (
                r#"{"content":[{"type":"text"}]}"#,
                "content block 0: no string text",
            ),
            (
                r#"{"content":[{"type":"text","text":5}]}"#,
                "content block 0: no string text",
            ),
            (r#"{"content":[{"text":"x"}]}"#, "content block 0: no type"),
            (
                r#"{"content":[["text","hi"]]}"#,
                "content block 0: it is not a JSON object",
            ),
            (
                r#"{"content":[{"type":"resource","resource":{"uri":"u"}}]}"#,
                "content block 0: a resource with neither text nor blob",
            ),
            (
                r#"{"content":[],"isError":"yes"}"#,
                "the tools/call result cannot be read: invalid type: string",
            ),
            (
                r#"{"isError":true,"isError":false}"#,
                "the tools/call result cannot be read: duplicate field `isError`",
            ),
            // What no Rust string can hold: a lone surrogate.
            (
                r#"{"content":[{"type":"text","text":"\ud800"}]}"#,
                "content block 0: it cannot be read: ",
            ),
            (
                r#"{"content":[{"type":"text","text":"a"},{"type":"text","text":"a","text":"b"}]}"#,
                "content block 1: it cannot be read: duplicate field `text`",
            ),
        ];
        for (json, want) in cases {
            let got = call_result(&raw(json)).expect_err(json);
            assert!(got.starts_with(want), "{json}: {got}");
        }
        let deep = format!(
            r#"{{"structuredContent":{}{}}}"#,
            "[".repeat(300),
            "]".repeat(300)
        );
        let got = call_result(&raw(&deep)).expect_err("too deep");
        assert!(got.contains("recursion limit"), "{got}");
    }

    /// Optional members of the wrong type are left out, unknown ones skipped.
    #[test]
    fn loose_members_are_left_out() {
        let got = call_result(&raw(
            r#"{"content":[{"type":"resource_link","uri":"u","name":"n","size":-1,"title":7,"_meta":{"a":[1]}},{"type":"image","data":"x","mimeType":"image/png","text":5},{"type":"hologram","data":5}],"structuredContent":null,"isError":null}"#,
        ))
        .expect("maps");
        assert_eq!(
            got,
            CallResult::new(vec![
                Content::ResourceLink {
                    uri: "u".into(),
                    name: "n".into(),
                    title: None,
                    description: None,
                    mime_type: None,
                    size: None
                },
                Content::Image {
                    mime_type: "image/png".into(),
                    data: "x".into()
                },
                Content::text("[a content block of unsupported type \"hologram\" was left out]"),
            ])
        );
    }

    /// A valid result is read whatever its free-form members hold: an
    /// embedded resource's `_meta` nested 200 deep; and a size written
    /// `3.0` is the whole number it is.
    #[test]
    fn free_form_members_nest_freely_and_a_size_is_a_whole_number() {
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        let json = format!(
            r#"{{"content":[{{"type":"resource","resource":{{"uri":"u","text":"t","_meta":{{"x":{deep}}}}}}},{{"type":"resource_link","uri":"u","name":"n","size":3.0}}]}}"#
        );
        let got = call_result(&raw(&json)).expect("read");
        assert!(
            matches!(&got.content[0], Content::Resource { uri, body: ResourceBody::Text(t), .. } if uri == "u" && t == "t"),
            "{got:?}"
        );
        assert!(
            matches!(&got.content[1], Content::ResourceLink { size: Some(3), .. }),
            "{got:?}"
        );
    }
}
