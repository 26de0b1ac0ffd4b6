//! Where an entry's program is, and with what environment it runs: the one
//! resolver of the start and of the kind's `check`, so that they agree.
//!
//! A name with a `/` is a path, taken from the capabilities file's folder
//! when relative; a bare name is looked up in the `PATH` the server gets,
//! as execvp(3) does, in `/bin:/usr/bin` when it gets none.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use spear_capabilities::kind::KindSettings;

use crate::ServerConfig;
use crate::expand::{Unexpanded, expand};

pub(crate) type Env = BTreeMap<OsString, OsString>;

/// `PATH` and `HOME` as `ours` has them, then the entry's `env`, which
/// wins, each `${NAME}` in it read from `ours`.
///
/// # Errors
/// The first `env` value that cannot be expanded, in words that name its
/// variable and never a value.
pub(crate) fn environment(
    config: &ServerConfig,
    ours: impl Fn(&str) -> Option<OsString>,
) -> Result<Env, String> {
    let mut env: Env = ["PATH", "HOME"]
        .into_iter()
        .filter_map(|name| Some((name.into(), ours(name)?)))
        .collect();
    for (name, value) in &config.env {
        let value = expand(value, &ours).map_err(|e| match e {
            Unexpanded::Unset(var) => format!(
                "the value of {name:?} in `env` names ${{{var}}}, which is not set in this environment"
            ),
            Unexpanded::Syntax(e) => format!("the value of {name:?} in `env`: {e}"),
        })?;
        env.insert(name.into(), value);
    }
    Ok(env)
}

/// A program: its name in messages, and each path to try in turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Program {
    pub(crate) shown: PathBuf,
    pub(crate) candidates: Vec<PathBuf>,
}

impl Program {
    /// Resolves `name` in `env`, a relative path from `base`.
    pub(crate) fn resolve(name: &str, base: &Path, env: &Env) -> Self {
        if name.contains('/') {
            let path = base.join(name);
            return Program {
                shown: path.clone(),
                candidates: vec![path],
            };
        }
        let path = env
            .get(OsStr::new("PATH"))
            .map_or("/bin:/usr/bin".as_ref(), |p| p.as_os_str());
        let dirs = path.as_bytes().split(|b| *b == b':');
        let candidates = dirs
            .map(|dir| Path::new(OsStr::from_bytes(dir)).join(name))
            .collect();
        Program {
            shown: name.into(),
            candidates,
        }
    }

    /// Whether a start could run it, as execvp(3) decides: the first
    /// executable file wins; one found but not executable (or a folder)
    /// makes it "Permission denied".
    pub(crate) fn runnable(&self) -> io::Result<()> {
        let (mut denied, mut last) = (None, io::Error::from_raw_os_error(libc::ENOENT));
        for candidate in &self.candidates {
            match std::fs::metadata(candidate) {
                Ok(m) if !m.is_dir() && m.permissions().mode() & 0o111 != 0 => return Ok(()),
                Ok(_) => denied = Some(io::Error::from_raw_os_error(libc::EACCES)),
                Err(e) if e.raw_os_error() == Some(libc::EACCES) => denied = Some(e),
                Err(e) => last = e,
            }
        }
        Err(denied.unwrap_or(last))
    }

    pub(crate) fn cannot_start(&self, e: &io::Error) -> String {
        format!("cannot start `{}`: {e}", self.shown.display())
    }
}

/// The kind's `check`: why the server of an entry cannot start, in the
/// start's words (settings that do not validate are not this check's).
pub(crate) fn check(settings: &KindSettings, base: &Path) -> Result<(), String> {
    let Ok(config) = ServerConfig::from_settings(settings) else {
        return Ok(());
    };
    let env = environment(&config, |name| std::env::var_os(name))
        .map_err(|e| format!("cannot start `{}`: {e}", config.command[0]))?;
    let program = Program::resolve(&config.command[0], base, &env);
    program.runnable().map_err(|e| program.cannot_start(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(path: Option<&str>) -> Env {
        path.map(|p| ("PATH".into(), p.into()))
            .into_iter()
            .collect()
    }

    #[test]
    fn paths_come_from_the_base_and_bare_names_from_path() {
        let base = Path::new("/opt/caps");
        for (name, want) in [
            ("bin/srv", "/opt/caps/bin/srv"),
            ("srv/", "/opt/caps/srv/"),
            ("/usr/bin/srv", "/usr/bin/srv"),
        ] {
            let p = Program::resolve(name, base, &env(Some("/x")));
            assert_eq!(p.candidates, [PathBuf::from(want)], "{name}");
        }
        let p = Program::resolve("srv", base, &env(Some("/a::/b")));
        assert_eq!(p.shown, Path::new("srv"));
        assert_eq!(
            p.candidates,
            [Path::new("/a/srv"), Path::new("srv"), Path::new("/b/srv")]
        );
        let p = Program::resolve("sh", base, &env(None));
        assert_eq!(
            p.candidates,
            [Path::new("/bin/sh"), Path::new("/usr/bin/sh")]
        );
        assert!(p.runnable().is_ok());
    }

    #[test]
    fn the_entrys_path_wins_over_ours() {
        let config = ServerConfig::new(["sh"]).with_env("PATH", "/nowhere");
        let env = environment(&config, |name| Some(format!("ours-{name}").into())).expect("env");
        assert_eq!(env[OsStr::new("PATH")], "/nowhere");
        assert_eq!(env[OsStr::new("HOME")], "ours-HOME");
        assert_eq!(environment(&config, |_| None).expect("env").len(), 1);
    }
}
