//! The start probe of `check --start` and `get --start`: an entry's server
//! started with its kind whatever the entry's scope, tasks or `enabled`
//! say (the operator asked for it), its tools listed within the start
//! budget a session gives it, then stopped ([`start`]).
//!
//! What it offers is judged by the core's own admission ([`admit`]), as a
//! session judges it: a tool the gateway would leave out is shown with the
//! gateway's reason, and one whose results the gateway would leave
//! unchecked (an output schema it cannot use) with the words of its
//! `output_unchecked` record. Nothing here decides anything of its own.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde::{Serialize, Serializer};
use serde_json::{Value, json};
use spear_capabilities::internals::admission::{Admission, admit, class_of};
use spear_capabilities::internals::framing::one_line;
use spear_capabilities::internals::session::start_budget_waiting;
use spear_capabilities::{
    Error, ProviderInfo, Registry, RejectedTool, ToolSpec, UnavailableReason,
    exposure::CapabilityClass, kind::ConnectRequest, registry::ProviderEntry,
};

use crate::flags::WaitArgs;
use crate::out::{Closed, out};
use crate::view::{
    MAX_FACT_CHARS, failure_line, info_json, info_line, pretty_json, read_not_offered,
};

/// The most characters of a tool's title, description or verdict on its
/// line.
const MAX_TEXT_CHARS: usize = 400;

/// What a start found: the server's facts, and each tool it offers with
/// the gateway's verdict on it.
#[derive(Debug, Serialize)]
pub(crate) struct Started {
    #[serde(serialize_with = "info")]
    info: ProviderInfo,
    ready_in_ms: u64,
    /// Each tool offered, in the server's order.
    tools: Vec<ToolView>,
    /// Entries of the listing that are not a tool at all, with the reason.
    not_tools: Vec<RejectedTool>,
    /// Names in `read` that the server does not offer.
    read_not_offered: Vec<String>,
    /// The server declares it offers no tools at all.
    declares_no_tools: bool,
    /// The tools the gateway admits that the server marks read-only
    /// (`readOnlyHint`) and `read` does not name: each stays a WRITE until
    /// the operator adopts the hint ([`Started::adopted_read`]).
    pub(crate) hinted_read_only: Vec<String>,
}

impl Started {
    /// The entry's `read` with its server's read-only hints adopted, when
    /// they add a tool to it; `None` when there is nothing to adopt.
    pub(crate) fn adopted_read(&self, entry: &ProviderEntry) -> Option<Vec<String>> {
        if self.hinted_read_only.is_empty() {
            return None;
        }
        let mut read: Vec<String> = entry.read.iter().cloned().collect();
        read.extend(self.hinted_read_only.iter().cloned());
        read.sort();
        Some(read)
    }
}

/// One tool as the operator reads it.
#[derive(Debug, Serialize)]
struct ToolView {
    name: String,
    title: Option<String>,
    description: Option<String>,
    class: CapabilityClass,
    input_schema: Value,
    /// What the server says of it only reading (`readOnlyHint`), if it
    /// says: a hint, never its class.
    read_only_hint: Option<bool>,
    /// Why the gateway leaves it out, if it does.
    left_out: Option<String>,
    /// Why the gateway leaves its results unchecked, if it does.
    output_unchecked: Option<String>,
}

fn info<S: Serializer>(info: &ProviderInfo, serializer: S) -> Result<S::Ok, S::Error> {
    info_json(info).serialize(serializer)
}

/// Starts `entry`'s server, lists its tools and stops it, all within the
/// start budget a session gives it (with `wait`, as a session with that
/// start wait gives it: each request of the start may take `wait`).
pub(crate) async fn start(
    registry: &Registry,
    entry: &ProviderEntry,
    wait: Option<Duration>,
) -> Result<Started, Error> {
    let kind = registry.kinds().find(&entry.kind)?;
    let began = Instant::now();
    let budget = start_budget_waiting(entry.timeout, wait);
    let timed_out = || Error::Timeout {
        provider: entry.id.clone(),
        after: budget,
        stderr: String::new(),
    };
    let mut request = ConnectRequest::new(
        entry.id.clone(),
        entry.settings.clone(),
        entry.timeout,
        registry.base_dir(),
    );
    if let Some(wait) = wait {
        request = request.with_start_timeout(wait);
    }
    let provider = tokio::time::timeout(budget, (kind.connect)(request))
        .await
        .map_err(|_| timed_out())??;
    let left = budget.saturating_sub(began.elapsed());
    let listing = tokio::time::timeout(left, provider.list_tools()).await;
    let ready_in_ms = u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX);
    let info = provider.info();
    // Stopped however the listing went; a failure to stop is not the
    // operator's question here.
    let _ = provider.shutdown().await;
    let offered = listing.map_err(|_| timed_out())??;
    let specs = offered.tools.clone();
    let declares_no_tools = offered.declares_no_tools;
    let not_tools = offered.rejected.len();
    // Vetting compiles the listing's patterns: off the runtime's thread,
    // as a session does it.
    let owned = entry.clone();
    let admission = tokio::task::spawn_blocking(move || admit(&owned, offered))
        .await
        .map_err(|_| Error::Protocol {
            provider: entry.id.clone(),
            message: "its tool list could not be vetted".to_owned(),
            stderr: String::new(),
        })?;
    let tools = verdicts(entry, specs, &admission, not_tools);
    let hinted_read_only = tools
        .iter()
        .filter(|t| t.read_only_hint == Some(true) && t.left_out.is_none())
        .filter(|t| !entry.read.contains(&t.name))
        .map(|t| t.name.clone())
        .collect();
    Ok(Started {
        info,
        ready_in_ms,
        tools,
        not_tools: admission
            .rejected
            .get(..not_tools)
            .unwrap_or_default()
            .to_vec(),
        read_not_offered: admission.read_not_offered,
        declares_no_tools,
        hinted_read_only,
    })
}

/// Each tool of `specs`, the listing `admission` judged, with its verdict.
/// The admission keeps the server's order: a tool it did not admit is the
/// next of its rejections after the `not_tools` the kind could not read,
/// and an admitted name is offered once.
fn verdicts(
    entry: &ProviderEntry,
    specs: Vec<ToolSpec>,
    admission: &Admission,
    not_tools: usize,
) -> Vec<ToolView> {
    let admitted: HashMap<&str, CapabilityClass> = admission
        .admitted()
        .map(|(name, shown)| (name, shown.class))
        .collect();
    let unchecked: HashMap<&str, &str> = admission
        .unchecked_outputs
        .iter()
        .map(|(name, reason)| (name.as_str(), reason.as_str()))
        .collect();
    let mut rejections = admission
        .rejected
        .get(not_tools..)
        .unwrap_or_default()
        .iter();
    specs
        .into_iter()
        .map(|spec| {
            let (class, left_out) = match admitted.get(spec.name.as_str()) {
                Some(class) => (*class, None),
                None => (
                    class_of(entry, &spec.name),
                    Some(
                        rejections
                            .next()
                            .map_or_else(String::new, |r| r.reason.clone()),
                    ),
                ),
            };
            ToolView {
                output_unchecked: left_out
                    .is_none()
                    .then(|| unchecked.get(spec.name.as_str()).map(|r| (*r).to_owned()))
                    .flatten(),
                class,
                left_out,
                read_only_hint: spec.read_only_hint,
                name: spec.name,
                title: spec.title,
                description: spec.description,
                input_schema: spec.input_schema,
            }
        })
        .collect()
}

/// The warnings of a start for the entry's own lines: each `read` name
/// its server does not offer (none for a start that failed).
pub(crate) fn warnings(started: &Result<Started, Error>) -> Vec<String> {
    started.as_ref().map_or_else(
        |_| Vec::new(),
        |s| {
            s.read_not_offered
                .iter()
                .map(|n| read_not_offered(n))
                .collect()
        },
    )
}

/// A start's outcome as `--json` gives it: what it found, or its error.
pub(crate) fn json(started: &Result<Started, Error>) -> Value {
    match started {
        Ok(s) => serde_json::to_value(s).unwrap_or(Value::Null),
        Err(e) => {
            json!({"error": e.to_string(), "reason": e.unavailable_reason().map(|r| r.to_string())})
        }
    }
}

/// A start that failed, on one line; one that timed out says how to let
/// it finish.
fn failed(e: &Error) -> String {
    let line = format!("start failed: {}", failure_line(&e.to_string()));
    match e.unavailable_reason() {
        Some(UnavailableReason::TimedOut) => {
            format!("{line}; {}", WaitArgs::slow_start_hint())
        }
        _ => line,
    }
}

/// A start's outcome on one line, for `check --start`: the server, how
/// soon it was ready and what it offers, or why it did not start.
pub(crate) fn summary(started: &Result<Started, Error>, id: &str) -> String {
    let s = match started {
        Ok(s) => s,
        Err(e) => return failed(e),
    };
    let offers = if s.declares_no_tools {
        "declares no tools (a provider with no capabilities)".to_owned()
    } else {
        let left_out = s.tools.iter().filter(|t| t.left_out.is_some()).count() + s.not_tools.len();
        let unchecked = s
            .tools
            .iter()
            .filter(|t| t.output_unchecked.is_some())
            .count();
        let mut offers = match s.tools.len() {
            1 => "1 tool".to_owned(),
            n => format!("{n} tools"),
        };
        let mut said = Vec::new();
        if left_out > 0 {
            said.push(format!("{left_out} left out"));
        }
        if unchecked > 0 {
            said.push(format!("{unchecked} with results unchecked"));
        }
        if !said.is_empty() {
            offers.push_str(&format!(
                ", {} (`get {id} --start` says why)",
                said.join(", ")
            ));
        }
        offers
    };
    format!(
        "started: {} (ready in {} ms), {offers}",
        info_line(&s.info),
        s.ready_in_ms
    )
}

/// A start's outcome as `get --start` prints it: the server, then every
/// tool with its class, the gateway's verdict and its full schema.
pub(crate) fn print(started: &Result<Started, Error>) -> Result<(), Closed> {
    let s = match started {
        Ok(s) => s,
        Err(e) => return out!("{}", failed(e)),
    };
    out!(
        "started: {} (ready in {} ms)",
        info_line(&s.info),
        s.ready_in_ms
    )?;
    if s.declares_no_tools {
        out!("tools: none: the server declares no tools (a provider with no capabilities)")?;
    } else {
        out!("tools: {}", s.tools.len())?;
    }
    for t in &s.tools {
        let name = one_line(&t.name, MAX_FACT_CHARS);
        let about = [t.title.as_deref(), t.description.as_deref()]
            .into_iter()
            .flatten()
            .map(|s| one_line(s, MAX_TEXT_CHARS))
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(": ");
        let class = t.class.as_str();
        if about.is_empty() {
            out!("  {class:<6} {name}")?;
        } else {
            out!("  {class:<6} {name}  {about}")?;
        }
        if let Some(why) = &t.left_out {
            out!("         left out: {}", one_line(why, MAX_TEXT_CHARS))?;
        }
        if let Some(why) = &t.output_unchecked {
            out!(
                "         output unchecked: {}",
                one_line(why, MAX_TEXT_CHARS)
            )?;
        }
        match t.read_only_hint {
            Some(true) => out!("         server's hint: read-only")?,
            Some(false) => out!("         server's hint: not read-only")?,
            None => {}
        }
        for line in pretty_json(&t.input_schema).lines() {
            out!("         {line}")?;
        }
    }
    for r in &s.not_tools {
        out!(
            "  not a tool: {}: {}",
            one_line(&r.name, MAX_FACT_CHARS),
            one_line(&r.reason, MAX_TEXT_CHARS)
        )?;
    }
    for name in &s.read_not_offered {
        out!("warning: {}", read_not_offered(name))?;
    }
    Ok(())
}
