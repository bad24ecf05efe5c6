//! The driver's trace, in the core's [`walab_core::trace::Trace`] format, and the live
//! feed (`walab serve`'s `GET /trace`).
//!
//! A real run records the same kinds of facts the simulator does (a write arrives, a
//! batch forms, its bytes are written, its sync starts and ends, writers are told OK),
//! stamped with the driver's monotonic clock, so the browser can open a run against this
//! disk and animate it beside a simulated one. The facts of the log itself (arrivals,
//! batches, answers, confirmations) and the numbering of its writes are the session's
//! ([`walab_core::session::trace`]); this module adds what only the driver knows: the
//! files it created, the bytes it wrote, the syncs it ran. A real device does not say
//! which unit reached the media when, so a real trace has no `unit_persisted` events: a
//! sync's units are all durable when its `sync_end` says ok.
//!
//! Both outputs are fed from the same calls ([`Tracer`]): the trace file draws each
//! segment as a file of 4 KiB units; the live feed names one file, the WAL, whatever the
//! storage, and makes nothing while nobody listens.

use std::collections::BTreeMap;
use std::sync::Arc;

use walab_core::group_commit::{Batch, BatchId, SyncError};
use walab_core::session::Appended;
use walab_core::time::Nanos;
use walab_core::trace::{Event, FileKind, Trace, TraceWrite};

use super::live::{LiveTrace, WAL_FILE};

/// The unit a real trace draws files in: a 4 KiB page.
pub const REAL_UNIT_BYTES: u64 = 4096;

/// Builds a [`Trace`] as the driver runs.
pub struct TraceRecorder {
    trace: Trace,
    segment_bytes: u64,
    files: BTreeMap<u64, u32>,
    batch_files: BTreeMap<BatchId, u32>,
}

impl TraceRecorder {
    pub fn new(scenario: &str, policy: &str, segment_bytes: u64, events_max: usize) -> TraceRecorder {
        let mut trace = Trace::new(scenario, policy, REAL_UNIT_BYTES as u32);
        trace.events_max = events_max;
        TraceRecorder { trace, segment_bytes, files: BTreeMap::new(), batch_files: BTreeMap::new() }
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

    /// A write the session took: its row in the trace's writes (the session's `Arrive`
    /// follows).
    pub fn arrival(&mut self, at: Nanos, appended: &Appended, record_bytes: u64, key: &[u8]) {
        if self.trace.truncated {
            return;
        }
        self.file(at, appended.segment);
        self.trace.writes.push(TraceWrite {
            id: appended.write,
            arrival: at,
            segment: appended.segment,
            record_bytes,
            op: Some("put".to_string()),
            key: Some(String::from_utf8_lossy(key).into_owned()),
            value: None,
        });
    }

    /// An event of the session's, as it made it.
    pub fn event(&mut self, at: Nanos, event: Event) {
        self.trace.push(at, event);
    }

    /// The driver writes a batch and starts its sync (after the session's `BatchFormed`).
    pub fn persist_start(&mut self, at: Nanos, batch: &Batch) {
        let file = self.file(at, batch.segment);
        self.batch_files.insert(batch.id, file);
        let bytes = batch.bytes.len() as u64;
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

    pub fn delete(&mut self, at: Nanos, segment: u64) {
        if let Some(&file) = self.files.get(&segment) {
            self.trace.push(at, Event::Delete { file });
        }
    }

    pub fn finish(self) -> Trace {
        self.trace
    }
}

/// Where the driver's trace goes: a trace file, the live feed, both or neither.
pub(super) struct Tracer {
    pub(super) recorder: Option<TraceRecorder>,
    pub(super) live: Option<Arc<LiveTrace>>,
}

impl Tracer {
    /// Whether anything would be recorded now (the session makes events only then).
    pub(super) fn on(&self) -> bool {
        self.recorder.is_some() || self.live.as_ref().is_some_and(|live| live.listening())
    }

    fn live(&self, make: impl FnOnce() -> Vec<Event>) {
        if let Some(live) = &self.live {
            live.emit_with(make);
        }
    }

    pub(super) fn arrival(&mut self, at: Nanos, appended: &Appended, record_bytes: u64, key: &[u8]) {
        if let Some(recorder) = &mut self.recorder {
            recorder.arrival(at, appended, record_bytes, key);
        }
    }

    /// An event the session made.
    pub(super) fn event(&mut self, at: Nanos, event: Event) {
        if let Some(live) = &self.live {
            live.emit_with(|| vec![event.clone()]);
        }
        if let Some(recorder) = &mut self.recorder {
            recorder.event(at, event);
        }
    }

    pub(super) fn persist_started(&mut self, at: Nanos, batch: &Batch) {
        if let Some(recorder) = &mut self.recorder {
            recorder.persist_start(at, batch);
        }
        self.live(|| vec![Event::SyncStart { sync: batch.id.0, file: WAL_FILE, batch: Some(batch.id.0), units: Vec::new() }]);
    }

    pub(super) fn persist_ended(&mut self, at: Nanos, batch: BatchId, result: Result<(), SyncError>) {
        if let Some(recorder) = &mut self.recorder {
            recorder.persist_end(at, batch, result);
        }
        self.live(|| vec![Event::SyncEnd { sync: batch.0, file: WAL_FILE, ok: result.is_ok(), error: result.err() }]);
    }

    /// Everything consumers and readers need is confirmed through `seq` (the live feed's
    /// "may trim").
    pub(super) fn confirmed(&mut self, seq: u64) {
        self.live(|| vec![walab_core::session::trace::confirmed("consumer", seq)]);
    }

    pub(super) fn removed(&mut self, at: Nanos, segments: &[u64]) {
        if let Some(recorder) = &mut self.recorder {
            for &segment in segments {
                recorder.delete(at, segment);
            }
        }
        self.live(|| {
            let (first, last) = (segments[0], segments[segments.len() - 1]);
            let text = match first == last {
                true => format!("WAL segment {first} removed: every record in it is confirmed"),
                false => format!("WAL segments {first} to {last} removed: every record in them is confirmed"),
            };
            vec![Event::Note { text }]
        });
    }

    pub(super) fn finish(&mut self) -> Option<Trace> {
        self.recorder.take().map(TraceRecorder::finish)
    }
}
