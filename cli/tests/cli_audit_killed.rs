//! Issue 45.5 and the torn record: a run killed with SIGKILL at any moment
//! never breaks the trail (its session shows as unended, never as broken),
//! a long failure record is never torn, and two runs at once on one trail
//! keep one whole chain.

mod common;

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::{READ_WRITE_READ, audit_verify, audited_turn, fixture_registry, text};

/// A small generator of kill moments, seeded from the clock; the seed is
/// in every failure message.
struct Moments(u64);

impl Moments {
    fn new() -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64);
        Moments(nanos | 1)
    }

    /// A moment in `0..below`.
    fn next(&mut self, below: Duration) -> Duration {
        // xorshift64
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        below.mul_f64((self.0 >> 11) as f64 / (1u64 << 53) as f64)
    }
}

fn quiet(child: &mut std::process::Command) -> Child {
    child
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("runs")
}

/// How long one whole run of `command` takes here, now.
fn run_length(mut command: std::process::Command) -> Duration {
    let began = Instant::now();
    let status = quiet(&mut command).wait().expect("waits");
    assert!(status.code().is_some(), "the run was killed");
    began.elapsed()
}

/// Kills `child` at `moment` after `began` (or reaps it if it ended).
fn kill_at(mut child: Child, began: Instant, moment: Duration) {
    if let Some(left) = moment.checked_sub(began.elapsed()) {
        std::thread::sleep(left);
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn verify_code(trail: &Path) -> (Option<i32>, String) {
    let out = audit_verify(&[trail], &[]);
    (out.status.code(), text(&out.stdout))
}

#[test]
fn a_turn_killed_at_random_moments_leaves_its_trail_unended_never_broken() {
    let dir = tempfile::tempdir().expect("dir");
    let registry = fixture_registry(dir.path(), &[]);
    let trail = dir.path().join("a.jsonl");
    let length = run_length(audited_turn(&registry, &trail, &READ_WRITE_READ));
    let mut moments = Moments::new();
    let seed = moments.0;
    for run in 0..15 {
        let began = Instant::now();
        let child = quiet(&mut audited_turn(&registry, &trail, &READ_WRITE_READ));
        kill_at(child, began, moments.next(length));
        let (code, said) = verify_code(&trail);
        assert!(
            matches!(code, Some(0 | 1)),
            "run {run} (seed {seed}): verify exited {code:?}:\n{said}"
        );
    }
}

/// The size of `path`, 0 when there is none.
fn size(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// Runs `runs` turns of `registry` into `trail`, each killed the moment
/// its failure record starts to land: the trail grows by more than any
/// other record of the run.
fn kill_as_the_record_lands(registry: &Path, trail: &Path, runs: usize) {
    let list = ["spear-capability list"];
    for run in 0..runs {
        let before = size(trail);
        let mut child = quiet(&mut audited_turn(registry, trail, &list));
        let deadline = Instant::now() + Duration::from_secs(10);
        while size(trail) < before + 4096 && Instant::now() < deadline {
            if child.try_wait().expect("waits").is_some() {
                break;
            }
            std::thread::yield_now();
        }
        let _ = child.kill();
        let _ = child.wait();
        assert!(size(trail) > before, "run {run} wrote nothing");
    }
}

#[test]
fn a_long_failure_record_is_never_torn_by_a_kill() {
    let dir = tempfile::tempdir().expect("dir");
    // The server writes 70 000 bytes to stderr and answers with another
    // protocol version: its failure record carries 64 KiB of stderr.
    let registry = fixture_registry(
        dir.path(),
        &["--stderr-bytes", "70000", "--version", "1999-01-01"],
    );
    // 200 runs, in two lanes of 100, each lane its own trail.
    let trails = [dir.path().join("a.jsonl"), dir.path().join("b.jsonl")];
    std::thread::scope(|lanes| {
        for trail in &trails {
            let registry = &registry;
            lanes.spawn(move || kill_as_the_record_lands(registry, trail, 100));
        }
    });
    let mut failures = 0;
    for trail in &trails {
        let bytes = std::fs::read(trail).expect("reads");
        for (n, line) in bytes.split(|&b| b == b'\n').enumerate() {
            if line.iter().all(|&b| b == b' ') {
                continue;
            }
            let record: serde_json::Value = serde_json::from_slice(line)
                .unwrap_or_else(|e| panic!("{}: line {} is torn ({e})", trail.display(), n + 1));
            failures += usize::from(record["event"] == "provider_failed");
        }
        let (code, said) = verify_code(trail);
        assert!(matches!(code, Some(0 | 1)), "{said}");
    }
    // How many records land whole depends on where the scheduler puts
    // each kill (before the record's write, or after it), which a busy
    // machine moves a lot (53 of 200 seen under load): the test asks only
    // that some landed, so that the records it read for tears exist.
    assert!(failures >= 1, "none of 200 failure records was written");
}

#[test]
fn two_turns_at_once_on_one_trail_keep_one_whole_chain() {
    let dir = tempfile::tempdir().expect("dir");
    let registry = fixture_registry(dir.path(), &[]);
    let trail = dir.path().join("a.jsonl");
    let runs: Vec<Child> = (0..2)
        .map(|_| quiet(&mut audited_turn(&registry, &trail, &READ_WRITE_READ)))
        .collect();
    for mut run in runs {
        assert_eq!(run.wait().expect("waits").code(), Some(0));
    }
    let (code, said) = verify_code(&trail);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("2 sessions, 2 WRITEs"), "{said}");
}
