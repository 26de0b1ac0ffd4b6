//! Provider kinds: how a registry entry becomes a running [`Provider`],
//! and everything a kind's author uses.
//!
//! A kind lives in its own crate and exports a const [`ProviderKind`]: a
//! name, its keys and two functions ([`ProviderKind::new`]), and
//! optionally a check of an entry's program ([`ProviderKind::with_check`]).
//! It reads its keys with [`Fields`] (string values that name the host's
//! variables, `${NAME}`, with [`Fields::host_strings`], expanded when it
//! starts by [`expand_host_strings`]), says what is wrong with an entry as
//! [`EntryProblem`]s, and starts a provider from a [`ConnectRequest`]. The
//! kinds a program uses are a value, [`Kinds`],
//! handed to the registry that reads the entries (and, through it, to the
//! sessions that start them); the core never names a kind itself except
//! [`DEFAULT_KIND`], the kind an entry without `"kind"` has.
//!
//! A set is built from the records themselves ([`Kinds::new`], e.g.
//! `spear_providers::kinds()`), or from every kind linked into the program
//! ([`Kinds::linked`], through `inventory`). A Cargo dependency alone does
//! not link a crate, so a linked set must be asked for by a program that
//! names its kind crates (`use spear_mcp_stdio as _;`); a program that
//! links none gets [`Error::NoKinds`], not a registry of refused entries.

use std::fmt;
use std::path::{Path, PathBuf};

use std::sync::Arc;
use std::time::Duration;

mod connector;
mod fields;
mod template;

use futures::future::BoxFuture;
use serde_json::{Map, Value};

use crate::error::Error;
use crate::provider::Provider;

pub use crate::registry::position::Position;
pub use crate::registry::problem::{EntryProblem, EntryProblemKind};
pub use connector::{Connector, KindConnector};
pub use fields::{Fields, type_name};
pub use template::{TemplateError, expand_host_strings, expand_host_vars};

/// The registration of a kind, for [`Kinds::linked`]:
/// `spear_capabilities::kind::inventory::submit! { KIND }` in the kind's
/// crate, with no dependency of its own.
pub use inventory;

/// The kind of an entry that has no `"kind"` key.
pub const DEFAULT_KIND: &str = "mcp-stdio";

/// The keys of an entry that the core does not own, handed to the kind.
pub type KindSettings = Map<String, Value>;

/// A kind's optional [`ProviderKind::check`]: an entry's accepted settings
/// and the capabilities file's folder; `Err` says why its program cannot run.
pub type CheckFn = fn(&KindSettings, &Path) -> Result<(), String>;

/// What a kind's `connect` returns: the started provider, eventually.
pub type ConnectFuture = BoxFuture<'static, Result<Arc<dyn Provider>, Error>>;

/// What a kind needs to start one provider.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ConnectRequest {
    /// The provider's id.
    pub provider: String,
    /// The entry's kind-specific keys, already accepted by the kind's `validate`.
    pub settings: KindSettings,
    /// How long one request may take.
    pub timeout: Duration,
    /// How long each request of the start itself (a handshake, each page
    /// of the listing) may take: `timeout`, unless the operator let starts
    /// run longer ([`crate::SessionOptions::with_start_wait`]), as a server
    /// that downloads itself on first use needs. Never less than `timeout`.
    pub start_timeout: Duration,
    /// The folder of the capabilities file, for relative paths in settings.
    pub base_dir: PathBuf,
}

impl ConnectRequest {
    /// A request to start `provider` with `settings`.
    pub fn new(
        provider: impl Into<String>,
        settings: KindSettings,
        timeout: Duration,
        base_dir: impl Into<PathBuf>,
    ) -> Self {
        Self {
            provider: provider.into(),
            settings,
            timeout,
            start_timeout: timeout,
            base_dir: base_dir.into(),
        }
    }

    /// Lets each request of the start take `start_timeout` (never less
    /// than the request timeout).
    pub fn with_start_timeout(mut self, start_timeout: Duration) -> Self {
        self.start_timeout = start_timeout.max(self.timeout);
        self
    }
}

/// A registered kind of provider: a const record of a name, its keys, two
/// functions and an optional check, made with [`ProviderKind::new`] (a
/// `const fn`) and [`ProviderKind::with_check`]:
///
/// ```
/// use spear_capabilities::Error;
/// use spear_capabilities::kind::{ConnectFuture, ConnectRequest, EntryProblem, KindSettings, ProviderKind};
///
/// fn validate(_: &KindSettings) -> Vec<EntryProblem> {
///     Vec::new()
/// }
/// fn connect(req: ConnectRequest) -> ConnectFuture {
///     Box::pin(async move {
///         Err(Error::Start { provider: req.provider, reason: "example".into(), stderr: String::new() })
///     })
/// }
/// pub const KIND: ProviderKind = ProviderKind::new("hello", &["greeting"], validate, connect);
/// ```
///
/// It is `#[non_exhaustive]`: a part added later comes with a `with_*` of
/// its own, and no kind has to name it.
#[non_exhaustive]
pub struct ProviderKind {
    /// The name an entry's `"kind"` key uses, e.g. `mcp-stdio`.
    pub name: &'static str,
    /// The keys this kind accepts besides the common ones, for messages.
    pub keys: &'static [&'static str],
    /// Checks the entry's kind-specific keys (those in `keys`); an empty
    /// list means valid. Keys in neither `keys` nor the common ones are
    /// refused by the core before this is called: a kind need not look
    /// for them.
    pub validate: fn(&KindSettings) -> Vec<EntryProblem>,
    /// Starts one provider.
    pub connect: fn(ConnectRequest) -> ConnectFuture,
    /// Whether an entry (its accepted settings, the capabilities file's
    /// folder) could start, without starting it: is its program there and
    /// runnable. `Err` says why not, in the words a start would use;
    /// `None` for a kind that cannot tell before it starts.
    /// [`crate::Registry::check`] asks it.
    pub check: Option<CheckFn>,
}

impl ProviderKind {
    /// The kind `name`, accepting `keys` besides the common ones, whose
    /// entries `validate` checks and `connect` starts; it has no check.
    pub const fn new(
        name: &'static str,
        keys: &'static [&'static str],
        validate: fn(&KindSettings) -> Vec<EntryProblem>,
        connect: fn(ConnectRequest) -> ConnectFuture,
    ) -> Self {
        Self {
            name,
            keys,
            validate,
            connect,
            check: None,
        }
    }

    /// With `check`, which says whether an entry's program could run
    /// ([`ProviderKind::check`]).
    pub const fn with_check(mut self, check: CheckFn) -> Self {
        self.check = Some(check);
        self
    }
}

impl fmt::Debug for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderKind")
            .field("name", &self.name)
            .field("keys", &self.keys)
            .finish_non_exhaustive()
    }
}

inventory::collect!(ProviderKind);

/// A set of provider kinds, each found by its name. Cheap to clone.
#[derive(Clone)]
pub struct Kinds {
    /// Sorted by name, no two with the same.
    all: Arc<[&'static ProviderKind]>,
}

impl fmt::Debug for Kinds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl Kinds {
    /// The set of `kinds`.
    ///
    /// # Errors
    /// [`Error::DuplicateKind`] when two have the same name.
    pub fn new(kinds: impl IntoIterator<Item = &'static ProviderKind>) -> Result<Kinds, Error> {
        let mut all: Vec<&'static ProviderKind> = kinds.into_iter().collect();
        all.sort_by_key(|k| k.name);
        if let Some(w) = all.windows(2).find(|w| w[0].name == w[1].name) {
            return Err(Error::DuplicateKind {
                name: w[0].name.to_owned(),
            });
        }
        Ok(Kinds { all: all.into() })
    }

    /// Every kind linked into this program (registered with
    /// `inventory::submit!`).
    ///
    /// # Errors
    /// [`Error::NoKinds`] when none is linked; [`Error::DuplicateKind`]
    /// when two linked crates use the same name.
    pub fn linked() -> Result<Kinds, Error> {
        let kinds = Kinds::new(inventory::iter::<ProviderKind>())?;
        if kinds.all.is_empty() {
            return Err(Error::NoKinds);
        }
        Ok(kinds)
    }

    /// The kind named `name`.
    ///
    /// # Errors
    /// [`Error::UnknownKind`] listing the kinds there are.
    pub fn find(&self, name: &str) -> Result<&'static ProviderKind, Error> {
        self.all
            .iter()
            .find(|k| k.name == name)
            .copied()
            .ok_or_else(|| Error::UnknownKind {
                name: name.to_owned(),
                available: if self.all.is_empty() {
                    "none".to_owned()
                } else {
                    self.names().join(", ")
                },
            })
    }

    /// The kinds' names, sorted.
    pub fn names(&self) -> Vec<&'static str> {
        self.all.iter().map(|k| k.name).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept_all(_: &KindSettings) -> Vec<EntryProblem> {
        Vec::new()
    }

    fn never(_: ConnectRequest) -> ConnectFuture {
        Box::pin(async {
            Err(Error::Start {
                provider: "x".into(),
                reason: "test kind".into(),
                stderr: String::new(),
            })
        })
    }

    const ZZ: ProviderKind = ProviderKind::new("zz-test", &[], accept_all, never);
    const AA: ProviderKind = ProviderKind::new("aa-test", &[], accept_all, never);

    inventory::submit! { ZZ }
    inventory::submit! { AA }

    #[test]
    fn kinds_are_listed_sorted() {
        let kinds = Kinds::new([&ZZ, &AA]).expect("no duplicates");
        assert_eq!(kinds.names(), ["aa-test", "zz-test"]);
        assert_eq!(
            Kinds::linked().expect("two linked").names(),
            ["aa-test", "zz-test"]
        );
    }

    #[test]
    fn a_miss_lists_the_kinds_that_exist() {
        let kinds = Kinds::new([&ZZ, &AA]).expect("no duplicates");
        let err = kinds.find("http").expect_err("no such kind");
        assert_eq!(
            err.to_string(),
            "unknown provider kind `http`; available kinds: aa-test, zz-test"
        );
        assert_eq!(kinds.find("zz-test").expect("found").name, "zz-test");
        let none = Kinds::new([]).expect("empty");
        assert_eq!(
            none.find("mcp-stdio").expect_err("none").to_string(),
            "unknown provider kind `mcp-stdio`; available kinds: none"
        );
    }

    #[test]
    fn a_duplicate_kind_name_is_an_error_never_a_silent_pick() {
        let err = Kinds::new([&AA, &ZZ, &AA]).expect_err("duplicate");
        assert_eq!(
            err.to_string(),
            "provider kind `aa-test` is registered more than once"
        );
    }
}
