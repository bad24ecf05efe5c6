//! REDO's drawing: the two pages in the buffer pool and on the data file, sector by
//! sector, and the log, folded from the page engine's events up to the player's step.
//! REDO's pages appear in the buffer pool only as REDO reads them.

use std::collections::BTreeMap;

use walab_core::pages::engine::{PageEvent, PageRead, RedoAction};
use walab_core::pages::page::{Lsn, Page, PageNo};
use walab_core::pages::sqlite_wal::WalEvent;

/// Where the story is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Running,
    /// The power has failed: memory is gone.
    Cut,
    Recovering,
    Done,
}

impl Phase {
    pub fn class(self) -> &'static str {
        match self {
            Phase::Running => "running",
            Phase::Cut => "cut",
            Phase::Recovering => "recovering",
            Phase::Done => "done",
        }
    }
}

/// A page in the buffer pool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemPage {
    pub page_no: u32,
    pub page_lsn: Lsn,
    pub entries: String,
    pub dirty: bool,
    /// Equal to the page as it was in memory before the cut (recovery's target), and
    /// reached by recovery.
    pub final_page: bool,
}

/// A page on the data file: the pageLSN of the version each sector holds (0: the empty
/// page it was created as).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiskPage {
    pub page_no: u32,
    pub sectors: Vec<Lsn>,
    pub damaged: bool,
}

impl DiskPage {
    /// Sectors from two versions: the checksum fails.
    pub fn torn(&self) -> bool {
        self.sectors.windows(2).any(|pair| pair[0] != pair[1])
    }
}

/// What REDO did to one log record, once it has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogMark {
    /// Durable, before recovery or not reached yet.
    Logged,
    Installed,
    Skipped,
    Applied,
    Rebuilt,
}

impl LogMark {
    pub fn class(self) -> &'static str {
        match self {
            LogMark::Logged => "logged",
            LogMark::Installed => "image-installed",
            LogMark::Skipped => "skipped",
            LogMark::Applied => "applied",
            LogMark::Rebuilt => "rebuilt",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogEntry {
    pub lsn: Lsn,
    pub page_no: u32,
    pub image: bool,
    pub mark: LogMark,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PagesAt {
    pub phase: Phase,
    pub buffer: Vec<MemPage>,
    pub disk: Vec<DiskPage>,
    pub log: Vec<LogEntry>,
    pub redo_point: Lsn,
    /// The record REDO handled at this step.
    pub redo_lsn: Option<Lsn>,
    /// The page the step changed (in memory or on the data file).
    pub touched: Option<u32>,
}

/// Folds the first `done` events; `expected` is the pages as memory held them at the cut.
pub fn pages_at(events: &[PageEvent], done: usize, expected: &BTreeMap<PageNo, Page>, sectors_per_page: usize) -> PagesAt {
    let mut buffer: BTreeMap<u32, MemPage> = BTreeMap::new();
    let mut disk: BTreeMap<u32, DiskPage> = walab_core::sort::map_from(
        expected.keys().map(|page_no| (page_no.0, DiskPage { page_no: page_no.0, sectors: vec![0; sectors_per_page], damaged: false })),
    );
    let mut log: Vec<LogEntry> = Vec::new();
    let mut phase = Phase::Running;
    let mut redo_point = 0;
    let mut redo_lsn = None;
    let mut touched = None;
    for event in events.iter().take(done) {
        redo_lsn = None;
        touched = None;
        match event {
            PageEvent::Write { lsn, page_no, image_bytes, page_lsn, entries_after, .. } => {
                buffer.insert(page_no.0, MemPage { page_no: page_no.0, page_lsn: *page_lsn, entries: entries_after.clone(), dirty: true, final_page: false });
                log.push(LogEntry { lsn: *lsn, page_no: page_no.0, image: *image_bytes > 0, mark: LogMark::Logged });
                touched = Some(page_no.0);
            }
            PageEvent::PageWrite { page_no, page_lsn, sectors_written, .. } => {
                if let Some(page) = disk.get_mut(&page_no.0) {
                    for sector in page.sectors.iter_mut().take(*sectors_written) {
                        *sector = *page_lsn;
                    }
                    if !page.torn() {
                        if let Some(mem) = buffer.get_mut(&page_no.0) {
                            mem.dirty = mem.page_lsn != *page_lsn;
                        }
                    }
                }
                touched = Some(page_no.0);
            }
            PageEvent::DoublewriteWrite { page_no, .. } => touched = Some(page_no.0),
            PageEvent::DoublewriteRestore { page_no, page_lsn, .. } => {
                if let Some(page) = disk.get_mut(&page_no.0) {
                    page.sectors.iter_mut().for_each(|sector| *sector = *page_lsn);
                }
                touched = Some(page_no.0);
            }
            PageEvent::Checkpoint { redo_lsn } => redo_point = *redo_lsn,
            PageEvent::PowerCut => {
                buffer.clear();
                phase = Phase::Cut;
            }
            PageEvent::RecoveryStart { redo_lsn, .. } => {
                phase = Phase::Recovering;
                redo_point = *redo_lsn;
            }
            PageEvent::Redo(step) => {
                buffer.insert(
                    step.page_no.0,
                    MemPage { page_no: step.page_no.0, page_lsn: step.page_lsn_after, entries: step.entries_after.clone(), dirty: true, final_page: false },
                );
                if let Some(entry) = log.iter_mut().find(|entry| entry.lsn == step.lsn) {
                    entry.mark = match step.action {
                        RedoAction::InstallImage => LogMark::Installed,
                        RedoAction::Skip => LogMark::Skipped,
                        RedoAction::Apply => LogMark::Applied,
                        RedoAction::RebuildFromEmpty => LogMark::Rebuilt,
                    };
                }
                redo_lsn = Some(step.lsn);
                touched = Some(step.page_no.0);
            }
            PageEvent::Damaged { page_no } => {
                if let Some(page) = disk.get_mut(&page_no.0) {
                    page.damaged = true;
                }
                touched = Some(page_no.0);
            }
            PageEvent::RecoveryDone { redo_lsn } => {
                phase = Phase::Done;
                redo_point = *redo_lsn;
                for (page_no, mem) in buffer.iter_mut() {
                    if let Some(page) = disk.get_mut(page_no) {
                        page.sectors.iter_mut().for_each(|sector| *sector = mem.page_lsn);
                    }
                    mem.dirty = false;
                }
            }
        }
    }
    if matches!(phase, Phase::Recovering | Phase::Done) {
        for mem in buffer.values_mut() {
            mem.final_page = expected.get(&PageNo(mem.page_no)).is_some_and(|page| page.page_lsn == mem.page_lsn && page.describe_entries() == mem.entries);
        }
    }
    PagesAt { phase, buffer: buffer.into_values().collect(), disk: disk.into_values().collect(), log, redo_point, redo_lsn, touched }
}

/// How REDO read a page, in words.
pub fn read_words(read: PageRead) -> String {
    match read {
        PageRead::InBuffer => "already in the buffer pool".to_string(),
        PageRead::Intact { page_lsn } => format!("read from the data file, checksum good, pageLSN {page_lsn}"),
        PageRead::Torn => "read from the data file: its checksum fails, the page is torn".to_string(),
    }
}

/// What REDO did, in words.
pub fn action_words(action: RedoAction) -> &'static str {
    match action {
        RedoAction::InstallImage => "installs the record's full-page image",
        RedoAction::Skip => "skips it: the record's LSN is not above the pageLSN, so the change is already there",
        RedoAction::Apply => "applies it: the record's LSN is above the pageLSN",
        RedoAction::RebuildFromEmpty => "can only rebuild the torn page from empty and apply the record: the page's older rows are lost",
    }
}

/// SQLite's WAL mode at a step: the frames in the `-wal` file and the database file's pages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalAt {
    /// (frame, page, pageLSN, whole): whole is false for a torn frame.
    pub frames: Vec<(usize, u32, Lsn, bool)>,
    /// Per database page, the pageLSN each sector holds.
    pub db: BTreeMap<u32, Vec<Lsn>>,
    pub salt_resets: usize,
    pub cut: bool,
    pub done: bool,
}

pub fn wal_at(events: &[WalEvent], done: usize, sectors_per_page: usize) -> WalAt {
    let mut at = WalAt { frames: Vec::new(), db: BTreeMap::new(), salt_resets: 0, cut: false, done: false };
    for event in events.iter().take(done) {
        match event {
            WalEvent::Commit { lsn, page_no, frame, sectors_written, sectors_total, .. } => {
                at.frames.push((*frame, page_no.0, *lsn, sectors_written == sectors_total));
            }
            WalEvent::CheckpointCopy { page_no, page_lsn, sectors_written, .. } => {
                let sectors = at.db.entry(page_no.0).or_insert_with(|| vec![0; sectors_per_page]);
                for sector in sectors.iter_mut().take(*sectors_written) {
                    *sector = *page_lsn;
                }
            }
            WalEvent::WalReset { .. } => {
                at.frames.clear();
                at.salt_resets += 1;
            }
            WalEvent::PowerCut => at.cut = true,
            WalEvent::WalScan { .. } => {}
            WalEvent::RecoveryDone => at.done = true,
        }
    }
    at
}
