//! Provider kinds: how a registry entry becomes a running [`Provider`].
//!
//! A kind lives in its own crate and registers a const [`ProviderKind`] with
//! `inventory::submit!`. The core finds it by name; it never names a kind
//! itself except [`DEFAULT_KIND`], the kind an entry without `"kind"` has.
//!
//! A Cargo dependency alone does not link a crate, and an unlinked crate's
//! registration vanishes silently: a program must name the kind crates it
//! wants (`use spear_mcp_stdio as _;`), as `spear-providers` does.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Map, Value};

use crate::{EntryProblem, Error, Provider};

/// The kind of an entry that has no `"kind"` key.
pub const DEFAULT_KIND: &str = "mcp-stdio";

/// The keys of an entry that the core does not own, handed to the kind.
pub type KindSettings = Map<String, Value>;

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
            base_dir: base_dir.into(),
        }
    }
}

/// A registered kind of provider: a const record of a name and two functions.
pub struct ProviderKind {
    /// The name an entry's `"kind"` key uses, e.g. `mcp-stdio`.
    pub name: &'static str,
    /// The keys this kind accepts besides the common ones, for messages.
    pub keys: &'static [&'static str],
    /// Checks the entry's kind-specific keys; an empty list means valid.
    /// Unknown keys must be reported here.
    pub validate: fn(&KindSettings) -> Vec<EntryProblem>,
    /// Starts one provider.
    pub connect: fn(ConnectRequest) -> ConnectFuture,
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

/// Every linked kind, sorted by name.
///
/// # Errors
/// [`Error::DuplicateKind`] when two linked crates use the same name.
pub fn kinds() -> Result<Vec<&'static ProviderKind>, Error> {
    let mut all: Vec<&'static ProviderKind> = inventory::iter::<ProviderKind>().collect();
    all.sort_by_key(|k| k.name);
    if let Some(w) = all.windows(2).find(|w| w[0].name == w[1].name) {
        return Err(Error::DuplicateKind {
            name: w[0].name.to_owned(),
        });
    }
    Ok(all)
}

/// The kind named `name`.
///
/// # Errors
/// [`Error::UnknownKind`] listing the kinds that exist, or
/// [`Error::DuplicateKind`].
pub fn find_kind(name: &str) -> Result<&'static ProviderKind, Error> {
    let all = kinds()?;
    all.iter()
        .find(|k| k.name == name)
        .copied()
        .ok_or_else(|| Error::UnknownKind {
            name: name.to_owned(),
            available: available(&all),
        })
}

fn available(all: &[&ProviderKind]) -> String {
    if all.is_empty() {
        "none (no provider crate is linked)".to_owned()
    } else {
        all.iter().map(|k| k.name).collect::<Vec<_>>().join(", ")
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

    inventory::submit! { ProviderKind { name: "zz-test", keys: &[], validate: accept_all, connect: never } }
    inventory::submit! { ProviderKind { name: "aa-test", keys: &[], validate: accept_all, connect: never } }

    #[test]
    fn kinds_are_listed_sorted() {
        let names: Vec<_> = kinds()
            .expect("no duplicates")
            .iter()
            .map(|k| k.name)
            .collect();
        assert_eq!(names, ["aa-test", "zz-test"]);
    }

    #[test]
    fn a_miss_lists_the_kinds_that_exist() {
        let err = find_kind("http").expect_err("no such kind");
        assert_eq!(
            err.to_string(),
            "unknown provider kind `http`; available kinds: aa-test, zz-test"
        );
        assert_eq!(find_kind("zz-test").expect("found").name, "zz-test");
    }
}
