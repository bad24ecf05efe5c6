//! The file WAL's recovery steps: read every segment past the page cache, run the
//! core's scan for the log's format over them, carry out the core's plan (the torn tail
//! cut, the segment to append to, the spare kept; [`walab_core::file_log`] decides).

use super::*;

impl FileBackend {
    /// Runs the core's recovery scan for the log's format over the segment images: where
    /// each accepted record lies, the records, and where the scan stopped.
    pub(super) fn scan(&self, images: &[Vec<u8>]) -> (Vec<FoundRecord>, Vec<TinyRecord>, ScanStop) {
        let (mut found, mut records) = (Vec::new(), Vec::new());
        let stop = match self.format {
            SegmentFormat::Tiny => {
                let slices: Vec<&[u8]> = images.iter().map(|image| image.as_slice()).collect();
                let scan = scan_tiny(&slices, 0);
                for a in scan.records {
                    found.push(FoundRecord { segment: a.segment, offset: a.offset, len: a.len, seq: a.record.seq });
                    records.push(a.record);
                }
                scan.stop
            }
            SegmentFormat::Leveldb => {
                let segments: Vec<LogSegment<'_>> =
                    images.iter().map(|image| LogSegment { bytes: image, log_number: None }).collect();
                let scan = scan_log(LogFormat::LevelDb, &segments, 0);
                for a in scan.records {
                    for record in tiny_group::group_records(&a.batch) {
                        found.push(FoundRecord { segment: a.segment, offset: a.offset, len: a.len, seq: record.seq });
                        records.push(record);
                    }
                }
                scan.stop
            }
        };
        (found, records, stop)
    }

    /// Step 1 of opening: the directory (made if need be), its lock, its FORMAT; the
    /// names in it.
    pub(super) fn open_dir(&mut self) -> Result<Vec<String>, WalError> {
        if self.create {
            self.fs.create_dir_all(&self.dir).map_err(|e| self.open_error("cannot create the log directory", e))?;
        } else if self.fs.list(&self.dir).is_err() {
            return Err(WalError::Open(format!("{}: no log here", self.dir.display())));
        }
        let listed = self.fs.list(&self.dir).map_err(|e| self.open_error("cannot list the log directory", e))?;
        // A reader takes the lock only where a writer made one: it creates nothing.
        if self.create || listed.iter().any(|name| name == "LOCK") {
            let lock = self.fs.lock_dir(&self.dir).map_err(|e| self.open_error("cannot lock the log", e))?;
            self._lock = Some(lock);
        }
        let names = self.fs.list(&self.dir).map_err(|e| self.open_error("cannot list the log directory", e))?;
        self.check_format(&names)?;
        Ok(names)
    }

    /// Step 2: every segment's bytes as the device holds them, oldest first.
    pub(super) fn read_segments(&self, names: &[String]) -> Result<(Vec<u64>, Vec<Vec<u8>>), WalError> {
        let mut numbers: Vec<u64> = names.iter().filter_map(|name| parse_segment_file_name(name)).collect();
        numbers.sort_unstable();
        let mut images = Vec::with_capacity(numbers.len());
        for &segment in &numbers {
            let bytes = self
                .fs
                .read_from_device(&self.path(segment))
                .map_err(|e| self.open_error(&format!("cannot read {}", segment_file_name(segment)), e))?;
            images.push(bytes);
        }
        Ok((numbers, images))
    }

    /// Step 4: cuts the torn tail the plan found (reading only: reports it), in words.
    pub(super) fn repair_torn_tail(&self, tail: Option<TornTail>) -> Result<Option<String>, WalError> {
        let Some(tail) = tail else { return Ok(None) };
        let (name, bytes, words) = (segment_file_name(tail.segment), tail.to - tail.from, stop_words(tail.reason));
        if !self.create {
            return Ok(Some(format!(
                "{name}: {bytes} bytes of torn tail at byte {} ({words}), left as they are (reading only)",
                tail.from
            )));
        }
        self.cut_tail(tail.segment, tail.from, tail.to)?;
        Ok(Some(format!("{name}: cut {bytes} bytes of torn tail at byte {} ({words})", tail.from)))
    }

    /// Step 5 (writers only): removes what the plan dooms, opens the append segment and
    /// keeps or starts preparing the spare.
    pub(super) fn get_ready_to_append(&mut self, plan: &RecoveryPlan) -> Result<(), WalError> {
        if !plan.remove.is_empty() {
            for &number in &plan.remove {
                self.fs
                    .remove(&self.path(number))
                    .map_err(|e| self.open_error(&format!("cannot remove {}", segment_file_name(number)), e))?;
            }
            self.fs.sync_dir(&self.dir).map_err(|e| self.open_error("cannot sync the log directory", e))?;
        }
        let segment = plan.segment;
        let path = self.path(segment);
        let file = match self.fs.open_write(&path) {
            Ok(file) => file,
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                create_zero_filled(self.fs.as_ref(), &path, self.file_bytes())
                    .map_err(|e| self.open_error(&format!("cannot create {}", segment_file_name(segment)), e))?
            }
            Err(error) => return Err(self.open_error(&format!("cannot open {}", segment_file_name(segment)), error)),
        };
        self.set_current(segment, file)
            .map_err(|e| self.open_error(&format!("cannot open {} for the sync threads", segment_file_name(segment)), e))?;
        match plan.spare {
            Some(spare) => {
                let spare_file = self
                    .fs
                    .open_write(&self.path(spare))
                    .map_err(|e| self.open_error(&format!("cannot open {}", segment_file_name(spare)), e))?;
                self.spare = Some((spare, Spare::Ready(spare_file)));
            }
            None => self.prepare_spare(segment + 1),
        }
        Ok(())
    }

    /// Overwrites `from..to` of a segment with zeros and syncs: the torn tail is cut.
    pub(super) fn cut_tail(&self, segment: u64, from: u64, to: u64) -> Result<(), WalError> {
        let name = segment_file_name(segment);
        let mut file = self.fs.open_write(&self.path(segment)).map_err(|e| self.open_error(&format!("cannot open {name}"), e))?;
        let zeros = vec![0u8; (to - from) as usize];
        file.write_at(from, &zeros)
            .and_then(|()| file.sync_data())
            .map_err(|e| self.open_error(&format!("cannot cut the torn tail of {name}"), e))
    }
}

/// Offset just past the last non-zero byte.
pub(super) fn last_nonzero_end(bytes: &[u8]) -> usize {
    bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1)
}
