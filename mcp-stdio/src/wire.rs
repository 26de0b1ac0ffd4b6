//! A `tools/call` result read straight from its JSON text into the core's
//! types: the fast path of [`crate::content`].
//!
//! It accepts only what it can map exactly as the `Value` path does (every
//! member it reads has the one type that path takes without a note), and
//! gives up on anything else, which then goes the `Value` path and gets
//! that path's answer and error messages. So the two never disagree on a
//! result a `Value` can hold (one that cannot, a lone surrogate escape or a
//! number past f64's range in a member skipped here, the `Value` path
//! calls malformed); the fuzz target `mcp_stdout` checks that on every
//! answer it reads.
//!
//! The result and its blocks are read by hand-written visitors that take
//! only a map: a derived struct also reads itself from an array
//! (`["text", "hi"]` as a text block), which the `Value` path refuses, and
//! the derive's way out of that (`flatten`) buffers every member and costs
//! more. The result is read from its own text ([`call_result`]), or where
//! it stands in the answer's line as the reader decodes it
//! ([`CallSeed`], `codec.rs`): one pass over the line instead of two.

use std::borrow::Cow;
use std::fmt;

use serde::Deserializer;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use spear_capabilities::{CallResult, Content, ResourceBody};

/// Reads a `CallToolResult`, or `None` when the `Value` path must decide.
pub(crate) fn call_result(json: &str) -> Option<CallResult> {
    let mut d = serde_json::Deserializer::from_str(json);
    let result = CallSeed.deserialize(&mut d).ok()?;
    d.end().ok()?;
    Some(result)
}

/// Reads a `CallToolResult` where it stands in a larger document (the
/// answer's line, `codec.rs`): an error wherever [`call_result`] gives
/// `None`.
pub(crate) struct CallSeed;

impl<'de> DeserializeSeed<'de> for CallSeed {
    type Value = CallResult;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<CallResult, D::Error> {
        // Only a map: a derived struct would also read itself from an array.
        d.deserialize_map(ResultVisitor)
    }
}

/// The members of a result the mapping reads; `null` reads as absent, as on
/// the `Value` path. A duplicate member is an error here; the `Value` path,
/// where the later one wins, then reads it.
struct ResultVisitor;

impl<'de> Visitor<'de> for ResultVisitor {
    type Value = CallResult;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a tools/call result")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<CallResult, A::Error> {
        let mut content: Option<Option<Blocks>> = None;
        let mut structured: Option<Option<Value>> = None;
        let mut is_error: Option<Option<bool>> = None;
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Content if content.is_none() => content = Some(map.next_value()?),
                Key::StructuredContent if structured.is_none() => {
                    structured = Some(map.next_value()?);
                }
                Key::IsError if is_error.is_none() => is_error = Some(map.next_value()?),
                Key::Content | Key::StructuredContent | Key::IsError => return Err(give_up()),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let blocks = content.flatten().map(|b| b.0).unwrap_or_default();
        let mut result = CallResult::new(blocks);
        if let Some(structured) = structured.flatten() {
            result = result.with_structured(structured);
        }
        if let Some(is_error) = is_error.flatten() {
            result = result.with_error(is_error);
        }
        Ok(result)
    }
}

/// The members of a result, and of a block, that the mapping reads.
#[derive(Clone, Copy)]
enum Key {
    Content,
    StructuredContent,
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
            "structuredContent" => Key::StructuredContent,
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
struct Members<'de> {
    kind: Option<Kind<'de>>,
    text: Option<String>,
    mime_type: Option<String>,
    data: Option<String>,
    uri: Option<String>,
    name: Option<String>,
    title: Option<String>,
    description: Option<String>,
    size: Option<u64>,
    resource: Option<Box<Members<'de>>>,
    blob: Option<String>,
}

/// A block's `type`: borrowed from the result's text unless it has escapes,
/// since it is only compared, never kept.
struct Kind<'de>(Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Kind<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KindVisitor;
        impl<'de> Visitor<'de> for KindVisitor {
            type Value = Kind<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Kind<'de>, E> {
                Ok(Kind(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Kind<'de>, E> {
                Ok(Kind(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(KindVisitor)
    }
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

impl<'de> de::Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(MembersVisitor)
    }
}

impl<'de> Visitor<'de> for MembersVisitor {
    type Value = Members<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a content block")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members<'de>, A::Error> {
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
                Key::Resource => {
                    m.resource = map.next_value::<Option<Members<'de>>>()?.map(Box::new)
                }
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
fn block(m: Members<'_>) -> Option<Content> {
    Some(match &*m.kind?.0 {
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
