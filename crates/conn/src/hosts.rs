//! libpq's several hosts: `host`, `hostaddr` and `port` as comma-separated lists, tried in order
//! (or shuffled, `load_balance_hosts=random`) until one accepts the connection and is the kind
//! of server `target_session_attrs` asks for.

use std::hash::{BuildHasher, Hasher};
use std::net::IpAddr;

use crate::ConnSpecError;

/// libpq's default port, which an empty entry of a port list stands for.
const DEFAULT_PORT: u16 = 5432;

/// One host of the list: what the server is called, where to connect, and its password
/// (`.pgpass` is looked up per host, as libpq does).
#[derive(Clone, PartialEq, Eq)]
pub struct HostEntry {
    pub host: String,
    pub hostaddr: Option<IpAddr>,
    pub port: u16,
    pub password: Option<String>,
}

/// Which servers a connection may end on (`target_session_attrs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SessionAttrs {
    #[default]
    Any,
    ReadWrite,
    ReadOnly,
    Primary,
    Standby,
    /// A standby if any host is one, else any server: two passes over the hosts.
    PreferStandby,
}

/// What a server said of itself once connected: the two facts the attributes are judged on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerState {
    pub in_hot_standby: bool,
    pub read_only: bool,
}

/// One statement that answers both questions on every server version stampede drives (9.6's
/// servers report neither `in_hot_standby` nor `default_transaction_read_only` at start-up).
pub const SERVER_STATE_QUERY: &str =
    "SELECT pg_catalog.pg_is_in_recovery(), pg_catalog.current_setting('transaction_read_only')";

impl ServerState {
    /// From the query's two text columns, as the server prints booleans and settings.
    pub fn from_columns(in_recovery: &str, read_only: &str) -> ServerState {
        ServerState {
            in_hot_standby: in_recovery == "t",
            read_only: read_only == "on",
        }
    }
}

impl SessionAttrs {
    pub fn parse(text: &str) -> Result<SessionAttrs, ConnSpecError> {
        Ok(match text {
            "any" => SessionAttrs::Any,
            "read-write" => SessionAttrs::ReadWrite,
            "read-only" => SessionAttrs::ReadOnly,
            "primary" => SessionAttrs::Primary,
            "standby" => SessionAttrs::Standby,
            "prefer-standby" => SessionAttrs::PreferStandby,
            _ => {
                return Err(ConnSpecError::Value {
                    keyword: "target_session_attrs",
                    value: text.into(),
                })
            }
        })
    }

    /// Whether a connection must ask the server what it is before it is used.
    pub fn needs_server_state(self) -> bool {
        self != SessionAttrs::Any
    }

    /// The attributes of each pass over the host list: prefer-standby looks for a standby
    /// first and takes any server on its second pass.
    pub fn passes(self) -> Vec<SessionAttrs> {
        match self {
            SessionAttrs::PreferStandby => vec![SessionAttrs::Standby, SessionAttrs::Any],
            other => vec![other],
        }
    }

    /// None when the server will do, else libpq's reason for moving on to the next host.
    pub fn rejects(self, state: ServerState) -> Option<&'static str> {
        match self {
            SessionAttrs::ReadWrite if state.read_only => Some("session is read-only"),
            SessionAttrs::ReadOnly if !state.read_only => Some("session is not read-only"),
            SessionAttrs::Primary if state.in_hot_standby => Some("server is in hot standby mode"),
            SessionAttrs::Standby | SessionAttrs::PreferStandby if !state.in_hot_standby => {
                Some("server is not in hot standby mode")
            }
            _ => None,
        }
    }
}

/// The hosts after the first, and how the list is used; empty and `any` for one host.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Failover {
    pub more_hosts: Vec<HostEntry>,
    pub target_session_attrs: SessionAttrs,
    /// `load_balance_hosts=random`: each connection tries the hosts in an order of its own.
    pub load_balance: bool,
}

pub fn parse_load_balance(text: &str) -> Result<bool, ConnSpecError> {
    match text {
        "disable" => Ok(false),
        "random" => Ok(true),
        _ => Err(ConnSpecError::Value {
            keyword: "load_balance_hosts",
            value: text.into(),
        }),
    }
}

/// The three lists as given (`host`, `hostaddr`, `port`; empty when not given), before they
/// are matched up.
#[derive(Clone, Debug, Default)]
pub struct AddressLists {
    pub host: String,
    pub hostaddr: String,
    pub port: String,
}

/// Matches the lists up as libpq does: as many entries as hosts (or addresses when no host is
/// given), one port for all or one per host; an empty port entry is the default port. Host
/// entries stay empty where the caller supplies the default.
pub fn match_lists(
    lists: &AddressLists,
) -> Result<Vec<(String, Option<IpAddr>, u16)>, ConnSpecError> {
    let split = |text: &str| -> Vec<String> {
        if text.is_empty() {
            Vec::new()
        } else {
            text.split(',').map(str::to_string).collect()
        }
    };
    let hosts = split(&lists.host);
    let addresses = split(&lists.hostaddr)
        .iter()
        .map(|a| parse_hostaddr(a))
        .collect::<Result<Vec<_>, _>>()?;
    let count = hosts.len().max(addresses.len()).max(1);
    if !hosts.is_empty() && !addresses.is_empty() && hosts.len() != addresses.len() {
        return Err(ConnSpecError::Conflict(format!(
            "could not match {} host names to {} hostaddr values",
            hosts.len(),
            addresses.len()
        )));
    }
    let ports = split(&lists.port)
        .iter()
        .map(|p| match p.trim() {
            "" => Ok(DEFAULT_PORT),
            port => parse_port(port),
        })
        .collect::<Result<Vec<_>, _>>()?;
    if ports.len() > 1 && ports.len() != count {
        return Err(ConnSpecError::Conflict(format!(
            "could not match {} port numbers to {count} hosts",
            ports.len()
        )));
    }
    Ok((0..count)
        .map(|index| {
            let host = hosts.get(index).cloned().unwrap_or_default();
            let address = addresses.get(index).copied().flatten();
            let port = match ports.len() {
                0 => DEFAULT_PORT,
                1 => ports[0],
                _ => ports[index],
            };
            (host, address, port)
        })
        .collect())
}

/// libpq's words for an address it cannot parse; an empty entry is no address.
pub fn parse_hostaddr(text: &str) -> Result<Option<IpAddr>, ConnSpecError> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    text.trim()
        .parse()
        .map(Some)
        .map_err(|_| ConnSpecError::Value {
            keyword: "hostaddr",
            value: text.into(),
        })
}

pub fn parse_port(text: &str) -> Result<u16, ConnSpecError> {
    text.trim()
        .parse::<u16>()
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| ConnSpecError::Value {
            keyword: "port",
            value: text.into(),
        })
}

/// A permutation of `0..count` for one connection's try order (libpq shuffles with its own
/// random generator; any uniform shuffle serves).
pub fn shuffled_order(count: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..count).collect();
    let mut state = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish()
        | 1;
    for index in (1..count).rev() {
        // xorshift64: enough to spread connections over a handful of hosts.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        order.swap(index, (state % (index as u64 + 1)) as usize);
    }
    order
}

impl std::fmt::Debug for HostEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lists(host: &str, hostaddr: &str, port: &str) -> AddressLists {
        AddressLists {
            host: host.into(),
            hostaddr: hostaddr.into(),
            port: port.into(),
        }
    }

    #[test]
    fn lists_are_matched_as_libpq_matches_them() {
        let matched = match_lists(&lists("a,b", "", "5433")).unwrap();
        assert_eq!(
            matched,
            vec![("a".into(), None, 5433), ("b".into(), None, 5433)]
        );
        let matched = match_lists(&lists("a,,c", "", "1,,3")).unwrap();
        assert_eq!(
            matched.iter().map(|m| m.2).collect::<Vec<_>>(),
            [1, 5432, 3]
        );
        assert_eq!(matched[1].0, "");
        let matched = match_lists(&lists("", "127.0.0.1,127.0.0.2", "")).unwrap();
        assert_eq!(matched.len(), 2);
        assert_eq!(
            match_lists(&lists("a,b,c", "", "1,2"))
                .unwrap_err()
                .to_string(),
            "could not match 2 port numbers to 3 hosts"
        );
        assert_eq!(
            match_lists(&lists("a,b", "127.0.0.1", ""))
                .unwrap_err()
                .to_string(),
            "could not match 2 host names to 1 hostaddr values"
        );
        assert_eq!(match_lists(&lists("", "", "")).unwrap().len(), 1);
    }

    #[test]
    fn attributes_reject_with_libpq_reasons() {
        let standby = ServerState {
            in_hot_standby: true,
            read_only: true,
        };
        let primary = ServerState {
            in_hot_standby: false,
            read_only: false,
        };
        assert_eq!(
            SessionAttrs::ReadWrite.rejects(standby),
            Some("session is read-only")
        );
        assert_eq!(SessionAttrs::ReadWrite.rejects(primary), None);
        assert_eq!(
            SessionAttrs::Primary.rejects(standby),
            Some("server is in hot standby mode")
        );
        assert_eq!(
            SessionAttrs::Standby.rejects(primary),
            Some("server is not in hot standby mode")
        );
        assert_eq!(
            SessionAttrs::ReadOnly.rejects(primary),
            Some("session is not read-only")
        );
        assert_eq!(SessionAttrs::Any.rejects(standby), None);
        assert_eq!(
            SessionAttrs::parse("master").unwrap_err().to_string(),
            "invalid target_session_attrs value: \"master\""
        );
    }

    #[test]
    fn a_shuffle_is_a_permutation_and_varies() {
        let mut firsts = std::collections::HashSet::new();
        for _ in 0..200 {
            let mut order = shuffled_order(3);
            firsts.insert(order[0]);
            order.sort();
            assert_eq!(order, [0, 1, 2]);
        }
        assert_eq!(firsts.len(), 3);
    }
}
