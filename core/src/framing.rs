//! What a provider says is data: plain bounded text, and framed results.
//!
//! - [`sanitise`]: descriptions, titles and schemas are shown as plain text
//!   with every control, escape sequence, bidi control, zero-width and tag
//!   character removed, and capped with a visible mark.
//! - [`frame`]: results and provider-sourced errors are framed between
//!   markers that carry a fresh unpredictable token, so text inside cannot
//!   close the frame; text that imitates a marker is neutralised anyway, and
//!   the size is bounded with a note saying how much was cut.
//! - [`schema`]: a tool's schema as compact JSON text, bounded: shortened
//!   in steps (what is written for people first, then details, then allowed
//!   values), never below its property names and `required`, with a note
//!   saying what was left out.
//! - [`summary`]: a result's content as plain text before framing: text as
//!   it is, everything else summarised by type and size, never dumped.
//!
//! It is not where the gateway's own sentences are worded
//! ([`crate::messages`]).

pub(crate) mod frame;
pub(crate) mod sanitise;
pub(crate) mod schema;
pub(crate) mod summary;

pub use frame::{FrameHead, neutralise};
pub use sanitise::{block, json_text, one_line, strip};
pub(crate) use schema::property_schema;
pub use schema::{SchemaCut, schema_text};
pub(crate) use summary::result_text;

/// How long a description may be when shown whole, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 2000;
/// How long a description may be on an index line, in characters.
pub(crate) const MAX_INDEX_DESCRIPTION_CHARS: usize = 120;
/// How long a tool's input schema may be as a turn is shown it (in the
/// exposure and by `describe`), in characters, the note saying what was
/// left out included, unless only its names are left. The whole schema
/// still checks every call.
pub const MAX_SHOWN_SCHEMA_CHARS: usize = 4000;
/// How long a shown schema may be when only its property names, types and
/// `required` are left and they are longer than [`MAX_SHOWN_SCHEMA_CHARS`]:
/// a call cannot be written without them. Past this, the text is cut, with
/// `required` first.
pub const MAX_SHOWN_SCHEMA_NAMES_CHARS: usize = 32_000;
/// How long the content of one framed result may be, in characters.
pub const MAX_RESULT_CHARS: usize = 100_000;
