//! `walab sim` run as a user runs it: the built binary, its JSON and its exit codes.

use std::process::{Command, Output};

use serde_json::Value;

fn walab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_walab")).args(args).output().expect("the walab binary runs")
}

fn json(output: &Output) -> Value {
    assert!(output.status.success(), "stderr: {}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("stdout is one JSON document")
}

fn ids(value: &Value) -> Vec<u64> {
    value.as_array().unwrap().iter().map(|id| id.as_u64().unwrap()).collect()
}

fn tiny_arrivals() -> String {
    walab_core::tiny_store::WRITES.iter().map(|write| format!("{}", write.arrival.as_millis_f64())).collect::<Vec<_>>().join(",")
}

#[test]
fn sim_commit_group_prints_the_14_batches_of_part_5() {
    let arrivals = tiny_arrivals();
    let run = json(&walab(&["sim", "commit", "--policy", "group", "--sync-ms", "1.0", "--arrivals-ms", &arrivals, "--json"]));
    let batches = run["batches"].as_array().unwrap();
    assert_eq!(batches.len(), 14);
    assert_eq!(ids(&batches[10]["writes"]), [18, 19, 20]);
    assert_eq!(batches[13]["start_ms"], 13.0);
    assert_eq!(batches[13]["end_ms"], 14.0);
    assert_eq!(run["summary"]["syncs"], 14);
    assert_eq!(run["summary"]["wait_ms_max"], 1.9);
    assert_eq!(run["summary"]["wait_ms_min"], 1.0);
    let writes = run["writes"].as_array().unwrap();
    assert_eq!(writes[3]["id"], 4);
    assert_eq!(writes[3]["ack_ms"], 3.0);
    assert!(writes[3].get("durable_ms").is_none(), "sync-first policies acknowledge at durability");
}

#[test]
fn sim_commit_no_sync_gives_each_write_a_durable_ms() {
    let run = json(&walab(&["sim", "commit", "--policy", "no-sync", "--sync-ms", "1", "--arrivals-ms", "0,0.4", "--json"]));
    let writes = run["writes"].as_array().unwrap();
    assert_eq!(writes[1]["ack_ms"], 0.4);
    assert!(writes[1]["durable_ms"].is_null(), "never synced");
    let periodic = json(&walab(&[
        "sim", "commit", "--policy", "periodic", "--interval-ms", "5", "--sync-ms", "1", "--arrivals-ms", "0,0.4", "--json",
    ]));
    assert_eq!(periodic["writes"][1]["durable_ms"], 6.0);
}

#[test]
fn sim_commit_steady_load_and_window() {
    let group = json(&walab(&["sim", "commit", "--sync-ms", "1", "--rate", "100000", "--count", "20000", "--json"]));
    assert_eq!(group["summary"]["syncs_per_s"].as_f64().unwrap().round(), 1000.0);
    assert_eq!(group["summary"]["batch_mean"].as_f64().unwrap().round(), 100.0);
    let poisson = json(&walab(&[
        "sim", "commit", "--sync-ms", "1", "--rate", "100000", "--count", "50000", "--poisson", "--seed", "5", "--json",
    ]));
    assert_eq!((poisson["summary"]["wait_ms_mean"].as_f64().unwrap() * 100.0).round(), 150.0);
    let window = json(&walab(&[
        "sim", "commit", "--policy", "window", "--window-ms", "2", "--window-bytes", "65536", "--sync-ms", "1", "--rate",
        "100000", "--count", "100000", "--json",
    ]));
    assert_eq!(window["summary"]["syncs_per_s"].as_f64().unwrap().round(), 500.0);
}

#[test]
fn sim_power_cut_at_13_5_ms_in_four_modes() {
    for (policy, acknowledged, lost) in
        [("group", 22, vec![]), ("per-write", 13, vec![]), ("no-sync", 24, vec![21, 22, 23, 24]), ("periodic", 24, vec![21, 22, 23, 24])]
    {
        let run = json(&walab(&["sim", "power-cut", "--scenario", "tiny-store", "--at-ms", "13.5", "--policy", policy, "--json"]));
        assert_eq!(ids(&run["acknowledged"]).len(), acknowledged, "{policy}");
        assert_eq!(ids(&run["lost_acknowledged"]), lost, "{policy}");
        assert!(run["scan_stop"]["reason"].is_string());
    }
}

#[test]
fn sim_power_cut_all_states_lists_the_8_states_of_branch_p() {
    let run = json(&walab(&["sim", "power-cut", "--at-ms", "13.5", "--policy", "group", "--all-states", "--json"]));
    let states = run["states"].as_array().unwrap();
    assert_eq!(states.len(), 8);
    let case_1 = states
        .iter()
        .find(|state| state["kept_units"].as_array().unwrap().iter().map(|unit| unit["unit"].as_u64().unwrap()).collect::<Vec<_>>() == [1, 2])
        .unwrap();
    assert_eq!(case_1["scan_stop"]["reason"], "checksum");
    assert_eq!(case_1["scan_stop"]["segment"], "wal-6");
    assert_eq!(case_1["scan_stop"]["offset"], 82);
    assert!(states.iter().all(|state| state["lost_acknowledged"].as_array().unwrap().is_empty()));
}

#[test]
fn sim_power_cut_with_512_byte_units_lists_2_states_and_tears_nothing() {
    let run = json(&walab(&["sim", "power-cut", "--at-ms", "13.5", "--unit-bytes", "512", "--all-states", "--json"]));
    let states = run["states"].as_array().unwrap();
    assert_eq!(states.len(), 2, "B14's sync covers wal-6's one unit");
    let mut stops: Vec<u64> = states
        .iter()
        .map(|state| {
            assert_eq!(state["scan_stop"]["reason"], "zero");
            state["scan_stop"]["offset"].as_u64().unwrap()
        })
        .collect();
    stops.sort_unstable();
    assert_eq!(stops, [55, 109], "all of B14 or none of it");
    let refused = walab(&["sim", "power-cut", "--at-ms", "13.5", "--unit-bytes", "0"]);
    assert!(!refused.status.success());
}

#[test]
fn sim_power_cut_branch_e1_wrong_path_loses_three() {
    let run = json(&walab(&[
        "sim", "power-cut", "--at-ms", "12.5", "--log-sync-fails", "11", "--on-sync-error", "retry", "--json",
    ]));
    assert_eq!(ids(&run["lost_acknowledged"]), [18, 19, 20]);
    let right = json(&walab(&["sim", "power-cut", "--at-ms", "12.5", "--log-sync-fails", "11", "--json"]));
    assert!(ids(&right["lost_acknowledged"]).is_empty());
}

#[test]
fn trace_files_are_json_the_browser_can_open() {
    let dir = std::env::temp_dir().join(format!("walab-sim-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("trace.json");
    let path_text = path.to_str().unwrap();
    let output = walab(&["sim", "power-cut", "--at-ms", "13.5", "--trace", path_text]);
    assert!(output.status.success());
    let trace: walab_core::trace::Trace = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(trace.scenario, "tiny-store");
    assert!(matches!(trace.events.last().unwrap().event, walab_core::trace::Event::Recovery { .. }));
    let output = walab(&["sim", "commit", "--sync-ms", "1", "--arrivals-ms", "0,0.5", "--trace", path_text]);
    assert!(output.status.success());
    let trace: walab_core::trace::Trace = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(trace.writes.len(), 2);
    assert_eq!(trace.state_at(walab_core::time::Nanos(2_000_000)).acked, 2);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn sim_commit_draws_latencies_from_a_measured_distribution() {
    let dir = std::env::temp_dir().join(format!("walab-sim-latency-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("latency.json");
    // Percentile i = 2 ms + i us, as `walab fsync-test --export-latency` would write it.
    let quantiles: Vec<u64> = (0..101).map(|i| 2_000_000 + i * 1_000).collect();
    let export = serde_json::json!({
        "schema": "walab-latency/1", "source": "walab fsync-test", "method": "overwrite-fdatasync",
        "block_bytes": 4096, "samples": 1000, "mean_ns": 2_050_000, "write_cache": null, "quantiles_ns": quantiles,
    });
    std::fs::write(&path, export.to_string()).unwrap();
    let run = json(&walab(&["sim", "commit", "--latency-file", path.to_str().unwrap(), "--arrivals-ms", "0,10,20", "--json"]));
    for write in run["writes"].as_array().unwrap() {
        let wait = write["ack_ms"].as_f64().unwrap() - write["arrival_ms"].as_f64().unwrap();
        assert!((2.0..=2.1 + 1e-9).contains(&wait), "{wait}");
    }
    std::fs::write(&path, "{}").unwrap();
    let output = walab(&["sim", "commit", "--latency-file", path.to_str().unwrap(), "--arrivals-ms", "0"]);
    assert_eq!(output.status.code(), Some(2));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_arguments_get_one_line_and_exit_2() {
    let cases: [(&[&str], &str); 8] = [
        (&["sim", "commit", "--sync-ms", "1", "--arrivals-ms", "0,2,1"], "--arrivals-ms: arrival 3"),
        (&["sim", "commit", "--sync-ms", "1", "--arrivals-ms", "-1"], "--arrivals-ms: arrival 1 ('-1')"),
        (&["sim", "commit", "--sync-ms", "1", "--rate", "1", "--count", "18446744073709551615"], "--count: at most"),
        (&["sim", "commit", "--sync-ms", "0", "--arrivals-ms", "0"], "--sync-ms: must be above zero"),
        (&["sim", "commit", "--policy", "fast", "--sync-ms", "1", "--arrivals-ms", "0"], "--policy: unknown policy 'fast'"),
        (&["sim", "commit", "--sync-ms", "1"], "arrivals: give exactly one of"),
        (&["sim", "power-cut", "--at-ms", "soon"], "--at-ms: 'soon'"),
        (&["sim", "commit", "--sync-ms", "1", "--nonsense"], "unexpected argument '--nonsense'"),
    ];
    for (args, expected) in cases {
        let output = walab(args);
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: one line: {stderr}");
        assert!(stderr.starts_with("walab: "), "{stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(output.stdout.is_empty());
    }
}
