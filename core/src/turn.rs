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
//!
//! A turn's state and its answers to `list`, `describe` and every refusal
//! are this file; how it begins is `turn/begin.rs`, `invoke` is
//! `turn/call.rs` and the checks of a call `turn/check.rs`.

mod begin;
mod call;
mod check;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::Value;

use crate::admission::Tool;
use crate::audit::{Audit, AuditEvent};
use crate::command::{self, CapabilityId, Command, Recognized, recognize};
use crate::framing::{
    MAX_SHOWN_SCHEMA_CHARS, MAX_SHOWN_SCHEMA_NAMES_CHARS, one_line, property_schema, schema_text,
};
use crate::messages;
use crate::provider::CallResult;
use crate::shared::{Ended, Ready, Shared, Slot};
use crate::shown::{Shown, ShownCapability};
use crate::vocabulary::{AnswerStatus, Refusal, UnavailableReason};

/// The most characters of a command line the audit trail keeps.
pub(crate) const MAX_AUDIT_COMMAND_CHARS: usize = 1024;

/// SPEAR's answer to a recognized command.
///
/// A turn is shown [`Answer::text`] only. [`Answer::operator_result`] is
/// for the deployment's operator (a CLI, a debugger): the provider's own
/// result, unframed and untrusted, never to be put before a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Answer {
    /// How it came out.
    pub status: AnswerStatus,
    /// What the turn's terminal shows.
    pub text: String,
    /// For the operator only ([`Answer::operator_result`]); the framed
    /// [`Answer::text`] is built from it first, then it is moved in.
    result: Option<CallResult>,
    /// The call ran, and its structured result does not match the tool's
    /// declared output schema (MCP's "clients SHOULD validate"): the first
    /// reason, bounded, untrusted (it quotes the result). The call is not
    /// an error a model should retry: it ran. The turn's text says it too.
    pub structured_mismatch: Option<String>,
    /// The call ran, and its structured result was not checked against the
    /// tool's declared output schema: why (it was too long to check within
    /// the call's time bound, say). The call ran; the turn's text says it
    /// too.
    pub structured_unchecked: Option<String>,
    /// Why it was refused ([`Answer::refusal`]).
    refusal: Option<Refusal>,
}

impl Answer {
    fn new(status: AnswerStatus, text: impl Into<String>) -> Self {
        Self {
            status,
            text: text.into(),
            result: None,
            structured_mismatch: None,
            structured_unchecked: None,
            refusal: None,
        }
    }

    /// Why SPEAR refused the command before it reached a provider: `Some`
    /// for every answer whose status is [`AnswerStatus::Refused`] or
    /// [`AnswerStatus::Unavailable`] (also written, by the same name, as
    /// the `refusal` of its `capability_refused` record); `None` for a
    /// command that was answered or a call that was sent (an unavailable
    /// provider found during the call is [`Outcome`](crate::audit::Outcome)
    /// `unavailable`, not a refusal).
    pub fn refusal(&self) -> Option<&Refusal> {
        self.refusal.as_ref()
    }

    /// **For the operator only, never for a turn**: the result as the
    /// provider returned it, unframed and untrusted, for an `invoke` whose
    /// call reached the provider and came back with a result (its content,
    /// structured content and `is_error`, also when the tool reported a
    /// failure or the result could not be framed); `None` for every other
    /// answer. What a turn is shown is [`Answer::text`].
    pub fn operator_result(&self) -> Option<&CallResult> {
        self.result.as_ref()
    }

    /// [`Answer::operator_result`], taken out of the answer.
    pub fn into_operator_result(self) -> Option<CallResult> {
        self.result
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
    session: Arc<Shared>,
    /// Its number in the session, from 1.
    number: u64,
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
    /// The selected providers, in registry order, as the turn found them.
    family: Vec<(Arc<Slot>, Found)>,
}

/// How the turn found one of its providers when it began.
enum Found {
    /// Ready: its tools are admitted (unless this incarnation ends).
    Ready(Arc<Ready>),
    /// Unavailable, for this whole turn.
    Unavailable(UnavailableReason),
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

/// What a capability id names in this turn, now.
enum Resolved<'a> {
    Admitted(&'a Admitted),
    Unavailable(&'a str, UnavailableReason),
    NotOffered,
    Closed,
}

impl Turn {
    /// Why provider `found` of the family is unavailable to the turn now,
    /// if it is: unavailable when the turn began, or failed since.
    fn unavailable_now(found: &Found) -> Option<UnavailableReason> {
        match found {
            Found::Unavailable(reason) => Some(*reason),
            Found::Ready(ready) => match ready.ended()? {
                Ended::Failed(reason) => Some(reason),
                // A closed session is answered before any provider is asked.
                Ended::Closed => None,
            },
        }
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
    /// Dropping the future abandons the command. A WRITE already approved
    /// stays recorded (`write_approved`); a call already sent is not
    /// recalled (the provider is told it is cancelled, and may have done
    /// it) and is recorded as `capability_invoked` with the outcome
    /// `cancelled`; the provider stays usable.
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
            Command::Describe { id, property } => {
                messages::describe_property_command(&id.to_string(), property)
            }
            Command::Invoke { id, arguments } => format!(
                "spear-capability invoke {id} {}",
                Value::Object(arguments.clone())
            ),
        };
        self.answer_ours(&line, Ok(command)).await
    }

    async fn answer_ours(&self, line: &str, parsed: Result<Command, command::Refusal>) -> Answer {
        match self.mode {
            TurnMode::NoGateway => {
                return self.refuse(None, line, Refusal::GatewayAbsent, messages::NO_GATEWAY);
            }
            TurnMode::NotServed => {
                return self.refuse(None, line, Refusal::NotServed, messages::NOT_SERVED);
            }
            TurnMode::Gateway if self.session.is_closed() => {
                return self.refuse(None, line, Refusal::SessionClosed, messages::SESSION_CLOSED);
            }
            TurnMode::Gateway if tokio::runtime::Handle::try_current().is_err() => {
                return self.refuse(None, line, Refusal::NoRuntime, messages::NO_RUNTIME);
            }
            TurnMode::Gateway => {}
        }
        let command = match parsed {
            Ok(c) => c,
            Err(refusal) => {
                return self.refuse(None, line, Refusal::BadCommand, refusal.message());
            }
        };
        match command {
            Command::List => Answer::new(AnswerStatus::Ok, self.list_text()),
            Command::Describe { id, property } => self.describe(line, &id, &property),
            Command::Invoke { id, arguments } => self.invoke(line, &id, arguments).await,
        }
    }

    /// What `list` prints: the turn's capabilities whose provider is still
    /// there, shown as the turn's exposure shows them, and every provider of
    /// the family that is unavailable now, by name.
    fn list_text(&self) -> String {
        let gone: Vec<(&str, UnavailableReason)> = self
            .family
            .iter()
            .filter_map(|(slot, found)| {
                Some((slot.entry.id.as_str(), Self::unavailable_now(found)?))
            })
            .collect();
        let offered: Vec<&ShownCapability> = self
            .shown
            .capabilities
            .iter()
            .filter(|c| {
                let provider = c.id.split_once('/').map_or(c.id.as_str(), |(p, _)| p);
                gone.iter().all(|(id, _)| *id != provider)
            })
            .collect();
        let mut text = messages::list(&offered, self.shown.exposure);
        for (provider, reason) in gone {
            text.push_str(&messages::provider_unavailable(provider, reason));
        }
        text
    }

    fn resolve(&self, id: &CapabilityId) -> Resolved<'_> {
        if self.session.is_closed() {
            return Resolved::Closed;
        }
        let Some((slot, found)) = self.family.iter().find(|(s, _)| s.entry.id == id.provider)
        else {
            return Resolved::NotOffered;
        };
        if let Some(reason) = Self::unavailable_now(found) {
            return Resolved::Unavailable(&slot.entry.id, reason);
        }
        let tools = self.admitted.get(id.provider.as_str());
        match tools.and_then(|t| t.get(id.tool.as_str())) {
            Some(admitted) => Resolved::Admitted(admitted),
            None => Resolved::NotOffered,
        }
    }

    fn describe(&self, line: &str, id: &CapabilityId, property: &[String]) -> Answer {
        match self.resolve(id) {
            Resolved::Admitted(admitted) => {
                let tool = admitted.tool();
                let text = if property.is_empty() {
                    messages::described(&tool.shown)
                } else {
                    match property_schema(tool.schema.schema(), property) {
                        Some(schema) => {
                            let command =
                                messages::describe_property_command(&tool.shown.id, property);
                            let shown = schema_text(
                                schema,
                                MAX_SHOWN_SCHEMA_CHARS,
                                MAX_SHOWN_SCHEMA_NAMES_CHARS,
                                |cut, shown, total| {
                                    messages::schema_cut(cut, shown, total, Some(&command))
                                },
                            );
                            messages::described_property(&tool.shown, property, &shown)
                        }
                        None => {
                            let text = messages::no_such_property(&tool.shown.id, property);
                            return self.refuse(Some(id), line, Refusal::NoSuchProperty, &text);
                        }
                    }
                };
                admitted.described.store(true, Ordering::Relaxed);
                self.audit.emit(AuditEvent::CapabilityDescribed {
                    capability: tool.shown.id.clone(),
                });
                Answer::new(AnswerStatus::Ok, text)
            }
            Resolved::Unavailable(provider, reason) => self.unavailable(line, id, provider, reason),
            Resolved::NotOffered => self.not_offered(line, id),
            Resolved::Closed => self.refuse(
                Some(id),
                line,
                Refusal::SessionClosed,
                messages::SESSION_CLOSED,
            ),
        }
    }

    fn not_offered(&self, line: &str, id: &CapabilityId) -> Answer {
        let text = messages::not_offered(&id.to_string(), self.read_only);
        self.refuse(Some(id), line, Refusal::NotOffered, &text)
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
        self.refused(Some(id), line, Refusal::ProviderUnavailable, answer)
    }

    fn refuse(
        &self,
        id: Option<&CapabilityId>,
        line: &str,
        refusal: Refusal,
        reason: &str,
    ) -> Answer {
        self.refused(
            id,
            line,
            refusal,
            Answer::new(AnswerStatus::Refused, reason),
        )
    }

    /// `answer`, refused for `refusal`, and its `capability_refused` record.
    fn refused(
        &self,
        id: Option<&CapabilityId>,
        line: &str,
        refusal: Refusal,
        mut answer: Answer,
    ) -> Answer {
        self.audit.emit(AuditEvent::CapabilityRefused {
            capability: id.map(|i| one_line(&i.to_string(), 200)),
            command: one_line(line, MAX_AUDIT_COMMAND_CHARS),
            reason: answer.text.clone(),
            refusal: Some(refusal),
        });
        answer.refusal = Some(refusal);
        answer
    }
}
