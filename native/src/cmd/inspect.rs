//! `walab inspect FILE [--format tiny|leveldb|rocksdb|stream] [--log-number N] [--json]`:
//! decode a log, print its records, then where and why the recovery scan stopped.
//!
//! The command is RECOVER_SCAN (see `walab_core::scan`) pointed at one real file. It
//! prints what recovery would replay and the exact byte where it would cut the log, so
//! it answers "what did this crashed database keep?" for the tiny store's segments, for
//! LevelDB's and RocksDB's `*.log` files, and for the stream store's WAL frames.
//!
//! Output. With `--json`, one object per line: each logical record
//! `{"offset": 0, "seq": 1, "ops": [{"op": "put", "key": "user:1", "value": "alice",
//! "value_len": 5}]}` (each frame `{"offset", "frame_offset", "length", "records"}` for
//! the stream format), then the stop line `{"stop": "zero", "offset": 114}`. Keys and
//! values that are not UTF-8 appear as `key_hex` / `value_hex`; values over
//! [`VALUE_SHOWN_BYTES_MAX`] bytes are left out, `value_len` never is. Without `--json`,
//! a table. Nothing else goes to stdout.
//!
//! Exit status: 0 when the scan stopped at `end` or `zero` (the log is whole), 1 when it
//! stopped at a torn or damaged record (with one line on stderr saying where and why),
//! 2 when the file cannot be read or the arguments make no sense.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::ValueEnum;
use serde::Serialize;
use walab_core::codec::leveldb::{scan_log, LogFormat, LogSegment};
use walab_core::codec::stream::scan_stream;
use walab_core::codec::write_batch::BatchOp;
use walab_core::codec::Op;
use walab_core::scan::{scan_tiny, ScanCheck, ScanStop, StopReason};

use crate::cli_error::CliError;

/// Values longer than this are left out of the output (their length is still shown).
pub const VALUE_SHOWN_BYTES_MAX: usize = 64;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The log file to decode.
    file: PathBuf,
    /// The record format.
    #[arg(long, value_enum, default_value = "tiny")]
    format: Format,
    /// RocksDB only: the log number recyclable records must carry (default: the number in
    /// the file name, 000010.log = 10; else the first record's).
    #[arg(long, value_name = "N")]
    log_number: Option<u64>,
    /// One JSON object per line instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Format {
    /// The tiny store's records (Part 4 of the teaching page).
    Tiny,
    /// LevelDB's log: legacy 7-byte headers only.
    Leveldb,
    /// RocksDB's log: legacy and recyclable (11-byte) headers.
    Rocksdb,
    /// The stream store's WAL frames.
    Stream,
}

/// One printed record: its JSON line and its table rows.
struct Printed {
    json: String,
    rows: Vec<[String; 5]>,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let name = args.file.display().to_string();
    if args.log_number.is_some() && args.format != Format::Rocksdb {
        return Err(CliError::usage(format!("{name}: --log-number applies only to --format rocksdb")));
    }
    let bytes = std::fs::read(&args.file)
        .map_err(|error| CliError::usage(format!("{name}: cannot read: {}", lowercase_io_error(&error))))?;
    let (printed, stop, checks) = decode(&args, &bytes)?;

    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let written = if args.json {
        print_json(&mut out, &printed, stop)
    } else {
        print_table(&mut out, args.format, &printed, stop, &checks)
    };
    written.map_err(|error| CliError::failed(format!("stdout: {}", lowercase_io_error(&error))))?;

    if stop.reason.is_clean() {
        Ok(ExitCode::SUCCESS)
    } else {
        Err(CliError::failed(format!("{name}: scan stopped at byte {}: {}", stop.offset, explain(stop, &checks))))
    }
}

fn decode(args: &Args, bytes: &[u8]) -> Result<(Vec<Printed>, ScanStop, Vec<ScanCheck>), CliError> {
    match args.format {
        Format::Tiny => {
            let scan = scan_tiny(&[bytes], 0);
            let printed = scan
                .records
                .iter()
                .map(|accepted| {
                    let record = &accepted.record;
                    let op = match record.op {
                        Op::Put => put_op("put", &record.key, &record.value),
                        Op::Del => key_op("del", &record.key),
                    };
                    let rows = vec![row(Some(accepted.offset), Some(record.seq), &op)];
                    let json = to_json(&RecordJson { offset: accepted.offset, seq: record.seq, ops: vec![op] });
                    Printed { json, rows }
                })
                .collect();
            Ok((printed, scan.stop, scan.checks))
        }
        Format::Leveldb | Format::Rocksdb => {
            let (format, log_number) = if args.format == Format::Leveldb {
                (LogFormat::LevelDb, None)
            } else {
                (LogFormat::RocksDb, args.log_number.or_else(|| log_number_from_name(&args.file)))
            };
            // RocksDB stores the low 32 bits of the log number in each recyclable header.
            let log_number = log_number.map(|number| number as u32);
            let scan = scan_log(format, &[LogSegment { bytes, log_number }], 0);
            let printed = scan
                .records
                .iter()
                .map(|accepted| {
                    let batch = &accepted.batch;
                    let ops: Vec<OpJson> = batch.ops.iter().map(batch_op_json).collect();
                    let mut seq = batch.seq;
                    let mut rows = Vec::new();
                    for (index, (op, shown)) in batch.ops.iter().zip(&ops).enumerate() {
                        let offset = (index == 0).then_some(accepted.offset);
                        rows.push(row(offset, op.is_data().then_some(seq), shown));
                        if op.is_data() {
                            seq += 1;
                        }
                    }
                    if rows.is_empty() {
                        let empty = OpJson { op: "(empty batch)", ..OpJson::default() };
                        rows.push(row(Some(accepted.offset), Some(batch.seq), &empty));
                    }
                    let json = to_json(&RecordJson { offset: accepted.offset, seq: batch.seq, ops });
                    Printed { json, rows }
                })
                .collect();
            Ok((printed, scan.stop, scan.checks))
        }
        Format::Stream => {
            let scan = scan_stream(&[bytes], None, 0);
            let printed = scan
                .frames
                .iter()
                .map(|accepted| {
                    let length = accepted.len - walab_core::codec::stream::FRAME_HEADER_BYTES as u64;
                    let records = accepted.frame.records.len();
                    Printed {
                        json: to_json(&FrameJson {
                            offset: accepted.offset,
                            frame_offset: accepted.frame.frame_offset,
                            length,
                            records,
                        }),
                        rows: vec![[
                            accepted.offset.to_string(),
                            accepted.frame.frame_offset.to_string(),
                            length.to_string(),
                            records.to_string(),
                            String::new(),
                        ]],
                    }
                })
                .collect();
            Ok((printed, scan.stop, scan.checks))
        }
    }
}

/// `000010.log` -> 10: RocksDB names each log after its number.
fn log_number_from_name(path: &Path) -> Option<u64> {
    let stem = path.file_stem()?.to_str()?;
    if stem.is_empty() || !stem.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    stem.parse().ok()
}

/// One entry of a record, in the order its fields print. Absent fields are left out.
#[derive(Serialize, Default)]
struct OpJson {
    op: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    key_hex: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    begin: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    begin_hex: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    end: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    end_hex: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    value: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    value_hex: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    value_len: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    blob: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    blob_hex: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    xid: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    xid_hex: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timestamp_hex: Option<String>,
    /// The column family, when not the default one.
    #[serde(skip_serializing_if = "Option::is_none")]
    cf: Option<u32>,
}

/// Text when the bytes are UTF-8, else hex: (text, hex).
fn text_or_hex(bytes: &[u8]) -> (Option<String>, Option<String>) {
    match std::str::from_utf8(bytes) {
        Ok(text) => (Some(text.to_string()), None),
        Err(_) => (None, Some(hex(bytes))),
    }
}

fn key_op(op: &'static str, key: &[u8]) -> OpJson {
    let (key, key_hex) = text_or_hex(key);
    OpJson { op, key, key_hex, ..OpJson::default() }
}

fn put_op(op: &'static str, key: &[u8], value: &[u8]) -> OpJson {
    let mut json = key_op(op, key);
    if value.len() <= VALUE_SHOWN_BYTES_MAX {
        (json.value, json.value_hex) = text_or_hex(value);
    }
    json.value_len = Some(value.len());
    json
}

fn xid_op(op: &'static str, xid: &[u8]) -> OpJson {
    let (xid, xid_hex) = text_or_hex(xid);
    OpJson { op, xid, xid_hex, ..OpJson::default() }
}

fn in_family(mut json: OpJson, column_family: u32) -> OpJson {
    json.cf = (column_family != 0).then_some(column_family);
    json
}

fn batch_op_json(op: &BatchOp) -> OpJson {
    match op {
        BatchOp::Put { column_family, key, value } => in_family(put_op("put", key, value), *column_family),
        BatchOp::Delete { column_family, key } => in_family(key_op("del", key), *column_family),
        BatchOp::SingleDelete { column_family, key } => in_family(key_op("single_del", key), *column_family),
        BatchOp::Merge { column_family, key, value } => in_family(put_op("merge", key, value), *column_family),
        BatchOp::RangeDelete { column_family, begin_key, end_key } => {
            let (begin, begin_hex) = text_or_hex(begin_key);
            let (end, end_hex) = text_or_hex(end_key);
            in_family(OpJson { op: "range_del", begin, begin_hex, end, end_hex, ..OpJson::default() }, *column_family)
        }
        BatchOp::BlobIndex { column_family, key, value } => {
            in_family(put_op("blob_index", key, value), *column_family)
        }
        BatchOp::WideColumnEntity { column_family, key, value } => {
            in_family(put_op("wide_column_entity", key, value), *column_family)
        }
        BatchOp::LogData { blob } => {
            let (blob, blob_hex) = text_or_hex(blob);
            OpJson { op: "log_data", blob, blob_hex, ..OpJson::default() }
        }
        BatchOp::Noop => OpJson { op: "noop", ..OpJson::default() },
        BatchOp::BeginPrepare => OpJson { op: "begin_prepare", ..OpJson::default() },
        BatchOp::BeginPersistedPrepare => OpJson { op: "begin_persisted_prepare", ..OpJson::default() },
        BatchOp::BeginUnprepare => OpJson { op: "begin_unprepare", ..OpJson::default() },
        BatchOp::EndPrepare { xid } => xid_op("end_prepare", xid),
        BatchOp::Commit { xid } => xid_op("commit", xid),
        BatchOp::CommitWithTimestamp { timestamp, xid } => {
            OpJson { timestamp_hex: Some(hex(timestamp)), ..xid_op("commit_with_timestamp", xid) }
        }
        BatchOp::Rollback { xid } => xid_op("rollback", xid),
    }
}

/// A record line: `{"offset", "seq", "ops"}`.
#[derive(Serialize)]
struct RecordJson {
    offset: u64,
    seq: u64,
    ops: Vec<OpJson>,
}

/// A stream frame line.
#[derive(Serialize)]
struct FrameJson {
    offset: u64,
    frame_offset: u64,
    length: u64,
    records: usize,
}

/// The last line.
#[derive(Serialize)]
struct StopJson {
    stop: &'static str,
    offset: u64,
}

/// A table row: offset, seq, op, key, value. `seq` is blank for entries that use none.
fn row(offset: Option<u64>, seq: Option<u64>, op: &OpJson) -> [String; 5] {
    let shown = |text: &Option<String>, hex: &Option<String>| match (text, hex) {
        (Some(text), _) => text.clone(),
        (None, Some(hex)) => format!("0x{hex}"),
        (None, None) => String::new(),
    };
    let mut key = shown(&op.key, &op.key_hex);
    if op.begin.is_some() || op.begin_hex.is_some() {
        key = format!("{}..{}", shown(&op.begin, &op.begin_hex), shown(&op.end, &op.end_hex));
    }
    if let Some(column_family) = op.cf {
        key = format!("[cf {column_family}] {key}");
    }
    let value = match (op.value_len, shown(&op.value, &op.value_hex)) {
        (Some(len), shown) if shown.is_empty() && len > 0 => format!("({len} bytes)"),
        (_, shown) if !shown.is_empty() => shown,
        _ => {
            let blob = shown(&op.blob, &op.blob_hex);
            if blob.is_empty() {
                shown(&op.xid, &op.xid_hex)
            } else {
                blob
            }
        }
    };
    [
        offset.map(|offset| offset.to_string()).unwrap_or_default(),
        seq.map(|seq| seq.to_string()).unwrap_or_default(),
        op.op.to_string(),
        key,
        value,
    ]
}

fn print_json(out: &mut impl Write, printed: &[Printed], stop: ScanStop) -> std::io::Result<()> {
    for record in printed {
        writeln!(out, "{}", record.json)?;
    }
    writeln!(out, "{}", to_json(&StopJson { stop: stop.reason.name(), offset: stop.offset }))
}

fn print_table(
    out: &mut impl Write,
    format: Format,
    printed: &[Printed],
    stop: ScanStop,
    checks: &[ScanCheck],
) -> std::io::Result<()> {
    let header: [&str; 5] = if format == Format::Stream {
        ["offset", "frame_offset", "length", "records", ""]
    } else {
        ["offset", "seq", "op", "key", "value"]
    };
    let rows: Vec<&[String; 5]> = printed.iter().flat_map(|record| record.rows.iter()).collect();
    let mut widths = header.map(str::len);
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row.iter()) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: [&str; 5]| -> String {
        let mut text = format!("{:>w0$}  {:>w1$}", cells[0], cells[1], w0 = widths[0], w1 = widths[1]);
        for (index, cell) in cells.iter().enumerate().skip(2) {
            if format == Format::Stream && index < 4 {
                text.push_str(&format!("  {:>width$}", cell, width = widths[index]));
            } else {
                text.push_str(&format!("  {:<width$}", cell, width = widths[index]));
            }
        }
        text.trim_end().to_string()
    };
    writeln!(out, "{}", line(header))?;
    for row in rows {
        writeln!(out, "{}", line([&row[0], &row[1], &row[2], &row[3], &row[4]]))?;
    }
    writeln!(out, "stop: {} at byte {}: {}", stop.reason.name(), stop.offset, explain(stop, checks))
}

/// A sentence for the stop, with the failed check's numbers.
fn explain(stop: ScanStop, checks: &[ScanCheck]) -> String {
    let failed = checks.iter().rev().find(|check| {
        matches!(
            check,
            ScanCheck::HeaderShort { .. }
                | ScanCheck::LengthBound { ok: false, .. }
                | ScanCheck::PayloadPresent { ok: false, .. }
                | ScanCheck::Checksum { ok: false, .. }
                | ScanCheck::LogNumber { ok: false, .. }
                | ScanCheck::FrameOffset { ok: false, .. }
                | ScanCheck::Fragment { ok: false, .. }
                | ScanCheck::Payload { ok: false, .. }
        )
    });
    match (stop.reason, failed) {
        (StopReason::End, _) => "the data ends at a record boundary".into(),
        (StopReason::Zero, _) => "all-zero header: nothing was written past here".into(),
        (StopReason::Short, Some(ScanCheck::PayloadPresent { offset, length, available, .. })) => {
            format!("record at byte {offset} needs {length} payload bytes, {available} left (torn write)")
        }
        (StopReason::Short, Some(ScanCheck::HeaderShort { available, .. })) => {
            format!("only {available} bytes of a header left (torn write)")
        }
        (StopReason::Short, _) => "a record cut short by the end of the data (torn write)".into(),
        (StopReason::Checksum, Some(ScanCheck::Checksum { stored, computed, .. })) => {
            format!("checksum mismatch: stored {stored:#010x}, computed {computed:#010x}")
        }
        (StopReason::BadLength, Some(ScanCheck::LengthBound { length, min, max, .. })) => {
            format!("bad length {length}: must be {min} to {max}")
        }
        (StopReason::BadLength, Some(ScanCheck::Payload { problem: Some(problem), .. })) => {
            format!("bad length: {problem}")
        }
        (StopReason::BadFragment, Some(ScanCheck::Fragment { record_type: 9, .. })) => {
            "record type 9 turns on RocksDB's WAL compression (wal_compression), which walab does not decode".into()
        }
        (StopReason::BadFragment, Some(ScanCheck::Fragment { record_type, in_fragmented_record, .. })) => {
            if *in_fragmented_record {
                format!("bad fragment: type {record_type} inside a fragmented record")
            } else {
                format!("bad fragment: type {record_type} where a record must start")
            }
        }
        (StopReason::OldRecord, Some(ScanCheck::LogNumber { expected, found, .. })) => {
            format!("old record: log number {found}, this log is {expected}")
        }
        (StopReason::OldRecord, Some(ScanCheck::FrameOffset { expected, found, .. })) => {
            format!("old record: frame offset {found}, expected {expected}")
        }
        (StopReason::OldRecord, _) => "old record: a legacy record after recyclable ones".into(),
        (reason, _) => reason.name().replace('-', " "),
    }
}

fn to_json(value: &impl Serialize) -> String {
    serde_json::to_string(value).expect("plain structs always serialize")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// `No such file or directory (os error 2)` -> `no such file or directory`.
fn lowercase_io_error(error: &std::io::Error) -> String {
    let text = error.to_string();
    let text = match text.find(" (os error") {
        Some(cut) => &text[..cut],
        None => &text,
    };
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => text.to_string(),
    }
}
