//! `walab sim quorum`: Part 10's branch R, the tiny store forked after a write and run
//! through a quorum of replicas on the core's group-commit machine, plus what each sync
//! policy survives.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::ValueEnum;
use serde::Serialize;
use walab_core::quorum::{branch_r, page_policies, policies_for_three, replica_name, survival_table, BranchR, QuorumMode, QuorumSetup, SurvivalRow, WriteBudget};
use walab_core::time::Nanos;

use crate::cli_error::CliError;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The scenario (the tiny store).
    #[arg(long, value_enum, default_value_t = Scenario::TinyStore)]
    scenario: Scenario,
    /// Fork the main timeline once this write is acknowledged (1 to 23).
    #[arg(long, default_value_t = 20)]
    fork_after_write: u64,
    /// Replicas, the leader included, that must hold a batch before it commits.
    #[arg(long, default_value_t = 2)]
    w: usize,
    /// Comma-separated milliseconds: the leader's local sync, then each follower's
    /// acknowledgement delay after the leader sends.
    #[arg(long, default_value = "1.0,1.4,6.0")]
    replica_ms: String,
    /// raft: legs in parallel; postgres: ship only locally flushed WAL.
    #[arg(long, value_enum, default_value_t = Mode::Raft)]
    mode: Mode,
    /// Batches in flight at once.
    #[arg(long, default_value_t = 1)]
    inflight: usize,
    /// The write whose budget to break down.
    #[arg(long, default_value_t = 23)]
    budget_write: u64,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Write the run as a walab trace (JSON) to this file.
    #[arg(long)]
    trace: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Scenario {
    TinyStore,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Mode {
    Raft,
    Postgres,
}

#[derive(Serialize)]
struct QuorumJson<'a> {
    run: &'a BranchR,
    batch_latency: Nanos,
    replicas_waited_for: Vec<String>,
    budget: Option<WriteBudget>,
    survival: Vec<SurvivalRow>,
}

fn parse_legs(text: &str) -> Result<Vec<Nanos>, CliError> {
    text.split(',')
        .map(|part| Nanos::parse_millis(part).ok_or_else(|| CliError::usage(format!("--replica-ms: {:?} is not a number of milliseconds", part.trim()))))
        .collect()
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let Scenario::TinyStore = args.scenario;
    let setup = QuorumSetup {
        legs: parse_legs(&args.replica_ms)?,
        w: args.w,
        mode: match args.mode {
            Mode::Raft => QuorumMode::Raft,
            Mode::Postgres => QuorumMode::Postgres,
        },
        inflight_max: args.inflight,
    };
    setup.validate().map_err(|error| CliError::usage(format!("quorum: {error}")))?;
    let run = branch_r(&setup, args.fork_after_write).map_err(|error| CliError::usage(format!("quorum: {error}")))?;
    if let Some(path) = &args.trace {
        let json = serde_json::to_vec_pretty(&run.trace()).map_err(|error| CliError::failed(format!("trace: {error}")))?;
        std::fs::write(path, json).map_err(|error| CliError::usage(format!("{}: {error}", path.display())))?;
    }
    let budget = run.budget(args.budget_write);
    // The survival table is for three replicas: timed by --replica-ms when it names three,
    // else by the page's branch R.
    let policies = match <[Nanos; 3]>::try_from(setup.legs.as_slice()) {
        Ok(legs) => policies_for_three(legs),
        Err(_) => page_policies(),
    };
    let survival = survival_table(&policies);
    let waited: Vec<String> = setup.replicas_waited_for().into_iter().map(replica_name).collect();
    let mut out = std::io::stdout().lock();
    if args.json {
        let json = QuorumJson { run: &run, batch_latency: setup.batch_latency(), replicas_waited_for: waited, budget, survival };
        serde_json::to_writer_pretty(&mut out, &json).map_err(|error| CliError::failed(format!("stdout: {error}")))?;
        writeln!(out).ok();
        return Ok(ExitCode::SUCCESS);
    }
    let legs: Vec<String> = setup
        .legs
        .iter()
        .enumerate()
        .map(|(index, leg)| if index == 0 { format!("{} (leader) syncs in {leg}", replica_name(0)) } else { format!("{} acks {leg} after the leader sends", replica_name(index)) })
        .collect();
    let mode = match setup.mode {
        QuorumMode::Raft => "raft (legs in parallel)",
        QuorumMode::Postgres => "postgres (ships only locally flushed WAL)",
    };
    let lines = [
        format!("branch r: the tiny store forked after write {} (acknowledged at {} on the main timeline)", run.fork_after_write, run.fork_at),
        format!("replicas: {}", legs.join("; ")),
        format!("commit at W = {} of {}, {mode}, {} batch(es) in flight", setup.w, setup.legs.len(), setup.inflight_max),
        format!("each batch commits {} after it starts, waiting for {}", setup.batch_latency(), waited.join(" and ")),
        String::new(),
        format!("{:<6} {:<8} {:>9} {:>9}", "batch", "writes", "start", "commit"),
    ];
    for line in lines {
        writeln!(out, "{line}").ok();
    }
    for batch in &run.branch.batches {
        let writes = if batch.writes == 1 { batch.first_write.to_string() } else { format!("{}-{}", batch.first_write, batch.first_write + batch.writes - 1) };
        writeln!(out, "B{:<5} {:<8} {:>9} {:>9}", batch.batch, writes, batch.start.to_string(), batch.end.to_string()).ok();
    }
    writeln!(out, "\n{:<6} {:>9} {:>9} {:>9}", "write", "arrival", "ack", "wait").ok();
    for write in &run.branch.writes {
        writeln!(out, "{:<6} {:>9} {:>9} {:>9}", write.id, write.arrival.to_string(), write.ack.to_string(), write.wait().to_string()).ok();
    }
    if let Some(budget) = &budget {
        let legs_sum: Vec<String> = setup.legs.iter().map(|leg| format!("{:.1}", leg.as_millis_f64())).collect();
        writeln!(
            out,
            "\nwrite {}'s budget: {} waiting for the batch in flight + {} for its own batch = {}; adding every leg instead ({:.1} + {}) claims {}",
            budget.write,
            budget.waited_for_batch_in_flight,
            budget.own_batch,
            budget.total,
            budget.waited_for_batch_in_flight.as_millis_f64(),
            legs_sum.join(" + "),
            budget.naive_sum
        )
        .ok();
    }
    let timing = match <[Nanos; 3]>::try_from(setup.legs.as_slice()) {
        Ok([sync, b, c]) => format!("every sync {sync}, B {} and C {} away", b.saturating_sub(sync), c.saturating_sub(sync)),
        Err(_) => "the page's branch R: every sync 1.0 ms, B 0.4 ms and C 5.0 ms away".to_string(),
    };
    writeln!(out, "\nwhat an acknowledged write survives (three replicas in zones a, b, c; failure at the commit instant; {timing})").ok();
    writeln!(out, "{:<46} {:>7}  {:<17} {:<11} {:<9} shared power event", "policy", "commit", "leader power loss", "lost leader", "lost zone").ok();
    for row in &survival {
        let answer = |index: usize| if row.survives[index].1 { "yes" } else { "NO" };
        writeln!(out, "{:<46} {:>7}  {:<17} {:<11} {:<9} {}", row.policy, row.commit_latency.to_string(), answer(0), answer(1), answer(2), answer(3)).ok();
    }
    Ok(ExitCode::SUCCESS)
}
