//! The whole path for the hostile-server suite: a `Session` with every linked
//! kind, a healthy fixture server beside a hostile one, and the checks every
//! scenario shares (the notice, the audit record, the healthy one answers).
#![allow(dead_code, unreachable_pub)] // each test file uses a different part

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};
use spear_capabilities::{
    Answer, AnswerStatus, Auto, Notice, Registry, Session, SessionOptions, Turn, TurnContext,
    TurnKind,
};
use spear_testkit::{RecordingSink, ours};
// Links the mcp-stdio kind, as SPEAR's binary does.
use spear_providers as _;

/// The fixture server, built by cargo for this package's tests.
pub const FIXTURE: &str = env!("CARGO_BIN_EXE_spear-fixture-server");
/// The script player.
pub const SCRIPT: &str = env!("CARGO_BIN_EXE_spear-script-server");

/// A provider's server for a scenario.
#[derive(Debug, Clone)]
pub enum Server {
    /// The fixture server with these flags.
    Fixture(Vec<String>),
    /// The script player with this script.
    Script(Value),
}

/// The fixture with `flags`.
pub fn fixture(flags: &[&str]) -> Server {
    Server::Fixture(flags.iter().map(|f| (*f).to_owned()).collect())
}

/// One session with `healthy` (the fixture, well behaved) and `hostile`.
#[derive(Debug)]
pub struct Bench {
    /// Every audit record.
    pub sink: Arc<RecordingSink>,
    /// The session.
    pub session: Session,
    /// Where the registry and scripts live.
    pub dir: tempfile::TempDir,
}

/// A session whose provider `hostile` runs `server` with `timeout` seconds.
pub fn bench(server: Server, timeout: f64) -> Bench {
    bench_with(server, timeout, json!({}))
}

/// As [`bench`], with extra keys for the hostile entry (`env`, ...).
pub fn bench_with(server: Server, timeout: f64, extra: Value) -> Bench {
    let dir = tempfile::tempdir().expect("tempdir");
    let command: Vec<String> = match server {
        Server::Fixture(flags) => std::iter::once(FIXTURE.to_owned()).chain(flags).collect(),
        Server::Script(script) => {
            let path = dir.path().join("script.json");
            std::fs::write(&path, script.to_string()).expect("script");
            vec![SCRIPT.to_owned(), path.display().to_string()]
        }
    };
    let mut hostile = json!({"id": "hostile", "command": command, "scope": "global",
                             "write": "allow", "timeout": timeout});
    for (k, v) in extra.as_object().into_iter().flatten() {
        hostile[k] = v.clone();
    }
    let file = json!({"providers": [
        {"id": "healthy", "command": [FIXTURE], "scope": "global", "read": ["echo"], "timeout": 20},
        hostile
    ]});
    let path = dir.path().join("capabilities.json");
    let (sink, audit) = RecordingSink::new();
    let kinds = spear_providers::kinds().expect("built-in kinds");
    let registry =
        Registry::parse(file.to_string().as_bytes(), &path, &kinds, &audit).expect("registry");
    assert!(registry.refused().is_empty(), "{:?}", registry.refused());
    let session = Session::open(
        Arc::new(registry),
        SessionOptions::new("hostile-suite", Arc::new(Auto)).with_audit(audit),
    );
    Bench { sink, session, dir }
}

/// An implementation turn in project `p`.
pub fn context(tree: &Path) -> TurnContext {
    TurnContext::new(PathBuf::from(tree), TurnKind::Implementation).with_project("p")
}

impl Bench {
    /// Begins a turn.
    pub async fn turn(&self) -> Turn {
        self.session
            .begin_turn(context(self.dir.path()))
            .await
            .expect("the turn begins")
    }

    /// The `provider_failed` record of `hostile`, which must be the only one;
    /// its message names the provider and is bounded.
    pub fn failure(&self) -> Value {
        let failed = self.sink.named("provider_failed");
        assert_eq!(failed.len(), 1, "{failed:?}");
        let record = failed[0].clone();
        assert_eq!(record["provider"], "hostile");
        let message = record["message"].as_str().expect("message");
        assert!(message.starts_with("provider `hostile` "), "{message}");
        assert!(
            message.len() < 80 * 1024,
            "unbounded: {} bytes",
            message.len()
        );
        record
    }

    /// The session's notices: exactly one, naming `hostile` and `category`.
    pub fn assert_one_notice(&self, category: &str) {
        let notices = self.session.take_notices();
        let texts: Vec<String> = notices.iter().map(Notice::text).collect();
        assert_eq!(
            texts,
            [format!(
                "External capability provider `hostile` is unavailable ({category}); the session goes on without it."
            )]
        );
        assert_eq!(notices[0].provider(), Some("hostile"));
        assert_eq!(
            notices[0].reason().map(|r| r.as_str().replace('_', " ")),
            Some(category.to_owned())
        );
    }

    /// No notice at all: the hostile provider stayed available.
    pub fn assert_no_notice(&self) {
        assert_eq!(self.session.take_notices(), Vec::<Notice>::new());
    }

    /// A new turn still gets `healthy/echo` answered.
    pub async fn assert_healthy_answers(&self) {
        let turn = self.turn().await;
        let a = invoke(&turn, "healthy/echo", json!({"text": "still here"})).await;
        assert_eq!(a.status, AnswerStatus::Ok, "{}", a.text);
        assert!(a.text.contains("\nstill here\n"), "{}", a.text);
    }
}

/// Asserts what a turn is shown about an unavailable `hostile`, and that
/// invoking `tool` of it answers "unavailable" naming it.
pub async fn assert_unavailable(turn: &Turn, tool: &str, category: &str) {
    let line = format!(
        "Provider `hostile` is unavailable ({category}): none of its capabilities can be called in this turn."
    );
    assert!(turn.shown().text.contains(&line), "{}", turn.shown().text);
    assert!(
        turn.shown()
            .capabilities
            .iter()
            .all(|c| !c.id.starts_with("hostile/")),
        "nothing of it to call"
    );
    let a = invoke(turn, &format!("hostile/{tool}"), json!({})).await;
    assert_eq!(a.status, AnswerStatus::Unavailable, "{}", a.text);
    assert_eq!(
        a.text,
        format!(
            "`hostile/{tool}` is unavailable: provider `hostile` is unavailable ({category}) and none of its capabilities can be called in this turn."
        )
    );
}

/// Invokes `capability` with `arguments`, describing it first (needed when
/// the family is an index, harmless otherwise).
pub async fn invoke(turn: &Turn, capability: &str, arguments: Value) -> Answer {
    ours(turn, &format!("spear-capability describe {capability}")).await;
    let line = format!("spear-capability invoke {capability} '{arguments}'");
    ours(turn, &line).await
}

/// Nothing a turn sees may carry the deployment's own material: commands,
/// paths of the servers, stderr, server names.
pub fn assert_nothing_private(text: &str) {
    for private in [
        FIXTURE,
        SCRIPT,
        "spear-fixture-server",
        "spear-script-server",
        "stderr",
        "fixture: pid",
        "script: pid",
    ] {
        assert!(!text.contains(private), "{private:?} leaked into {text}");
    }
}
