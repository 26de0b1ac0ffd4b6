//! The time stamp of an audit record: RFC 3339 UTC with milliseconds.

use std::cell::Cell;
use std::fmt;
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// When a record was made, to the millisecond. Its stable form, written
/// and read, is RFC 3339 UTC with milliseconds:
/// `2026-11-30T09:52:41.669Z`.
///
/// ```
/// use spear_capabilities::audit::AuditTime;
/// let t: AuditTime = "2026-11-30T09:52:41.669Z".parse().expect("RFC 3339");
/// assert_eq!(t.to_string(), "2026-11-30T09:52:41.669Z");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AuditTime(SystemTime);

impl AuditTime {
    /// Now, to the millisecond.
    pub fn now() -> Self {
        Self::from(SystemTime::now())
    }

    /// The time as a `SystemTime`.
    pub fn system_time(self) -> SystemTime {
        self.0
    }
}

impl From<SystemTime> for AuditTime {
    /// `time` cut to the millisecond, as it is written: a record read back
    /// equals the record written.
    fn from(time: SystemTime) -> Self {
        match time.duration_since(UNIX_EPOCH) {
            Ok(d) => AuditTime(UNIX_EPOCH + Duration::from_millis(d.as_millis() as u64)),
            Err(_) => AuditTime(time),
        }
    }
}

impl fmt::Display for AuditTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&rfc3339_millis(self.0))
    }
}

/// A time stamp that is not RFC 3339.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{found:?} is not an RFC 3339 UTC time such as 2026-11-30T09:52:41.669Z")]
pub struct BadAuditTime {
    /// What was found.
    pub found: String,
}

impl FromStr for AuditTime {
    type Err = BadAuditTime;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        humantime::parse_rfc3339(s)
            .map(AuditTime::from)
            .map_err(|_| BadAuditTime {
                found: s.to_owned(),
            })
    }
}

impl Serialize for AuditTime {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&rfc3339_millis(self.0))
    }
}

impl<'de> Deserialize<'de> for AuditTime {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// `time` as RFC 3339 UTC with milliseconds, exactly as
/// `humantime::format_rfc3339_millis` writes it. humantime writes each
/// second once per thread; a record then writes only its milliseconds.
fn rfc3339_millis(time: SystemTime) -> String {
    /// 10000-01-01T00:00:00Z: four-digit years end there. humantime cannot
    /// write a time outside 1970..10000 either; it is left to it, as before.
    const YEAR_10000: u64 = 253_402_300_800;
    let since = match time.duration_since(UNIX_EPOCH) {
        Ok(d) if d.as_secs() < YEAR_10000 => d,
        _ => return humantime::format_rfc3339_millis(time).to_string(),
    };
    let secs = since.as_secs();
    let cached = LAST_SECOND.with(|last| {
        let (at, text) = last.get();
        if at == secs {
            return Some(text);
        }
        let text = second_text(secs)?;
        last.set((secs, text));
        Some(text)
    });
    let Some(mut out) = cached else {
        return humantime::format_rfc3339_millis(time).to_string();
    };
    let mut millis = since.subsec_millis();
    for digit in out[20..23].iter_mut().rev() {
        // A digit: millis % 10 < 10.
        *digit = b'0' + (millis % 10) as u8;
        millis /= 10;
    }
    match std::str::from_utf8(&out) {
        Ok(text) => text.to_owned(),
        // Written by humantime and our digits: ASCII, so never taken.
        Err(_) => humantime::format_rfc3339_millis(time).to_string(),
    }
}

thread_local! {
    /// The last whole second written and its text: records come many a
    /// second, and only their milliseconds differ.
    static LAST_SECOND: Cell<(u64, [u8; 24])> = const { Cell::new((u64::MAX, [0; 24])) };
}

/// `secs` after the epoch as `YYYY-MM-DDTHH:MM:SS.000Z`, written by
/// humantime, or `None` when it is not that long (a year past 9999).
fn second_text(secs: u64) -> Option<[u8; 24]> {
    let text = humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_secs(secs));
    <[u8; 24]>::try_from(text.to_string().as_bytes()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_reads_back_as_it_was_written() {
        let now = AuditTime::now();
        let text = serde_json::to_string(&now).expect("serializes");
        let back: AuditTime = serde_json::from_str(&text).expect("reads");
        assert_eq!(back, now);
        assert!(serde_json::from_str::<AuditTime>("\"yesterday\"").is_err());
    }

    #[test]
    fn times_are_written_as_humantime_writes_them() {
        let mut secs: Vec<u64> = vec![
            0,
            59,
            86_399,
            86_400,
            951_782_400,     // 2000-02-29
            951_868_799,     // 2000-02-29T23:59:59
            4_107_542_400,   // 2100-03-01
            4_102_444_799,   // 2099-12-31T23:59:59
            253_402_300_799, // 9999-12-31T23:59:59
        ];
        // Every 7919th day and some second of it, up to the year 9999.
        let mut s = 12_345u64;
        while s < 253_402_300_800 {
            secs.push(s);
            s += 7919 * 86_400 + 3671;
        }
        for secs in secs {
            for nanos in [0, 999_999, 1_000_000, 123_456_789, 999_999_999] {
                let t = UNIX_EPOCH + Duration::new(secs, nanos);
                assert_eq!(
                    rfc3339_millis(t),
                    humantime::format_rfc3339_millis(t).to_string(),
                    "{secs}.{nanos}"
                );
            }
        }
    }
}
