//! A session whose providers were started on one runtime, used on another
//! after the first shut down: the providers' I/O tasks are gone with it, so
//! they are failed at once, shown unavailable, and their servers reaped;
//! no call waits for its timeout, and the next turn starts them again on the
//! runtime of the moment. Public API only, as an embedder sees it.

mod gateway;

use std::time::{Duration, Instant};

use gateway::{bench, fixture, invoke};
use serde_json::json;
use spear_capabilities::{AnswerStatus, ProviderState, UnavailableReason};
use spear_testkit::procfs;

fn runtime_a() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime A")
}

fn runtime_b() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime B")
}

#[test]
fn a_provider_whose_runtime_shut_down_fails_at_once_and_is_reaped() {
    let pid_dir = tempfile::tempdir().expect("tempdir");
    let pid_file = pid_dir.path().join("pid");
    let timeout = 5.0;
    let b = bench(
        fixture(&["--pid-file", &pid_file.display().to_string()]),
        timeout,
    );
    let a = runtime_a();
    let turn = a.block_on(async {
        let turn = b.turn().await;
        let answer = invoke(&turn, "hostile/echo", json!({"text": "on A"})).await;
        assert_eq!(answer.status, AnswerStatus::Ok, "{}", answer.text);
        turn
    });
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .expect("pid file")
        .trim()
        .parse()
        .expect("a pid");
    drop(a);
    // Failed when the runtime shut down, before any turn or call since.
    let states = b.session.provider_states();
    assert!(
        !states.is_empty()
            && states.iter().all(|(_, s)| matches!(
                s,
                ProviderState::Unavailable {
                    reason: UnavailableReason::Crashed,
                    ..
                }
            )),
        "{states:?}"
    );

    let b_rt = runtime_b();
    b_rt.block_on(async {
        let started = Instant::now();
        let answer = invoke(&turn, "hostile/echo", json!({"text": "on B"})).await;
        let took = started.elapsed();
        eprintln!("figures: the call on runtime B answered in {took:?}");
        assert_ne!(answer.status, AnswerStatus::Ok, "{}", answer.text);
        // At once, not at the provider's timeout (plus the gateway's grace).
        assert!(took < Duration::from_secs(2), "took {took:?}");
        let states = b.session.provider_states();
        let hostile = states
            .iter()
            .find(|(id, _)| id == "hostile")
            .map(|(_, s)| s.clone());
        match hostile {
            Some(ProviderState::Unavailable { reason, message }) => {
                assert_eq!(reason, UnavailableReason::Crashed, "{message}");
                assert!(
                    message.contains("the runtime that ran it has shut down"),
                    "{message}"
                );
            }
            other => panic!("hostile is {other:?}"),
        }
        // The next turn starts it again, on the runtime of the moment.
        let next = b.turn().await;
        let again = invoke(&next, "hostile/echo", json!({"text": "back on B"})).await;
        assert_eq!(again.status, AnswerStatus::Ok, "{}", again.text);
        let left = procfs::wait_group_gone(pid, 10);
        assert!(left.is_empty(), "still running: {left:?}");
        // Reaped, not left a zombie.
        let deadline = Instant::now() + Duration::from_secs(10);
        while procfs::stat(pid).is_some() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(procfs::stat(pid), None, "the server was not reaped");
        b.session.close().await;
    });
}
