//! `spear-fixture-server`: a tiny, scriptable MCP 2025-06-18 server over stdio.
//!
//! Single-threaded with blocking stdio and no runtime, so that it is fast and
//! predictable, both for the mcp-stdio tests and as the server of the
//! benchmarks. Misbehaviour is chosen by flags (see `USAGE`).
//!
//! Over 400 lines on purpose: one binary of scriptable behaviours, each flag
//! a few lines, read whole by whoever writes a test against it.
#![forbid(unsafe_code)]

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, Write};
use std::process::{Command, Stdio, exit};
use std::time::Duration;

use serde_json::{Map, Value, json};

const USAGE: &str = "usage: spear-fixture-server [flags]
  --version V           protocolVersion to answer (default 2025-06-18)
  --tools N             also offer N tools gen_0 .. gen_{N-1}
  --page-size K         tools per tools/list page (default: one page)
  --own-schemas         each gen_ tool has a schema of its own (x<i> required, as a real server)
  --cursor-cycle        the last page's nextCursor repeats an earlier cursor
  --bad-tools           also offer a bad name, a duplicate and unusable schemas
  --read-only-hints     every tool says it only reads (annotations readOnlyHint
                        true, destructiveHint false, idempotentHint true)
  --silent              read everything, answer nothing
  --junk                write logs, non-JSON-RPC JSON and blank lines before
                        every message, and end messages with CRLF
  --stderr-bytes N      write N bytes to stderr before answering initialize
  --huge-line N         answer tools/list with one line of N bytes
  --batch               answer initialize inside a JSON array
  --exit-at-start CODE  say so on stderr and exit with CODE
  --grandchild          start `sleep 3600` in the same process group
  --escaping-grandchild FILE  start a `sleep 30` that leaves the group with
                        setsid(1) and ignores SIGTERM; write its pid to FILE
  --linger              keep running after stdin closes
  --on-eof FILE         when stdin closes, take 300 ms (as a server that rolls
                        back or flushes), then write `stopped cleanly` to FILE
  --chatty              before answering a call, send notifications and the
                        requests ping and roots/list, and wait for the answers
  --notify-after-init   send notifications/tools/list_changed after initialized
  --gather N            hold tools/call requests until N are in, then answer
                        them in reverse order
  --log FILE            append every line received to FILE
  --pid-file FILE       write the fixture's pid to FILE at start
  --starts FILE         count this start in FILE (one line a start), so that
                        the flags below can tell the starts apart
  --exit-on-start K     exit at start (code 3) when this is the Kth start
  --crash-on-start K    on the Kth start, exit on the first tools/call
  --crash-from-start K  from the Kth start on, exit on the first tools/call
  --start-delay MS      wait MS milliseconds before answering initialize
  --page-delay MS       wait MS milliseconds before each tools/list page
  --work-us N           spend N microseconds of CPU (busy) before each
                        tools/call answer, as a server that computes does
  --page-pad BYTES      add a member of BYTES bytes to each tools/list page
  --ping-flood          after initialized, send `ping` requests with 1 MiB ids
                        without end and never read stdin again

tools: echo {text}, fail, reject, mixed, env, sleep {ms}, hang, crash, stray";

#[derive(Default)]
struct Opts {
    version: Option<String>,
    tools: usize,
    page_size: Option<usize>,
    /// Every generated tool has a schema of its own, as on a real server.
    own_schemas: bool,
    cursor_cycle: bool,
    bad_tools: bool,
    /// Every tool's annotations claim it only reads.
    read_only_hints: bool,
    silent: bool,
    junk: bool,
    stderr_bytes: usize,
    huge_line: Option<usize>,
    batch: bool,
    grandchild: bool,
    escaping_grandchild: Option<String>,
    linger: bool,
    on_eof: Option<String>,
    chatty: bool,
    notify_after_init: bool,
    gather: usize,
    log: Option<File>,
    /// Exit on the first tools/call (set by --crash-on-start).
    crash_on_call: bool,
    start_delay: Duration,
    page_delay: Duration,
    /// CPU spent on each call before its answer (--work-us).
    work: Duration,
    page_pad: usize,
    ping_flood: bool,
}

fn parse() -> Opts {
    let mut o = Opts::default();
    let mut args = std::env::args().skip(1);
    let mut exit_code = None;
    let (mut starts, mut exit_on, mut crash_on, mut crash_from) = (None, None, None, None);
    while let Some(flag) = args.next() {
        let mut value = || {
            args.next()
                .unwrap_or_else(|| die(&format!("{flag} needs a value")))
        };
        let number = |v: String| v.parse::<usize>().unwrap_or_else(|_| die(USAGE));
        match flag.as_str() {
            "--version" => o.version = Some(value()),
            "--tools" => o.tools = number(value()),
            "--page-size" => o.page_size = Some(number(value()).max(1)),
            "--own-schemas" => o.own_schemas = true,
            "--read-only-hints" => o.read_only_hints = true,
            "--cursor-cycle" => o.cursor_cycle = true,
            "--bad-tools" => o.bad_tools = true,
            "--silent" => o.silent = true,
            "--junk" => o.junk = true,
            "--stderr-bytes" => o.stderr_bytes = number(value()),
            "--huge-line" => o.huge_line = Some(number(value())),
            "--batch" => o.batch = true,
            "--exit-at-start" => exit_code = Some(number(value()) as i32),
            "--grandchild" => o.grandchild = true,
            "--escaping-grandchild" => o.escaping_grandchild = Some(value()),
            "--linger" => o.linger = true,
            "--on-eof" => o.on_eof = Some(value()),
            "--chatty" => o.chatty = true,
            "--notify-after-init" => o.notify_after_init = true,
            "--gather" => o.gather = number(value()),
            "--log" => {
                let path = value();
                o.log = Some(
                    OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(&path)
                        .unwrap_or_else(|e| die(&format!("cannot open {path}: {e}"))),
                );
            }
            "--starts" => starts = Some(value()),
            "--exit-on-start" => exit_on = Some(number(value())),
            "--crash-on-start" => crash_on = Some(number(value())),
            "--crash-from-start" => crash_from = Some(number(value())),
            "--start-delay" => o.start_delay = Duration::from_millis(number(value()) as u64),
            "--page-delay" => o.page_delay = Duration::from_millis(number(value()) as u64),
            "--work-us" => o.work = Duration::from_micros(number(value()) as u64),
            "--page-pad" => o.page_pad = number(value()),
            "--ping-flood" => o.ping_flood = true,
            "--pid-file" => {
                let path = value();
                std::fs::write(&path, std::process::id().to_string())
                    .unwrap_or_else(|e| die(&format!("cannot write {path}: {e}")));
            }
            "--help" => {
                println!("{USAGE}");
                exit(0);
            }
            _ => die(USAGE),
        }
    }
    if let Some(code) = exit_code {
        eprintln!("fixture: exiting at start with {code}");
        exit(code);
    }
    if let Some(path) = starts {
        let start = count_start(&path);
        if exit_on == Some(start) {
            eprintln!("fixture: start {start}: exiting at start");
            exit(3);
        }
        o.crash_on_call = crash_on == Some(start) || crash_from.is_some_and(|k| start >= k);
    }
    o
}

/// Appends this start to the file at `path` and returns its number, from 1.
fn count_start(path: &str) -> usize {
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap_or_else(|e| die(&format!("cannot open {path}: {e}")));
    let _ = writeln!(file, "{}", std::process::id());
    drop(file);
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| die(&format!("cannot read {path}: {e}")))
        .lines()
        .count()
}

/// Starts a grandchild in a session of its own (setsid(1)) that ignores
/// SIGTERM, and writes its pid to `file` once it has left our group and
/// become `sleep`: what no process group signal can reach.
// Never waited for on purpose: it is to outlive this server.
#[allow(clippy::zombie_processes)]
fn escape(file: &str) {
    let child = Command::new("setsid")
        .args(["sh", "-c", "trap '' TERM; exec sleep 30"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| die(&format!("cannot start setsid: {e}")));
    let pid = child.id();
    for _ in 0..500 {
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let pgrp = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(2).map(str::to_owned));
        if comm.trim() == "sleep" && pgrp.as_deref() == Some(pid.to_string().as_str()) {
            std::fs::write(file, pid.to_string()).unwrap_or_else(|e| die(&format!("{file}: {e}")));
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    die("the escaping grandchild did not leave the group in 5 s");
}

fn die(message: &str) -> ! {
    eprintln!("fixture: {message}");
    exit(2)
}

struct Server {
    o: Opts,
    input: io::StdinLock<'static>,
    out: io::BufWriter<io::StdoutLock<'static>>,
    /// Client messages read while waiting for something else.
    queue: VecDeque<Value>,
    initialized: bool,
    held: Vec<(Value, Map<String, Value>)>,
    /// Built once: a paged listing must not rebuild it for every page.
    tools: Vec<Value>,
}

fn main() {
    let o = parse();
    // In one write (`eprintln!` makes one per piece): whoever reads stderr
    // sees the whole line or none of it, never "fixture: pid " alone.
    let _ = io::stderr().write_all(format!("fixture: pid {}\n", std::process::id()).as_bytes());
    if let Some(file) = &o.escaping_grandchild {
        escape(file);
    }
    if o.grandchild {
        let spawned = Command::new("sleep")
            .arg("3600")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        match spawned {
            Ok(child) => eprintln!("fixture: grandchild {}", child.id()),
            Err(e) => die(&format!("cannot start the grandchild: {e}")),
        }
    }
    let mut s = Server {
        o,
        input: io::stdin().lock(),
        out: io::BufWriter::with_capacity(64 * 1024, io::stdout().lock()),
        queue: VecDeque::new(),
        initialized: false,
        held: Vec::new(),
        tools: Vec::new(),
    };
    s.tools = s.tools();
    while let Some(message) = s.next_message() {
        if !s.o.silent {
            s.handle(message);
        }
    }
    if let Some(path) = &s.o.on_eof {
        std::thread::sleep(Duration::from_millis(300));
        let _ = std::fs::write(path, "stopped cleanly\n");
    }
    if s.o.linger {
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
}

impl Server {
    /// The next client message, or `None` when stdin closes.
    fn next_message(&mut self) -> Option<Value> {
        if let Some(m) = self.queue.pop_front() {
            return Some(m);
        }
        let mut line = Vec::new();
        loop {
            line.clear();
            if self.input.read_until(b'\n', &mut line).ok()? == 0 {
                return None;
            }
            if let Some(log) = &mut self.o.log {
                let _ = log.write_all(&line);
            }
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            if text.is_empty() || text == b"\r" {
                // Some SDKs end the session on a blank line; so does this one.
                die("blank line from the client");
            }
            match serde_json::from_slice(text) {
                Ok(v) => return Some(v),
                Err(e) => eprintln!("fixture: not JSON from the client: {e}"),
            }
        }
    }

    fn send(&mut self, message: &Value) {
        if self.o.junk {
            let _ = self.out.write_all(
                b"fixture log: about to answer\n{\"level\":\"info\",\"msg\":\"not json-rpc\"}\n\n",
            );
        }
        let _ = serde_json::to_writer(&mut self.out, message);
        let end: &[u8] = if self.o.junk { b"\r\n" } else { b"\n" };
        let _ = self.out.write_all(end);
        if self.out.flush().is_err() {
            exit(0);
        }
    }

    fn answer(&mut self, id: Value, result: Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }

    fn error(&mut self, id: Value, code: i64, message: &str) {
        self.send(
            &json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
        );
    }

    fn handle(&mut self, m: Value) {
        let method = m["method"].as_str().unwrap_or_default().to_owned();
        let Some(id) = m.get("id").cloned() else {
            if method == "notifications/initialized" {
                self.initialized = true;
                if self.o.ping_flood {
                    self.flood();
                }
                if self.o.notify_after_init {
                    self.send(
                        &json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
                    );
                }
            }
            return;
        };
        if m.get("method").is_none() {
            return; // an answer to a request of ours, arriving late
        }
        if method == "initialize" {
            return self.initialize(id);
        }
        if !self.initialized {
            return self.error(id, -32002, "request before notifications/initialized");
        }
        match method.as_str() {
            "tools/list" => self.list(id, &m["params"]),
            "tools/call" => {
                let params = m["params"].as_object().cloned().unwrap_or_default();
                let busy = std::time::Instant::now();
                while busy.elapsed() < self.o.work {
                    std::hint::spin_loop();
                }
                if self.o.gather > 0 {
                    self.held.push((id, params));
                    if self.held.len() >= self.o.gather {
                        while let Some((id, params)) = self.held.pop() {
                            self.call(id, params);
                        }
                    }
                } else {
                    self.call(id, params);
                }
            }
            "ping" => self.answer(id, json!({})),
            _ => self.error(id, -32601, "method not found"),
        }
    }

    /// Sends `ping` requests with 1 MiB ids until stdout breaks, reading
    /// nothing: the client's answers pile up on our stdin.
    fn flood(&mut self) -> ! {
        let pad = "p".repeat(1 << 20);
        for n in 0u64.. {
            self.send(&json!({"jsonrpc": "2.0", "id": format!("{n}-{pad}"), "method": "ping"}));
        }
        exit(0)
    }

    fn initialize(&mut self, id: Value) {
        std::thread::sleep(self.o.start_delay);
        let mut spew = self.o.stderr_bytes;
        let chunk = [b'e'; 64 * 1024];
        let mut err = io::stderr().lock();
        while spew > 0 {
            let n = spew.min(chunk.len());
            let _ = err.write_all(&chunk[..n]);
            spew -= n;
        }
        let _ = err.write_all(b"\nfixture: stderr spew done\n");
        drop(err);
        let version = self
            .o
            .version
            .clone()
            .unwrap_or_else(|| "2025-06-18".into());
        let answer = json!({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": true}},
            "serverInfo": {"name": "spear-fixture-server", "version": env!("CARGO_PKG_VERSION")},
            "instructions": "a test server",
        }});
        if self.o.batch {
            self.send(&json!([answer]));
        } else {
            self.send(&answer);
        }
    }

    fn tools(&self) -> Vec<Value> {
        let obj = |props: Value| json!({"type": "object", "properties": props});
        let text = json!({"text": {"type": "string"}});
        let mut tools = vec![
            json!({"name": "echo", "description": "Echoes its text", "inputSchema": obj(text), "execution": {"taskSupport": "forbidden"}}),
            json!({"name": "fail", "description": "Fails as a tool", "inputSchema": obj(json!({}))}),
            json!({"name": "reject", "description": "Answers with a JSON-RPC error", "inputSchema": obj(json!({}))}),
            json!({"name": "mixed", "title": "Every content type", "inputSchema": obj(json!({}))}),
            json!({"name": "env", "description": "Its environment", "inputSchema": obj(json!({}))}),
            json!({"name": "sleep", "inputSchema": obj(json!({"ms": {"type": "integer"}}))}),
            json!({"name": "hang", "description": "Never answers", "inputSchema": obj(json!({}))}),
            json!({"name": "crash", "description": "Exits", "inputSchema": obj(json!({}))}),
            json!({"name": "stray", "description": "Sends an answer to no request first", "inputSchema": obj(json!({}))}),
        ];
        for i in 0..self.o.tools {
            let schema = if self.o.own_schemas {
                json!({"type": "object", "properties": {format!("x{i}"): {"type": "integer", "minimum": 0}, "mode": {"type": "string", "enum": ["a", "b"]}}, "required": [format!("x{i}")]})
            } else {
                obj(json!({}))
            };
            tools.push(json!({"name": format!("gen_{i}"), "description": format!("Generated tool {i}"), "inputSchema": schema}));
        }
        if self.o.bad_tools {
            tools.push(json!({"name": "bad name!", "inputSchema": obj(json!({}))}));
            tools.push(json!({"name": "twice", "inputSchema": obj(json!({}))}));
            tools.push(json!({"name": "twice", "inputSchema": obj(json!({}))}));
            tools.push(json!({"name": "array_schema", "inputSchema": {"type": "array"}}));
            tools.push(json!({"name": "remote_ref", "inputSchema": {"type": "object", "properties": {"a": {"$ref": "https://example.invalid/s.json"}}}}));
        }
        if self.o.read_only_hints {
            let hints =
                json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true});
            for tool in &mut tools {
                tool["annotations"] = hints.clone();
            }
        }
        tools
    }

    fn list(&mut self, id: Value, params: &Value) {
        if let Some(size) = self.o.huge_line {
            return self.huge(id, size);
        }
        std::thread::sleep(self.o.page_delay);
        let tools = std::mem::take(&mut self.tools);
        let size = self.o.page_size.unwrap_or(tools.len().max(1));
        let start = match params["cursor"].as_str() {
            None => 0,
            Some(c) => match c.strip_prefix("page-").and_then(|n| n.parse().ok()) {
                Some(n) if n < tools.len() => n,
                _ => {
                    self.tools = tools;
                    return self.error(id, -32602, "unknown cursor");
                }
            },
        };
        let end = (start + size).min(tools.len());
        let mut result = json!({"tools": tools[start..end]});
        if self.o.page_pad > 0 {
            result["pad"] = json!("p".repeat(self.o.page_pad));
        }
        if end < tools.len() {
            result["nextCursor"] = json!(format!("page-{end}"));
        } else if self.o.cursor_cycle && size < tools.len() {
            result["nextCursor"] = json!(format!("page-{size}"));
        }
        self.tools = tools;
        self.answer(id, result);
    }

    /// One line of `size` bytes, written in pieces so the fixture itself
    /// never holds it.
    fn huge(&mut self, id: Value, size: usize) {
        let head =
            format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"tools\":[],\"pad\":\"");
        let tail = "\"}}\n";
        let mut left = size.saturating_sub(head.len() + tail.len());
        let chunk = vec![b'a'; 1024 * 1024];
        let _ = self.out.write_all(head.as_bytes());
        while left > 0 {
            let n = left.min(chunk.len());
            if self.out.write_all(&chunk[..n]).is_err() {
                exit(0);
            }
            left -= n;
        }
        let _ = self.out.write_all(tail.as_bytes());
        let _ = self.out.flush();
    }

    fn call(&mut self, id: Value, params: Map<String, Value>) {
        if self.o.crash_on_call {
            eprintln!("fixture: crashing on the first call of this start");
            exit(3);
        }
        let args = params.get("arguments").cloned().unwrap_or(json!({}));
        let replies = if self.o.chatty {
            self.chatter()
        } else {
            Value::Null
        };
        let text = |t: &str| json!({"content": [{"type": "text", "text": t}]});
        match params.get("name").and_then(Value::as_str).unwrap_or_default() {
            "echo" => {
                let mut r = text(args["text"].as_str().unwrap_or_default());
                if !replies.is_null() {
                    r["structuredContent"] = json!({ "replies": replies });
                }
                self.answer(id, r);
            }
            "fail" => self.answer(id, json!({"content": [{"type": "text", "text": "the tool failed"}], "isError": true})),
            "reject" => self.error(id, -32602, "rejected on purpose"),
            "mixed" => self.answer(id, json!({
                "content": [
                    {"type": "text", "text": "all kinds"},
                    {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
                    {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
                    {"type": "resource_link", "uri": "fixture://doc", "name": "doc", "mimeType": "text/plain"},
                    {"type": "resource", "resource": {"uri": "fixture://inline", "text": "inline", "mimeType": "text/plain"}}
                ],
                "structuredContent": {"kinds": 5}
            })),
            "env" => {
                let vars: Map<String, Value> = std::env::vars().map(|(k, v)| (k, json!(v))).collect();
                self.answer(id, text(&Value::Object(vars).to_string()));
            }
            "sleep" => {
                std::thread::sleep(Duration::from_millis(args["ms"].as_u64().unwrap_or(0)));
                self.answer(id, text("slept"));
            }
            "hang" => {}
            "crash" => {
                eprintln!("fixture: crashing on purpose");
                exit(3);
            }
            "stray" => {
                self.answer(json!(987_654_321), text("to nobody"));
                self.answer(json!("not-ours"), text("to nobody either"));
                self.answer(id, text("after the strays"));
            }
            other => {
                let message = format!("unknown tool {other}");
                self.error(id, -32602, &message);
            }
        }
    }

    /// Notifications and server requests, then waits for the client's
    /// answers to the requests (queueing anything else it sends meanwhile).
    fn chatter(&mut self) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "hello"}}));
        self.send(&json!({"jsonrpc": "2.0", "id": "srv-ping", "method": "ping"}));
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 1}}));
        self.send(&json!({"jsonrpc": "2.0", "id": 77, "method": "roots/list"}));
        let mut replies = Map::new();
        while replies.len() < 2 {
            let Some(m) = self.read_more() else { exit(0) };
            if m.get("method").is_none() {
                let key = m["id"].to_string();
                replies.insert(key, m);
            } else {
                self.queue.push_back(m);
            }
        }
        Value::Object(replies)
    }

    fn read_more(&mut self) -> Option<Value> {
        let queued = std::mem::take(&mut self.queue);
        let next = self.next_message();
        self.queue = queued;
        next
    }
}
