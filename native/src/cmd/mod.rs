//! The subcommands, one file each, and the command line that dispatches to them.
//!
//! Every subcommand is a thin edge around `walab-core`: it parses arguments, reads or
//! writes files, and prints. The logic lives in the core so that the browser lab runs
//! the very same code. Errors print one lowercase line, `walab: <subject>: <what>`, and
//! exit with 2 for a usage problem or an unreadable input, 1 when the command ran and
//! found something wrong (for example a log whose scan stopped at a torn record).

pub mod bench;
pub mod budget;
pub mod common;
pub mod crash_serve;
pub mod crash_test;
pub mod dump;
pub mod fsync_test;
pub mod inspect;
pub mod load;
pub mod load_http;
pub mod protocol_client;
pub mod quorum;
pub mod redo;
pub mod reset;
pub mod s3_server;
pub mod scenario;
pub mod serve;
pub mod sim;
pub mod sim_remote;

use std::process::ExitCode;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(name = "walab", version, about = "A hands-on lab for write-ahead logs", long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Decode a log (tiny, LevelDB, RocksDB, stream) and show where recovery would stop.
    Inspect(inspect::Args),
    /// Print a built-in scenario (the tiny store) with every record's bytes.
    Scenario(scenario::Args),
    /// The log's syncs, IOPS and MB/s against an EBS volume's limits (Parts 11 and 12).
    Budget(budget::Args),
    /// Measure sync latency on a directory, method by method (fdatasync, fsync, O_DSYNC, O_DIRECT, ...).
    FsyncTest(fsync_test::Args),
    /// Append records from concurrent writers; print `ack <key>` for each acknowledged one.
    Load(load::Args),
    /// Recover a WAL and print every record.
    Dump(dump::Args),
    /// Measure group commit (acked/s, syncs/s, batch, latency) beside the model.
    Bench(bench::Args),
    /// Crash the WAL (SIGKILL, or simulated power cuts) and check every acknowledgement.
    CrashTest(crash_test::Args),
    /// Start an s3:// log's new session from an empty log (the WAL contract's Reset).
    Reset(reset::Args),
    /// Run the deterministic simulator: group commit schedules, power cuts.
    Sim(sim::Args),
    /// Serve streams over HTTP on a WAL: appends with idempotent producers, reads.
    Serve(serve::Args),
    /// Serve S3 on a local directory (the test server: atomic conditional PUTs, latency profiles, faults).
    S3Server(s3_server::Args),
}

/// Parses the command line, runs the command, prints a failure as one line, and gives the
/// exit code: what `walab`'s `main` does.
pub fn main() -> ExitCode {
    // Help and version print as clap prints them; any other parse error becomes the
    // house's one line and exit 2.
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) if matches!(error.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand) => error.exit(),
        Err(error) => {
            if let Some(line) = bad_value_line(&error) {
                return crate::cli_error::finish(Err(crate::cli_error::CliError::usage(line)));
            }
            let rendered = error.render().to_string();
            let first = rendered.lines().next().unwrap_or("bad arguments");
            return crate::cli_error::finish(Err(crate::cli_error::CliError::usage(first.trim_start_matches("error: ").to_string())));
        }
    };
    let result = match cli.command {
        Command::Inspect(args) => inspect::run(args),
        Command::Scenario(args) => scenario::run(args),
        Command::Budget(args) => budget::run(args),
        Command::FsyncTest(args) => fsync_test::run(args),
        Command::Load(args) => load::run(args),
        Command::Dump(args) => dump::run(args),
        Command::Bench(args) => bench::run(args),
        Command::CrashTest(args) => crash_test::run(args),
        Command::Reset(args) => reset::run(args),
        Command::Sim(args) => sim::run(args),
        Command::Serve(args) => serve::run(args),
        Command::S3Server(args) => s3_server::run(args),
    };
    crate::cli_error::finish(result)
}

/// `--flag: <reason>` for a value a typed `value_parser` refused with a
/// [`crate::cli_error::BadValue`]; `None` for any other parse error.
fn bad_value_line(error: &clap::Error) -> Option<String> {
    let reason = std::error::Error::source(error)?.downcast_ref::<crate::cli_error::BadValue>()?;
    let Some(ContextValue::String(arg)) = error.get(ContextKind::InvalidArg) else {
        return None;
    };
    // clap names the flag with its value: "--policy <POLICY>".
    let flag = arg.split_whitespace().next()?;
    Some(format!("{flag}: {reason}"))
}
