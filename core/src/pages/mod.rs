//! Part 9: the write-ahead log of a page-based engine (PostgreSQL, InnoDB, SQLite), and
//! ARIES-style redo.
//!
//! An LSM tree (Parts 2 to 8) never changes a file in place, so its log only has to be
//! replayed into a MemTable. A B-tree engine keeps its data in fixed-size pages and
//! changes them in place. It logs first as well, but the changed page goes back to its
//! place in the data file later, whenever the buffer pool decides:
//!
//! - **no-force**: a commit waits for its log record, never for its pages;
//! - **steal**: a page may be written back before the transaction that changed it
//!   commits (so a real engine also logs undo information; the tiny store's writes are
//!   single-record transactions and need none);
//! - **the WAL rule for pages**: a page reaches the data file only once the log is durable
//!   up to that page's last change ([`engine`] asserts it at every write-back).
//!
//! So after a crash the data file holds pages of many ages, and recovery must bring each
//! one forward by replaying the log. Two problems follow, and this module solves both the
//! way real engines do.
//!
//! **Replay must be safe to repeat.** Each page carries its *pageLSN*, the LSN of the last
//! record applied to it. Redo applies a record only when its LSN is above the page's, so
//! replaying twice, or crashing during recovery and starting over, changes nothing the
//! second time. A *checkpoint* writes the dirty pages back and then records a *redo point*
//! in the control file: every change below it is on the data pages, so recovery starts
//! there and older log segments can go (Part 8's first gate).
//!
//! **A page can be torn.** A page (8 KiB, 16 KiB) is many device sectors, and a power cut
//! during its write-back can leave some sectors new and some old. A logical record such as
//! "put order:7 pen" cannot repair a page that is half garbage, so the engine needs a
//! whole good copy from somewhere:
//!
//! - **full-page images** (PostgreSQL): the first change to a page after a checkpoint logs
//!   the whole page. Redo installs the image and replays from there, whatever the torn
//!   page claims about itself;
//! - **a doublewrite buffer** (InnoDB): every write-back goes first to a scratch area,
//!   which is synced, and only then to the pages' places; a torn page is copied back from
//!   the scratch area before redo starts.
//!
//! The page checksum is what tells a torn page from a whole one. Without either protection
//! the checksum can only *detect* the damage: in branch B, P1's only copy of `order:9 book`
//! was on the page, written before the checkpoint, so no record since the redo point
//! holds it, and it is gone.
//!
//! The submodules:
//! - [`page`]: the page format (header in front, entries packed at the end, a CRC32C over
//!   the whole page) and its geometry (page and sector sizes);
//! - [`engine`]: the media (data file, doublewrite area, control file), the engine's
//!   buffer pool and log, write-back sector by sector against a power budget, and the
//!   event vocabulary ([`engine::PageEvent`]) that a page can animate;
//! - [`recovery`]: doublewrite repair, REDO exactly as the teaching page writes it, the
//!   end-of-recovery checkpoint;
//! - [`branch_b`]: the tiny store's branch B, with its golden tests and the exhaustive
//!   cut-the-power-everywhere tests;
//! - [`sqlite_wal`]: the same branch in SQLite's WAL mode, whose log holds whole pages
//!   and whose checkpoint copies them back, so a torn database page is simply copied
//!   again.

pub mod branch_b;
pub mod engine;
pub mod page;
pub mod recovery;
pub mod sqlite_wal;

pub use engine::{PageEvent, Protection, RedoAction, RedoStep};
pub use page::{Lsn, Page, PageGeometry, PageNo};

/// How much of a page write reached the disk, in words: `4/4 sectors` or
/// `TORN: 1 of 4 sectors`. Shared by the page engine's and SQLite's event captions.
pub(crate) fn sectors_words(written: usize, total: usize) -> String {
    if written == total {
        format!("{total}/{total} sectors")
    } else {
        format!("TORN: {written} of {total} sectors")
    }
}
