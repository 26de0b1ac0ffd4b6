//! Which providers reach a turn (3.6.2) and the audit record of the decision.

mod common;

use serde_json::json;
use spear_capabilities::{
    Registry, Runtime, TurnContext, TurnKind,
    selection::{Decision, select},
};
use spear_testkit::RecordingSink;

/// One registry of providers, one per way of being scoped.
fn registry() -> Registry {
    let r = common::registry(json!([
        {"id": "everywhere", "scope": "global"},
        {"id": "fw-only", "scope": "corpus fw, fw2"},
        {"id": "embedded", "scope": "family embedded"},
        {"id": "tree", "scope": "path /srv/fw"},
        {"id": "nowhere"},
        {"id": "off", "scope": "global", "enabled": false},
        {"id": "asks", "scope": "global", "tasks": ["general"]},
        {"id": "mixed-only", "scope": "global", "tasks": ["mixed"]}
    ]));
    (*r).clone()
}

fn decisions(turn: &TurnContext) -> Vec<(String, Decision)> {
    select(&registry(), turn, &RecordingSink::new().1)
        .candidates
        .into_iter()
        .map(|c| (c.provider, c.decision))
        .collect()
}

fn selected(turn: &TurnContext) -> Vec<String> {
    decisions(turn)
        .into_iter()
        .filter(|(_, d)| *d == Decision::Selected)
        .map(|(p, _)| p)
        .collect()
}

fn fw(task: TurnKind) -> TurnContext {
    TurnContext::new("/srv/fw/src", task)
        .with_project("fw")
        .with_families(["embedded"])
}

#[test]
fn an_implementation_turn_gets_every_provider_whose_scope_and_tasks_cover_it() {
    assert_eq!(
        selected(&fw(TurnKind::Implementation)),
        ["everywhere", "fw-only", "embedded", "tree"]
    );
}

#[test]
fn a_provider_for_one_project_never_reaches_another() {
    let web = TurnContext::new("/srv/web", TurnKind::Implementation).with_project("web");
    assert_eq!(selected(&web), ["everywhere"]);
    let d = decisions(&web);
    assert!(d.contains(&("fw-only".into(), Decision::ScopeDoesNotCover)));
    assert!(d.contains(&("embedded".into(), Decision::ScopeDoesNotCover)));
    assert!(d.contains(&("tree".into(), Decision::ScopeDoesNotCover)));
}

#[test]
fn an_unregistered_tree_inherits_none_not_even_global() {
    let stray = TurnContext::new("/srv/fw/src", TurnKind::Implementation);
    let d = decisions(&stray);
    assert!(
        d.iter().all(|(_, d)| *d == Decision::UnregisteredTree),
        "{d:?}"
    );
}

#[test]
fn without_a_scope_a_provider_applies_nowhere() {
    assert!(
        decisions(&fw(TurnKind::Implementation)).contains(&("nowhere".into(), Decision::NoScope))
    );
}

#[test]
fn a_disabled_entry_is_kept_but_not_used() {
    assert!(decisions(&fw(TurnKind::Implementation)).contains(&("off".into(), Decision::Disabled)));
}

#[test]
fn tasks_decide_which_request_classes_a_provider_serves() {
    // Default tasks are implementation and mixed.
    assert_eq!(
        selected(&fw(TurnKind::Mixed)),
        ["everywhere", "fw-only", "embedded", "tree", "mixed-only"]
    );
    assert_eq!(selected(&fw(TurnKind::General)), ["asks"]);
    assert!(
        decisions(&fw(TurnKind::General)).contains(&("everywhere".into(), Decision::TaskNotServed))
    );
    assert!(
        decisions(&fw(TurnKind::Implementation))
            .contains(&("asks".into(), Decision::TaskNotServed))
    );
}

#[test]
fn general_questions_are_read_only_and_the_others_are_not() {
    let audit = RecordingSink::new().1;
    assert!(select(&registry(), &fw(TurnKind::General), &audit).read_only);
    assert!(!select(&registry(), &fw(TurnKind::Implementation), &audit).read_only);
    assert!(!select(&registry(), &fw(TurnKind::Mixed), &audit).read_only);
}

#[test]
fn standard_questions_the_prepass_and_the_compliance_check_get_nothing() {
    for task in [
        TurnKind::StandardQuestion,
        TurnKind::NormativePrepass,
        TurnKind::ComplianceCheck,
    ] {
        let s = select(&registry(), &fw(task), &RecordingSink::new().1);
        assert!(!s.class_served);
        assert!(
            s.candidates
                .iter()
                .all(|c| c.decision == Decision::ClassNeverServed),
            "{task:?}"
        );
    }
}

#[test]
fn the_earlier_runtime_has_no_gateway() {
    let s = select(
        &registry(),
        &fw(TurnKind::Implementation).with_runtime(Runtime::Earlier),
        &RecordingSink::new().1,
    );
    assert!(!s.gateway);
    assert!(
        s.candidates
            .iter()
            .all(|c| c.decision == Decision::EarlierRuntime)
    );
}

#[test]
fn a_path_scope_covers_the_folder_and_below_only() {
    let at = |tree: &str| TurnContext::new(tree, TurnKind::Implementation).with_project("other");
    assert!(selected(&at("/srv/fw")).contains(&"tree".to_owned()));
    assert!(selected(&at("/srv/fw/a/b")).contains(&"tree".to_owned()));
    assert!(!selected(&at("/srv/fwx")).contains(&"tree".to_owned()));
    assert!(!selected(&at("/srv")).contains(&"tree".to_owned()));
}

#[test]
fn the_decision_is_one_audit_record_with_every_candidate_and_why() {
    let (sink, audit) = RecordingSink::new();
    select(
        &registry(),
        &fw(TurnKind::General),
        &audit.for_session("s").for_turn("t1"),
    );
    assert_eq!(sink.names(), ["capability_family_selected"]);
    let rec = &sink.json()[0];
    assert_eq!(rec["session"], "s");
    assert_eq!(rec["turn"], "t1");
    assert_eq!(rec["project"], "fw");
    assert_eq!(rec["task"], "general");
    assert_eq!(rec["runtime"], "current");
    assert_eq!(rec["read_only"], true);
    assert_eq!(rec["candidates"].as_array().map(Vec::len), Some(8));
    assert_eq!(
        rec["candidates"][6],
        json!({"provider": "asks", "selected": true, "reason": "selected"})
    );
    assert_eq!(
        rec["candidates"][0],
        json!({"provider": "everywhere", "selected": false, "reason": "task_not_served"})
    );
}
