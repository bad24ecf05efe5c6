//! `walab sim remote`: the built binary's JSON against the figures the core's goldens
//! check, and one-line errors for bad flags.

use std::process::{Command, Output};

use serde_json::Value;

fn walab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_walab")).args(args).output().expect("the walab binary runs")
}

fn json(args: &[&str]) -> Value {
    let output = walab(args);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("stdout is JSON")
}

fn batch(run: &Value, n: u64) -> &Value {
    run["batches"].as_array().unwrap().iter().find(|b| b["batch"] == n).unwrap()
}

#[test]
fn a_slow_third_put_holds_back_batches_four_and_five() {
    let run = json(&["sim", "remote", "--backend", "s3", "--rate", "20000", "--count", "2000", "--put-ms", "25", "--slow-put", "3:200", "--json"]);
    assert_eq!(run["backend"], "s3");
    let third = batch(&run, 3);
    assert_eq!(third["stored_ms"], 203.225);
    // Reported once the fence read after the PUT (its own 25 ms) answers.
    assert_eq!(third["checked_ms"], 228.225);
    for n in [4, 5] {
        let later = batch(&run, n);
        assert!(later["stored_ms"].as_f64().unwrap() < 203.225);
        assert_eq!(later["acked_ms"], 228.225);
    }
    assert_eq!(run["records_acked"], 2000);
    assert_eq!(run["records"].as_array().unwrap().len(), 2000);
    assert_eq!(run["takeover"], Value::Null);
    let per_record = run["puts_per_record"].as_f64().unwrap();
    assert_eq!(per_record, run["puts"].as_f64().unwrap() / 2000.0);
    assert!((run["put_bill_per_million_usd"].as_f64().unwrap() - per_record * 5.0).abs() < 1e-9);
}

#[test]
fn a_takeover_reports_the_stragglers_it_ignored() {
    // PUT 8, the last sent before 60 ms, is slower than B's claim, read-back and LIST.
    let run = json(&["sim", "remote", "--backend", "s3", "--rate", "20000", "--poisson", "--count", "4000", "--put-ms", "25", "--takeover-at-ms", "60", "--slow-put", "8:300", "--json"]);
    let takeover = &run["takeover"];
    assert_eq!((takeover["claimed_ms"].as_f64(), takeover["listed_ms"].as_f64()), (Some(85.0), Some(135.0)));
    assert_eq!((takeover["old_epoch"].as_u64(), takeover["new_epoch"].as_u64()), (Some(5), Some(6)));
    assert_eq!(takeover["acked_by_old"], run["records_acked"]);
    // B recovers everything stored before its LIST answered: every record A acknowledged,
    // and those whose fence read found epoch 6 (stored, never acknowledged).
    assert!(takeover["recovered_by_new"].as_u64() >= takeover["acked_by_old"].as_u64());
    assert!(takeover["recovered_by_new"].as_u64() > takeover["acked_by_old"].as_u64(), "A's fenced batches were listed before B's start");
    assert!(takeover["stragglers_ignored"].as_u64().unwrap() >= 1);
    let never = run["records"].as_array().unwrap().iter().filter(|r| r["acked_ms"].is_null()).count();
    assert!(never > 0, "records after the fence are never acknowledged (null)");
}

#[test]
fn a_postgres_takeover_claims_one_request_after_the_row_is_free_and_scans_in_another() {
    // The last insert A sent before 30 ms commits at 30.67721 ms; B's claim waited for it,
    // then took its 1 ms, and the scan of the ring 1 ms more.
    let run = json(&["sim", "remote", "--backend", "postgres", "--rate", "5000", "--poisson", "--count", "400", "--put-ms", "1", "--takeover-at-ms", "30", "--json"]);
    let takeover = &run["takeover"];
    assert_eq!((takeover["at_ms"].as_f64(), takeover["claimed_ms"].as_f64(), takeover["listed_ms"].as_f64()), (Some(30.0), Some(31.67721), Some(32.67721)));
    let held = run["batches"].as_array().unwrap().iter().filter(|b| b["sent_ms"].as_f64().is_some_and(|sent| sent < 30.0));
    assert_eq!(held.filter_map(|b| b["stored_ms"].as_f64()).fold(0.0, f64::max), 30.67721);
    assert_eq!(takeover["recovered_by_new"], takeover["acked_by_old"]);
    // Nothing in flight at 45 ms: the claim is one request from the takeover.
    let idle = json(&["sim", "remote", "--backend", "postgres", "--rate", "5000", "--count", "20", "--put-ms", "1", "--takeover-at-ms", "45", "--json"]);
    assert_eq!((idle["takeover"]["claimed_ms"].as_f64(), idle["takeover"]["listed_ms"].as_f64()), (Some(46.0), Some(47.0)));
}

#[test]
fn the_upload_commits_every_acknowledged_record_once_and_a_crash_leaves_orphans_that_expire() {
    let run = json(&["sim", "remote", "--backend", "s3", "--rate", "20000", "--count", "600", "--put-ms", "25", "--upload", "--upload-crash-before-commit", "2", "--json"]);
    let upload = &run["upload"];
    assert_eq!(upload["read_twice"], 0);
    let ends: u64 = upload["commits"].as_array().unwrap().last().unwrap()["stream_ends"].as_array().unwrap().iter().map(|e| e.as_u64().unwrap()).sum();
    assert_eq!(Some(ends), run["records_acked"].as_u64());
    let attempts = upload["blocks"][1]["attempts"].as_array().unwrap();
    assert_eq!((attempts[0]["outcome"].as_str(), attempts[1]["outcome"].as_str()), (Some("crashed-before-commit"), Some("committed")));
    for object in upload["objects"].as_array().unwrap() {
        assert_ne!(object["committed_ms"].is_null(), object["expired_ms"].is_null(), "committed or expired: {object}");
    }
    assert!(run.get("upload").is_some());
    let without = json(&["sim", "remote", "--backend", "s3", "--rate", "20000", "--count", "600", "--put-ms", "25", "--json"]);
    assert!(without.get("upload").is_none());
}

#[test]
fn the_ring_waits_for_its_slot_while_the_upload_stalls() {
    let args = ["sim", "remote", "--backend", "postgres", "--writers", "8", "--count", "200", "--put-ms", "1", "--segments", "2", "--segment-bytes", "4096", "--stall-upload-ms", "0:500", "--json"];
    let run = json(&args);
    let first = run["batches"].as_array().unwrap().iter().find(|b| b["waited"] == "slot").unwrap();
    assert_eq!((first["generation"].as_u64(), first["slot"].as_u64(), first["first_offset"].as_u64()), (Some(2), Some(0), Some(8192)));
    assert_eq!(first["sent_ms"], 500.0);
    let dir = std::env::temp_dir().join(format!("walab-sim-remote-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("trace.json");
    let mut with_trace = args.to_vec();
    with_trace.extend(["--trace", trace.to_str().unwrap()]);
    json(&with_trace);
    let trace: Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    assert_eq!(trace["scenario"], "remote-postgres");
    assert!(trace["events"].as_array().unwrap().iter().any(|e| e["event"] == "sync_start"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_flags_get_one_line() {
    for (args, needle) in [
        (vec!["--backend", "gcs", "--rate", "10", "--count", "5"], "unknown backend"),
        (vec!["--backend", "s3", "--count", "5"], "exactly one of --writers and --rate"),
        (vec!["--backend", "s3", "--rate", "10", "--count", "5", "--slow-put", "x"], "--slow-put"),
        (vec!["--backend", "s3", "--rate", "10", "--count", "5", "--fail-put", "0"], "numbered from 1"),
        (vec!["--backend", "s3", "--rate", "10", "--count", "5", "--segments", "3"], "only to --backend postgres"),
        (vec!["--backend", "postgres", "--rate", "10", "--count", "5", "--segments", "1"], "at least 2"),
        (vec!["--backend", "s3", "--rate", "10", "--count", "5", "--profile", "tape"], "unknown profile"),
        (vec!["--backend", "s3", "--rate", "10", "--count", "5", "--upload-crash-before-commit", "2"], "only with --upload"),
        (vec!["--backend", "postgres", "--rate", "10", "--count", "5", "--upload"], "--backend s3 only"),
        (vec!["--backend", "s3", "--rate", "10", "--count", "5", "--upload", "--upload-crash-before-commit", "0"], "numbered from 1"),
    ] {
        let mut full = vec!["sim", "remote"];
        full.extend(args);
        let output = walab(&full);
        assert_eq!(output.status.code(), Some(2), "{full:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(needle), "{stderr}");
    }
}
