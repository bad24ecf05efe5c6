//! SQLite's WAL mode: a second page engine whose log holds whole pages.
//!
//! PostgreSQL and InnoDB log *changes* and write pages back in place, so they need
//! pageLSNs, a redo pass, and full-page images or a doublewrite buffer against torn
//! pages. SQLite in WAL mode takes another road. A transaction appends a *frame* for
//! every page it changed to the `-wal` file: a 24-byte header and the whole new page. The
//! last frame of a transaction is marked as its commit frame (it carries the database
//! size). With `synchronous = FULL` the WAL is synced at every commit, which is what makes
//! the commit durable. Readers look a page up in the WAL first (the "wal-index") and fall
//! back to the database file.
//!
//! A *checkpoint* copies the newest committed frame of each page back into the database
//! file, syncs it, and only then *resets* the WAL: the next transaction writes from the
//! start of the WAL again under a new salt. Frames left from before the reset carry the
//! old salt, and every frame's checksum chains from the previous one, so an old frame can
//! never be mistaken for a new one (the same problem as Part 7's recycled segments, solved
//! the same way).
//!
//! Why there is no torn-page problem: the database file is only ever written by a
//! checkpoint, and until the checkpoint completes the WAL still holds a whole copy of
//! every page it copies. A power cut that tears a page in the database file is repaired
//! by running the checkpoint again. And a torn *frame* is a torn log tail: its checksum
//! fails, the scan stops there, and since the transaction's commit frame never became
//! durable, nobody was told OK.
//!
//! The model here runs branch B's writes 1 to 8, each a one-page transaction, with a
//! checkpoint after write 4 and one after write 8 that the power cuts halfway through
//! P1's copy. There is no "write back P2 after write 6" in WAL mode: pages reach the
//! database file only through checkpoints.

use std::collections::BTreeMap;

use super::engine::{KeyRouter, PowerBudget, PowerCut};
use super::page::{Lsn, Page, PageError, PageGeometry, PageNo};
use crate::checksum::crc32c;
use crate::codec::Op;
use crate::tiny_store;

/// Bytes of a frame header: page number, commit size, salt, checksum (4 each) and the
/// LSN this model adds for display (8).
pub const FRAME_HEADER_BYTES: usize = 24;

/// What survives a power cut: the database file, the WAL file and its header's salt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalMedia {
    pub geometry: PageGeometry,
    pub db: BTreeMap<PageNo, Vec<u8>>,
    pub wal: Vec<u8>,
    /// The WAL header's salt, rewritten (one atomic sector) at every reset.
    pub salt: u32,
}

/// One step of the story, as data.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(tag = "event", rename_all = "snake_case"))]
pub enum WalEvent {
    /// A one-page transaction: its commit frame appended to the WAL and synced.
    Commit { lsn: Lsn, page_no: PageNo, frame: usize, sectors_written: usize, sectors_total: usize, entries_after: String },
    /// A checkpoint copied a page's newest committed frame into the database file.
    CheckpointCopy { page_no: PageNo, from_frame: usize, page_lsn: Lsn, sectors_written: usize, sectors_total: usize },
    /// The WAL starts over under a new salt.
    WalReset { salt: u32 },
    PowerCut,
    /// Recovery's scan of the WAL: valid frames, and the committed prefix it keeps.
    WalScan { frames_valid: usize, frames_committed: usize },
    RecoveryDone,
}

impl WalEvent {
    /// One line of plain text.
    pub fn describe(&self) -> String {
        use super::sectors_words as sectors;
        match self {
            WalEvent::Commit { lsn, page_no, frame, sectors_written, sectors_total, entries_after } => {
                format!("write {lsn}: commit frame {frame} = whole {page_no} ({entries_after}) appended to the WAL: {}", sectors(*sectors_written, *sectors_total))
            }
            WalEvent::CheckpointCopy { page_no, from_frame, page_lsn, sectors_written, sectors_total } => {
                format!("checkpoint: {page_no} (pageLSN {page_lsn}) from frame {from_frame} into the database file: {}", sectors(*sectors_written, *sectors_total))
            }
            WalEvent::WalReset { salt } => format!("WAL reset: new salt {salt}, frames start over"),
            WalEvent::PowerCut => "POWER CUT".to_string(),
            WalEvent::WalScan { frames_valid, frames_committed } => {
                format!("recovery: {frames_valid} valid frames in the WAL, {frames_committed} up to the last commit frame")
            }
            WalEvent::RecoveryDone => "recovery done: the WAL's pages are in the database file".to_string(),
        }
    }
}

/// A frame read back from the WAL.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Frame {
    page: Page,
    commit: bool,
}

impl WalMedia {
    fn frame_bytes(&self) -> usize {
        FRAME_HEADER_BYTES + self.geometry.page_bytes
    }

    /// Writes `bytes` at `offset` of the WAL (growing it) or of a database page, sector
    /// by sector; returns the sectors that reached the media.
    fn write_wal(&mut self, offset: usize, bytes: &[u8], power: &mut PowerBudget) -> usize {
        if self.wal.len() < offset + bytes.len() {
            self.wal.resize(offset + bytes.len(), 0);
        }
        let sector = self.geometry.sector_bytes;
        let mut written = 0;
        for (index, chunk) in bytes.chunks(sector).enumerate() {
            if power.spend_one().is_err() {
                break;
            }
            self.wal[offset + index * sector..offset + index * sector + chunk.len()].copy_from_slice(chunk);
            written += 1;
        }
        written
    }

    fn write_db(&mut self, page_no: PageNo, bytes: &[u8], power: &mut PowerBudget) -> usize {
        let sector = self.geometry.sector_bytes;
        let target = self.db.get_mut(&page_no).expect("a page of the database");
        let mut written = 0;
        for (index, chunk) in bytes.chunks(sector).enumerate() {
            if power.spend_one().is_err() {
                break;
            }
            target[index * sector..index * sector + chunk.len()].copy_from_slice(chunk);
            written += 1;
        }
        written
    }

    /// Scans the WAL from the start: frames whose salt and chained checksum hold, up to
    /// the first that fails. Returns every valid frame and how many end at a commit.
    fn scan(&self) -> (Vec<Frame>, usize) {
        let frame_bytes = self.frame_bytes();
        let mut frames = Vec::new();
        let mut previous = self.salt;
        let mut committed = 0;
        for chunk in self.wal.chunks_exact(frame_bytes) {
            let header = &chunk[..FRAME_HEADER_BYTES];
            let salt = u32::from_le_bytes(header[8..12].try_into().expect("four bytes"));
            let stored = u32::from_le_bytes(header[12..16].try_into().expect("four bytes"));
            if salt != self.salt || stored != crc32c(&[&previous.to_le_bytes(), &header[..12], &header[16..], &chunk[FRAME_HEADER_BYTES..]]) {
                break;
            }
            let Ok(page) = Page::decode(&chunk[FRAME_HEADER_BYTES..]) else { break };
            let commit = u32::from_le_bytes(header[4..8].try_into().expect("four bytes")) != 0;
            previous = stored;
            frames.push(Frame { page, commit });
            if commit {
                committed = frames.len();
            }
        }
        (frames, committed)
    }

    /// The pages a reader sees: the newest committed frame of each page, else the
    /// database file's page.
    pub fn pages_as_read(&self) -> BTreeMap<PageNo, Result<Page, super::page::PageReadError>> {
        let (frames, committed) = self.scan();
        let mut pages = crate::sort::map_from(self.db.iter().map(|(&page_no, bytes)| (page_no, Page::decode(bytes))));
        for frame in &frames[..committed] {
            pages.insert(frame.page.page_no, Ok(frame.page.clone()));
        }
        pages
    }
}

impl PowerBudget {
    fn spend_one(&mut self) -> Result<(), PowerCut> {
        // The WAL engine shares the page engine's power budget.
        self.spend_sector()
    }
}

/// Why a transaction did not commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WalStop {
    /// The power failed while its frame was appended.
    PowerCut,
    /// Its page would not fit the geometry's page size.
    Page(PageError),
}

/// SQLite in WAL mode, running.
#[derive(Clone, Debug)]
pub struct WalEngine {
    router: KeyRouter,
    media: WalMedia,
    pages: BTreeMap<PageNo, Page>,
    /// Where the next frame goes and the checksum it chains from.
    frames_in_wal: usize,
    last_checksum: u32,
    next_lsn: Lsn,
}

impl WalEngine {
    /// An empty database file (every routed page formatted) and an empty WAL, salt 1.
    pub fn create(geometry: PageGeometry, router: KeyRouter) -> WalEngine {
        let mut db = BTreeMap::new();
        let mut pages = BTreeMap::new();
        for page_no in router.pages() {
            let page = Page::empty(page_no);
            db.insert(page_no, page.encode(geometry).expect("an empty page fits"));
            pages.insert(page_no, page);
        }
        WalEngine { router, media: WalMedia { geometry, db, wal: Vec::new(), salt: 1 }, pages, frames_in_wal: 0, last_checksum: 1, next_lsn: 1 }
    }

    pub fn media(&self) -> &WalMedia {
        &self.media
    }

    /// Every committed change, as the engine holds it in memory.
    pub fn pages_in_memory(&self) -> BTreeMap<PageNo, Page> {
        self.pages.clone()
    }

    /// One transaction: change the page, append its whole image as a commit frame, sync.
    /// On a power cut during the append the transaction is not committed (and the
    /// engine's memory is thrown away with the process). A page too small for its
    /// entries refuses the transaction before anything is written.
    pub fn write(&mut self, op: Op, key: &str, value: &str, power: &mut PowerBudget, events: &mut Vec<WalEvent>) -> Result<(), WalStop> {
        let page_no = self.router.page_for(key).expect("the tiny store's keys all route");
        let mut page = self.pages[&page_no].clone();
        match op {
            Op::Put => {
                page.entries.insert(key.to_string(), value.to_string());
            }
            Op::Del => {
                page.entries.remove(key);
            }
        }
        page.page_lsn = self.next_lsn;
        let image = page.encode(self.media.geometry).map_err(WalStop::Page)?;
        let mut header = [0u8; FRAME_HEADER_BYTES];
        header[..4].copy_from_slice(&page_no.0.to_le_bytes());
        header[4..8].copy_from_slice(&(self.pages.len() as u32).to_le_bytes());
        header[8..12].copy_from_slice(&self.media.salt.to_le_bytes());
        header[16..24].copy_from_slice(&page.page_lsn.to_le_bytes());
        let checksum = crc32c(&[&self.last_checksum.to_le_bytes(), &header[..12], &header[16..], &image]);
        header[12..16].copy_from_slice(&checksum.to_le_bytes());
        let mut frame = header.to_vec();
        frame.extend_from_slice(&image);
        let offset = self.frames_in_wal * self.media.frame_bytes();
        let sectors_total = frame.len().div_ceil(self.media.geometry.sector_bytes);
        let sectors_written = self.media.write_wal(offset, &frame, power);
        events.push(WalEvent::Commit { lsn: page.page_lsn, page_no, frame: self.frames_in_wal + 1, sectors_written, sectors_total, entries_after: page.describe_entries() });
        if sectors_written < sectors_total {
            return Err(WalStop::PowerCut);
        }
        self.frames_in_wal += 1;
        self.last_checksum = checksum;
        self.next_lsn += 1;
        self.pages.insert(page_no, page);
        Ok(())
    }

    /// A checkpoint: copy the newest committed frame of each page into the database
    /// file, then reset the WAL.
    pub fn checkpoint(&mut self, power: &mut PowerBudget, events: &mut Vec<WalEvent>) -> Result<(), PowerCut> {
        checkpoint(&mut self.media, power, events)?;
        self.frames_in_wal = 0;
        self.last_checksum = self.media.salt;
        Ok(())
    }
}

/// Copies the WAL's committed pages into the database file, then resets the WAL.
/// Recovery runs exactly this; running it twice changes nothing the second time.
pub fn checkpoint(media: &mut WalMedia, power: &mut PowerBudget, events: &mut Vec<WalEvent>) -> Result<(), PowerCut> {
    let (frames, committed) = media.scan();
    let mut newest: BTreeMap<PageNo, (usize, &Frame)> = BTreeMap::new();
    for (index, frame) in frames[..committed].iter().enumerate() {
        newest.insert(frame.page.page_no, (index + 1, frame));
    }
    let copies: Vec<(PageNo, usize, Page)> = newest.into_iter().map(|(page_no, (index, frame))| (page_no, index, frame.page.clone())).collect();
    for (page_no, from_frame, page) in copies {
        let bytes = page.encode(media.geometry).expect("a frame's page fits");
        let sectors_total = media.geometry.sectors_per_page();
        let sectors_written = media.write_db(page_no, &bytes, power);
        events.push(WalEvent::CheckpointCopy { page_no, from_frame, page_lsn: page.page_lsn, sectors_written, sectors_total });
        if sectors_written < sectors_total {
            return Err(PowerCut);
        }
    }
    // The database file is synced here; only then may the WAL start over.
    power.spend_one()?;
    media.salt += 1;
    events.push(WalEvent::WalReset { salt: media.salt });
    Ok(())
}

/// Recovery in WAL mode: scan the WAL, then checkpoint what it holds.
pub fn recover(media: &mut WalMedia, power: &mut PowerBudget) -> (Vec<WalEvent>, bool) {
    let (frames, committed) = media.scan();
    let mut events = vec![WalEvent::WalScan { frames_valid: frames.len(), frames_committed: committed }];
    let completed = checkpoint(media, power, &mut events).is_ok();
    events.push(if completed { WalEvent::RecoveryDone } else { WalEvent::PowerCut });
    (events, completed)
}

/// Branch B in WAL mode, crashed: writes 1 to `after_write` with a checkpoint after
/// write 4 and after write 8, the power failing once `sector_writes` sector writes of
/// the steps after `after_write` have reached the media.
#[derive(Clone, Debug)]
pub struct WalCrash {
    pub events: Vec<WalEvent>,
    pub media: WalMedia,
    pub expected: BTreeMap<PageNo, Page>,
}

/// Plays branch B in WAL mode up to a cut. `sector_writes: None` is the page's cut:
/// halfway through the first page copied by the checkpoint after `after_write` (or right
/// after the write when no checkpoint follows it).
pub fn crash(geometry: PageGeometry, after_write: Lsn, sector_writes: Option<usize>) -> Result<WalCrash, super::branch_b::BranchBError> {
    if !(1..=super::branch_b::LAST_WRITE).contains(&after_write) {
        return Err(super::branch_b::BranchBError::CutOutOfRange { after_write });
    }
    let geometry = PageGeometry::new(geometry.page_bytes, geometry.sector_bytes).map_err(|error| super::branch_b::BranchBError::Engine(super::engine::EngineError::Geometry(error)))?;
    let mut engine = WalEngine::create(geometry, KeyRouter::tiny_store());
    let mut events = Vec::new();
    let checkpoint_after = |id: Lsn| id == super::branch_b::CHECKPOINT_AFTER_WRITE || id == super::branch_b::LAST_WRITE;
    for write in &tiny_store::WRITES[..after_write as usize] {
        let last = write.id == after_write;
        let mut power = PowerBudget::unlimited();
        match engine.write(write.op, write.key, write.value, &mut power, &mut events) {
            Ok(()) => {}
            Err(WalStop::PowerCut) => break,
            Err(WalStop::Page(error)) => return Err(super::branch_b::BranchBError::Engine(super::engine::EngineError::Page(error))),
        }
        let mut power = if last { PowerBudget::cut_after(sector_writes.unwrap_or(geometry.sectors_per_page() / 2)) } else { PowerBudget::unlimited() };
        let step = if checkpoint_after(write.id) { engine.checkpoint(&mut power, &mut events) } else { Ok(()) };
        if last || step.is_err() {
            break;
        }
    }
    events.push(WalEvent::PowerCut);
    Ok(WalCrash { events, media: engine.media().clone(), expected: engine.pages_in_memory() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::expect;

    #[test]
    fn wal_mode_recovers_branch_b_from_whole_pages() {
        let crash = crash(PageGeometry::TINY, 8, None).unwrap();
        let mut media = crash.media.clone();
        let (recovery, completed) = recover(&mut media, &mut PowerBudget::unlimited());
        assert!(completed);
        let text: String = crash.events.iter().chain(&recovery).map(|event| event.describe() + "\n").collect();
        expect![[r#"
            write 1: commit frame 1 = whole P2 (user:1 alice) appended to the WAL: 3/3 sectors
            write 2: commit frame 2 = whole P2 (user:1 alice, user:2 bob) appended to the WAL: 3/3 sectors
            write 3: commit frame 3 = whole P1 (order:9 book) appended to the WAL: 3/3 sectors
            write 4: commit frame 4 = whole P2 (user:1 alice, user:2 bob, user:3 carol) appended to the WAL: 3/3 sectors
            checkpoint: P1 (pageLSN 3) from frame 3 into the database file: 2/2 sectors
            checkpoint: P2 (pageLSN 4) from frame 4 into the database file: 2/2 sectors
            WAL reset: new salt 2, frames start over
            write 5: commit frame 1 = whole P2 (user:1 alicia, user:2 bob, user:3 carol) appended to the WAL: 3/3 sectors
            write 6: commit frame 2 = whole P2 (user:1 alicia, user:3 carol) appended to the WAL: 3/3 sectors
            write 7: commit frame 3 = whole P1 (order:7 pen, order:9 book) appended to the WAL: 3/3 sectors
            write 8: commit frame 4 = whole P2 (user:1 alicia, user:3 carol, user:4 dave) appended to the WAL: 3/3 sectors
            checkpoint: P1 (pageLSN 7) from frame 3 into the database file: TORN: 1 of 2 sectors
            POWER CUT
            recovery: 4 valid frames in the WAL, 4 up to the last commit frame
            checkpoint: P1 (pageLSN 7) from frame 3 into the database file: 2/2 sectors
            checkpoint: P2 (pageLSN 8) from frame 4 into the database file: 2/2 sectors
            WAL reset: new salt 3, frames start over
            recovery done: the WAL's pages are in the database file
        "#]]
        .assert_eq(&text);
        let pages: Vec<String> = media.db.values().map(|bytes| {
            let page = Page::decode(bytes).unwrap();
            format!("{} = {} (pageLSN {})", page.page_no, page.describe_entries(), page.page_lsn)
        }).collect();
        assert_eq!(pages, ["P1 = order:7 pen, order:9 book (pageLSN 7)", "P2 = user:1 alicia, user:3 carol, user:4 dave (pageLSN 8)"]);
    }

    #[test]
    fn a_page_too_small_for_its_entries_is_refused_not_a_panic() {
        // 32 bytes hold P2's header and user:1's entry, not user:2's beside it.
        let geometry = PageGeometry::new(32, 32).unwrap();
        let error = crash(geometry, 2, None).unwrap_err();
        assert!(matches!(error, super::super::branch_b::BranchBError::Engine(super::super::engine::EngineError::Page(PageError::Full { .. }))), "{error:?}");
        assert!(crash(PageGeometry::TINY, 2, None).is_ok());
    }

    /// Every cut of the run, every cut of recovery, then recovery again: the database
    /// file always ends with every committed transaction, and only those.
    #[test]
    fn wal_mode_is_safe_at_every_cut() {
        for geometry in [PageGeometry::TINY, PageGeometry::POSTGRES] {
            for after_write in 1..=super::super::branch_b::LAST_WRITE {
                // Every sector on the tiny pages; on 8 KiB pages the boundaries that matter.
                let sectors = geometry.sectors_per_page();
                let cuts: Vec<usize> = if geometry == PageGeometry::TINY { (0..=2 * sectors + 2).collect() } else { vec![0, sectors / 2, sectors, sectors + 1, 2 * sectors + 1] };
                for sector_writes in cuts {
                    let crash = crash(geometry, after_write, Some(sector_writes)).unwrap();
                    let expected: BTreeMap<PageNo, Result<Page, _>> = crash.expected.iter().map(|(no, page)| (*no, Ok(page.clone()))).collect();
                    assert_eq!(crash.media.pages_as_read(), expected, "readers see every commit before recovery");
                    let mut clean = crash.media.clone();
                    let mut power = PowerBudget::unlimited();
                    assert!(recover(&mut clean, &mut power).1);
                    let spent = power.spent();
                    let db_after = |media: &WalMedia| media.db.iter().map(|(no, bytes)| (*no, Page::decode(bytes))).collect::<BTreeMap<_, _>>();
                    assert_eq!(db_after(&clean), expected);
                    let step = if geometry == PageGeometry::TINY { 1 } else { 5 };
                    for cut in (0..spent).step_by(step) {
                        let mut media = crash.media.clone();
                        assert!(!recover(&mut media, &mut PowerBudget::cut_after(cut)).1);
                        assert!(recover(&mut media, &mut PowerBudget::unlimited()).1);
                        assert_eq!(db_after(&media), expected, "{geometry:?} after {after_write}, {sector_writes} then {cut}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_torn_commit_frame_is_not_a_commit() {
        // The power fails during write 5's frame (the 3-sector frame gets 1 sector).
        let mut engine = WalEngine::create(PageGeometry::TINY, KeyRouter::tiny_store());
        let mut events = Vec::new();
        for write in &tiny_store::WRITES[..4] {
            engine.write(write.op, write.key, write.value, &mut PowerBudget::unlimited(), &mut events).unwrap();
        }
        let fifth = &tiny_store::WRITES[4];
        assert!(engine.write(fifth.op, fifth.key, fifth.value, &mut PowerBudget::cut_after(1), &mut events).is_err());
        let mut media = engine.media().clone();
        let (recovery, _) = recover(&mut media, &mut PowerBudget::unlimited());
        assert_eq!(recovery[0], WalEvent::WalScan { frames_valid: 4, frames_committed: 4 });
        assert_eq!(Page::decode(&media.db[&PageNo(2)]).unwrap().describe_entries(), "user:1 alice, user:2 bob, user:3 carol");
    }
}
