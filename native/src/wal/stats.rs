//! The counters a running WAL keeps ([`WalStats`]).

/// Counters the driver keeps while it runs.
#[derive(Clone, Debug, Default)]
pub struct WalStats {
    /// Batches persisted successfully (one fdatasync each for files).
    pub persists_ok: u64,
    pub persists_failed: u64,
    /// Records acknowledged and failed.
    pub acked: u64,
    pub failed: u64,
    /// Sum of persist durations, issue to completion, in nanoseconds.
    pub persist_ns_total: u64,
    /// Hand-offs: a persist that started in the same round in which the previous one
    /// completed (records were waiting for it), and the time between that completion
    /// and this start, summed: the driver's own cost between two back-to-back syncs.
    pub handoffs: u64,
    pub handoff_ns_total: u64,
    /// Segments removed by trim.
    pub segments_removed: u64,
    /// A ring's batches that waited for their slot (the ring was full until a trim).
    pub ring_waits: u64,
    /// A ring's trims carried out.
    pub ring_trims: u64,
}

