//! `spear-script-server`: an MCP server over stdio that plays a script of raw
//! output, for the hostile-server tests.
//!
//! `spear-fixture-server` misbehaves in named ways chosen by flags; this one
//! writes whatever bytes a scenario needs (a half line and an exit, an answer
//! under the wrong id, twice, a 20 MB result, a tool list of hostile names)
//! so that each scenario is data in its test. Usage:
//! `spear-script-server SCRIPT.json`, where the script is
//!
//! ```json
//! {"version": "2025-06-18",
//!  "tools/list": {"": [actions], "<cursor>": [actions], "*": [actions]},
//!  "tools/call": {"<tool>": [actions], "*": [actions]}}
//! ```
//!
//! `initialize` is answered with `version` (default 2025-06-18) unless the
//! script has an `"initialize": [actions]`. A listing is played from the
//! actions of its cursor (`""` for none, `"*"` for any other); a call from
//! those of its tool (`"*"` for any other); without a script entry a request
//! is answered with an empty result. Actions:
//!
//! - `{"result": V}`: the answer `{"jsonrpc":"2.0","id":<id>,"result":V}`
//! - `{"line": V}`: V as one line, every string `"$ID"` in it replaced by the
//!   request's id and every `"$FRESH"` by a cursor never used before
//! - `{"raw": "text"}`: the text as it is (no newline added), `$ID` replaced
//! - `{"bytes": "text"}`: as `raw`, each character U+0000 to U+00FF written
//!   as that one byte (for lines that are not UTF-8)
//! - `{"text_result": N}`: a text result of N bytes, streamed
//! - `{"echo": "ok" | "error" | "reject"}`: the call's `text` argument back,
//!   as a text result, as a result with `isError`, or as JSON-RPC error
//!   -32000 (for the soak, which checks every answer is its own request's)
//! - `{"stderr": "text"}`, `{"exit": CODE}`
//! - `{"sleep_ms": N}`, or `{"sleep_ms": [LO, HI]}` for a random pause
#![forbid(unsafe_code)]

use std::io::{self, BufRead, Write};
use std::process::exit;
use std::time::Duration;

use serde_json::{Value, json};

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        die("usage: spear-script-server SCRIPT.json")
    };
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| die(&format!("{path}: {e}")));
    let script: Value = serde_json::from_str(&text).unwrap_or_else(|e| die(&format!("{e}")));
    eprintln!("script: pid {}", std::process::id());
    let mut player = Player {
        out: io::BufWriter::with_capacity(64 * 1024, io::stdout().lock()),
        fresh: 0,
        rng: u64::from(std::process::id()) | 1,
    };
    let mut line = Vec::new();
    let mut input = io::stdin().lock();
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let Ok(message) = serde_json::from_slice::<Value>(&line) else {
            continue;
        };
        let (Some(id), Some(method)) = (message.get("id"), message["method"].as_str()) else {
            continue; // notifications, and answers to requests we never send
        };
        let actions = match method {
            "initialize" => script.get("initialize").cloned().unwrap_or_else(|| {
                let version = script["version"].as_str().unwrap_or("2025-06-18");
                json!([{"result": {
                    "protocolVersion": version,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "spear-script-server", "version": "0"}
                }}])
            }),
            "tools/list" => pick(&script[method], message["params"]["cursor"].as_str()),
            "tools/call" => pick(&script[method], message["params"]["name"].as_str()),
            _ => json!([{"line": {"jsonrpc": "2.0", "id": "$ID",
                                  "error": {"code": -32601, "message": "method not found"}}}]),
        };
        player.play(id, &message["params"], &actions);
    }
}

/// The actions for `key` (`""` for none), else those for `"*"`, else an
/// empty answer.
fn pick(table: &Value, key: Option<&str>) -> Value {
    table
        .get(key.unwrap_or(""))
        .or_else(|| table.get("*"))
        .cloned()
        .unwrap_or_else(|| json!([{"result": {}}]))
}

struct Player {
    out: io::BufWriter<io::StdoutLock<'static>>,
    fresh: u64,
    rng: u64,
}

impl Player {
    fn play(&mut self, id: &Value, params: &Value, actions: &Value) {
        for action in actions.as_array().into_iter().flatten() {
            if let Some(result) = action.get("result") {
                let line = json!({"jsonrpc": "2.0", "id": id, "result": result});
                self.line(&line);
            } else if let Some(line) = action.get("line") {
                let line = self.substitute(line, id);
                self.line(&line);
            } else if let Some(raw) = action["raw"].as_str() {
                self.write(raw.replace("$ID", &id.to_string()).as_bytes());
            } else if let Some(text) = action["bytes"].as_str() {
                let text = text.replace("$ID", &id.to_string());
                let bytes: Option<Vec<u8>> = text.chars().map(|c| u8::try_from(c).ok()).collect();
                self.write(&bytes.unwrap_or_else(|| die("bytes: a character past U+00FF")));
            } else if let Some(n) = action["text_result"].as_u64() {
                self.text_result(id, n as usize);
            } else if let Some(text) = action["stderr"].as_str() {
                eprintln!("{text}");
            } else if let Some(how) = action["echo"].as_str() {
                let text = params["arguments"]["text"].clone();
                let content = json!([{"type": "text", "text": text}]);
                let line = match how {
                    "error" => json!({"jsonrpc": "2.0", "id": id,
                                      "result": {"content": content, "isError": true}}),
                    "reject" => json!({"jsonrpc": "2.0", "id": id,
                                       "error": {"code": -32000, "message": text}}),
                    _ => json!({"jsonrpc": "2.0", "id": id, "result": {"content": content}}),
                };
                self.line(&line);
            } else if let Some(ms) = action.get("sleep_ms") {
                let ms = match (ms.as_u64(), ms[0].as_u64(), ms[1].as_u64()) {
                    (Some(ms), _, _) => ms,
                    (None, Some(lo), Some(hi)) if hi >= lo => lo + self.random() % (hi - lo + 1),
                    _ => die(&format!("bad sleep_ms {ms}")),
                };
                self.flush();
                std::thread::sleep(Duration::from_millis(ms));
            } else if let Some(code) = action["exit"].as_i64() {
                self.flush();
                exit(code as i32);
            } else {
                die(&format!("unknown action {action}"));
            }
        }
        self.flush();
    }

    /// xorshift64: enough to spread latencies, seeded by the pid.
    fn random(&mut self) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng
    }

    fn substitute(&mut self, v: &Value, id: &Value) -> Value {
        match v {
            Value::String(s) if s == "$ID" => id.clone(),
            Value::String(s) if s == "$FRESH" => {
                self.fresh += 1;
                json!(format!("fresh-{}", self.fresh))
            }
            Value::Array(a) => Value::Array(a.iter().map(|x| self.substitute(x, id)).collect()),
            Value::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, x)| (k.clone(), self.substitute(x, id)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    fn line(&mut self, v: &Value) {
        let mut bytes = serde_json::to_vec(v).unwrap_or_default();
        bytes.push(b'\n');
        self.write(&bytes);
    }

    /// A text result of about `size` bytes, written in pieces so the server
    /// never holds it.
    fn text_result(&mut self, id: &Value, size: usize) {
        let head = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\""
        );
        let chunk = vec![b'x'; 1024 * 1024];
        self.write(head.as_bytes());
        let mut left = size;
        while left > 0 {
            let n = left.min(chunk.len());
            self.write(&chunk[..n]);
            left -= n;
        }
        self.write(b"\"}]}}\n");
    }

    fn write(&mut self, bytes: &[u8]) {
        if self.out.write_all(bytes).is_err() {
            exit(0);
        }
    }

    fn flush(&mut self) {
        if self.out.flush().is_err() {
            exit(0);
        }
    }
}

fn die(message: &str) -> ! {
    eprintln!("script: {message}");
    exit(2)
}
