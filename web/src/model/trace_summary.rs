//! A long recorded run told in a few numbers, computed from its trace's spans: how many
//! syncs per second it made, how many writes each one carried, how long a writer waited
//! for its OK, and the moment it was busiest.
//!
//! A recording of `walab bench` holds a hundred thousand writes: one lane each would be
//! meaningless, so the lanes show a window of a few hundred, and this summary says what
//! the whole run did. Everything here is one pass over the spans and one sort of the
//! waits.

use walab_core::time::Nanos;

use super::trace_view::TraceSpans;

/// A histogram bucket: its label and how many fell in it.
pub type Bucket = (String, usize);

/// The slice of the run with the most acknowledgements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Busiest {
    pub start: Nanos,
    pub end: Nanos,
    pub acked: usize,
}

/// What a whole run did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunSummary {
    /// From the first arrival to the trace's last event.
    pub duration: Nanos,
    pub acked: usize,
    pub failed: usize,
    /// Writes that arrived but have no OK and no failure in the trace.
    pub unanswered: usize,
    /// The log batches that were synced (or handed on), each one sync.
    pub syncs: usize,
    /// Log batches by how many writes each carried.
    pub batch_sizes: Vec<Bucket>,
    /// Acknowledged writes by their wait (arrival to OK).
    pub waits: Vec<Bucket>,
    pub wait_p50: Nanos,
    pub wait_p99: Nanos,
    pub wait_max: Nanos,
    pub busiest: Option<Busiest>,
    /// Writes told OK in each slice of the run (the strip the window moves on), the
    /// slices `slice` long from `first`, the first arrival.
    pub slices: Vec<usize>,
    pub slice: Nanos,
    pub first: Nanos,
}

/// Batch sizes' upper bounds (the last bucket is open).
const BATCH_BOUNDS: [u64; 8] = [1, 2, 4, 8, 16, 32, 64, u64::MAX];
/// Waits' upper bounds in microseconds (the last bucket is open).
const WAIT_BOUNDS_US: [u64; 10] = [100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, u64::MAX];
/// The run is cut into this many slices to find its busiest moment.
const SLICES: u64 = 100;

fn per_second(count: usize, duration: Nanos) -> f64 {
    // Display-only arithmetic: a rate shown, not a decision.
    count as f64 / (duration.0.max(1) as f64 / 1e9)
}

impl RunSummary {
    pub fn of(spans: &TraceSpans) -> RunSummary {
        let first = spans.writes.iter().map(|write| write.arrival).min().unwrap_or(Nanos::ZERO);
        let duration = Nanos(spans.end.0.saturating_sub(first.0));
        let mut waits: Vec<Nanos> = spans.writes.iter().filter_map(|write| write.ack.map(|ack| Nanos(ack.0.saturating_sub(write.arrival.0)))).collect();
        walab_core::sort::sort(&mut waits);
        let failed = spans.writes.iter().filter(|write| write.ack.is_none() && write.failed.is_some()).count();
        let quantile = |q: usize| nearest_rank(&waits, q);
        let log_batches: Vec<u64> = spans.batches.iter().filter(|batch| batch.first_write != 0).map(|batch| batch.writes).collect();
        let mut batch_sizes = vec![0usize; BATCH_BOUNDS.len()];
        for size in &log_batches {
            batch_sizes[BATCH_BOUNDS.iter().position(|bound| size <= bound).unwrap_or(BATCH_BOUNDS.len() - 1)] += 1;
        }
        let mut wait_counts = vec![0usize; WAIT_BOUNDS_US.len()];
        for wait in &waits {
            let us = wait.0 / 1_000;
            wait_counts[WAIT_BOUNDS_US.iter().position(|bound| us < *bound).unwrap_or(WAIT_BOUNDS_US.len() - 1)] += 1;
        }
        let (slices, slice) = acks_per_slice(spans, first, duration);
        RunSummary {
            duration,
            acked: waits.len(),
            failed,
            unanswered: spans.writes.len() - waits.len() - failed,
            syncs: log_batches.len(),
            batch_sizes: labelled(&batch_sizes, &BATCH_BOUNDS, batch_label),
            waits: labelled(&wait_counts, &WAIT_BOUNDS_US, wait_label),
            wait_p50: quantile(50),
            wait_p99: quantile(99),
            wait_max: waits.last().copied().unwrap_or(Nanos::ZERO),
            busiest: busiest(&slices, slice, first),
            slices,
            slice,
            first,
        }
    }

    pub fn syncs_per_s(&self) -> f64 {
        per_second(self.syncs, self.duration)
    }

    pub fn acked_per_s(&self) -> f64 {
        per_second(self.acked, self.duration)
    }

    /// The mean writes per sync.
    pub fn batch_mean(&self) -> f64 {
        self.acked as f64 / self.syncs.max(1) as f64
    }
}

/// The `percent`-th percentile of sorted waits by nearest rank, as walab's commands read
/// theirs: the smallest wait with at least that share of the waits at or below it.
fn nearest_rank(sorted: &[Nanos], percent: usize) -> Nanos {
    sorted.get((sorted.len() * percent).div_ceil(100).saturating_sub(1)).copied().unwrap_or(Nanos::ZERO)
}

/// The buckets with their labels, without the empty ones at either end.
fn labelled(counts: &[usize], bounds: &[u64], label: fn(&[u64], usize) -> String) -> Vec<Bucket> {
    let first = counts.iter().position(|count| *count > 0).unwrap_or(0);
    let last = counts.iter().rposition(|count| *count > 0).unwrap_or(0);
    (first..=last).map(|at| (label(bounds, at), counts[at])).collect()
}

fn batch_label(bounds: &[u64], at: usize) -> String {
    let low = if at == 0 { 1 } else { bounds[at - 1] + 1 };
    match bounds[at] {
        u64::MAX => format!("{low}+"),
        high if high == low => low.to_string(),
        high => format!("{low}-{high}"),
    }
}

fn wait_label(bounds: &[u64], at: usize) -> String {
    let ms = |us: u64| if us < 1_000 { format!("{:.1}", us as f64 / 1e3) } else { (us / 1_000).to_string() };
    match (at, bounds[at]) {
        (0, high) => format!("<{}", ms(high)),
        (_, u64::MAX) => format!("{}+", ms(bounds[at - 1])),
        (_, high) => format!("{}-{}", ms(bounds[at - 1]), ms(high)),
    }
}

/// Writes told OK in each slice of the run (a hundredth of it, at least a millisecond).
fn acks_per_slice(spans: &TraceSpans, first: Nanos, duration: Nanos) -> (Vec<usize>, Nanos) {
    let slice = (duration.0 / SLICES).max(1_000_000);
    let mut counts = vec![0usize; (duration.0 / slice + 1) as usize];
    let last = counts.len() as u64 - 1;
    for ack in spans.writes.iter().filter_map(|write| write.ack) {
        counts[(ack.0.saturating_sub(first.0) / slice).min(last) as usize] += 1;
    }
    (counts, Nanos(slice))
}

/// The slice in which most writes were told OK (the first, in a tie).
fn busiest(counts: &[usize], slice: Nanos, first: Nanos) -> Option<Busiest> {
    let (at, acked) = counts.iter().enumerate().max_by_key(|(at, count)| (**count, std::cmp::Reverse(*at)))?;
    let at = at as u64;
    (*acked > 0).then(|| Busiest { start: Nanos(first.0 + at * slice.0), end: Nanos(first.0 + (at + 1) * slice.0), acked: *acked })
}

#[cfg(test)]
mod tests {
    use super::*;
    use walab_core::group_commit::{Config, Policy};
    use walab_core::sim::commit;

    #[test]
    fn the_tiny_store_summarised() {
        let (setup, arrivals) = commit::tiny_store_setup(Config::file(Policy::Group));
        let trace = commit::run(&setup, &arrivals).unwrap().trace.unwrap();
        let spans = TraceSpans::from_trace(&trace);
        let summary = RunSummary::of(&spans);
        assert_eq!((summary.acked, summary.failed, summary.unanswered), (24, 0, 0));
        let syncs = spans.batches.iter().filter(|batch| batch.first_write != 0).count();
        assert_eq!(summary.syncs, syncs);
        assert_eq!(summary.batch_sizes.iter().map(|(_, count)| count).sum::<usize>(), syncs);
        assert_eq!(summary.waits.iter().map(|(_, count)| count).sum::<usize>(), 24);
        assert!(summary.wait_p50 <= summary.wait_p99 && summary.wait_p99 <= summary.wait_max);
        let longest = spans.writes.iter().map(|write| write.ack.unwrap().0 - write.arrival.0).max().unwrap();
        assert_eq!(summary.wait_max, Nanos(longest));
        let busiest = summary.busiest.unwrap();
        let in_it = spans.writes.iter().filter(|write| write.ack.is_some_and(|ack| ack >= busiest.start && ack < busiest.end)).count();
        assert_eq!(in_it, busiest.acked);
    }

    #[test]
    fn percentiles_are_nearest_ranks_as_the_cli_reads_them() {
        let waits: Vec<Nanos> = (1..=10).map(Nanos).collect();
        assert_eq!((nearest_rank(&waits, 50), nearest_rank(&waits, 99), nearest_rank(&waits, 100)), (Nanos(5), Nanos(10), Nanos(10)));
        let waits: Vec<Nanos> = (1..=1000).map(Nanos).collect();
        assert_eq!((nearest_rank(&waits, 50), nearest_rank(&waits, 99)), (Nanos(500), Nanos(990)));
        assert_eq!(nearest_rank(&[], 50), Nanos::ZERO);
    }

    #[test]
    fn labels_read_as_ranges() {
        assert_eq!(batch_label(&BATCH_BOUNDS, 0), "1");
        assert_eq!(batch_label(&BATCH_BOUNDS, 2), "3-4");
        assert_eq!(batch_label(&BATCH_BOUNDS, 7), "65+");
        assert_eq!(wait_label(&WAIT_BOUNDS_US, 0), "<0.1");
        assert_eq!(wait_label(&WAIT_BOUNDS_US, 3), "0.5-1");
        assert_eq!(wait_label(&WAIT_BOUNDS_US, 9), "50+");
    }
}
