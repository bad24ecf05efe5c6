//! The `walab` binary against real files: load, dump, bench, crash-test, fsync-test, and
//! the one-line errors for bad input.

use std::collections::HashSet;
use std::path::Path;
use std::process::{Command, Output};

fn walab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_walab")).args(args).output().expect("walab runs")
}

fn url(dir: &Path) -> String {
    format!("file://{}", dir.display())
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

/// Asserts a failure with exactly one `walab: ...` line on stderr and the given exit code.
fn assert_one_line_error(output: &Output, code: i32, needle: &str) {
    assert_eq!(output.status.code(), Some(code), "stderr: {}", stderr(output));
    let text = stderr(output);
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.starts_with("walab: "), "{text}");
    assert!(text.contains(needle), "{text}");
    assert!(!text.contains("panicked"), "{text}");
}

#[test]
fn every_ack_printed_by_load_is_in_the_dump() {
    let dir = tempfile::tempdir().unwrap();
    let wal = url(dir.path());
    let load = walab(&["load", "--wal", &wal, "--writers", "4", "--records", "50", "--segment-bytes", "8192"]);
    assert!(load.status.success(), "{}", stderr(&load));
    let acks: Vec<String> =
        stdout(&load).lines().map(|line| line.strip_prefix("ack ").expect("only ack lines").to_string()).collect();
    assert_eq!(acks.len(), 50);
    let second = walab(&["load", "--wal", &wal, "--writers", "2", "--records", "10", "--segment-bytes", "8192"]);
    assert!(second.status.success());
    let dump = walab(&["dump", "--wal", &wal, "--json", "--segment-bytes", "8192"]);
    assert!(dump.status.success(), "{}", stderr(&dump));
    let mut seqs = Vec::new();
    let mut keys = HashSet::new();
    for line in stdout(&dump).lines() {
        let value: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(value["len"], 100);
        seqs.push(value["seq"].as_u64().unwrap());
        keys.insert(value["key"].as_str().unwrap().to_string());
    }
    assert_eq!(seqs, (1..=60).collect::<Vec<u64>>());
    assert!(acks.iter().all(|key| keys.contains(key)));
    // Text form: seq, key, value bytes.
    let text = walab(&["dump", "--wal", &wal, "--segment-bytes", "8192"]);
    assert!(stdout(&text).lines().next().unwrap().starts_with("1 "));
}

#[test]
fn cluster_and_node_name_separate_logs() {
    let dir = tempfile::tempdir().unwrap();
    let wal = url(dir.path());
    assert!(walab(&["load", "--wal", &wal, "--node", "1", "--records", "3"]).status.success());
    assert!(dir.path().join("default/1").is_dir());
    let other = walab(&["dump", "--wal", &wal, "--cluster", "other", "--node", "1"]);
    assert_one_line_error(&other, 2, "no log here");
}

#[test]
fn crash_test_with_kills_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let output = walab(&["crash-test", "--wal", &url(dir.path()), "--kills", "3", "--writers", "4", "--kill-after-ms-max", "300"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let line = stdout(&output);
    assert!(line.starts_with("kills 3, acks checked "), "{line}");
    assert!(line.contains(", lost 0,"), "{line}");
}

#[test]
fn crash_test_with_power_cuts_loses_nothing() {
    let output = walab(&["crash-test", "--power-loss", "--cuts", "30", "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(report["crashes"], 30);
    assert_eq!(report["lost"], 0);
    assert!(report["acks_checked"].as_u64().unwrap() > 0);
}

#[test]
fn bench_reports_each_writer_count_beside_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.json");
    let output = walab(&[
        "bench",
        "--wal",
        &url(&dir.path().join("log")),
        "--writers",
        "1,4",
        "--seconds",
        "0.3",
        "--json",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for (run, writers) in runs.iter().zip([1, 4]) {
        assert_eq!(run["writers"], writers);
        for field in ["acked_per_s", "syncs_per_s", "batch_mean", "model_batch"] {
            assert!(run[field].as_f64().is_some(), "{field}");
        }
        assert!(run["latency_ms"]["p50"].as_f64().unwrap() <= run["latency_ms"]["p99"].as_f64().unwrap());
    }
    let trace: serde_json::Value = serde_json::from_slice(&std::fs::read(trace).unwrap()).unwrap();
    let traces = trace.as_array().unwrap();
    assert_eq!(traces.len(), 2);
    assert_eq!(traces[1]["scenario"], "native-file-4w");
    let events = traces[0]["events"].as_array().unwrap();
    assert!(events.iter().any(|e| e["event"] == "batch_formed"));
    assert!(events.iter().any(|e| e["event"] == "sync_end" && e["ok"] == true));
    assert!(events.iter().any(|e| e["event"] == "ack"));
    // It loads back as the core's Trace, and its state at the end shows acknowledged writes.
    let first: walab_core::trace::Trace = serde_json::from_value(traces[0].clone()).unwrap();
    assert!(!first.writes.is_empty());
    let end = first.events.last().unwrap().at;
    let _ = first.state_at(end);
}

#[test]
fn fsync_test_exports_a_loadable_latency_distribution() {
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("latency.json");
    let output = walab(&[
        "fsync-test",
        "--dir",
        dir.path().to_str().unwrap(),
        "--ops",
        "5",
        "--json",
        "--export-latency",
        export.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(report["methods"].as_array().unwrap().len(), 8);
    let latency: serde_json::Value = serde_json::from_slice(&std::fs::read(&export).unwrap()).unwrap();
    assert_eq!(latency["schema"], "walab-latency/1");
    assert_eq!(latency["method"], "overwrite-fdatasync");
    let quantiles: Vec<u64> = latency["quantiles_ns"].as_array().unwrap().iter().map(|q| q.as_u64().unwrap()).collect();
    assert_eq!(quantiles.len(), 101);
    assert!(quantiles.windows(2).all(|w| w[0] <= w[1]));
}

#[test]
fn bad_input_gets_one_line_and_a_nonzero_exit() {
    let dir = tempfile::tempdir().unwrap();
    assert_one_line_error(&walab(&["load", "--wal", "s3://B/prefix"]), 2, "bucket");
    assert_one_line_error(&walab(&["load", "--wal", "gopher://x"]), 2, "unknown scheme");
    assert_one_line_error(&walab(&["dump", "--wal", "/no/scheme"]), 2, "not a URL");
    assert_one_line_error(&walab(&["load", "--wal", "file:///proc/walab-cannot-write", "--records", "1"]), 2, "cannot create");
    assert_one_line_error(&walab(&["load", "--wal", &url(dir.path()), "--node", "../x"]), 2, "--node");
    assert_one_line_error(&walab(&["fsync-test", "--dir", "/no/such/dir"]), 2, "/no/such/dir");
    assert_one_line_error(
        &walab(&["bench", "--wal", "file:///proc/walab-cannot-write", "--writers", "1", "--seconds", "0.1"]),
        2,
        "cannot create",
    );
    assert_one_line_error(&walab(&["load", "--wal", &url(dir.path()), "--record-bytes", "70000"]), 2, "--record-bytes");
    assert_one_line_error(&walab(&["crash-test", "--kills", "1"]), 2, "--wal");
}

#[test]
fn a_corrupt_segment_is_reported_with_its_byte_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let wal = url(dir.path());
    let load = walab(&["load", "--wal", &wal, "--records", "200", "--writers", "2", "--segment-bytes", "8192"]);
    assert!(load.status.success());
    let first = dir.path().join("default/0/wal-00000000000000000001.log");
    let mut bytes = std::fs::read(&first).unwrap();
    bytes[300] ^= 0x55;
    std::fs::write(&first, bytes).unwrap();
    let dump = walab(&["dump", "--wal", &wal, "--segment-bytes", "8192"]);
    assert_one_line_error(&dump, 1, "wal-00000000000000000001.log: checksum mismatch at byte");
    // Dumping streams: what it printed is the records read before the damage, in order.
    let seqs: Vec<u64> = stdout(&dump).lines().map(|line| line.split(' ').next().unwrap().parse().unwrap()).collect();
    assert!(seqs.len() < 200, "{} records printed from a log damaged in its first segment", seqs.len());
    assert!(seqs.iter().zip(1..).all(|(&seq, expected)| seq == expected), "{seqs:?}");
}

#[test]
fn the_leveldb_format_round_trips_and_inspect_reads_its_segments() {
    let dir = tempfile::tempdir().unwrap();
    let wal = url(dir.path());
    let load = walab(&["load", "--wal", &wal, "--format", "leveldb", "--writers", "4", "--records", "40"]);
    assert!(load.status.success(), "{}", stderr(&load));
    assert_eq!(stdout(&load).lines().count(), 40);
    let dump = walab(&["dump", "--wal", &wal, "--format", "leveldb"]);
    assert!(dump.status.success(), "{}", stderr(&dump));
    assert_eq!(stdout(&dump).lines().count(), 40);
    assert_one_line_error(&walab(&["dump", "--wal", &wal]), 2, "pass --format leveldb");
    let segment = dir.path().join("default/0/wal-00000000000000000001.log");
    let inspect = walab(&["inspect", segment.to_str().unwrap(), "--format", "leveldb", "--json"]);
    assert_eq!(inspect.status.code(), Some(0), "{}", stderr(&inspect));
    let cuts = walab(&["crash-test", "--power-loss", "--cuts", "20", "--format", "leveldb"]);
    assert!(cuts.status.success(), "{}", stderr(&cuts));
    assert!(stdout(&cuts).contains(", lost 0,"));
}

#[test]
fn crash_test_survives_kills_while_the_log_is_being_created() {
    // Kills in the first milliseconds land before or while the child creates the log
    // directory, FORMAT and the first segment; recovery must treat that as "nothing
    // promised yet", never as an unopenable log.
    let dir = tempfile::tempdir().unwrap();
    let output = walab(&["crash-test", "--wal", &url(dir.path()), "--kills", "8", "--writers", "2", "--kill-after-ms-max", "6"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains(", lost 0,"), "{}", stdout(&output));
}

#[test]
fn bench_against_raw_alternates_turns_and_reports_both_sides() {
    let dir = tempfile::tempdir().unwrap();
    let output = walab(&[
        "bench",
        "--wal",
        &url(&dir.path().join("log")),
        "--writers",
        "2",
        "--seconds",
        "0.6",
        "--against-raw-ms",
        "100",
        "--writer-kind",
        "threads",
        "--json",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    let run = &report["runs"][0];
    assert_eq!(run["writer_kind"], "threads");
    let raw = &run["raw"];
    assert_eq!(raw["turn_ms"], 100);
    let raw_rate = raw["ops_per_s"].as_f64().unwrap();
    assert!(raw_rate > 0.0, "raw turns ran syncs");
    assert!(run["acked_per_s"].as_f64().unwrap() > 0.0, "WAL turns acknowledged appends");
    // The WAL's seconds are its own turns only: about half of the run, not all of it.
    assert!(run["seconds"].as_f64().unwrap() < 0.6, "{}", run["seconds"]);
    let ratio = raw["wal_syncs_over_raw_syncs"].as_f64().unwrap();
    assert!((ratio - run["syncs_per_s"].as_f64().unwrap() / raw_rate).abs() < 1e-6 * ratio.max(1.0));
    // The raw test file is gone afterwards.
    let leftovers: Vec<_> = std::fs::read_dir(dir.path().join("log"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(".walab-raw"))
        .collect();
    assert!(leftovers.is_empty());
    // Only a file WAL has a directory to sync raw writes in.
    let refused = walab(&["bench", "--wal", "s3://bucket/p", "--against-raw-ms", "100", "--seconds", "0.1"]);
    assert_one_line_error(&refused, 2, "--against-raw-ms");
}

fn listing(dir: &Path) -> Vec<(String, u64)> {
    let mut names: Vec<(String, u64)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.metadata().unwrap().len()))
        .collect();
    names.sort();
    names
}

#[test]
fn a_log_keeps_its_segment_size_and_dump_changes_nothing() {
    // Written with 4 MiB segments, dumped without the flag: the log's recorded size is
    // used, every record is shown, and no 16 MiB spare (or anything else) appears.
    let dir = tempfile::tempdir().unwrap();
    let wal = url(dir.path());
    let load = walab(&["load", "--wal", &wal, "--writers", "4", "--records", "200", "--segment-bytes", "4194304"]);
    assert!(load.status.success(), "{}", stderr(&load));
    let acked = stdout(&load).lines().count();
    assert_eq!(acked, 200);
    let node = dir.path().join("default").join("0");
    let before = listing(&node);
    assert!(before.iter().filter(|(name, _)| name.starts_with("wal-")).all(|(_, len)| *len == 4194304), "{before:?}");
    let dump = walab(&["dump", "--wal", &wal]);
    assert!(dump.status.success(), "{}", stderr(&dump));
    assert_eq!(stdout(&dump).lines().count(), acked);
    assert_eq!(listing(&node), before, "dump created, removed or resized nothing");
    // Another size given on purpose is refused by name; leaving it out adopts the log's.
    assert_one_line_error(
        &walab(&["load", "--wal", &wal, "--records", "1", "--segment-bytes", "8192"]),
        2,
        "the log's segments are 4194304 bytes; pass --segment-bytes 4194304",
    );
    let more = walab(&["load", "--wal", &wal, "--records", "10"]);
    assert!(more.status.success(), "{}", stderr(&more));
    assert!(listing(&node).iter().filter(|(name, _)| name.starts_with("wal-")).all(|(_, len)| *len == 4194304));
    assert_eq!(stdout(&walab(&["dump", "--wal", &wal])).lines().count(), acked + 10);
}

#[test]
fn dump_reports_a_torn_tail_without_cutting_it() {
    let dir = tempfile::tempdir().unwrap();
    let wal = url(dir.path());
    let load = walab(&["load", "--wal", &wal, "--records", "5", "--segment-bytes", "8192"]);
    assert!(load.status.success(), "{}", stderr(&load));
    let segment = dir.path().join("default/0/wal-00000000000000000001.log");
    let mut bytes = std::fs::read(&segment).unwrap();
    let end = bytes.iter().rposition(|&b| b != 0).unwrap() + 1;
    bytes[end..end + 9].copy_from_slice(&[0xde, 0xad, 0xbe, 0xef, 40, 0, 1, 9, 9]);
    std::fs::write(&segment, &bytes).unwrap();
    let dump = walab(&["dump", "--wal", &wal]);
    assert!(dump.status.success(), "{}", stderr(&dump));
    assert_eq!(stdout(&dump).lines().count(), 5);
    assert!(stderr(&dump).contains("left as they are"), "{}", stderr(&dump));
    assert_eq!(std::fs::read(&segment).unwrap(), bytes, "the torn tail is still there for the next writer");
}
