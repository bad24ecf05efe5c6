//! `walab dump`: recover a WAL's records and print every one, changing nothing.
//!
//! Dumping reads what a recovery reads: the log from the device, scanned with the
//! log's own recorded format and segment size. It only reads: a torn tail (which holds
//! nothing acknowledged) is reported on stderr and left for the next writer to cut, and
//! no segment is created or removed. Records are printed as the scan finds them, so a
//! log of any size is dumped holding one segment ([`Wal::open_streaming`]). A log
//! damaged before its end is reported as corrupt, with the segment and byte, after the
//! records read before the damage, and the command exits 1. Text output is one
//! line per record, `<seq> <key> <value bytes>`; `--json` prints one JSON object per
//! line, `{"key": .., "seq": .., "len": ..}`.

use std::io::Write;
use std::process::ExitCode;

use walab_core::codec::tiny::TinyRecord;

use crate::cli_error::CliError;
use crate::wal::url::WalArgs;
use crate::wal::{Wal, WalOptions};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    wal: WalArgs,
    /// One JSON object per record.
    #[arg(long)]
    json: bool,
}

#[derive(serde::Serialize)]
struct RecordJson<'a> {
    key: &'a str,
    seq: u64,
    len: usize,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let backend = args.wal.backend(false).map_err(CliError::usage)?;
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let mut out_open = true;
    let mut print = |record: TinyRecord| {
        if !out_open {
            return;
        }
        let key = String::from_utf8_lossy(&record.key);
        let written = if args.json {
            let line = RecordJson { key: &key, seq: record.seq, len: record.value.len() };
            writeln!(out, "{}", serde_json::to_string(&line).expect("plain data serializes"))
        } else {
            writeln!(out, "{} {} {}", record.seq, key, record.value.len())
        };
        // A closed stdout (`walab dump | head`) ends the printing, not the reading.
        out_open = written.is_ok();
    };
    let opened = Wal::open_streaming(backend, WalOptions::default(), None, &mut print);
    let _ = out.flush();
    let (wal, recovered) = opened.map_err(crate::cmd::common::open_failure)?;
    wal.close();
    if let Some(note) = &recovered.repaired {
        eprintln!("walab: {note}");
    }
    Ok(ExitCode::SUCCESS)
}
