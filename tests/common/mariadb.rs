//! A real MariaDB for the second engine's tests, from Debian's `mariadb-server`, started
//! through stampede's own `server::mariadb` code on a free port and stopped when the test
//! binary exits. Its `mariadb` command-line client is the independent check.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use stampede::server::mariadb::managed::{MariadbBinaries, MariadbServer};

static SERVER: OnceLock<MariadbServer> = OnceLock::new();

extern "C" fn stop_at_exit() {
    if let Some(server) = SERVER.get() {
        let _ = server.stop();
        let _ = std::fs::remove_dir_all(&server.root);
    }
}

pub fn mariadb() -> &'static MariadbServer {
    SERVER.get_or_init(|| {
        let binaries = MariadbBinaries::find("system").expect("mariadb-server is installed");
        let port = super::free_port();
        let root = PathBuf::from(format!(
            "/tmp/stampede-mariadb-{port}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&root);
        let mut server = MariadbServer::new(binaries, root, port).expect("a user to run it as");
        server.settings = vec![
            ("innodb_flush_log_at_trx_commit".into(), "0".into()),
            ("performance_schema".into(), "ON".into()),
            ("max_connections".into(), "200".into()),
        ];
        server.init().expect("mariadb-install-db");
        server.start().expect("mariadbd starts");
        // SAFETY: registering a plain extern "C" function with atexit.
        unsafe { libc::atexit(stop_at_exit) };
        server
    })
}

/// The socket path as a string, for flags.
pub fn socket() -> String {
    mariadb().socket().display().to_string()
}

/// Runs SQL through the `mariadb` client as root over the socket; tab-separated rows.
pub fn sql(db: &str, statement: &str) -> String {
    let output = Command::new("mariadb")
        .args(["--batch", "--skip-column-names", "-uroot"])
        .arg(format!("--socket={}", socket()))
        .args(if db.is_empty() { vec![] } else { vec![db] })
        .args(["-e", statement])
        .output()
        .expect("the mariadb client runs");
    assert!(
        output.status.success(),
        "{statement}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A new, empty database.
pub fn create_database(name: &str) -> String {
    sql(
        "",
        &format!("DROP DATABASE IF EXISTS {name}; CREATE DATABASE {name}"),
    );
    name.to_string()
}
