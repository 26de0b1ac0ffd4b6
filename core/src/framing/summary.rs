//! A call's result as plain text, before it is framed: text blocks as they
//! are, everything else summarised by type and size, never dumped.

use std::borrow::Cow;
use std::fmt::Write as _;

use super::sanitise::{json_text, one_line};
use crate::provider::{CallResult, Content, ResourceBody};

/// The plain text of a call result, before framing. Borrows the text of a
/// result that is one non-empty text block.
pub fn result_text(result: &CallResult) -> Cow<'_, str> {
    if let ([Content::Text { text }], None) = (result.content.as_slice(), &result.structured) {
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
    if let Some(structured) = &result.structured {
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
}
