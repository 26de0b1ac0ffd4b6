//! One call's request and result, as any kind of provider gives them.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One call of one tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CallRequest {
    /// The tool's name within its provider.
    pub tool: String,
    /// The arguments, already checked against the tool's schema.
    pub arguments: Map<String, Value>,
}

impl CallRequest {
    /// A call of `tool` with `arguments`.
    pub fn new(tool: impl Into<String>, arguments: Map<String, Value>) -> Self {
        Self {
            tool: tool.into(),
            arguments,
        }
    }
}

/// The body of an embedded resource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ResourceBody {
    /// Text.
    Text(String),
    /// Binary data, base64-encoded as the provider sent it.
    Blob(String),
}

/// One block of a call's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Content {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// Its media type, e.g. `image/png`.
        mime_type: String,
        /// The base64 data as the provider sent it.
        data: String,
    },
    /// Audio, base64-encoded.
    Audio {
        /// Its media type, e.g. `audio/wav`.
        mime_type: String,
        /// The base64 data as the provider sent it.
        data: String,
    },
    /// A link to a resource the provider can serve (never followed).
    ResourceLink {
        /// The resource's URI.
        uri: String,
        /// Its name.
        name: String,
        /// Its title, if given.
        title: Option<String>,
        /// Its description, if given.
        description: Option<String>,
        /// Its media type, if given.
        mime_type: Option<String>,
        /// Its size in bytes, if given.
        size: Option<u64>,
    },
    /// A resource embedded in the result.
    Resource {
        /// The resource's URI.
        uri: String,
        /// Its media type, if given.
        mime_type: Option<String>,
        /// Its contents.
        body: ResourceBody,
    },
}

impl Content {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text { text: text.into() }
    }
}

/// What a call returned.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CallResult {
    /// The content blocks, in order.
    pub content: Vec<Content>,
    /// Structured content, if the provider sent any.
    pub structured: Option<Value>,
    /// The tool itself reports failure (the call reached it and it failed).
    pub is_error: bool,
}

impl CallResult {
    /// A successful result made of these blocks.
    pub fn new(content: Vec<Content>) -> Self {
        Self {
            content,
            structured: None,
            is_error: false,
        }
    }

    /// A successful result of one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new(vec![Content::text(text)])
    }

    /// Sets the structured content.
    pub fn with_structured(mut self, structured: Value) -> Self {
        self.structured = Some(structured);
        self
    }

    /// Its text blocks, joined by newlines (other blocks left out).
    pub fn joined_text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter_map(|c| match c {
                Content::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        texts.join("\n")
    }

    /// Marks the result as the tool's own failure.
    pub fn with_error(mut self, is_error: bool) -> Self {
        self.is_error = is_error;
        self
    }
}
