//! What a turn is shown, as data: each capability made plain text, the
//! providers named unavailable, and the whole of it ([`Shown`]). Built by
//! [`crate::exposure`], worded by [`crate::messages`]: data, not words.

use std::sync::Arc;

use serde::Serialize;

use crate::tokens::TokenCounter;
use crate::vocabulary::{CapabilityClass, Exposure, UnavailableReason};

#[cfg(doc)]
use crate::exposure::MAX_SHOWN_SCHEMA_CHARS;

/// One capability as a turn sees it, already made plain text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ShownCapability {
    /// `<provider>/<tool>`.
    pub id: String,
    /// READ or WRITE.
    pub class: CapabilityClass,
    /// The title, plain and on one line, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The description, plain and capped.
    pub description: String,
    /// The argument schema as compact JSON text, of at most
    /// [`MAX_SHOWN_SCHEMA_CHARS`] characters: past that, cut (its
    /// descriptions first) and ended by a note saying how much is shown.
    pub schema: String,
    /// The schema of its structured results, if it declares one, bounded
    /// as [`ShownCapability::schema`] is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<String>,
    /// The provider's whole texts where what is shown is shorter: whole or
    /// index is decided on what the family would be shown whole, not on
    /// what a bound left of it.
    #[serde(skip)]
    pub(crate) uncut: Option<Arc<Uncut>>,
}

/// The whole texts of a capability whose shown ones were cut.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Uncut {
    pub(crate) description: Option<String>,
    pub(crate) schema: Option<String>,
    pub(crate) output_schema: Option<String>,
}

impl ShownCapability {
    /// The estimated tokens of this capability shown whole: its title,
    /// description and schemas as the provider wrote them, before any bound
    /// cut them.
    pub fn whole_tokens(&self, counter: &dyn TokenCounter) -> usize {
        let uncut = self.uncut.as_deref();
        let description = uncut
            .and_then(|u| u.description.as_deref())
            .unwrap_or(&self.description);
        let schema = uncut
            .and_then(|u| u.schema.as_deref())
            .unwrap_or(&self.schema);
        let output = uncut
            .and_then(|u| u.output_schema.as_deref())
            .or(self.output_schema.as_deref());
        counter.count(description)
            + counter.count(schema)
            + output.map_or(0, |s| counter.count(s))
            + self.title.as_deref().map_or(0, |t| counter.count(t))
    }
}

/// A provider the turn is told is unavailable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ShownUnavailable {
    /// The provider's id.
    pub provider: String,
    /// Why, as a short category.
    pub reason: UnavailableReason,
}

/// What a turn is shown: one block of text, and the same as data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Shown {
    /// Whole, index or none.
    pub exposure: Exposure,
    /// The text the turn's context gets (empty when there is nothing to say).
    pub text: String,
    /// The capabilities, in order.
    pub capabilities: Vec<ShownCapability>,
    /// The providers that are unavailable.
    pub unavailable: Vec<ShownUnavailable>,
    /// The estimated tokens of titles, descriptions and schemas as the
    /// family would be shown whole (before any bound cut them): what whole
    /// or index is decided on.
    pub tokens: usize,
}
