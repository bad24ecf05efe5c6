//! A remote run as the lab's [`Trace`], so `walab sim remote --trace` files play in the
//! browser's lanes like every other run: each bulk is a batch whose "sync" is its PUT or
//! INSERT, from the request going out to the object stored or the row committed.

use super::{BulkOutcome, RemoteRun};
use crate::group_commit::SyncError;
use crate::time::Nanos;
use crate::trace::{Event, FileKind, Trace, TraceWrite};

/// The run's trace: arrivals, bulks formed, requests out and back, acknowledgements,
/// failures, and the takeover as a note.
pub fn to_trace(run: &RemoteRun, policy: &str) -> Trace {
    let mut trace = Trace::new(&format!("remote-{}", run.backend.name()), policy, 0);
    let file = trace.add_file("wal", FileKind::Log, 0);
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
        events.push((arrived, 0, Event::Arrive { write: record.record }));
    }
    for bulk in &run.bulks {
        events.push((
            bulk.formed,
            1,
            Event::BatchFormed {
                batch: bulk.bulk,
                segment: bulk.generation.unwrap_or(1),
                first_write: bulk.first_record,
                writes: bulk.records,
                offset: bulk.first_offset,
                bytes: bulk.end_offset - bulk.first_offset,
            },
        ));
        if let Some(sent) = bulk.sent {
            events.push((sent, 2, Event::SyncStart { sync: bulk.bulk, file, batch: Some(bulk.bulk), units: Vec::new() }));
        }
        let (ended, ok, error) = match (bulk.stored, bulk.outcome) {
            (Some(stored), _) => (Some(stored), true, None),
            (None, Some(BulkOutcome::Fenced)) => (bulk.sent, false, Some(SyncError::Fenced)),
            (None, _) => (bulk.sent, false, Some(SyncError::Unavailable)),
        };
        if let Some(ended) = ended {
            events.push((ended, 3, Event::SyncEnd { sync: bulk.bulk, file, ok, error }));
        }
        if let Some(acked) = bulk.acked {
            events.push((acked, 4, Event::Ack { first_write: bulk.first_record, writes: bulk.records }));
        }
    }
    if let Some(takeover) = &run.takeover {
        let text = format!(
            "node B claims epoch {} (node A had {}); B's session starts at offset {}",
            takeover.new_epoch, takeover.old_epoch, takeover.new_session_start
        );
        events.push((takeover.claimed_at, 5, Event::Note { text }));
    }
    events.sort_by_key(|(at, order, _)| (*at, *order));
    for (at, _, event) in events {
        trace.push(at, event);
    }
    trace
}
