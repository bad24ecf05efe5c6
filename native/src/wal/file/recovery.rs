//! The file WAL's recovery steps: read the segments past the page cache one at a time,
//! feed each to the core's scan for the log's format, carry out the core's plan (the torn tail
//! cut, the segment to append to, the spare kept; [`walab_core::file_log`] decides).

use super::*;

/// The core's recovery scan for the log's format, fed one segment image at a time.
pub(super) enum Scanner {
    Tiny(TinyScanner),
    Leveldb(LogScanner),
}

impl Scanner {
    pub(super) fn new(format: SegmentFormat) -> Scanner {
        match format {
            SegmentFormat::Tiny => Scanner::Tiny(TinyScanner::new(0, CheckLog::dropping())),
            SegmentFormat::Leveldb => Scanner::Leveldb(LogScanner::new(LogFormat::LevelDb, 0, CheckLog::dropping())),
        }
    }

    /// Scans the next segment's image: each accepted record is added to `found` (where it
    /// lies) and handed to `visit`. Returns whether later segments are still scanned.
    pub(super) fn segment(&mut self, image: &[u8], found: &mut SegmentFound, visit: &mut dyn FnMut(TinyRecord)) -> bool {
        match self {
            Scanner::Tiny(scanner) => scanner.segment(image, |accepted| {
                found.add(accepted.offset, accepted.len, accepted.record.seq);
                visit(accepted.record);
            }),
            Scanner::Leveldb(scanner) => scanner.segment(LogSegment { bytes: image, log_number: None }, |accepted| {
                for record in tiny_group::group_records(&accepted.batch) {
                    found.add(accepted.offset, accepted.len, record.seq);
                    visit(record);
                }
            }),
        }
    }

    /// Where the scan stopped.
    pub(super) fn finish(self) -> ScanStop {
        match self {
            Scanner::Tiny(scanner) => scanner.finish().stop,
            Scanner::Leveldb(scanner) => scanner.finish().stop,
        }
    }
}

impl FileBackend {
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

    /// Step 2: the segments, oldest first, each read whole as the device holds it (one
    /// at a time: only one image is in memory) and fed to the scan, which hands `visit`
    /// every record it accepts; every segment's size and last non-zero byte (read on
    /// after the scan stopped, for the plan's corruption check), what the scan found in
    /// each, and where it stopped.
    pub(super) fn scan_segments(
        &self,
        names: &[String],
        visit: &mut dyn FnMut(TinyRecord),
    ) -> Result<(Vec<SegmentFile>, Vec<SegmentFound>, ScanStop), WalError> {
        let mut numbers: Vec<u64> = names.iter().filter_map(|name| parse_segment_file_name(name)).collect();
        numbers.sort_unstable();
        let (mut files, mut found) = (Vec::with_capacity(numbers.len()), Vec::with_capacity(numbers.len()));
        let mut scanner = Scanner::new(self.format);
        let mut scanning = true;
        for &number in &numbers {
            let image = self
                .fs
                .read_from_device(&self.path(number))
                .map_err(|e| self.open_error(&format!("cannot read {}", segment_file_name(number)), e))?;
            let mut summary = SegmentFound::default();
            if scanning {
                scanning = scanner.segment(&image, &mut summary, visit);
            }
            files.push(SegmentFile { number, bytes: image.len() as u64, dirty_end: last_nonzero_end(&image) as u64 });
            found.push(summary);
        }
        Ok((files, found, scanner.finish()))
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
    // Eight bytes at a time over the zero tail, then the last word's bytes.
    let words = bytes.len() / 8;
    let tail_end = bytes[words * 8..].iter().rposition(|&b| b != 0).map(|i| words * 8 + i + 1);
    if let Some(end) = tail_end {
        return end;
    }
    let word = bytes[..words * 8].chunks_exact(8).rposition(|word| u64::from_ne_bytes(word.try_into().expect("8 bytes")) != 0);
    word.map_or(0, |w| w * 8 + bytes[w * 8..w * 8 + 8].iter().rposition(|&b| b != 0).expect("a non-zero byte") + 1)
}
