//! What the provider floor puts on the wire and reads off it, with
//! serde_json: a `tools/call` request, an answer's id, an answer decoded.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use spear_capabilities::{CallRequest, CallResult, Content, Error};

use super::NAME;

/// What a `tools/call` sends as its params.
#[derive(Serialize)]
struct CallParams<'a> {
    name: &'a str,
    arguments: &'a Map<String, Value>,
}

/// Appends the `tools/call` of `request` with `id`, one line, to `out`.
pub(super) fn push_call(out: &mut Vec<u8>, id: u64, request: &CallRequest) -> Result<(), Error> {
    let start = out.len();
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    // Into a Vec it cannot fail; serde_json writes integers with itoa.
    let _ = serde_json::to_writer(&mut *out, &id);
    out.extend_from_slice(br#","method":"tools/call","params":"#);
    let params = CallParams {
        name: &request.tool,
        arguments: &request.arguments,
    };
    if let Err(e) = serde_json::to_writer(&mut *out, &params) {
        out.truncate(start);
        return Err(Error::Protocol {
            provider: NAME.into(),
            message: format!("cannot write the arguments: {e}"),
            stderr: String::new(),
        });
    }
    out.extend_from_slice(b"}\n");
    Ok(())
}

/// The id of an answer line: the digits after `{"jsonrpc":"2.0","id":` when
/// the line starts so (as servers mostly write it), else parsed.
pub(super) fn answer_id(line: &[u8]) -> Option<u64> {
    if let Some(rest) = line.strip_prefix(br#"{"jsonrpc":"2.0","id":"#) {
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if matches!(rest.get(digits), Some(b',' | b'}')) {
            return std::str::from_utf8(&rest[..digits]).ok()?.parse().ok();
        }
    }
    #[derive(Deserialize)]
    struct Id {
        id: Option<u64>,
    }
    serde_json::from_slice::<Id>(line).ok()?.id
}

/// Just enough of an answer to make a [`CallResult`] of its text blocks.
#[derive(Deserialize)]
struct Answer {
    id: u64,
    #[serde(default)]
    result: Option<CallBody>,
    #[serde(default)]
    error: Option<RpcError>,
}

#[derive(Deserialize)]
struct CallBody {
    content: Vec<TextBlock>,
    #[serde(default, rename = "isError")]
    is_error: bool,
}

/// A text block, read as the [`Content`] it becomes, so that the blocks'
/// vector is the result's (collected in place) and not one more allocation.
#[derive(Deserialize)]
#[serde(try_from = "Block")]
struct TextBlock(Content);

/// A content block; only text blocks have a top-level `text`.
#[derive(Deserialize)]
struct Block {
    text: Option<String>,
}

impl TryFrom<Block> for TextBlock {
    type Error = &'static str;

    fn try_from(block: Block) -> Result<TextBlock, &'static str> {
        match block.text {
            Some(text) => Ok(TextBlock(Content::text(text))),
            None => Err("the provider floor reads only text blocks"),
        }
    }
}

#[derive(Deserialize)]
struct RpcError {
    code: i64,
    message: String,
}

/// Decodes the answer to call `id` of `tool`.
pub(super) fn decode(line: &[u8], id: u64, tool: &str) -> Result<CallResult, Error> {
    let protocol = |message: String| Error::Protocol {
        provider: NAME.into(),
        message,
        stderr: String::new(),
    };
    // Checked as UTF-8 once here, not string by string as `from_slice` does.
    let answer: Answer = std::str::from_utf8(line)
        .map_err(|e| e.to_string())
        .and_then(|text| serde_json::from_str(text).map_err(|e| e.to_string()))
        .map_err(|e| protocol(format!("the answer to call {id} does not decode: {e}")))?;
    if answer.id != id {
        return Err(protocol(format!(
            "call {id} got the answer to {}",
            answer.id
        )));
    }
    match (answer.result, answer.error) {
        (Some(body), None) => {
            let content = body.content.into_iter().map(|b| b.0).collect();
            Ok(CallResult::new(content).with_error(body.is_error))
        }
        (None, Some(e)) => Err(Error::CallError {
            provider: NAME.into(),
            tool: tool.into(),
            code: e.code,
            message: e.message,
        }),
        _ => Err(protocol(format!(
            "the answer to call {id} has not one of result and error"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_is_one_line_of_json_rpc() {
        let mut args = Map::new();
        args.insert("text".into(), "a \"b\"".into());
        let mut out = Vec::new();
        push_call(&mut out, 9, &CallRequest::new("echo", args)).expect("written");
        assert_eq!(
            String::from_utf8(out).expect("utf-8"),
            "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"a \\\"b\\\"\"}}}\n"
        );
    }

    #[test]
    fn the_id_is_read_from_the_usual_head_and_parsed_otherwise() {
        assert_eq!(
            answer_id(br#"{"jsonrpc":"2.0","id":42,"result":{}}"#),
            Some(42)
        );
        assert_eq!(
            answer_id(br#"{"result":{"id":1},"jsonrpc":"2.0","id":7}"#),
            Some(7)
        );
        assert_eq!(answer_id(br#"{"jsonrpc":"2.0","id":"a"}"#), None);
        assert_eq!(answer_id(br#"{"jsonrpc":"2.0","method":"x"}"#), None);
    }

    #[test]
    fn an_answer_decodes_to_its_text_blocks_or_its_error() {
        let ok = br#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"hi"}]}}"#;
        assert_eq!(
            decode(ok, 3, "echo").expect("decodes"),
            CallResult::text("hi")
        );
        assert!(decode(ok, 4, "echo").is_err(), "another call's answer");
        let refused = br#"{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"no"}}"#;
        assert!(matches!(
            decode(refused, 3, "echo"),
            Err(Error::CallError { code: -32602, .. })
        ));
    }
}
