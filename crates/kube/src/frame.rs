//! A pod's output on its way to the user's terminal. Kubernetes keeps one log per container,
//! stdout and stderr mixed; so a pod of a spread run writes every line with a one-letter frame
//! that the launcher reads back: `O` a line of standard output, `E` of standard error, `J` a line
//! of the run's `--json` document, `M` the merged run's live numbers (for the launcher's
//! `--metrics-addr`), `X` the exit code, last.

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame<'a> {
    Stdout(&'a str),
    Stderr(&'a str),
    Json(&'a str),
    /// A JSON line of the run's live numbers, as the coordinator merged them.
    Metrics(&'a str),
    Exit(i32),
    /// A line written past the framing (the runtime's own, a crash): shown as standard error.
    Raw(&'a str),
}

pub fn encode(frame: &Frame<'_>) -> String {
    match frame {
        Frame::Stdout(line) => format!("O {line}\n"),
        Frame::Stderr(line) => format!("E {line}\n"),
        Frame::Json(line) => format!("J {line}\n"),
        Frame::Metrics(line) => format!("M {line}\n"),
        Frame::Exit(code) => format!("X {code}\n"),
        Frame::Raw(line) => format!("{line}\n"),
    }
}

/// One log line (without its newline).
pub fn decode(line: &str) -> Frame<'_> {
    let text = |prefix: &str| {
        line.strip_prefix(prefix)
            .map(|rest| rest.strip_prefix(' ').unwrap_or(rest))
    };
    if line == "O" || line.starts_with("O ") {
        Frame::Stdout(text("O").unwrap_or(""))
    } else if line == "E" || line.starts_with("E ") {
        Frame::Stderr(text("E").unwrap_or(""))
    } else if line.starts_with("J ") {
        Frame::Json(text("J").unwrap_or(""))
    } else if line.starts_with("M ") {
        Frame::Metrics(text("M").unwrap_or(""))
    } else if let Some(code) = line.strip_prefix("X ").and_then(|c| c.parse().ok()) {
        Frame::Exit(code)
    } else {
        Frame::Raw(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_empty_lines_survive() {
        for frame in [
            Frame::Stdout("tps = 12.0 (without initial connection time)"),
            Frame::Stdout(""),
            Frame::Stderr("progress: 1.0 s, 10.0 tps"),
            Frame::Json("{\"tps\": 1}"),
            Frame::Metrics("{\"interval\": {}}"),
            Frame::Exit(2),
        ] {
            let line = encode(&frame);
            assert_eq!(decode(line.trim_end_matches('\n')), frame);
        }
        assert_eq!(
            decode("thread 'main' panicked"),
            Frame::Raw("thread 'main' panicked")
        );
    }
}
