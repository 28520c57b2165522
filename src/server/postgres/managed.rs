//! The managed default server: a cluster stampede creates on first use and starts when needed,
//! so that `stampede pgbench -i` works with no connection options at all.

use stampede_base::error::Failure;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::binaries::Binaries;
use super::cluster::Cluster;
use super::provision::random_password;
use crate::server::free_port;
use crate::server::host::OsUser;
use crate::server::setup::SetupEvent;
use stampede_conn::ConnSpec;

const STATE_FILE: &str = "stampede-server.json";
const DATABASE: &str = "stampede";
const FIRST_PORT: u16 = 15432;

/// What stampede remembers about the default server between runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct ServerState {
    bin_dir: PathBuf,
    port: u16,
    superuser: String,
    /// For TCP connections only (sockets are trusted); the state file is 0600.
    password: String,
}

pub struct ManagedServer {
    cluster: Cluster,
    state: ServerState,
}

/// Where the default server lives: `STAMPEDE_HOME`, else the XDG data directory. Root's home is
/// not reachable by the unprivileged server user, so root uses /var/lib/stampede.
pub fn default_home() -> PathBuf {
    if let Some(home) = std::env::var_os("STAMPEDE_HOME") {
        return PathBuf::from(home);
    }
    if stampede_base::sys::is_root() {
        return PathBuf::from("/var/lib/stampede");
    }
    let data_home = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    data_home.join("stampede")
}

fn server_root(home: &Path) -> PathBuf {
    home.join("default-server")
}

impl ManagedServer {
    /// The existing default server, if one was created.
    pub fn open(home: &Path) -> Result<Option<ManagedServer>, Failure> {
        let root = server_root(home);
        let state_path = root.join(STATE_FILE);
        let Ok(text) = std::fs::read_to_string(&state_path) else {
            return Ok(None);
        };
        let state: ServerState = serde_json::from_str(&text).map_err(|e| {
            Failure::run(format!("corrupt {}: {e}", state_path.display())).caused_by(e)
        })?;
        let cluster = Cluster {
            binaries: Binaries::at(&state.bin_dir)?,
            root,
            port: state.port,
            run_as: OsUser::for_server()?,
            cpus: None,
        };
        Ok(Some(ManagedServer { cluster, state }))
    }

    /// Opens the default server, creating it first if needed, and starts it if it is down.
    /// Returns the server and whether it was created now.
    pub fn ensure_running(
        home: &Path,
        events: &mut dyn FnMut(SetupEvent<'_>),
    ) -> Result<(ManagedServer, bool), Failure> {
        let (server, created) = match ManagedServer::open(home)? {
            Some(server) => (server, false),
            None => (ManagedServer::create(home, events)?, true),
        };
        if !server.cluster.is_running() {
            server.cluster.start()?;
        }
        if created {
            server.create_database()?;
        }
        Ok((server, created))
    }

    fn create(
        home: &Path,
        events: &mut dyn FnMut(SetupEvent<'_>),
    ) -> Result<ManagedServer, Failure> {
        let binaries = match Binaries::find_best() {
            Ok(binaries) => binaries,
            Err(_) => newest_download(events)?,
        };
        let run_as = OsUser::for_server()?;
        let superuser = match &run_as {
            Some(user) => user.name.clone(),
            None => current_user_name(),
        };
        let state = ServerState {
            bin_dir: binaries.bin_dir.clone(),
            port: free_port(Some(FIRST_PORT..FIRST_PORT + 500))?,
            superuser: superuser.clone(),
            password: random_password()?,
        };
        let cluster = Cluster {
            binaries,
            root: server_root(home),
            port: state.port,
            run_as,
            cpus: None,
        };
        if cluster.is_initialized() {
            return Err(Failure::run(format!(
                "{} holds a cluster but no {STATE_FILE}; remove it or run `stampede server destroy`",
                cluster.root.display()
            )));
        }
        cluster.init(&superuser, &state.password, &[])?;
        let state_path = cluster.root.join(STATE_FILE);
        let json = serde_json::to_string_pretty(&state).expect("plain data serializes to JSON");
        write_private(&state_path, &json)?;
        Ok(ManagedServer { cluster, state })
    }

    fn create_database(&self) -> Result<(), Failure> {
        let spec = ConnSpec {
            dbname: "postgres".into(),
            ..self.conn_spec()
        };
        stampede_conn::control_runtime().block_on(async {
            let (client, connection) = spec.connect_control().await.map_err(|e| {
                Failure::run(format!("could not connect to the managed server: {e}")).caused_by(e)
            })?;
            tokio::spawn(connection);
            client
                .batch_execute(&format!("CREATE DATABASE {DATABASE}"))
                .await
                .map_err(|e| {
                    Failure::run(format!("could not create database {DATABASE}: {e}")).caused_by(e)
                })
        })
    }

    pub fn conn_spec(&self) -> ConnSpec {
        ConnSpec {
            password: Some(self.state.password.clone()),
            ..ConnSpec::on_socket(
                &self.cluster.socket_dir(),
                self.state.port,
                &self.state.superuser,
                DATABASE,
            )
        }
    }

    /// The one line stampede prints when it uses this server.
    pub fn describe(&self) -> String {
        format!(
            "using the managed default server: {} at {} (port {}, socket {}; `stampede server status` for details)",
            self.cluster.binaries.version,
            self.cluster.data_dir().display(),
            self.state.port,
            self.cluster.socket_dir().display()
        )
    }

    pub fn status_lines(&self) -> Vec<String> {
        let running = self.cluster.is_running();
        vec![
            format!("server:     {}", self.cluster.binaries.version),
            format!("binaries:   {}", self.cluster.binaries.bin_dir.display()),
            format!("data:       {}", self.cluster.data_dir().display()),
            format!("log:        {}", self.cluster.log_file().display()),
            format!(
                "state:      {}",
                if running { "running" } else { "stopped" }
            ),
            format!(
                "connect:    host={} port={} user={} dbname={}",
                self.cluster.socket_dir().display(),
                self.state.port,
                self.state.superuser,
                DATABASE
            ),
            format!(
                "tcp:        host=127.0.0.1 port={} (password in {})",
                self.state.port,
                self.cluster.root.join(STATE_FILE).display()
            ),
        ]
    }

    pub fn stop(&self) -> Result<bool, Failure> {
        if !self.cluster.is_running() {
            return Ok(false);
        }
        self.cluster.stop()?;
        Ok(true)
    }

    pub fn destroy(self) -> Result<PathBuf, Failure> {
        self.stop()?;
        std::fs::remove_dir_all(&self.cluster.root).map_err(|e| {
            Failure::run(format!(
                "could not remove {}: {e}",
                self.cluster.root.display()
            ))
            .caused_by(e)
        })?;
        Ok(self.cluster.root)
    }
}

/// With no PostgreSQL on the machine, the newest major zonky publishes, downloaded into the
/// cache (once; later servers find it there).
fn newest_download(events: &mut dyn FnMut(SetupEvent<'_>)) -> Result<Binaries, Failure> {
    let newest = super::download::MAJORS[super::download::MAJORS.len() - 1];
    events(SetupEvent::Note(&format!(
        "no PostgreSQL server binaries on this machine: using PostgreSQL {newest} from Maven Central (zonky build) in {}",
        crate::server::host::cache_root().display()
    )));
    super::download::binaries(newest, events)
}

fn write_private(path: &Path, content: &str) -> Result<(), Failure> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| {
            Failure::run(format!("could not write {}: {e}", path.display())).caused_by(e)
        })?;
    file.write_all(content.as_bytes())
        .map_err(|e| Failure::run(format!("could not write {}: {e}", path.display())).caused_by(e))
}

fn current_user_name() -> String {
    std::env::var("USER").unwrap_or_else(|_| "postgres".into())
}
