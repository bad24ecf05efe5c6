//! `walab scenario tiny-store [--json]`: the tiny store's 24 writes with their bytes.

use std::io::Write;
use std::process::ExitCode;

use clap::ValueEnum;
use serde::Serialize;
use walab_core::codec::Op;
use walab_core::tiny_store;

use crate::cli_error::CliError;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Which scenario to print.
    #[arg(value_enum)]
    scenario: ScenarioName,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum ScenarioName {
    /// The teaching page's 24-write store.
    TinyStore,
}

#[derive(Serialize)]
struct ScenarioJson {
    sync_ms: f64,
    unit_bytes: usize,
    memtable_writes: usize,
    writes: Vec<WriteJson>,
}

#[derive(Serialize)]
struct WriteJson {
    id: u64,
    arrival_ms: f64,
    op: &'static str,
    key: &'static str,
    value: Option<&'static str>,
    record_hex: String,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let ScenarioName::TinyStore = args.scenario;
    let writes: Vec<WriteJson> = tiny_store::WRITES
        .iter()
        .map(|write| WriteJson {
            id: write.id,
            arrival_ms: write.arrival.as_millis_f64(),
            op: match write.op {
                Op::Put => "put",
                Op::Del => "del",
            },
            key: write.key,
            value: match write.op {
                Op::Put => Some(write.value),
                Op::Del => None,
            },
            record_hex: hex(&write.record()),
        })
        .collect();
    let mut out = std::io::stdout().lock();
    if args.json {
        let scenario = ScenarioJson {
            sync_ms: tiny_store::SYNC_LATENCY.as_millis_f64(),
            unit_bytes: tiny_store::UNIT_BYTES,
            memtable_writes: tiny_store::MEMTABLE_WRITES,
            writes,
        };
        serde_json::to_writer(&mut out, &scenario).map_err(|e| CliError::failed(format!("stdout: {e}")))?;
        writeln!(out).ok();
    } else {
        writeln!(
            out,
            "tiny store: sync {} per sync, {}-byte units, {} writes per memtable",
            tiny_store::SYNC_LATENCY,
            tiny_store::UNIT_BYTES,
            tiny_store::MEMTABLE_WRITES
        )
        .ok();
        writeln!(out, "{:>3}  {:>8}  {:<3}  {:<8}  {:<7}  {:>5}  record", "id", "arrival", "op", "key", "value", "bytes").ok();
        for write in &writes {
            writeln!(
                out,
                "{:>3}  {:>5.1} ms  {:<3}  {:<8}  {:<7}  {:>5}  {}",
                write.id,
                write.arrival_ms,
                write.op,
                write.key,
                write.value.unwrap_or("-"),
                write.record_hex.len() / 2,
                write.record_hex
            )
            .ok();
        }
    }
    Ok(ExitCode::SUCCESS)
}
