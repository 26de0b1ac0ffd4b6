//! Reading a trail back: is every chain whole, did every session end?
//!
//! [`verify`] reads a trail line by line. Each record of version 2 must
//! say its position (`seq`) and carry the link of the line before it
//! (`prev`: the SHA-256 of that line as written, or its HMAC-SHA-256 under
//! the deployment's key; 64 zeros on the first line). Each session that
//! began (`session_started`) must have ended (`session_ended`). Records of
//! version 1 carry no chain: they are counted as unchained, never as
//! broken, and the record after one is still checked against it.
//!
//! The verdict names the first line that breaks the trail and why, and
//! gives the last line's link, for a deployment to keep elsewhere: the
//! anchor that makes a trail cut after it detectable.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::io::{self, BufRead};

use serde::{Deserialize, Serialize};

use super::chain::{AuditKey, Link, Linker};
use crate::names::named;

/// The longest line read: a longer one breaks the trail (no record this
/// crate writes comes near it).
pub const MAX_VERIFIED_LINE: usize = 64 * 1024 * 1024;

named! {
    /// What a verdict comes to.
    #[non_exhaustive]
    pub enum TrailStatus {
        /// Every chain is whole and every session ended.
        Whole = "whole",
        /// Every chain is whole, and some session has no end record: its
        /// process died, or the file was cut at a record boundary.
        Unended = "unended",
        /// A record was changed, removed, reordered or torn, a line is not
        /// a record, or the key is not the trail's.
        Broken = "broken",
    }
}

/// What [`verify`] found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Verdict {
    /// Lines that are records (read up to the break, if any).
    pub records: u64,
    /// Of them, records with no chain (version 1).
    pub unchained: u64,
    /// Sessions that began.
    pub sessions: u64,
    /// WRITEs that were sent (`capability_invoked` of class WRITE).
    pub writes: u64,
    /// Whether the links were checked under a key.
    pub keyed: bool,
    /// The link of the last line read (64 hex digits): what the trail's
    /// next record chains to. Kept elsewhere, it makes a cut tail show.
    pub last_hash: Option<String>,
    /// The sessions that began and have no end record, in order.
    pub unended: Vec<Unended>,
    /// The first line that breaks the trail, and why.
    pub broken: Option<Break>,
}

impl Verdict {
    /// Whole, unended or broken.
    pub fn status(&self) -> TrailStatus {
        if self.broken.is_some() {
            TrailStatus::Broken
        } else if self.unended.is_empty() {
            TrailStatus::Whole
        } else {
            TrailStatus::Unended
        }
    }
}

/// A session that began and has no end record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Unended {
    /// Its id.
    pub session: String,
    /// The line of its `session_started` record.
    pub line: u64,
}

/// The first line that breaks a trail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Break {
    /// Its number, from 1.
    pub line: u64,
    /// Why.
    pub reason: BreakReason,
}

/// Why a line breaks a trail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum BreakReason {
    /// The trail could not be read there.
    Unreadable {
        /// The OS error.
        error: String,
    },
    /// The line is longer than [`MAX_VERIFIED_LINE`].
    TooLong,
    /// The line is not an audit record.
    NotARecord {
        /// What is wrong with it.
        why: String,
    },
    /// The trail ends inside a line: a record cut part way.
    Torn,
    /// A record of version 2 or later carries no chain.
    NotChained,
    /// The line does not match the `prev` of the record after it: it was
    /// changed (or that `prev` was).
    Changed {
        /// The links were checked under a key.
        keyed: bool,
        /// That `prev` is the plain SHA-256 of this line: the chain was
        /// rewritten without the key.
        plain: bool,
    },
    /// The first line's `prev` is not the start of a chain (64 zeros).
    NotAtStart,
    /// Its `seq` is not its position: records before it were removed or
    /// added, or reordered.
    Seq {
        /// The `seq` it carries.
        found: u64,
    },
}

impl fmt::Display for Break {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (line, after) = (self.line, self.line + 1);
        write!(f, "line {line}: ")?;
        match &self.reason {
            BreakReason::Unreadable { error } => write!(f, "the trail cannot be read: {error}"),
            BreakReason::TooLong => write!(
                f,
                "longer than {} MiB: not a record",
                MAX_VERIFIED_LINE >> 20
            ),
            BreakReason::NotARecord { why } => write!(f, "not an audit record ({why})"),
            BreakReason::Torn => f.write_str(
                "the trail ends inside this line: a record was cut part way (torn)",
            ),
            BreakReason::NotChained => f.write_str(
                "a record of schema 2 or later without `seq` and `prev`: its chain was removed",
            ),
            BreakReason::NotAtStart => f.write_str(
                "its `prev` is not the start of a chain: the records before it are missing (the file was cut at its head, or replaced)",
            ),
            BreakReason::Changed { keyed: true, plain: true } => write!(
                f,
                "line {after}'s `prev` is the plain SHA-256 of this line, not its HMAC under the key: the chain was rewritten without the key"
            ),
            BreakReason::Changed { keyed: true, .. } => write!(
                f,
                "this line does not match line {after}'s `prev` under the key: it was changed (or that `prev` was), or the key is not the trail's"
            ),
            BreakReason::Changed { .. } => write!(
                f,
                "this line does not match line {after}'s `prev` (its SHA-256): it was changed (or that `prev` was); or the trail is keyed: verify it with its key"
            ),
            BreakReason::Seq { found } if *found > line => write!(
                f,
                "its `seq` is {found} at position {line}: {} record(s) before it were removed (or the file was cut at its head)",
                found - line
            ),
            BreakReason::Seq { found } => write!(
                f,
                "its `seq` is {found} at position {line}: records before it were added or reordered"
            ),
        }
    }
}

/// Reads the trail `reader` to its end and says whether it is whole:
/// every chain unbroken (under `key`, when the trail was written with
/// one), every session ended. Stops at the first line that breaks it.
pub fn verify(reader: impl BufRead, key: Option<&AuditKey>) -> Verdict {
    let mut check = Check {
        linker: Linker::for_key(key),
        verdict: Verdict {
            records: 0,
            unchained: 0,
            sessions: 0,
            writes: 0,
            keyed: key.is_some(),
            last_hash: None,
            unended: Vec::new(),
            broken: None,
        },
        number: 0,
        last: Link::GENESIS,
        previous: Vec::new(),
        open: HashMap::new(),
    };
    let mut lines = Lines { reader };
    let mut line = Vec::new();
    let broken = loop {
        let reason = match lines.next(&mut line) {
            Ok(Read::End) => break None,
            Ok(Read::Whole) => match check.line(&line) {
                Ok(()) => continue,
                Err(reason) => reason,
            },
            // Spaces at the very end: a record's padding, its record unwritten.
            Ok(Read::Unterminated) if line.iter().all(|&b| b == b' ') => break None,
            Ok(Read::Unterminated) => BreakReason::Torn,
            Ok(Read::TooLong) => BreakReason::TooLong,
            Err(e) => BreakReason::Unreadable {
                error: e.to_string(),
            },
        };
        // A line that does not match the next record's `prev` is named,
        // not the record that found it out.
        let line = match reason {
            BreakReason::Changed { .. } => check.number,
            _ => check.number + 1,
        };
        break Some(Break { line, reason });
    };
    check.finish(broken)
}

/// The state of one verification.
struct Check {
    linker: Linker,
    verdict: Verdict,
    /// Lines read so far.
    number: u64,
    /// The link of the last line read; the genesis before the first.
    last: Link,
    /// The last line read.
    previous: Vec<u8>,
    /// The sessions begun and not ended, with their start lines.
    open: HashMap<String, Vec<u64>>,
}

/// The fields of a record that verification reads.
#[derive(Deserialize)]
struct Head<'a> {
    schema: Option<u64>,
    seq: Option<u64>,
    #[serde(borrow)]
    prev: Option<Cow<'a, str>>,
    #[serde(borrow)]
    session: Option<Cow<'a, str>>,
    #[serde(borrow)]
    event: Option<Cow<'a, str>>,
    #[serde(borrow)]
    class: Option<Cow<'a, str>>,
}

impl Check {
    /// Checks line `self.number + 1`, then takes it as read.
    fn line(&mut self, line: &[u8]) -> Result<(), BreakReason> {
        let number = self.number + 1;
        let not_a_record = |why: String| BreakReason::NotARecord { why };
        if line.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
            return Err(not_a_record("not a JSON object".into()));
        }
        let head: Head<'_> =
            serde_json::from_slice(line).map_err(|e| not_a_record(e.to_string()))?;
        let Some(event) = head.event.as_deref() else {
            return Err(not_a_record("no `event`".into()));
        };
        match (head.seq, head.prev.as_deref()) {
            (None, None) if head.schema.unwrap_or(0) >= 2 => return Err(BreakReason::NotChained),
            (None, None) => self.verdict.unchained += 1,
            (Some(seq), Some(_)) if seq != number => return Err(BreakReason::Seq { found: seq }),
            (Some(_), Some(prev)) if prev != self.last.hex() => {
                return Err(if number == 1 {
                    BreakReason::NotAtStart
                } else {
                    BreakReason::Changed {
                        keyed: self.verdict.keyed,
                        plain: self.verdict.keyed
                            && prev == Linker::Plain.link(&self.previous).hex(),
                    }
                });
            }
            (Some(_), Some(_)) => {}
            _ => {
                return Err(not_a_record(
                    "`seq` without `prev`, or `prev` without `seq`".into(),
                ));
            }
        }
        self.verdict.records += 1;
        match (event, head.session.as_deref()) {
            ("session_started", Some(session)) => {
                self.verdict.sessions += 1;
                self.open
                    .entry(session.to_owned())
                    .or_default()
                    .push(number);
            }
            ("session_ended", Some(session)) => {
                if let Some(starts) = self.open.get_mut(session) {
                    starts.pop();
                }
            }
            ("capability_invoked", _) if head.class.as_deref() == Some("WRITE") => {
                self.verdict.writes += 1;
            }
            _ => {}
        }
        self.number = number;
        self.last = self.linker.link(line);
        self.previous.clear();
        self.previous.extend_from_slice(line);
        Ok(())
    }

    fn finish(mut self, broken: Option<Break>) -> Verdict {
        if self.number > 0 {
            self.verdict.last_hash = Some(self.last.hex());
        }
        let mut unended: Vec<Unended> = self
            .open
            .into_iter()
            .flat_map(|(session, starts)| {
                starts.into_iter().map(move |line| Unended {
                    session: session.clone(),
                    line,
                })
            })
            .collect();
        unended.sort_by_key(|u| u.line);
        self.verdict.unended = unended;
        self.verdict.broken = broken;
        self.verdict
    }
}

/// What one read of a line found.
enum Read {
    /// A line and its newline (the newline not kept).
    Whole,
    /// The trail's last bytes, with no newline after them.
    Unterminated,
    /// A line longer than [`MAX_VERIFIED_LINE`].
    TooLong,
    /// Nothing more.
    End,
}

/// A trail's lines, each read whole into a buffer of bounded size.
struct Lines<R> {
    reader: R,
}

impl<R: BufRead> Lines<R> {
    fn next(&mut self, line: &mut Vec<u8>) -> io::Result<Read> {
        line.clear();
        loop {
            let buf = match self.reader.fill_buf() {
                Ok(buf) => buf,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if buf.is_empty() {
                return Ok(if line.is_empty() {
                    Read::End
                } else {
                    Read::Unterminated
                });
            }
            let (take, done) = match memchr::memchr(b'\n', buf) {
                Some(i) => (i, true),
                None => (buf.len(), false),
            };
            if line.len() + take > MAX_VERIFIED_LINE {
                return Ok(Read::TooLong);
            }
            line.extend_from_slice(&buf[..take]);
            self.reader.consume(take + usize::from(done));
            if done {
                return Ok(Read::Whole);
            }
        }
    }
}
