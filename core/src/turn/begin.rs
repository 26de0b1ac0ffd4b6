//! How a turn begins: its providers selected and got going, waited for as
//! a turn waits, their admitted tools made its family, and the family
//! shown whole or as an index; each step audited.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use tokio::time::Instant;

use super::{Admitted, Found, Turn, TurnMode};
use crate::audit::AuditEvent;
use crate::error::TurnError;
use crate::exposure::expose;
use crate::messages;
use crate::selection::{TurnContext, select};
use crate::shared::{Shared, Slot, View};
use crate::shown::ShownUnavailable;
use crate::vocabulary::{CapabilityClass, Exposure};

impl Turn {
    /// Selects the turn's providers, gets them going (a start, a restart),
    /// waits for them as a turn does, and builds what the turn is shown;
    /// audits the choice and the exposure. With `only`, the selected
    /// providers it does not name are left alone and out of the family.
    pub(crate) async fn begin(
        session: Arc<Shared>,
        context: &TurnContext,
        only: Option<&[&str]>,
    ) -> Result<Turn, TurnError> {
        let number = session.next_turn();
        let id = number.to_string();
        let audit = session.audit.for_turn(id.clone());
        let mut turn = Turn {
            number,
            id,
            audit,
            mode: TurnMode::Gateway,
            read_only: false,
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
        if turn.session.is_closed() {
            return Err(turn.cannot_begin(TurnError::SessionClosed));
        }
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(turn.cannot_begin(TurnError::NoRuntime));
        }
        let selection = select(&turn.session.registry, context, &turn.audit);
        turn.read_only = selection.read_only;
        if !selection.gateway {
            turn.audit.emit(AuditEvent::GatewayAbsent {
                reason: "earlier runtime".to_owned(),
            });
            turn.mode = TurnMode::NoGateway;
            turn.shown.text = messages::NO_GATEWAY.to_owned();
            return Ok(turn);
        }
        if !selection.class_served {
            turn.mode = TurnMode::NotServed;
            return Ok(turn);
        }
        let inner = &turn.session;
        let slots: Vec<Arc<Slot>> = selection
            .selected()
            .filter(|id| only.is_none_or(|only| only.contains(id)))
            .filter_map(|id| inner.slot(id))
            .collect();
        for slot in &slots {
            slot.prepare(inner, number, &turn.audit);
        }
        let begun = Instant::now();
        let options = &inner.options;
        futures::future::join_all(
            slots
                .iter()
                .map(|s| s.wait(begun, options.start_timeout(s.entry.timeout))),
        )
        .await;
        let mut family = Vec::with_capacity(slots.len());
        for slot in slots {
            let found = match slot.view(inner) {
                View::Ready(ready) => Found::Ready(ready),
                View::Unavailable(reason) => Found::Unavailable(reason),
                View::Closed => return Err(turn.cannot_begin(TurnError::SessionClosed)),
            };
            family.push((slot, found));
        }
        turn.family = family;
        turn.expose_family();
        Ok(turn)
    }

    /// Records why the turn cannot begin, and says it.
    fn cannot_begin(&self, why: TurnError) -> TurnError {
        let reason = match why {
            TurnError::SessionClosed => "session closed".to_owned(),
            TurnError::NoRuntime => why.to_string(),
        };
        self.audit.emit(AuditEvent::GatewayAbsent { reason });
        why
    }

    /// Admits the ready providers' tools (READ only, for a read-only turn),
    /// names the others unavailable, and audits what the turn was shown.
    fn expose_family(&mut self) {
        let mut capabilities = Vec::new();
        let mut unavailable = Vec::new();
        for (slot, found) in &self.family {
            match found {
                Found::Ready(ready) => {
                    let mut tools = BTreeMap::new();
                    for (index, tool) in ready.tools.iter().enumerate() {
                        if self.read_only && tool.shown.class == CapabilityClass::Write {
                            continue;
                        }
                        let admitted = Admitted {
                            slot: Arc::clone(slot),
                            ready: Arc::clone(ready),
                            index,
                            described: AtomicBool::new(false),
                        };
                        tools.insert(tool.name.clone(), admitted);
                        capabilities.push(tool.shown.clone());
                    }
                    self.admitted.insert(slot.entry.id.clone(), tools);
                }
                Found::Unavailable(reason) => unavailable.push(ShownUnavailable {
                    provider: slot.entry.id.clone(),
                    reason: *reason,
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
}
