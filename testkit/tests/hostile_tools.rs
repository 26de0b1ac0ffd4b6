//! Hostile tool lists, through the whole gateway: names no turn could type,
//! schemas that cannot be used, and `$ref`s that would reach the network or
//! the disk, which must never be fetched or read.

mod gateway;

use std::io::ErrorKind;
use std::net::TcpListener;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::SystemTime;

use gateway::{Server, bench, bench_with, fixture, invoke};
use serde_json::{Value, json};
use spear_capabilities::internals::checks::ArgumentSchema;
use spear_capabilities::{AnswerStatus, exposure::CapabilityClass};

fn listing(tools: Vec<Value>) -> Server {
    Server::Script(json!({"tools/list": {"": [{"result": {"tools": tools}}]},
                          "tools/call": {"*": [{"result": {"content": [{"type": "text", "text": "ok"}]}}]}}))
}

fn hostile_ids(b: &gateway::Bench, turn: &spear_capabilities::Turn) -> Vec<String> {
    let _ = b;
    turn.shown()
        .capabilities
        .iter()
        .filter(|c| c.id.starts_with("hostile/"))
        .map(|c| c.id.clone())
        .collect()
}

/// The fixture's bad tools, offered by a real server process, are left
/// out by the gateway, each with its reason, and its other tools stay.
#[tokio::test]
async fn a_servers_unusable_tools_are_left_out_with_their_reasons() {
    let b = bench(fixture(&["--bad-tools"]), 10.0);
    let turn = b.turn().await;
    assert!(hostile_ids(&b, &turn).contains(&"hostile/echo".to_owned()));
    let rejected: Vec<(String, String)> = b
        .sink
        .named("tool_rejected")
        .iter()
        .filter(|r| r["provider"] == "hostile")
        .map(|r| {
            let text = |k: &str| r[k].as_str().unwrap_or_default().to_owned();
            (text("tool"), text("reason"))
        })
        .collect();
    assert_eq!(rejected.len(), 5, "{rejected:?}");
    assert_eq!(
        rejected[0],
        (
            "bad name!".to_owned(),
            "the name has ' '; allowed: A-Z, a-z, 0-9, '_', '.', '-'".to_owned()
        )
    );
    assert_eq!(
        rejected[1],
        (
            "twice".to_owned(),
            "the provider offers 2 tools of this name".to_owned()
        )
    );
    assert_eq!(rejected[2], rejected[1]);
    assert_eq!(
        rejected[3],
        (
            "array_schema".to_owned(),
            "the input schema is not of type \"object\"".to_owned()
        )
    );
    assert_eq!(rejected[4].0, "remote_ref");
    assert!(
        rejected[4]
            .1
            .starts_with("the input schema has a $ref outside itself"),
        "{}",
        rejected[4].1
    );
    b.session.close().await;
}

/// 3.6.1 "Every other tool is a WRITE, whatever the server says about it":
/// a real server process whose every tool is annotated `readOnlyHint: true`
/// (and not destructive) has only the tool its entry's `read` names as
/// READ; the others are WRITE, so the entry's `refuse` policy refuses them
/// and the server never receives the call.
#[tokio::test]
async fn read_only_hints_leave_a_servers_tools_write_and_their_calls_refused() {
    let logs = tempfile::tempdir().expect("tempdir");
    let log = logs.path().join("received.jsonl");
    let log_arg = log.display().to_string();
    let b = bench_with(
        fixture(&["--read-only-hints", "--log", &log_arg]),
        10.0,
        json!({"read": ["echo"], "write": "refuse"}),
    );
    let turn = b.turn().await;
    let classes: Vec<(&str, CapabilityClass)> = turn
        .shown()
        .capabilities
        .iter()
        .filter(|c| c.id.starts_with("hostile/"))
        .map(|c| (c.id.as_str(), c.class))
        .collect();
    assert!(classes.len() > 2, "{classes:?}");
    for (id, class) in &classes {
        let want = if *id == "hostile/echo" {
            CapabilityClass::Read
        } else {
            CapabilityClass::Write
        };
        assert_eq!(*class, want, "{id}");
    }
    let calls = || {
        std::fs::read_to_string(&log)
            .expect("the fixture logs what it receives")
            .lines()
            .filter(|l| l.contains("\"tools/call\""))
            .count()
    };
    let w = invoke(&turn, "hostile/env", json!({})).await;
    assert_eq!(w.status, AnswerStatus::Refused, "{}", w.text);
    assert_eq!(
        w.text,
        "`hostile/env` is a WRITE capability, and provider `hostile` refuses writes (write policy \"refuse\")."
    );
    assert_eq!(calls(), 0, "the refused WRITE reached the server");
    let r = invoke(&turn, "hostile/echo", json!({"text": "read"})).await;
    assert_eq!(r.status, AnswerStatus::Ok, "{}", r.text);
    assert_eq!(calls(), 1);
    b.session.close().await;
}

#[tokio::test]
async fn names_with_spaces_slashes_unicode_empty_long_or_twice_are_left_out() {
    let obj = json!({"type": "object"});
    let long = "n".repeat(300);
    let names = [
        "has space",
        "a/b",
        "ünïcode",
        "",
        long.as_str(),
        "dup",
        "dup",
        "good",
    ];
    let tools = names
        .iter()
        .map(|n| json!({"name": n, "inputSchema": obj}))
        .collect();
    let b = bench(listing(tools), 10.0);
    let turn = b.turn().await;
    assert_eq!(hostile_ids(&b, &turn), ["hostile/good"]);
    let rejected = b.sink.named("tool_rejected");
    assert_eq!(rejected.len(), 7, "{rejected:?}");
    for r in &rejected {
        assert_eq!(r["provider"], "hostile");
        assert!(r["tool"].as_str().expect("name").chars().count() <= 200);
        assert!(!r["reason"].as_str().expect("reason").is_empty());
    }
    // Providers start concurrently: find hostile's record, not the second.
    let started = b
        .sink
        .named("provider_started")
        .into_iter()
        .find(|r| r["provider"] == "hostile")
        .expect("hostile started");
    assert_eq!(
        (
            started["tools"].as_u64(),
            started["rejected_tools"].as_u64()
        ),
        (Some(1), Some(7))
    );
    // What was left out is not callable under any spelling.
    for id in ["hostile/dup", "hostile/ünïcode", "hostile/a/b"] {
        let a = invoke(&turn, id, json!({})).await;
        assert_eq!(a.status, AnswerStatus::Refused, "{id}: {}", a.text);
    }
    assert_eq!(
        invoke(&turn, "hostile/good", json!({})).await.status,
        AnswerStatus::Ok
    );
    b.assert_no_notice();
    b.assert_healthy_answers().await;
    b.session.close().await;
}

#[tokio::test]
async fn invalid_missing_and_non_object_schemas_are_left_out_with_their_reason() {
    let tools = vec![
        json!({"name": "missing"}),
        json!({"name": "array", "inputSchema": {"type": "array"}}),
        json!({"name": "string", "inputSchema": "object"}),
        json!({"name": "invalid", "inputSchema": {"type": "object", "properties": {"a": {"type": 5}}}}),
        json!({"name": "pattern", "inputSchema": {"type": "object", "properties": {"a": {"pattern": "(("}}}}),
        json!({"name": "fine", "inputSchema": {"type": "object", "properties": {"a": {"type": "string"}}}}),
    ];
    let b = bench(listing(tools), 10.0);
    let turn = b.turn().await;
    assert_eq!(hostile_ids(&b, &turn), ["hostile/fine"]);
    let rejected: Vec<(String, String)> = b
        .sink
        .named("tool_rejected")
        .iter()
        .map(|r| {
            (
                r["tool"].as_str().unwrap_or_default().to_owned(),
                r["reason"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let names: Vec<&str> = rejected.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["missing", "array", "string", "invalid", "pattern"]);
    assert!(rejected[0].1.contains("not a JSON object"), "{rejected:?}");
    assert!(
        rejected[1].1.contains("not of type \"object\""),
        "{rejected:?}"
    );
    assert!(
        rejected[3].1.contains("not a valid JSON Schema"),
        "{rejected:?}"
    );
    assert!(
        rejected[4]
            .1
            .starts_with("the input schema's pattern \"((\" does not compile"),
        "{rejected:?}"
    );
    b.assert_no_notice();
    b.assert_healthy_answers().await;
    b.session.close().await;
}

/// Linux's `O_NONBLOCK` (no libc dependency for one constant).
const O_NONBLOCK: i32 = 0o4000;

/// A FIFO nobody may open: a thread waits to write into it, and says so if
/// a reader ever opens it.
struct Tripwire {
    opened: Arc<AtomicBool>,
    closing: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl Tripwire {
    fn new(path: &Path) -> Self {
        let made = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .expect("mkfifo");
        assert!(made.success());
        let (opened, closing) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let (o, c, p) = (Arc::clone(&opened), Arc::clone(&closing), path.to_owned());
        let thread = std::thread::spawn(move || {
            // Blocks until some reader opens the FIFO.
            let _w = std::fs::OpenOptions::new().write(true).open(&p);
            if !c.load(Ordering::SeqCst) {
                o.store(true, Ordering::SeqCst);
            }
        });
        Tripwire {
            opened,
            closing,
            thread,
        }
    }

    /// Whether anyone but us opened it; releases the waiting thread.
    fn tripped(self, path: &Path) -> bool {
        self.closing.store(true, Ordering::SeqCst);
        // Our own reader ends the wait; non-blocking, as the writer may be gone.
        let _r = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(O_NONBLOCK)
            .open(path);
        self.thread.join().expect("tripwire thread");
        self.opened.load(Ordering::SeqCst)
    }
}

/// A file whose access time is in the past, so any read moves it.
fn old_file(path: &Path) -> SystemTime {
    std::fs::write(path, r#"{"type": "string"}"#).expect("file");
    let set = std::process::Command::new("touch")
        .args(["-a", "-d", "2001-01-01 00:00:00"])
        .arg(path)
        .status()
        .expect("touch");
    assert!(set.success());
    std::fs::metadata(path)
        .and_then(|m| m.accessed())
        .expect("atime")
}

#[tokio::test]
async fn refs_to_a_remote_url_or_a_local_file_are_refused_and_never_fetched_or_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let listener = TcpListener::bind("127.0.0.1:0").expect("listener");
    listener.set_nonblocking(true).expect("nonblocking");
    let url = format!(
        "http://{}/schema.json",
        listener.local_addr().expect("addr")
    );
    let fifo = dir.path().join("schema.fifo");
    let tripwire = Tripwire::new(&fifo);
    let file = dir.path().join("schema.json");
    let atime = old_file(&file);
    let refs = [
        url.clone(),
        format!("file://{}", fifo.display()),
        format!("file://{}", file.display()),
        file.display().to_string(),
        "schema.json".to_owned(),
    ];
    let with_ref = |r: &str| json!({"type": "object", "properties": {"a": {"$ref": r}}});
    let mut tools: Vec<Value> = refs
        .iter()
        .enumerate()
        .map(|(i, r)| json!({"name": format!("ref_{i}"), "inputSchema": with_ref(r)}))
        .collect();
    tools.push(json!({"name": "root_ref", "inputSchema": {"$ref": url, "type": "object"}}));
    tools.push(
        json!({"name": "id_base", "inputSchema": {"$id": url, "type": "object",
        "properties": {"a": {"$ref": "other.json"}}}}),
    );
    tools.push(json!({"name": "local", "inputSchema": {"type": "object", "$defs": {"s": {"type": "string"}},
        "properties": {"a": {"$ref": "#/$defs/s"}}}}));
    let b = bench(listing(tools), 10.0);
    let turn = b.turn().await;
    assert_eq!(hostile_ids(&b, &turn), ["hostile/local"]);
    assert_eq!(b.sink.named("tool_rejected").len(), 7);

    // The core compiles schemas again to check arguments: offline too.
    for r in &refs {
        assert!(ArgumentSchema::compile(&with_ref(r)).is_err(), "{r}");
    }
    b.assert_healthy_answers().await;
    b.session.close().await;

    match listener.accept() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        other => panic!("something connected to the listener: {other:?}"),
    }
    assert!(!tripwire.tripped(&fifo), "the FIFO was opened for reading");
    let after = std::fs::metadata(&file)
        .and_then(|m| m.accessed())
        .expect("atime");
    assert_eq!(after, atime, "the schema file was read");
    // The atime check means something only where reads move atime.
    let _ = std::fs::read(&file).expect("our own read");
    let moved = std::fs::metadata(&file)
        .and_then(|m| m.accessed())
        .expect("atime")
        != atime;
    eprintln!("atime check effective: {moved}");
}

#[test]
fn the_tripwires_catch_a_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("control.fifo");
    let tripwire = Tripwire::new(&fifo);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(&fifo))
    };
    // Give the reader time to open it before the tripwire is released.
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert!(tripwire.tripped(&fifo), "a read of the FIFO went unseen");
    let _ = reader.join();
    let listener = TcpListener::bind("127.0.0.1:0").expect("listener");
    listener.set_nonblocking(true).expect("nonblocking");
    let _c = std::net::TcpStream::connect(listener.local_addr().expect("addr")).expect("connect");
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert!(listener.accept().is_ok(), "a connection went unseen");
}
