//! `walab serve`: a Durable Streams server on any of walab's WALs.
//!
//! Streams live at `/v1/stream/{name}` and speak the Durable Streams protocol: `PUT`
//! creates (or forks), `POST` appends (idempotently with `Producer-Id`, `Producer-Epoch`
//! and `Producer-Seq`; closing with `Stream-Closed: true`), `GET` reads from an offset
//! (catch-up, long-poll or server-sent events), `HEAD` tells the tail, `DELETE` deletes.
//! What makes it walab's is where an answer comes from: a `POST` is answered once its
//! record is durable in the WAL (an fdatasync, a PUT to a bucket, a Postgres commit),
//! grouped with every other request in flight ([`append`]).
//!
//! Every WAL record carries its request whole (stream number, index, producer, epoch,
//! seq, `Stream-Seq`, close, body; [`walab_core::stream_store::record`]), so at start the
//! store is rebuilt from the metadata log and the WAL's recovery alone ([`store`]): the
//! log caches at their places and the producers' tables, which is what lets a producer's
//! retried seq be answered as a duplicate after a crash or a power cut.
//!
//! # Behind the WAL
//!
//! The WAL only stages records: [`uploader`] seals the durable records above every
//! stream's committed end into blocks, uploads each as objects ([`objects`]: a stream-set
//! object, and a stream object for each large run), commits them through the metadata
//! log ([`meta_log`]) in one command that advances every stream in the block at once,
//! drops them from the log cache and lets the WAL trim below the oldest uncommitted
//! record. Reads below the log cache go to the committed objects, and a fork's reads
//! below its fork offset to its source ([`read`]). The streams themselves (created,
//! deleted, expired, forked) are commands of the metadata log too.
//!
//! The metadata log is a walab WAL of its own on any backend (a file, Postgres, a bucket),
//! claimed and fenced as a WAL is, bound to the one data WAL it describes, and compacted
//! by snapshots of its state.

pub mod append;
pub mod body;
pub mod headers;
pub mod http;
pub mod live;
pub mod meta_log;
pub mod objects;
pub mod read;
pub mod sse;
pub mod store;
pub mod stream;
pub mod uploader;

pub use store::Store;
