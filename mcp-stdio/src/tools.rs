//! A `tools/list` listing as the server offered it.
//!
//! The client reads each offered tool into the core's [`ToolSpec`] and keeps
//! the server's order; it does not judge names, duplicates or schemas: the
//! gateway admits tools the same way for every kind
//! (`spear_capabilities::admission`). An entry that is not a tool at all (not
//! an object, or without a string `name`) is reported as rejected.
//!
//! A page is read straight from its JSON text into the listing
//! ([`read_page`]): each tool's members go into its [`ToolSpec`] as they are
//! parsed, so no `Value` is built for the page or for a tool object only to
//! be taken apart (that cost about a fifth of a listing's work in the
//! client). Only a page with a member twice over (where the later one wins)
//! goes the `Value` path, [`read_page_value`], which is the reference: the
//! fuzz target `mcp_stdout` checks on every answer that the two agree.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use spear_capabilities::{RejectedTool, ToolList, ToolSpec};

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

/// The tools read so far from the pages of one listing.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Listing {
    list: ToolList,
    /// Entries offered so far, tools or not (the bound is on these).
    offered: usize,
}

impl Listing {
    /// The tools and rejected entries, in the server's order.
    pub(crate) fn finish(self) -> ToolList {
        self.list
    }

    /// Entries offered so far, tools or not.
    pub(crate) fn offered(&self) -> usize {
        self.offered
    }

    fn push(&mut self, entry: Result<ToolSpec, &'static str>) {
        self.offered += 1;
        // Past the bound the listing fails: the entries are only counted.
        if self.offered > MAX_TOOLS {
            return;
        }
        match entry {
            Ok(spec) => self.list.tools.push(spec),
            Err(reason) => self.list.rejected.push(RejectedTool::new("", reason)),
        }
    }

    /// Forgets what was read after `mark`.
    fn rewind(&mut self, mark: (usize, usize, usize)) {
        self.list.tools.truncate(mark.0);
        self.list.rejected.truncate(mark.1);
        self.offered = mark.2;
    }

    fn mark(&self) -> (usize, usize, usize) {
        (
            self.list.tools.len(),
            self.list.rejected.len(),
            self.offered,
        )
    }
}

/// Reads one `tools/list` result (its JSON text) into `listing`, and returns
/// the cursor of the next page, or `None` after the last.
///
/// # Errors
/// The protocol fault, worded for the operator: the page has no `tools`
/// array, the listing went past [`MAX_TOOLS`], or `nextCursor` is not a
/// string.
pub(crate) fn read_page(json: &str, listing: &mut Listing) -> Result<Option<String>, String> {
    let mark = listing.mark();
    let mut de = serde_json::Deserializer::from_str(json);
    let typed = PageSeed(listing)
        .deserialize(&mut de)
        .and_then(|page| de.end().map(|()| page));
    match typed {
        Ok(page) => finish_page(page.tools, page.next, listing),
        Err(_) => {
            // A member twice over (or anything else the typed reading does
            // not take): the `Value` path decides.
            listing.rewind(mark);
            read_page_value(serde_json::from_str(json).unwrap_or(Value::Null), listing)
        }
    }
}

/// Reads one page from its `Value`: what [`read_page`] does, the slow way.
pub(crate) fn read_page_value(
    mut page: Value,
    listing: &mut Listing,
) -> Result<Option<String>, String> {
    let tools = match page.get_mut("tools").map(Value::take) {
        Some(Value::Array(tools)) => {
            for tool in tools {
                listing.push(read_tool(tool));
            }
            true
        }
        _ => false,
    };
    let next = match page.get_mut("nextCursor").map(Value::take) {
        None | Some(Value::Null) => Next::End,
        Some(Value::String(next)) => Next::Cursor(next),
        Some(_) => Next::NotString,
    };
    finish_page(tools, next, listing)
}

/// The page's verdict, in the order the faults are reported.
fn finish_page(tools: bool, next: Next, listing: &Listing) -> Result<Option<String>, String> {
    if !tools {
        return Err(NO_TOOLS.into());
    }
    if listing.offered > MAX_TOOLS {
        return Err(format!("the server offers more than {MAX_TOOLS} tools"));
    }
    match next {
        Next::End => Ok(None),
        Next::Cursor(next) => Ok(Some(next)),
        Next::NotString => Err(CURSOR_NOT_STRING.into()),
    }
}

fn read_tool(tool: Value) -> Result<ToolSpec, &'static str> {
    let Value::Object(mut tool) = tool else {
        return Err(NOT_AN_OBJECT);
    };
    let Some(Value::String(name)) = tool.remove("name") else {
        return Err(NO_NAME);
    };
    // A missing schema is the gateway's to refuse, with its reason.
    let schema = tool.remove("inputSchema").unwrap_or(Value::Null);
    let mut spec = ToolSpec::new(name, schema);
    if let Some(Value::String(title)) = tool.remove("title") {
        spec = spec.with_title(title);
    }
    if let Some(Value::String(description)) = tool.remove("description") {
        spec = spec.with_description(description);
    }
    Ok(spec)
}

/// What follows a page.
enum Next {
    End,
    Cursor(String),
    NotString,
}

/// A page as the typed reading saw it.
struct Page {
    tools: bool,
    next: Next,
}

/// Gives up on the typed reading: the `Value` path decides.
fn give_up<E: de::Error>() -> E {
    E::custom("not the plain case")
}

/// The members of a page, or of a tool, that the listing reads.
#[derive(Clone, Copy)]
enum Key {
    Tools,
    NextCursor,
    Name,
    Title,
    Description,
    InputSchema,
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
            "tools" => Key::Tools,
            "nextCursor" => Key::NextCursor,
            "name" => Key::Name,
            "title" => Key::Title,
            "description" => Key::Description,
            "inputSchema" => Key::InputSchema,
            _ => Key::Other,
        })
    }
}

/// A page: only an object, each member at most once.
struct PageSeed<'l>(&'l mut Listing);

impl<'de> DeserializeSeed<'de> for PageSeed<'_> {
    type Value = Page;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Page, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for PageSeed<'_> {
    type Value = Page;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a tools/list result")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Page, A::Error> {
        let mut tools = false;
        let mut next = None;
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Tools if !tools => {
                    map.next_value_seed(ToolsSeed(self.0))?;
                    tools = true;
                }
                Key::NextCursor if next.is_none() => {
                    next = Some(match map.next_value::<Value>()? {
                        Value::Null => Next::End,
                        Value::String(next) => Next::Cursor(next),
                        _ => Next::NotString,
                    });
                }
                Key::Tools | Key::NextCursor => return Err(give_up()),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Page {
            tools,
            next: next.unwrap_or(Next::End),
        })
    }
}

/// The `tools` array, each entry pushed onto the listing as it is read.
/// Anything but an array gives up (the `Value` path then words it).
struct ToolsSeed<'l>(&'l mut Listing);

impl<'de> DeserializeSeed<'de> for ToolsSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ToolsSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of tools")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while self.0.offered < MAX_TOOLS {
            match seq.next_element_seed(EntrySeed)? {
                Some(entry) => self.0.push(entry),
                None => return Ok(()),
            }
        }
        // Past the bound: counted, not kept, so a page of a million tiny
        // entries costs no memory.
        while seq.next_element::<IgnoredAny>()?.is_some() {
            self.0.offered += 1;
        }
        Ok(())
    }
}

/// One entry of the `tools` array: a tool, or why it is not one.
struct EntrySeed;

impl<'de> DeserializeSeed<'de> for EntrySeed {
    type Value = Result<ToolSpec, &'static str>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(EntryVisitor)
    }
}

struct EntryVisitor;

type Entry = Result<ToolSpec, &'static str>;

impl<'de> Visitor<'de> for EntryVisitor {
    type Value = Entry;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a tool")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entry, A::Error> {
        let mut name = None;
        let mut title = None;
        let mut description = None;
        let mut schema = None;
        // A member twice over: the later one counts, as in a `Value` map.
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Name => name = Some(map.next_value::<Value>()?),
                Key::Title => title = Some(map.next_value::<Value>()?),
                Key::Description => description = Some(map.next_value::<Value>()?),
                Key::InputSchema => schema = Some(map.next_value::<Value>()?),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let Some(Value::String(name)) = name else {
            return Ok(Err(NO_NAME));
        };
        // A missing schema is the gateway's to refuse, with its reason.
        let mut spec = ToolSpec::new(name, schema.unwrap_or(Value::Null));
        if let Some(Value::String(title)) = title {
            spec = spec.with_title(title);
        }
        if let Some(Value::String(description)) = description {
            spec = spec.with_description(description);
        }
        Ok(Ok(spec))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Entry, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Err(NOT_AN_OBJECT))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Entry, E> {
        Ok(Err(NOT_AN_OBJECT))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Entry, E> {
        Ok(Err(NOT_AN_OBJECT))
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Entry, E> {
        Ok(Err(NOT_AN_OBJECT))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Entry, E> {
        Ok(Err(NOT_AN_OBJECT))
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Entry, E> {
        Ok(Err(NOT_AN_OBJECT))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Entry, E> {
        Ok(Err(NOT_AN_OBJECT))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Reads `pages` both ways; they must agree; returns the typed outcome.
    fn read(pages: &[&str]) -> (Listing, Vec<Result<Option<String>, String>>) {
        let mut fast = Listing::default();
        let mut slow = Listing::default();
        let mut outcomes = Vec::new();
        for page in pages {
            let f = read_page(page, &mut fast);
            let value: Value = serde_json::from_str(page).expect("test pages are JSON");
            let s = read_page_value(value, &mut slow);
            assert_eq!(f, s, "{page}");
            assert_eq!(fast, slow, "{page}");
            outcomes.push(f);
        }
        (fast, outcomes)
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
        let list = listing.finish();
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
    fn every_kind_of_entry_that_is_no_tool_is_rejected_with_its_reason() {
        let page = r#"{"tools":[1,-2,3.5,true,null,"s",[1,[2]],{},{"name":5},{"name":null},
            {"name":["a"]},{"name":{"x":1}},{"title":"t","inputSchema":{}}]}"#;
        let (listing, outcomes) = read(&[page]);
        assert_eq!(outcomes, [Ok(None)]);
        assert!(listing.list.tools.is_empty());
        let mut want = vec![NOT_AN_OBJECT; 7];
        want.extend([NO_NAME; 6]);
        assert_eq!(reasons(&listing), want);
        assert_eq!(listing.offered(), 13);
    }

    #[test]
    fn members_of_the_wrong_type_are_left_out_and_extra_ones_ignored() {
        let page = r#"{"tools":[
            {"name":"a","title":7,"description":["d"],"inputSchema":"not a schema"},
            {"name":"b","title":null,"description":{"x":1},"annotations":{"a":[1,{"b":2}]},
             "outputSchema":{"type":"object"},"_meta":null,"inputSchema":{"type":"object"}},
            {"name":"c\u0041","title":"T\n","description":"D\"","inputSchema":[1,2]}
        ],"_meta":{"k":[1]},"extra":"x"}"#;
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

    #[test]
    fn a_member_twice_over_counts_as_its_later_one() {
        let (listing, _) = read(&[
            r#"{"tools":[{"name":"a","name":"b","inputSchema":1,"inputSchema":{"type":"object"}},
                {"name":"c","name":5},{"name":5,"name":"d","title":"t","title":1}]}"#,
        ]);
        let names: Vec<_> = listing.list.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["b", "d"]);
        assert_eq!(
            listing.list.tools[0].input_schema,
            json!({"type": "object"})
        );
        assert_eq!(listing.list.tools[1].title, None);
        assert_eq!(reasons(&listing), [NO_NAME]);
        // On the page: the `Value` path reads it, and the later one counts.
        let (listing, outcomes) = read(&[
            r#"{"tools":[{"name":"a"}],"nextCursor":"1"}"#,
            r#"{"tools":[{"name":"lost"}],"tools":[{"name":"b"},2],"nextCursor":"x","nextCursor":null}"#,
        ]);
        assert_eq!(outcomes, [Ok(Some("1".into())), Ok(None)]);
        let names: Vec<_> = listing.list.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(listing.offered(), 3);
        let (_, outcomes) = read(&[r#"{"tools":[{"name":"a"}],"tools":{}}"#]);
        assert_eq!(outcomes, [Err(NO_TOOLS.to_owned())]);
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
            assert_eq!(listing.offered(), 0);
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
        assert_eq!(listing.offered(), MAX_TOOLS - 1 + 5000);
        assert_eq!(
            listing.list.tools.len() + listing.list.rejected.len(),
            MAX_TOOLS
        );
    }
}
