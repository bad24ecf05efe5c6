//! Segments in LevelDB's log format (`--format leveldb`): one logical record per commit
//! group.
//!
//! The bytes are the core's: [`walab_core::codec::tiny_group`] turns a batch's records
//! into one `WriteBatch` payload and [`LogWriter`] frames it into 32 KiB blocks, exactly
//! as LevelDB's `log::Writer` would. This module only keeps the write position. Because
//! the physical bytes differ from the machine's (tiny-store) bytes, the backend keeps its
//! own position in the segment, and each segment file is
//! [`tiny_group::log_bytes_max`] long, enough for any batch mix. Recovery runs the core's
//! [`walab_core::codec::leveldb::scan_log`] and then appends in a fresh segment, so the
//! writer never has to resume in the middle of a block.

use std::io;

use walab_core::codec::leveldb::{HeaderKind, LogWriter};
use walab_core::codec::tiny_group;
use walab_core::group_commit::Batch;

use super::fs::WalFile;

/// Where the next group record goes in the current segment, and buffers reused per batch.
#[derive(Debug, Default)]
pub struct GroupLog {
    offset: u64,
    payload: Vec<u8>,
    frame: Vec<u8>,
}

impl GroupLog {
    /// A new segment: the next record goes at its start.
    pub fn restart(&mut self) {
        self.offset = 0;
    }

    /// Writes `batch` as one group record at the current position (no sync). The
    /// position moves on only if the write succeeded.
    pub fn write(&mut self, file: &mut dyn WalFile, batch: &Batch, file_bytes: u64) -> io::Result<()> {
        tiny_group::encode_group(&mut self.payload, batch.records());
        let mut writer = LogWriter::resume(HeaderKind::Legacy, self.offset, std::mem::take(&mut self.frame));
        writer.add_record(&self.payload);
        let end = writer.end_offset();
        assert!(end <= file_bytes, "a group record never passes its segment's end");
        let written = file.write_at(self.offset, writer.bytes());
        self.frame = writer.into_bytes();
        written?;
        self.offset = end;
        Ok(())
    }
}
