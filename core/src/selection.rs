//! Which providers reach a turn, and why the others do not.
//!
//! A provider is a candidate like a rule: it reaches a turn only when it is
//! enabled, its scope covers the turn and its `tasks` serve the turn's class.
//! A turn in an unregistered tree gets none, `global` included; some task
//! kinds and the earlier runtime get none, whatever the entries say. Every
//! decision is one `capability_family_selected` audit record.
//!
//! It decides from the registry alone: it starts nothing and knows nothing
//! of a provider's state ([`crate::session`] does).

use std::path::PathBuf;

use crate::audit::{Audit, AuditEvent, CandidateRecord};
use crate::names::named;
use crate::registry::{Registry, RequestClass};

named! {
    /// What a turn is doing.
    #[non_exhaustive]
    pub enum TurnKind {
        /// An implementation turn (class `implementation`).
        Implementation = "implementation",
        /// The implementation pass of a MIXED change (class `mixed`).
        Mixed = "mixed",
        /// A general question (class `general`, READ capabilities only).
        General = "general",
        /// A question about a bound standard: never served.
        StandardQuestion = "standard-question",
        /// The normative pre-pass: never served.
        NormativePrepass = "normative-prepass",
        /// The compliance check: never served.
        ComplianceCheck = "compliance-check",
    }
}

impl TurnKind {
    /// The request class an entry's `tasks` must list, or `None` for the
    /// kinds that external capabilities never reach.
    pub fn class(self) -> Option<RequestClass> {
        match self {
            TurnKind::Implementation => Some(RequestClass::Implementation),
            TurnKind::Mixed => Some(RequestClass::Mixed),
            TurnKind::General => Some(RequestClass::General),
            TurnKind::StandardQuestion | TurnKind::NormativePrepass | TurnKind::ComplianceCheck => {
                None
            }
        }
    }
}

named! {
    /// The runtime a turn runs on.
    #[derive(Default)]
    #[non_exhaustive]
    pub enum Runtime {
        /// The current runtime, which has the capability gateway.
        #[default]
        Current = "current",
        /// SPEAR's earlier runtime (a change in a standard-bound session that
        /// does not concern the standard): it has no capability gateway.
        Earlier = "earlier",
    }
}

/// What SPEAR knows of a turn when choosing its providers.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TurnContext {
    /// The registered project the turn's tree belongs to; `None` for an
    /// unregistered tree.
    pub project: Option<String>,
    /// The families the project belongs to.
    pub families: Vec<String>,
    /// The folder the turn works in.
    pub tree: PathBuf,
    /// What the turn is doing.
    pub task: TurnKind,
    /// The runtime it runs on.
    pub runtime: Runtime,
}

impl TurnContext {
    /// A turn in an unregistered `tree` doing `task` on the current runtime.
    pub fn new(tree: impl Into<PathBuf>, task: TurnKind) -> Self {
        Self {
            project: None,
            families: Vec::new(),
            tree: tree.into(),
            task,
            runtime: Runtime::Current,
        }
    }

    /// Places the turn in a registered project.
    pub fn with_project(mut self, project: impl Into<String>) -> Self {
        self.project = Some(project.into());
        self
    }

    /// Sets the project's families.
    pub fn with_families<I, S>(mut self, families: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.families = families.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the runtime.
    pub fn with_runtime(mut self, runtime: Runtime) -> Self {
        self.runtime = runtime;
        self
    }
}

named! {
    /// The decision about one candidate.
    #[non_exhaustive]
    pub enum Decision {
        /// It reaches the turn.
        Selected = "selected",
        /// The turn runs on the earlier runtime, which has no gateway.
        EarlierRuntime = "earlier_runtime",
        /// The turn's kind is never served external capabilities.
        ClassNeverServed = "class_never_served",
        /// The turn's tree is not a registered project.
        UnregisteredTree = "unregistered_tree",
        /// The entry has `"enabled": false`.
        Disabled = "disabled",
        /// The entry has no scope, so it applies nowhere.
        NoScope = "no_scope",
        /// The entry's scope does not cover the turn.
        ScopeDoesNotCover = "scope_does_not_cover",
        /// The entry's `tasks` do not list the turn's class.
        TaskNotServed = "task_not_served",
    }
}

impl Decision {
    /// A short phrase for people.
    pub fn phrase(self) -> &'static str {
        match self {
            Decision::Selected => "selected",
            Decision::EarlierRuntime => "the earlier runtime has no capability gateway",
            Decision::ClassNeverServed => {
                "this kind of turn is never offered external capabilities"
            }
            Decision::UnregisteredTree => "the turn's tree is not a registered project",
            Decision::Disabled => "disabled",
            Decision::NoScope => "no scope, so it applies nowhere",
            Decision::ScopeDoesNotCover => "its scope does not cover the turn",
            Decision::TaskNotServed => "its tasks do not include the turn's class",
        }
    }
}

/// One registered provider and the decision about it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Candidate {
    /// The provider's id.
    pub provider: String,
    /// The decision.
    pub decision: Decision,
}

/// The outcome of selection for one turn.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Selection {
    /// Every registered provider, in registry order, with its decision.
    pub candidates: Vec<Candidate>,
    /// The turn may use READ capabilities only (a general question).
    pub read_only: bool,
    /// Whether the turn has a capability gateway at all.
    pub gateway: bool,
    /// Whether the turn's kind is ever served external capabilities.
    pub class_served: bool,
}

impl Selection {
    /// The ids of the providers that reach the turn, in registry order.
    pub fn selected(&self) -> impl Iterator<Item = &str> {
        self.candidates
            .iter()
            .filter(|c| c.decision == Decision::Selected)
            .map(|c| c.provider.as_str())
    }
}

/// Chooses the providers of `registry` that reach `turn`, and records the
/// decision in `audit` as one `capability_family_selected` record.
pub fn select(registry: &Registry, turn: &TurnContext, audit: &Audit) -> Selection {
    let class = turn.task.class();
    let candidates: Vec<Candidate> = registry
        .entries()
        .iter()
        .map(|entry| {
            let decision = if turn.runtime == Runtime::Earlier {
                Decision::EarlierRuntime
            } else if class.is_none() {
                Decision::ClassNeverServed
            } else if turn.project.is_none() {
                Decision::UnregisteredTree
            } else if !entry.enabled {
                Decision::Disabled
            } else if entry.scope.is_none() {
                Decision::NoScope
            } else if !entry.scope.as_ref().is_some_and(|s| {
                s.covers(
                    turn.project.as_deref().unwrap_or_default(),
                    &turn.families,
                    &turn.tree,
                )
            }) {
                Decision::ScopeDoesNotCover
            } else if !class.is_some_and(|c| entry.tasks.contains(&c)) {
                Decision::TaskNotServed
            } else {
                Decision::Selected
            };
            Candidate {
                provider: entry.id.clone(),
                decision,
            }
        })
        .collect();
    let selection = Selection {
        candidates,
        read_only: class == Some(RequestClass::General),
        gateway: turn.runtime == Runtime::Current,
        class_served: class.is_some(),
    };
    audit.emit(AuditEvent::CapabilityFamilySelected {
        project: turn.project.clone(),
        task: turn.task,
        runtime: turn.runtime,
        read_only: selection.read_only,
        candidates: selection
            .candidates
            .iter()
            .map(|c| CandidateRecord {
                provider: c.provider.clone(),
                selected: c.decision == Decision::Selected,
                reason: c.decision,
            })
            .collect(),
    });
    selection
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::Name;

    #[test]
    fn names_are_the_serialised_names() {
        for &k in TurnKind::ALL {
            assert_eq!(serde_json::to_value(k).ok(), Some(k.as_str().into()));
            assert_eq!(TurnKind::from_name(k.as_str()), Some(k));
        }
        for &r in Runtime::ALL {
            assert_eq!(serde_json::to_value(r).ok(), Some(r.as_str().into()));
            assert_eq!(Runtime::from_name(r.as_str()), Some(r));
        }
        assert_eq!(TurnKind::from_name("chat"), None);
        assert_eq!(TurnKind::StandardQuestion.to_string(), "standard-question");
    }
}
