//! Why something failed, which decides a command's exit code: the one error type that crosses
//! module boundaries (the control-plane client, the servers, the driver, the family and target
//! seams, the lab, the store, the commands).

use std::error::Error as StdError;
use std::sync::Arc;

/// What kind of failure it is: the exit code follows from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Bad input: options, scripts, or a target that cannot be used (exit 1).
    Input,
    /// The run itself failed or was aborted (exit 2).
    Run,
    /// The run ended with results already printed, but incomplete (exit 2).
    Incomplete,
    /// The user stopped it (SIGINT or SIGTERM) before it finished (exit 2, as a failed run:
    /// scripts that wait for a lab must not take a stopped one for a finished one).
    Interrupted,
    /// `gate`: a regression beyond the threshold was decided (exit 3).
    Regression,
    /// `gate`: neither a regression nor its absence was decided (exit 4).
    Undecided,
}

/// A failure: the kind, what the user sees on stderr, and the error that caused it (a
/// PostgreSQL error, an I/O error) when there is one, for callers that must tell causes apart.
/// Cloned when one cause is reported in several places (a target that cannot be provisioned
/// skips each of its runs), hence the shared source.
#[derive(Debug, Clone)]
pub struct Failure {
    kind: Kind,
    message: String,
    source: Option<Arc<dyn StdError + Send + Sync + 'static>>,
}

/// What an incomplete run's failure says inside a record; the command line prints
/// `INCOMPLETE_NOTICE` instead, after the partial results.
const INCOMPLETE_MESSAGE: &str = "the run was aborted";
pub const INCOMPLETE_NOTICE: &str = "Run was aborted; the above results are incomplete.";

impl Failure {
    pub fn new(kind: Kind, message: impl Into<String>) -> Failure {
        Failure {
            kind,
            message: message.into(),
            source: None,
        }
    }

    pub fn input(message: impl Into<String>) -> Failure {
        Failure::new(Kind::Input, message)
    }

    pub fn run(message: impl Into<String>) -> Failure {
        Failure::new(Kind::Run, message)
    }

    pub fn incomplete() -> Failure {
        Failure::new(Kind::Incomplete, INCOMPLETE_MESSAGE)
    }

    pub fn interrupted(message: impl Into<String>) -> Failure {
        Failure::new(Kind::Interrupted, message)
    }

    /// The same failure, caused by `source`.
    pub fn caused_by(mut self, source: impl StdError + Send + Sync + 'static) -> Failure {
        self.source = Some(Arc::new(source));
        self
    }

    pub fn kind(&self) -> Kind {
        self.kind
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    pub fn exit_code(&self) -> i32 {
        match self.kind {
            Kind::Input => 1,
            Kind::Run | Kind::Incomplete | Kind::Interrupted => 2,
            Kind::Regression => 3,
            Kind::Undecided => 4,
        }
    }

    /// The same failure with `note` after its message ("…; note").
    pub fn with_note(mut self, note: &str) -> Failure {
        self.message = format!("{}; {note}", self.message);
        self
    }

    /// The message alone, for callers that report it inside their own (the lab's run records).
    pub fn into_message(self) -> String {
        self.message
    }

    /// The same failure as bad input: for a layer that fails before anything ran (a results
    /// database that cannot take the lab is the spec's problem, a server the user named that
    /// does not answer is the command line's).
    pub fn into_input(self) -> Failure {
        self.into_kind(Kind::Input)
    }

    /// The same failure as a failed run: met while running, whatever the lower layer thought.
    pub fn into_run(self) -> Failure {
        self.into_kind(Kind::Run)
    }

    fn into_kind(self, kind: Kind) -> Failure {
        Failure { kind, ..self }
    }

    /// The same kind and source, the message rewritten (to put it in context).
    pub fn map_message(self, rewrite: impl FnOnce(String) -> String) -> Failure {
        Failure {
            message: rewrite(self.message),
            ..self
        }
    }

    /// The error of type `E` behind this failure, if one is (a PostgreSQL error, to react to
    /// its SQLSTATE).
    pub fn cause<E: StdError + 'static>(&self) -> Option<&E> {
        self.source.as_ref()?.downcast_ref()
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl StdError for Failure {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.source
            .as_deref()
            .map(|source| source as &(dyn StdError + 'static))
    }
}

/// Two failures are the same when they say the same thing the same way; the source is how the
/// message came about, not part of what the user is told.
impl PartialEq for Failure {
    fn eq(&self, other: &Failure) -> bool {
        self.kind == other.kind && self.message == other.message
    }
}

pub type CommandResult = Result<(), Failure>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_map_to_exit_codes_and_keep_their_source() {
        assert_eq!(Failure::input("bad").exit_code(), 1);
        assert_eq!(Failure::run("failed").exit_code(), 2);
        assert_eq!(Failure::incomplete().exit_code(), 2);
        assert_eq!(Failure::interrupted("stopped").exit_code(), 2);
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let failure = Failure::run("could not read x").caused_by(io).into_input();
        assert_eq!(failure.kind(), Kind::Input);
        assert_eq!(failure.to_string(), "could not read x");
        assert_eq!(failure.source().unwrap().to_string(), "no such file");
        assert!(failure.cause::<std::fmt::Error>().is_none());
        assert!(failure.cause::<std::io::Error>().is_some());
    }
}
