//! The trace events of a log session, and the one way writes are numbered in them.
//!
//! A trace names writes by number, and every reader of a trace (the page's lanes, its
//! captions, a dropped file) counts them from 1: write 1 is the first record the run
//! appended. A log's records also carry seqs, and a reopened log's first new record
//! may have seq 5,001. So a session numbers its writes by their place in the session:
//! write `w` is the record whose ticket is the session's first ticket plus `w - 1`
//! ([`WriteNumbering`]). In a fresh log the two coincide (the tiny store's write 7 is
//! seq 7); in a reopened one they differ by a constant, and the record's seq is
//! `first_seq + write - 1`.
//!
//! The events built here are the ones that follow from the group-commit machine's
//! inputs and actions: a record taken ([`Event::Arrive`]), a batch handed to the
//! storage ([`Event::BatchFormed`]), writers told OK or told their outcome is unknown
//! ([`Event::Ack`], [`Event::Fail`]), a consumer or reader confirming a position
//! ([`Event::ReaderConfirmed`]). What the driver does with the storage (a file created,
//! bytes written, a sync started and ended, a unit reaching the media) it records itself,
//! in the files and units only it knows. A write the log refused has no ticket and so no
//! number of the session's: the driver that offered it names it ([`refused`]), the tiny
//! store by its scenario number.

use crate::group_commit::{Batch, BatchId, SyncError, Ticket, Tickets};
use crate::trace::Event;

/// How a session numbers its writes: write 1 is the record with `first_ticket`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteNumbering {
    first_ticket: Ticket,
}

impl WriteNumbering {
    /// Writes numbered from the session's first ticket.
    pub const fn from_ticket(first_ticket: Ticket) -> WriteNumbering {
        WriteNumbering { first_ticket }
    }

    /// A fresh log's numbering: write n is ticket (and seq) n.
    pub const fn from_one() -> WriteNumbering {
        WriteNumbering { first_ticket: Ticket(1) }
    }

    /// The write a ticket names.
    pub fn write(&self, ticket: Ticket) -> u64 {
        ticket.0 + 1 - self.first_ticket.0
    }

    /// A record taken by the log.
    pub fn arrive(&self, ticket: Ticket) -> Event {
        Event::Arrive { write: self.write(ticket) }
    }

    /// A batch handed to the storage (persisted, or only written for the policies that
    /// acknowledge before syncing).
    pub fn formed(&self, batch: &Batch) -> Event {
        self.formed_from(batch.id, batch.segment, batch.tickets, batch.offset, batch.bytes.len() as u64)
    }

    /// The same event from a batch's parts, for a run rebuilt from its rows (the quorum's
    /// branches, a remote run written as a trace).
    pub fn formed_from(&self, batch: BatchId, segment: u64, tickets: Tickets, offset: u64, bytes: u64) -> Event {
        Event::BatchFormed { batch: batch.0, segment, first_write: self.write(tickets.first), writes: tickets.count, offset, bytes }
    }

    /// Writers told OK.
    pub fn ack(&self, tickets: Tickets) -> Event {
        Event::Ack { first_write: self.write(tickets.first), writes: tickets.count }
    }

    /// Writers told their outcome is unknown.
    pub fn fail(&self, tickets: Tickets, error: SyncError) -> Event {
        Event::Fail { first_write: self.write(tickets.first), writes: tickets.count, error }
    }
}

/// A write the driver offered and the log refused, named by the driver (it has no
/// ticket): its arrival, before [`refused`].
pub fn offered(write: u64) -> Event {
    Event::Arrive { write }
}

/// A write the log refused, named by the driver that offered it (it has no ticket).
pub fn refused(write: u64, reason: &impl core::fmt::Display) -> Event {
    Event::Refuse { write, reason: reason.to_string() }
}

/// A consumer or reader confirmed every record through `seq` (a seq, not a write
/// number: a position in the log, which outlives the session).
pub fn confirmed(reader: &str, seq: u64) -> Event {
    Event::ReaderConfirmed { reader: reader.to_string(), seq }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reopened_log_numbers_its_writes_from_one() {
        let numbering = WriteNumbering::from_ticket(Ticket(5_001));
        assert_eq!(numbering.write(Ticket(5_001)), 1);
        assert_eq!(numbering.ack(Tickets { first: Ticket(5_003), count: 2 }), Event::Ack { first_write: 3, writes: 2 });
        assert_eq!(WriteNumbering::from_one().arrive(Ticket(7)), Event::Arrive { write: 7 });
    }
}
