//! libpq's two connection-string forms, read into keyword/value pairs: `key=value` strings
//! (values quoted with `'`, backslash escapes) and `postgresql://` URIs (user, password, host,
//! port and database in the authority and path, the rest as `?key=value&…`, percent-encoded).

use crate::ConnSpecError;

/// The keywords libpq knows. Those stampede does not use are accepted and ignored, as a
/// connection string written for psql or pgbench must still work.
const KNOWN_KEYWORDS: &[&str] = &[
    "host",
    "hostaddr",
    "port",
    "dbname",
    "user",
    "password",
    "passfile",
    "require_auth",
    "channel_binding",
    "connect_timeout",
    "client_encoding",
    "options",
    "application_name",
    "fallback_application_name",
    "keepalives",
    "keepalives_idle",
    "keepalives_interval",
    "keepalives_count",
    "tcp_user_timeout",
    "replication",
    "gssencmode",
    "sslmode",
    "sslnegotiation",
    "sslcompression",
    "sslcert",
    "sslkey",
    "sslpassword",
    "sslcertmode",
    "sslrootcert",
    "sslcrl",
    "sslcrldir",
    "sslsni",
    "requirepeer",
    "ssl_min_protocol_version",
    "ssl_max_protocol_version",
    "krbsrvname",
    "gsslib",
    "gssdelegation",
    "service",
    "target_session_attrs",
    "load_balance_hosts",
    "ssl",
];

/// The pairs of `text`, a URI or a `key=value` string, in order.
pub fn parse(text: &str) -> Result<Vec<(String, String)>, ConnSpecError> {
    let pairs = match text
        .strip_prefix("postgresql://")
        .or_else(|| text.strip_prefix("postgres://"))
    {
        Some(rest) => parse_uri(rest, text)?,
        None => parse_key_values(text)?,
    };
    for (key, _) in &pairs {
        if !KNOWN_KEYWORDS.contains(&key.as_str()) {
            return Err(ConnSpecError::UnknownKeyword(key.clone()));
        }
    }
    Ok(pairs)
}

fn parse_key_values(text: &str) -> Result<Vec<(String, String)>, ConnSpecError> {
    let mut pairs = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.peek().is_none() {
            return Ok(pairs);
        }
        let mut key = String::new();
        while let Some(c) = chars.next_if(|c| *c != '=' && !c.is_whitespace()) {
            key.push(c);
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.next() != Some('=') {
            return Err(ConnSpecError::Syntax(format!(
                "missing \"=\" after \"{key}\" in connection info string"
            )));
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        if chars.next_if_eq(&'\'').is_some() {
            loop {
                match chars.next() {
                    None => {
                        return Err(ConnSpecError::Syntax(
                            "unterminated quoted string in connection info string".into(),
                        ))
                    }
                    Some('\'') => break,
                    Some('\\') => value.extend(chars.next()),
                    Some(c) => value.push(c),
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                if c == '\\' {
                    value.extend(chars.next());
                } else {
                    value.push(c);
                }
            }
        }
        pairs.push((key, value));
    }
}

fn parse_uri(rest: &str, whole: &str) -> Result<Vec<(String, String)>, ConnSpecError> {
    let mut pairs = Vec::new();
    let (before_query, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (authority, path) = before_query.split_once('/').unwrap_or((before_query, ""));
    let hosts = match authority.rsplit_once('@') {
        Some((userinfo, hosts)) => {
            let (user, password) = match userinfo.split_once(':') {
                Some((user, password)) => (user, Some(password)),
                None => (userinfo, None),
            };
            if !user.is_empty() {
                pairs.push(("user".into(), decode(user, whole)?));
            }
            if let Some(password) = password {
                pairs.push(("password".into(), decode(password, whole)?));
            }
            hosts
        }
        None => authority,
    };
    // Several hosts are libpq's failover list: the host and port lists, one entry per host.
    let mut host_list = Vec::new();
    let mut port_list = Vec::new();
    for entry in hosts.split(',') {
        let (host, port) = split_host_port(entry);
        host_list.push(decode(host, whole)?);
        port_list.push(decode(port.unwrap_or(""), whole)?);
    }
    if host_list.iter().any(|host| !host.is_empty()) {
        pairs.push(("host".into(), host_list.join(",")));
    }
    if port_list.iter().any(|port| !port.is_empty()) {
        pairs.push(("port".into(), port_list.join(",")));
    }
    if !path.is_empty() {
        pairs.push(("dbname".into(), decode(path, whole)?));
    }
    for parameter in query.split('&').filter(|p| !p.is_empty()) {
        let Some((key, value)) = parameter.split_once('=') else {
            return Err(ConnSpecError::Syntax(format!(
                "missing key/value separator \"=\" in URI query parameter: \"{parameter}\""
            )));
        };
        pairs.push((decode(key, whole)?, decode(value, whole)?));
    }
    Ok(pairs)
}

/// `host:port`, `[v6addr]:port` or a bare host.
fn split_host_port(text: &str) -> (&str, Option<&str>) {
    if let Some(inner) = text.strip_prefix('[') {
        if let Some((address, after)) = inner.split_once(']') {
            return (address, after.strip_prefix(':'));
        }
    }
    match text.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (text, None),
    }
}

/// A connection string with its password replaced by `********`, and the password as the text
/// held it (to mask wherever else that text was copied): a URI's (any scheme) `user:password@`
/// or `?password=`, a `key=value` string's `password=`.
pub fn masked(text: &str) -> (String, Option<String>) {
    const MASK: &str = "********";
    let secret = match text.split_once("://") {
        Some((_, rest)) => uri_password(rest),
        None => key_value_password(text),
    };
    match secret {
        Some(secret) if !secret.is_empty() => {
            (text.replacen(secret, MASK, 1), Some(secret.to_string()))
        }
        _ => (text.to_string(), None),
    }
}

fn uri_password(rest: &str) -> Option<&str> {
    let (before_query, query) = rest.split_once('?').unwrap_or((rest, ""));
    let authority = before_query.split('/').next().unwrap_or("");
    let in_authority = authority
        .rsplit_once('@')
        .and_then(|(userinfo, _)| userinfo.split_once(':'))
        .map(|(_, password)| password);
    in_authority.or_else(|| {
        query
            .split('&')
            .find_map(|pair| pair.strip_prefix("password="))
    })
}

fn key_value_password(text: &str) -> Option<&str> {
    let at = text.find("password")?;
    let after = text[at + "password".len()..]
        .trim_start()
        .strip_prefix('=')?;
    let value = after.trim_start();
    match value.strip_prefix('\'') {
        Some(quoted) => quoted.split('\'').next(),
        None => value.split_whitespace().next(),
    }
}

pub(crate) fn decode(text: &str, whole: &str) -> Result<String, ConnSpecError> {
    let invalid = || ConnSpecError::Syntax(format!("invalid percent-encoded token: \"{whole}\""));
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            let hex = text
                .get(index + 1..index + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(invalid)?;
            out.push(hex);
            index += 3;
        } else {
            out.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(out).map_err(|_| invalid())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_masked_in_every_form() {
        let cases = [
            (
                "postgresql://bench:s3cr%40t@db:5432/app",
                "postgresql://bench:********@db:5432/app",
                "s3cr%40t",
            ),
            (
                "mysql://root:pw@127.0.0.1:3306/sbtest",
                "mysql://root:********@127.0.0.1:3306/sbtest",
                "pw",
            ),
            (
                "postgresql://db/app?user=u&password=pw2",
                "postgresql://db/app?user=u&password=********",
                "pw2",
            ),
            (
                "host=db password='a b' user=u",
                "host=db password='********' user=u",
                "a b",
            ),
            (
                "host=db password = xyz",
                "host=db password = ********",
                "xyz",
            ),
        ];
        for (given, shown, secret) in cases {
            assert_eq!(
                masked(given),
                (shown.to_string(), Some(secret.to_string())),
                "{given}"
            );
        }
        assert_eq!(
            masked("postgresql://db/app"),
            ("postgresql://db/app".into(), None)
        );
        assert_eq!(masked("service=bench"), ("service=bench".into(), None));
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn key_value_strings_follow_libpq_quoting() {
        assert_eq!(
            parse("host=db port = 5433 dbname='my db' password='it\\'s' sslmode=verify-full")
                .unwrap(),
            pairs(&[
                ("host", "db"),
                ("port", "5433"),
                ("dbname", "my db"),
                ("password", "it's"),
                ("sslmode", "verify-full"),
            ])
        );
        assert_eq!(
            parse("host=db frobnicate=1").unwrap_err(),
            ConnSpecError::UnknownKeyword("frobnicate".into())
        );
        assert_eq!(
            parse("host=db frobnicate=1").unwrap_err().to_string(),
            "invalid connection option \"frobnicate\""
        );
        assert!(
            matches!(parse("host"), Err(ConnSpecError::Syntax(m)) if m.starts_with("missing \"=\""))
        );
    }

    #[test]
    fn uris_carry_the_authority_path_and_parameters() {
        assert_eq!(
            parse("postgresql://u:p%40ss@db.example:6432,other/bench?sslmode=require&sslrootcert=%2Fca.crt")
                .unwrap(),
            pairs(&[
                ("user", "u"),
                ("password", "p@ss"),
                ("host", "db.example,other"),
                ("port", "6432,"),
                ("dbname", "bench"),
                ("sslmode", "require"),
                ("sslrootcert", "/ca.crt"),
            ])
        );
        assert_eq!(
            parse("postgres://[::1]:5432/x").unwrap(),
            pairs(&[("host", "::1"), ("port", "5432"), ("dbname", "x")])
        );
        assert_eq!(
            parse("postgresql://%2Ftmp/x?host=%2Fvar%2Frun").unwrap(),
            pairs(&[("host", "/tmp"), ("dbname", "x"), ("host", "/var/run")])
        );
    }
}
