//! Turns: what a turn is shown, and SPEAR's answers to its commands.
//!
//! A [`Turn`] is begun by [`crate::Session::begin_turn`]: its providers are
//! selected and started, their admitted tools become the turn's family, and
//! the family is shown whole or as an index ([`crate::exposure`]). Every
//! command line of the turn's terminal then goes through [`Turn::answer`]:
//! a line that is not a `spear-capability` command is `None` (the shell runs
//! it); one that is gets SPEAR's answer and never reaches a shell. `invoke`
//! is checked before it reaches a provider (`turn/call.rs`).
//!
//! It is not where sentences are worded ([`crate::messages`]) nor where
//! providers are started ([`crate::session`]).

mod call;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::Value;

use crate::UnavailableReason;
use crate::admission::Tool;
use crate::audit::{Audit, AuditEvent};
use crate::command::{CapabilityId, Command, Recognized, Refusal, recognize};
use crate::exposure::{Class, Exposure, Shown, ShownUnavailable, expose};
use crate::framing::one_line;
use crate::messages;
use crate::names::named;
use crate::selection::{TurnContext, select};
use crate::session::Inner;
use crate::session::slot::{Ready, Slot};

/// The most characters of a command line the audit trail keeps.
pub const MAX_AUDIT_COMMAND_CHARS: usize = 1024;
pub use call::MAX_AUDIT_ARGUMENT_BYTES;

named! {
    /// How an answer came out.
    pub enum AnswerStatus {
        /// The command did what it asked.
        Ok = "ok",
        /// The command was refused before reaching a provider.
        Refused = "refused",
        /// The provider it needs is unavailable.
        Unavailable = "unavailable",
        /// The provider or tool reported a failure.
        Failed = "failed",
    }
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

/// Whether the turn has a gateway at all.
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
    /// first). B-trees: no hash a provider's tool names could be chosen to
    /// collide in, and a call looks its capability up with no key to build.
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

/// What a capability id names in this turn.
enum Resolved<'a> {
    Admitted(&'a Admitted),
    Unavailable(&'a str, UnavailableReason),
    NotOffered,
}

impl Turn {
    /// Selects the turn's providers, starts those not started yet
    /// (concurrently) and builds what the turn is shown; audits the choice.
    pub(crate) async fn begin(session: Arc<Inner>, id: String, context: &TurnContext) -> Turn {
        let audit = session.audit.for_turn(id.clone());
        let selection = select(&session.registry, context, &audit);
        let mut turn = Turn {
            id,
            audit,
            mode: TurnMode::Gateway,
            read_only: selection.read_only,
            shown: expose(
                Vec::new(),
                Vec::new(),
                &session.options.limits,
                &*session.options.tokens,
            ),
            admitted: BTreeMap::new(),
            family: Vec::new(),
            session,
        };
        if !selection.gateway {
            turn.audit.emit(AuditEvent::GatewayAbsent {
                reason: "earlier runtime".to_owned(),
            });
            turn.mode = TurnMode::NoGateway;
            turn.shown.text = messages::NO_GATEWAY.to_owned();
            return turn;
        }
        if !selection.class_served {
            turn.mode = TurnMode::NotServed;
            return turn;
        }
        let inner = &*turn.session;
        let slots: Vec<Arc<Slot>> = selection
            .selected()
            .filter_map(|id| inner.slot(id))
            .collect();
        futures::future::join_all(slots.iter().map(|s| s.ensure_started(inner))).await;
        turn.family = slots;
        turn.expose_family();
        turn
    }

    /// Admits the ready providers' tools (READ only, for a read-only turn),
    /// names the others unavailable, and audits what the turn was shown.
    fn expose_family(&mut self) {
        let mut capabilities = Vec::new();
        let mut unavailable = Vec::new();
        for slot in &self.family {
            match slot.state() {
                Some(Ok(ready)) => {
                    let mut tools = BTreeMap::new();
                    for (index, tool) in ready.tools.iter().enumerate() {
                        if self.read_only && tool.shown.class == Class::Write {
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
                    self.admitted.insert(slot.entry.id.clone(), tools);
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
        let options = &self.session.options;
        self.shown = expose(capabilities, unavailable, &options.limits, &*options.tokens);
        if self.family.is_empty() {
            return;
        }
        let shown = &self.shown;
        let capabilities = shown.capabilities.iter().map(|c| c.id.clone()).collect();
        let unavailable = shown
            .unavailable
            .iter()
            .map(|u| u.provider.clone())
            .collect();
        let tokens = shown.tokens;
        self.audit.emit(match shown.exposure {
            Exposure::Index => AuditEvent::CapabilityIndexExposed {
                capabilities,
                tokens,
                unavailable,
            },
            Exposure::Whole | Exposure::None => AuditEvent::CapabilityFamilyExposed {
                capabilities,
                tokens,
                unavailable,
            },
        });
    }

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

    async fn answer_ours(&self, line: &str, parsed: Result<Command, Refusal>) -> Answer {
        match self.mode {
            TurnMode::NoGateway => return self.refuse(None, line, messages::NO_GATEWAY),
            TurnMode::NotServed => return self.refuse(None, line, messages::NOT_SERVED),
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
            messages::NONE_OFFERED.to_owned()
        } else {
            messages::index(&self.shown.capabilities)
        };
        for slot in &self.family {
            if let Some(reason) = slot.unavailable() {
                text.push_str(&messages::provider_unavailable(&slot.entry.id, reason));
            }
        }
        text
    }

    fn resolve(&self, id: &CapabilityId) -> Resolved<'_> {
        if let Some(slot) = self.family.iter().find(|s| s.entry.id == id.provider) {
            if let Some(reason) = slot.unavailable() {
                return Resolved::Unavailable(&slot.entry.id, reason);
            }
        }
        let tools = self.admitted.get(id.provider.as_str());
        match tools.and_then(|t| t.get(id.tool.as_str())) {
            Some(admitted) => Resolved::Admitted(admitted),
            None => Resolved::NotOffered,
        }
    }

    fn describe(&self, line: &str, id: &CapabilityId) -> Answer {
        match self.resolve(id) {
            Resolved::Admitted(admitted) => {
                admitted.described.store(true, Ordering::Relaxed);
                let tool = admitted.tool();
                self.audit.emit(AuditEvent::CapabilityDescribed {
                    capability: tool.shown.id.clone(),
                });
                Answer::new(AnswerStatus::Ok, messages::described(&tool.shown))
            }
            Resolved::Unavailable(provider, reason) => self.unavailable(line, id, provider, reason),
            Resolved::NotOffered => self.not_offered(line, id),
        }
    }

    fn not_offered(&self, line: &str, id: &CapabilityId) -> Answer {
        let text = messages::not_offered(&id.to_string(), self.read_only);
        self.refuse(Some(id), line, &text)
    }

    /// The answer to a command on a capability whose provider is
    /// unavailable, audited as refused.
    fn unavailable(
        &self,
        line: &str,
        id: &CapabilityId,
        provider: &str,
        reason: UnavailableReason,
    ) -> Answer {
        let answer = Answer::new(
            AnswerStatus::Unavailable,
            messages::capability_unavailable(&id.to_string(), provider, reason),
        );
        self.audit_refusal(Some(id), line, &answer.text);
        answer
    }

    fn refuse(&self, id: Option<&CapabilityId>, line: &str, reason: &str) -> Answer {
        self.audit_refusal(id, line, reason);
        Answer::new(AnswerStatus::Refused, reason)
    }

    fn audit_refusal(&self, id: Option<&CapabilityId>, line: &str, reason: &str) {
        self.audit.emit(AuditEvent::CapabilityRefused {
            capability: id.map(|i| one_line(&i.to_string(), 200)),
            command: one_line(line, MAX_AUDIT_COMMAND_CHARS),
            reason: reason.to_owned(),
        });
    }
}
