//! A remote run as the lab's [`Trace`], so `walab sim remote --trace` files play in the
//! browser like every other run: each batch is a batch whose "sync" is its PUT or INSERT,
//! from the request going out to the object stored or the row committed; on the object
//! store the fence read after it is a second sync of the same batch, on the
//! `registration` file. [`from_trace`] reads such a trace back into a [`RemoteRun`] for
//! Parts 13 and 14, recomputing what recovery keeps with the core's own planning.

use super::{BatchOutcome, BatchRow, RecordRow, RemoteBackend, RemoteRun, TakeoverReport};
use crate::group_commit::{BatchId, SyncError, Ticket, Tickets};
use crate::remote::layout::{plan_chain, Session, WalObject};
use crate::ring::RingGeometry;
use crate::session::trace::WriteNumbering;
use crate::time::Nanos;
use crate::trace::{Event, FileKind, Trace, TraceWrite};

/// Record n is the session's write n: the remote run starts a fresh session.
const WRITES_FROM_ONE: WriteNumbering = WriteNumbering::from_one();

/// Fence reads are syncs numbered from here (batch k's is `FENCE_SYNC_BASE + k`).
pub const FENCE_SYNC_BASE: u64 = 1 << 40;

/// The run's trace: arrivals, batches formed, requests out and back, fence reads,
/// acknowledgements, and the takeover as a note.
pub fn to_trace(run: &RemoteRun, policy: &str) -> Trace {
    let mut trace = Trace::new(&format!("remote-{}", run.backend.name()), policy, 0);
    let file = trace.add_file("wal", FileKind::Log, 0);
    let registration = trace.add_file("registration", FileKind::Manifest, 0);
    let mut events: Vec<(Nanos, u8, Event)> = Vec::new();
    for record in &run.records {
        let Some(arrived) = record.arrived else { continue };
        trace.writes.push(TraceWrite {
            id: record.record,
            arrival: arrived,
            segment: 1,
            record_bytes: 0,
            op: None,
            key: None,
            value: None,
        });
        events.push((arrived, 0, WRITES_FROM_ONE.arrive(Ticket(record.record))));
    }
    for batch in &run.batches {
        events.push((
            batch.formed,
            1,
            WRITES_FROM_ONE.formed_from(
                BatchId(batch.batch),
                batch.generation.unwrap_or(1),
                Tickets { first: Ticket(batch.first_record), count: batch.records },
                batch.first_offset,
                batch.end_offset - batch.first_offset,
            ),
        ));
        if let Some(sent) = batch.sent {
            events.push((sent, 2, Event::SyncStart { sync: batch.batch, file, batch: Some(batch.batch), units: Vec::new() }));
        }
        let (ended, ok, error) = match (batch.stored, batch.outcome) {
            (Some(stored), _) => (Some(stored), true, None),
            (None, Some(BatchOutcome::Fenced)) => (batch.answered.or(batch.sent), false, Some(SyncError::Fenced)),
            (None, _) => (batch.answered.or(batch.sent), false, Some(SyncError::Unavailable)),
        };
        if let Some(ended) = ended {
            events.push((ended, 3, Event::SyncEnd { sync: batch.batch, file, ok, error }));
        }
        if let (Some(stored), Some(checked)) = (batch.stored, batch.checked) {
            let sync = FENCE_SYNC_BASE + batch.batch;
            let fenced = run.takeover.as_ref().is_some_and(|takeover| takeover.fenced_batches.contains(&batch.batch));
            events.push((stored, 3, Event::SyncStart { sync, file: registration, batch: Some(batch.batch), units: Vec::new() }));
            let error = fenced.then_some(SyncError::Fenced);
            events.push((checked, 3, Event::SyncEnd { sync, file: registration, ok: !fenced, error }));
        }
        if let Some(acked) = batch.acked {
            events.push((acked, 4, WRITES_FROM_ONE.ack(Tickets { first: Ticket(batch.first_record), count: batch.records })));
        }
    }
    if let Some(takeover) = &run.takeover {
        let text = format!(
            "node B claims epoch {} (node A had {}); B's session starts at offset {}; sent at {} ns, listed at {} ns",
            takeover.new_epoch, takeover.old_epoch, takeover.new_session_start, takeover.at.0, takeover.listed_at.0
        );
        events.push((takeover.claimed_at, 5, Event::Note { text }));
    }
    crate::sort::sort_by_key(&mut events, |(at, order, _)| (*at, *order));
    for (at, _, event) in events {
        trace.push(at, event);
    }
    trace
}

/// The numbers of [`to_trace`]'s takeover note: the new and old epochs, the new
/// session's start offset, when the takeover began and when B listed.
type TakeoverNote = (u64, u64, u64, Nanos, Nanos);

/// The numbers of [`to_trace`]'s takeover note.
fn parse_takeover_note(text: &str) -> Option<TakeoverNote> {
    let rest = text.strip_prefix("node B claims epoch ")?;
    let (new_epoch, rest) = rest.split_once(" (node A had ")?;
    let (old_epoch, rest) = rest.split_once("); B's session starts at offset ")?;
    let (start, rest) = rest.split_once("; sent at ")?;
    let (at, rest) = rest.split_once(" ns, listed at ")?;
    let listed = rest.strip_suffix(" ns")?;
    Some((new_epoch.parse().ok()?, old_epoch.parse().ok()?, start.parse().ok()?, Nanos(at.parse().ok()?), Nanos(listed.parse().ok()?)))
}

/// Why a trace is not a remote run's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FromTraceError {
    /// The scenario is not `remote-s3` or `remote-postgres`.
    NotRemote { scenario: String },
    /// A sync or an acknowledgement names a batch no `batch_formed` event made.
    UnknownBatch { batch: u64 },
}

impl core::fmt::Display for FromTraceError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            FromTraceError::NotRemote { scenario } => {
                write!(f, "scenario '{scenario}' is not a run of walab sim remote (remote-s3 or remote-postgres)")
            }
            FromTraceError::UnknownBatch { batch } => write!(f, "batch {batch} is used before a batch_formed event made it"),
        }
    }
}

/// Reads a trace written by [`to_trace`] back into a run: batches, records, the takeover.
/// What the trace does not carry is left out: the Postgres trims and ring geometry (the
/// default geometry stands in), retries and ring waits.
pub fn from_trace(trace: &Trace) -> Result<RemoteRun, FromTraceError> {
    let backend = match trace.scenario.as_str() {
        "remote-s3" => RemoteBackend::S3,
        "remote-postgres" => RemoteBackend::Postgres,
        other => return Err(FromTraceError::NotRemote { scenario: other.to_string() }),
    };
    let mut records: Vec<RecordRow> = trace
        .writes
        .iter()
        .map(|write| RecordRow { record: write.id, arrived: Some(write.arrival), acked: None, batch: None })
        .collect();
    crate::sort::sort_by_key(&mut records, |record| record.record);
    let mut batches: Vec<BatchRow> = Vec::new();
    let mut note = None;
    let mut fenced_batches = Vec::new();
    let index_of = |batches: &[BatchRow], batch: u64| batches.iter().position(|row| row.batch == batch).ok_or(FromTraceError::UnknownBatch { batch });
    for event in &trace.events {
        let at = event.at;
        match &event.event {
            Event::BatchFormed { batch, segment, first_write, writes, offset, bytes } => batches.push(BatchRow {
                records: *writes,
                first_record: *first_write,
                first_offset: *offset,
                end_offset: offset + bytes,
                generation: (backend == RemoteBackend::Postgres).then_some(*segment),
                ..BatchRow::formed(*batch, at)
            }),
            Event::SyncStart { sync, .. } if *sync < FENCE_SYNC_BASE => {
                let index = index_of(&batches, *sync)?;
                batches[index].sent = Some(at);
                batches[index].request = Some(index as u64 + 1);
            }
            Event::SyncEnd { sync, ok, error, .. } => {
                let fence = *sync >= FENCE_SYNC_BASE;
                let index = index_of(&batches, if fence { sync - FENCE_SYNC_BASE } else { *sync })?;
                let row = &mut batches[index];
                if fence {
                    row.checked = Some(at);
                    if *error == Some(SyncError::Fenced) {
                        fenced_batches.push(row.batch);
                    }
                } else {
                    row.answered = Some(at);
                    if *ok {
                        row.stored = Some(at);
                    } else if *error == Some(SyncError::Fenced) {
                        row.outcome = Some(BatchOutcome::Fenced);
                        fenced_batches.push(row.batch);
                    }
                }
            }
            Event::Ack { first_write, writes } => {
                for record in records.iter_mut().filter(|r| (*first_write..first_write + writes).contains(&r.record)) {
                    record.acked = Some(at);
                }
                for row in batches.iter_mut().filter(|row| row.first_record >= *first_write && row.first_record < first_write + writes) {
                    row.acked = Some(at);
                }
            }
            Event::Note { text } => note = parse_takeover_note(text).map(|parsed| (at, parsed)),
            _ => {}
        }
    }
    for row in &mut batches {
        for record in records.iter_mut().filter(|r| (row.first_record..row.first_record + row.records).contains(&r.record)) {
            record.batch = Some(row.batch);
        }
        if row.outcome.is_none() {
            row.outcome = Some(match (row.acked, row.stored) {
                (Some(_), _) => BatchOutcome::Acked,
                (None, Some(_)) => BatchOutcome::StoredNotAcked,
                (None, None) => BatchOutcome::Failed,
            });
        }
    }
    let records_acked = records.iter().filter(|record| record.acked.is_some()).count() as u64;
    let takeover = note.map(|(claimed_at, parsed)| takeover_report(backend, &batches, claimed_at, parsed, records_acked, &fenced_batches));
    let puts = batches.iter().filter(|row| row.sent.is_some()).count() as u64;
    let fence_checks = batches.iter().filter(|row| row.checked.is_some()).count() as u64;
    let end = trace.events.last().map_or(Nanos::ZERO, |event| event.at);
    Ok(RemoteRun {
        backend,
        batches,
        records,
        puts,
        fence_checks,
        records_acked,
        takeover,
        trims: Vec::new(),
        ring: RingGeometry::default(),
        end,
    })
}

/// The takeover a trace's note describes (`parsed`: the new and old epochs, the new
/// session's start, when it began and when B listed), with what B's recovery keeps by the
/// core's own plan.
fn takeover_report(
    backend: RemoteBackend,
    batches: &[BatchRow],
    claimed_at: Nanos,
    (new_epoch, old_epoch, start, at, listed_at): TakeoverNote,
    records_acked: u64,
    fenced_batches: &[u64],
) -> TakeoverReport {
    let mut report = TakeoverReport {
        at,
        claimed_at,
        listed_at,
        old_epoch,
        new_epoch,
        acked_by_old: records_acked,
        recovered_by_new: 0,
        stragglers_ignored: 0,
        new_session_start: start,
        fenced_batches: fenced_batches.to_vec(),
        ignored: Vec::new(),
        recovered_records: Vec::new(),
        already_uploaded: 0,
    };
    let stored: Vec<&BatchRow> = batches.iter().filter(|row| row.stored.is_some()).collect();
    match backend {
        RemoteBackend::S3 => {
            // What a recovery after the takeover keeps, by the core's own plan.
            let listed: Vec<WalObject> = stored.iter().map(|row| WalObject { epoch: row.epoch, start: row.first_offset, end: row.end_offset }).collect();
            let sessions = [
                Session { epoch: old_epoch, start_offset: 0, first_seq: 1 },
                Session { epoch: new_epoch, start_offset: start, first_seq: 1 },
            ];
            let plan = plan_chain(&listed, &sessions);
            report.recovered_records = plan
                .chain
                .iter()
                .filter_map(|object| stored.iter().find(|row| row.first_offset == object.start))
                .flat_map(|row| row.first_record..row.first_record + row.records)
                .collect();
            report.stragglers_ignored = plan.ignored.iter().filter(|(object, _)| object.epoch == old_epoch).count() as u64;
            report.ignored = plan.ignored;
        }
        RemoteBackend::Postgres => {
            // The committed rows, in log order up to the first gap.
            let mut end = 0;
            for row in batches {
                if row.stored.is_none() || row.first_offset < end {
                    break;
                }
                end = row.end_offset;
                report.recovered_records.extend(row.first_record..row.first_record + row.records);
            }
        }
    }
    report.recovered_by_new = report.recovered_records.len() as u64;
    report
}
