//! `walab reset`: the WAL contract's Reset, "start a new session from an empty log".
//!
//! The stream store calls Reset once what recovery found has been uploaded to data
//! objects: the log's records are no longer needed. For an `s3://` log this takes the
//! node over (a new epoch, so any writer still running is fenced), deletes every object,
//! and records a session that starts where the log ended, so the next append's seq goes
//! on from the last one. Prints what it did on one line.

use std::io::Write;
use std::process::ExitCode;

use crate::cli_error::CliError;
use crate::wal::s3::{self, S3Backend, S3Location};
use crate::wal::url::{parse_wal_url, WalArgs, WalUrl};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    wal: WalArgs,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let (bucket, path) = match parse_wal_url(&args.wal.wal).map_err(CliError::usage)? {
        WalUrl::S3 { bucket, path } => (bucket, path),
        _ => return Err(CliError::usage(format!("--wal {}: reset is for s3:// logs", args.wal.wal))),
    };
    // Same checks and client as every other command.
    args.wal.backend(false).map_err(CliError::usage)?;
    let store = s3::connect(&bucket, args.wal.endpoint.as_deref()).map_err(CliError::usage)?;
    let location = S3Location { node_prefix: s3::layout::node_prefix(&path, &args.wal.cluster, &args.wal.node), bucket };
    let mut backend = S3Backend::new(store, location, false, args.wal.segment_bytes.unwrap_or(crate::wal::file::SEGMENT_BYTES_DEFAULT)).map_err(CliError::failed)?;
    let report = s3::reset(&mut backend).map_err(|error| CliError::failed(error.to_string()))?;
    let _ = writeln!(
        std::io::stdout().lock(),
        "reset {}: epoch {}, {} objects deleted, next seq {}",
        backend_name(&args.wal),
        report.epoch,
        report.objects_deleted,
        report.next_seq
    );
    Ok(ExitCode::SUCCESS)
}

fn backend_name(args: &WalArgs) -> String {
    format!("{} (cluster {}, node {})", args.wal, args.cluster, args.node)
}
