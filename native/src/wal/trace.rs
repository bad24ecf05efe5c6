//! The driver's trace, in the core's [`walab_core::trace::Trace`] format.
//!
//! A real run records the same kinds of facts the simulator does (a write arrives, a
//! batch forms, its bytes are written, its sync starts and ends, writers are told OK),
//! stamped with the driver's monotonic clock, so the browser can open a run against this
//! disk and animate it beside a simulated one. Write ids count from 1 within the run
//! (write `id` is the record with seq `first_seq + id - 1`). A real device does not say
//! which unit reached the media when, so a real trace has no `unit_persisted` events:
//! a sync's units are all durable when its `sync_end` says ok.

use std::collections::BTreeMap;

use walab_core::group_commit::{Batch, BatchId, SyncError, Tickets};
use walab_core::time::Nanos;
use walab_core::trace::{Event, FileKind, Trace, TraceWrite};

/// The unit a real trace draws files in: a 4 KiB page.
pub const REAL_UNIT_BYTES: u64 = 4096;

/// Builds a [`Trace`] as the driver runs.
pub struct TraceRecorder {
    trace: Trace,
    segment_bytes: u64,
    first_seq: u64,
    files: BTreeMap<u64, u32>,
    batch_files: BTreeMap<BatchId, u32>,
}

impl TraceRecorder {
    pub fn new(scenario: &str, policy: &str, first_seq: u64, segment_bytes: u64, events_max: usize) -> TraceRecorder {
        let mut trace = Trace::new(scenario, policy, REAL_UNIT_BYTES as u32);
        trace.events_max = events_max;
        TraceRecorder { trace, segment_bytes, first_seq, files: BTreeMap::new(), batch_files: BTreeMap::new() }
    }

    fn write_id(&self, seq: u64) -> u64 {
        seq + 1 - self.first_seq
    }

    fn file(&mut self, at: Nanos, segment: u64) -> u32 {
        if let Some(&index) = self.files.get(&segment) {
            return index;
        }
        let index = self.trace.add_file(&format!("wal-{segment}"), FileKind::Log, self.segment_bytes.min(u64::MAX / 2));
        self.files.insert(segment, index);
        self.trace.push(at, Event::Create { file: index });
        index
    }

    pub fn arrive(&mut self, at: Nanos, seq: u64, segment: u64, record_bytes: u64, key: &[u8]) {
        if self.trace.truncated {
            return;
        }
        let id = self.write_id(seq);
        self.file(at, segment);
        self.trace.writes.push(TraceWrite {
            id,
            arrival: at,
            segment,
            record_bytes,
            op: Some("put".to_string()),
            key: Some(String::from_utf8_lossy(key).into_owned()),
            value: None,
        });
        self.trace.push(at, Event::Arrive { write: id });
    }

    pub fn persist_start(&mut self, at: Nanos, batch: &Batch) {
        let file = self.file(at, batch.segment);
        self.batch_files.insert(batch.id, file);
        let bytes = batch.bytes.len() as u64;
        self.trace.push(
            at,
            Event::BatchFormed {
                batch: batch.id.0,
                segment: batch.segment,
                first_write: self.write_id(batch.tickets.first.0),
                writes: batch.tickets.count,
                offset: batch.offset,
                bytes,
            },
        );
        self.trace.push(at, Event::Write { file, offset: batch.offset, bytes });
        let units: Vec<u32> = if bytes == 0 {
            Vec::new()
        } else {
            (batch.offset / REAL_UNIT_BYTES..=(batch.offset + bytes - 1) / REAL_UNIT_BYTES).map(|u| u as u32).collect()
        };
        self.trace.push(at, Event::SyncStart { sync: batch.id.0, file, batch: Some(batch.id.0), units });
    }

    pub fn persist_end(&mut self, at: Nanos, batch: BatchId, result: Result<(), SyncError>) {
        let file = self.batch_files.remove(&batch).unwrap_or(0);
        self.trace.push(at, Event::SyncEnd { sync: batch.0, file, ok: result.is_ok(), error: result.err() });
    }

    pub fn ack(&mut self, at: Nanos, tickets: Tickets) {
        let first_write = self.write_id(tickets.first.0);
        self.trace.push(at, Event::Ack { first_write, writes: tickets.count });
    }

    pub fn fail(&mut self, at: Nanos, tickets: Tickets, error: SyncError) {
        let first_write = self.write_id(tickets.first.0);
        self.trace.push(at, Event::Fail { first_write, writes: tickets.count, error });
    }

    pub fn delete(&mut self, at: Nanos, segment: u64) {
        if let Some(&file) = self.files.get(&segment) {
            self.trace.push(at, Event::Delete { file });
        }
    }

    pub fn reader_confirmed(&mut self, at: Nanos, reader: &str, seq: u64) {
        self.trace.push(at, Event::ReaderConfirmed { reader: reader.to_string(), seq });
    }

    pub fn finish(self) -> Trace {
        self.trace
    }
}
