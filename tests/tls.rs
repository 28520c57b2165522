//! TLS against a real server with `ssl = on` and certificates made here (a CA, a server
//! certificate for `localhost`, a client certificate for the user `certuser`): every `sslmode`
//! connects or refuses as libpq does (psql on the same connection string is the reference), the
//! session is encrypted exactly when psql's is (the server's own log says), verify-full refuses
//! a name the certificate does not hold, and a client certificate authenticates under `cert`.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{stampede_with_env, stderr, stdout};
use stampede::server::host::OsUser;
use stampede::server::postgres::binaries::Binaries;
use stampede::server::postgres::cluster::Cluster;

const PASSWORD: &str = "tls-test-pw";

struct TlsServer {
    cluster: Cluster,
    certs: PathBuf,
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        let _ = self.cluster.stop();
        let _ = std::fs::remove_dir_all(&self.cluster.root);
    }
}

fn openssl(dir: &Path, args: &[&str]) {
    let output = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl runs");
    assert!(
        output.status.success(),
        "openssl {args:?}: {}",
        stderr(&output)
    );
}

/// A CA, a server certificate for `localhost` and a client certificate for `certuser`.
fn make_certificates(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-keyout",
            "ca.key",
            "-out",
            "ca.crt",
            "-subj",
            "/CN=stampede test CA",
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ],
    );
    for (name, subject, extensions) in [
        (
            "server",
            "/CN=localhost",
            "subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
        ),
        (
            "client",
            "/CN=certuser",
            "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n",
        ),
    ] {
        std::fs::write(dir.join(format!("{name}.ext")), extensions).unwrap();
        openssl(
            dir,
            &[
                "req", "-newkey", "rsa:2048", "-nodes", "-keyout", &format!("{name}.key"),
                "-out", &format!("{name}.csr"), "-subj", subject,
            ],
        );
        openssl(
            dir,
            &[
                "x509", "-req", "-in", &format!("{name}.csr"), "-CA", "ca.crt", "-CAkey",
                "ca.key", "-CAcreateserial", "-days", "2", "-out", &format!("{name}.crt"),
                "-extfile", &format!("{name}.ext"),
            ],
        );
    }
    // libpq and stampede refuse a private key others can read.
    use std::os::unix::fs::PermissionsExt;
    for key in ["ca.key", "server.key", "client.key"] {
        std::fs::set_permissions(dir.join(key), std::fs::Permissions::from_mode(0o600)).unwrap();
    }
}

fn start_server(binaries: Binaries, name: &str) -> TlsServer {
    let run_as = OsUser::for_server().expect("a user to run the server as");
    let port = common::free_port();
    let root = PathBuf::from(format!("/tmp/stampede-tls-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let cluster = Cluster {
        binaries,
        root: root.clone(),
        port,
        run_as: run_as.clone(),
        cpus: None,
    };
    let user = run_as
        .as_ref()
        .map_or("postgres".to_string(), |u| u.name.clone());
    cluster
        .init(&user, PASSWORD, &[("fsync", "off".to_string())])
        .expect("initdb");
    let certs = root.join("certs");
    make_certificates(&certs);
    // The server reads its key and CA from its data directory, as its own user.
    let data = cluster.data_dir();
    for file in ["server.crt", "server.key", "ca.crt"] {
        std::fs::copy(certs.join(file), data.join(file)).unwrap();
        if let Some(user) = &run_as {
            std::os::unix::fs::chown(data.join(file), Some(user.uid), Some(user.gid)).unwrap();
        }
    }
    let hba = "local all all trust\n\
               hostssl all certuser 127.0.0.1/32 cert\n\
               hostssl all sslonly 127.0.0.1/32 scram-sha-256\n\
               hostnossl all sslonly 127.0.0.1/32 reject\n\
               host all all 127.0.0.1/32 scram-sha-256\n";
    std::fs::write(data.join("pg_hba.conf"), hba).unwrap();
    cluster
        .reconfigure(&[
            ("ssl".into(), "on".into()),
            ("ssl_cert_file".into(), "server.crt".into()),
            ("ssl_key_file".into(), "server.key".into()),
            ("ssl_ca_file".into(), "ca.crt".into()),
            ("log_connections".into(), "on".into()),
        ])
        .unwrap();
    cluster.start().expect("server start");
    let server = TlsServer { cluster, certs };
    for user in ["certuser", "sslonly", "plain"] {
        server.psql_admin(&format!(
            "CREATE ROLE {user} LOGIN SUPERUSER PASSWORD '{PASSWORD}'"
        ));
    }
    server
}

impl TlsServer {
    fn psql_admin(&self, sql: &str) {
        let output = Command::new("psql")
            .args(["-X", "-q", "-h"])
            .arg(self.cluster.socket_dir())
            .args([
                "-p",
                &self.cluster.port.to_string(),
                "-d",
                "postgres",
                "-c",
                sql,
            ])
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("PGUSER", self.superuser())
            .output()
            .unwrap();
        assert!(output.status.success(), "{sql}: {}", stderr(&output));
    }

    fn superuser(&self) -> String {
        self.cluster
            .run_as
            .as_ref()
            .map_or("postgres".to_string(), |u| u.name.clone())
    }

    fn cert(&self, file: &str) -> String {
        self.certs.join(file).display().to_string()
    }

    /// A key=value string for `user` at `host`, tagged with `tag` as its application name.
    fn conninfo(&self, host: &str, user: &str, tag: &str, extra: &str) -> String {
        format!(
            "host={host} port={} user={user} dbname=postgres application_name={tag} {extra}",
            self.cluster.port
        )
    }

    /// The server's own word on the tagged session: None if it never authorized one,
    /// Some(true) if it was encrypted.
    fn session_encrypted(&self, tag: &str) -> Option<bool> {
        let log = std::fs::read_to_string(self.cluster.log_file()).unwrap_or_default();
        log.lines()
            .filter(|line| {
                line.contains("connection authorized")
                    && line.contains(&format!("application_name={tag}"))
            })
            .map(|line| line.contains("SSL enabled"))
            .next_back()
    }
}

/// A HOME of the test's own, so that no ~/.postgresql file of the machine takes part.
fn empty_home() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

fn psql(conninfo: &str, home: &Path) -> Output {
    Command::new("psql")
        .args(["-X", "-q", "-A", "-t", "-c", "SELECT 1"])
        .arg(conninfo)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("PGPASSWORD", PASSWORD)
        .output()
        .expect("psql runs")
}

fn stampede_pgbench(conninfo: &str, home: &Path) -> Output {
    let script = home.join("one.sql");
    std::fs::write(&script, "SELECT 1;\n").unwrap();
    stampede_with_env(
        &[
            "pgbench",
            "-n",
            "-t",
            "2",
            "-f",
            script.to_str().unwrap(),
            conninfo,
        ],
        &[("HOME", home.to_str().unwrap()), ("PGPASSWORD", PASSWORD)],
    )
}

#[test]
fn every_sslmode_connects_or_refuses_as_libpq_does() {
    let binaries = Binaries::find_best().expect("PostgreSQL binaries");
    let server = start_server(binaries, "modes");
    let home = empty_home();
    let ca = server.cert("ca.crt");
    let wrong_ca = server.cert("client.crt");
    let client_cert = format!(
        "sslcert={} sslkey={}",
        server.cert("client.crt"),
        server.cert("client.key")
    );
    // (host, user, settings, libpq's outcome: None = refused, Some(encrypted)).
    let cases: Vec<(&str, &str, String, Option<bool>)> = vec![
        ("localhost", "plain", "sslmode=disable".into(), Some(false)),
        ("localhost", "plain", "sslmode=allow".into(), Some(false)),
        ("localhost", "plain", "sslmode=prefer".into(), Some(true)),
        ("localhost", "plain", "".into(), Some(true)),
        ("localhost", "plain", "sslmode=require".into(), Some(true)),
        // No root certificate in HOME: verification cannot start.
        ("localhost", "plain", "sslmode=verify-ca".into(), None),
        (
            "localhost",
            "plain",
            format!("sslmode=verify-ca sslrootcert={ca}"),
            Some(true),
        ),
        (
            "127.0.0.1",
            "plain",
            format!("sslmode=verify-ca sslrootcert={ca}"),
            Some(true),
        ),
        (
            "localhost",
            "plain",
            format!("sslmode=verify-full sslrootcert={ca}"),
            Some(true),
        ),
        // The certificate names localhost, not the address.
        (
            "127.0.0.1",
            "plain",
            format!("sslmode=verify-full sslrootcert={ca}"),
            None,
        ),
        (
            "localhost",
            "plain",
            format!("sslmode=verify-ca sslrootcert={wrong_ca}"),
            None,
        ),
        // require with a root file verifies as verify-ca does.
        (
            "localhost",
            "plain",
            format!("sslmode=require sslrootcert={wrong_ca}"),
            None,
        ),
        // hostaddr is where to connect, host what the server is called: verify-full checks
        // the certificate against the host name, whatever the address.
        (
            "localhost",
            "plain",
            format!("hostaddr=127.0.0.1 sslmode=verify-full sslrootcert={ca}"),
            Some(true),
        ),
        (
            "127.0.0.2",
            "plain",
            format!("hostaddr=127.0.0.1 sslmode=verify-full sslrootcert={ca}"),
            None,
        ),
        // With an address, the host name is never looked up.
        (
            "nosuch.invalid",
            "plain",
            "hostaddr=127.0.0.1 sslmode=require".into(),
            Some(true),
        ),
        // sslonly may connect only over TLS: allow retries with it, disable cannot.
        ("localhost", "sslonly", "sslmode=disable".into(), None),
        ("localhost", "sslonly", "sslmode=allow".into(), Some(true)),
        ("localhost", "sslonly", "sslmode=prefer".into(), Some(true)),
        // certuser authenticates by client certificate only.
        ("localhost", "certuser", "sslmode=require".into(), None),
        (
            "localhost",
            "certuser",
            format!("sslmode=verify-full sslrootcert={ca} {client_cert}"),
            Some(true),
        ),
    ];
    for (index, (host, user, extra, expected)) in cases.iter().enumerate() {
        let theirs_tag = format!("psql{index}");
        let ours_tag = format!("stampede{index}");
        let reference = psql(
            &server.conninfo(host, user, &theirs_tag, extra),
            home.path(),
        );
        let ours = stampede_pgbench(&server.conninfo(host, user, &ours_tag, extra), home.path());
        let context = format!(
            "{host} {user} {extra}\npsql: {}\nstampede: {}",
            stderr(&reference),
            stderr(&ours)
        );
        let outcome = |output: &Output, tag: &str| {
            output.status.success().then(|| {
                server
                    .session_encrypted(tag)
                    .expect("an authorized session")
            })
        };
        assert_eq!(
            outcome(&reference, &theirs_tag),
            *expected,
            "psql: {context}"
        );
        assert_eq!(outcome(&ours, &ours_tag), *expected, "stampede: {context}");
        if expected.is_none() {
            assert_eq!(ours.status.code(), Some(1), "{context}");
        }
    }
    // Refused before connecting, with libpq's words.
    let missing_root = stampede_pgbench(
        &server.conninfo("localhost", "plain", "x", "sslmode=verify-full"),
        home.path(),
    );
    assert_eq!(missing_root.status.code(), Some(1));
    assert!(
        stderr(&missing_root).contains("/.postgresql/root.crt\" does not exist"),
        "{}",
        stderr(&missing_root)
    );
    several_clients_on_one_thread_read_tls_replies(&server, home.path());
}

/// Three clients on one thread wait in the thread's sweep under TLS as over plain TCP, and
/// read replies of many TLS records (rustls may hold decrypted replies that poll(2) cannot see).
fn several_clients_on_one_thread_read_tls_replies(server: &TlsServer, home: &Path) {
    let script = home.join("large.sql");
    std::fs::write(
        &script,
        "SELECT repeat('x', 40000) FROM generate_series(1, 3);\nSELECT 1;\n",
    )
    .unwrap();
    let conninfo = server.conninfo("localhost", "plain", "swept", "sslmode=require");
    let args = [
        "pgbench",
        "-n",
        "-c",
        "3",
        "-j",
        "1",
        "-t",
        "30",
        "-f",
        script.to_str().unwrap(),
        &conninfo,
    ];
    let run = stampede_with_env(
        &args,
        &[("HOME", home.to_str().unwrap()), ("PGPASSWORD", PASSWORD)],
    );
    assert!(run.status.success(), "{}", stderr(&run));
    assert!(
        stdout(&run).contains("number of transactions actually processed: 90/90"),
        "{}",
        stdout(&run)
    );
    assert_eq!(server.session_encrypted("swept"), Some(true));
    // The server's own word: each of the three clients' sessions was encrypted.
    let log = std::fs::read_to_string(server.cluster.log_file()).unwrap_or_default();
    let encrypted = log
        .lines()
        .filter(|line| line.contains("connection authorized"))
        .filter(|line| line.contains("application_name=swept SSL enabled"))
        .count();
    assert_eq!(encrypted, 3, "{log}");
}

#[test]
fn the_pgssl_variables_and_uris_reach_every_connection() {
    let binaries = Binaries::find_best().expect("PostgreSQL binaries");
    let server = start_server(binaries, "env");
    let home = empty_home();
    let script = home.path().join("one.sql");
    std::fs::write(&script, "SELECT 1;\n").unwrap();
    let port = server.cluster.port.to_string();
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let mut all = vec!["pgbench", "-n", "-t", "1", "-f", script.to_str().unwrap()];
        all.extend_from_slice(args);
        let mut env = env.to_vec();
        env.extend([
            ("HOME", home.path().to_str().unwrap()),
            ("PGPASSWORD", PASSWORD),
        ]);
        stampede_with_env(&all, &env)
    };
    let ca = server.cert("ca.crt");
    let flags = ["-h", "localhost", "-p", &port, "-U", "plain", "postgres"];
    let with_env = run(
        &flags,
        &[
            ("PGSSLMODE", "verify-full"),
            ("PGSSLROOTCERT", &ca),
            ("PGAPPNAME", "fromenv"),
        ],
    );
    assert!(with_env.status.success(), "{}", stderr(&with_env));
    assert_eq!(server.session_encrypted("fromenv"), Some(true));
    assert_eq!(server.session_encrypted("fromenv-control"), Some(true));
    let uri = format!(
        "postgresql://plain@localhost:{port}/postgres?sslmode=verify-full&sslrootcert={}&application_name=fromuri",
        ca.replace('/', "%2F")
    );
    let with_uri = run(&[&uri], &[]);
    assert!(with_uri.status.success(), "{}", stderr(&with_uri));
    assert_eq!(server.session_encrypted("fromuri"), Some(true));
    let refused = run(&flags, &[("PGSSLMODE", "sometimes")]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(stderr(&refused).contains("invalid sslmode value: \"sometimes\""));
    // A results database asked for TLS gets it (the report then finds no lab in it).
    let results = format!(
        "postgresql://plain@localhost:{port}/postgres?sslmode=verify-full&sslrootcert={}&application_name=results",
        ca.replace('/', "%2F")
    );
    let home_text = home.path().to_str().unwrap();
    let _ = stampede_with_env(
        &["report", &results, "--format", "json"],
        &[("HOME", home_text), ("PGPASSWORD", PASSWORD)],
    );
    assert_eq!(server.session_encrypted("results"), Some(true));
}

/// `sslnegotiation=direct` needs PostgreSQL 17: the handshake starts at once (ALPN
/// "postgresql"), and weaker modes are refused as libpq refuses them.
#[test]
fn direct_negotiation_reaches_a_postgresql_17_server() {
    let download = stampede_with_env(&["server", "download", "17"], &[]);
    assert!(download.status.success(), "{}", stderr(&download));
    let bin = PathBuf::from(String::from_utf8_lossy(&download.stdout).trim());
    let binaries = Binaries::at(&bin).expect("PostgreSQL 17 binaries");
    let server = start_server(binaries, "direct");
    let home = empty_home();
    let ca = server.cert("ca.crt");
    let direct = stampede_pgbench(
        &server.conninfo(
            "localhost",
            "plain",
            "direct",
            &format!("sslmode=verify-full sslrootcert={ca} sslnegotiation=direct"),
        ),
        home.path(),
    );
    assert!(direct.status.success(), "{}", stderr(&direct));
    assert_eq!(server.session_encrypted("direct"), Some(true));
    assert_eq!(server.session_encrypted("direct-control"), Some(true));
    let weak = stampede_pgbench(
        &server.conninfo(
            "localhost",
            "plain",
            "weak",
            "sslmode=prefer sslnegotiation=direct",
        ),
        home.path(),
    );
    assert_eq!(weak.status.code(), Some(1));
    assert!(
        stderr(&weak)
            .contains("weak sslmode \"prefer\" may not be used with sslnegotiation=direct"),
        "{}",
        stderr(&weak)
    );
}

/// `.pgpass` is matched by the host name when `hostaddr` gives the address, as libpq does: an
/// entry for `localhost` serves `host=localhost hostaddr=127.0.0.1`, with no PGPASSWORD.
#[test]
fn pgpass_is_matched_by_host_name_when_hostaddr_is_given() {
    let binaries = Binaries::find_best().expect("PostgreSQL binaries");
    let server = start_server(binaries, "pgpass");
    let home = empty_home();
    let pgpass = home.path().join(".pgpass");
    std::fs::write(
        &pgpass,
        format!("localhost:{}:*:plain:{PASSWORD}\n", server.cluster.port),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).unwrap();
    let conninfo = |tag: &str| {
        server.conninfo(
            "localhost",
            "plain",
            tag,
            "hostaddr=127.0.0.1 sslmode=require",
        )
    };
    let theirs = Command::new("psql")
        .args(["-X", "-q", "-A", "-t", "-c", "SELECT 1"])
        .arg(conninfo("psql_pgpass"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .output()
        .expect("psql runs");
    assert!(theirs.status.success(), "psql: {}", stderr(&theirs));
    let script = home.path().join("one.sql");
    std::fs::write(&script, "SELECT 1;\n").unwrap();
    let ours = stampede_with_env(
        &[
            "pgbench",
            "-n",
            "-t",
            "1",
            "-f",
            script.to_str().unwrap(),
            &conninfo("stampede_pgpass"),
        ],
        &[("HOME", home.path().to_str().unwrap())],
    );
    assert!(ours.status.success(), "stampede: {}", stderr(&ours));
    assert_eq!(server.session_encrypted("stampede_pgpass"), Some(true));
}
