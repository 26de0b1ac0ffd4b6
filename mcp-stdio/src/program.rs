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
use std::path::{Path, PathBuf};

use rustix::fs::{Access, AtFlags, CWD, accessat};
use spear_capabilities::kind::{KindSettings, expand_host_strings};

use crate::ServerConfig;

pub(crate) type Env = BTreeMap<OsString, OsString>;

/// The program of `config` and its environment, as the start runs them
/// and the kind's `check` looks at them: `PATH` and `HOME` as `ours` has
/// them, then the entry's `env`, which wins, each `${NAME}` in it read from
/// `ours` now.
///
/// # Errors
/// What stops a start before the spawn, in its words: an empty command, an
/// `env` value that cannot be expanded (its variable named, never a value),
/// a working folder that is gone.
pub(crate) fn prepare(
    config: &ServerConfig,
    base: &Path,
    ours: impl Fn(&str) -> Option<OsString>,
) -> Result<(Program, Env), String> {
    let Some(name) = config.command.first() else {
        return Err("the command is empty".into());
    };
    let cannot_start = |why| format!("cannot start `{name}`: {why}");
    let vars = expand_host_strings("env", &config.env, &ours).map_err(cannot_start)?;
    let mut env: Env = ["PATH", "HOME"]
        .into_iter()
        .filter_map(|var| Some((var.into(), ours(var)?)))
        .collect();
    env.extend(vars.into_iter().map(|(var, value)| (var.into(), value)));
    let program = Program::resolve(name, base, &env);
    if !program.dir.is_dir() {
        let dir = program.dir.display();
        let why = format!(
            "its working folder {dir} (the capabilities file's) is not a folder that exists"
        );
        return Err(cannot_start(why));
    }
    Ok((program, env))
}

/// A program: its name in messages, each path to try in turn, and the
/// folder it runs in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Program {
    pub(crate) shown: PathBuf,
    pub(crate) candidates: Vec<PathBuf>,
    /// Where it runs: the capabilities file's folder, named absolutely.
    pub(crate) dir: PathBuf,
}

impl Program {
    /// Resolves `name` in `env`, a relative path from `base`, which is
    /// where it runs (the caller's folder if empty): named absolutely, so
    /// that a relative program is not taken from it twice once it runs there.
    pub(crate) fn resolve(name: &str, base: &Path, env: &Env) -> Self {
        let base = Path::new(".").join(base);
        let dir = std::path::absolute(&base).unwrap_or(base);
        if name.contains('/') {
            let path = dir.join(name);
            return Program {
                shown: path.clone(),
                candidates: vec![path],
                dir,
            };
        }
        let path = env
            .get(OsStr::new("PATH"))
            .map_or("/bin:/usr/bin".as_ref(), |p| p.as_os_str());
        // An entry that is not absolute is taken from where it runs.
        let entries = path.as_bytes().split(|b| *b == b':');
        let candidates = entries
            .map(|entry| dir.join(OsStr::from_bytes(entry)).join(name))
            .collect();
        Program {
            shown: name.into(),
            candidates,
            dir,
        }
    }

    /// Whether a start could run it, as execvp(3) decides: the first file
    /// this user may execute wins (the kernel says, as for the exec:
    /// owner, mode, ACLs, a `noexec` mount); one found but not executable
    /// (or a folder) makes it "Permission denied".
    pub(crate) fn runnable(&self) -> io::Result<()> {
        let (mut denied, mut last) = (false, libc::ENOENT);
        for candidate in &self.candidates {
            let may_run = || accessat(CWD, candidate, Access::EXEC_OK, AtFlags::EACCESS);
            last = match std::fs::metadata(candidate).map(|m| m.is_dir()) {
                Ok(false) => match may_run() {
                    Ok(()) => return Ok(()),
                    Err(e) => e.raw_os_error(),
                },
                Ok(true) => libc::EACCES,
                Err(e) => e.raw_os_error().unwrap_or(libc::EIO),
            };
            denied |= next_after(last).ok_or_else(|| io::Error::from_raw_os_error(last))?;
        }
        Err(io::Error::from_raw_os_error(if denied {
            libc::EACCES
        } else {
            last
        }))
    }

    pub(crate) fn cannot_start(&self, e: &io::Error) -> String {
        format!("cannot start `{}`: {e}", self.shown.display())
    }
}

/// As execvp(3), after a candidate failed with `errno`: on to the next
/// (`Some`, `true` for "Permission denied", which is said if no later one
/// runs), or stop with that error (`None`). The start's child and `check`
/// both ask this.
pub(crate) fn next_after(errno: i32) -> Option<bool> {
    match errno {
        libc::EACCES => Some(true),
        libc::ENOENT | libc::ENOTDIR | libc::ESTALE | libc::ENODEV | libc::ETIMEDOUT => Some(false),
        _ => None,
    }
}

/// The kind's `check`: why the server of an entry cannot start, in the
/// start's words (settings that do not validate are not this check's).
pub(crate) fn check(settings: &KindSettings, base: &Path) -> Result<(), String> {
    let Ok(config) = ServerConfig::from_settings(settings) else {
        return Ok(());
    };
    let (program, _) = prepare(&config, base, |var| std::env::var_os(var))?;
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
        // An empty or relative entry is taken from where the server runs.
        let p = Program::resolve("srv", base, &env(Some("/a::bin:/b")));
        assert_eq!(p.shown, Path::new("srv"));
        assert_eq!(
            p.candidates,
            ["/a/srv", "/opt/caps/srv", "/opt/caps/bin/srv", "/b/srv"].map(PathBuf::from)
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
        let ours = |name: &str| Some(format!("ours-{name}").into());
        let (_, env) = prepare(&config, Path::new("/"), ours).expect("prepared");
        assert_eq!(env[OsStr::new("PATH")], "/nowhere");
        assert_eq!(env[OsStr::new("HOME")], "ours-HOME");
        let (_, env) = prepare(&config, Path::new("/"), |_| None).expect("prepared");
        assert_eq!(env.len(), 1);
    }
}
