//! `walab`: the write-ahead-log lab on the command line.
//!
//! Every subcommand is a thin edge around `walab-core`: it parses arguments, reads or
//! writes files, and prints. The logic lives in the core so that the browser lab runs
//! the very same code. Errors print one lowercase line, `walab: <subject>: <what>`, and
//! exit with 2 for a usage problem or an unreadable input, 1 when the command ran and
//! found something wrong (for example a log whose scan stopped at a torn record).

mod cli_error;
mod inspect;
mod scenario_cmd;

use std::process::ExitCode;

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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Inspect(args) => inspect::run(args),
        Command::Scenario(args) => scenario_cmd::run(args),
    };
    cli_error::finish(result)
}
