//! Sessions and turns: the capability gateway SPEAR calls.
//!
//! A [`Session`] starts each provider a turn selects once, concurrently, each
//! under its own timeout, and reuses it for later turns. A [`Turn`] is shown
//! its family ([`Turn::shown`]) and has its commands answered
//! ([`Turn::answer`]). A provider that cannot start, times out or fails is
//! left out and recorded; the session's notices say so once; later turns are
//! told it is unavailable by name.
//!
//! ```
//! use std::path::Path;
//! use std::sync::Arc;
//! use spear_capabilities::{
//!     AnswerStatus, Audit, Auto, Registry, Session, SessionOptions, TaskKind, TurnContext,
//! };
//! use spear_testkit::{MockConnector, MockProvider};
//! # use spear_capabilities::{ConnectFuture, ConnectRequest, EntryProblem, Error, KindSettings, ProviderKind};
//! # fn ok(_: &KindSettings) -> Vec<EntryProblem> { Vec::new() }
//! # fn connect(r: ConnectRequest) -> ConnectFuture {
//! #     Box::pin(async move { Err(Error::Start { provider: r.provider, reason: String::new(), stderr: String::new() }) })
//! # }
//! # spear_capabilities::inventory::submit! { ProviderKind { name: "mock", keys: &[], validate: ok, connect } }
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Error> {
//! // SPEAR loads the registry once (here from text; usually Registry::load).
//! let file = br#"{"providers": [
//!     {"id": "notes", "kind": "mock", "scope": "corpus fw", "read": ["get_note"]}
//! ]}"#;
//! let registry = Registry::parse(file, Path::new("/etc/spear/capabilities.json"), &Audit::null())?;
//!
//! // A deployment starts providers with their kinds (the default connector);
//! // here a mock provider stands in for the server.
//! let (notes, script) = MockProvider::new("notes");
//! script.add_simple_tool("get_note", "Read one note.", &["id"]);
//! let connector = MockConnector::new();
//! connector.add(notes);
//!
//! let session = Session::open(
//!     Arc::new(registry),
//!     SessionOptions::new("session-1", Arc::new(Auto)).with_connector(connector),
//! );
//! let turn = session
//!     .begin_turn(TurnContext::new("/src/fw", TaskKind::Implementation).with_project("fw"))
//!     .await;
//! assert!(turn.shown().text.contains("notes/get_note (READ)"));
//!
//! // Every command line of the turn's terminal goes through `answer` first.
//! assert_eq!(turn.answer("cargo test").await, None); // not ours: the shell runs it
//! let answer = turn
//!     .answer(r#"spear-capability invoke notes/get_note '{"id": "7"}'"#)
//!     .await
//!     .expect("ours: never handed to a shell");
//! assert_eq!(answer.status, AnswerStatus::Ok);
//! assert!(answer.text.starts_with("External content from provider `notes`"));
//!
//! assert!(session.take_notices().is_empty());
//! session.close().await;
//! # Ok(())
//! # }
//! ```

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use crate::audit::{Audit, AuditEvent};
use crate::checks::{ArgumentSchema, tool_name_problem};
use crate::command::{CapabilityId, Command, Recognized, recognize};
use crate::connector::{Connector, KindConnector};
use crate::exposure::{
    Class, Exposure, Limits, Shown, ShownCapability, ShownUnavailable, expose, index_text,
};
use crate::framing::{
    frame, frame_head, frame_with_head, json_text, one_line, result_body, sanitised_json,
};
use crate::permission::{PermissionMode, WriteRequest};
use crate::registry::{ProviderEntry, Registry, WritePolicy};
use crate::selection::{TurnContext, select};
use crate::tokens::{EstimatedTokens, TokenCounter};
use crate::{CallRequest, Error, Provider, UnavailableReason};

/// The most bytes of a call's arguments the audit trail keeps.
pub const MAX_AUDIT_ARGUMENT_BYTES: usize = 4096;
/// The most characters of a command line the audit trail keeps.
pub const MAX_AUDIT_COMMAND_CHARS: usize = 1024;
/// How much longer than its timeout the gateway waits for a provider that
/// does not keep its own timeout ([`Provider::keeps_call_timeout`]), before
/// it calls the provider timed out.
pub const TIMEOUT_GRACE: Duration = Duration::from_secs(1);

/// What a turn on SPEAR's earlier runtime is shown, and answered.
pub const NO_GATEWAY_TEXT: &str = "External capabilities are not available to this turn: it runs on SPEAR's earlier runtime, which has no capability gateway.";
/// The answer to a command of a turn that is never offered capabilities.
pub const NOT_SERVED_TEXT: &str = "External capabilities are not offered to this kind of turn.";

/// How a session is set up.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SessionOptions {
    /// The session's id, in every audit record.
    pub id: String,
    /// The session's permission mode.
    pub permission: Arc<dyn PermissionMode>,
    /// Where audit records go.
    pub audit: Audit,
    /// How providers are started.
    pub connector: Arc<dyn Connector>,
    /// Exposure limits.
    pub limits: Limits,
    /// How tokens are counted.
    pub tokens: Arc<dyn TokenCounter>,
}

impl SessionOptions {
    /// A session `id` with `permission`, no audit trail, the linked kinds, and
    /// the default limits and token estimate.
    pub fn new(id: impl Into<String>, permission: Arc<dyn PermissionMode>) -> Self {
        Self {
            id: id.into(),
            permission,
            audit: Audit::null(),
            connector: Arc::new(KindConnector),
            limits: Limits::default(),
            tokens: Arc::new(EstimatedTokens),
        }
    }

    /// Records into `audit`.
    pub fn with_audit(mut self, audit: Audit) -> Self {
        self.audit = audit;
        self
    }

    /// Starts providers with `connector`.
    pub fn with_connector(mut self, connector: Arc<dyn Connector>) -> Self {
        self.connector = connector;
        self
    }

    /// Uses other exposure limits.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Counts tokens with `tokens`.
    pub fn with_token_counter(mut self, tokens: Arc<dyn TokenCounter>) -> Self {
        self.tokens = tokens;
        self
    }
}

/// How an answer came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerStatus {
    /// The command did what it asked.
    Ok,
    /// The command was refused before reaching a provider.
    Refused,
    /// The provider it needs is unavailable.
    Unavailable,
    /// The provider or tool reported a failure.
    Failed,
}

/// SPEAR's answer to a recognized command.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Answer {
    /// How it came out.
    pub status: AnswerStatus,
    /// What the turn's terminal shows.
    pub text: String,
}

impl Answer {
    fn new(status: AnswerStatus, text: impl Into<String>) -> Self {
        Self {
            status,
            text: text.into(),
        }
    }
}

struct Tool {
    name: String,
    shown: ShownCapability,
    schema: ArgumentSchema,
    /// The start of each frame of its results ([`frame_head`]).
    frame_head: String,
}

struct Ready {
    provider: Arc<dyn Provider>,
    tools: Vec<Tool>,
    started_in: Duration,
}

struct Slot {
    entry: ProviderEntry,
    started: tokio::sync::OnceCell<Result<Arc<Ready>, UnavailableReason>>,
    /// Why it failed, short and in full; set once.
    failed: Mutex<Option<(UnavailableReason, String)>>,
}

impl Slot {
    /// Why the provider is unavailable, if it is; cheaper than
    /// [`Slot::state`] (no reference count is touched).
    fn unavailable(&self) -> Option<UnavailableReason> {
        if let Some((reason, _)) = &*lock(&self.failed) {
            return Some(*reason);
        }
        self.started.get()?.as_ref().err().copied()
    }

    fn state(&self) -> Option<Result<Arc<Ready>, UnavailableReason>> {
        match self.unavailable() {
            Some(reason) => Some(Err(reason)),
            None => self.started.get().cloned(),
        }
    }
}

/// How a started provider is doing, for the deployment's operator.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProviderState {
    /// Started and listed.
    Ready {
        /// How long start and listing took.
        started_in: Duration,
        /// How many usable tools it has.
        tools: usize,
    },
    /// Left out of the session.
    Unavailable {
        /// The short category a turn is told.
        reason: UnavailableReason,
        /// The full reason (may carry the command, OS error and stderr): for
        /// the operator only, never for a turn.
        message: String,
    },
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

struct Inner {
    registry: Arc<Registry>,
    options: SessionOptions,
    audit: Audit,
    slots: Mutex<HashMap<String, Arc<Slot>>>,
    notices: Mutex<Vec<String>>,
    turns: AtomicU64,
}

/// One SPEAR session: its permission mode, audit trail and started providers.
///
/// Cheap to clone: clones share the providers.
#[derive(Clone)]
pub struct Session {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.inner.options.id)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// Opens a session over `registry`. Nothing starts until a turn needs it.
    pub fn open(registry: Arc<Registry>, options: SessionOptions) -> Self {
        let audit = options.audit.for_session(options.id.clone());
        Self {
            inner: Arc::new(Inner {
                registry,
                options,
                audit,
                slots: Mutex::new(HashMap::new()),
                notices: Mutex::new(Vec::new()),
                turns: AtomicU64::new(0),
            }),
        }
    }

    /// The session's id.
    pub fn id(&self) -> &str {
        &self.inner.options.id
    }

    /// Begins a turn: selects its providers, starts those not started yet
    /// (concurrently, each under its own timeout) and builds what it is shown.
    ///
    /// # Cancel safety
    /// Dropping the future may leave a provider half-started; the next turn
    /// that needs it waits for or retries the start.
    pub async fn begin_turn(&self, context: TurnContext) -> Turn {
        let inner = &self.inner;
        let n = inner.turns.fetch_add(1, Ordering::Relaxed) + 1;
        let turn_id = n.to_string();
        let audit = inner.audit.for_turn(turn_id.clone());
        let selection = select(&inner.registry, &context, &audit);
        let mut turn = Turn {
            session: Arc::clone(inner),
            id: turn_id,
            audit,
            mode: TurnMode::Gateway,
            read_only: selection.read_only,
            shown: expose(
                Vec::new(),
                Vec::new(),
                &inner.options.limits,
                &*inner.options.tokens,
            ),
            admitted: BTreeMap::new(),
            family: Vec::new(),
        };
        if !selection.gateway {
            turn.audit.emit(AuditEvent::GatewayAbsent {
                reason: "earlier runtime".to_owned(),
            });
            turn.mode = TurnMode::NoGateway;
            turn.shown.text = NO_GATEWAY_TEXT.to_owned();
            return turn;
        }
        if !selection.class_served {
            turn.mode = TurnMode::NotServed;
            return turn;
        }
        let slots: Vec<Arc<Slot>> = selection
            .selected()
            .filter_map(|id| self.slot(id))
            .collect();
        futures::future::join_all(slots.iter().map(|s| self.ensure_started(s))).await;

        let mut capabilities = Vec::new();
        let mut unavailable = Vec::new();
        for slot in &slots {
            turn.family.push(Arc::clone(slot));
            match slot.state() {
                Some(Ok(ready)) => {
                    let mut tools = BTreeMap::new();
                    for (index, tool) in ready.tools.iter().enumerate() {
                        if turn.read_only && tool.shown.class == Class::Write {
                            continue;
                        }
                        let admitted = Admitted {
                            slot: Arc::clone(slot),
                            ready: Arc::clone(&ready),
                            index,
                            described: AtomicBool::new(false),
                        };
                        tools.insert(tool.name.clone(), admitted);
                        capabilities.push(tool.shown.clone());
                    }
                    turn.admitted.insert(slot.entry.id.clone(), tools);
                }
                Some(Err(reason)) => unavailable.push(ShownUnavailable {
                    provider: slot.entry.id.clone(),
                    reason,
                }),
                None => unavailable.push(ShownUnavailable {
                    provider: slot.entry.id.clone(),
                    reason: UnavailableReason::DidNotStart,
                }),
            }
        }
        turn.shown = expose(
            capabilities,
            unavailable,
            &inner.options.limits,
            &*inner.options.tokens,
        );
        if !slots.is_empty() {
            let ids = turn
                .shown
                .capabilities
                .iter()
                .map(|c| c.id.clone())
                .collect();
            let unavailable = turn
                .shown
                .unavailable
                .iter()
                .map(|u| u.provider.clone())
                .collect();
            let tokens = turn.shown.tokens;
            turn.audit.emit(match turn.shown.exposure {
                Exposure::Index => AuditEvent::CapabilityIndexExposed {
                    capabilities: ids,
                    tokens,
                    unavailable,
                },
                Exposure::Whole | Exposure::None => AuditEvent::CapabilityFamilyExposed {
                    capabilities: ids,
                    tokens,
                    unavailable,
                },
            });
        }
        turn
    }

    /// The notices not read yet: each failed provider is reported once in
    /// the session's life.
    pub fn take_notices(&self) -> Vec<String> {
        std::mem::take(&mut *lock(&self.inner.notices))
    }

    /// The providers this session has started or tried to, in registry
    /// order, with their state. For the operator: it may carry stderr.
    pub fn provider_states(&self) -> Vec<(String, ProviderState)> {
        let slots = lock(&self.inner.slots);
        self.inner
            .registry
            .entries()
            .iter()
            .filter_map(|e| slots.get(&e.id))
            .filter_map(|slot| {
                let state = if let Some((reason, message)) = &*lock(&slot.failed) {
                    ProviderState::Unavailable {
                        reason: *reason,
                        message: message.clone(),
                    }
                } else {
                    let ready = slot.started.get()?.as_ref().ok()?;
                    ProviderState::Ready {
                        started_in: ready.started_in,
                        tools: ready.tools.len(),
                    }
                };
                Some((slot.entry.id.clone(), state))
            })
            .collect()
    }

    /// Shuts down every started provider, concurrently.
    ///
    /// # Cancel safety
    /// Not cancel-safe; dropping the session afterwards still releases the
    /// providers (each kind ends its processes on drop).
    pub async fn close(self) {
        let started: Vec<(String, Arc<dyn Provider>)> = lock(&self.inner.slots)
            .values()
            .filter_map(|s| match s.started.get() {
                Some(Ok(ready)) => Some((s.entry.id.clone(), Arc::clone(&ready.provider))),
                _ => None,
            })
            .collect();
        let audit = &self.inner.audit;
        futures::future::join_all(started.into_iter().map(|(id, p)| async move {
            let error = p.shutdown().await.err().map(|e| e.to_string());
            audit.emit(AuditEvent::ProviderStopped {
                provider: id,
                error,
            });
        }))
        .await;
    }

    fn slot(&self, id: &str) -> Option<Arc<Slot>> {
        let entry = self.inner.registry.entry(id)?;
        let mut slots = lock(&self.inner.slots);
        Some(Arc::clone(slots.entry(id.to_owned()).or_insert_with(
            || {
                Arc::new(Slot {
                    entry: entry.clone(),
                    started: tokio::sync::OnceCell::new(),
                    failed: Mutex::new(None),
                })
            },
        )))
    }

    async fn ensure_started(&self, slot: &Arc<Slot>) {
        let inner = &self.inner;
        slot.started
            .get_or_init(|| async {
                match start(inner, &slot.entry).await {
                    Ok(ready) => Ok(Arc::new(ready)),
                    Err(e) => {
                        let reason = e
                            .unavailable_reason()
                            .unwrap_or(UnavailableReason::DidNotStart);
                        report_failure(inner, slot, reason, &e);
                        Err(reason)
                    }
                }
            })
            .await;
    }
}

async fn start(inner: &Inner, entry: &ProviderEntry) -> Result<Ready, Error> {
    let began = Instant::now();
    let timed_out = || Error::Timeout {
        provider: entry.id.clone(),
        after: entry.timeout,
        stderr: String::new(),
    };
    let connect = inner
        .options
        .connector
        .connect(entry, inner.registry.base_dir());
    let provider = tokio::time::timeout(entry.timeout + TIMEOUT_GRACE, connect)
        .await
        .map_err(|_| timed_out())??;
    let listed =
        match tokio::time::timeout(entry.timeout + TIMEOUT_GRACE, provider.list_tools()).await {
            Ok(Ok(list)) => list,
            Ok(Err(e)) => {
                let _ = provider.shutdown().await;
                return Err(e);
            }
            Err(_) => {
                let _ = provider.shutdown().await;
                return Err(timed_out());
            }
        };
    let mut rejected: Vec<(String, String)> = listed
        .rejected
        .iter()
        .map(|r| (r.name.clone(), r.reason.clone()))
        .collect();
    let mut seen = HashSet::new();
    let mut tools = Vec::new();
    for spec in listed.tools {
        if let Some(problem) = tool_name_problem(&spec.name) {
            rejected.push((spec.name, problem));
            continue;
        }
        if !seen.insert(spec.name.clone()) {
            rejected.push((spec.name, "the name is used by another tool".to_owned()));
            continue;
        }
        match ArgumentSchema::compile(&spec.input_schema) {
            Ok(schema) => {
                let class = if entry.read.contains(&spec.name) {
                    Class::Read
                } else {
                    Class::Write
                };
                let shown = ShownCapability::new(
                    format!("{}/{}", entry.id, spec.name),
                    class,
                    spec.title.as_deref(),
                    spec.description.as_deref(),
                    json_text(&spec.input_schema),
                );
                tools.push(Tool {
                    frame_head: frame_head(&entry.id, &shown.id),
                    name: spec.name,
                    shown,
                    schema,
                });
            }
            Err(reason) => rejected.push((spec.name, reason)),
        }
    }
    for (tool, reason) in &rejected {
        inner.audit.emit(AuditEvent::ToolRejected {
            provider: entry.id.clone(),
            tool: one_line(tool, 200),
            reason: one_line(reason, 500),
        });
    }
    inner.audit.emit(AuditEvent::ProviderStarted {
        provider: entry.id.clone(),
        tools: tools.len(),
        rejected_tools: rejected.len(),
        duration_ms: millis(began.elapsed()),
    });
    Ok(Ready {
        provider,
        tools,
        started_in: began.elapsed(),
    })
}

/// Records a provider's failure once: audit record, and one notice.
fn report_failure(inner: &Inner, slot: &Slot, reason: UnavailableReason, error: &Error) {
    {
        let mut failed = lock(&slot.failed);
        if failed.is_some() {
            return;
        }
        *failed = Some((reason, error.to_string()));
    }
    inner.audit.emit(AuditEvent::ProviderFailed {
        provider: slot.entry.id.clone(),
        reason,
        message: error.to_string(),
    });
    lock(&inner.notices).push(format!(
        "External capability provider `{}` is unavailable ({reason}); the session goes on without it.",
        slot.entry.id
    ));
    // A provider that failed after starting still holds its process.
    if let Some(Ok(ready)) = slot.started.get() {
        let provider = Arc::clone(&ready.provider);
        tokio::spawn(async move {
            let _ = provider.shutdown().await;
        });
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TurnMode {
    Gateway,
    NoGateway,
    NotServed,
}

/// One turn: what it is shown, and the answers to its commands.
pub struct Turn {
    session: Arc<Inner>,
    id: String,
    audit: Audit,
    mode: TurnMode,
    read_only: bool,
    shown: Shown,
    /// Provider id -> tool name -> the capability `<provider>/<tool>`
    /// (neither has a `/`, so a capability id splits into them at its
    /// first). B-trees, not hash maps: no hashing on every call, and no hash
    /// a provider's tool names could be chosen to collide in; and two keys,
    /// so a call looks its capability up with no key to build.
    admitted: BTreeMap<String, BTreeMap<String, Admitted>>,
    /// The selected providers, in registry order.
    family: Vec<Arc<Slot>>,
}

/// A capability a turn admits.
struct Admitted {
    slot: Arc<Slot>,
    ready: Arc<Ready>,
    /// The tool's index in `ready.tools`.
    index: usize,
    /// Whether the turn has described it (in index mode it must, first).
    described: AtomicBool,
}

impl Admitted {
    fn tool(&self) -> &Tool {
        &self.ready.tools[self.index]
    }
}

impl std::fmt::Debug for Turn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Turn")
            .field("id", &self.id)
            .field("exposure", &self.shown.exposure)
            .finish_non_exhaustive()
    }
}

enum Resolved<'a> {
    Admitted(&'a Admitted),
    Unavailable(String, UnavailableReason),
    NotOffered(String),
}

impl Turn {
    /// The turn's id within its session.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// What the turn is shown, as text ([`Shown::text`]) and as data.
    pub fn shown(&self) -> &Shown {
        &self.shown
    }

    /// Answers a command line typed into the turn's terminal: `None` when it
    /// is not a `spear-capability` command (the shell runs it), else SPEAR's
    /// answer; nothing of a recognized command is ever run by a shell.
    ///
    /// Several commands of one turn may be answered at once.
    ///
    /// # Cancel safety
    /// Dropping the future abandons the call; the provider stays usable.
    pub async fn answer(&self, command_line: &str) -> Option<Answer> {
        match recognize(command_line) {
            Recognized::NotOurs => None,
            Recognized::Ours(parsed) => Some(self.answer_ours(command_line, parsed).await),
        }
    }

    /// Answers an already parsed command as if the turn had typed it (the
    /// operator CLI's `invoke` uses this; the turn itself goes through
    /// [`Turn::answer`]).
    ///
    /// # Cancel safety
    /// As [`Turn::answer`].
    pub async fn execute(&self, command: Command) -> Answer {
        let line = match &command {
            Command::List => "spear-capability list".to_owned(),
            Command::Describe { id } => format!("spear-capability describe {id}"),
            Command::Invoke { id, arguments } => format!(
                "spear-capability invoke {id} {}",
                Value::Object(arguments.clone())
            ),
        };
        self.answer_ours(&line, Ok(command)).await
    }

    async fn answer_ours(
        &self,
        line: &str,
        parsed: Result<Command, crate::command::Refusal>,
    ) -> Answer {
        match self.mode {
            TurnMode::NoGateway => return self.refuse(None, line, NO_GATEWAY_TEXT),
            TurnMode::NotServed => return self.refuse(None, line, NOT_SERVED_TEXT),
            TurnMode::Gateway => {}
        }
        let command = match parsed {
            Ok(c) => c,
            Err(refusal) => return self.refuse(None, line, refusal.message()),
        };
        match command {
            Command::List => Answer::new(AnswerStatus::Ok, self.list_text()),
            Command::Describe { id } => self.describe(line, &id),
            Command::Invoke { id, arguments } => self.invoke(line, &id, arguments).await,
        }
    }

    fn list_text(&self) -> String {
        let mut text = if self.shown.capabilities.is_empty() {
            "No external capabilities are offered to this turn.\n".to_owned()
        } else {
            index_text(&self.shown.capabilities)
        };
        for slot in &self.family {
            let id = &slot.entry.id;
            if let Some(Err(reason)) = slot.state() {
                text.push_str(&format!(
                    "Provider `{id}` is unavailable ({reason}): none of its capabilities can be called in this session.\n"
                ));
            }
        }
        text
    }

    fn resolve(&self, id: &CapabilityId) -> Resolved<'_> {
        if let Some(slot) = self.family.iter().find(|s| s.entry.id == id.provider) {
            if let Some(reason) = slot.unavailable() {
                return Resolved::Unavailable(id.provider.clone(), reason);
            }
        }
        let tools = self.admitted.get(id.provider.as_str());
        if let Some(admitted) = tools.and_then(|t| t.get(id.tool.as_str())) {
            return Resolved::Admitted(admitted);
        }
        let hint = if self.read_only {
            " (this turn may use READ capabilities only)"
        } else {
            ""
        };
        Resolved::NotOffered(format!(
            "No capability `{}` is offered to this turn{hint}; `spear-capability list` shows the ones that are.",
            one_line(&id.to_string(), 200)
        ))
    }

    fn describe(&self, line: &str, id: &CapabilityId) -> Answer {
        match self.resolve(id) {
            Resolved::Admitted(admitted) => {
                admitted.described.store(true, Ordering::Relaxed);
                let tool = admitted.tool();
                self.audit.emit(AuditEvent::CapabilityDescribed {
                    capability: tool.shown.id.clone(),
                });
                Answer::new(AnswerStatus::Ok, tool.shown.describe_text())
            }
            Resolved::Unavailable(provider, reason) => {
                self.unavailable(line, id, &provider, reason)
            }
            Resolved::NotOffered(message) => self.refuse(Some(id), line, &message),
        }
    }

    async fn invoke(&self, line: &str, id: &CapabilityId, arguments: Map<String, Value>) -> Answer {
        let admitted = match self.resolve(id) {
            Resolved::Admitted(admitted) => admitted,
            Resolved::Unavailable(provider, reason) => {
                return self.unavailable(line, id, &provider, reason);
            }
            Resolved::NotOffered(message) => return self.refuse(Some(id), line, &message),
        };
        let (slot, ready, tool) = (&*admitted.slot, &*admitted.ready, admitted.tool());
        let cap = &tool.shown.id;
        if self.shown.exposure == Exposure::Index && !admitted.described.load(Ordering::Relaxed) {
            return self.refuse(
                Some(id),
                line,
                &format!("Describe `{cap}` before invoking it: spear-capability describe {cap}"),
            );
        }
        // Checked as the value the call sends, not a copy of it.
        let arguments = Value::Object(arguments);
        if let Err(errors) = tool.schema.check_object(&arguments) {
            let text = format!(
                "The arguments do not fit the schema of `{cap}`:\n{}",
                frame(&slot.entry.id, cap, &errors.join("\n"))
            );
            return self.refuse(Some(id), line, &text);
        }
        let Value::Object(arguments) = arguments else {
            unreachable!("made an object above")
        };
        let args_text = bounded_json(&arguments);
        if tool.shown.class == Class::Write {
            if let Some(reason) = self.write_refusal(slot, cap, &args_text).await {
                return self.refuse(Some(id), line, &reason);
            }
        }
        let began = Instant::now();
        // Through the `dyn Provider` itself: on the `Arc` the forwarding impl
        // would box a second future around the provider's own.
        let provider: &dyn Provider = &*ready.provider;
        let call = provider.call_tool(CallRequest::new(tool.name.clone(), arguments));
        let outcome = if provider.keeps_call_timeout() {
            call.await
        } else {
            tokio::time::timeout(slot.entry.timeout + TIMEOUT_GRACE, call)
                .await
                .unwrap_or_else(|_| {
                    Err(Error::Timeout {
                        provider: slot.entry.id.clone(),
                        after: slot.entry.timeout,
                        stderr: String::new(),
                    })
                })
        };
        let provider = &slot.entry.id;
        let (label, answer) = match outcome {
            Ok(result) if result.is_error => (
                "tool_error",
                Answer::new(
                    AnswerStatus::Failed,
                    format!(
                        "`{cap}` reported an error:\n{}",
                        frame_with_head(&tool.frame_head, &result_body(&result))
                    ),
                ),
            ),
            Ok(result) => (
                "ok",
                Answer::new(
                    AnswerStatus::Ok,
                    frame_with_head(&tool.frame_head, &result_body(&result)),
                ),
            ),
            Err(Error::CallRejected { code, message, .. }) => (
                "rejected",
                Answer::new(
                    AnswerStatus::Failed,
                    format!(
                        "Provider `{provider}` answered `{cap}` with error {code}:\n{}",
                        frame(provider, cap, &message)
                    ),
                ),
            ),
            Err(e) => {
                let reason = e
                    .unavailable_reason()
                    .unwrap_or(UnavailableReason::ProtocolError);
                report_failure(&self.session, slot, reason, &e);
                ("unavailable", self.unavailable_text(id, provider, reason))
            }
        };
        self.audit.emit(AuditEvent::CapabilityInvoked {
            capability: cap.clone(),
            class: Cow::Borrowed(tool.shown.class.as_str()),
            arguments: args_text,
            outcome: Cow::Borrowed(label),
            duration_ms: millis(began.elapsed()),
        });
        answer
    }

    /// Why a WRITE may not run, or `None` when it may.
    async fn write_refusal(&self, slot: &Slot, cap: &str, arguments: &str) -> Option<String> {
        let provider = &slot.entry.id;
        let policy = slot.entry.write;
        if policy == WritePolicy::Refuse {
            return Some(format!(
                "`{cap}` is a WRITE capability, and provider `{provider}` refuses writes (write policy \"refuse\")."
            ));
        }
        let request = WriteRequest {
            capability: cap.to_owned(),
            arguments: arguments.to_owned(),
        };
        let mode = &self.session.options.permission;
        if mode.allow_write(policy, &request).await {
            None
        } else {
            Some(format!(
                "`{cap}` is a WRITE capability, and the session's permission mode ({}) did not allow it.",
                mode.name()
            ))
        }
    }

    fn unavailable_text(
        &self,
        id: &CapabilityId,
        provider: &str,
        reason: UnavailableReason,
    ) -> Answer {
        Answer::new(
            AnswerStatus::Unavailable,
            format!(
                "`{}` is unavailable: provider `{provider}` {reason} and none of its capabilities can be called in this session.",
                one_line(&id.to_string(), 200),
                reason = match reason {
                    UnavailableReason::DidNotStart => "did not start",
                    UnavailableReason::TimedOut => "timed out",
                    UnavailableReason::ProtocolError => "broke its protocol",
                    UnavailableReason::Crashed => "stopped",
                }
            ),
        )
    }

    fn unavailable(
        &self,
        line: &str,
        id: &CapabilityId,
        provider: &str,
        reason: UnavailableReason,
    ) -> Answer {
        let answer = self.unavailable_text(id, provider, reason);
        self.audit.emit(AuditEvent::CapabilityRefused {
            capability: Some(one_line(&id.to_string(), 200)),
            command: one_line(line, MAX_AUDIT_COMMAND_CHARS),
            reason: answer.text.clone(),
        });
        answer
    }

    fn refuse(&self, id: Option<&CapabilityId>, line: &str, reason: &str) -> Answer {
        self.audit.emit(AuditEvent::CapabilityRefused {
            capability: id.map(|i| one_line(&i.to_string(), 200)),
            command: one_line(line, MAX_AUDIT_COMMAND_CHARS),
            reason: reason.to_owned(),
        });
        Answer::new(AnswerStatus::Refused, reason)
    }
}

/// Compact JSON of `arguments`, cut at [`MAX_AUDIT_ARGUMENT_BYTES`].
fn bounded_json(arguments: &Map<String, Value>) -> String {
    // Serialised from the map itself: no copy of the arguments is made.
    let text = sanitised_json(serde_json::to_string(arguments).unwrap_or_default());
    if text.len() <= MAX_AUDIT_ARGUMENT_BYTES {
        return text;
    }
    let mut end = MAX_AUDIT_ARGUMENT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [{} more bytes]", &text[..end], text.len() - end)
}
