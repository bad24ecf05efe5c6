//! The `walab` binary against real Postgres: load, dump, bench and crash-test with
//! `--wal postgres://...`, the fencing race between two processes, and crash-test
//! killing the postmaster of a throwaway cluster.

use std::collections::HashSet;
use std::process::{Command, Output, Stdio};

mod common;

use walab::wal::postgres::cluster;

const SERVER: &str = "postgres://postgres@127.0.0.1:5432/test";

fn walab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_walab")).args(args).output().expect("walab runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

/// A cluster name no other test (or earlier run) uses.
fn unique_cluster(test: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("{test}-{}-{nanos}", std::process::id())
}

fn acks(output: &Output) -> Vec<String> {
    stdout(output).lines().map(|line| line.strip_prefix("ack ").expect("only ack lines").to_string()).collect()
}

fn dump_keys(url: &str, cluster: &str) -> HashSet<String> {
    common::keys_of_json_dump(&walab(&["dump", "--wal", url, "--cluster", cluster, "--json"])).into_iter().collect()
}

#[test]
fn load_then_dump_holds_every_ack() {
    let cluster = unique_cluster("cli-load");
    let load = walab(&["load", "--wal", SERVER, "--cluster", &cluster, "--writers", "8", "--records", "400"]);
    assert!(load.status.success(), "{}", stderr(&load));
    let acked = acks(&load);
    assert_eq!(acked.len(), 400);
    let keys = dump_keys(SERVER, &cluster);
    assert_eq!(keys.len(), 400);
    assert!(acked.iter().all(|key| keys.contains(key)));
}

#[test]
fn a_bad_url_is_one_line_naming_the_option() {
    let output = walab(&["load", "--wal", &format!("{SERVER}?batchIntervall=1ms"), "--records", "1"]);
    assert_eq!(output.status.code(), Some(2));
    let text = stderr(&output);
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.starts_with("walab: ") && text.contains("unknown option \"batchIntervall\""), "{text}");
}

#[test]
fn bench_with_a_consumer_wraps_a_small_ring() {
    let cluster = unique_cluster("cli-bench");
    let url = format!("{SERVER}?segments=3&segmentBytes=64KiB&maxBytesInBatch=16KiB&maxUnflushedBytes=64KiB");
    let bench = walab(&[
        "bench", "--wal", &url, "--cluster", &cluster, "--writers", "16", "--seconds", "2", "--trim-lag", "100", "--json",
    ]);
    assert!(bench.status.success(), "{}", stderr(&bench));
    let report: serde_json::Value = serde_json::from_str(stdout(&bench).trim()).unwrap();
    let acked = report["runs"][0]["acked"].as_u64().unwrap();
    assert!(acked > 0);
    // The slots were truncated as the consumer went: what is left fits in the ring's
    // three 64 KiB slots (a record is over 100 bytes), however much was acknowledged.
    // A plain URL reads the ring the node row records.
    let dump = walab(&["dump", "--wal", SERVER, "--cluster", &cluster, "--json"]);
    assert!(dump.status.success(), "{}", stderr(&dump));
    let recovered = stdout(&dump).lines().count() as u64;
    assert!(recovered <= 3 * 65_536 / 100, "recovered {recovered} of {acked}");
}

#[test]
fn two_writers_race_for_the_node_and_the_loser_is_fenced_losing_nothing() {
    let cluster = unique_cluster("cli-race");
    let start = || {
        Command::new(env!("CARGO_BIN_EXE_walab"))
            .args(["load", "--wal", SERVER, "--cluster", &cluster, "--writers", "8", "--seconds", "3"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let first = start();
    let second = start();
    let first = first.wait_with_output().unwrap();
    let second = second.wait_with_output().unwrap();
    let outcomes = [&first, &second];
    let fenced: Vec<&&Output> = outcomes.iter().filter(|o| stderr(o).contains("fenced")).collect();
    assert_eq!(fenced.len(), 1, "exactly one writer is fenced:\n{}\n{}", stderr(&first), stderr(&second));
    assert!(!fenced[0].status.success());
    let winner = outcomes.iter().find(|o| !stderr(o).contains("fenced")).unwrap();
    assert!(winner.status.success(), "{}", stderr(winner));
    let keys = dump_keys(SERVER, &cluster);
    for output in outcomes {
        for key in acks(output) {
            assert!(keys.contains(&key), "acknowledged {key} is missing");
        }
    }
}

#[test]
fn crash_test_killing_walab_loses_nothing() {
    let cluster = unique_cluster("cli-kill");
    let output = walab(&[
        "crash-test", "--wal", SERVER, "--cluster", &cluster, "--kills", "5", "--kill-after-ms-max", "800", "--json",
    ]);
    assert!(output.status.success(), "{}{}", stdout(&output), stderr(&output));
    let report: serde_json::Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(report["crashes"], 5);
    assert_eq!(report["lost"], 0);
    assert!(report["acks_checked"].as_u64().unwrap() > 0, "{report}");
}

#[test]
fn crash_test_killing_the_postmaster_loses_nothing() {
    let server = cluster::Cluster::init(&[]).unwrap();
    let data_dir = server.data_dir.display().to_string();
    let output = walab(&[
        "crash-test",
        "--wal",
        &server.url(),
        "--kill-postmaster",
        &data_dir,
        "--kills",
        "3",
        "--kill-after-ms-max",
        "1500",
        "--json",
    ]);
    assert!(output.status.success(), "{}{}", stdout(&output), stderr(&output));
    let report: serde_json::Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(report["crashes"], 3);
    assert_eq!(report["lost"], 0);
}
