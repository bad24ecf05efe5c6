//! The running page engine: a buffer pool over a data file, a log, write-back and
//! checkpoints.
//!
//! [`Media`] is what survives a power cut: the data file's pages, the doublewrite area and
//! the control file's redo point. [`PageEngine`] is the process: its buffer pool (the pages
//! in memory, some dirty) and its log. A power cut keeps the media and the log and throws
//! the engine away; [`super::recovery::recover`] then rebuilds the pages from the two.
//!
//! The log in this model is durable record by record: a write is acknowledged only after
//! its record is synced (Parts 2 to 7 show how that sync is shared and how a torn log tail
//! is cut). What this module models is everything *after* the log: when dirty pages reach
//! their place, and what a power cut in the middle of that does to them.

use std::collections::BTreeMap;

use super::page::{GeometryError, Lsn, Page, PageError, PageGeometry, PageNo, PageReadError};
use crate::codec::{tiny, Op};

/// How the engine protects pages against a torn write-back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Protection {
    /// PostgreSQL's `full_page_writes`: the first change to a page after a checkpoint logs
    /// the whole page, so redo can rebuild it from the log alone.
    FullPageImages,
    /// InnoDB's doublewrite buffer: every write-back first writes the pages to a scratch
    /// area and syncs it, then writes them to their places; a page torn at its place is
    /// copied back from the scratch area.
    Doublewrite,
    /// Neither: a torn page cannot be rebuilt.
    None,
}

impl Protection {
    pub const ALL: [Protection; 3] = [Protection::FullPageImages, Protection::Doublewrite, Protection::None];

    /// The name `walab sim redo --protection` and the page's `protection=` take.
    pub fn name(self) -> &'static str {
        match self {
            Protection::FullPageImages => "fpi",
            Protection::Doublewrite => "doublewrite",
            Protection::None => "none",
        }
    }

    /// The protection in words, with the engine that uses it.
    pub fn label(self) -> &'static str {
        match self {
            Protection::FullPageImages => "full-page images (PostgreSQL)",
            Protection::Doublewrite => "doublewrite buffer (InnoDB)",
            Protection::None => "neither",
        }
    }

    pub fn from_name(name: &str) -> Option<Protection> {
        Protection::ALL.into_iter().find(|protection| protection.name() == name)
    }
}

/// The power fails after this many more sector writes reach the media.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PowerBudget {
    sector_writes_left: Option<usize>,
    sector_writes_spent: usize,
}

/// The power failed: the operation stopped partway, and the process is gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PowerCut;

impl PowerBudget {
    /// The power never fails.
    pub fn unlimited() -> PowerBudget {
        PowerBudget { sector_writes_left: None, sector_writes_spent: 0 }
    }

    /// The power fails once `sector_writes` more sector writes have reached the media.
    pub fn cut_after(sector_writes: usize) -> PowerBudget {
        PowerBudget { sector_writes_left: Some(sector_writes), sector_writes_spent: 0 }
    }

    /// Sector writes (and control-file writes) that reached the media so far.
    pub fn spent(&self) -> usize {
        self.sector_writes_spent
    }

    /// Spends one sector write, or reports that the power is already gone (for the
    /// other engines of this module).
    pub(crate) fn spend_sector(&mut self) -> Result<(), PowerCut> {
        self.spend()
    }

    /// Spends one sector write, or reports that the power is already gone.
    fn spend(&mut self) -> Result<(), PowerCut> {
        match &mut self.sector_writes_left {
            None => {}
            Some(0) => return Err(PowerCut),
            Some(left) => *left -= 1,
        }
        self.sector_writes_spent += 1;
        Ok(())
    }
}

/// Where a page's bytes go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// The page's own place in the data file.
    Home(PageNo),
    /// A slot of the doublewrite area.
    DoublewriteSlot(usize),
}

/// What is on stable storage: the data file, the doublewrite area and the control file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Media {
    pub geometry: PageGeometry,
    /// Every page's bytes at its place, by page number.
    pub pages: BTreeMap<PageNo, Vec<u8>>,
    /// The doublewrite area, one page per slot; zeros until first used.
    pub doublewrite: Vec<Vec<u8>>,
    /// The control file's redo point: the first LSN recovery must replay. Updated in one
    /// sector-sized write, which a power cut cannot tear (PostgreSQL keeps `pg_control`
    /// under 512 bytes for exactly that reason).
    pub redo_lsn: Lsn,
}

impl Media {
    /// Reads and checks the page at its place.
    pub fn read_page(&self, page_no: PageNo) -> Result<Page, PageReadError> {
        match self.pages.get(&page_no) {
            Some(bytes) => Page::decode(bytes),
            None => Err(PageReadError::Malformed),
        }
    }

    /// Every page as it reads now.
    pub fn read_all(&self) -> BTreeMap<PageNo, Result<Page, PageReadError>> {
        crate::sort::map_from(self.pages.keys().map(|&page_no| (page_no, self.read_page(page_no))))
    }

    /// Writes `bytes` to `place` sector by sector, in order, until the power budget runs
    /// out. Returns how many sectors reached the media.
    fn write_sectors(&mut self, place: Place, bytes: &[u8], power: &mut PowerBudget) -> usize {
        let sector_bytes = self.geometry.sector_bytes;
        let target = match place {
            Place::Home(page_no) => self.pages.get_mut(&page_no).expect("write to a page of the file"),
            Place::DoublewriteSlot(slot) => &mut self.doublewrite[slot],
        };
        assert_eq!(target.len(), bytes.len(), "a write covers one whole page");
        let mut written = 0;
        for (sector, chunk) in bytes.chunks(sector_bytes).enumerate() {
            if power.spend().is_err() {
                break;
            }
            target[sector * sector_bytes..sector * sector_bytes + chunk.len()].copy_from_slice(chunk);
            written += 1;
        }
        written
    }

    /// Records a new redo point in the control file: one atomic write.
    fn write_redo_lsn(&mut self, redo_lsn: Lsn, power: &mut PowerBudget) -> Result<(), PowerCut> {
        power.spend()?;
        assert!(redo_lsn >= self.redo_lsn, "the redo point never moves back");
        self.redo_lsn = redo_lsn;
        Ok(())
    }
}

/// One log record of the page engine: a logical change to one page, with the whole page
/// after the change when it is the page's first change since the last checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct LogRecord {
    pub lsn: Lsn,
    pub page_no: PageNo,
    pub op: Op,
    pub key: String,
    /// Empty for a delete.
    pub value: String,
    /// The page's bytes with this record's change already applied.
    #[cfg_attr(feature = "serde", serde(skip))]
    pub image: Option<Vec<u8>>,
}

impl LogRecord {
    /// Bytes this record takes in the log: the tiny store's record plus the image, if any.
    /// The image is the full-page-image protection's cost.
    pub fn log_bytes(&self) -> usize {
        tiny::record_len(self.key.len(), self.value.len()) + self.image.as_ref().map_or(0, Vec::len)
    }

    /// Applies the logical change to a page (without touching its pageLSN).
    pub fn apply_to(&self, page: &mut Page) {
        match self.op {
            Op::Put => {
                page.entries.insert(self.key.clone(), self.value.clone());
            }
            Op::Del => {
                page.entries.remove(&self.key);
            }
        }
    }
}

/// Which page a key lives on: the first route whose prefix the key starts with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyRouter {
    pub routes: Vec<(String, PageNo)>,
}

impl KeyRouter {
    /// Branch B's two leaves: `order:` keys on P1, `user:` keys on P2.
    pub fn tiny_store() -> KeyRouter {
        KeyRouter { routes: vec![("order:".to_string(), PageNo(1)), ("user:".to_string(), PageNo(2))] }
    }

    pub fn page_for(&self, key: &str) -> Option<PageNo> {
        self.routes.iter().find(|(prefix, _)| key.starts_with(prefix.as_str())).map(|&(_, page_no)| page_no)
    }

    /// Every page the router can send a key to, in order.
    pub fn pages(&self) -> Vec<PageNo> {
        let mut pages: Vec<PageNo> = self.routes.iter().map(|&(_, page_no)| page_no).collect();
        crate::sort::sort(&mut pages);
        pages.dedup();
        pages
    }
}

/// Why the engine refused a write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EngineError {
    Geometry(GeometryError),
    /// No route covers the key.
    NoPageForKey { key: String },
    Page(PageError),
}

impl std::fmt::Display for EngineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EngineError::Geometry(error) => write!(f, "page geometry: {error}"),
            EngineError::NoPageForKey { key } => write!(f, "{key}: no page holds this key"),
            EngineError::Page(error) => write!(f, "{error}"),
        }
    }
}

/// How REDO found the page a record changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum PageRead {
    /// Redo already holds the page in memory.
    InBuffer,
    /// Read from the data file; its checksum holds.
    Intact { page_lsn: Lsn },
    /// Read from the data file; its checksum fails, so none of it, pageLSN included, is
    /// trusted.
    Torn,
}

/// What REDO did with one log record: the four branches of the page's pseudocode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum RedoAction {
    /// The record carries a full-page image: the page becomes the image.
    InstallImage,
    /// `r.LSN <= pageLSN`: the change is already on the page.
    Skip,
    /// `r.LSN > pageLSN`: apply the change, set pageLSN to r.LSN.
    Apply,
    /// The page is torn and nothing can restore it: walab starts it from empty and applies
    /// the record, to show exactly what the log alone still holds. The page is damaged.
    RebuildFromEmpty,
}

/// One step of REDO, as data, so a page can animate it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct RedoStep {
    pub lsn: Lsn,
    pub page_no: PageNo,
    pub read: PageRead,
    pub action: RedoAction,
    pub page_lsn_after: Lsn,
    /// The page's entries after the step: `order:7 pen, order:9 book`.
    pub entries_after: String,
}

/// Everything that happens to pages, the log and the control file, in order: the run
/// before the power cut and the recovery after it share this vocabulary.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(tag = "event", rename_all = "snake_case"))]
pub enum PageEvent {
    /// A write: its record is logged (and durable), then applied to the page in memory.
    /// `record_bytes` is the logical record; `image_bytes` the full-page image logged with
    /// it (0 without one).
    Write { lsn: Lsn, page_no: PageNo, op: Op, key: String, value: String, record_bytes: usize, image_bytes: usize, page_lsn: Lsn, entries_after: String },
    /// A page's bytes went to a doublewrite slot; `sectors_written < sectors_total` if the
    /// power failed during it.
    DoublewriteWrite { page_no: PageNo, slot: usize, page_lsn: Lsn, sectors_written: usize, sectors_total: usize },
    /// A page's bytes went to its place in the data file.
    PageWrite { page_no: PageNo, page_lsn: Lsn, sectors_written: usize, sectors_total: usize },
    /// The control file now names this redo point: a checkpoint completed.
    Checkpoint { redo_lsn: Lsn },
    /// The power failed here.
    PowerCut,
    /// Recovery begins: it reads the redo point and will replay `records` log records.
    RecoveryStart { redo_lsn: Lsn, records: usize },
    /// A torn page at its place, copied back whole from its doublewrite slot.
    DoublewriteRestore { page_no: PageNo, slot: usize, page_lsn: Lsn, sectors_written: usize, sectors_total: usize },
    /// One REDO step.
    Redo(RedoStep),
    /// After recovery this page is still torn, or was rebuilt without its old contents.
    Damaged { page_no: PageNo },
    /// Recovery finished: the pages are written back and the redo point moved.
    RecoveryDone { redo_lsn: Lsn },
}

/// One page of the buffer pool.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Frame {
    page: Page,
    dirty: bool,
}

/// Writes pages back: through the doublewrite area first when that is the protection,
/// then each to its place. Stops at a power cut, after logging how far each write got.
///
/// The WAL rule is checked here, once per page: a page may reach the data file only when
/// the log is durable up to its pageLSN.
pub(crate) fn write_back(
    media: &mut Media,
    protection: Protection,
    pages: &[&Page],
    durable_lsn: Lsn,
    power: &mut PowerBudget,
    events: &mut Vec<PageEvent>,
) -> Result<(), PowerCut> {
    let sectors_total = media.geometry.sectors_per_page();
    let mut encoded = Vec::with_capacity(pages.len());
    for page in pages {
        assert!(page.page_lsn <= durable_lsn, "WAL rule: {} at pageLSN {} but log durable to {durable_lsn}", page.page_no, page.page_lsn);
        encoded.push(page.encode(media.geometry).expect("a page in the buffer pool fits its geometry"));
    }
    if protection == Protection::Doublewrite {
        assert!(pages.len() <= media.doublewrite.len(), "the doublewrite area holds the whole batch");
        for (slot, (page, bytes)) in pages.iter().zip(&encoded).enumerate() {
            let sectors_written = media.write_sectors(Place::DoublewriteSlot(slot), bytes, power);
            events.push(PageEvent::DoublewriteWrite { page_no: page.page_no, slot, page_lsn: page.page_lsn, sectors_written, sectors_total });
            if sectors_written < sectors_total {
                return Err(PowerCut);
            }
        }
        // The doublewrite area is synced here, before any page goes to its place.
    }
    for (page, bytes) in pages.iter().zip(&encoded) {
        let sectors_written = media.write_sectors(Place::Home(page.page_no), bytes, power);
        events.push(PageEvent::PageWrite { page_no: page.page_no, page_lsn: page.page_lsn, sectors_written, sectors_total });
        if sectors_written < sectors_total {
            return Err(PowerCut);
        }
    }
    Ok(())
}

/// Copies a doublewrite slot's page back to its place (recovery's first step under
/// doublewrite).
pub(crate) fn restore_from_doublewrite(media: &mut Media, slot: usize, power: &mut PowerBudget, events: &mut Vec<PageEvent>) -> Result<(), PowerCut> {
    let bytes = media.doublewrite[slot].clone();
    let page = Page::decode(&bytes).expect("only an intact copy is restored");
    let sectors_total = media.geometry.sectors_per_page();
    let sectors_written = media.write_sectors(Place::Home(page.page_no), &bytes, power);
    events.push(PageEvent::DoublewriteRestore { page_no: page.page_no, slot, page_lsn: page.page_lsn, sectors_written, sectors_total });
    if sectors_written < sectors_total {
        return Err(PowerCut);
    }
    Ok(())
}

/// Moves the control file's redo point (the last act of a checkpoint).
pub(crate) fn write_checkpoint(media: &mut Media, redo_lsn: Lsn, power: &mut PowerBudget, events: &mut Vec<PageEvent>) -> Result<(), PowerCut> {
    media.write_redo_lsn(redo_lsn, power)?;
    events.push(PageEvent::Checkpoint { redo_lsn });
    Ok(())
}

/// A page-based engine while it runs: buffer pool, log, media.
#[derive(Clone, Debug)]
pub struct PageEngine {
    protection: Protection,
    router: KeyRouter,
    media: Media,
    buffer: BTreeMap<PageNo, Frame>,
    log: Vec<LogRecord>,
    /// The redo point of the last completed checkpoint, as the engine knows it.
    redo_lsn: Lsn,
}

impl PageEngine {
    /// Creates a data file with every routed page formatted empty at pageLSN 0, and a
    /// control file whose redo point is LSN 1: the state right after `initdb`, which ends
    /// with a checkpoint.
    pub fn format(geometry: PageGeometry, protection: Protection, router: KeyRouter) -> Result<PageEngine, EngineError> {
        let geometry = PageGeometry::new(geometry.page_bytes, geometry.sector_bytes).map_err(EngineError::Geometry)?;
        let mut pages = BTreeMap::new();
        let mut buffer = BTreeMap::new();
        for page_no in router.pages() {
            let page = Page::empty(page_no);
            pages.insert(page_no, page.encode(geometry).map_err(EngineError::Page)?);
            buffer.insert(page_no, Frame { page, dirty: false });
        }
        let slots = pages.len();
        let media = Media { geometry, pages, doublewrite: vec![vec![0; geometry.page_bytes]; slots], redo_lsn: 1 };
        Ok(PageEngine { protection, router, media, buffer, log: Vec::new(), redo_lsn: 1 })
    }

    /// The LSN the next write will get.
    pub fn next_lsn(&self) -> Lsn {
        self.log.last().map_or(1, |record| record.lsn + 1)
    }

    /// The log is synced before each write is acknowledged, so all of it is durable.
    pub fn durable_lsn(&self) -> Lsn {
        self.log.last().map_or(0, |record| record.lsn)
    }

    pub fn media(&self) -> &Media {
        &self.media
    }

    pub fn log(&self) -> &[LogRecord] {
        &self.log
    }

    /// The pages as the engine sees them in memory: every change logged so far. After a
    /// power cut, recovery must bring the data file back to exactly this.
    pub fn pages_in_memory(&self) -> BTreeMap<PageNo, Page> {
        crate::sort::map_from(self.buffer.iter().map(|(&page_no, frame)| (page_no, frame.page.clone())))
    }

    /// Pages changed since they were last written back.
    pub fn dirty_pages(&self) -> Vec<PageNo> {
        self.buffer.iter().filter(|(_, frame)| frame.dirty).map(|(&page_no, _)| page_no).collect()
    }

    /// One write, log first: build the record (with the page's full image if this is the
    /// page's first change since the last checkpoint and the protection is full-page
    /// images), make it durable, then change the page in memory. The data file is not
    /// touched: no-force.
    pub fn write(&mut self, op: Op, key: &str, value: &str) -> Result<PageEvent, EngineError> {
        let page_no = self.router.page_for(key).ok_or_else(|| EngineError::NoPageForKey { key: key.to_string() })?;
        let lsn = self.next_lsn();
        let frame = self.buffer.get(&page_no).expect("every routed page is in the buffer pool");
        let first_change_since_checkpoint = frame.page.page_lsn < self.redo_lsn;
        let mut record = LogRecord { lsn, page_no, op, key: key.to_string(), value: value.to_string(), image: None };
        let mut page = frame.page.clone();
        record.apply_to(&mut page);
        page.page_lsn = lsn;
        let bytes = page.encode(self.media.geometry).map_err(EngineError::Page)?;
        if self.protection == Protection::FullPageImages && first_change_since_checkpoint {
            record.image = Some(bytes);
        }
        let event = PageEvent::Write {
            lsn,
            page_no,
            op,
            key: record.key.clone(),
            value: record.value.clone(),
            record_bytes: tiny::record_len(key.len(), value.len()),
            image_bytes: record.image.as_ref().map_or(0, Vec::len),
            page_lsn: lsn,
            entries_after: page.describe_entries(),
        };
        // Log first: the record is durable before the page changes.
        self.log.push(record);
        let frame = self.buffer.get_mut(&page_no).expect("still there");
        assert!(page.page_lsn > frame.page.page_lsn, "pageLSN never decreases");
        *frame = Frame { page, dirty: true };
        Ok(event)
    }

    /// Writes one dirty page back to its place (steal: whenever the buffer pool likes).
    pub fn write_back(&mut self, page_no: PageNo, power: &mut PowerBudget, events: &mut Vec<PageEvent>) -> Result<(), PowerCut> {
        let frame = self.buffer.get(&page_no).expect("a page of the buffer pool");
        let page = frame.page.clone();
        let durable_lsn = self.durable_lsn();
        write_back(&mut self.media, self.protection, &[&page], durable_lsn, power, events)?;
        self.buffer.get_mut(&page_no).expect("still there").dirty = false;
        Ok(())
    }

    /// A checkpoint: choose the redo point (the next LSN), write every dirty page back,
    /// then record the redo point in the control file. Until that last write, recovery
    /// still starts from the previous redo point, so a power cut in the middle loses
    /// nothing.
    pub fn checkpoint(&mut self, power: &mut PowerBudget, events: &mut Vec<PageEvent>) -> Result<(), PowerCut> {
        let redo_lsn = self.next_lsn();
        let dirty: Vec<Page> = self.buffer.values().filter(|frame| frame.dirty).map(|frame| frame.page.clone()).collect();
        let refs: Vec<&Page> = dirty.iter().collect();
        let durable_lsn = self.durable_lsn();
        write_back(&mut self.media, self.protection, &refs, durable_lsn, power, events)?;
        for frame in self.buffer.values_mut() {
            frame.dirty = false;
        }
        write_checkpoint(&mut self.media, redo_lsn, power, events)?;
        self.redo_lsn = redo_lsn;
        Ok(())
    }
}

impl PageEvent {
    /// One line of plain text for a table or a caption.
    pub fn describe(&self) -> String {
        use super::sectors_words as sectors;
        match self {
            PageEvent::Write { lsn, page_no, op, key, value, record_bytes, image_bytes, page_lsn, entries_after } => {
                let change = match op {
                    Op::Put => format!("put {key} {value}"),
                    Op::Del => format!("del {key}"),
                };
                let image = if *image_bytes > 0 { format!(" + {image_bytes} B full-page image") } else { String::new() };
                format!("write {lsn}: {change} on {page_no}, logged: {record_bytes} B record{image}; {page_no} in memory, pageLSN {page_lsn}: {entries_after}")
            }
            PageEvent::DoublewriteWrite { page_no, slot, page_lsn, sectors_written, sectors_total } => {
                format!("doublewrite slot {slot} <- {page_no} (pageLSN {page_lsn}): {}", sectors(*sectors_written, *sectors_total))
            }
            PageEvent::PageWrite { page_no, page_lsn, sectors_written, sectors_total } => {
                format!("write-back {page_no} (pageLSN {page_lsn}) to the data file: {}", sectors(*sectors_written, *sectors_total))
            }
            PageEvent::Checkpoint { redo_lsn } => format!("control file: redo point LSN {redo_lsn}"),
            PageEvent::PowerCut => "POWER CUT".to_string(),
            PageEvent::RecoveryStart { redo_lsn, records } => format!("recovery: redo point LSN {redo_lsn}, {records} log records to replay"),
            PageEvent::DoublewriteRestore { page_no, slot, page_lsn, sectors_written, sectors_total } => {
                format!("{page_no} torn at its place: copy from doublewrite slot {slot} (pageLSN {page_lsn}): {}", sectors(*sectors_written, *sectors_total))
            }
            PageEvent::Redo(step) => {
                let read = match step.read {
                    PageRead::InBuffer => "in memory".to_string(),
                    PageRead::Intact { page_lsn } => format!("read, pageLSN {page_lsn}"),
                    PageRead::Torn => "read, CHECKSUM FAILS".to_string(),
                };
                let action = match step.action {
                    RedoAction::InstallImage => "full-page image installed",
                    RedoAction::Skip => "skip (LSN <= pageLSN)",
                    RedoAction::Apply => "apply",
                    RedoAction::RebuildFromEmpty => "no image: rebuilt from empty",
                };
                format!("redo LSN {} on {} ({read}): {action} -> pageLSN {}: {}", step.lsn, step.page_no, step.page_lsn_after, step.entries_after)
            }
            PageEvent::Damaged { page_no } => format!("{page_no} DAMAGED: its old contents are not in the log since the redo point"),
            PageEvent::RecoveryDone { redo_lsn } => format!("recovery done: redo point LSN {redo_lsn}"),
        }
    }
}
