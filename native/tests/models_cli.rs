//! The `budget`, `sim redo` and `sim quorum` commands, run as a user runs them.

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

#[test]
fn budget_on_the_pages_workload() {
    let output = walab(&["budget", "--rate", "100000", "--record-bytes", "100", "--sync-ms", "1", "--lsm-mb-s", "200", "--volume", "gp3"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("1,000 syncs/s"), "{text}");
    assert!(text.contains("12.3 MB/s to 16.4 MB/s"), "{text}");
    assert!(text.contains("1,763 IOPS (within the included 3,000 IOPS)"), "{text}");
    assert!(text.contains("over the included 125 MiB/s: provision 207 MiB/s"), "{text}");
}

#[test]
fn budget_json_carries_the_figures() {
    let output = walab(&["budget", "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    assert_eq!(json["syncs_per_s"], 1000);
    assert_eq!(json["log_iops"], 1000);
    assert_eq!(json["lsm_iops"], 763);
    assert_eq!(json["shared"]["iops"], 1763);
    assert_eq!(json["shared"]["throughput_fit"]["fits"], "provision");
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    for args in [
        &["budget", "--sync-ms", "abc"][..],
        &["budget", "--rate", "0"],
        &["budget", "--bogus"],
        &["budget", "--volume", "floppy"],
        &["budget", "--rate", "18446744073709551615"],
        &["budget", "--record-bytes", "18446744073709551615"],
        &["budget", "--rate", "10000000", "--sync-ms", "1000"],
    ] {
        let output = walab(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let err = stderr(&output);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("walab: "), "{err}");
    }
}
