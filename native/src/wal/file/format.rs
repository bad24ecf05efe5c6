//! The `FORMAT` file: the format and segment size a log was created with, recorded when
//! it is created and checked at every open, so a reader with the wrong `--format` or
//! `--segment-bytes` is refused by name instead of mistaking every record for damage
//! (and cutting it as a torn tail).

use super::*;

/// The file that records a log's format, so a reader with the wrong `--format` is
/// refused instead of mistaking every record for damage (and cutting it as a torn tail).
pub const FORMAT_FILE_NAME: &str = "FORMAT";
/// Where FORMAT is written before it is renamed into place.
const FORMAT_TEMPORARY_NAME: &str = "FORMAT.tmp";

impl FileBackend {
    /// Checks (or, for a new log, records) the log's format and segment size.
    pub(super) fn check_format(&mut self, names: &[String]) -> Result<(), WalError> {
        let path = self.dir.join(FORMAT_FILE_NAME);
        if names.iter().any(|name| name == FORMAT_FILE_NAME) {
            let text = self.fs.read_from_device(&path).map_err(|e| self.open_error("cannot read FORMAT", e))?;
            let text = String::from_utf8_lossy(&text);
            let mut lines = text.lines();
            let found = lines.next().unwrap_or("").trim().to_string();
            if found.is_empty() {
                return self.check_empty_format(names, &path);
            }
            if found != self.format.name() {
                return Err(WalError::Open(format!(
                    "{}: the log is in the {found} format; pass --format {found}",
                    self.dir.display()
                )));
            }
            // Logs from before the size was recorded have one line: the flag decides.
            let recorded = lines.find_map(|line| line.trim().strip_prefix("segment-bytes ")).map(str::trim);
            if let Some(recorded) = recorded {
                let recorded: u64 = recorded.parse().map_err(|_| {
                    WalError::Open(format!("{}: FORMAT: {recorded:?} is not a segment size", self.dir.display()))
                })?;
                if recorded != self.segment_bytes_max {
                    if !self.adopt_recorded_size {
                        return Err(WalError::Open(format!(
                            "{}: the log's segments are {recorded} bytes; pass --segment-bytes {recorded} or leave it out",
                            self.dir.display()
                        )));
                    }
                    self.segment_bytes_max = recorded;
                }
            }
            return Ok(());
        }
        if !self.create {
            // Reading only: a log without FORMAT is taken as it is.
            return Ok(());
        }
        let has_segments = names.iter().any(|name| parse_segment_file_name(name).is_some());
        if has_segments {
            // Logs from before FORMAT existed are tiny-store logs.
            if self.format != SegmentFormat::Tiny {
                return Err(WalError::Open(format!("{}: the log is in the tiny format; pass --format tiny", self.dir.display())));
            }
            return Ok(());
        }
        self.write_format(names, &path)
    }

    /// FORMAT exists but holds nothing: its bytes never reached the disk (a power cut
    /// after a writer that did not sync it). A log whose segments hold no byte either
    /// never made anything durable: it starts over as a new log. One whose segments hold
    /// data cannot tell its format: refused, naming the format it is opened as.
    pub(super) fn check_empty_format(&mut self, names: &[String], path: &Path) -> Result<(), WalError> {
        let mut holding_data = Vec::new();
        for name in names.iter().filter(|name| parse_segment_file_name(name).is_some()) {
            let bytes = self.fs.read_from_device(&self.dir.join(name)).map_err(|e| self.open_error("cannot read a segment", e))?;
            if bytes.iter().any(|&byte| byte != 0) {
                holding_data.push(name.as_str());
            }
        }
        if holding_data.is_empty() && self.create {
            self.format_note = Some(format!(
                "{}: FORMAT was empty and no segment held a byte (nothing had reached the disk, as after a power cut): \
                 started again as a new log in the {} format",
                self.dir.display(),
                self.format.name()
            ));
            // Renamed over the empty one.
            return self.write_format(names, path);
        }
        let format = self.format.name();
        Err(WalError::Open(format!(
            "{}: FORMAT is empty (its bytes never reached the disk, as after a power cut) {}: the log's format is not \
             recorded. This log is opened in the {format} format; if that is its format, write `{format}` into FORMAT \
             and start again (`walab inspect --format {format}` reads a segment)",
            self.dir.display(),
            match holding_data.len() {
                0 => "and nothing may repair it (opened to read only)".to_string(),
                count => format!("but {count} segment(s) hold data ({})", holding_data.join(", ")),
            }
        )))
    }

    /// Records a new log's format and segment size in FORMAT.
    pub(super) fn write_format(&mut self, names: &[String], path: &Path) -> Result<(), WalError> {
        // Written beside and renamed into place, so a crash while a new log is being
        // set up leaves either no FORMAT (the next open starts over) or a whole one,
        // never an empty file that would make the log unopenable.
        let text = format!("{}\nsegment-bytes {}\n", self.format.name(), self.segment_bytes_max);
        let temporary = self.dir.join(FORMAT_TEMPORARY_NAME);
        if names.iter().any(|name| name == FORMAT_TEMPORARY_NAME) {
            self.fs.remove(&temporary).map_err(|e| self.open_error("cannot remove a half-written FORMAT", e))?;
        }
        let mut file = self.fs.create_new(&temporary).map_err(|e| self.open_error("cannot create FORMAT", e))?;
        file.write_at(0, text.as_bytes())
            .and_then(|()| file.sync_data())
            .and_then(|()| self.fs.rename(&temporary, &path))
            .and_then(|()| self.fs.sync_dir(&self.dir))
            .map_err(|e| self.open_error("cannot write FORMAT", e))
    }
}
