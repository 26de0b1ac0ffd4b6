//! `get`: one registry entry as the registry has it, for the operator,
//! and with `--start` what its server says it offers.
//!
//! The values of `env` are never printed (they are the kind of thing a
//! token goes in): only the variables' names. Neither is anything of an
//! entry's kind-specific keys but their names, for a kind other than
//! `mcp-stdio`, whose keys the CLI cannot tell secrets from.
//!
//! `--start` starts the server with the entry's kind, whatever its scope,
//! tasks or `enabled` say (the operator asked for it by name), lists its
//! tools within the start budget a session gives it, shows each with its
//! class and its full schema, then stops it. A tool the gateway would
//! leave out is shown with the reason, found as the core's admission finds
//! it (a name that is not a plain word, a duplicate, a schema that fails
//! vetting).

use std::collections::HashMap;
use std::process::ExitCode;
use std::time::Instant;

use serde_json::{Value, json};
use spear_capabilities::internals::admission::tool_name_problem;
use spear_capabilities::internals::session::start_budget_waiting;
use spear_capabilities::internals::vetting::ListingBudget;
use spear_capabilities::{
    Audit, CapabilityClass, ConnectRequest, Error, ProviderEntry, ProviderInfo, Registry, ToolList,
};

use crate::check::entry_json;
use crate::file::FileArgs;
use crate::out::{Closed, out};
use crate::report::{REFUSED_EXIT, refused_entry_lines};
use crate::view::{info_json, info_line, printable};

/// What `get` is asked.
#[derive(Debug, clap::Args)]
pub(crate) struct GetArgs {
    /// The provider's id.
    id: String,
    #[command(flatten)]
    file: FileArgs,
    /// Also start its server: its name, version and protocol, and each
    /// tool with its class and full schema.
    #[arg(long)]
    start: bool,
    /// With --start: let the start go on up to SECONDS (a server that
    /// downloads itself on first use), however short its `timeout`.
    #[arg(long, value_name = "SECONDS", requires = "start", value_parser = crate::context::wait_seconds)]
    wait: Option<std::time::Duration>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// What stands for a value of `env`.
const MASK: &str = "<masked>";

/// The most characters of a tool's title or description on its line.
const MAX_TEXT_CHARS: usize = 400;

/// The entry's command and the names of its variables, when its kind is
/// `mcp-stdio`.
fn server(entry: &ProviderEntry) -> Option<spear_mcp_stdio::ServerConfig> {
    (entry.kind == spear_mcp_stdio::NAME)
        .then(|| spear_mcp_stdio::ServerConfig::from_settings(&entry.settings).ok())
        .flatten()
}

/// A word of a command as a POSIX shell would need it typed: bare when it
/// is plain, else in single quotes; control characters shown as `?`.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./=:,+@%".contains(c));
    let word: String = word
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if plain {
        word
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// `get`.
///
/// Exit status: 0, 1 when no entry has the id, the registry refuses it
/// (or, as `check`, its program cannot run), or `--start` failed; 2 when
/// the file cannot be read or parsed, or a file named with
/// --capabilities does not exist.
pub(crate) async fn get(args: &GetArgs) -> ExitCode {
    let fail = |code: u8, message: String| {
        eprintln!("spear-capabilities: {message}");
        ExitCode::from(code)
    };
    if let Some(named) = &args.file.capabilities {
        if let Err(e) = crate::context::named_file_exists(named) {
            return fail(2, e);
        }
    }
    let path = args.file.path();
    let registry = match spear_providers::registry(&path, &Audit::null()) {
        Ok(r) => r,
        Err(e) => return fail(2, e.to_string()),
    };
    let Some(entry) = registry.entry(&args.id) else {
        if let Some(refused) = registry
            .refused()
            .iter()
            .find(|r| r.id.as_deref() == Some(args.id.as_str()))
        {
            return say_refused(args, &path, refused);
        }
        let known: Vec<&str> = registry.entries().iter().map(|e| e.id.as_str()).collect();
        let known = match (registry.notice(), known.is_empty()) {
            (Some(notice), _) => notice,
            (None, true) => "it registers none".to_owned(),
            (None, false) => format!("its providers: {}", known.join(", ")),
        };
        return fail(
            REFUSED_EXIT,
            format!("no provider `{}` in {}; {known}", args.id, path.display()),
        );
    };
    let findings = registry.check_entry(entry);
    let started = if args.start {
        Some(start(&registry, entry, args.wait).await)
    } else {
        None
    };
    let ok = findings.cannot_run.is_none() && started.as_ref().is_none_or(Result::is_ok);
    let said = if args.json {
        let mut v = entry_json(entry);
        v["file"] = json!(path.display().to_string());
        match server(entry) {
            Some(config) => {
                v["command"] = json!(config.command);
                v["env"] = json!(config.env.keys().collect::<Vec<_>>());
            }
            None => v["settings"] = json!(entry.settings.keys().collect::<Vec<_>>()),
        }
        v["cannot_run"] = json!(findings.cannot_run);
        v["warnings"] = json!(
            findings
                .warnings
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
        );
        if let Some(started) = &started {
            v["started"] = started_json(started);
        }
        out!("{v}")
    } else {
        print_text(&path, entry, &findings, started.as_ref())
    };
    match said {
        Err(closed) => closed.code(),
        Ok(()) if ok => ExitCode::SUCCESS,
        Ok(()) => ExitCode::from(REFUSED_EXIT),
    }
}

fn say_refused(
    args: &GetArgs,
    path: &std::path::Path,
    refused: &spear_capabilities::RefusedEntry,
) -> ExitCode {
    let said = if args.json {
        out!(
            "{}",
            json!({
                "file": path.display().to_string(),
                "id": args.id,
                "refused": {
                    "entry": refused.label(),
                    "problems": refused.problems.iter().map(ToString::to_string).collect::<Vec<_>>(),
                },
            })
        )
    } else {
        out!("{}", path.display()).and_then(|()| {
            refused_entry_lines(refused, false)
                .iter()
                .try_for_each(|line| out!("{line}"))
        })
    };
    match said {
        Ok(()) => ExitCode::from(REFUSED_EXIT),
        Err(closed) => closed.code(),
    }
}

fn print_text(
    path: &std::path::Path,
    entry: &ProviderEntry,
    findings: &spear_capabilities::EntryCheck,
    started: Option<&Result<Started, Error>>,
) -> Result<(), Closed> {
    let row = |key: &str, value: &str| out!("  {key:<8} {value}");
    out!("{}  (in {})", entry.id, path.display())?;
    row("kind", &entry.kind)?;
    match server(entry) {
        Some(config) => {
            let words: Vec<String> = config.command.iter().map(|w| shell_word(w)).collect();
            row("command", &words.join(" "))?;
            if !config.env.is_empty() {
                let vars: Vec<String> = config
                    .env
                    .keys()
                    .map(|k| format!("{}={MASK}", printable(k, 200)))
                    .collect();
                row("env", &vars.join(" "))?;
            }
        }
        None => {
            let keys: Vec<&str> = entry.settings.keys().map(String::as_str).collect();
            row(
                "settings",
                &format!("{} (values not shown)", keys.join(", ")),
            )?;
        }
    }
    let scope = entry
        .scope
        .as_ref()
        .map_or_else(|| "none (applies nowhere)".to_owned(), ToString::to_string);
    row("scope", &scope)?;
    let tasks: Vec<&str> = entry.tasks.iter().map(|t| t.as_str()).collect();
    row("tasks", &tasks.join(", "))?;
    let read: Vec<&str> = entry.read.iter().map(String::as_str).collect();
    row(
        "read",
        &if read.is_empty() {
            "(none: every tool is a WRITE)".to_owned()
        } else {
            read.join(", ")
        },
    )?;
    row("write", entry.write.as_str())?;
    row("enabled", if entry.enabled { "yes" } else { "no" })?;
    row("timeout", &format!("{}s", entry.timeout.as_secs_f64()))?;
    if let Some(why) = &findings.cannot_run {
        out!("refused: {why}")?;
    }
    for w in &findings.warnings {
        out!("warning: {w}")?;
    }
    match started {
        None => Ok(()),
        Some(Err(e)) => out!("start failed: {e}"),
        Some(Ok(s)) => s.print(),
    }
}

/// A start's outcome as `--json` gives it: what it found, or its error.
pub(crate) fn started_json(started: &Result<Started, Error>) -> Value {
    match started {
        Ok(s) => s.json(),
        Err(e) => {
            json!({"error": e.to_string(), "reason": e.unavailable_reason().map(|r| r.to_string())})
        }
    }
}

/// What `--start` found.
#[derive(Debug)]
pub(crate) struct Started {
    info: ProviderInfo,
    ready_in_ms: u64,
    tools: Vec<ToolView>,
    /// Entries of the listing that are not a tool at all, with the reason.
    not_tools: Vec<(String, String)>,
    /// Names in `read` that the server does not offer.
    read_not_offered: Vec<String>,
    /// The server declares it offers no tools at all.
    declares_no_tools: bool,
}

/// One tool as the operator reads it.
#[derive(Debug)]
struct ToolView {
    name: String,
    title: Option<String>,
    description: Option<String>,
    class: CapabilityClass,
    schema: Value,
    /// Why the gateway would leave it out, if it would.
    left_out: Option<String>,
}

/// Starts `entry`'s server, lists its tools and stops it, all within the
/// start budget a session gives it (with `wait`, as a session with that
/// start wait gives it: each request of the start may take `wait`).
pub(crate) async fn start(
    registry: &Registry,
    entry: &ProviderEntry,
    wait: Option<std::time::Duration>,
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
    Ok(Started::new(entry, info, ready_in_ms, offered))
}

impl Started {
    fn new(entry: &ProviderEntry, info: ProviderInfo, ready_in_ms: u64, offered: ToolList) -> Self {
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for spec in &offered.tools {
            *counts.entry(spec.name.as_str()).or_default() += 1;
        }
        let read_not_offered = entry
            .read
            .iter()
            .filter(|name| !counts.contains_key(name.as_str()))
            .cloned()
            .collect();
        // Each distinct schema vetted once against the listing's budget, as
        // the core's admission does.
        let mut budget = ListingBudget::default();
        let mut verdicts: Vec<(Value, Option<String>)> = Vec::new();
        let mut tools = Vec::new();
        for spec in &offered.tools {
            let left_out = tool_name_problem(&spec.name)
                .or_else(|| {
                    let n = counts[spec.name.as_str()];
                    (n > 1).then(|| format!("the provider offers {n} tools of this name"))
                })
                .or_else(|| {
                    if let Some((_, v)) = verdicts.iter().find(|(s, _)| s == &spec.input_schema) {
                        return v.clone();
                    }
                    let verdict = budget.vet(&spec.input_schema).err();
                    verdicts.push((spec.input_schema.clone(), verdict.clone()));
                    verdict
                });
            tools.push(ToolView {
                name: spec.name.clone(),
                title: spec.title.clone(),
                description: spec.description.clone(),
                class: if entry.read.contains(&spec.name) {
                    CapabilityClass::Read
                } else {
                    CapabilityClass::Write
                },
                schema: spec.input_schema.clone(),
                left_out,
            });
        }
        Started {
            info,
            ready_in_ms,
            declares_no_tools: offered.declares_no_tools,
            tools,
            not_tools: offered
                .rejected
                .into_iter()
                .map(|r| (r.name, r.reason))
                .collect(),
            read_not_offered,
        }
    }

    pub(crate) fn json(&self) -> Value {
        json!({
            "info": info_json(&self.info),
            "ready_in_ms": self.ready_in_ms,
            "tools": self.tools.iter().map(|t| json!({
                "name": t.name,
                "title": t.title,
                "description": t.description,
                "class": t.class.as_str(),
                "input_schema": t.schema,
                "left_out": t.left_out,
            })).collect::<Vec<_>>(),
            "not_tools": self.not_tools.iter().map(|(name, reason)| json!({"name": name, "reason": reason})).collect::<Vec<_>>(),
            "read_not_offered": self.read_not_offered,
            "declares_no_tools": self.declares_no_tools,
        })
    }

    /// One line for `check --start`: the server, how soon it was ready,
    /// and what it offers.
    pub(crate) fn summary(&self, id: &str) -> String {
        let offers = if self.declares_no_tools {
            "declares no tools (a provider with no capabilities)".to_owned()
        } else {
            let left_out = self.tools.iter().filter(|t| t.left_out.is_some()).count();
            let mut offers = match self.tools.len() {
                1 => "1 tool".to_owned(),
                n => format!("{n} tools"),
            };
            if left_out + self.not_tools.len() > 0 {
                offers.push_str(&format!(
                    ", {} left out (`get {id} --start` says why)",
                    left_out + self.not_tools.len()
                ));
            }
            offers
        };
        format!(
            "started: {} (ready in {} ms), {offers}",
            info_line(&self.info),
            self.ready_in_ms
        )
    }

    fn print(&self) -> Result<(), Closed> {
        out!(
            "started: {} (ready in {} ms)",
            info_line(&self.info),
            self.ready_in_ms
        )?;
        if self.declares_no_tools {
            out!("tools: none: the server declares no tools (a provider with no capabilities)")?;
        } else {
            out!("tools: {}", self.tools.len())?;
        }
        for t in &self.tools {
            let name = printable(&t.name, 200);
            let about = [t.title.as_deref(), t.description.as_deref()]
                .into_iter()
                .flatten()
                .map(|s| printable(s, MAX_TEXT_CHARS))
                .collect::<Vec<_>>()
                .join(": ");
            let class = t.class.as_str();
            if about.is_empty() {
                out!("  {class:<6} {name}")?;
            } else {
                out!("  {class:<6} {name}  {about}")?;
            }
            if let Some(why) = &t.left_out {
                out!("         left out: {}", printable(why, MAX_TEXT_CHARS))?;
            }
            let schema = serde_json::to_string_pretty(&t.schema).unwrap_or_default();
            for line in terminal_safe(&schema).lines() {
                out!("         {line}")?;
            }
        }
        for (name, reason) in &self.not_tools {
            out!(
                "  not a tool: {}: {}",
                printable(name, 200),
                printable(reason, MAX_TEXT_CHARS)
            )?;
        }
        for name in &self.read_not_offered {
            out!(
                "warning: read names `{name}`, which its server does not offer (a tool of another name stays a WRITE)"
            )?;
        }
        Ok(())
    }
}

/// JSON text fit for a terminal: the control and invisible formatting
/// characters that JSON leaves raw inside strings (C1 controls, DEL, bidi
/// and zero-width marks) written as `\uXXXX` escapes, which JSON reads
/// back as the same characters. Outside strings, pretty JSON has only
/// spaces and line breaks.
fn terminal_safe(json: &str) -> String {
    let invisible = |c: char| {
        (c.is_control() && c != '\n')
            || matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}')
    };
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if invisible(c) {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_words_are_quoted_as_a_shell_needs_them() {
        assert_eq!(shell_word("/usr/bin/srv"), "/usr/bin/srv");
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word(""), "''");
        assert_eq!(shell_word("x\x1b[0m"), "'x?[0m'");
    }

    #[test]
    fn invisible_characters_in_json_text_are_escaped_and_read_back_the_same() {
        let v = json!({"d": "a\u{9b}b\u{202e}c\u{7f}"});
        let text = terminal_safe(&serde_json::to_string_pretty(&v).expect("json"));
        assert!(text.is_ascii(), "{text}");
        assert_eq!(serde_json::from_str::<Value>(&text).expect("json"), v);
    }
}
