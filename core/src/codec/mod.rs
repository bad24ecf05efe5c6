//! Record formats.
//!
//! A log on disk is a sequence of records that each describe themselves: how long they
//! are and whether their bytes are the bytes that were written. Recovery depends on that
//! self-description, because after a power loss the tail of the log can hold half a
//! record, zeros, or an old record left in a recycled file.
//!
//! - [`varint`]: LEB128 variable-length integers (LevelDB's `Varint32`/`Varint64`).
//! - [`tiny`]: the tiny store's one-record-per-write format from Part 4 of the teaching page.
//! - [`leveldb`]: LevelDB's and RocksDB's log: 32 KiB blocks, fragments, the recyclable
//!   header; [`write_batch`]: the batch each of its logical records carries.
//! - [`tiny_group`]: a commit group of tiny records as one LevelDB record (the file WAL's
//!   `--format leveldb`).
//! - [`stream`]: the stream store's WAL frame (offset, length, CRC32 over the body).

pub mod leveldb;
pub mod stream;
pub mod tiny;
pub mod tiny_group;
pub mod varint;
pub mod write_batch;

/// What a write does to its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum Op {
    /// Store a value under the key.
    Put,
    /// Remove the key.
    Del,
}
