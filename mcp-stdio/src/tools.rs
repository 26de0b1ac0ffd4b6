//! A `tools/list` listing as the server offered it, in its order, each tool
//! read straight from the page's text into the core's [`ToolSpec`]. Names,
//! duplicates and schemas are the gateway's to judge, for every kind
//! (`spear_capabilities::admission`); an entry that is not a tool at all
//! (not an object, no string `name`, unreadable) is reported as rejected.

use std::fmt;

use serde::de::{IgnoredAny, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use serde_json::value::RawValue;
use spear_capabilities::{RejectedTool, ToolList, ToolSpec};

use crate::codec::members;
use crate::content::Loose;

/// The most pages of `tools/list` followed before giving up.
pub const MAX_PAGES: usize = 1000;
/// The most tools one server may offer.
pub const MAX_TOOLS: usize = 10_000;
/// The most bytes of JSON all pages of one listing may come to: 25 times a
/// listing of 10 000 real tools, so that many pages each under the line
/// bound cannot hold gigabytes.
pub const MAX_LISTING_BYTES: usize = 32 * 1024 * 1024;

const NO_TOOLS: &str = "a tools/list page has no tools array";
const CURSOR_NOT_STRING: &str = "a nextCursor is not a string";
const NOT_AN_OBJECT: &str = "the tool is not a JSON object";
const NO_NAME: &str = "the tool has no name";

/// The tools read so far, and how many entries were offered (the bound).
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Listing {
    pub(crate) list: ToolList,
    pub(crate) offered: usize,
}

#[derive(Deserialize)]
struct Page<'a> {
    #[serde(borrow, default)]
    tools: Option<&'a RawValue>,
    #[serde(default, rename = "nextCursor")]
    next: Option<Value>,
}

/// A tool's members that the listing reads; one of another type counts as
/// absent, and one given twice makes the tool unreadable.
#[derive(Default, Deserialize)]
#[serde(default)]
struct Tool<'a> {
    name: Loose,
    title: Loose,
    description: Loose,
    #[serde(rename = "inputSchema")]
    input_schema: Option<Value>,
    /// Read raw: what else they hold (however deep) is skipped.
    #[serde(borrow)]
    annotations: Option<&'a RawValue>,
    /// Read raw: a schema nested past what a `Value` is read to leaves the
    /// tool's results unchecked, not the tool unreadable.
    #[serde(rename = "outputSchema")]
    output_schema: Option<Box<RawValue>>,
}

/// The two annotations read: the read-only hint and the display title.
#[derive(Default, Deserialize)]
#[serde(default)]
struct Annotations {
    #[serde(rename = "readOnlyHint")]
    read_only: Option<Value>,
    title: Loose,
}

/// Reads one `tools/list` result into `listing`; the next page's cursor, or
/// `None` after the last, or the protocol fault, worded for the operator.
pub(crate) fn read_page(json: &str, listing: &mut Listing) -> Result<Option<String>, String> {
    if !json.starts_with('{') {
        return Err(NO_TOOLS.into());
    }
    let unreadable = |e| format!("a tools/list page cannot be read: {e}");
    let page: Page<'_> = serde_json::from_str(json).map_err(unreadable)?;
    let array = |tools: &&RawValue| tools.get().starts_with('[');
    let tools = page.tools.filter(array).ok_or(NO_TOOLS)?;
    let mut seq = serde_json::Deserializer::from_str(tools.get());
    seq.deserialize_seq(Entries(listing)).map_err(unreadable)?;
    if listing.offered > MAX_TOOLS {
        return Err(format!("the server offers more than {MAX_TOOLS} tools"));
    }
    match page.next {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(next)) => Ok(Some(next)),
        Some(_) => Err(CURSOR_NOT_STRING.into()),
    }
}

/// The `tools` array, each entry read onto the listing as it comes; past
/// [`MAX_TOOLS`] entries are counted, not kept, so a page of a million tiny
/// entries costs no memory.
struct Entries<'l>(&'l mut Listing);

impl<'de> Visitor<'de> for Entries<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of tools")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while self.0.offered < MAX_TOOLS {
            let Some(entry) = seq.next_element::<&RawValue>()? else {
                return Ok(());
            };
            self.0.offered += 1;
            match read_tool(entry) {
                Ok(spec) => self.0.list.tools.push(spec),
                Err(reason) => {
                    // Named if its name reads, to tell the operator which.
                    let name = members(entry.get()).get("name").copied();
                    let name = name.and_then(|n| serde_json::from_str(n.get()).ok());
                    let name: String = name.unwrap_or_default();
                    self.0.list.rejected.push(RejectedTool::new(name, reason));
                }
            }
        }
        while seq.next_element::<IgnoredAny>()?.is_some() {
            self.0.offered += 1;
        }
        Ok(())
    }
}

fn read_tool(entry: &RawValue) -> Result<ToolSpec, String> {
    if !entry.get().starts_with('{') {
        return Err(NOT_AN_OBJECT.into());
    }
    let unreadable = |e| format!("the tool cannot be read: {e}");
    let tool: Tool<'_> = serde_json::from_str(entry.get()).map_err(unreadable)?;
    let name = tool.name.0.ok_or(NO_NAME)?;
    // A missing schema is the gateway's to refuse, with its reason.
    let mut spec = ToolSpec::new(name, tool.input_schema.unwrap_or(Value::Null));
    let annotations = tool.annotations.filter(|a| a.get().starts_with('{'));
    let annotations: Annotations = annotations
        .and_then(|a| serde_json::from_str(a.get()).ok())
        .unwrap_or_default();
    // The operator's hint, never a class (the core's `read` decides).
    spec.read_only_hint = annotations.read_only.as_ref().and_then(Value::as_bool);
    // The display name, as schema.ts has it: `title`, else `annotations.title`.
    if let Some(title) = tool.title.0.or(annotations.title.0) {
        spec = spec.with_title(title);
    }
    if let Some(description) = tool.description.0 {
        spec = spec.with_description(description);
    }
    // The gateway vets it (a bad one leaves the results unchecked).
    if let Some(output) = tool.output_schema.filter(|s| s.get() != "null") {
        spec = match serde_json::from_str(output.get()) {
            Ok(schema) => spec.with_output_schema(schema),
            Err(e) => spec.with_unreadable_output_schema(format!("it cannot be read: {e}")),
        };
    }
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// An entry that has a name but no tool that reads (a lone surrogate in
    /// its description, a schema past serde's nesting limit) is rejected
    /// under its name; annotations are read for their two members only,
    /// whatever else they hold.
    #[test]
    fn an_unreadable_tool_is_rejected_under_its_name_and_annotations_nest_freely() {
        let deep = format!(
            "{}{}",
            "{\"items\":".repeat(130),
            "{}".to_owned() + &"}".repeat(130)
        );
        let nested = format!("{}{}", "[".repeat(200), "]".repeat(200));
        let search = "{\"name\":\"search\",\"description\":\"\\ud800\",\"inputSchema\":{}}";
        let deep =
            format!("{{\"name\":\"deep\",\"inputSchema\":{{\"properties\":{{\"q\":{deep}}}}}}}");
        let annotated = "{\"name\":\"ok\",\"inputSchema\":{},\"annotations\":";
        let annotated = format!("{annotated}{{\"readOnlyHint\":true,\"x\":{nested}}}}}");
        let page = format!("{{\"tools\":[{search},{deep},{annotated}]}}");
        let mut listing = Listing::default();
        assert_eq!(read_page(&page, &mut listing), Ok(None));
        let rejected: Vec<&str> = listing
            .list
            .rejected
            .iter()
            .map(|r| r.name.as_str())
            .collect();
        assert_eq!(rejected, ["search", "deep"]);
        assert_eq!(listing.list.tools.len(), 1);
        assert_eq!(listing.list.tools[0].read_only_hint, Some(true));
    }

    /// Reads `pages` in turn; returns the listing and each page's outcome.
    fn read(pages: &[&str]) -> (Listing, Vec<Result<Option<String>, String>>) {
        let mut listing = Listing::default();
        let outcomes = pages.iter().map(|p| read_page(p, &mut listing)).collect();
        (listing, outcomes)
    }

    fn reasons(listing: &Listing) -> Vec<&str> {
        listing
            .list
            .rejected
            .iter()
            .map(|r| r.reason.as_str())
            .collect()
    }

    #[test]
    fn tools_are_read_as_offered_and_non_tools_rejected() {
        let obj = json!({"type": "object"});
        let page = json!({"tools": [
            {"name": "ok", "description": "d", "inputSchema": obj, "execution": {}},
            {"name": "bad name", "inputSchema": obj},
            {"name": "twice", "inputSchema": obj},
            {"name": "twice", "inputSchema": obj},
            {"name": "noschema"},
            {"description": "nameless"},
            "not an object",
            {"name": "ok2", "title": "T", "inputSchema": obj},
        ]});
        let (listing, outcomes) = read(&[&page.to_string()]);
        assert_eq!(outcomes, [Ok(None)]);
        let list = listing.list;
        let kept: Vec<_> = list.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            kept,
            ["ok", "bad name", "twice", "twice", "noschema", "ok2"]
        );
        assert_eq!(list.tools[0].description.as_deref(), Some("d"));
        assert_eq!(list.tools[0].input_schema, obj);
        assert_eq!(list.tools[4].input_schema, Value::Null);
        assert_eq!(list.tools[5].title.as_deref(), Some("T"));
        let reasons: Vec<_> = list.rejected.iter().map(|r| r.reason.as_str()).collect();
        assert_eq!(reasons, [NO_NAME, NOT_AN_OBJECT]);
    }

    #[test]
    fn an_output_schema_nested_past_what_can_be_read_leaves_the_tool_with_it_unread() {
        let mut deep = r#"{"type":"string"}"#.to_owned();
        for _ in 0..100 {
            deep = format!(r#"{{"type":"object","properties":{{"a":{deep}}}}}"#);
        }
        // One string a line, so that `loc.py` counts this as a test.
        let deep =
            format!(r#"{{"name":"deep","inputSchema":{{"type":"object"}},"outputSchema":{deep}}}"#);
        let plain = r#"{"name":"plain","inputSchema":{"type":"object"},"outputSchema":null}"#;
        let page = format!(r#"{{"tools":[{deep},{plain}]}}"#);
        let (listing, outcomes) = read(&[&page]);
        assert_eq!(outcomes, [Ok(None)]);
        let list = listing.list;
        assert!(list.rejected.is_empty(), "{:?}", list.rejected);
        let deep = &list.tools[0];
        assert_eq!(
            (deep.name.as_str(), deep.output_schema.as_ref()),
            ("deep", None)
        );
        let reason = deep.unreadable_output_schema.as_deref().unwrap_or_default();
        assert!(
            reason.starts_with("it cannot be read: recursion limit exceeded"),
            "{reason}"
        );
        let plain = &list.tools[1];
        assert_eq!(
            (
                plain.output_schema.as_ref(),
                plain.unreadable_output_schema.as_ref()
            ),
            (None, None)
        );
    }

    #[test]
    fn every_kind_of_entry_that_is_no_tool_is_rejected_with_its_reason() {
        let page = json!({"tools": [1, -2, 3.5, true, null, "s", [1, [2]], {}, {"name": 5},
            {"name": null}, {"name": ["a"]}, {"name": {"x": 1}}, {"title": "t", "inputSchema": {}}]})
        .to_string();
        let page = page.as_str();
        let (listing, outcomes) = read(&[page]);
        assert_eq!(outcomes, [Ok(None)]);
        assert!(listing.list.tools.is_empty());
        let mut want = vec![NOT_AN_OBJECT; 7];
        want.extend([NO_NAME; 6]);
        assert_eq!(reasons(&listing), want);
        assert_eq!(listing.offered, 13);
    }

    #[test]
    fn members_of_the_wrong_type_are_left_out_and_extra_ones_ignored() {
        let page = concat!(
            r#"{"tools":[{"name":"a","title":7,"description":["d"],"inputSchema":"not a schema"},"#,
            r#"{"name":"b","title":null,"description":{"x":1},"annotations":{"a":[1,{"b":2}]},"#,
            r#""outputSchema":{"type":"object"},"_meta":null,"inputSchema":{"type":"object"}},"#,
            r#"{"name":"c\u0041","title":"T\n","description":"D\u0022","inputSchema":[1,2]}"#,
            r#"],"_meta":{"k":[1]},"extra":"x"}"#
        );
        let (listing, _) = read(&[page]);
        let tools = &listing.list.tools;
        assert_eq!(tools.len(), 3);
        assert_eq!(
            (tools[0].title.as_ref(), tools[0].description.as_ref()),
            (None, None)
        );
        assert_eq!(tools[0].input_schema, json!("not a schema"));
        assert_eq!(
            (tools[1].title.as_ref(), tools[1].description.as_ref()),
            (None, None)
        );
        assert_eq!(tools[1].input_schema, json!({"type": "object"}));
        assert_eq!(tools[2].name, "cA");
        assert_eq!(tools[2].title.as_deref(), Some("T\n"));
        assert_eq!(tools[2].description.as_deref(), Some("D\""));
        assert_eq!(tools[2].input_schema, json!([1, 2]));
    }

    /// JSON leaves a member given twice to the reader: a tool with one is
    /// rejected, a page with one is a fault.
    #[test]
    fn a_member_given_twice_is_never_guessed_at() {
        let (listing, outcomes) = read(&[r#"{"tools":[{"name":"a","name":"b"},{"name":"c"}]}"#]);
        assert_eq!(outcomes, [Ok(None)]);
        assert_eq!(listing.list.tools.len(), 1);
        assert_eq!(listing.list.tools[0].name, "c");
        let reasons = reasons(&listing);
        assert!(
            reasons[0].starts_with("the tool cannot be read: duplicate field `name`"),
            "{reasons:?}"
        );
        let (_, outcomes) = read(&[r#"{"tools":[{"name":"a"}],"tools":[]}"#]);
        let fault = outcomes[0].as_ref().expect_err("a fault");
        assert!(
            fault.starts_with("a tools/list page cannot be read: duplicate field `tools`"),
            "{fault}"
        );
    }

    #[test]
    fn a_page_without_a_tools_array_is_a_fault() {
        for page in [
            "{}",
            r#"{"tools":null}"#,
            r#"{"tools":{"name":"a"}}"#,
            r#"{"tools":"[]"}"#,
            r#"{"Tools":[]}"#,
            "[]",
            r#"[{"tools":[]}]"#,
            "null",
            "\"tools\"",
            "3",
        ] {
            let (listing, outcomes) = read(&[page]);
            assert_eq!(outcomes, [Err(NO_TOOLS.to_owned())], "{page}");
            assert_eq!(listing.offered, 0);
        }
    }

    #[test]
    fn next_cursor_absent_or_null_ends_a_string_continues_and_else_is_a_fault() {
        let cases = [
            (r#"{"tools":[]}"#, Ok(None)),
            (r#"{"tools":[],"nextCursor":null}"#, Ok(None)),
            (
                r#"{"nextCursor":"c\u00e9","tools":[]}"#,
                Ok(Some("cé".to_owned())),
            ),
            (r#"{"tools":[],"nextCursor":""}"#, Ok(Some(String::new()))),
            (
                r#"{"tools":[],"nextCursor":3}"#,
                Err(CURSOR_NOT_STRING.to_owned()),
            ),
            (
                r#"{"tools":[],"nextCursor":{"c":"x"}}"#,
                Err(CURSOR_NOT_STRING.to_owned()),
            ),
            (
                r#"{"tools":[],"nextCursor":["x"]}"#,
                Err(CURSOR_NOT_STRING.to_owned()),
            ),
            (
                r#"{"tools":[],"nextCursor":false}"#,
                Err(CURSOR_NOT_STRING.to_owned()),
            ),
            // The missing array is reported first.
            (r#"{"nextCursor":3}"#, Err(NO_TOOLS.to_owned())),
        ];
        for (page, want) in cases {
            let (_, outcomes) = read(&[page]);
            assert_eq!(outcomes, [want], "{page}");
        }
    }

    #[test]
    fn past_the_bound_entries_are_counted_not_kept() {
        let first = format!(
            r#"{{"tools":[{}],"nextCursor":"2"}}"#,
            vec![r#"{"name":"t"}"#; MAX_TOOLS - 1].join(",")
        );
        let (listing, outcomes) =
            read(&[&first, r#"{"tools":[{"name":"last"}],"nextCursor":"3"}"#]);
        assert_eq!(outcomes, [Ok(Some("2".into())), Ok(Some("3".into()))]);
        assert_eq!(listing.list.tools.len(), MAX_TOOLS);
        let over = format!(
            r#"{{"tools":[{}],"nextCursor":7}}"#,
            vec!["1"; 5000].join(",")
        );
        let (listing, outcomes) = read(&[&first, &over]);
        let err = format!("the server offers more than {MAX_TOOLS} tools");
        // The bound is reported before the bad cursor.
        assert_eq!(outcomes, [Ok(Some("2".into())), Err(err)]);
        assert_eq!(listing.offered, MAX_TOOLS - 1 + 5000);
        assert_eq!(
            listing.list.tools.len() + listing.list.rejected.len(),
            MAX_TOOLS
        );
    }

    #[test]
    fn the_display_name_is_the_title_else_the_annotations_title() {
        let (listing, _) = read(&[r#"{"tools":[
            {"name":"a","inputSchema":{},"title":"T","annotations":{"title":"A"}},
            {"name":"b","inputSchema":{},"annotations":{"title":"A"}},
            {"name":"c","inputSchema":{},"annotations":{"title":7}},
            {"name":"d","inputSchema":{},"annotations":"none"}]}"#]);
        let titles: Vec<_> = listing.list.tools.into_iter().map(|t| t.title).collect();
        assert_eq!(titles, [Some("T".into()), Some("A".into()), None, None]);
    }
}
