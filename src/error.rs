//! Why a command failed, which decides the exit code.

/// A command's failure: what the user sees on stderr and the exit code.
#[derive(Debug)]
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
}

pub type CommandResult = Result<(), Failure>;
