//! Every simulation the command line offers, run by the built binary over random
//! parameters drawn from the ranges its flags accept: `walab sim commit`, `power-cut`,
//! `redo`, `quorum`, `remote` (with the upload, faults and takeovers) and `walab budget`.
//!
//! A simulation may refuse a combination (a cut past the end of the run, a ring too
//! small for its batches), but only as a usage error or a finding: one line on stderr
//! and exit 1 or 2. It never panics (exit 101). The property is the command's exit, so
//! a failing case shrinks to the shortest command line that panics, printed in full.

use std::process::Command;

use proptest::prelude::*;

/// A decimal number of milliseconds, `whole.frac` with up to three decimals, in
/// `min_thousandths..max_thousandths` thousandths.
fn millis(min_thousandths: u64, max_thousandths: u64) -> impl Strategy<Value = String> {
    (min_thousandths..max_thousandths).prop_map(|thousandths| format!("{}.{:03}", thousandths / 1000, thousandths % 1000))
}

fn policy() -> impl Strategy<Value = &'static str> {
    prop_oneof![Just("group"), Just("per-write"), Just("window"), Just("no-sync"), Just("periodic")]
}

/// Flags that only some policies take, drawn for the policy at hand.
fn policy_flags(policy: &'static str) -> BoxedStrategy<Vec<String>> {
    match policy {
        "window" => prop::option::of(millis(1, 20_000))
            .prop_map(|window| window.map_or_else(Vec::new, |ms| vec!["--window-ms".into(), ms]))
            .boxed(),
        "periodic" => prop::option::of(millis(1, 2_000_000))
            .prop_map(|interval| interval.map_or_else(Vec::new, |ms| vec!["--interval-ms".into(), ms]))
            .boxed(),
        _ => Just(Vec::new()).boxed(),
    }
}

fn commit_args() -> impl Strategy<Value = Vec<String>> {
    let arrivals = prop_oneof![
        Just(vec!["--scenario".to_string(), "tiny-store".to_string()]),
        (1u64..200_000, 1u64..3_000, any::<bool>(), 0u64..1_000).prop_map(|(rate, count, poisson, seed)| {
            let mut args = vec!["--rate".into(), rate.to_string(), "--count".into(), count.to_string()];
            if poisson {
                args.extend(["--poisson".into(), "--seed".into(), seed.to_string()]);
            }
            args
        }),
        prop::collection::vec(0u64..50_000, 1..40).prop_map(|mut gaps| {
            gaps.sort_unstable();
            let instants: Vec<String> = gaps.iter().map(|micros| format!("{}.{:03}", micros / 1000, micros % 1000)).collect();
            vec!["--arrivals-ms".into(), instants.join(",")]
        }),
    ];
    (policy(), millis(1, 30_000), 1u64..9, 1u32..5_000, arrivals)
        .prop_flat_map(|(policy, sync, inflight, record_bytes, arrivals)| {
            policy_flags(policy).prop_map(move |extra| {
                let mut args: Vec<String> = ["sim", "commit", "--policy", policy, "--sync-ms", &sync].map(String::from).to_vec();
                args.extend(["--inflight".into(), inflight.to_string(), "--record-bytes".into(), record_bytes.to_string()]);
                args.extend(arrivals.clone());
                args.extend(extra);
                args
            })
        })
}

fn power_cut_args() -> impl Strategy<Value = Vec<String>> {
    let unit = prop_oneof![Just(32usize), Just(512), Just(4096), 1usize..5_000];
    let log_fault = prop::option::of((1u64..16, any::<bool>()));
    (policy(), millis(0, 20_000), any::<bool>(), 0u64..1_000, unit, log_fault, prop::option::of(1u64..16), prop::option::of(0u64..26))
        .prop_flat_map(|(policy, at, all_states, seed, unit, log_fault, flush_fault, cdc)| {
            policy_flags(policy).prop_map(move |extra| {
                let mut args: Vec<String> = ["sim", "power-cut", "--scenario", "tiny-store", "--policy", policy, "--at-ms", &at].map(String::from).to_vec();
                args.extend(["--seed".into(), seed.to_string(), "--unit-bytes".into(), unit.to_string()]);
                if all_states {
                    args.push("--all-states".into());
                }
                if let Some((batch, retry)) = log_fault {
                    args.extend(["--log-sync-fails".into(), batch.to_string()]);
                    args.extend(["--on-sync-error".into(), if retry { "retry" } else { "fail-stop" }.into()]);
                }
                if let Some(file) = flush_fault {
                    args.extend(["--flush-sync-fails".into(), file.to_string()]);
                }
                if let Some(seq) = cdc {
                    args.extend(["--cdc-reader-at".into(), seq.to_string()]);
                }
                args.extend(extra);
                args
            })
        })
}

fn redo_args() -> impl Strategy<Value = Vec<String>> {
    let protection = prop_oneof![Just("fpi"), Just("doublewrite"), Just("none")];
    let engine = prop_oneof![Just("aries"), Just("sqlite-wal")];
    let geometry = prop_oneof![Just((64usize, 32usize)), Just((8192, 512)), Just((4096, 4096)), (1usize..9, 4usize..8).prop_map(|(sectors, shift)| (sectors << shift, 1 << shift))];
    (protection, engine, 1u64..9, prop::option::of(0usize..20), geometry).prop_map(|(protection, engine, cut, sectors, (page, sector))| {
        let mut args: Vec<String> = ["sim", "redo", "--scenario", "tiny-store", "--protection", protection, "--engine", engine].map(String::from).to_vec();
        args.extend(["--cut-after-write".into(), cut.to_string(), "--page-bytes".into(), page.to_string(), "--sector-bytes".into(), sector.to_string()]);
        if let Some(sectors) = sectors {
            args.extend(["--cut-sectors".into(), sectors.to_string()]);
        }
        args
    })
}

fn quorum_args() -> impl Strategy<Value = Vec<String>> {
    let mode = prop_oneof![Just("raft"), Just("postgres")];
    (1u64..24, 1usize..4, prop::collection::vec(millis(1, 20_000), 3), mode, 1usize..5, 1u64..25).prop_map(
        |(fork, w, legs, mode, inflight, budget)| {
            let mut args: Vec<String> = ["sim", "quorum", "--scenario", "tiny-store", "--mode", mode].map(String::from).to_vec();
            args.extend(["--fork-after-write".into(), fork.to_string(), "--w".into(), w.to_string()]);
            args.extend(["--replica-ms".into(), legs.join(","), "--inflight".into(), inflight.to_string()]);
            args.extend(["--budget-write".into(), budget.to_string()]);
            args
        },
    )
}

fn remote_args() -> impl Strategy<Value = Vec<String>> {
    let load = prop_oneof![
        (1u64..300).prop_map(|writers| vec!["--writers".to_string(), writers.to_string()]),
        (1u64..100_000, any::<bool>()).prop_map(|(rate, poisson)| {
            let mut args = vec!["--rate".to_string(), rate.to_string()];
            if poisson {
                args.push("--poisson".into());
            }
            args
        }),
    ];
    let latency = prop_oneof![
        prop_oneof![Just("s3-standard"), Just("s3-express"), Just("postgres")].prop_map(|name| vec!["--profile".to_string(), name.to_string()]),
        millis(1, 60_000).prop_map(|ms| vec!["--put-ms".to_string(), ms]),
    ];
    let faults = (
        prop::collection::vec((1u64..40, millis(1, 400_000)), 0..3),
        prop::option::of(1u64..40),
        prop::option::of(millis(0, 400_000)),
    );
    let record_bytes = prop_oneof![Just(110u32), 32u32..60_001];
    let backend_flags = prop_oneof![
        // S3, with or without the upload to data objects and a crash before a commit.
        (any::<bool>(), prop::option::of(1u64..12)).prop_map(|(upload, crash)| {
            let mut args = vec!["--backend".to_string(), "s3".to_string()];
            if upload {
                args.push("--upload".into());
                if let Some(block) = crash {
                    args.extend(["--upload-crash-before-commit".into(), block.to_string()]);
                }
            }
            args
        }),
        // Postgres, with its ring, the upload interval and a stall.
        (2u64..17, prop_oneof![Just(64u64 << 20), 4_096u64..1_000_000], millis(1, 200_000), prop::option::of((0u64..300, prop::option::of(1u64..500)))).prop_map(
            |(segments, segment_bytes, every, stall)| {
                let mut args = vec!["--backend".to_string(), "postgres".to_string()];
                args.extend(["--segments".into(), segments.to_string(), "--segment-bytes".into(), segment_bytes.to_string()]);
                args.extend(["--upload-every-ms".into(), every]);
                if let Some((from, length)) = stall {
                    let until = length.map_or_else(String::new, |length| (from + length).to_string());
                    args.extend(["--stall-upload-ms".into(), format!("{from}:{until}")]);
                }
                args
            },
        ),
    ];
    (backend_flags, load, 1u64..2_500, 0u64..1_000, 1usize..9, latency, faults, record_bytes).prop_map(
        |(backend, load, count, seed, inflight, latency, (slow, fail, takeover), record_bytes)| {
            let mut args: Vec<String> = vec!["sim".into(), "remote".into()];
            args.extend(backend);
            args.extend(load);
            args.extend(["--count".into(), count.to_string(), "--seed".into(), seed.to_string(), "--inflight".into(), inflight.to_string()]);
            args.extend(latency);
            for (put, ms) in slow {
                args.extend(["--slow-put".into(), format!("{put}:{ms}")]);
            }
            if let Some(put) = fail {
                args.extend(["--fail-put".into(), put.to_string()]);
            }
            if let Some(at) = takeover {
                args.extend(["--takeover-at-ms".into(), at]);
            }
            args.extend(["--record-bytes".into(), record_bytes.to_string()]);
            args
        },
    )
}

fn budget_args() -> impl Strategy<Value = Vec<String>> {
    let volume = prop_oneof![Just("gp3"), Just("io2"), Just("instance-store")];
    (1u64..2_000_000, 1u64..100_000, millis(1, 50_000), prop_oneof![Just(4096u64), 512u64..70_000], 0u64..5_000, volume).prop_map(
        |(rate, record_bytes, sync, page, lsm, volume)| {
            let mut args: Vec<String> = vec!["budget".into(), "--rate".into(), rate.to_string(), "--record-bytes".into(), record_bytes.to_string()];
            args.extend(["--sync-ms".into(), sync, "--page-bytes".into(), page.to_string(), "--lsm-mb-s".into(), lsm.to_string()]);
            args.extend(["--volume".into(), volume.into()]);
            args
        },
    )
}

/// Runs `walab ARGS` (and again with `--json` where the command has it) and checks that
/// it ended as a command does: success, or one line naming what it refused.
fn runs_without_panic(args: &[String], json: bool) -> Result<(), TestCaseError> {
    let mut variants = vec![args.to_vec()];
    if json {
        let mut with_json = args.to_vec();
        with_json.push("--json".into());
        variants.push(with_json);
    }
    for args in variants {
        let output = Command::new(env!("CARGO_BIN_EXE_walab")).args(&args).output().expect("the walab binary runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        let line = format!("walab {}", args.join(" "));
        prop_assert!(!stderr.contains("panicked"), "{line}\npanicked:\n{stderr}");
        let code = output.status.code();
        prop_assert!(matches!(code, Some(0..=2)), "{line}\nexit {code:?}:\n{stderr}");
        if code != Some(0) {
            prop_assert!(!stderr.trim().is_empty(), "{line}\nexit {code:?} without saying why");
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn sim_commit_never_panics(args in commit_args()) {
        runs_without_panic(&args, true)?;
    }

    #[test]
    fn sim_power_cut_never_panics(args in power_cut_args()) {
        runs_without_panic(&args, true)?;
    }

    #[test]
    fn sim_redo_never_panics(args in redo_args()) {
        runs_without_panic(&args, true)?;
    }

    #[test]
    fn sim_quorum_never_panics(args in quorum_args()) {
        runs_without_panic(&args, true)?;
    }

    #[test]
    fn budget_never_panics(args in budget_args()) {
        runs_without_panic(&args, true)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, ..ProptestConfig::default() })]

    #[test]
    fn sim_remote_never_panics(args in remote_args()) {
        runs_without_panic(&args, true)?;
    }
}

/// The takeovers that panicked the upload: node B at 28.5 to 30 ms under S3 Standard's
/// latencies, seeds 1 to 3, once nothing but the first batch was acknowledged.
#[test]
fn a_takeover_before_any_block_is_due_ends_the_upload_cleanly() {
    for seed in ["1", "2", "3"] {
        for takeover in ["28.5", "29", "29.5", "30"] {
            let args: Vec<String> = [
                "sim", "remote", "--backend", "s3", "--rate", "20000", "--count", "600", "--seed", seed, "--inflight", "4", "--profile",
                "s3-standard", "--takeover-at-ms", takeover, "--upload", "--json",
            ]
            .map(String::from)
            .to_vec();
            let output = Command::new(env!("CARGO_BIN_EXE_walab")).args(&args).output().expect("the walab binary runs");
            assert!(output.status.success(), "walab {}: {}", args.join(" "), String::from_utf8_lossy(&output.stderr));
            let run: serde_json::Value = serde_json::from_slice(&output.stdout).expect("stdout is JSON");
            assert!(run["takeover"].is_object(), "the run has its takeover");
            assert!(run["upload"].is_object(), "the run has its upload");
        }
    }
}
