//! Issue 44, the registry file kept like a database, through the built
//! binary: one reading of every file (a repeated key refused where it is,
//! only a regular file, bounded, a byte-order mark accepted), and one
//! writer at a time whose write is whole or absent and keeps the file's
//! owner, mode and links.

mod common;

use common::{CLI, cli, listing, registry, text, utf8 as s};

use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The CLI started with `args`, stdin empty, output captured.
fn spawn(args: &[&str]) -> Child {
    Command::new(CLI)
        .args(args)
        .env_remove("SPEAR_CAPABILITIES_FILE")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts")
}

/// The output of `child`, which must end within `limit`; killed (and the
/// test failed) if it does not.
fn within(mut child: Child, limit: Duration, what: &str) -> Output {
    let start = Instant::now();
    loop {
        if child.try_wait().expect("waits").is_some() {
            return child.wait_with_output().expect("output");
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!(
                "{what} still ran after {limit:?}: {}{}",
                text(&out.stdout),
                text(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

const ONE: &str = r#"{"providers": [
  {"id": "x", "command": ["sh"], "scope": "global"}
]}
"#;

/// The ids of the registry at `file`, in file order (a byte-order mark
/// left out).
fn ids(file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).expect("read");
    let v: Value = serde_json::from_str(text.trim_start_matches('\u{feff}')).expect("JSON");
    v["providers"]
        .as_array()
        .expect("providers")
        .iter()
        .map(|e| e["id"].as_str().expect("id").to_owned())
        .collect()
}

// Item 1: one meaning for every file.

#[test]
fn a_key_repeated_inside_an_entry_refuses_it_with_the_place_of_the_repeat() {
    let (_dir, file) = registry(
        "{\"providers\": [\n  {\"id\": \"x\", \"command\": [\"sh\"], \"scope\": \"global\",\n   \"write\": \"refuse\",\n   \"write\": \"allow\"},\n  {\"id\": \"y\", \"command\": [\"sh\"], \"env\": {\"A\": \"1\", \"A\": \"2\"}}\n]}\n",
    );
    let out = cli(&["check", s(&file)]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains(&format!(
            "  refused  providers[0] (\"x\")\n           {}:4:4: key \"write\": given twice (first at 3:4); a key may be given once\n",
            file.display()
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "  refused  providers[1] (\"y\")\n           {}:5:52: key \"env\": \"A\" given twice (first at 5:42); a key may be given once\n",
            file.display()
        )),
        "{stdout}"
    );
    assert!(stdout.ends_with("0 registered, 2 refused\n"), "{stdout}");
}

#[test]
fn a_key_repeated_outside_the_entries_is_an_error_of_the_file_and_no_edit_touches_it() {
    let body = "{\"providers\": [\n  {\"id\": \"x\", \"command\": [\"sh\"], \"scope\": \"global\"}\n],\n \"providers\": []}\n";
    let (dir, file) = registry(body);
    for args in [
        vec!["check", s(&file)],
        vec!["remove", "x", "--capabilities", s(&file)],
        vec!["add", "y", "--capabilities", s(&file), "--", "sh"],
    ] {
        let out = cli(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "capabilities file {}:4:2: key \"providers\" given twice (first at 1:2); a key may be given once",
                file.display()
            )),
            "{args:?}: {stderr}"
        );
        assert_eq!(std::fs::read_to_string(&file).expect("read"), body);
        assert_eq!(listing(dir.path()), ["capabilities.json"]);
    }
}

#[test]
fn an_entry_whose_id_is_given_twice_is_refused_and_remove_says_what_it_did() {
    let body = r#"{"providers": [
  {"id": "y", "command": ["sh"], "scope": "global", "id": "x"}
]}
"#;
    let (_dir, file) = registry(body);
    let out = cli(&["check", s(&file)]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("  refused  providers[0]\n"), "{stdout}");
    assert!(
        stdout.contains(":2:53: key \"id\": given twice (first at 2:4)"),
        "{stdout}"
    );
    // Neither id is the entry's: `remove x` finds no such provider, and
    // the file is left as it was.
    let out = cli(&["remove", "x", "--capabilities", s(&file)]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(&file).expect("read"), body);
}

// Item 2: only a regular file, refused at once.

#[test]
fn a_fifo_as_the_registry_is_refused_at_once_by_every_subcommand() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("capabilities.json");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    for args in [
        vec!["check", s(&fifo)],
        vec!["list", "--capabilities", s(&fifo), "--project", "demo"],
        vec!["get", "x", "--capabilities", s(&fifo)],
        vec!["add", "x", "--capabilities", s(&fifo), "--", "sh"],
        vec!["remove", "x", "--capabilities", s(&fifo)],
    ] {
        let out = within(spawn(&args), Duration::from_secs(10), &format!("{args:?}"));
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "cannot read capabilities file {}: not a regular file (a FIFO); a capabilities file must be a regular file",
                fifo.display()
            )),
            "{args:?}: {stderr}"
        );
    }
    assert!(
        std::fs::symlink_metadata(&fifo)
            .expect("still there")
            .file_type()
            .is_fifo_like()
    );
}

trait FifoLike {
    fn is_fifo_like(&self) -> bool;
}

impl FifoLike for std::fs::FileType {
    fn is_fifo_like(&self) -> bool {
        use std::os::unix::fs::FileTypeExt;
        self.is_fifo()
    }
}

// Item 3: bounded.

#[test]
fn a_registry_past_its_bound_is_refused_with_the_bound() {
    // Valid JSON, one byte past 1 MiB.
    let mut body = String::from(ONE);
    body.push_str(&" ".repeat((1 << 20) + 1 - ONE.len()));
    let (_dir, file) = registry(&body);
    let out = cli(&["check", s(&file)]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr,
        format!(
            "spear-capabilities: cannot read capabilities file {}: it has 1048577 bytes, more than the 1 MiB (1048576 bytes) a capabilities file may have\n",
            file.display()
        )
    );
    // At the bound it is read.
    body.pop();
    std::fs::write(&file, &body).expect("write");
    let out = cli(&["check", s(&file)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn invoke_arguments_on_standard_input_past_their_bound_are_refused_unread() {
    let (_dir, file) = registry(ONE);
    let mut child = Command::new(CLI)
        .args(["invoke", "x/echo", "-", "--capabilities", s(&file)])
        .args(["--project", "demo"])
        .env_remove("SPEAR_CAPABILITIES_FILE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    let mut stdin = child.stdin.take().expect("stdin");
    // 64 MiB offered; the CLI must stop reading past 16 MiB.
    let writer = std::thread::spawn(move || {
        let chunk = vec![b' '; 1 << 20];
        let mut written = 0usize;
        let _ = stdin.write_all(b"{\"text\": \"");
        for _ in 0..64 {
            if stdin.write_all(&chunk).is_err() {
                break;
            }
            written += chunk.len();
        }
        written
    });
    let out = within(child, Duration::from_secs(30), "invoke -");
    let written = writer.join().expect("writer");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "the arguments (from standard input) are more than 16 MiB (16777216 bytes); arguments may have at most that"
        ),
        "{stderr}"
    );
    assert!(written < 64 << 20, "all of standard input was read");
}

// Item 4: a byte-order mark.

#[test]
fn a_utf8_byte_order_mark_is_read_and_kept_and_a_utf16_one_is_named() {
    let body = format!("\u{feff}{ONE}");
    let (_dir, file) = registry(&body);
    let out = cli(&["check", s(&file)]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("  ok       x\n"), "{stdout}");
    let out = cli(&["add", "y", "--capabilities", s(&file), "--", "sh"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let after = std::fs::read_to_string(&file).expect("read");
    assert!(after.starts_with('\u{feff}'), "the mark is kept: {after:?}");
    assert_eq!(ids(&file), ["x", "y"]);

    let utf16: Vec<u8> = [0xff, 0xfe]
        .into_iter()
        .chain(ONE.encode_utf16().flat_map(u16::to_le_bytes))
        .collect();
    std::fs::write(&file, utf16).expect("write");
    let out = cli(&["check", s(&file)]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "capabilities file {}:1:1: the file is UTF-16 (it starts with the byte-order mark FF FE); save it as UTF-8",
            file.display()
        )),
        "{stderr}"
    );
}

// Item 5: one writer at a time.

#[test]
fn twenty_pairs_of_concurrent_adds_keep_all_forty_entries() {
    let (_dir, file) = registry("{\"providers\": []}\n");
    for round in 0..20 {
        let a = format!("a{round}");
        let b = format!("b{round}");
        let first = spawn(&["add", &a, "--capabilities", s(&file), "--", "sh"]);
        let second = spawn(&["add", &b, "--capabilities", s(&file), "--", "sh"]);
        for (id, child) in [(&a, first), (&b, second)] {
            let out = within(child, Duration::from_secs(60), id);
            assert_eq!(out.status.code(), Some(0), "{id}: {}", text(&out.stderr));
        }
    }
    let mut found = ids(&file);
    found.sort();
    let mut want: Vec<String> = (0..20)
        .flat_map(|i| [format!("a{i}"), format!("b{i}")])
        .collect();
    want.sort();
    assert_eq!(found, want);
}

#[test]
fn a_remove_raced_by_an_add_is_never_undone() {
    let (_dir, file) = registry("{\"providers\": []}\n");
    for round in 0..10 {
        let old = format!("old{round}");
        let new = format!("new{round}");
        let added = cli(&["add", &old, "--capabilities", s(&file), "--", "sh"]);
        assert_eq!(added.status.code(), Some(0), "{}", text(&added.stderr));
        let remove = spawn(&["remove", &old, "--capabilities", s(&file)]);
        let add = spawn(&["add", &new, "--capabilities", s(&file), "--", "sh"]);
        for child in [remove, add] {
            let out = within(child, Duration::from_secs(60), "edit");
            assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        }
        let now = ids(&file);
        assert!(
            !now.contains(&old),
            "round {round}: {old} came back: {now:?}"
        );
        assert!(now.contains(&new), "round {round}: {new} lost: {now:?}");
    }
}

/// `flock(1)` holding the registry's lock for `seconds`, started.
fn hold_lock(file: &Path, seconds: u32) -> Child {
    let holder = Command::new("flock")
        .arg(file)
        .args(["sleep", &seconds.to_string()])
        .spawn()
        .expect("flock(1) runs");
    // Until it holds the lock.
    let start = Instant::now();
    while !std::fs::read_to_string("/proc/locks")
        .expect("/proc/locks")
        .lines()
        .any(|l| l.contains(&format!(" {} ", holder.id())))
    {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "flock never locked"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    holder
}

#[test]
fn a_second_editor_waits_for_the_lock_and_then_goes_on() {
    let (_dir, file) = registry(ONE);
    let mut holder = hold_lock(&file, 2);
    let out = cli(&["add", "y", "--capabilities", s(&file), "--", "sh"]);
    // The add ended after the holder let go: it waited, it did not fail.
    let holder_ended = holder.try_wait().expect("waits").is_some();
    let _ = holder.wait();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(holder_ended, "the add ended while the lock was held");
    assert_eq!(ids(&file), ["x", "y"]);
}

#[test]
fn a_second_editor_gives_up_after_its_bound_and_says_who_holds_the_lock() {
    let (_dir, file) = registry(ONE);
    let mut holder = hold_lock(&file, 60);
    let start = Instant::now();
    let out = within(
        spawn(&["add", "y", "--capabilities", s(&file), "--", "sh"]),
        Duration::from_secs(40),
        "add against a held lock",
    );
    let waited = start.elapsed();
    let _ = holder.kill();
    let _ = holder.wait();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "spear-capabilities: {} is being edited by pid {} (flock {} sleep 60); gave up after waiting 10 s; nothing written\n",
            file.display(),
            holder.id(),
            file.display()
        )),
        "{stderr}"
    );
    assert!(waited >= Duration::from_secs(10), "{waited:?}");
    assert_eq!(std::fs::read_to_string(&file).expect("read"), ONE);
}

// Item 6: the file's owner, mode and links.

#[test]
fn an_edit_keeps_the_owner_group_and_mode_of_the_file() {
    let (_dir, file) = registry(ONE);
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    // Changing the owner needs root (CI runs the tests as root); as
    // another user the file keeps that user's own owner and group, which
    // the mode check below covers.
    let root = std::fs::metadata("/proc/self")
        .map(|m| m.uid() == 0)
        .unwrap_or(false);
    if root {
        std::os::unix::fs::chown(&file, Some(4321), Some(4322)).expect("chown");
    }
    let before = std::fs::metadata(&file).expect("meta");
    let out = cli(&["add", "y", "--capabilities", s(&file), "--", "sh"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let after = std::fs::metadata(&file).expect("meta");
    assert_ne!(after.ino(), before.ino(), "replaced, not written in place");
    assert_eq!(
        (after.uid(), after.gid(), after.mode() & 0o7777),
        (before.uid(), before.gid(), 0o640)
    );
    assert_eq!(ids(&file), ["x", "y"]);
}

#[test]
fn a_dangling_symbolic_link_is_refused_and_stays_a_link() {
    let dir = tempfile::tempdir().expect("tempdir");
    let link = dir.path().join("capabilities.json");
    let gone = dir.path().join("elsewhere/capabilities.json");
    std::os::unix::fs::symlink(&gone, &link).expect("symlink");
    let out = cli(&["add", "y", "--capabilities", s(&link), "--", "sh"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr,
        format!(
            "spear-capabilities: {} is a symbolic link to {}, which does not exist; nothing written (create that file, or point the link at the registry)\n",
            link.display(),
            gone.display()
        )
    );
    assert!(
        std::fs::symlink_metadata(&link)
            .expect("meta")
            .file_type()
            .is_symlink()
    );
    assert!(!gone.exists());
}

/// `add` and `remove` on `file` (holding [`ONE`]) both refused, exit 2,
/// with `said` (FILE for the file), the file left as it was.
fn edits_refused(file: &Path, said: &str) {
    for args in [
        vec!["add", "y", "--capabilities", s(file), "--", "sh"],
        vec!["remove", "x", "--capabilities", s(file)],
    ] {
        let out = cli(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        let said = said.replace("FILE", &file.display().to_string());
        assert_eq!(stderr, format!("spear-capabilities: {said}\n"));
        assert_eq!(std::fs::read_to_string(file).expect("read"), ONE);
    }
}

#[test]
fn a_file_with_a_second_hard_link_is_refused_and_not_split() {
    let (dir, file) = registry(ONE);
    let other = dir.path().join("other.json");
    std::fs::hard_link(&file, &other).expect("link");
    edits_refused(
        &file,
        "FILE has 2 hard links; an edit replaces the file, which would leave the other names with the old text; nothing written (make this its only name: remove the other links, or make them symbolic links to it)",
    );
    let (a, b) = (
        std::fs::metadata(&file).expect("meta"),
        std::fs::metadata(&other).expect("meta"),
    );
    assert_eq!((a.ino(), a.nlink()), (b.ino(), 2));
}

#[test]
fn a_read_only_file_is_respected_even_by_root() {
    let (_dir, file) = registry(ONE);
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o444)).expect("chmod");
    edits_refused(
        &file,
        "FILE is read-only (mode 0444); nothing written (make it writable, `chmod u+w FILE`, to edit it)",
    );
}

// Item 7: what an interrupted edit leaves, and the next edit clears.

#[test]
fn a_temporary_file_left_by_a_killed_edit_is_removed_by_the_next_one() {
    let (dir, file) = registry(ONE);
    // What a SIGKILL between the temporary file's creation and the rename
    // leaves: ours by its name. A file of another name is not ours.
    let stale = dir.path().join(".capabilities.json.Ab3x9Q.tmp");
    std::fs::write(&stale, "{\"providers\": []}").expect("write");
    std::fs::set_permissions(&stale, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let other = dir.path().join(".capabilities.json.keep.tmp");
    std::fs::write(&other, "not ours").expect("write");
    let out = cli(&["add", "y", "--capabilities", s(&file), "--", "sh"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        listing(dir.path()),
        [".capabilities.json.keep.tmp", "capabilities.json"]
    );
    assert_eq!(ids(&file), ["x", "y"]);
}

/// As a user who may write the file (through its group) but cannot give
/// the new one its owner back, an edit is refused and nothing written; as
/// one who may not write it at all, too, though the folder would let the
/// rename through. Needs root to set the scene (CI runs the tests as
/// root); as another user there is nothing to run.
#[test]
fn as_another_user_an_edit_that_cannot_keep_the_owner_or_write_the_file_is_refused() {
    if !common::is_root() {
        return;
    }
    let (dir, file) = registry(ONE);
    // The folder anyone may write, as a shared one would be.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let nobody = 65534;
    for (mode, said) in [
        (
            0o664,
            "cannot keep its owner and group (uid 4321, gid 65534): Operation not permitted (os error 1); it is left as it was\n",
        ),
        (
            0o644,
            "is not writable by this user (Permission denied (os error 13)); nothing written\n",
        ),
    ] {
        std::os::unix::fs::chown(&file, Some(4321), Some(nobody)).expect("chown");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).expect("chmod");
        let out = common::as_nobody(&["add", "y", "--capabilities", s(&file), "--", "sh"]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{mode:o}: {stderr}");
        assert!(stderr.ends_with(said), "{mode:o}: {stderr}");
        assert_eq!(std::fs::read_to_string(&file).expect("read"), ONE);
        let meta = std::fs::metadata(&file).expect("meta");
        assert_eq!((meta.uid(), meta.gid()), (4321, nobody));
        assert_eq!(listing(dir.path()), ["capabilities.json"]);
    }
}
