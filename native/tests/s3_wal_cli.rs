//! The `walab` binary against a real S3-compatible server (walab's test server on 127.0.0.1, started
//! by each test): load, dump, reset, bench, crash-test with kills, and a takeover race
//! between two `walab load` processes.

mod common;

use walab::wal::s3::local_server;

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use local_server::{LocalS3, BUCKET};

fn command(server: &LocalS3, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_walab"));
    command.args(args).args(["--endpoint", &server.endpoint()]);
    for (name, value) in server.env() {
        command.env(name, value);
    }
    command
}

fn walab(server: &LocalS3, args: &[&str]) -> Output {
    command(server, args).output().expect("walab runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

fn acks(text: &str) -> Vec<String> {
    text.lines().filter_map(|line| line.strip_prefix("ack ")).map(str::to_string).collect()
}

fn dumped_keys(server: &LocalS3, wal: &str) -> Vec<String> {
    common::keys_of_json_dump(&walab(server, &["dump", "--wal", wal, "--json"]))
}

#[test]
fn load_dump_and_reset_on_a_real_server() {
    let server = LocalS3::start();
    let wal = format!("s3://{BUCKET}/cli");
    let load = walab(&server, &["load", "--wal", &wal, "--writers", "8", "--records", "200"]);
    assert!(load.status.success(), "{}", stderr(&load));
    let acked = acks(&stdout(&load));
    assert_eq!(acked.len(), 200);
    let keys = dumped_keys(&server, &wal);
    assert_eq!(keys.len(), 200);
    let keys: HashSet<String> = keys.into_iter().collect();
    assert!(acked.iter().all(|key| keys.contains(key)));
    // The objects sit under <path>/<cluster>/<node>/<epoch>/wal/.
    assert!(server.bucket_dir().join("cli/default/0/registration").exists());
    assert!(server.bucket_dir().join("cli/default/0/00000000000000000001/wal").is_dir());

    let reset = walab(&server, &["reset", "--wal", &wal]);
    assert!(reset.status.success(), "{}", stderr(&reset));
    assert!(stdout(&reset).contains("next seq 201"), "{}", stdout(&reset));
    assert!(dumped_keys(&server, &wal).is_empty());

    // A node nobody wrote is refused by dump with one line.
    let absent = walab(&server, &["dump", "--wal", &wal, "--node", "9"]);
    assert_eq!(absent.status.code(), Some(2));
    assert!(stderr(&absent).contains("no log here"), "{}", stderr(&absent));
}

#[test]
fn bench_reports_puts_and_bulks() {
    let server = LocalS3::start();
    let wal = format!("s3://{BUCKET}/bench");
    let bench = walab(&server, &["bench", "--wal", &wal, "--writers", "1,16", "--seconds", "0.5", "--json"]);
    assert!(bench.status.success(), "{}", stderr(&bench));
    let report: serde_json::Value = serde_json::from_str(stdout(&bench).trim()).unwrap();
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for run in runs {
        assert!(run["acked"].as_u64().unwrap() > 0, "{run}");
    }
    // 16 writers share PUTs: more than one record per bulk on average.
    assert!(runs[1]["batch_mean"].as_f64().unwrap() > 1.0, "{}", runs[1]);
}

#[test]
fn crash_test_with_kills_loses_nothing() {
    crash_test_with_kills_loses_nothing_on(&format!("s3://{BUCKET}/crash"));
}

/// The same with `fence=lease`: each recovery after a kill waits out the killed owner's
/// lease (1 s here) before it lists.
#[test]
fn crash_test_with_kills_loses_nothing_with_a_lease() {
    crash_test_with_kills_loses_nothing_on(&format!("s3://{BUCKET}/crash?fence=lease&lease=1s&skew=100ms"));
}

fn crash_test_with_kills_loses_nothing_on(wal: &str) {
    let server = LocalS3::start();
    let wal = wal.to_string();
    let output = walab(
        &server,
        &["crash-test", "--wal", &wal, "--kills", "6", "--writers", "8", "--kill-after-ms-max", "2000", "--json"],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(report["crashes"], 6);
    assert_eq!(report["lost"], 0);
    assert!(report["acks_checked"].as_u64().unwrap() > 0, "{report}");
}

/// Reads `ack` lines of a running child until it ends.
fn collect_acks(child: &mut Child) -> std::thread::JoinHandle<Vec<String>> {
    let out = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        BufReader::new(out)
            .lines()
            .map_while(Result::ok)
            .filter_map(|line| line.strip_prefix("ack ").map(str::to_string))
            .collect()
    })
}

#[test]
fn a_takeover_race_between_two_processes_loses_nothing_either_acknowledged() {
    a_takeover_race_between_two_processes_loses_nothing_either_acknowledged_on(&format!("s3://{BUCKET}/race"));
}

/// The same with both processes on a lease: the second claims, waits out the first's
/// lease, recovers; the first is fenced at its next renewal.
#[test]
fn a_takeover_race_between_two_processes_loses_nothing_either_acknowledged_with_a_lease() {
    a_takeover_race_between_two_processes_loses_nothing_either_acknowledged_on(&format!(
        "s3://{BUCKET}/race?fence=lease&lease=1s&skew=100ms"
    ));
}

fn a_takeover_race_between_two_processes_loses_nothing_either_acknowledged_on(wal: &str) {
    let server = LocalS3::start();
    let wal = wal.to_string();
    let mut first = command(&server, &["load", "--wal", &wal, "--writers", "16", "--seconds", "60", "--run-id", "first"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let first_acks = collect_acks(&mut first);
    std::thread::sleep(Duration::from_millis(700));
    // The second process takes the node over while the first is writing.
    let second =
        walab(&server, &["load", "--wal", &wal, "--writers", "16", "--records", "400", "--run-id", "second"]);
    assert!(second.status.success(), "{}", stderr(&second));
    let second_acked = acks(&stdout(&second));
    assert_eq!(second_acked.len(), 400);
    // The first learns at its next upload (or renewal) that it lost the node, and stops.
    let started = Instant::now();
    let status = loop {
        if let Some(status) = first.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > Duration::from_secs(30) {
            let _ = first.kill();
            let _ = first.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let first_acked = first_acks.join().unwrap();
    let mut first_err = String::new();
    std::io::Read::read_to_string(&mut first.stderr.take().unwrap(), &mut first_err).unwrap();
    assert_eq!(status.and_then(|s| s.code()), Some(1), "the first writer was not fenced: {first_err}");
    assert!(first_err.contains("fenced"), "{first_err}");
    assert!(!first_acked.is_empty());
    let keys: HashSet<String> = dumped_keys(&server, &wal).into_iter().collect();
    for key in first_acked.iter().chain(&second_acked) {
        assert!(keys.contains(key), "acknowledged {key} is missing after the race");
    }
}
