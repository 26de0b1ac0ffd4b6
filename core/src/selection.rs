//! Which providers reach a turn, and why the others do not.
//!
//! A provider is a candidate like a rule: it reaches a turn only when it is
//! enabled, its scope covers the turn and its `tasks` serve the turn's class.
//! A turn in an unregistered tree gets none, `global` included; some task
//! kinds and the earlier runtime get none, whatever the entries say. Every
//! decision is one `capability_family_selected` audit record.
//!
//! It decides from the registry alone: it starts nothing and knows nothing
//! of a provider's state (a [`crate::Session`] does).

use std::path::PathBuf;

use crate::audit::{Audit, AuditEvent, CandidateRecord};
use crate::registry::Registry;
use crate::vocabulary::RequestClass;

pub use crate::vocabulary::{Decision, Runtime, TurnKind};

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
