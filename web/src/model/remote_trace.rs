//! A trace written by `walab sim remote --trace FILE` and dropped onto the page: read back
//! into the core's run by `sim::remote::from_trace`, so the remote views draw it with the
//! same figures as their own runs.
//!
//! The file is untrusted input. What `from_trace` would take at its word (a record count
//! that overflows, a batch of more records than the file holds, a run so large that reading
//! it back would stall the page) is refused first, each with one sentence naming the file
//! and the event.

use walab_core::sim::remote::{from_trace, RemoteBackend, RemoteRun};
use walab_core::time::Nanos;
use walab_core::trace::{Event, Trace};

use crate::format::count;
use crate::url_state::format_millis;

/// Scenarios of `walab sim remote` traces start with this (`remote-s3`, `remote-postgres`).
pub const REMOTE_SCENARIO_PREFIX: &str = "remote-";
/// Records times batches the page reads back at most: reading a run back visits every
/// record once per batch, and this keeps that under a second in the browser.
pub const READ_BACK_WORK_MAX: u64 = 50_000_000;
/// The latest instant a remote trace may name (1,000,000 s): far past any simulated run,
/// and far enough below `u64::MAX` that no sum of instants overflows.
pub const TRACE_INSTANT_MAX: Nanos = Nanos(1_000_000_000_000_000);

/// A remote run read from a trace file.
#[derive(Debug, PartialEq)]
pub struct DroppedRemote {
    pub file_name: String,
    pub events: usize,
    /// The trace stopped at its event limit; the run went on past it.
    pub truncated: bool,
    pub run: RemoteRun,
}

/// Whether a trace says it is a run of `walab sim remote`.
pub fn is_remote(trace: &Trace) -> bool {
    trace.scenario.starts_with(REMOTE_SCENARIO_PREFIX)
}

/// The backend a remote scenario ran on: Postgres for `remote-postgres`, anything else
/// remote an object store.
pub fn backend_of_scenario(scenario: &str) -> RemoteBackend {
    if scenario == "remote-postgres" {
        RemoteBackend::Postgres
    } else {
        RemoteBackend::S3
    }
}

/// Reads a remote trace back into a run. The error names the file and what is wrong.
pub fn read_remote(file_name: &str, trace: &Trace) -> Result<DroppedRemote, String> {
    check(trace).map_err(|reason| format!("{file_name}: {reason}"))?;
    let run = from_trace(trace).map_err(|error| format!("{file_name}: {error}"))?;
    if run.batches.is_empty() {
        return Err(format!("{file_name}: the trace of walab sim remote forms no batch, so there is nothing to draw"));
    }
    Ok(DroppedRemote { file_name: file_name.to_string(), events: trace.events.len(), truncated: trace.truncated, run })
}

/// What `from_trace` assumes of a trace its own `to_trace` wrote.
fn check(trace: &Trace) -> Result<(), String> {
    let records = trace.writes.len() as u64;
    if let Some(write) = trace.writes.iter().find(|write| write.arrival > TRACE_INSTANT_MAX) {
        return Err(format!("record {} arrives at {} ms, later than the page reads ({} ms)", write.id, format_millis(write.arrival), format_millis(TRACE_INSTANT_MAX)));
    }
    let mut batches = 0u64;
    for (index, event) in trace.events.iter().enumerate() {
        let number = index + 1;
        if event.at > TRACE_INSTANT_MAX {
            return Err(format!("event {number} is at {} ms, later than the page reads ({} ms)", format_millis(event.at), format_millis(TRACE_INSTANT_MAX)));
        }
        match &event.event {
            Event::BatchFormed { batch, first_write, writes, offset, bytes, .. } => {
                batches += 1;
                if *writes > records {
                    return Err(format!("event {number}: batch {batch} holds {writes} records, but the file has only {records}"));
                }
                if first_write.checked_add(*writes).is_none() {
                    return Err(format!("event {number}: batch {batch}'s records (from record {first_write}) run past the largest number"));
                }
                if offset.checked_add(*bytes).is_none() {
                    return Err(format!("event {number}: batch {batch}'s bytes (from offset {offset}) run past the largest offset"));
                }
            }
            Event::Ack { first_write, writes } if *writes > records || first_write.checked_add(*writes).is_none() => {
                return Err(format!("event {number}: an acknowledgement of {writes} records from record {first_write}, but the file has only {records}"));
            }
            _ => {}
        }
    }
    if batches.saturating_mul(records.max(1)) > READ_BACK_WORK_MAX {
        return Err(format!(
            "{records} records in {batches} batches is more than the page reads back (records times batches at most {READ_BACK_WORK_MAX}); record a shorter run with --count"
        ));
    }
    Ok(())
}

impl DroppedRemote {
    /// The backend this run was on.
    pub fn backend(&self) -> RemoteBackend {
        self.run.backend
    }

    /// What the file holds, in words: the caption above the figures.
    pub fn summary(&self) -> String {
        let run = &self.run;
        let (store, request) = match run.backend {
            RemoteBackend::S3 => ("S3 (an object store)", "PUT"),
            RemoteBackend::Postgres => ("Postgres", "INSERT"),
        };
        let never = run.batches.iter().filter(|batch| batch.acked.is_none()).count();
        let mut text = format!(
            "{} holds one run of walab sim remote on {store}: {} in {}, each sent as one {request} ({}), \
             and {} acknowledged (their writers told the records are safe) over {:.1} ms.",
            self.file_name,
            count(run.records.len(), "record"),
            count(run.batches.len(), "batch"),
            count(run.puts, request),
            count(run.records_acked, "record"),
            run.end.as_millis_f64()
        );
        match never {
            0 => {}
            1 => text.push_str(" One batch was never acknowledged."),
            _ => text.push_str(&format!(" {never} batches were never acknowledged.")),
        }
        match &run.takeover {
            Some(takeover) => {
                text.push_str(&format!(
                    " At {} ms node B takes the node over (epoch {} after node A's {}); its recovery replays {} of A's records",
                    format_millis(takeover.at),
                    takeover.new_epoch,
                    takeover.old_epoch,
                    takeover.recovered_by_new
                ));
                if run.backend == RemoteBackend::S3 {
                    text.push_str(&match takeover.stragglers_ignored {
                        0 => "; none of A's objects landed too late to count.".to_string(),
                        1 => " and ignores one object of A's that landed too late.".to_string(),
                        n => format!(" and ignores {n} objects of A's that landed too late."),
                    });
                } else {
                    text.push('.');
                }
            }
            None => text.push_str(" No takeover."),
        }
        if self.truncated {
            text.push_str(&format!(" The trace stops at its limit of {} events; the run went on past it.", self.events));
        }
        text
    }

    /// What the trace does not carry, so the page does not draw it.
    pub fn left_out(&self) -> &'static str {
        match self.run.backend {
            RemoteBackend::S3 => "The trace records every request of the WAL but not the background upload to data objects, so the upload is not drawn while it plays.",
            RemoteBackend::Postgres => "The trace records every INSERT, not the ring's size or the upload's trims, so the ring of slot tables is not drawn.",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::dropped::{parse_dropped, DroppedFile, DroppedKind};
    use walab_core::sim::remote::{self, to_trace, Load, RemoteSetup};

    fn s3_run(takeover: bool) -> RemoteRun {
        let mut setup = RemoteSetup::new(RemoteBackend::S3, Load::Writers { writers: 8 }, 200);
        setup.slow_puts = vec![(3, Nanos::from_millis(200))];
        if takeover {
            setup.takeover_at = Some(Nanos::from_millis(60));
        }
        remote::run(&setup).unwrap()
    }

    fn json(trace: &Trace) -> String {
        serde_json::to_string(trace).unwrap()
    }

    fn read(name: &str, text: &str) -> Result<DroppedRemote, String> {
        match parse_dropped(name, text).map_err(|error| error.message)? {
            DroppedFile::Remote(remote) => Ok(remote),
            other => panic!("read as {other:?}"),
        }
    }

    #[test]
    fn a_remote_trace_reads_back_into_the_runs_numbers() {
        let run = s3_run(true);
        let dropped = read("run.json", &json(&to_trace(&run, "group"))).unwrap();
        assert_eq!(dropped.backend(), RemoteBackend::S3);
        assert_eq!((dropped.run.batches.len(), dropped.run.puts, dropped.run.records_acked), (run.batches.len(), run.puts, run.records_acked));
        let (read, original) = (dropped.run.takeover.as_ref().unwrap(), run.takeover.as_ref().unwrap());
        assert_eq!((read.acked_by_old, read.recovered_by_new, read.stragglers_ignored), (original.acked_by_old, original.recovered_by_new, original.stragglers_ignored));
        let summary = dropped.summary();
        let start = format!("run.json holds one run of walab sim remote on S3 (an object store): {} records in {} batches", run.records.len(), run.batches.len());
        assert!(summary.starts_with(&start), "{summary}");
        assert!(summary.contains("At 60 ms node B takes the node over (epoch 6 after node A's 5)"), "{summary}");
    }

    #[test]
    fn a_postgres_trace_reads_as_a_postgres_run() {
        let setup = RemoteSetup::new(RemoteBackend::Postgres, Load::Writers { writers: 4 }, 50);
        let run = remote::run(&setup).unwrap();
        let dropped = read("pg.json", &json(&to_trace(&run, "window"))).unwrap();
        assert_eq!(dropped.backend(), RemoteBackend::Postgres);
        assert_eq!(dropped.run.records_acked, 50);
        assert!(dropped.summary().contains("batches, each sent as one INSERT"), "{}", dropped.summary());
    }

    #[test]
    fn a_commit_trace_is_not_read_as_a_remote_one() {
        use walab_core::group_commit::{Config, Policy};
        let (setup, arrivals) = walab_core::sim::commit::tiny_store_setup(Config::file(Policy::Group));
        let trace = walab_core::sim::commit::run(&setup, &arrivals).unwrap().trace.unwrap();
        assert!(matches!(parse_dropped("tiny.json", &json(&trace)), Ok(DroppedFile::Trace(_))));
    }

    #[test]
    fn a_damaged_remote_trace_gets_one_sentence_and_names_its_backend() {
        let run = s3_run(false);
        let good = to_trace(&run, "group");
        let error = |trace: &Trace| parse_dropped("bad.json", &json(trace)).unwrap_err();

        // A sync of a batch no event formed.
        let mut orphan = good.clone();
        orphan.events.retain(|event| !matches!(event.event, Event::BatchFormed { batch: 2, .. }));
        let problem = error(&orphan);
        assert_eq!(problem.kind, Some(DroppedKind::Remote(RemoteBackend::S3)));
        assert_eq!(problem.message, "bad.json: batch 2 is used before a batch_formed event made it");

        // A batch claiming more records than there are, and one whose count overflows.
        let mut greedy = good.clone();
        for event in &mut greedy.events {
            if let Event::BatchFormed { batch: 1, writes, .. } = &mut event.event {
                *writes = u64::MAX;
            }
        }
        let message = error(&greedy).message;
        assert!(message.starts_with("bad.json: event ") && message.contains(&format!("batch 1 holds {} records, but the file has only 200", u64::MAX)), "{message}");
        let mut overflow = good.clone();
        for event in &mut overflow.events {
            if let Event::Ack { first_write, .. } = &mut event.event {
                *first_write = u64::MAX;
            }
        }
        assert!(error(&overflow).message.contains("an acknowledgement of"), "{:?}", error(&overflow));

        // An instant past what the page reads.
        let mut late = good.clone();
        let last = late.events.len() - 1;
        late.events[last].at = Nanos(u64::MAX);
        assert!(error(&late).message.contains("later than the page reads"), "{:?}", error(&late));

        // A remote scenario of no backend, and a Postgres trace that lost its batches.
        let mut unknown = good.clone();
        unknown.scenario = "remote-gcs".into();
        let problem = error(&unknown);
        assert_eq!(problem.kind, Some(DroppedKind::Remote(RemoteBackend::S3)));
        assert_eq!(problem.message, "bad.json: scenario 'remote-gcs' is not a run of walab sim remote (remote-s3 or remote-postgres)");
        let mut empty = good.clone();
        empty.scenario = "remote-postgres".into();
        empty.events.retain(|event| matches!(event.event, Event::Arrive { .. }));
        let problem = error(&empty);
        assert_eq!(problem.kind, Some(DroppedKind::Remote(RemoteBackend::Postgres)));
        assert_eq!(problem.message, "bad.json: the trace of walab sim remote forms no batch, so there is nothing to draw");
    }

    #[test]
    fn a_run_too_large_to_read_back_is_refused_before_reading() {
        let mut trace = Trace::new("remote-s3", "group", 0);
        let records = 20_000u64;
        for id in 1..=records {
            trace.writes.push(walab_core::trace::TraceWrite { id, arrival: Nanos::ZERO, segment: 1, record_bytes: 0, op: None, key: None, value: None });
        }
        for batch in 1..=records / 4 {
            trace.push(Nanos(batch), Event::BatchFormed { batch, segment: 1, first_write: batch * 4 - 3, writes: 4, offset: 0, bytes: 1 });
        }
        let error = parse_dropped("big.json", &json(&trace)).unwrap_err();
        assert_eq!(
            error.message,
            "big.json: 20000 records in 5000 batches is more than the page reads back (records times batches at most 50000000); record a shorter run with --count"
        );
    }
}
