//! `walab sim redo` and `walab sim quorum`, run as a user runs them, on the page's scenario.

use std::process::{Command, Output};

fn walab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_walab")).args(args).output().expect("the walab binary runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("utf-8 output")
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).expect("utf-8 output")
}

const P1_WHOLE: &str = "P1 = pageLSN 7: order:7 pen, order:9 book  [as before the power cut]";
const P2_WHOLE: &str = "P2 = pageLSN 8: user:1 alicia, user:3 carol, user:4 dave  [as before the power cut]";

#[test]
fn redo_with_full_page_images_and_with_doublewrite_recovers_both_pages() {
    for protection in ["fpi", "doublewrite"] {
        let output = walab(&["sim", "redo", "--scenario", "tiny-store", "--protection", protection]);
        assert!(output.status.success(), "{}", stderr(&output));
        let text = stdout(&output);
        assert!(text.contains("TORN: 1 of 2 sectors"), "{text}");
        assert!(text.contains("P1: TORN: checksum fails (its header claims pageLSN 7)"), "{text}");
        assert!(text.contains(P1_WHOLE), "{protection}: {text}");
        assert!(text.contains(P2_WHOLE), "{protection}: {text}");
    }
}

#[test]
fn redo_with_neither_loses_order_9_book() {
    let output = walab(&["sim", "redo", "--protection", "none"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("P1 = pageLSN 7: order:7 pen  [LOST: before the cut it held order:7 pen, order:9 book (pageLSN 7)]"), "{text}");
    assert!(text.contains(P2_WHOLE), "{text}");
}

#[test]
fn redo_json_and_sqlite_wal_and_8_kib_pages() {
    let output = walab(&["sim", "redo", "--protection", "doublewrite", "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    assert_eq!(json["recovered_everything"], true);
    let steps: Vec<&str> = json["recovery"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|event| event["event"] == "redo")
        .map(|event| event["action"].as_str().unwrap())
        .collect();
    assert_eq!(steps, ["skip", "skip", "skip", "apply"]);
    for args in [&["sim", "redo", "--engine", "sqlite-wal"][..], &["sim", "redo", "--page-bytes", "8192", "--sector-bytes", "512"]] {
        let output = walab(args);
        assert!(output.status.success(), "{}", stderr(&output));
        let text = stdout(&output);
        assert!(text.contains(P1_WHOLE) && text.contains(P2_WHOLE), "{args:?}: {text}");
    }
}

#[test]
fn quorum_branch_r_on_the_pages_numbers() {
    let trace_path = std::env::temp_dir().join(format!("walab-quorum-trace-{}.json", std::process::id()));
    let trace_arg = trace_path.to_str().unwrap();
    let output = walab(&["sim", "quorum", "--scenario", "tiny-store", "--fork-after-write", "20", "--w", "2", "--replica-ms", "1.0,1.4,6.0", "--trace", trace_arg]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("acknowledged at 11.0 ms on the main timeline"), "{text}");
    assert!(text.contains("each batch commits 1.4 ms after it starts, waiting for A and B"), "{text}");
    assert!(text.contains("write 23's budget: 1.3 ms waiting for the batch in flight + 1.4 ms for its own batch = 2.7 ms"), "{text}");
    assert!(text.contains("claims 9.7 ms"), "{text}");
    let trace: serde_json::Value = serde_json::from_slice(&std::fs::read(&trace_path).expect("trace written")).expect("trace json");
    std::fs::remove_file(&trace_path).ok();
    assert_eq!(trace["scenario"], "tiny-store-branch-r");
    assert!(trace["events"].as_array().unwrap().iter().any(|event| event["event"] == "batch_formed" && event["batch"] == 14 && event["at"] == 13_800_000));
}

#[test]
fn quorum_w3_and_postgres() {
    let w3 = stdout(&walab(&["sim", "quorum", "--w", "3"]));
    assert!(w3.contains("each batch commits 6.0 ms after it starts"), "{w3}");
    let postgres = stdout(&walab(&["sim", "quorum", "--mode", "postgres"]));
    assert!(postgres.contains("each batch commits 2.4 ms after it starts"), "{postgres}");
    let json: serde_json::Value = serde_json::from_slice(&walab(&["sim", "quorum", "--json"]).stdout).expect("json");
    assert_eq!(json["batch_latency"], 1_400_000);
    assert_eq!(json["budget"]["naive_sum"], 9_700_000);
    let shared: Vec<bool> = json["survival"].as_array().unwrap().iter().map(|row| row["survives"][3][1].as_bool().unwrap()).collect();
    assert!(shared.contains(&false) && shared.contains(&true));
}

#[test]
fn bad_sim_input_is_one_line_and_exit_2() {
    for args in [
        &["sim", "quorum", "--replica-ms", "1.0,x"][..],
        &["sim", "quorum", "--w", "4"],
        &["sim", "quorum", "--w", "0"],
        &["sim", "quorum", "--fork-after-write", "24"],
        &["sim", "quorum", "--inflight", "0"],
        &["sim", "quorum", "--inflight", "18446744073709551615"],
        &["sim", "quorum", "--replica-ms", "1,9000000000000,1"],
        &["sim", "quorum", "--trace", "/nonexistent-dir/x.json"],
        &["sim", "redo", "--cut-after-write", "9"],
        &["sim", "redo", "--protection", "maybe"],
        &["sim", "redo", "--page-bytes", "100", "--sector-bytes", "32"],
    ] {
        let output = walab(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", stderr(&output));
        let err = stderr(&output);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("walab: "), "{err}");
    }
}
