//! `walab`: the write-ahead-log lab on the command line.
//!
//! Every subcommand is a thin edge around `walab-core`: it parses arguments, reads or
//! writes files, and prints. The logic lives in the core so that the browser lab runs
//! the very same code. Errors print one lowercase line, `walab: <subject>: <what>`, and
//! exit with 2 for a usage problem or an unreadable input, 1 when the command ran and
//! found something wrong (for example a log whose scan stopped at a torn record).

mod budget_cmd;
mod bench_cmd;
mod cli_error;
mod inspect;
mod crash_test;
mod dump_cmd;
mod fsync_test;
mod load_cmd;
mod reset_cmd;
mod quorum_cmd;
mod redo_cmd;
mod wal;
mod scenario_cmd;
mod sim_cmd;
mod sim_remote_cmd;

use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(name = "walab", version, about = "A hands-on lab for write-ahead logs", long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Decode a log (tiny, LevelDB, RocksDB, stream) and show where recovery would stop.
    Inspect(inspect::Args),
    /// Print a built-in scenario (the tiny store) with every record's bytes.
    Scenario(scenario_cmd::Args),
    /// The log's syncs, IOPS and MB/s against an EBS volume's limits (Parts 11 and 12).
    Budget(budget_cmd::Args),
    /// Measure sync latency on a directory, method by method (fdatasync, fsync, O_DSYNC, O_DIRECT, ...).
    FsyncTest(fsync_test::Args),
    /// Append records from concurrent writers; print `ack <key>` for each acknowledged one.
    Load(load_cmd::Args),
    /// Recover a WAL and print every record.
    Dump(dump_cmd::Args),
    /// Measure group commit (acked/s, syncs/s, batch, latency) beside the model.
    Bench(bench_cmd::Args),
    /// Crash the WAL (SIGKILL, or simulated power cuts) and check every acknowledgement.
    CrashTest(crash_test::Args),
    /// Start an s3:// log's new session from an empty log (the WAL contract's Reset).
    Reset(reset_cmd::Args),
    /// Run the deterministic simulator: group commit schedules, power cuts.
    Sim(sim_cmd::Args),
}

fn main() -> ExitCode {
    // Help and version print as clap prints them; any other parse error becomes the
    // house's one line and exit 2.
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) if matches!(error.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand) => error.exit(),
        Err(error) => {
            let rendered = error.render().to_string();
            let first = rendered.lines().next().unwrap_or("bad arguments");
            return cli_error::finish(Err(cli_error::CliError::usage(first.trim_start_matches("error: ").to_string())));
        }
    };
    let result = match cli.command {
        Command::Inspect(args) => inspect::run(args),
        Command::Scenario(args) => scenario_cmd::run(args),
        Command::Budget(args) => budget_cmd::run(args),
        Command::FsyncTest(args) => fsync_test::run(args),
        Command::Load(args) => load_cmd::run(args),
        Command::Dump(args) => dump_cmd::run(args),
        Command::Bench(args) => bench_cmd::run(args),
        Command::CrashTest(args) => crash_test::run(args),
        Command::Reset(args) => reset_cmd::run(args),
        Command::Sim(args) => sim_cmd::run(args),
    };
    cli_error::finish(result)
}
