//! Record formats.
//!
//! A log on disk is a sequence of records that each describe themselves: how long they
//! are and whether their bytes are the bytes that were written. Recovery depends on that
//! self-description, because after a power loss the tail of the log can hold half a
//! record, zeros, or an old record left in a recycled file.
//!
//! - [`varint`]: LEB128 variable-length integers (LevelDB's `Varint32`/`Varint64`).
//! - [`tiny`]: the tiny store's one-record-per-write format from Part 4 of the teaching page.

pub mod tiny;
pub mod varint;

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
