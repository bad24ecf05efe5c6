//! # walab-core
//!
//! The pure logic of a write-ahead log, with no I/O, no clock and no async runtime.
//!
//! Everything here is a value or a state machine. Time comes in as an argument
//! ([`time::Nanos`]); bytes come in as slices and go out as actions for a driver to
//! perform. The same code runs inside the browser (compiled to WebAssembly, driven by
//! a simulated device) and inside the native `walab` binary (driven by real files,
//! an object store or Postgres). Because nothing here reads a clock or a file, a
//! scenario plus a seed always produces the same trace, bit for bit, on every target.
//!
//! Map of the crate:
//! - [`time`]: integer nanoseconds, so that ties such as "a write arrives exactly when a
//!   sync completes" are exact.
//! - [`checksum`]: CRC32C (LevelDB, RocksDB, the tiny store) and CRC32 (the stream WAL).
//! - [`codec`]: the record formats: the tiny store's, LevelDB/RocksDB's, the stream WAL's frame.
//! - [`scan`]: the recovery scan (RECOVER_SCAN), which keeps every record up to the first
//!   one that fails a check and says why it stopped.
//! - [`tiny_store`]: the 24-write scenario every Part of the teaching page follows.
//! - [`rng`]: a small seeded generator, identical on every platform.
//! - [`group_commit`]: the sans-IO group-commit machine every WAL driver runs (Part 5).
//! - [`session`]: one open log around that machine: segment rollover, which segments
//!   may go, each storage's settings, the trace events; every WAL driver drives one.
//! - [`device`]: a simulated disk: page cache, volatile cache, atomic units, power cuts.
//! - [`trace`]: what happened in a run, event by event, and the state at any instant.
//! - [`sim`]: the deterministic simulator (group commit alone; the tiny store end to end).
//! - [`ring`]: the Postgres WAL's ring of slot tables: offsets to generations to slots, the
//!   row frame, the recovery chain, the URL settings, start-up and timeline checks.
//! - [`remote`]: the stream store's WAL with no local disk: the object-store layout, the
//!   registration that fences a takeover, and the recovery plan over a LIST.
//! - [`pages`]: Part 9, a page-based engine with pageLSN redo, full-page images and a
//!   doublewrite buffer, torn page by page at a power cut.
//! - [`budget`]: Parts 11 and 12, syncs, IOPS and MB/s against an EBS volume's limits.
//! - [`stream_store`]: `walab serve`'s pure half: the WAL record of an append, idempotent
//!   producers, the log cache.
//! - [`quorum`]: Part 10, quorum commit on the group-commit machine, and what each sync
//!   policy survives.

#![forbid(unsafe_code)]

pub mod budget;
pub mod checksum;
pub mod codec;
pub mod device;
pub mod file_log;
pub mod group_commit;
pub mod pages;
pub mod quorum;
pub mod remote;
pub mod ring;
pub mod rng;
pub mod sim;
pub mod stream_store;
pub mod scan;
pub mod session;
pub mod sort;
pub mod time;
pub mod trace;
pub mod tiny_store;
