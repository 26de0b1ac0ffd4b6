//! A `tools/call` result read straight from its JSON text into the core's
//! types: the fast path of [`crate::content`].
//!
//! It accepts only what it can map exactly as the `Value` path does (every
//! member it reads has the one type that path takes without a note), and
//! gives up on anything else, which then goes the `Value` path and gets
//! that path's answer and error messages. So the two never disagree; the
//! fuzz target `mcp_stdout` checks that on every answer it reads.

use std::fmt;

use serde::Deserializer;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use spear_capabilities::{CallResult, Content, ResourceBody};

/// Reads a `CallToolResult`, or `None` when the `Value` path must decide.
pub(crate) fn call_result(json: &str) -> Option<CallResult> {
    // A derived struct would also read itself from an array: only maps here.
    if !json.trim_ascii_start().starts_with('{') {
        return None;
    }
    let mut de = serde_json::Deserializer::from_str(json);
    let result = de.deserialize_map(ResultVisitor).ok()?;
    de.end().ok()?;
    result
}

/// The members of a result or a block that the mapping reads.
#[derive(Clone, Copy)]
enum Key {
    Content,
    Structured,
    IsError,
    Type,
    Text,
    MimeType,
    Data,
    Uri,
    Name,
    Title,
    Description,
    Size,
    Resource,
    Blob,
    Other,
}

impl<'de> de::Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_identifier(KeyVisitor)
    }
}

struct KeyVisitor;

impl Visitor<'_> for KeyVisitor {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Key, E> {
        Ok(match key {
            "content" => Key::Content,
            "structuredContent" => Key::Structured,
            "isError" => Key::IsError,
            "type" => Key::Type,
            "text" => Key::Text,
            "mimeType" => Key::MimeType,
            "data" => Key::Data,
            "uri" => Key::Uri,
            "name" => Key::Name,
            "title" => Key::Title,
            "description" => Key::Description,
            "size" => Key::Size,
            "resource" => Key::Resource,
            "blob" => Key::Blob,
            _ => Key::Other,
        })
    }
}

/// Gives up (an error) where the `Value` path would see something other
/// than the plain case; the caller then takes that path.
fn give_up<E: de::Error>() -> E {
    E::custom("not the plain case")
}

struct ResultVisitor;

impl<'de> Visitor<'de> for ResultVisitor {
    type Value = Option<CallResult>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a tools/call result")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        // Later duplicates win, as they do in a `Value` map.
        let mut content = None;
        let mut structured = None;
        let mut is_error = None;
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Content => content = map.next_value::<Option<Blocks>>()?.map(|b| b.0),
                Key::Structured => structured = map.next_value::<Option<Value>>()?,
                Key::IsError => is_error = map.next_value::<Option<bool>>()?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let mut result = CallResult::new(content.unwrap_or_default());
        if let Some(structured) = structured {
            result = result.with_structured(structured);
        }
        if let Some(is_error) = is_error {
            result = result.with_error(is_error);
        }
        Ok(Some(result))
    }
}

/// The `content` array, each block mapped as it is read.
struct Blocks(Vec<Content>);

impl<'de> de::Deserialize<'de> for Blocks {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_seq(BlocksVisitor)
    }
}

struct BlocksVisitor;

impl<'de> Visitor<'de> for BlocksVisitor {
    type Value = Blocks;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of content blocks")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Blocks, A::Error> {
        let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(1).min(64));
        while let Some(block) = seq.next_element_seed(BlockSeed)? {
            blocks.push(block);
        }
        Ok(Blocks(blocks))
    }
}

/// The members of a block (or of a `resource` block's resource), each a
/// string when present.
#[derive(Default)]
struct Members {
    kind: Option<String>,
    text: Option<String>,
    mime_type: Option<String>,
    data: Option<String>,
    uri: Option<String>,
    name: Option<String>,
    title: Option<String>,
    description: Option<String>,
    size: Option<u64>,
    resource: Option<Box<Members>>,
    blob: Option<String>,
}

struct BlockSeed;

impl<'de> DeserializeSeed<'de> for BlockSeed {
    type Value = Content;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Content, D::Error> {
        let m = d.deserialize_map(MembersVisitor)?;
        block(m).ok_or_else(give_up)
    }
}

struct MembersVisitor;

impl<'de> de::Deserialize<'de> for Members {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(MembersVisitor)
    }
}

impl<'de> Visitor<'de> for MembersVisitor {
    type Value = Members;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a content block")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members, A::Error> {
        let mut m = Members::default();
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Type => m.kind = map.next_value()?,
                Key::Text => m.text = map.next_value()?,
                Key::MimeType => m.mime_type = map.next_value()?,
                Key::Data => m.data = map.next_value()?,
                Key::Uri => m.uri = map.next_value()?,
                Key::Name => m.name = map.next_value()?,
                Key::Title => m.title = map.next_value()?,
                Key::Description => m.description = map.next_value()?,
                Key::Size => m.size = map.next_value()?,
                Key::Resource => m.resource = map.next_value::<Option<Members>>()?.map(Box::new),
                Key::Blob => m.blob = map.next_value()?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(m)
    }
}

/// Maps a block as `content::block` does, or `None` where that one would
/// refuse it (so that it words the refusal).
fn block(m: Members) -> Option<Content> {
    Some(match m.kind?.as_str() {
        "text" => Content::text(m.text?),
        "image" => Content::Image {
            mime_type: m.mime_type?,
            data: m.data?,
        },
        "audio" => Content::Audio {
            mime_type: m.mime_type?,
            data: m.data?,
        },
        "resource_link" => Content::ResourceLink {
            uri: m.uri?,
            name: m.name?,
            title: m.title,
            description: m.description,
            mime_type: m.mime_type,
            size: m.size,
        },
        "resource" => {
            let r = m.resource?;
            let body = match (r.text, r.blob) {
                (Some(text), _) => ResourceBody::Text(text),
                (None, Some(blob)) => ResourceBody::Blob(blob),
                (None, None) => return None,
            };
            Content::Resource {
                uri: r.uri?,
                mime_type: r.mime_type,
                body,
            }
        }
        other => crate::content::unsupported(other),
    })
}
