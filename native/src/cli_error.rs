//! How the CLI reports failure.
//!
//! A command returns `Result<ExitCode, CliError>`. A `CliError` is either a usage
//! problem (bad flag value, unreadable file: exit 2) or a failure found while running
//! (exit 1). Either way the user sees exactly one line on stderr, lowercase, naming the
//! subject first: `walab: wal-5: checksum mismatch at byte 82`.

use std::process::ExitCode;

/// A failure with the exit code it deserves.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Bad arguments or an input that cannot be read at all: exit 2.
    #[error("{0}")]
    Usage(String),
    /// The command ran and found a problem: exit 1.
    #[error("{0}")]
    Failed(String),
}

impl CliError {
    pub fn usage(message: impl Into<String>) -> CliError {
        CliError::Usage(message.into())
    }

    pub fn failed(message: impl Into<String>) -> CliError {
        CliError::Failed(message.into())
    }
}

impl From<anyhow::Error> for CliError {
    fn from(error: anyhow::Error) -> CliError {
        CliError::Failed(format!("{error:#}"))
    }
}

/// A flag's value that a typed `value_parser` refused; the command line prints it as
/// `--flag: <reason>`, the same one line as every other usage problem.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadValue(pub String);

/// "a, b or c".
pub fn one_of(names: &[&str]) -> String {
    match names.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// Prints the error line, if any, and turns the result into the process's exit code.
pub fn finish(result: Result<ExitCode, CliError>) -> ExitCode {
    match result {
        Ok(code) => code,
        Err(error) => {
            eprintln!("walab: {error}");
            match error {
                CliError::Usage(_) => ExitCode::from(2),
                CliError::Failed(_) => ExitCode::from(1),
            }
        }
    }
}
