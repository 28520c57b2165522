//! A lab target's server: where its binaries come from (`BinarySource`), a cluster initialised
//! with a profile's settings and started on a free port (`ProvisionedServer`), brought back
//! after a crash, and the connections the lab opens to it. Adding a binary source or another
//! kind of target touches this file, not the lab.

use stampede_base::error::Failure;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::binaries::Binaries;
use super::cluster::Cluster;
use super::profile::Postgres;
use crate::server::free_port;
use crate::server::host::OsUser;
use crate::server::profile::{self, Machine, ServerConfig};
use crate::server::setup::SetupEvent;
use stampede_conn::ConnSpec;
use stampede_control::postgres::queries::{query_string, server_version_num};
use stampede_store::ZONKY_BINARIES;

/// Where a target's server binaries come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BinarySource {
    /// The best binaries on this machine (`pg_config`, `/usr/lib/postgresql/*/bin`).
    System,
    /// A bin/ directory (a package's, or a user's own build).
    BinDir(PathBuf),
    /// A major ("16", "19") or exact version ("16.4.0", "19rc1"): zonky's download, else the
    /// release tarball built from source (`release.rs`).
    Version(String),
    /// Built from a source tarball or directory (cached by content and flags).
    Build(super::build::BuildRequest),
    /// Built from a git repository's ref; the request's source is filled in by the checkout.
    Git(super::git_source::GitSource, super::build::BuildRequest),
    /// Debian's own build of a major or release (`{ debian = "18" }`), unpacked.
    Debian(String),
}

/// `targets.binary_source` of binaries stampede built from source (followed by the build's
/// description).
pub const BUILT_BINARIES: &str = "built from source";

impl BinarySource {
    /// Finds, downloads or builds the binaries, telling `events` what takes time.
    pub fn resolve(&self, events: &mut dyn FnMut(SetupEvent<'_>)) -> Result<Binaries, Failure> {
        match self {
            BinarySource::System => Binaries::find_best(),
            BinarySource::BinDir(dir) => Binaries::at(dir),
            BinarySource::Version(version) => super::release::binaries(version, events),
            BinarySource::Debian(version) => super::release::debian_binaries(version, events),
            BinarySource::Build(request) => build_announced(request, events),
            BinarySource::Git(git, request) => {
                let export = git.export(events)?;
                let request = super::build::BuildRequest {
                    source: export.tarball,
                    origin: Some(format!("{} ({})", git.describe(), &export.commit[..12])),
                    ..request.clone()
                };
                build_announced(&request, events)
            }
        }
    }

    /// Checks, without downloading or building, that the binaries can be had: a version
    /// that neither zonky nor Debian's source packages carry is refused here, before any
    /// target is provisioned.
    pub fn check(&self) -> Result<(), Failure> {
        match self {
            BinarySource::Version(version) => super::release::check(version),
            BinarySource::Debian(version) => super::release::check_debian(version),
            _ => Ok(()),
        }
    }

    /// As the spec names it: "system", the bin/ path, or the version.
    pub fn spec_text(&self) -> String {
        match self {
            BinarySource::System => "system".into(),
            BinarySource::BinDir(dir) => dir.display().to_string(),
            BinarySource::Version(version) => version.clone(),
            BinarySource::Build(request) => request.source.display().to_string(),
            BinarySource::Git(git, _) => git.describe(),
            BinarySource::Debian(version) => format!("debian {version}"),
        }
    }

    /// Who built the binaries at `bin_dir`, as reports name it (a build with its description).
    pub fn provenance(&self, bin_dir: &Path) -> String {
        match self {
            BinarySource::System => "system packages".into(),
            // A bin/ of stampede's own builds (a bisection's commits) says how it was built.
            BinarySource::BinDir(_) => match super::build::record_of(bin_dir) {
                Some(record) => format!("{BUILT_BINARIES}: {}", record.describe()),
                None => "bin/ path".into(),
            },
            BinarySource::Version(_) | BinarySource::Build(_) | BinarySource::Git(..) => {
                match super::build::record_of(bin_dir) {
                    Some(record) => format!("{BUILT_BINARIES}: {}", record.describe()),
                    None if matches!(self, BinarySource::Version(_)) => {
                        crate::server::debian::packages::record_of(bin_dir)
                            .unwrap_or_else(|| ZONKY_BINARIES.into())
                    }
                    None => BUILT_BINARIES.into(),
                }
            }
            BinarySource::Debian(_) => crate::server::debian::packages::record_of(bin_dir)
                .unwrap_or_else(|| "Debian's packages".into()),
        }
    }
}

/// Builds `request` (or takes it from the cache), each step said as it starts and ends.
fn build_announced(
    request: &super::build::BuildRequest,
    events: &mut dyn FnMut(SetupEvent<'_>),
) -> Result<Binaries, Failure> {
    let mut announce = |step: super::build::Step, seconds: Option<f64>| {
        let note = match seconds {
            Some(seconds) => format!("build: {} done in {seconds:.1} s", step.name()),
            None => format!("build: {}...", step.name()),
        };
        events(SetupEvent::Note(&note));
    };
    super::build::build(request, &mut announce).map(|built| built.binaries)
}

/// A started cluster the lab owns.
pub struct ProvisionedServer {
    pub cluster: Cluster,
    pub superuser: String,
    pub version_num: i64,
}

impl ProvisionedServer {
    /// initdb under `root` (once) with the profile's settings, then start on a free port.
    pub fn provision(
        binaries: &Binaries,
        root: &Path,
        config: &ServerConfig<'_>,
    ) -> Result<ProvisionedServer, Failure> {
        let run_as = OsUser::for_server()?;
        let superuser = run_as
            .as_ref()
            .map(|u| u.name.clone())
            .or_else(|| std::env::var("USER").ok())
            .unwrap_or_else(|| "postgres".into());
        let cluster = Cluster {
            binaries: binaries.clone(),
            root: root.to_path_buf(),
            port: free_port(None)?,
            run_as,
            cpus: config.cpus.clone(),
        };
        if let Some(parent) = root.parent() {
            std::fs::create_dir_all(parent).map_err(|e| {
                Failure::run(format!("could not create {}: {e}", parent.display())).caused_by(e)
            })?;
        }
        let machine = Machine::probe(root);
        let settings = profile::settings::<Postgres>(
            config.profile,
            &machine,
            config.max_clients,
            config.settings,
        )?;
        if !cluster.is_initialized() {
            // Only the local socket (trust) is used by the lab; the TCP password is never kept.
            let password = random_password()?;
            let borrowed: Vec<(&str, String)> = settings
                .iter()
                .map(|(n, v)| (n.as_str(), v.clone()))
                .collect();
            cluster.init(&superuser, &password, &borrowed)?;
        } else {
            // A new port (and the same settings) for a cluster made by an earlier invocation.
            cluster.reconfigure(&settings)?;
        }
        if cluster.is_running() {
            cluster.stop()?;
        }
        cluster.start()?;
        let mut server = ProvisionedServer {
            cluster,
            superuser,
            version_num: 0,
        };
        server.version_num = server_version_num(&server.pg_conn("postgres"))?;
        Ok(server)
    }

    /// Whether the server answers (a process check alone can be fooled by an unreaped one).
    pub fn alive(&self) -> bool {
        query_string(&self.pg_conn("postgres"), "SELECT 1").is_ok()
    }

    /// A control session: setup, probes; kept out of pg_stat_statements.
    pub fn pg_conn(&self, database: &str) -> ConnSpec {
        self.workload_conn(database).untracked()
    }

    /// The measured workload's sessions.
    pub fn workload_conn(&self, database: &str) -> ConnSpec {
        ConnSpec {
            application_name: "stampede-lab".into(),
            connect_timeout: Some(Duration::from_secs(10)),
            ..ConnSpec::on_socket(
                &self.cluster.socket_dir(),
                self.cluster.port,
                &self.superuser,
                database,
            )
        }
    }

    /// Starts the server again after a crash, or after it stopped answering: a server that
    /// still runs then is killed first (a new postmaster will not start beside it). A killed
    /// postmaster's lock file and orphaned backends linger until it is reaped, so this retries
    /// for a while.
    pub fn restart(&self) -> Result<(), Failure> {
        self.cluster.kill_hung();
        let mut last = Ok(());
        for _ in 0..30 {
            last = self.cluster.start();
            if last.is_ok() {
                return last;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        last
    }

    /// The clause that makes `CREATE DATABASE … TEMPLATE` copy files: PostgreSQL 15 copies
    /// template databases through the WAL by default, and a file copy (after the checkpoint it
    /// forces) is much faster for benchmark-sized data. Empty before 15, which only copies files.
    pub fn file_copy_clause(&self) -> &'static str {
        if self.cluster.binaries.major().is_some_and(|m| m >= 15) {
            " STRATEGY FILE_COPY"
        } else {
            ""
        }
    }

    /// How a run's pristine copy of a dataset is made, as reports name it.
    pub fn restore_method(&self) -> &'static str {
        if self.file_copy_clause().is_empty() {
            "template database"
        } else {
            "template database (STRATEGY FILE_COPY)"
        }
    }
}

/// 36 hex digits from the system's random source. A source that cannot be read is an error:
/// a password made of zeros would look as safe as a random one.
pub fn random_password() -> Result<String, Failure> {
    random_password_from(std::path::Path::new("/dev/urandom"))
}

fn random_password_from(source: &std::path::Path) -> Result<String, Failure> {
    let mut bytes = [0u8; 18];
    std::fs::File::open(source)
        .and_then(|mut random| std::io::Read::read_exact(&mut random, &mut bytes))
        .map_err(|e| {
            Failure::run(format!(
                "could not read {} for the server's password: {e}",
                source.display()
            ))
            .caused_by(e)
        })?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_is_random_hex_or_an_error() {
        let one = random_password().unwrap();
        assert_eq!(one.len(), 36);
        assert!(one.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(one, random_password().unwrap());
        let missing = std::path::Path::new("/nonexistent/urandom");
        let error = random_password_from(missing).unwrap_err();
        assert!(
            error
                .message()
                .starts_with("could not read /nonexistent/urandom for the server's password: "),
            "{error:?}"
        );
        // A source that ends early (an empty file) is refused too, not padded with zeros.
        assert!(random_password_from(std::path::Path::new("/dev/null")).is_err());
    }
}
