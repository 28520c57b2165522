//! TLS as libpq does it: the six `sslmode` values with libpq's defaults and meanings, the root
//! certificate, a client certificate, and direct negotiation, for every connection stampede
//! makes (the measured path in `driver/` and the control sessions through tokio-postgres).

mod control;
mod verify;

pub use control::{PgTlsConnector, PgTlsStream};

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore};

use crate::ConnSpecError;

/// libpq's `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SslMode {
    Disable,
    /// Plain first; TLS only if the server refuses the plain connection.
    Allow,
    /// TLS if the server offers it (libpq's default).
    #[default]
    Prefer,
    /// TLS or nothing; the certificate is checked only when a root certificate file exists.
    Require,
    /// TLS with a certificate signed by a trusted root.
    VerifyCa,
    /// As verify-ca, and the certificate names the host.
    VerifyFull,
}

impl SslMode {
    pub fn parse(text: &str) -> Result<SslMode, ConnSpecError> {
        Ok(match text {
            "disable" => SslMode::Disable,
            "allow" => SslMode::Allow,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            _ => {
                return Err(ConnSpecError::Value {
                    keyword: "sslmode",
                    value: text.into(),
                })
            }
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Allow => "allow",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }

    /// Whether a connection without TLS is refused.
    pub fn requires_tls(self) -> bool {
        matches!(
            self,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull
        )
    }
}

/// The TLS part of a connection's settings (`sslmode`, `sslrootcert`, `sslcert`, `sslkey`,
/// `sslnegotiation`), from a connection string or the `PGSSL*` variables.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsSettings {
    pub mode: SslMode,
    pub root_cert: Option<String>,
    pub cert: Option<String>,
    pub key: Option<String>,
    /// `sslnegotiation=direct`: the TLS handshake starts at once, without SSLRequest (17+).
    pub direct: bool,
}

/// `sslrootcert=system`: the operating system's trusted roots.
const SYSTEM_ROOTS: &str = "system";

impl TlsSettings {
    /// The `PGSSLMODE`, `PGSSLROOTCERT`, `PGSSLCERT`, `PGSSLKEY` and `PGSSLNEGOTIATION` variables.
    pub fn from_env() -> Result<TlsSettings, ConnSpecError> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let mut settings = TlsSettings::default();
        if let Some(mode) = var("PGSSLMODE") {
            settings.set("sslmode", &mode)?;
        }
        for (key, name) in [
            ("sslrootcert", "PGSSLROOTCERT"),
            ("sslcert", "PGSSLCERT"),
            ("sslkey", "PGSSLKEY"),
            ("sslnegotiation", "PGSSLNEGOTIATION"),
        ] {
            if let Some(value) = var(name) {
                settings.set(key, &value)?;
            }
        }
        Ok(settings)
    }

    /// Takes one connection-string keyword; false when it is not a TLS one.
    pub fn set(&mut self, key: &str, value: &str) -> Result<bool, ConnSpecError> {
        match key {
            "sslmode" => self.mode = SslMode::parse(value)?,
            // libpq's JDBC-compatible spelling in URIs.
            "ssl" if value == "true" => self.mode = SslMode::Require,
            "sslrootcert" => self.root_cert = Some(value.to_string()),
            "sslcert" => self.cert = Some(value.to_string()),
            "sslkey" => self.key = Some(value.to_string()),
            "sslnegotiation" => {
                self.direct = match value {
                    "postgres" => false,
                    "direct" => true,
                    _ => {
                        return Err(ConnSpecError::Value {
                            keyword: "sslnegotiation",
                            value: value.into(),
                        })
                    }
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// libpq's checks of combinations, made before connecting.
    pub fn check(&self) -> Result<(), ConnSpecError> {
        if self.direct && !self.mode.requires_tls() {
            return Err(ConnSpecError::Conflict(format!(
                "weak sslmode \"{}\" may not be used with sslnegotiation=direct (use \"require\", \"verify-ca\", or \"verify-full\")",
                self.mode.name()
            )));
        }
        if self.root_cert.as_deref() == Some(SYSTEM_ROOTS) && self.mode != SslMode::VerifyFull {
            return Err(ConnSpecError::Conflict(format!(
                "weak sslmode \"{}\" may not be used with sslrootcert=system (use \"verify-full\")",
                self.mode.name()
            )));
        }
        Ok(())
    }

    /// The rustls configuration for `host`, or None when this connection never uses TLS.
    pub fn client_config(&self) -> Result<Option<Arc<ClientConfig>>, ConnSpecError> {
        if self.mode == SslMode::Disable {
            return Ok(None);
        }
        self.check()?;
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let roots = self.root_store()?;
        let verifier = verify::for_mode(self.mode, roots, provider.clone())?;
        let builder = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| ConnSpecError::Tls(format!("could not set up TLS: {e}")))?
            .dangerous()
            .with_custom_certificate_verifier(verifier);
        let mut config = match self.client_certificate()? {
            Some((chain, key)) => builder.with_client_auth_cert(chain, key).map_err(|e| {
                ConnSpecError::Tls(format!("could not load client certificate: {e}"))
            })?,
            None => builder.with_no_client_auth(),
        };
        // libpq 17 and later always offer ALPN "postgresql"; direct negotiation requires it.
        config.alpn_protocols = vec![b"postgresql".to_vec()];
        Ok(Some(Arc::new(config)))
    }

    /// The trusted roots: `sslrootcert`, else `~/.postgresql/root.crt` when it exists. With no
    /// file, verify-ca and verify-full fail as libpq does; require then checks nothing.
    fn root_store(&self) -> Result<Option<RootCertStore>, ConnSpecError> {
        let path = match &self.root_cert {
            Some(path) if path == SYSTEM_ROOTS => return system_roots().map(Some),
            Some(path) => PathBuf::from(path),
            None => default_file("root.crt"),
        };
        if !path.exists() {
            if matches!(self.mode, SslMode::VerifyCa | SslMode::VerifyFull) {
                return Err(ConnSpecError::file(&path, format!(
                    "root certificate file \"{}\" does not exist\nEither provide the file, use the system's trusted roots with sslrootcert=system, or change sslmode to disable server certificate verification.",
                    path.display()
                )));
            }
            return Ok(None);
        }
        let mut store = RootCertStore::empty();
        for cert in read_certificates(&path)? {
            store.add(cert).map_err(|e| {
                ConnSpecError::file(
                    &path,
                    format!(
                        "could not read root certificate file \"{}\": {e}",
                        path.display()
                    ),
                )
            })?;
        }
        Ok(Some(store))
    }

    /// `sslcert`/`sslkey`, else `~/.postgresql/postgresql.crt`/`.key`; a missing certificate
    /// file means no client certificate, as with libpq.
    fn client_certificate(
        &self,
    ) -> Result<Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>, ConnSpecError> {
        let cert = self
            .cert
            .as_ref()
            .map_or_else(|| default_file("postgresql.crt"), PathBuf::from);
        if !cert.exists() {
            return Ok(None);
        }
        let key = self
            .key
            .as_ref()
            .map_or_else(|| default_file("postgresql.key"), PathBuf::from);
        if !key.exists() {
            return Err(ConnSpecError::file(
                &key,
                format!(
                    "certificate present, but not private key file \"{}\"",
                    key.display()
                ),
            ));
        }
        check_key_permissions(&key)?;
        let chain = read_certificates(&cert)?;
        let key = PrivateKeyDer::from_pem_file(&key).map_err(|e| {
            ConnSpecError::file(
                &key,
                format!("could not load private key file \"{}\": {e}", key.display()),
            )
        })?;
        Ok(Some((chain, key)))
    }
}

/// The configuration for `settings`, built once per distinct settings: every client of a run
/// shares it instead of reading the certificate files again.
pub fn cached_client_config(
    settings: &TlsSettings,
) -> Result<Option<Arc<ClientConfig>>, ConnSpecError> {
    type Cache = std::sync::Mutex<Option<(TlsSettings, Option<Arc<ClientConfig>>)>>;
    static CACHE: Cache = std::sync::Mutex::new(None);
    let mut cache = CACHE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((cached, config)) = cache.as_ref() {
        if cached == settings {
            return Ok(config.clone());
        }
    }
    let config = settings.client_config()?;
    *cache = Some((settings.clone(), config.clone()));
    Ok(config)
}

/// The name rustls checks the certificate against: the host as an address or a DNS name.
pub fn server_name(host: &str) -> Result<ServerName<'static>, ConnSpecError> {
    ServerName::try_from(host.to_string())
        .map_err(|_| ConnSpecError::Tls(format!("invalid host name for TLS: \"{host}\"")))
}

fn default_file(name: &str) -> PathBuf {
    let home = std::env::var("HOME").unwrap_or_else(|_| "/".into());
    Path::new(&home).join(".postgresql").join(name)
}

fn read_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, ConnSpecError> {
    let unreadable = |e: rustls::pki_types::pem::Error| {
        ConnSpecError::file(
            path,
            format!(
                "could not read certificate file \"{}\": {e}",
                path.display()
            ),
        )
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(unreadable)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(unreadable)?;
    if certs.is_empty() {
        return Err(ConnSpecError::file(
            path,
            format!("no certificate in \"{}\"", path.display()),
        ));
    }
    Ok(certs)
}

fn system_roots() -> Result<RootCertStore, ConnSpecError> {
    let found = rustls_native_certs::load_native_certs();
    let mut store = RootCertStore::empty();
    store.add_parsable_certificates(found.certs);
    if store.is_empty() {
        return Err(ConnSpecError::Tls(
            "could not load the system's trusted root certificates".into(),
        ));
    }
    Ok(store)
}

/// libpq refuses a private key others can read: 0600 or less for the owner's own file, 0640
/// or less for a file root owns.
fn check_key_permissions(path: &Path) -> Result<(), ConnSpecError> {
    use std::os::unix::fs::MetadataExt;
    let metadata = std::fs::metadata(path).map_err(|e| {
        ConnSpecError::file(
            path,
            format!(
                "could not stat private key file \"{}\": {e}",
                path.display()
            ),
        )
    })?;
    let mode = metadata.mode() & 0o777;
    let allowed = if metadata.uid() == 0 { 0o640 } else { 0o600 };
    if mode & !allowed != 0 {
        return Err(ConnSpecError::file(path, format!(
            "private key file \"{}\" has group or world access; file must have permissions u=rw (0600) or less if owned by the current user, or permissions u=rw,g=r (0640) or less if owned by root",
            path.display()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_and_negotiation_are_read_as_libpq_reads_them() {
        let mut settings = TlsSettings::default();
        assert_eq!(settings.mode, SslMode::Prefer);
        assert!(settings.set("sslmode", "verify-full").unwrap());
        assert_eq!(settings.mode, SslMode::VerifyFull);
        assert!(!settings.set("host", "x").unwrap());
        let refused = settings.set("sslmode", "always").unwrap_err();
        assert_eq!(
            refused,
            ConnSpecError::Value {
                keyword: "sslmode",
                value: "always".into()
            }
        );
        assert_eq!(refused.to_string(), "invalid sslmode value: \"always\"");
        settings.set("sslmode", "prefer").unwrap();
        settings.set("sslnegotiation", "direct").unwrap();
        assert!(matches!(
            settings.check(),
            Err(ConnSpecError::Conflict(message)) if message.starts_with("weak sslmode \"prefer\"")
        ));
        settings.set("sslmode", "require").unwrap();
        assert!(settings.check().is_ok());
        settings.set("sslrootcert", "system").unwrap();
        assert!(settings
            .check()
            .unwrap_err()
            .to_string()
            .contains("may not be used with sslrootcert=system"));
    }

    #[test]
    fn verification_without_a_root_file_is_refused_before_connecting() {
        let settings = TlsSettings {
            mode: SslMode::VerifyCa,
            root_cert: Some("/nonexistent/root.crt".into()),
            ..TlsSettings::default()
        };
        let error = settings.client_config().unwrap_err();
        assert!(
            matches!(&error, ConnSpecError::File { path, .. } if path.as_path() == Path::new("/nonexistent/root.crt"))
                && error.to_string().starts_with(
                    "root certificate file \"/nonexistent/root.crt\" does not exist\n"
                ),
            "{error}"
        );
        let require = TlsSettings {
            mode: SslMode::Require,
            ..settings
        };
        assert!(require.client_config().unwrap().is_some());
    }

    #[test]
    fn a_private_key_others_can_read_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("client.key");
        std::fs::write(&key, "not a key").unwrap();
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
        let error = check_key_permissions(&key).unwrap_err();
        assert!(
            matches!(&error, ConnSpecError::File { path, .. } if *path == key)
                && error.to_string().contains("has group or world access"),
            "{error}"
        );
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(check_key_permissions(&key).is_ok());
    }
}
