//! What workers and the coordinator say to each other: one JSON object per line.

use std::io::{BufRead, Write};

use serde::{de::DeserializeOwned, Deserialize, Serialize};
use serde_json::Value;

/// A worker's words to the coordinator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToCoordinator {
    /// A clock reading, answered at once with the coordinator's.
    Probe { sent_us: i64 },
    /// The worker of `pod` (of `pods`) is here for run `run`; `offset_us` is its clock's
    /// offset (the coordinator's clock minus its own), measured over a round trip of `rtt_us`.
    Hello {
        run: String,
        pod: usize,
        pods: usize,
        offset_us: i64,
        rtt_us: i64,
    },
    /// The worker's clients are connected: it waits for the start.
    Ready,
    /// When the worker started, on the coordinator's clock.
    Started { at_us: i64 },
    /// The worker reached the named point of its run and waits until every pod has.
    Arrived { phase: String },
    /// One closed interval of the run (0-based from the start).
    Interval { index: u64, report: Value },
    /// The worker's final report; it has nothing more to say.
    Done { report: Value },
    /// The worker cannot go on.
    Failed { message: String },
}

/// The coordinator's words to a worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToWorker {
    ProbeReply {
        sent_us: i64,
        coordinator_us: i64,
    },
    /// Every worker joined: connect the clients.
    Welcome,
    /// Start at this time of the coordinator's clock (Unix microseconds).
    Start {
        at_us: i64,
    },
    /// Every pod reached the named point: go on.
    Pass {
        phase: String,
    },
    /// Another pod failed: stop and say why.
    Abort {
        reason: String,
    },
}

/// Writes one message as a line.
pub fn send<T: Serialize>(out: &mut impl Write, message: &T) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(message).map_err(std::io::Error::other)?;
    line.push(b'\n');
    out.write_all(&line)?;
    out.flush()
}

/// Reads one message; None at the end of the stream.
pub fn receive<T: DeserializeOwned>(input: &mut impl BufRead) -> std::io::Result<Option<T>> {
    let mut line = String::new();
    if input.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    serde_json::from_str(&line)
        .map(Some)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_as_lines() {
        let mut buffer = Vec::new();
        let sent = ToCoordinator::Interval {
            index: 3,
            report: serde_json::json!({"count": 7}),
        };
        send(&mut buffer, &sent).unwrap();
        send(&mut buffer, &ToCoordinator::Ready).unwrap();
        assert_eq!(buffer.iter().filter(|b| **b == b'\n').count(), 2);
        let mut input = std::io::Cursor::new(buffer);
        assert_eq!(receive::<ToCoordinator>(&mut input).unwrap(), Some(sent));
        assert_eq!(
            receive::<ToCoordinator>(&mut input).unwrap(),
            Some(ToCoordinator::Ready)
        );
        assert_eq!(receive::<ToCoordinator>(&mut input).unwrap(), None);
    }

    #[test]
    fn a_garbled_line_is_an_error() {
        let mut input = std::io::Cursor::new(b"{\"type\":\"nonsense\"}\n".to_vec());
        assert!(receive::<ToCoordinator>(&mut input).is_err());
    }
}
