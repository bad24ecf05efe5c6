//! The metadata log: [`walab_core::stream_store::meta`]'s commands, one per record of a
//! walab file WAL, replayed at start.
//!
//! Why walab's own WAL and not an embedded database: the metadata is a short log of
//! commands whose state machine lives in the core, and a log is what walab already makes
//! durable, with fdatasync, torn-tail recovery and the core's scan; an embedded database
//! would bring a second storage engine whose own log would hold the same commands. The
//! log is not compacted yet: it grows by two records per upload.

use std::path::PathBuf;
use std::sync::Arc;

use walab_core::stream_store::meta::{MetaCommand, MetaState};

use crate::wal::file::fs::RealFs;
use crate::wal::file::{FileBackend, SegmentFormat};
use crate::wal::{AsyncWriter, Wal, WalOptions};

/// Bytes per segment of a new metadata log.
const META_SEGMENT_BYTES: u64 = 1 << 20;

/// The key of every metadata record.
const META_KEY: &[u8] = b"meta";

/// An open metadata log and the state its commands give.
pub struct MetaLog {
    writer: AsyncWriter,
    state: MetaState,
    /// Set after a failed append: the state may be ahead of the log, so nothing more
    /// is written until a restart replays the log.
    failed: Option<String>,
    wal: Wal,
}

impl MetaLog {
    /// Opens (or creates) the log in `dir` and replays it.
    pub fn open(dir: PathBuf) -> Result<MetaLog, String> {
        let backend = FileBackend::with_format(Arc::new(RealFs), dir, META_SEGMENT_BYTES, true, SegmentFormat::Tiny)
            .with_recorded_geometry(true);
        let (wal, recovered) = Wal::open(Box::new(backend), WalOptions::default()).map_err(|error| error.to_string())?;
        let mut state = MetaState::default();
        for record in &recovered.records {
            let command = MetaCommand::decode(&record.value)
                .map_err(|error| format!("{}: metadata record {}: {error}", wal.name(), record.seq))?;
            state
                .apply(&command)
                .map_err(|error| format!("{}: metadata record {}: {error}", wal.name(), record.seq))?;
        }
        Ok(MetaLog { writer: wal.async_writer(), state, failed: None, wal })
    }

    pub fn name(&self) -> &str {
        self.wal.name()
    }

    /// Whether an append failed (nothing more is written until a restart).
    pub fn failed(&self) -> bool {
        self.failed.is_some()
    }

    pub fn state(&self) -> &MetaState {
        &self.state
    }

    /// Applies `command` (refused whole if it does not apply) and makes it durable.
    pub async fn append(&mut self, command: MetaCommand) -> Result<(), String> {
        if let Some(failure) = &self.failed {
            return Err(format!("{}: stopped after a failure: {failure}", self.name()));
        }
        self.state.apply(&command).map_err(|error| format!("{}: {error}", self.name()))?;
        if let Err(error) = self.writer.append(META_KEY, &command.encode()).await {
            let message = format!("{}: {error}", self.name());
            self.failed = Some(message.clone());
            return Err(message);
        }
        Ok(())
    }
}
