//! The WAL front-end: concurrent writers, the core's group-commit machine, a backend.
//!
//! # The shape
//!
//! ```text
//!  writer threads            driver thread (one per open WAL)               backend
//!  Writer::append ──Event::Append──▶ encode record (seq = ticket)
//!        ▲                           Session::handle_append ─────┐
//!        │                           poll_action():              │
//!        │                             Persist(batch) ───────────┼──▶ persist(batch, Completion)
//!        │                                                       │      file: pwrite + fdatasync
//!        │                           Event::Persisted ◀──────────┼──── Completion::complete(result)
//!        │                           Session::handle_persisted
//!        └────── reply Ok(seq) ◀──── Ack(tickets) / Fail(tickets)
//! ```
//!
//! Every decision (which segment a record goes to, what goes in a batch, when a batch
//! may start and whether it syncs inline, which writers may be told OK, what happens
//! after a failed persist, which segments may be removed, the machine's settings for
//! this storage) is made by the core's log session ([`walab_core::session::Session`]
//! around [`walab_core::group_commit::GroupCommit`]), the same session the browser's
//! simulators run. This module is only its *driver*: it reads the clock, turns the
//! session's actions into calls on a [`Backend`], and turns the backend's completions and
//! the writers' appends back into inputs. Everything that reaches the driver thread goes
//! through one channel, whose vocabulary is [`inbox`]'s.
//!
//! # The backend seam
//!
//! A [`Backend`] knows how to recover what its storage durably holds and how to persist
//! one batch. Persisting is *completion-based*: [`Backend::persist`] receives the batch
//! and a [`Completion`], and calls [`Completion::complete`] when the storage has said
//! the bytes are durable (or that it failed). When it calls it does not matter:
//!
//! - the file backend writes each batch on the driver thread (`pwrite`, into the page
//!   cache, in log order) and syncs it one of two ways, which the machine marks on the
//!   batch ([`walab_core::group_commit::Batch::inline`], decided in
//!   [`walab_core::group_commit::schedule`]):
//!   - *inline*, for a lone writer (a one-record batch after a one-record batch, no other
//!     sync in flight): `persist` blocks in `fdatasync` and completes before it returns.
//!     The driver answers the finished batch's writers *before* it syncs the next batch,
//!     and the appends that arrive during a sync queue in the channel. Between an append
//!     and its OK a lone writer crosses two thread hops (to the driver and back); an
//!     idle driver polls its channel for a few microseconds before it sleeps, and a lone
//!     writer polls for its answer, so neither hop usually costs a wake-up. A batch of
//!     many thread writers is answered by a thread of its own (`wal-answer`) while the
//!     driver syncs the next one: waking dozens of threads one by one would otherwise
//!     leave the disk idle.
//!   - *on a sync thread* ([`file::sync_pool`]), for every other batch: `persist` hands the
//!     `fdatasync` over and returns, and the machine (`inflight_max = 2`) lets the next
//!     batch be written and synced beside it, so the disk does not wait for the driver's
//!     work between two syncs.

//! - an S3 or Postgres backend owns a small tokio runtime, spawns the PUT or INSERT on
//!   it and completes from the task when the request returns, so several batches can be
//!   in flight (`inflight_max = 4`) while the driver keeps feeding the machine. The
//!   machine releases acknowledgements in submission order whatever order the
//!   completions arrive in.
//!
//! So the driver is runtime-agnostic (a plain thread and a channel) and async backends
//! bring their own runtime. A [`Writer`] (a thread) blocks on a reply channel of its own;
//! an [`AsyncWriter`] (a task) awaits a oneshot, so acknowledging a batch only queues
//! its tasks on their runtime, with no system call per writer: that is what lets a
//! thousand appenders share two cores. `load`, `dump`,
//! `bench` and `crash-test` use only [`Wal`] and [`Writer`], so a new backend gets all
//! four commands by implementing [`Backend`] and adding its URL scheme to [`url`].
//!
//! # Adding a backend (S3, Postgres)
//!
//! 1. Implement [`Backend`]: `recover` returns every durable record in seq order and
//!    `next_seq` (the machine resumes its tickets there); `segment_bytes_max` is
//!    `u64::MAX` unless the storage has segments; `persist` owns the batch, sends it
//!    (one PUT, one INSERT) and calls [`Completion::complete`] from wherever the answer
//!    arrives; `machine_config` returns its storage's preset
//!    ([`walab_core::session::preset::Storage::config`]) with the tuning it was built
//!    with; `remove_segments` is trim. A batch's bytes are tiny-store records
//!    back to back, and [`Batch::records`](walab_core::group_commit::Batch::records)
//!    hands them out one by one; a remote backend wraps them in its own frame (the
//!    stream WAL frame) with the core's codec.
//! 2. Add a [`url::WalUrl`] variant and its arm in [`url::WalArgs::backend`].
//!
//! `load`, `dump`, `bench` and `crash-test --kills` then work unchanged, and the
//! machine keeps acknowledgements in submission order whatever order completions
//! arrive in.
//!
//! # Records and sequence numbers
//!
//! Records use the tiny store's format ([`walab_core::codec::tiny`]): one record per
//! append, CRC32C over type and payload, the payload carrying seq, key and value. A
//! record's seq *is* its group-commit ticket: the machine is resumed after recovery with
//! `next_ticket = last recovered seq + 1`, and tickets are handed out in append order,
//! so seq order, ticket order, log order and acknowledgement order are all the same.
//!
//! # Failure
//!
//! A failed persist is fatal, as Part 3 of the teaching page demands: the machine fails
//! that batch's writers and every later one, and refuses every further append. The
//! [`Wal`] stays failed; the caller reopens it, which recovers from what the storage
//! holds (for files: read past the page cache, see [`file::fs`]).
//!
//! # Trim
//!
//! A consumer confirms the seq through which it has applied the log
//! ([`Wal::confirm_consumer`]) and readers register and confirm their own positions
//! ([`Wal::register_reader`], [`Wal::confirm_reader`]). Which whole segments may then be
//! removed is the session's decision ([`walab_core::session::retention`]); `load` and
//! `dump` never confirm anything, so they never trim.

mod backend;
mod driver;
mod error;
pub mod file;
mod handle;
mod inbox;
pub mod live;
pub mod os;
pub mod postgres;
pub mod s3;
mod stats;
pub mod trace;
pub mod url;
mod writer;

pub use backend::{Backend, Recovered};
pub use error::{sync_error_of, WalError};
pub use handle::{Wal, WalOptions};
pub use inbox::{Completion, TrimDone};
pub use walab_core::session::retention::ReaderId;
pub use os::limit_malloc_arenas;
pub use stats::WalStats;
pub use writer::{frame_unsequenced, seal_record, AsyncWriter, PendingAppend, Writer};
