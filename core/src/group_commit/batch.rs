//! The machine's vocabulary with its driver: tickets (one append's place in the
//! acknowledgement order), batches and what the driver must do with them ([`Action`]).

use std::fmt;

use super::SyncError;

/// One append's place in the acknowledgement order. Tickets are handed out 1, 2, 3, ...
/// in append order (or from [`super::GroupCommit::resume`]'s starting value).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
pub struct Ticket(pub u64);

/// A batch's number: B1, B2, ... in the order batches are formed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
pub struct BatchId(pub u64);

impl fmt::Display for BatchId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "B{}", self.0)
    }
}

/// A contiguous run of tickets, `first ..= last` (`count` of them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Tickets {
    pub first: Ticket,
    pub count: u64,
}

impl Tickets {
    pub const fn empty_at(first: Ticket) -> Tickets {
        Tickets { first, count: 0 }
    }

    /// The last ticket in the run; `None` when the run is empty.
    pub fn last(&self) -> Option<Ticket> {
        self.count.checked_sub(1).map(|offset| Ticket(self.first.0 + offset))
    }

    /// The ticket just after the run.
    pub fn end(&self) -> Ticket {
        Ticket(self.first.0 + self.count)
    }

    pub fn contains(&self, ticket: Ticket) -> bool {
        ticket.0 >= self.first.0 && ticket.0 < self.first.0 + self.count
    }

    pub fn iter(&self) -> impl Iterator<Item = Ticket> {
        (self.first.0..self.first.0 + self.count).map(Ticket)
    }
}

/// A batch's bytes and where they go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Batch {
    pub id: BatchId,
    /// The log segment (file, object prefix, slot table) the bytes belong to.
    pub segment: u64,
    /// Byte offset of the first byte within the segment.
    pub offset: u64,
    /// Log position (bytes since the log began) of the first byte.
    pub lsn_start: u64,
    /// The writers whose records the batch carries, in order.
    pub tickets: Tickets,
    /// The records, concatenated.
    pub bytes: Vec<u8>,
    /// Where each record ends in `bytes`, one per ticket, in order: record `i` is
    /// `bytes[record_ends[i - 1]..record_ends[i]]` (from 0 for the first). A backend that
    /// frames records one by one reads them with [`Batch::records`], never by parsing.
    pub record_ends: Vec<usize>,
    /// Persist this batch on the driver's own thread, blocking until it is durable, and
    /// answer earlier batches' writers first ([`super::schedule::persists_inline`] decides;
    /// always false unless [`super::Config::inline_persists`]).
    pub inline: bool,
}

impl Batch {
    /// Log position just after the batch.
    pub fn lsn_end(&self) -> u64 {
        self.lsn_start + self.bytes.len() as u64
    }

    /// The batch's records, each as it was appended, in ticket order.
    pub fn records(&self) -> impl ExactSizeIterator<Item = &[u8]> + Clone + '_ {
        let ends = &self.record_ends;
        (0..ends.len()).map(move |index| {
            let start = if index == 0 { 0 } else { ends[index - 1] };
            &self.bytes[start..ends[index]]
        })
    }
}

/// What the driver must do next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Write `batch.bytes` at `batch.offset` of `batch.segment` and make them durable,
    /// then call [`super::GroupCommit::handle_persisted`] with `batch.id`.
    Persist(Batch),
    /// Hand the bytes to the OS without syncing. No completion is expected.
    Write(Batch),
    /// Make everything written to segments `first_segment ..= last_segment` durable, up
    /// to log position `lsn_end`; then call [`super::GroupCommit::handle_persisted`] with `batch`.
    Sync { batch: BatchId, first_segment: u64, last_segment: u64, lsn_end: u64 },
    /// These writers may be told OK.
    Ack(Tickets),
    /// These writers must be told the outcome is unknown.
    Fail { tickets: Tickets, error: SyncError },
}
