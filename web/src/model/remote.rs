//! The stream store's WAL on S3 and in Postgres, run by the core's
//! remote simulator (`walab_core::sim::remote`, the same run `walab sim remote` prints).
//!
//! [`RemoteParams`] are the chapters' URL parameters (all named `r...`, so every view is
//! a link); [`RemoteModel::build`] runs the core for them, and the functions below turn
//! the run into what the figures draw at the playhead. Nothing here decides an outcome.

use crate::format::{are, count};
use walab_core::sim::remote::{
    self, event_loss, put_bill_per_million_appends, restart_after, BatchOutcome, EventLoss, Load, RemoteBackend,
    RemoteRun, RemoteSetup, RestartOutcome,
};
use walab_core::sim::remote::upload::{self, UploadRun, UploadSetup};
use walab_core::time::Nanos;

use std::rc::Rc;

use super::remote_trace::DroppedRemote;
use super::Timeline;
use crate::remote_params::RemoteParams;

/// One row of the cost table: closed-loop writers against PUTs per record.
#[derive(Clone, Debug, PartialEq)]
pub struct CostRow {
    pub writers: u64,
    pub puts: u64,
    pub records: u64,
    pub puts_per_record: f64,
    pub bill_per_million: f64,
}

/// Writers in the cost table.
pub const COST_WRITERS: [u64; 5] = [1, 4, 16, 64, 256];
/// Records each cost run appends.
pub const COST_RECORDS: u64 = 1_024;

/// A chapter's computed runs.
#[derive(Debug)]
pub struct RemoteModel {
    /// Shared with the figures (a render clones the pointer, not the run).
    pub run: Result<Rc<RemoteRun>, String>,
    /// The same run on the command line.
    pub command: String,
    /// S3: PUTs per record against writers, at the run's latency.
    pub costs: Vec<CostRow>,
    /// S3: the background upload of the run's acknowledged records to data objects.
    pub upload: Option<Result<Rc<UploadRun>, String>>,
    /// The trace file the run was read from, when one plays instead of the lab's run.
    pub trace: Option<Rc<DroppedRemote>>,
}

/// S3's cost table: closed-loop runs of [`COST_RECORDS`] at the setup's latency.
fn cost_rows(setup: &RemoteSetup) -> Vec<CostRow> {
    if setup.backend != RemoteBackend::S3 {
        return Vec::new();
    }
    COST_WRITERS
        .iter()
        .filter_map(|&writers| {
            let cost_setup = RemoteSetup {
                load: Load::Writers { writers },
                count: COST_RECORDS,
                slow_puts: Vec::new(),
                fail_put: None,
                takeover_at: None,
                ..setup.clone()
            };
            let run = remote::run(&cost_setup).ok()?;
            let puts_per_record = run.puts_per_record()?;
            Some(CostRow {
                writers,
                puts: run.puts,
                records: run.records_acked,
                puts_per_record,
                bill_per_million: put_bill_per_million_appends(puts_per_record),
            })
        })
        .collect()
}

impl RemoteModel {
    pub fn build(backend: RemoteBackend, params: &RemoteParams, seed: u64) -> RemoteModel {
        let (setup, command) = params.setup(backend, seed);
        let run = remote::run(&setup).map(Rc::new).map_err(|error| error.to_string());
        let costs = cost_rows(&setup);
        let upload = match (&run, backend) {
            (Ok(wal), RemoteBackend::S3) => {
                let upload_setup = UploadSetup { crash_before_commit: params.upload_crash, ..UploadSetup::lab() };
                Some(
                    upload::run(wal, &upload_setup, &setup.latency, setup.seed, setup.record_bytes)
                        .map(Rc::new)
                        .map_err(|error| error.to_string()),
                )
            }
            _ => None,
        };
        RemoteModel { run, command, costs, upload, trace: None }
    }

    /// The chapter of a dropped trace: its run, read back by the core. The cost table
    /// stays the lab's (it is about the latency, not the file); the upload is not in a
    /// trace, so it is left out.
    pub fn from_trace(params: &RemoteParams, seed: u64, trace: Rc<DroppedRemote>) -> RemoteModel {
        let (setup, _) = params.setup(trace.run.backend, seed);
        RemoteModel { run: Ok(Rc::new(trace.run.clone())), command: String::new(), costs: cost_rows(&setup), upload: None, trace: Some(trace) }
    }

    /// Every instant a batch changes, and the run's end.
    pub fn timeline(&self) -> Timeline {
        let Ok(run) = &self.run else { return Timeline::empty() };
        let mut marks: Vec<Nanos> = batches_drawn(run)
            .iter()
            .flat_map(|batch| [Some(batch.formed), batch.sent, batch.stored, batch.acked])
            .flatten()
            .collect();
        if let Some(takeover) = &run.takeover {
            marks.push(takeover.at);
            marks.push(takeover.claimed_at);
        }
        marks.extend(run.trims.iter().map(|trim| trim.at));
        marks.extend(batches_drawn(run).iter().filter_map(|batch| batch.checked));
        if let Some(takeover) = &run.takeover {
            marks.push(takeover.listed_at);
        }
        if let Some(Ok(upload)) = &self.upload {
            marks.extend(super::remote_upload::marks(upload));
        }
        // Past the drawn batches: their acknowledgements and the last instant of any batch,
        // so End reaches the run's end and the totals' count.
        marks.extend(run.batches.iter().filter_map(|batch| batch.acked));
        marks.extend(run.batches.iter().flat_map(|batch| [batch.acked, batch.stored, batch.checked, batch.answered]).flatten().max());
        walab_core::sort::sort(&mut marks);
        marks.dedup();
        let end = marks.last().copied().unwrap_or(Nanos::ZERO);
        Timeline { marks, end }
    }
}

impl RemoteModel {
    /// Where the chapter opens when the link names no moment (see `moments::opening`): on
    /// the object store, the first instant a stored batch waits for an earlier one (the
    /// in-order acknowledgement); in Postgres, the first batch waiting for its slot, else
    /// the first trim; else the instant with the most batches in flight. Always an
    /// instant something happens, so the caption has words.
    pub fn opening(&self) -> Option<Nanos> {
        let run = self.run.as_ref().ok()?;
        let marks = self.timeline().marks;
        let notable = match run.backend {
            RemoteBackend::S3 => marks.iter().copied().find(|&t| counts_at(run, t).1 > 0),
            RemoteBackend::Postgres => {
                marks.iter().copied().find(|&t| ring_at(run, t).2.is_some()).or_else(|| run.trims.first().map(|trim| trim.at))
            }
        };
        notable.or_else(|| {
            let busiest = marks.iter().map(|&t| counts_at(run, t).0).max()?;
            marks.iter().copied().find(|&t| counts_at(run, t).0 == busiest)
        })
    }
}

/// The figure's outcome at `t`, one sentence: what is acknowledged, in flight and held
/// back, and (Postgres) where the head and the trim offset are in the ring.
pub fn outcome_words(run: &RemoteRun, t: Nanos) -> String {
    let (in_flight, held, acked) = counts_at(run, t);
    let put = if run.backend == RemoteBackend::S3 { "PUT" } else { "INSERT" };
    let mut words = format!(
        "At {}: {} acknowledged, {} in flight as {}, {} stored but waiting for an earlier one",
        crate::format::ms(t),
        count(acked, "record"),
        count(in_flight, "batch"),
        if in_flight == 1 { put.to_string() } else { crate::format::plural(put) },
        held
    );
    if run.backend == RemoteBackend::Postgres {
        let (trim_offset, head, waiting) = ring_at(run, t);
        let head_slot = run.ring.slots(trim_offset, head).iter().enumerate().find_map(|(slot, state)| match state {
            walab_core::ring::SlotState::Head { generation } => Some((slot, *generation)),
            _ => None,
        });
        if let Some((slot, generation)) = head_slot {
            words.push_str(&format!("; the head writes generation {generation} in slot {slot}"));
        }
        words.push_str(&format!("; the upload has trimmed the ring to offset {trim_offset}"));
        if let Some((generation, slot)) = waiting {
            words.push_str(&format!(", and generation {generation} waits for slot {slot}"));
        }
    }
    words + "."
}

/// What slot table `slot` holds at `t`, in words: its generation, its committed rows and
/// when TRUNCATE empties it (the ring figure's chosen slot).
pub fn slot_words(run: &RemoteRun, slot: u64, t: Nanos) -> String {
    use walab_core::ring::SlotState;
    let (trim_offset, head, _) = ring_at(run, t);
    let segment = run.ring.segment_bytes;
    let states = run.ring.slots(trim_offset, head);
    let generation = match states.get(slot as usize) {
        None => return format!("There is no slot {slot}: the ring has {}.", count(states.len(), "slot table")),
        Some(SlotState::Free) => {
            return format!("Slot {slot} is empty: no generation lives in it now (TRUNCATE emptied it, or the head has not reached it yet).")
        }
        Some(SlotState::Kept { generation } | SlotState::Head { generation }) => *generation,
    };
    let rows: Vec<&remote::BatchRow> =
        run.batches.iter().filter(|b| b.generation == Some(generation) && b.stored.is_some_and(|stored| stored <= t)).collect();
    let records: u64 = rows.iter().map(|b| b.records).sum();
    let batches = match (rows.first(), rows.last()) {
        (Some(first), Some(last)) if first.batch != last.batch => format!(" (batches {} to {})", first.batch, last.batch),
        (Some(first), _) => format!(" (batch {})", first.batch),
        _ => String::new(),
    };
    let (start, end) = (generation * segment, (generation + 1) * segment);
    let head_words = if head >= start && head < end { "; the head writes here" } else { "" };
    format!(
        "Slot {slot} holds generation {generation}, offsets {start} to {end}: {} of {}{batches}{head_words}. \
         TRUNCATE empties it once the upload's trim offset passes {end}; it is at {trim_offset}.",
        count(rows.len(), "committed row"),
        count(records, "record"),
    )
}

/// Batches the lanes draw at most.
pub const BATCHES_DRAWN_MAX: usize = 24;

pub fn batches_drawn(run: &RemoteRun) -> &[remote::BatchRow] {
    &run.batches[..run.batches.len().min(BATCHES_DRAWN_MAX)]
}

/// A batch at the playhead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchState {
    /// Formed, waiting to be sent (Postgres: for its slot, or for earlier batches).
    Waiting,
    InFlight,
    /// S3: stored; the fence read (a HEAD of the registration) is in flight.
    Checking,
    /// Stored, but a batch before it is not: its records wait.
    StoredWaiting,
    Acked,
    Failed,
    /// Stored after the takeover under the old epoch: recovery ignores it.
    Ignored,
    Fenced,
    NotYet,
}

impl BatchState {
    pub fn name(&self) -> &'static str {
        match self {
            BatchState::Waiting => "waiting",
            BatchState::InFlight => "in-flight",
            BatchState::Checking => "fence-read",
            BatchState::StoredWaiting => "stored-not-acked",
            BatchState::Acked => "acked",
            BatchState::Failed => "failed",
            BatchState::Ignored => "ignored",
            BatchState::Fenced => "fenced",
            BatchState::NotYet => "not-yet",
        }
    }
}

/// What a batch is at `t`.
pub fn batch_state(run: &RemoteRun, batch: &remote::BatchRow, t: Nanos) -> BatchState {
    if batch.formed > t {
        return BatchState::NotYet;
    }
    if batch.acked.is_some_and(|acked| acked <= t) {
        return BatchState::Acked;
    }
    let straggler = run.takeover.as_ref().is_some_and(|takeover| {
        takeover.ignored.iter().any(|(object, _)| object.start == batch.first_offset && object.epoch == batch.epoch)
    });
    match batch.stored {
        Some(stored) if stored <= t => {
            if straggler && run.takeover.as_ref().is_some_and(|takeover| takeover.at <= t) {
                BatchState::Ignored
            } else if batch.checked.is_some_and(|checked| checked > t) {
                BatchState::Checking
            } else {
                BatchState::StoredWaiting
            }
        }
        _ => match batch.sent {
            Some(sent) if sent <= t => {
                let finished = batch.answered.is_some_and(|end| end <= t);
                match (finished, batch.outcome) {
                    (true, Some(BatchOutcome::Fenced)) => BatchState::Fenced,
                    (true, _) => BatchState::Failed,
                    (false, _) => BatchState::InFlight,
                }
            }
            _ => BatchState::Waiting,
        },
    }
}

/// Counts at the playhead, for the figure's label and the caption.
pub fn counts_at(run: &RemoteRun, t: Nanos) -> (usize, usize, u64) {
    let drawn = batches_drawn(run);
    let in_flight = drawn.iter().filter(|b| batch_state(run, b, t) == BatchState::InFlight).count();
    let held = drawn.iter().filter(|b| batch_state(run, b, t) == BatchState::StoredWaiting).count();
    let acked = run.acked_by(t).count() as u64;
    (in_flight, held, acked)
}

/// The caption of the step at `t`: what happened at that instant, in the WAL and (on
/// the object store) in the upload.
pub fn caption_with_upload(run: &RemoteRun, upload: Option<&UploadRun>, t: Nanos) -> String {
    let wal = caption_at(run, t);
    let Some(upload) = upload else { return wal };
    let parts = super::remote_upload::caption_parts(upload, t);
    if parts.is_empty() {
        return wal;
    }
    let mut text = parts.join("; ");
    if let Some(first) = text.get(..1) {
        text = first.to_ascii_uppercase() + &text[1..];
    }
    let text = text + ".";
    if wal.starts_with("t = ") {
        text
    } else {
        format!("{wal} {text}")
    }
}

/// The caption of the step at `t`: what happened at that instant.
pub fn caption_at(run: &RemoteRun, t: Nanos) -> String {
    let put = if run.backend == RemoteBackend::S3 { "PUT" } else { "INSERT" };
    let mut parts = Vec::new();
    for batch in batches_drawn(run) {
        if batch.formed == t && batch.sent != Some(t) {
            parts.push(format!("batch {} closes with {} and waits", batch.batch, count(batch.records, "record")));
        }
        if batch.sent == Some(t) {
            parts.push(format!("{put} {} sends batch {} ({})", batch.request.unwrap_or(0), batch.batch, count(batch.records, "record")));
        }
        let straggler = run.takeover.as_ref().filter(|takeover| takeover.at <= t).is_some_and(|takeover| {
            takeover.ignored.iter().any(|(object, _)| object.start == batch.first_offset && object.epoch == batch.epoch)
        });
        let fenced_here = run.takeover.as_ref().is_some_and(|takeover| takeover.fenced_batches.first() == Some(&batch.batch));
        // S3 fences at the read after the PUT, Postgres inside the INSERT.
        let fenced_at = if run.backend == RemoteBackend::S3 { batch.checked } else { batch.answered };
        if fenced_at == Some(t) && fenced_here {
            parts.push(if run.backend == RemoteBackend::S3 {
                format!("after batch {}'s PUT, node A reads the registration and finds the new epoch: A is fenced, fails its waiting writers and stops", batch.batch)
            } else {
                format!("batch {}'s INSERT finds no node row with A's epoch and writes nothing: A is fenced and stops", batch.batch)
            });
        }
        if batch.stored == Some(t) && straggler {
            parts.push(format!(
                "batch {} lands under epoch {} at or past node B's start: a straggler that every recovery ignores",
                batch.batch, batch.epoch
            ));
        } else if batch.stored == Some(t) && batch.checked.is_some_and(|checked| checked > t) {
            parts.push(format!(
                "batch {} is stored; node A reads the registration back (a HEAD) to check that it still owns the node before it reports the batch",
                batch.batch
            ));
        } else if batch.stored == Some(t) {
            let held = batch.acked.is_none_or(|acked| acked > t);
            parts.push(if held {
                format!("batch {} is stored but not acknowledged: a batch before it is still in flight", batch.batch)
            } else {
                format!("batch {} is stored", batch.batch)
            });
        }
    }
    for batch in batches_drawn(run) {
        let fenced = run.takeover.as_ref().is_some_and(|takeover| takeover.fenced_batches.contains(&batch.batch));
        if batch.checked == Some(t) && batch.stored != Some(t) && !fenced && batch.acked.is_none_or(|acked| acked > t) {
            parts.push(format!(
                "batch {}'s fence read finds epoch {}: it is stored, but a batch before it is not yet, so its records wait",
                batch.batch, batch.epoch
            ));
        }
    }
    let acked: Vec<u64> = run.batches.iter().filter(|b| b.acked == Some(t)).map(|b| b.batch).collect();
    if let (Some(first), Some(last)) = (acked.first(), acked.last()) {
        let records: u64 = run.batches.iter().filter(|b| b.acked == Some(t)).map(|b| b.records).sum();
        parts.push(if first == last {
            format!("batch {first}'s {} {} acknowledged", count(records, "record"), are(records))
        } else {
            format!("batches {first} to {last} are acknowledged together, {}, in submission order", count(records, "record"))
        });
    }
    if let Some(takeover) = &run.takeover {
        let s3 = run.backend == RemoteBackend::S3;
        if takeover.at == t {
            parts.push(if s3 {
                format!("node B sends its claim: a conditional PUT of the registration with epoch {} over node A's {}", takeover.new_epoch, takeover.old_epoch)
            } else {
                format!("node B claims epoch {} over node A's {}", takeover.new_epoch, takeover.old_epoch)
            });
        }
        if takeover.claimed_at == t && takeover.claimed_at != takeover.at {
            parts.push(if s3 {
                format!("B's claim is stored: from now on every fence read of node A finds epoch {}", takeover.new_epoch)
            } else {
                "the claim takes effect once A's inserts holding the node row have committed".into()
            });
        }
        if s3 && takeover.listed_at == t && takeover.listed_at != takeover.claimed_at {
            parts.push(format!(
                "B's LIST answers: it recovers A's objects up to offset {} and starts its own session there",
                takeover.new_session_start
            ));
        }
    }
    for trim in run.trims.iter().filter(|trim| trim.at == t) {
        if trim.truncated_slots.is_empty() {
            parts.push(format!("the upload confirms up to offset {}", trim.trim_offset));
        } else {
            let slots: Vec<String> = trim.truncated_slots.iter().map(u64::to_string).collect();
            parts.push(format!("the trim passes offset {}: slot {} truncated", trim.trim_offset, slots.join(", ")));
        }
    }
    if parts.is_empty() {
        return format!("t = {}", crate::format::ms(t));
    }
    let mut text = parts.join("; ");
    if let Some(first) = text.get(..1) {
        text = first.to_ascii_uppercase() + &text[1..];
    }
    text + "."
}

/// The durability table's cell for the chosen event at `t`.
pub fn loss_at(run: &RemoteRun, params: &RemoteParams, t: Nanos) -> EventLoss {
    event_loss(run, params.event, t, params.standby, params.one_zone_bucket)
}

/// The timeline table's case at `t`.
pub fn restart_at(run: &RemoteRun, params: &RemoteParams, t: Nanos) -> RestartOutcome {
    restart_after(run, params.timeline, t)
}

/// The ring at `t`: the trim offset, the head (the end of the last batch formed) and a
/// batch waiting for its slot.
pub fn ring_at(run: &RemoteRun, t: Nanos) -> (u64, u64, Option<(u64, u64)>) {
    let trim_offset = run.trims.iter().filter(|trim| trim.at <= t).map(|trim| trim.trim_offset).max().unwrap_or(0);
    let head = run.batches.iter().filter(|b| b.formed <= t).map(|b| b.end_offset).max().unwrap_or(0);
    let waiting = run
        .batches
        .iter()
        .find(|b| b.formed <= t && b.sent.is_none_or(|sent| sent > t) && b.waited == Some(remote::RingWait::Slot))
        .and_then(|b| Some((b.generation?, b.slot?)));
    (trim_offset, head, waiting)
}

/// What the WAL does when it starts against the server the student set up: the core's
/// start-up checks (`ring::startup_checks`), then, if it starts, the timeline verdict and
/// what the restart at `t` loses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StartupView {
    pub refusal: Option<walab_core::ring::StartupRefusal>,
    pub warnings: Vec<walab_core::ring::StartupWarning>,
    /// `None` when the WAL refused to start.
    pub restart: Option<RestartOutcome>,
}

pub fn startup_at(run: &RemoteRun, params: &RemoteParams, t: Nanos) -> StartupView {
    use walab_core::ring::{startup_checks, ServerState};
    let state = ServerState {
        in_recovery: params.server.in_recovery,
        fsync: !params.server.fsync_off,
        synchronous_standby_names: if params.synchronous_standby_set() { "standby1".into() } else { String::new() },
    };
    match startup_checks(&state, params.server.allow_unsafe) {
        Err(refusal) => StartupView { refusal: Some(refusal), warnings: Vec::new(), restart: None },
        Ok(warnings) => StartupView { refusal: None, warnings, restart: Some(restart_at(run, params, t)) },
    }
}

pub fn refusal_name(refusal: walab_core::ring::StartupRefusal) -> &'static str {
    match refusal {
        walab_core::ring::StartupRefusal::InRecovery => "in-recovery",
        walab_core::ring::StartupRefusal::FsyncOff => "fsync-off",
    }
}

pub fn warning_name(warning: walab_core::ring::StartupWarning) -> &'static str {
    match warning {
        walab_core::ring::StartupWarning::FsyncOffAllowed => "fsync-off-allowed",
        walab_core::ring::StartupWarning::NoSynchronousStandby => "no-synchronous-standby",
    }
}

/// The start-up checks, each condition with the core's verdict (`ring::startup_checks`).
pub fn startup_rows() -> Vec<(&'static str, String)> {
    use walab_core::ring::{startup_checks, ServerState};
    let state = |in_recovery: bool, fsync: bool, standby: &str| ServerState {
        in_recovery,
        fsync,
        synchronous_standby_names: standby.to_string(),
    };
    let verdict = |state: ServerState, allow_unsafe: bool| match startup_checks(&state, allow_unsafe) {
        Err(refusal) => format!("refuses to start: {refusal}"),
        Ok(warnings) if warnings.is_empty() => "starts".to_string(),
        Ok(warnings) => {
            let warnings: Vec<String> = warnings.iter().map(|w| w.to_string()).collect();
            format!("starts, warning: {}", warnings.join("; "))
        }
    };
    vec![
        ("a primary with fsync = on and a synchronous standby", verdict(state(false, true, "standby1"), false)),
        ("pg_is_in_recovery() is true (a standby)", verdict(state(true, true, "standby1"), false)),
        ("fsync = off", verdict(state(false, false, "standby1"), false)),
        ("fsync = off with allow_unsafe=true in the URL", verdict(state(false, false, "standby1"), true)),
        ("synchronous_standby_names is empty", verdict(state(false, true, ""), false)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remote_params::STANDBY_LAG;
    use walab_core::sim::remote::TimelineCase;

    #[test]
    fn the_start_up_toggles_give_the_cores_verdicts_and_keep_old_links() {
        use walab_core::ring::{StartupRefusal, StartupWarning, TimelineVerdict};
        let model = RemoteModel::build(RemoteBackend::Postgres, &RemoteParams::default(), 1);
        let run = model.run.as_ref().unwrap();
        let at = Nanos::from_millis(30);
        let view = |pairs: &[(&str, &str)]| {
            let mut params = RemoteParams::default();
            for (name, value) in pairs {
                params.parse(name, value).unwrap();
            }
            startup_at(run, &params, at)
        };
        assert_eq!(view(&[]), StartupView { refusal: None, warnings: Vec::new(), restart: Some(restart_at(run, &RemoteParams::default(), at)) });
        assert_eq!(view(&[("rrecovery", "1")]).refusal, Some(StartupRefusal::InRecovery));
        assert_eq!(view(&[("rfsync", "off")]).refusal, Some(StartupRefusal::FsyncOff));
        let allowed = view(&[("rfsync", "off"), ("runsafe", "1")]);
        assert_eq!((allowed.refusal, allowed.warnings), (None, vec![StartupWarning::FsyncOffAllowed]));
        assert_eq!(view(&[("rssn", "empty")]).warnings, vec![StartupWarning::NoSynchronousStandby]);
        // An old link's higher-async case is a higher timeline with the names empty.
        let old = view(&[("rtl", "higher-async")]);
        assert_eq!(old.warnings, vec![StartupWarning::NoSynchronousStandby]);
        assert!(matches!(old.restart.unwrap().verdict, TimelineVerdict::HigherAsynchronous { .. }));
        let mut params = RemoteParams::default();
        params.parse("rtl", "higher-sync").unwrap();
        params.set_synchronous_standby(false);
        assert_eq!(params.to_pairs(), vec!["rtl=higher-async".to_string()]);
        params.set_timeline("equal");
        assert_eq!(params.to_pairs(), vec!["rssn=empty".to_string()]);
        params.set_timeline("higher");
        assert_eq!(params.timeline, TimelineCase::HigherAsynchronous { lag: STANDBY_LAG });
        assert!(RemoteParams::default().parse("rfsync", "maybe").unwrap_err().contains("off or on"));
    }

    #[test]
    fn the_timeline_reaches_the_last_acknowledgement_past_the_drawn_batches() {
        let mut params = RemoteParams::default();
        params.parse("rwriters", "8").unwrap();
        params.parse("rcount", "400").unwrap();
        let model = RemoteModel::build(RemoteBackend::S3, &params, 1);
        let run = model.run.as_ref().unwrap();
        assert!(run.batches.len() > BATCHES_DRAWN_MAX, "{} batches", run.batches.len());
        let last = run.batches.iter().filter_map(|batch| batch.acked).max().unwrap();
        let timeline = model.timeline();
        assert!(timeline.marks.contains(&last) && timeline.end >= last);
        assert_eq!(run.acked_by(timeline.end).count() as u64, run.records_acked);
        let caption = caption_at(run, last);
        assert_eq!(caption, format!("Batch {}'s 8 records are acknowledged.", run.batches.len()));
    }

    #[test]
    fn the_slow_put_holds_back_the_batches_behind_it_at_the_playhead() {
        let mut params = RemoteParams::default();
        params.parse("rlat", "25").unwrap();
        params.parse("rslow", "3:200").unwrap();
        let model = RemoteModel::build(RemoteBackend::S3, &params, 1);
        let run = model.run.as_ref().unwrap();
        let at = Nanos::from_millis(100);
        let states: Vec<BatchState> = batches_drawn(run).iter().take(5).map(|b| batch_state(run, b, at)).collect();
        assert_eq!(states[0], BatchState::Acked);
        assert_eq!(states[2], BatchState::InFlight, "the slow third PUT");
        assert_eq!(states[3], BatchState::StoredWaiting, "stored, held back");
        assert!(model.command.contains("--slow-put 3:200"));
        assert!(model.costs.windows(2).all(|pair| pair[1].puts_per_record < pair[0].puts_per_record));
    }
}
