//! What the WAL commands (`load`, `dump`, `bench`, `crash-test`) share: run ids, the
//! writer and record checks, and how an open failure is reported.

use crate::cli_error::CliError;
use crate::wal::WalError;

/// The default run id: microseconds since the epoch and the pid, in hex.
pub fn default_run_id() -> String {
    let micros = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_micros());
    format!("{:x}{:x}", micros, std::process::id())
}

/// An error opening a WAL as the CLI reports it: storage that cannot be opened is a
/// usage problem (exit 2); a corrupt log is a found problem (exit 1).
pub fn open_failure(error: WalError) -> CliError {
    match error {
        WalError::Open(message) => CliError::usage(message),
        other => CliError::failed(other.to_string()),
    }
}

/// Checks the writer count and record size every writing command shares.
pub fn check_writers_and_bytes(writers: usize, record_bytes: usize) -> Result<(), CliError> {
    if writers == 0 || writers > 4096 {
        return Err(CliError::usage("--writers: must be between 1 and 4096"));
    }
    if record_bytes > 60_000 {
        return Err(CliError::usage("--record-bytes: at most 60000 (the tiny format's record holds 65,535 bytes)"));
    }
    Ok(())
}

