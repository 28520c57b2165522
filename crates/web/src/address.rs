//! Where a server listens, as users write it: `9100` or `:9100` (loopback), `127.0.0.1:9100`,
//! `0.0.0.0:9100`, `[::1]:9100`, `localhost:9100`, or nothing (loopback, a free port).

use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};

/// A parsed listen address and whether it is reachable from other machines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListenAddress {
    pub socket: SocketAddr,
}

impl ListenAddress {
    /// Loopback only: nothing beyond this machine can connect.
    pub fn is_loopback(&self) -> bool {
        self.socket.ip().is_loopback()
    }
}

/// `text` as a listen address; an empty text or a bare port binds 127.0.0.1 (a free port for
/// an empty text or port 0). The error says what it takes.
pub fn parse_listen_address(text: &str) -> Result<ListenAddress, String> {
    let text = text.trim();
    let loopback = |port: u16| ListenAddress {
        socket: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port),
    };
    if text.is_empty() {
        return Ok(loopback(0));
    }
    let bare_port = text.strip_prefix(':').unwrap_or(text);
    if bare_port.bytes().all(|b| b.is_ascii_digit()) {
        return bare_port
            .parse::<u16>()
            .map(loopback)
            .map_err(|_| refusal(text, "the port is not between 0 and 65535"));
    }
    if let Ok(socket) = text.parse::<SocketAddr>() {
        return Ok(ListenAddress { socket });
    }
    let Some((host, port)) = text.rsplit_once(':') else {
        return Err(refusal(text, "no port"));
    };
    let port: u16 = port
        .parse()
        .map_err(|_| refusal(text, "the port is not between 0 and 65535"))?;
    let socket = (host, port)
        .to_socket_addrs()
        .map_err(|e| refusal(text, &format!("the host does not resolve ({e})")))?
        .next()
        .ok_or_else(|| refusal(text, "the host has no address"))?;
    Ok(ListenAddress { socket })
}

fn refusal(text: &str, why: &str) -> String {
    format!(
        "\"{text}\": {why}; give HOST:PORT (127.0.0.1:9100, [::1]:9100, 0.0.0.0:9100) or a \
         port alone (loopback)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_alone_or_nothing_binds_loopback() {
        for text in ["", "9100", ":9100", " :0 "] {
            let address = parse_listen_address(text).unwrap();
            assert!(address.is_loopback(), "{text}");
        }
        assert_eq!(parse_listen_address(":9100").unwrap().socket.port(), 9100);
        assert_eq!(parse_listen_address("").unwrap().socket.port(), 0);
    }

    #[test]
    fn hosts_keep_their_address_and_say_whether_they_are_loopback() {
        assert!(!parse_listen_address("0.0.0.0:9100").unwrap().is_loopback());
        assert!(!parse_listen_address("[::]:80").unwrap().is_loopback());
        assert!(parse_listen_address("[::1]:80").unwrap().is_loopback());
        assert!(parse_listen_address("localhost:8080")
            .unwrap()
            .is_loopback());
    }

    #[test]
    fn typos_are_refused_with_what_it_takes() {
        let error = parse_listen_address("127.0.0.1:99999").unwrap_err();
        assert!(error.contains("not between 0 and 65535"), "{error}");
        let error = parse_listen_address("127.0.0.1").unwrap_err();
        assert!(error.starts_with("\"127.0.0.1\": no port;"), "{error}");
        let error = parse_listen_address("127.0.0.1:abc").unwrap_err();
        assert!(error.contains("HOST:PORT"), "{error}");
    }
}
