//! Providers in a session: started once and reused, concurrently and under
//! their timeouts; failures left out, recorded, told once, named later.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{Bench, begin, implementation, shown_ids};
use serde_json::json;
use spear_capabilities::internals::session::TIMEOUT_GRACE;
use spear_capabilities::{
    AnswerStatus, Auto, Notice, Session, SessionOptions, UnavailableReason, exposure::Exposure,
};
use spear_testkit::{MockFailure, ours};

fn two() -> Bench {
    let b = Bench::new(json!([
        {"id": "notes", "scope": "global", "read": ["get_note"], "timeout": 5},
        {"id": "mail", "scope": "global", "read": ["search"], "timeout": 5}
    ]));
    b.provider("notes")
        .add_simple_tool("get_note", "Read one note.", &["id"]);
    b.provider("mail")
        .add_simple_tool("search", "Search mail.", &["q"]);
    b
}

#[tokio::test]
async fn providers_start_once_per_session_and_are_reused() {
    let b = two();
    let s = b.session(Arc::new(Auto));
    let t1 = begin(&s).await;
    let t2 = begin(&s).await;
    assert_eq!(t1.shown().text, t2.shown().text);
    let mut connects = b.connector.connects();
    connects.sort();
    assert_eq!(connects, ["mail", "notes"]);
    assert_eq!(b.sink.named("provider_started").len(), 2);
    // A new session starts its own.
    b.session(Arc::new(Auto))
        .begin_turn(implementation())
        .await
        .expect("the turn begins");
    assert_eq!(b.connector.connects().len(), 4);
}

#[tokio::test(start_paused = true)]
async fn providers_start_concurrently_and_a_slow_one_keeps_starting_beyond_the_turn() {
    let b = Bench::new(json!([
        {"id": "a", "scope": "global", "timeout": 3},
        {"id": "b", "scope": "global", "timeout": 3},
        {"id": "slow", "scope": "global", "timeout": 2}
    ]));
    for id in ["a", "b", "slow"] {
        b.provider(id).add_simple_tool("t", "x", &[]);
    }
    b.connector.start_latency("a", Duration::from_secs(1));
    b.connector.start_latency("b", Duration::from_secs(1));
    b.connector.start_latency("slow", Duration::from_secs(600));
    let began = tokio::time::Instant::now();
    let s = b.session(Arc::new(Auto));
    let t = begin(&s).await;
    let took = began.elapsed();
    assert!(
        took < Duration::from_secs(4),
        "bounded by the slow one's timeout plus grace: {took:?}"
    );
    assert_eq!(shown_ids(&t), ["a/t", "b/t"]);
    assert_eq!(t.shown().unavailable[0].provider, "slow");
    assert_eq!(t.shown().unavailable[0].reason, UnavailableReason::Starting);
    // It keeps starting in the background up to its start budget, and only
    // then is it a failure.
    let budget = spear_capabilities::internals::session::start_budget(Duration::from_secs(2));
    assert!(budget > Duration::from_secs(4));
    assert!(matches!(
        s.provider_states()[2].1,
        spear_capabilities::ProviderState::Starting { .. }
    ));
    tokio::time::sleep(budget).await;
    let failed = b.sink.named("provider_failed");
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["reason"], "timed_out");
    assert!(matches!(
        s.provider_states()[2].1,
        spear_capabilities::ProviderState::Unavailable {
            reason: UnavailableReason::TimedOut,
            ..
        }
    ));
}

#[tokio::test]
async fn a_provider_that_cannot_start_is_named_unavailable_and_reported_once() {
    let b = two();
    b.connector.fail_start("mail", MockFailure::Start);
    let s = b.session(Arc::new(Auto));
    let t1 = begin(&s).await;
    let notices = s.take_notices();
    assert_eq!(
        notices,
        [Notice::Unavailable {
            provider: "mail".into(),
            reason: UnavailableReason::DidNotStart
        }]
    );
    assert_eq!(
        notices[0].text(),
        "External capability provider `mail` is unavailable (did not start); the session goes on without it."
    );
    assert!(t1.shown().text.ends_with(
        "Provider `mail` is unavailable (did not start): none of its capabilities can be called in this turn.\n"
    ), "{}", t1.shown().text);
    assert_eq!(
        t1.shown().capabilities.len(),
        1,
        "the task carries on with the others"
    );
    let t2 = begin(&s).await;
    assert!(s.take_notices().is_empty(), "the session says so once");
    assert!(
        t2.shown()
            .text
            .contains("Provider `mail` is unavailable (did not start)")
    );
    for line in [
        "spear-capability describe mail/search",
        "spear-capability invoke mail/search '{}'",
        "spear-capability invoke mail/whatever '{}'",
    ] {
        let a = ours(&t2, line).await;
        assert_eq!(a.status, AnswerStatus::Unavailable, "{line}");
        assert!(
            a.text
                .contains("provider `mail` is unavailable (did not start)"),
            "{}",
            a.text
        );
    }
    let failed = b.sink.named("provider_failed");
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["reason"], "did_not_start");
    assert!(
        failed[0]["message"]
            .as_str()
            .expect("text")
            .contains("mock stderr"),
        "the full reason goes to the audit trail"
    );
    // What the turn sees carries no command, stderr or server detail.
    assert!(!t2.shown().text.contains("mock"));
}

#[tokio::test]
async fn a_provider_failing_mid_call_is_left_out_of_its_turn_and_back_for_the_next() {
    let b = two();
    let notes = b.provider("notes");
    notes.add_simple_tool("get_note", "Read one note.", &["id"]);
    notes.fail_call("get_note", MockFailure::Crash);
    let s = b.session(Arc::new(Auto));
    let t = begin(&s).await;
    let a = ours(&t, "spear-capability invoke notes/get_note '{}'").await;
    assert_eq!(a.status, AnswerStatus::Unavailable);
    assert_eq!(
        a.text,
        "`notes/get_note` is unavailable: provider `notes` is unavailable (crashed) and none of its capabilities can be called in this turn."
    );
    assert_eq!(s.take_notices().len(), 1);
    let again = ours(&t, "spear-capability invoke notes/get_note '{}'").await;
    assert_eq!(again.status, AnswerStatus::Unavailable);
    assert_eq!(
        notes.calls().len(),
        1,
        "no second call reaches a failed provider"
    );
    // The failed provider is shut down.
    tokio::task::yield_now().await;
    assert_eq!(notes.shutdown_count(), 1);
    // A crash may not repeat: the next turn starts it again and has it.
    let next = begin(&s).await;
    assert!(
        next.shown().text.contains("notes/get_note (READ)"),
        "{}",
        next.shown().text
    );
    assert_eq!(b.sink.named("provider_restarted").len(), 1);
    let notices = s.take_notices();
    assert_eq!(
        notices[..],
        [Notice::Available {
            provider: "notes".into()
        }]
    );
    assert_eq!(
        notices[0].text(),
        "External capability provider `notes` is available now."
    );
    assert_eq!(notes.calls().len(), 1, "the failed call is not replayed");
    let m = ours(
        &next,
        "spear-capability invoke mail/search '{\"q\": \"x\"}'",
    )
    .await;
    assert_eq!(m.status, AnswerStatus::Ok);
}

#[tokio::test(start_paused = true)]
async fn a_call_that_outlives_its_timeout_makes_the_provider_unavailable() {
    let b = two();
    let notes = b.provider("notes");
    notes
        .add_simple_tool("get_note", "Read one note.", &["id"])
        .tool_latency("get_note", Duration::from_secs(3600));
    let s = b.session(Arc::new(Auto));
    let t = begin(&s).await;
    let began = tokio::time::Instant::now();
    let a = ours(&t, "spear-capability invoke notes/get_note '{}'").await;
    assert_eq!(a.status, AnswerStatus::Unavailable);
    // The call and its limit are named, not only the provider (issue 33.5).
    assert!(
        a.text.starts_with(
            "`notes/get_note` took longer than its 5 s timeout; provider `notes` is unavailable (timed out)"
        ),
        "{}",
        a.text
    );
    // The entry's timeout is 5 s: the gateway answers by then and the
    // grace, whatever the provider does.
    assert_eq!(began.elapsed(), Duration::from_secs(5) + TIMEOUT_GRACE);
}

#[tokio::test]
async fn a_listing_failure_leaves_the_provider_out_and_stops_it() {
    let b = two();
    let mail = b.provider("mail");
    mail.fail_list(MockFailure::Protocol);
    let s = b.session(Arc::new(Auto));
    let t = begin(&s).await;
    assert_eq!(
        t.shown().unavailable[0].reason,
        UnavailableReason::ProtocolError
    );
    assert_eq!(mail.shutdown_count(), 1);
}

#[tokio::test]
async fn unusable_tools_are_left_out_and_recorded_while_the_rest_stay() {
    let b = Bench::new(json!([{"id": "p", "scope": "global"}]));
    b.provider("p")
        .add_simple_tool("good", "fine", &[])
        .add_simple_tool("twice", "one", &[])
        .add_simple_tool("twice", "the other", &[])
        .add_simple_tool("has space", "bad name", &[])
        .add_tool(spear_capabilities::ToolSpec::new(
            "remote",
            json!({"type": "object", "properties": {"a": {"$ref": "http://127.0.0.1:9/x"}}}),
        ))
        .add_tool(spear_capabilities::ToolSpec::new(
            "stringy",
            json!({"type": "string"}),
        ))
        .add_rejected("weird", "said by the provider");
    let t = b
        .session(Arc::new(Auto))
        .begin_turn(implementation())
        .await
        .expect("the turn begins");
    let ids: Vec<_> = t
        .shown()
        .capabilities
        .iter()
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(ids, ["p/good"]);
    let rejected: Vec<_> = b
        .sink
        .named("tool_rejected")
        .iter()
        .map(|r| r["tool"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        rejected,
        ["weird", "twice", "twice", "has space", "remote", "stringy"]
    );
    // Every copy of a duplicated name is left out: a call by that name
    // could reach either.
    assert_eq!(
        b.sink.named("tool_rejected")[1]["reason"],
        "the provider offers 2 tools of this name"
    );
    assert_eq!(b.sink.named("provider_started")[0]["rejected_tools"], 6);
}

#[tokio::test]
async fn a_read_name_the_provider_does_not_offer_is_recorded_and_changes_nothing() {
    let b = Bench::new(json!([
        {"id": "time", "scope": "global", "read": ["convert_tim", "get_time"]}
    ]));
    b.provider("time")
        .add_simple_tool("convert_time", "Convert.", &[])
        .add_simple_tool("get_time", "Now.", &[]);
    let t = b
        .session(Arc::new(Auto))
        .begin_turn(implementation())
        .await
        .expect("the turn begins");
    let class = |id: &str| {
        t.shown()
            .capabilities
            .iter()
            .find(|c| c.id == id)
            .map(|c| c.class)
    };
    // The misspelling leaves the tool it meant a WRITE, as the registry
    // says: recorded for the operator, never guessed at.
    assert_eq!(
        class("time/convert_time"),
        Some(spear_capabilities::exposure::CapabilityClass::Write)
    );
    assert_eq!(
        class("time/get_time"),
        Some(spear_capabilities::exposure::CapabilityClass::Read)
    );
    let events = b.sink.named("read_not_offered");
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["provider"], "time");
    assert_eq!(events[0]["tool"], "convert_tim");
    // Recorded before the start it belongs to is.
    let names = b.sink.names();
    let at = |n: &str| names.iter().position(|e| e == n);
    assert!(at("read_not_offered") < at("provider_started"), "{names:?}");
}

#[tokio::test]
async fn closing_the_session_shuts_every_started_provider_down() {
    let b = two();
    let (notes, mail) = (b.provider("notes"), b.provider("mail"));
    notes.add_simple_tool("get_note", "x", &[]);
    mail.add_simple_tool("search", "x", &[]);
    let s = b.session(Arc::new(Auto));
    let t = begin(&s).await;
    assert_eq!(t.shown().exposure, Exposure::Whole);
    s.close().await;
    assert_eq!((notes.shutdown_count(), mail.shutdown_count()), (1, 1));
    assert_eq!(b.sink.named("provider_stopped").len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_of_different_sessions_run_at_once() {
    let b = two();
    let sessions: Vec<_> = (0..4).map(|_| b.session(Arc::new(Auto))).collect();
    let turns = futures::future::join_all(sessions.iter().map(begin)).await;
    let answers = futures::future::join_all(
        turns
            .iter()
            .map(|t| t.answer("spear-capability invoke mail/search '{\"q\": \"z\"}'")),
    )
    .await;
    assert!(
        answers
            .iter()
            .all(|a| a.as_ref().is_some_and(|a| a.status == AnswerStatus::Ok))
    );
}

/// DESIGN: turns of different sessions may run at once: four sessions'
/// calls of 2 s each are answered together, in 2 s rather than 8.
#[tokio::test(start_paused = true)]
async fn calls_of_different_sessions_are_answered_together_not_in_turn() {
    let b = two();
    b.provider("mail")
        .add_simple_tool("search", "Search mail.", &["q"])
        .tool_latency("search", Duration::from_secs(2));
    let sessions: Vec<_> = (0..4).map(|_| b.session(Arc::new(Auto))).collect();
    let turns = futures::future::join_all(sessions.iter().map(begin)).await;
    let began = tokio::time::Instant::now();
    let answers = futures::future::join_all(
        turns
            .iter()
            .map(|t| ours(t, "spear-capability invoke mail/search '{\"q\": \"z\"}'")),
    )
    .await;
    assert!(
        answers.iter().all(|a| a.status == AnswerStatus::Ok),
        "{answers:?}"
    );
    assert_eq!(began.elapsed(), Duration::from_secs(2));
}

#[tokio::test]
async fn the_operator_sees_each_providers_state_with_the_full_reason() {
    let b = two();
    b.connector.fail_start("mail", MockFailure::Start);
    let s = b.session(Arc::new(Auto));
    assert!(
        s.provider_states().is_empty(),
        "nothing started before a turn"
    );
    begin(&s).await;
    let states = s.provider_states();
    assert_eq!(states.len(), 2);
    assert_eq!(states[0].0, "notes");
    assert!(matches!(
        states[0].1,
        spear_capabilities::ProviderState::Ready { tools: 1, .. }
    ));
    match &states[1].1 {
        spear_capabilities::ProviderState::Unavailable { reason, message } => {
            assert_eq!(*reason, UnavailableReason::DidNotStart);
            assert!(message.contains("mock stderr"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

/// Issue 33.3: an operator's start wait lets a start that outlasts its
/// entry's timeout (and its default start budget) finish, and the turn
/// waits for it; without one, the entry's timeout rules as the spec has it.
#[tokio::test(start_paused = true)]
async fn a_start_wait_lets_a_slow_start_finish_and_the_turn_waits_for_it() {
    let b = Bench::new(json!([{"id": "cold", "scope": "global", "timeout": 2}]));
    b.provider("cold").add_simple_tool("t", "x", &[]);
    // Longer than the default start budget of a 2 s timeout (20 s).
    b.connector.start_latency("cold", Duration::from_secs(30));
    assert!(
        spear_capabilities::internals::session::start_budget(Duration::from_secs(2))
            < Duration::from_secs(30)
    );
    let s = Session::open(
        Arc::clone(&b.registry),
        SessionOptions::new("s1", Arc::new(Auto))
            .with_audit(b.audit.clone())
            .with_connector(b.connector.clone())
            .with_start_wait(Duration::from_secs(60)),
    );
    let began = tokio::time::Instant::now();
    let t = begin(&s).await;
    assert_eq!(
        began.elapsed(),
        Duration::from_secs(30),
        "waited for the start"
    );
    assert_eq!(shown_ids(&t), ["cold/t"]);
    assert_eq!(b.connector.start_timeouts(), [Duration::from_secs(60)]);
    assert!(s.take_notices().is_empty(), "never said unavailable");
    s.close().await;
}

#[tokio::test(start_paused = true)]
async fn without_a_start_wait_a_start_gets_its_entrys_timeout() {
    let b = Bench::new(json!([{"id": "cold", "scope": "global", "timeout": 2}]));
    b.provider("cold").add_simple_tool("t", "x", &[]);
    b.connector.start_latency("cold", Duration::from_secs(30));
    let s = b.session(Arc::new(Auto));
    let began = tokio::time::Instant::now();
    let t = begin(&s).await;
    assert_eq!(began.elapsed(), Duration::from_secs(2) + TIMEOUT_GRACE);
    assert_eq!(t.shown().unavailable[0].reason, UnavailableReason::Starting);
    assert_eq!(b.connector.start_timeouts(), [Duration::from_secs(2)]);
    s.close().await;
}

/// Issue 33.3: a turn begun for one provider starts that one only; the
/// selection is still audited whole, and the others are neither offered
/// nor named unavailable.
#[tokio::test]
async fn a_turn_begun_for_one_provider_starts_only_that_one() {
    let b = Bench::new(json!([
        {"id": "a", "scope": "global"},
        {"id": "b", "scope": "global"}
    ]));
    for id in ["a", "b"] {
        b.provider(id).add_simple_tool("t", "x", &[]);
    }
    let s = b.session(Arc::new(Auto));
    let t = s
        .begin_turn_starting_only(implementation(), &["b"])
        .await
        .expect("the turn begins");
    assert_eq!(b.connector.connects(), ["b"]);
    assert_eq!(shown_ids(&t), ["b/t"]);
    assert!(t.shown().unavailable.is_empty());
    let selected = b.sink.named("capability_family_selected");
    let candidates: Vec<(&str, bool)> = selected[0]["candidates"]
        .as_array()
        .expect("candidates")
        .iter()
        .map(|c| (c["provider"].as_str().unwrap_or(""), c["selected"] == true))
        .collect();
    assert_eq!(candidates, [("a", true), ("b", true)]);
    assert_eq!(s.provider_states().len(), 1, "only `b` has a state");
    // A later turn of the same session starts the rest as usual.
    let all = begin(&s).await;
    assert_eq!(all.shown().capabilities.len(), 2);
    assert_eq!(b.connector.connects(), ["b", "a"]);
    s.close().await;
}

/// Issue 35.2: a provider that declares it offers no tools is ready with
/// no capabilities, and said to be one (the operator's state, the
/// session's notice once), not an empty family in silence.
#[tokio::test]
async fn a_provider_that_declares_no_tools_is_said_to_have_no_capabilities() {
    let b = Bench::new(json!([
        {"id": "bare", "scope": "global"},
        {"id": "notes", "scope": "global"}
    ]));
    b.provider("bare").declare_no_tools();
    b.provider("notes").add_simple_tool("t", "x", &[]);
    let s = b.session(Arc::new(Auto));
    let t = begin(&s).await;
    assert_eq!(shown_ids(&t), ["notes/t"]);
    assert!(t.shown().unavailable.is_empty());
    assert!(matches!(
        s.provider_states()[0].1,
        spear_capabilities::ProviderState::Ready {
            tools: 0,
            declares_no_tools: true,
            ..
        }
    ));
    let notices = s.take_notices();
    assert_eq!(
        notices,
        [Notice::NoTools {
            provider: "bare".into()
        }]
    );
    assert_eq!(
        notices[0].text(),
        "External capability provider `bare` declares no tools: it has no capabilities to offer."
    );
    let again = begin(&s).await;
    assert_eq!(shown_ids(&again), ["notes/t"]);
    assert!(s.take_notices().is_empty(), "said once");
    s.close().await;
}
