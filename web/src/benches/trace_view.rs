//! A [`Trace`] read back as spans to draw: each write's arrival and acknowledgement,
//! each batch's sync. Works for any trace, simulated or recorded by the native binary
//! and dropped onto the page, because it reads only the trace's events.

use walab_core::time::Nanos;
use walab_core::trace::{Event, Trace};

/// One write's life in a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteSpan {
    pub id: u64,
    pub arrival: Nanos,
    pub batch: Option<u64>,
    pub ack: Option<Nanos>,
    pub failed: Option<Nanos>,
}

/// One batch's sync (or a background sync, `first_write` 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchSpan {
    pub id: u64,
    pub file: u32,
    pub first_write: u64,
    pub writes: u64,
    pub bytes: u64,
    pub start: Nanos,
    pub end: Option<Nanos>,
    pub ok: bool,
}

/// What a write is doing at an instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    NotYet,
    Queued,
    Syncing,
    Acked,
    Failed,
}

impl Phase {
    pub fn class(self) -> &'static str {
        match self {
            Phase::NotYet => "not-yet",
            Phase::Queued => "queued",
            Phase::Syncing => "syncing",
            Phase::Acked => "acked",
            Phase::Failed => "failed",
        }
    }
}

/// The spans of a trace, and where it ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceSpans {
    pub writes: Vec<WriteSpan>,
    pub batches: Vec<BatchSpan>,
    pub end: Nanos,
    pub power_cut: Option<Nanos>,
}

impl TraceSpans {
    pub fn from_trace(trace: &Trace) -> TraceSpans {
        let mut writes: Vec<WriteSpan> = trace
            .writes
            .iter()
            .map(|write| WriteSpan { id: write.id, arrival: write.arrival, batch: None, ack: None, failed: None })
            .collect();
        let mut batches: Vec<BatchSpan> = Vec::new();
        let mut power_cut = None;
        // Sync number -> the span it belongs to (a batch's, or a background sync's own).
        let mut span_of_sync: std::collections::BTreeMap<u64, usize> = std::collections::BTreeMap::new();
        let mut synced: Vec<bool> = Vec::new();
        let index_of = |writes: &Vec<WriteSpan>, id: u64| writes.iter().position(|write| write.id == id);
        for event in &trace.events {
            match &event.event {
                Event::BatchFormed { batch, first_write, writes: count, bytes, segment, .. } => {
                    for id in *first_write..first_write + count {
                        if let Some(index) = index_of(&writes, id) {
                            writes[index].batch = Some(*batch);
                        }
                    }
                    batches.push(BatchSpan {
                        id: *batch,
                        file: segment.saturating_sub(1) as u32,
                        first_write: *first_write,
                        writes: *count,
                        bytes: *bytes,
                        start: event.at,
                        end: None,
                        ok: true,
                    });
                    synced.push(false);
                }
                Event::SyncStart { sync, batch: Some(batch), .. } => {
                    if let Some(index) = batches.iter().rposition(|span| span.id == *batch && span.first_write != 0) {
                        span_of_sync.insert(*sync, index);
                        synced[index] = true;
                    }
                }
                Event::SyncStart { sync, file, batch: None, .. } => {
                    span_of_sync.insert(*sync, batches.len());
                    synced.push(true);
                    batches.push(BatchSpan {
                    id: *sync,
                    file: *file,
                    first_write: 0,
                    writes: 0,
                    bytes: 0,
                    start: event.at,
                    end: None,
                    ok: true,
                    });
                }
                Event::SyncEnd { sync, ok, .. } => {
                    // A retried sync extends its batch's bar; a failure stays marked.
                    if let Some(batch) = span_of_sync.get(sync).and_then(|index| batches.get_mut(*index)) {
                        batch.end = Some(event.at);
                        batch.ok &= *ok;
                    }
                }
                Event::Ack { first_write, writes: count } => {
                    for id in *first_write..first_write + count {
                        if let Some(index) = index_of(&writes, id) {
                            writes[index].ack.get_or_insert(event.at);
                        }
                    }
                }
                Event::Fail { first_write, writes: count, .. } => {
                    for id in *first_write..first_write + count {
                        if let Some(index) = index_of(&writes, id) {
                            writes[index].failed.get_or_insert(event.at);
                        }
                    }
                }
                Event::PowerCut => power_cut = Some(event.at),
                _ => {}
            }
        }
        // A batch handed to the page cache with no sync of its own (no-sync, periodic) is
        // an instant, not a sync that never ends.
        for (batch, synced) in batches.iter_mut().zip(&synced) {
            if !synced && batch.end.is_none() {
                batch.end = Some(batch.start);
            }
        }
        let end = trace.events.last().map(|event| event.at).unwrap_or(Nanos::ZERO);
        TraceSpans { writes, batches, end, power_cut }
    }

    /// What write `index` (into `writes`) is doing at `t`.
    pub fn phase_at(&self, index: usize, t: Nanos) -> Phase {
        let write = &self.writes[index];
        if write.arrival > t {
            return Phase::NotYet;
        }
        if write.ack.is_some_and(|ack| ack <= t) {
            return Phase::Acked;
        }
        if write.failed.is_some_and(|failed| failed <= t) {
            return Phase::Failed;
        }
        let syncing = write
            .batch
            .and_then(|id| self.batches.iter().find(|batch| batch.id == id && batch.first_write != 0))
            .is_some_and(|batch| batch.start <= t);
        if syncing {
            Phase::Syncing
        } else {
            Phase::Queued
        }
    }

    /// The instants worth stepping to: arrivals, batch starts and ends, acks.
    pub fn marks(&self) -> Vec<Nanos> {
        let mut marks: Vec<Nanos> = self.writes.iter().map(|write| write.arrival).collect();
        marks.extend(self.writes.iter().filter_map(|write| write.ack));
        for batch in &self.batches {
            marks.push(batch.start);
            marks.extend(batch.end);
        }
        marks.extend(self.power_cut);
        marks
    }
}
