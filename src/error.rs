//! Why something failed, which decides a command's exit code: the one error type that crosses
//! module boundaries (the family and target seams, the lab, the commands).

/// A failure: what the user sees on stderr and the exit code it maps to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// Bad input: options, scripts, or a target that cannot be used (exit 1).
    Input(String),
    /// The run itself failed or was aborted (exit 2).
    Run(String),
    /// The run ended with results already printed, but incomplete (exit 2, message printed).
    Incomplete,
}

impl Failure {
    pub fn exit_code(&self) -> i32 {
        match self {
            Failure::Input(_) => 1,
            Failure::Run(_) | Failure::Incomplete => 2,
        }
    }

    /// The message alone, for callers that report it inside their own (the lab's run records).
    pub fn into_message(self) -> String {
        match self {
            Failure::Input(m) | Failure::Run(m) => m,
            Failure::Incomplete => "the run was aborted".into(),
        }
    }

    /// The same message as bad input: for a layer that fails before anything ran (a results
    /// database that cannot take the lab is the spec's problem).
    pub fn into_input(self) -> Failure {
        Failure::Input(self.into_message())
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Input(m) | Failure::Run(m) => f.write_str(m),
            Failure::Incomplete => f.write_str("the run was aborted"),
        }
    }
}

impl std::error::Error for Failure {}

/// The lower layers (driver, server control, store) report text; met while running, it is the
/// run's failure. Bad input is always named as such, with `Failure::Input`.
impl From<String> for Failure {
    fn from(message: String) -> Failure {
        Failure::Run(message)
    }
}

pub type CommandResult = Result<(), Failure>;
