//! A [`Trace`] read back as spans to draw: each write's arrival and acknowledgement,
//! each batch's sync. Works for any trace, simulated or recorded by the native binary
//! and dropped onto the page, because it reads only the trace's events.


use crate::sorted_map::SortedMap;
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
    /// When the batch that carries it started (its sync, or its hand-off to the page
    /// cache), kept with the write so its phase needs no search.
    pub batch_start: Option<Nanos>,
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
    /// Where the time axis starts: 0 for a whole run, the window's start for a window.
    pub start: Nanos,
    pub end: Nanos,
    pub power_cut: Option<Nanos>,
}

/// Write id -> index into the writes, sorted by id: every lookup is a binary search.
struct WriteIndex(Vec<(u64, usize)>);

impl WriteIndex {
    fn new(writes: &[WriteSpan]) -> WriteIndex {
        let mut order: Vec<(u64, usize)> = writes.iter().enumerate().map(|(index, write)| (write.id, index)).collect();
        walab_core::sort::sort(&mut order);
        WriteIndex(order)
    }


    /// The indices of writes `first ..` (`count` of them) that the trace lists.
    fn range(&self, first: u64, count: u64) -> impl Iterator<Item = usize> + '_ {
        let from = self.0.partition_point(|(id, _)| *id < first);
        self.0[from..].iter().take_while(move |(id, _)| *id < first.saturating_add(count)).map(|(_, index)| *index)
    }
}

impl TraceSpans {
    pub fn from_trace(trace: &Trace) -> TraceSpans {
        let mut writes: Vec<WriteSpan> = trace
            .writes
            .iter()
            .map(|write| WriteSpan { id: write.id, arrival: write.arrival, batch: None, ack: None, failed: None, batch_start: None })
            .collect();
        let mut batches: Vec<BatchSpan> = Vec::new();
        let mut power_cut = None;
        // Sync number -> the span it belongs to (a batch's, or a background sync's own).
        let mut span_of_sync: SortedMap<u64, usize> = SortedMap::default();
        let mut synced: Vec<bool> = Vec::new();
        // A log batch's number -> its latest span (a sync names the batch it carries).
        let mut last_log_batch: SortedMap<u64, usize> = SortedMap::default();
        let index = WriteIndex::new(&writes);
        for event in &trace.events {
            match &event.event {
                Event::BatchFormed { batch, first_write, writes: count, bytes, segment, .. } => {
                    for at in index.range(*first_write, *count) {
                        writes[at].batch = Some(*batch);
                        writes[at].batch_start = Some(event.at);
                    }
                    last_log_batch.put(*batch, batches.len());
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
                    if let Some(at) = last_log_batch.get(*batch).copied().filter(|at| batches[*at].first_write != 0) {
                        span_of_sync.put(*sync, at);
                        synced[at] = true;
                    }
                }
                Event::SyncStart { sync, file, batch: None, .. } => {
                    span_of_sync.put(*sync, batches.len());
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
                    if let Some(batch) = span_of_sync.get(*sync).and_then(|index| batches.get_mut(*index)) {
                        batch.end = Some(event.at);
                        batch.ok &= *ok;
                    }
                }
                Event::Ack { first_write, writes: count } => {
                    for at in index.range(*first_write, *count) {
                        writes[at].ack.get_or_insert(event.at);
                    }
                }
                Event::Fail { first_write, writes: count, .. } => {
                    for at in index.range(*first_write, *count) {
                        writes[at].failed.get_or_insert(event.at);
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
        TraceSpans { writes, batches, start: Nanos::ZERO, end, power_cut }
    }

    /// Writes `first ..` (`count` of them, by index) and the syncs of their time, as spans
    /// of their own whose axis runs from the first one's arrival to the last thing they
    /// show: the zoomed window of a long run.
    pub fn window(&self, first: usize, count: usize) -> TraceSpans {
        let first = first.min(self.writes.len());
        let writes: Vec<WriteSpan> = self.writes[first..(first + count).min(self.writes.len())].to_vec();
        let start = writes.first().map_or(self.start, |write| write.arrival);
        let last_arrival = writes.last().map_or(start, |write| write.arrival);
        let ends = writes.iter().filter_map(|write| write.ack.or(write.failed)).max().unwrap_or(last_arrival).max(last_arrival);
        let end = ends.min(self.end).max(start);
        // Batches are in the order they started: the ones that overlap [start, end].
        let from = self.batches.partition_point(|batch| batch.start < start);
        let mut batches: Vec<BatchSpan> = self.batches[..from].iter().rev().take(64).filter(|batch| batch.end.is_none_or(|e| e >= start)).copied().collect();
        batches.reverse();
        batches.extend(self.batches[from..].iter().take_while(|batch| batch.start <= end).copied());
        TraceSpans { writes, batches, start, end, power_cut: self.power_cut.filter(|cut| *cut >= start && *cut <= end) }
    }

    /// The index of the first write that arrives after `t` (how many have arrived by `t`).
    pub fn arrived_by(&self, t: Nanos) -> usize {
        self.writes.partition_point(|write| write.arrival <= t)
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
        let syncing = write.batch_start.is_some_and(|start| start <= t);
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

#[cfg(test)]
mod tests {
    use super::*;
    use walab_core::group_commit::{Config, Policy};
    use walab_core::sim::commit;

    fn tiny() -> TraceSpans {
        let (setup, arrivals) = commit::tiny_store_setup(Config::file(Policy::Group));
        TraceSpans::from_trace(&commit::run(&setup, &arrivals).unwrap().trace.unwrap())
    }

    #[test]
    fn a_window_has_its_writes_its_syncs_and_its_own_axis() {
        let spans = tiny();
        let window = spans.window(5, 10);
        assert_eq!(window.writes.iter().map(|write| write.id).collect::<Vec<_>>(), (6..16).collect::<Vec<_>>());
        assert_eq!(window.start, spans.writes[5].arrival);
        assert!(window.end >= window.writes.iter().filter_map(|write| write.ack).max().unwrap().min(spans.end));
        // Every batch that carried one of its writes is in it, and each write's phase is
        // the one it has in the whole run.
        for (at, write) in window.writes.iter().enumerate() {
            assert!(window.batches.iter().any(|batch| Some(batch.id) == write.batch && batch.first_write != 0), "write {}", write.id);
            for t in [window.start, write.arrival, write.ack.unwrap(), window.end] {
                assert_eq!(window.phase_at(at, t), spans.phase_at(at + 5, t), "write {} at {t:?}", write.id);
            }
        }
        assert_eq!(spans.arrived_by(spans.writes[5].arrival), spans.writes.iter().filter(|write| write.arrival <= spans.writes[5].arrival).count());
    }
}

