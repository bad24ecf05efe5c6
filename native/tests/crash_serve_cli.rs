//! `walab crash-test --serve` end to end: the built binary kills and restarts its own
//! `walab serve` children on a file WAL (and on the S3 test server and Postgres), drives
//! them with the Durable Streams protocol's idempotent producers, and catches a server
//! that breaks a promise.

use std::process::{Command, Output};

fn walab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_walab")).args(args).output().expect("walab runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).to_string()
}

#[test]
fn killing_the_server_breaks_no_promise() {
    let dir = tempfile::tempdir().unwrap();
    let wal = format!("file://{}", dir.path().display());
    let output = walab(&[
        "crash-test", "--serve", "--wal", &wal, "--kills", "4", "--writers", "6", "--streams", "3", "--kill-after-ms-max", "400",
        "--seed", "3", "--json",
    ]);
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "stdout: {stdout}\nstderr: {stderr}");
    // One line per round on stderr (stdout holds the JSON).
    let rounds: Vec<&str> = stderr.lines().filter(|line| line.starts_with("round ")).collect();
    assert_eq!(rounds.len(), 4, "{stderr}");
    assert!(rounds[3].starts_with("round 4/4: killed after "), "{stderr}");
    let report: serde_json::Value = serde_json::from_str(stdout.trim()).expect("a JSON report");
    assert_eq!(report["kills"], 4);
    assert_eq!(report["broken"], serde_json::Value::Null);
    let acked = report["acked"].as_u64().unwrap();
    assert!(acked > 0, "{report}");
    // Every round reads back everything acknowledged so far, and from offsets it was given.
    assert!(report["checked"].as_u64().unwrap() >= report["acked_messages"].as_u64().unwrap(), "{report}");
    assert!(report["offsets_read"].as_u64().unwrap() > 0, "{report}");
    // Each round retries every producer's last seq: a duplicate each time.
    assert!(report["duplicates"].as_u64().unwrap() >= 6, "{report}");
    // The uploads ran between the kills.
    assert!(report["objects_uploaded"].as_u64().unwrap() > 0, "{report}");
    assert!(dir.path().join("default/0.serve/meta").is_dir(), "the server's metadata log sits beside the WAL");
}

#[test]
fn killing_the_server_under_batch_appends_breaks_no_promise() {
    let dir = tempfile::tempdir().unwrap();
    let wal = format!("file://{}", dir.path().display());
    let output = walab(&[
        "crash-test", "--serve", "--wal", &wal, "--kills", "3", "--writers", "4", "--streams", "2", "--batch", "100",
        "--kill-after-ms-max", "200", "--json",
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let report: serde_json::Value = serde_json::from_str(text(&output.stdout).trim()).expect("a JSON report");
    assert_eq!((report["kills"].as_u64(), report["broken"].is_null()), (Some(3), true), "{report}");
    // Requests of 100 messages, each acknowledged whole.
    assert_eq!(report["acked_messages"].as_u64().unwrap(), report["acked"].as_u64().unwrap() * 100, "{report}");
    assert!(report["acked"].as_u64().unwrap() > 0, "{report}");
    assert!(report["duplicates"].as_u64().unwrap() > 0, "{report}");
}

#[test]
fn a_server_that_forgets_the_wal_past_its_uploads_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let wal = format!("file://{}", dir.path().display());
    let output = walab(&[
        "crash-test", "--serve", "--wal", &wal, "--kills", "5", "--writers", "4", "--streams", "2", "--kill-after-ms-max", "300",
        "--serve-fault", "skip-wal-replay",
    ]);
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(1), "stdout: {stdout}\nstderr: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    let line = stderr.trim();
    assert!(line.starts_with("walab: crash-test --serve: round "), "{line}");
    // The broken promise by name: the stream, the producer and its seq.
    for needle in ["stream ", "producer ", " seq "] {
        assert!(line.contains(needle), "{needle:?} in {line}");
    }
    assert!(!line.contains("panicked"), "{line}");
    // The summary still says how far it got.
    assert!(stdout.lines().last().unwrap_or("").starts_with("serve kills "), "{stdout}");
}

#[test]
fn bad_serve_flags_are_refused_by_name() {
    let output = walab(&["crash-test", "--serve", "--streams", "9", "--writers", "2", "--kills", "1"]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
    assert!(text(&output.stderr).contains("--streams 9"), "{}", text(&output.stderr));
    let output = walab(&["crash-test", "--serve", "--batch", "0", "--kills", "1"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("--batch 0: between 1 and 1000"), "{}", text(&output.stderr));
    let output = walab(&["crash-test", "--serve", "--power-loss"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("--serve: not with --power-loss"), "{}", text(&output.stderr));
}

#[test]
fn killing_the_server_on_an_s3_wal_breaks_no_promise() {
    let s3 = walab::wal::s3::local_server::LocalS3::start();
    let bucket = walab::wal::s3::local_server::BUCKET;
    let mut command = Command::new(env!("CARGO_BIN_EXE_walab"));
    command.args(["crash-test", "--serve", "--wal", &format!("s3://{bucket}/crash-serve"), "--endpoint", &s3.endpoint()]);
    // Everything on the bucket: the metadata log as the WAL's node 0_meta, the objects.
    command.args(["--meta", &format!("s3://{bucket}/crash-serve"), "--objects", &format!("s3://{bucket}/crash-serve-objects")]);
    command.args(["--kills", "3", "--kill-after-ms-max", "400", "--json"]);
    for (name, value) in s3.env() {
        command.env(name, value);
    }
    let output = command.output().expect("walab runs");
    assert!(output.status.success(), "{}", text(&output.stderr));
    let report: serde_json::Value = serde_json::from_str(text(&output.stdout).trim()).expect("a JSON report");
    assert_eq!((report["kills"].as_u64(), report["broken"].is_null()), (Some(3), true), "{report}");
    assert!(report["acked"].as_u64().unwrap() > 0 && report["duplicates"].as_u64().unwrap() > 0, "{report}");
}

#[test]
fn killing_the_server_on_a_postgres_wal_breaks_no_promise() {
    let micros = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_micros();
    let cluster = format!("crashserve{micros}");
    let output = walab(&[
        "crash-test", "--serve", "--wal", "postgres://postgres@127.0.0.1:5432/test", "--cluster", &cluster, "--kills", "3",
        "--kill-after-ms-max", "400", "--json",
        // The metadata log in Postgres too (the objects in a temporary directory).
        "--meta", "postgres://postgres@127.0.0.1:5432/test",
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let report: serde_json::Value = serde_json::from_str(text(&output.stdout).trim()).expect("a JSON report");
    assert_eq!((report["kills"].as_u64(), report["broken"].is_null()), (Some(3), true), "{report}");
    assert!(report["acked"].as_u64().unwrap() > 0 && report["duplicates"].as_u64().unwrap() > 0, "{report}");
}
