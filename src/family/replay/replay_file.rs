//! The replay file `stampede capture` writes and `stampede replay` reads: a captured
//! workload's sessions, each with its statements in order, their times as offsets from the
//! log's first message, how each was sent (simple query, unnamed or named prepared statement)
//! and its parameters. Statement texts are stored once and referred to by number, and the
//! whole is gzip-compressed JSON, so a capture of a pgbench-like workload costs a few bytes a
//! statement.

use std::io::{Read, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use stampede_base::error::Failure;

/// The format's version; a file of another is refused with its number.
pub const VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayFile {
    pub stampede_replay: u32,
    /// The logs it was captured from.
    pub source: Vec<String>,
    /// stderr, csvlog or jsonlog.
    pub format: String,
    /// The first message's time as the log wrote it.
    pub first_message: String,
    /// From the log's first message to its last.
    pub duration_ms: i64,
    /// Every statement text, once.
    pub texts: Vec<String>,
    pub sessions: Vec<CapturedSession>,
    /// The statements the capture left out, counted by reason.
    pub left_out: Vec<LeftOut>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapturedSession {
    /// `%c`.
    pub id: String,
    pub user: String,
    pub database: String,
    /// When it connected (its first statement's time when its connection was not logged).
    pub start_ms: i64,
    /// When it disconnected, if the log says.
    pub end_ms: Option<i64>,
    /// Its connection was not in the log: it began before the capture.
    pub began_before: bool,
    pub statements: Vec<CapturedStatement>,
}

/// How a statement was sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Sent {
    /// A simple Query message (one text, maybe several statements).
    #[serde(rename = "s")]
    Simple,
    /// Parse, Bind, Execute of the unnamed statement.
    #[serde(rename = "u")]
    Unnamed,
    /// Bind and Execute of the named prepared statement (parsed once per session).
    #[serde(rename = "n")]
    Named(String),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapturedStatement {
    /// When it was sent, in ms since the log's first message.
    #[serde(rename = "t")]
    pub at_ms: i64,
    /// Its text, as an index into `texts`.
    #[serde(rename = "q")]
    pub text: u32,
    #[serde(rename = "m")]
    pub sent: Sent,
    /// Its parameters as text (None is NULL).
    #[serde(rename = "v", default, skip_serializing_if = "Vec::is_empty")]
    pub params: Vec<Option<String>>,
    /// The SQLSTATE it failed with in the capture ("ERROR" when the log does not say which).
    #[serde(rename = "e", default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeftOut {
    pub reason: String,
    pub statements: u64,
    /// The first such statement's line in the log.
    pub first_line: usize,
}

impl ReplayFile {
    pub fn statements(&self) -> usize {
        self.sessions.iter().map(|s| s.statements.len()).sum()
    }

    /// Writes the file (to a temporary name renamed over `path`, so that a failure leaves no
    /// half-written file).
    pub fn write(&self, path: &Path) -> Result<(), Failure> {
        let partial = path.with_extension("partial");
        let failure = |e: std::io::Error| {
            let _ = std::fs::remove_file(&partial);
            Failure::run(format!("could not write {}: {e}", path.display()))
        };
        let file = std::fs::File::create(&partial).map_err(failure)?;
        let mut encoder = flate2::write::GzEncoder::new(
            std::io::BufWriter::new(file),
            flate2::Compression::default(),
        );
        serde_json::to_writer(&mut encoder, self).map_err(|e| failure(e.into()))?;
        encoder
            .finish()
            .and_then(|mut buffered| buffered.flush())
            .map_err(failure)?;
        std::fs::rename(&partial, path).map_err(failure)
    }

    pub fn read(path: &Path) -> Result<ReplayFile, Failure> {
        let file = std::fs::File::open(path)
            .map_err(|e| Failure::input(format!("could not open {}: {e}", path.display())))?;
        let not_ours = || {
            Failure::input(format!(
                "{} is not a replay file (one `stampede capture` writes)",
                path.display()
            ))
        };
        let mut text = String::new();
        flate2::read::GzDecoder::new(std::io::BufReader::new(file))
            .read_to_string(&mut text)
            .map_err(|_| not_ours())?;
        let version: serde_json::Value = serde_json::from_str(&text).map_err(|_| not_ours())?;
        match version.get("stampede_replay").and_then(|v| v.as_u64()) {
            Some(v) if v == u64::from(VERSION) => {}
            Some(v) => {
                return Err(Failure::input(format!(
                    "{} is a replay file of format {v}; this stampede reads format {VERSION}",
                    path.display()
                )))
            }
            None => return Err(not_ours()),
        }
        let file: ReplayFile = serde_json::from_value(version).map_err(|e| {
            Failure::input(format!("{} is a damaged replay file: {e}", path.display()))
        })?;
        file.check_texts().map_err(|e| {
            Failure::input(format!("{} is a damaged replay file: {e}", path.display()))
        })?;
        Ok(file)
    }

    /// Every statement names a text the file holds.
    fn check_texts(&self) -> Result<(), String> {
        let texts = self.texts.len();
        for session in &self.sessions {
            if let Some(bad) = session.statements.iter().find(|s| s.text as usize >= texts) {
                return Err(format!(
                    "session {} names statement text {} of {texts}",
                    session.id, bad.text
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> ReplayFile {
        ReplayFile {
            stampede_replay: VERSION,
            source: vec!["postgresql.csv".into()],
            format: "csvlog".into(),
            first_message: "2026-12-02 02:14:29.394 UTC".into(),
            duration_ms: 1200,
            texts: vec!["select $1".into(), "BEGIN".into()],
            sessions: vec![CapturedSession {
                id: "6b0f7f05.5b1f".into(),
                user: "app".into(),
                database: "shop".into(),
                start_ms: 3,
                end_ms: Some(1100),
                began_before: false,
                statements: vec![
                    CapturedStatement {
                        at_ms: 5,
                        text: 1,
                        sent: Sent::Simple,
                        params: vec![],
                        error: None,
                    },
                    CapturedStatement {
                        at_ms: 6,
                        text: 0,
                        sent: Sent::Named("P_1".into()),
                        params: vec![Some("it's".into()), None],
                        error: Some("22012".into()),
                    },
                ],
            }],
            left_out: vec![],
        }
    }

    #[test]
    fn a_written_file_reads_back_the_same() {
        let dir = std::env::temp_dir().join(format!("replay-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("w.replay");
        sample().write(&path).unwrap();
        assert_eq!(ReplayFile::read(&path).unwrap(), sample());
        let mut damaged = sample();
        damaged.sessions[0].statements[1].text = 7;
        damaged.write(&path).unwrap();
        let error = ReplayFile::read(&path).unwrap_err().into_message();
        assert!(
            error.ends_with(
                "is a damaged replay file: session 6b0f7f05.5b1f names statement text 7 of 2"
            ),
            "{error}"
        );
        std::fs::write(&path, "hello").unwrap();
        let error = ReplayFile::read(&path).unwrap_err().into_message();
        assert!(error.ends_with("is not a replay file (one `stampede capture` writes)"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
