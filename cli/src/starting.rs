//! The live start display: while a turn's providers start, a terminal
//! shows each one's state as it changes, one line a provider, in the
//! status column of `list`: `starting` (and for how long), then
//! `ok … ready in N ms, K tools` or `failed … unavailable (why)`; with
//! `--wait`, a line still starting says how long the command waits.
//!
//! Only on a terminal (standard error) that can move its cursor, and never
//! with `--json` ([`wanted`]). The lines still starting are redrawn in
//! place by `indicatif` (cursor moves and line clears are its own, through
//! `console`); a line whose provider is done is printed once above them and
//! stays, except for `list`, which prints every provider's state next: there
//! a done provider's line is cleared ([`Finish::Clear`]), so that a terminal
//! shows each provider once. Colour follows `list`'s rule for standard
//! error (`NO_COLOR`).
//!
//! The states are read with [`Session::provider_states`] every
//! [`POLL`] while the turn begins: only the CLI's start pays for it, never
//! a call.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use spear_capabilities::internals::framing::one_line;
use spear_capabilities::{ProviderState, Session, Turn, TurnError};

use crate::view::{colour_on, state_line, status_style};

/// How often the providers' states are read while they start.
pub(crate) const POLL: Duration = Duration::from_millis(50);

/// The most characters of a failure's reason on its line (the whole reason
/// is `list`'s and the session's notice's).
const MAX_REASON_CHARS: usize = 400;

/// Whether to show the display: standard error is a terminal that can move
/// its cursor (`TERM` set, and not `dumb`: an editor's shell buffer, say),
/// and the output is not for a script (`as_json`).
pub(crate) fn wanted(as_json: bool) -> bool {
    !as_json
        && std::io::stderr().is_terminal()
        && std::env::var_os("TERM").is_some_and(|t| !t.is_empty() && t != "dumb")
}

/// What becomes of the display once the turn begins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Finish {
    /// Each provider's last line stays on the terminal.
    Keep,
    /// A provider's line is shown only while it starts, and cleared once
    /// it is done: the command prints the states itself.
    Clear,
}

/// Awaits `begin`, the beginning of a turn of `session`
/// ([`Session::begin_turn`]), showing each provider's state on standard
/// error as it changes.
pub(crate) async fn begin_turn(
    session: &Session,
    begin: impl Future<Output = Result<Turn, TurnError>>,
    finish: Finish,
    wait: Option<Duration>,
) -> Result<Turn, TurnError> {
    let mut display = Display::new(finish, wait);
    let mut begin = std::pin::pin!(begin);
    let mut poll = tokio::time::interval(POLL);
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            turn = &mut begin => {
                display.finish(&session.provider_states());
                return turn;
            }
            _ = poll.tick() => display.show(&session.provider_states()),
        }
    }
}

/// The lines on the terminal: one live bar a provider still starting.
struct Display {
    multi: MultiProgress,
    /// The providers seen starting, by id, each with its live line (`None`
    /// once its final line is printed).
    starting: BTreeMap<String, Option<ProgressBar>>,
    colour: bool,
    finish: Finish,
    /// The operator's `--wait`, said on each line still starting.
    wait: Option<Duration>,
}

impl Display {
    fn new(finish: Finish, wait: Option<Duration>) -> Self {
        Display {
            multi: MultiProgress::with_draw_target(ProgressDrawTarget::stderr()),
            starting: BTreeMap::new(),
            colour: colour_on(std::io::stderr().is_terminal()),
            finish,
            wait,
        }
    }

    /// One provider's line: the status word (in colour), its id, what it
    /// means, on one line.
    fn line(&self, id: &str, state: &ProviderState) -> String {
        let (status, detail) = state_line(state);
        let style = status_style(status, self.colour);
        let detail = one_line(&detail, MAX_REASON_CHARS);
        match (state, self.wait) {
            (ProviderState::Starting { .. }, Some(wait)) => format!(
                "  {style}{status:<8}{style:#} {id}: {detail}, waiting up to {} (--wait)",
                spear_capabilities::internals::messages::seconds(wait)
            ),
            _ => format!("  {style}{status:<8}{style:#} {id}: {detail}"),
        }
    }

    /// Draws `states`: a new provider starting gets a live line, one that
    /// is done has its line printed for good.
    fn show(&mut self, states: &[(String, ProviderState)]) {
        for (id, state) in states {
            let line = self.line(id, state);
            let starting = matches!(state, ProviderState::Starting { .. });
            // A done line stays only when the command does not print it next.
            let keep = self.finish == Finish::Keep;
            match self.starting.get(id) {
                // Done before it was ever seen starting, or already said.
                None if !starting => {
                    self.starting.insert(id.clone(), None);
                    if keep {
                        let _ = self.multi.println(line);
                    }
                }
                None => {
                    let bar = self.multi.add(
                        ProgressBar::new_spinner()
                            .with_style(style())
                            .with_message(line),
                    );
                    bar.tick();
                    self.starting.insert(id.clone(), Some(bar));
                }
                Some(None) => {}
                Some(Some(bar)) if starting => bar.set_message(line),
                Some(Some(bar)) => {
                    bar.finish_and_clear();
                    self.multi.remove(bar);
                    if keep {
                        let _ = self.multi.println(line);
                    }
                    self.starting.insert(id.clone(), None);
                }
            }
        }
    }

    /// Draws the states the turn begins with; a provider still starting
    /// (it goes on in the background) keeps its last line, unless the
    /// command prints the states next.
    fn finish(&mut self, states: &[(String, ProviderState)]) {
        self.show(states);
        for bar in self.starting.values().flatten() {
            match self.finish {
                Finish::Keep => bar.finish(),
                Finish::Clear => bar.finish_and_clear(),
            }
        }
    }
}

/// A live line: the message only, cut at the terminal's width so that a
/// redraw never wraps.
fn style() -> ProgressStyle {
    ProgressStyle::with_template("{wide_msg}").unwrap_or_else(|_| ProgressStyle::default_spinner())
}
