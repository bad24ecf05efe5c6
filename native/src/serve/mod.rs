//! `walab serve`: a stream store over HTTP, on any of walab's WALs.
//!
//! # An append
//!
//! ```text
//!  POST /streams/s/records        stream s's lock                       WAL driver
//!  ── producer check ──▶ offset = end; submit(record) ──Event::Append──▶ group commit
//!                        push to s's log cache (not yet readable)          persist
//!  ◀── 200 {"offset"} ── mark durable ◀──────────── Ok(wal seq) ◀──────── ack in order
//! ```
//!
//! The stream's lock covers only the producer check, the offset assignment and the
//! submission to the WAL driver (a channel send); the request then waits for durability
//! outside it, so requests pipelined on one stream join the same group commit. Because a
//! stream's records are submitted in offset order and the WAL acknowledges in submission
//! order, an acknowledged offset means every lower offset of that stream is durable too:
//! reads return records below the highest acknowledged offset and never more.
//!
//! A batch append ([`batch`]) does the same for several records under one hold of the
//! lock: the producer check for all its seqs at once, consecutive offsets, one submission
//! after the other; the request waits until the last is durable and answers for all.
//!
//! Every WAL record carries the append whole (stream, offset, producer, epoch, seq,
//! value; [`walab_core::stream_store::record`]), so at start the store is rebuilt from the
//! WAL's recovery alone: the log caches at their offsets and the producers' table, which
//! is what lets a producer's retried last seq be answered as a duplicate after a restart.
//!
//! # Failure
//!
//! A failed persist fails its batch and every later one, and a record whose answer is a
//! failure may or may not be in the WAL: the request gets `503` with
//! `"outcome": "unknown"`, and the store takes no more appends until it is restarted
//! (recovery then says what the WAL holds). Offsets already handed to records that were
//! never written would leave a gap, which is why the store stops instead of going on.
//! The group-commit machine's own bounds would refuse a record after its offset was
//! fixed, so the store keeps its in-flight bytes under [`store::INFLIGHT_BYTES_MAX`]
//! before it assigns offsets.
//!
//! # Behind the WAL
//!
//! The WAL only stages records: [`uploader`] seals the durable records above every
//! stream's committed end into blocks, uploads each as objects ([`objects`]: a stream-set
//! object, and a stream object for each large run), commits them through the metadata
//! log ([`meta_log`]) in one command that advances every stream in the block at once,
//! drops them from the log cache and lets the WAL trim below the oldest uncommitted
//! record. Reads below the log cache go to the committed objects. At start: the metadata
//! log is replayed (committed ends, object runs, producers), orphaned reservations are
//! deleted and expired, and only WAL records past the committed ends are replayed.
//!
//! The metadata log is a walab WAL of its own on any backend (a file, Postgres, a bucket),
//! claimed and fenced as a WAL is, and compacted by snapshots of its state. A read below
//! the log cache fetches its object each time (no object cache).

pub mod batch;
pub mod http;
pub mod live;
pub mod meta_log;
pub mod objects;
pub mod store;
pub mod uploader;

pub use store::Store;
