//! "The same run on the command line": the exact `walab` command that reproduces a view.
//!
//! Every parameter the page's run of the tiny store takes has a flag in
//! `walab sim power-cut`, except the log's sync latency (the CLI runs the tiny store's
//! 1 ms). The command is built from the same parameters the model ran with, flag for
//! flag, so a student can paste it and get the page's numbers; a view the command line
//! cannot reproduce says so instead of naming a command that gives another answer.

use walab_core::time::Nanos;

use crate::model::commit::core_policy;
use crate::url_state::{format_millis, Fault, Handling, LabParams};
use walab_core::group_commit::Policy as CorePolicy;

/// The command (without `--json`) that prints this view's power cut at `at`, or why
/// there is none.
pub fn power_cut_command(params: &LabParams, at: Nanos) -> Result<String, String> {
    let defaults = LabParams::default();
    if params.sync_latency != defaults.sync_latency {
        return Err(format!(
            "the command line runs the tiny store's {} ms syncs; set the sync latency L to {} ms to compare",
            format_millis(defaults.sync_latency),
            format_millis(defaults.sync_latency)
        ));
    }
    let policy = core_policy(params.policy, params.window);
    let mut command = format!(
        "walab sim power-cut --at-ms {} --policy {}",
        format_millis(at),
        policy.kind().name()
    );
    if let CorePolicy::Window { window } = policy {
        if window != Nanos::from_millis(2) {
            command.push_str(&format!(" --window-ms {}", format_millis(window)));
        }
    }
    command.push_str(&format!(" --seed {}", params.seed));
    if params.unit_bytes as usize != walab_core::tiny_store::UNIT_BYTES {
        command.push_str(&format!(" --unit-bytes {}", params.unit_bytes));
    }
    match params.fault {
        Fault::None => {}
        Fault::LogSync => {
            let handling = match params.handling {
                Handling::Right => "fail-stop",
                Handling::Wrong => "retry",
            };
            command.push_str(&format!(" --log-sync-fails {} --on-sync-error {handling}", params.eio_batch));
        }
        Fault::FlushSync => command.push_str(" --flush-sync-fails 11"),
    }
    if let Some(seq) = params.cdc_confirmed_seq {
        command.push_str(&format!(" --cdc-reader-at {seq}"));
    }
    Ok(command)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::url_state::parse_query;

    fn command(query: &str) -> Result<String, String> {
        let params = parse_query(query).0;
        power_cut_command(&params, params.cut.unwrap())
    }

    #[test]
    fn every_parameter_of_the_run_is_a_flag() {
        assert_eq!(command("part=6&cut=13.5&seed=0").unwrap(), "walab sim power-cut --at-ms 13.5 --policy group --seed 0");
        assert_eq!(
            command("part=3&fault=e1&handling=wrong&cut=11.5&seed=0").unwrap(),
            "walab sim power-cut --at-ms 11.5 --policy group --seed 0 --log-sync-fails 11 --on-sync-error retry"
        );
        assert_eq!(
            command("part=3&fault=e1&eio=5&cut=6").unwrap(),
            "walab sim power-cut --at-ms 6 --policy group --seed 1 --log-sync-fails 5 --on-sync-error fail-stop"
        );
        assert_eq!(command("part=3&fault=e2&cut=12").unwrap(), "walab sim power-cut --at-ms 12 --policy group --seed 1 --flush-sync-fails 11");
        assert_eq!(
            command("part=7&policy=window&window=0.5&unit=512&cut=13").unwrap(),
            "walab sim power-cut --at-ms 13 --policy window --window-ms 0.5 --seed 9 --unit-bytes 512"
        );
        assert_eq!(command("part=6&policy=window&cut=13").unwrap(), "walab sim power-cut --at-ms 13 --policy window --seed 1");
        assert_eq!(command("part=6&policy=no-sync&cut=13").unwrap(), "walab sim power-cut --at-ms 13 --policy no-sync --seed 1");
    }

    #[test]
    fn a_view_the_command_line_cannot_run_says_so() {
        let refused = command("part=6&sync=2&cut=13").unwrap_err();
        assert!(refused.contains("set the sync latency L to 1 ms"), "{refused}");
    }
}
