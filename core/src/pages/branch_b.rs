//! Branch B of the tiny store: writes 1 to 8 on two leaf pages, a checkpoint, two
//! write-backs, and a power cut that tears one of them.
//!
//! The plan, fixed by Part 9 of the teaching page:
//!
//! | after write | what the engine does                                              |
//! | ----------- | ----------------------------------------------------------------- |
//! | 4           | checkpoint: P1 (pageLSN 3) and P2 (pageLSN 4) written, redo point 5 |
//! | 6           | P2 written back (pageLSN 6)                                        |
//! | 8           | P1 written back (pageLSN 7): the power fails halfway through        |
//!
//! P1 holds the `order:` keys and P2 the `user:` keys (see [`crate::tiny_store`] for why
//! writes 1 to 8 are what they are). Under full-page images, write 5 is P2's first change
//! after the checkpoint and write 7 is P1's, so those two records carry images. Writes 1
//! and 3 carry images too, relative to the redo point the freshly formatted file starts
//! with.
//!
//! [`run`] plays the plan up to a [`CutPoint`], cuts the power, and recovers. Any cut
//! point works, not only the page's, which is what the exhaustive tests use.

use std::collections::BTreeMap;

use super::engine::{EngineError, KeyRouter, LogRecord, Media, PageEngine, PageEvent, PowerBudget, Protection};
use super::page::{Lsn, Page, PageGeometry, PageNo, PageReadError};
use super::recovery::{recover, Recovery};
use crate::tiny_store;

/// The writes branch B runs: 1 to 8.
pub const LAST_WRITE: Lsn = 8;
/// The checkpoint follows write 4.
pub const CHECKPOINT_AFTER_WRITE: Lsn = 4;
/// P2 is written back after write 6.
pub const P2_WRITE_BACK_AFTER_WRITE: Lsn = 6;
/// P1 is written back after write 8, and that write-back is the page's torn one.
pub const P1_WRITE_BACK_AFTER_WRITE: Lsn = 8;

/// Where the power fails: during whatever follows write `after_write` (a checkpoint, a
/// write-back, or nothing), once `sector_writes` sector writes of it have reached the
/// media. `None` means the page's choice: halfway through the first page's write to its
/// place (after the doublewrite copies, under doublewrite).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct CutPoint {
    pub after_write: Lsn,
    pub sector_writes: Option<usize>,
}

impl CutPoint {
    /// The teaching page's cut: P1's write-back after write 8, torn halfway.
    pub const PAGE: CutPoint = CutPoint { after_write: P1_WRITE_BACK_AFTER_WRITE, sector_writes: None };
}

/// Why branch B cannot run as asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BranchBError {
    /// Branch B runs writes 1 to 8.
    CutOutOfRange { after_write: Lsn },
    Engine(EngineError),
}

impl std::fmt::Display for BranchBError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BranchBError::CutOutOfRange { after_write } => {
                write!(f, "branch b runs writes 1 to {LAST_WRITE}; cannot cut after write {after_write}")
            }
            BranchBError::Engine(error) => write!(f, "{error}"),
        }
    }
}

/// The engine's state at the power cut, before recovery.
#[derive(Clone, Debug)]
pub struct Crash {
    pub protection: Protection,
    /// The run, ending with the power cut.
    pub events: Vec<PageEvent>,
    /// The durable log.
    pub log: Vec<LogRecord>,
    /// What was on stable storage when the power failed.
    pub media: Media,
    /// The pages in memory at the cut: every logged change. Recovery must reach these.
    pub expected: BTreeMap<PageNo, Page>,
}

/// A whole branch B: the run, the crash, the recovery.
#[derive(Clone, Debug)]
pub struct BranchB {
    pub crash: Crash,
    /// How the data file's pages read at the cut.
    pub pages_at_cut: BTreeMap<PageNo, Result<Page, PageReadError>>,
    pub recovery: Recovery,
    /// How they read after recovery.
    pub pages_after: BTreeMap<PageNo, Result<Page, PageReadError>>,
}

impl BranchB {
    /// True when recovery brought back exactly the pages the engine had in memory.
    pub fn recovered_everything(&self) -> bool {
        self.pages_after.len() == self.crash.expected.len()
            && self.crash.expected.iter().all(|(page_no, page)| self.pages_after.get(page_no) == Some(&Ok(page.clone())))
    }
}

/// The page's default tear for the step after `after_write`: halfway through the first
/// page's write to its place.
fn default_sector_writes(geometry: PageGeometry, protection: Protection, pages_in_batch: usize) -> usize {
    let half_page = geometry.sectors_per_page() / 2;
    match protection {
        Protection::Doublewrite => pages_in_batch * geometry.sectors_per_page() + half_page,
        Protection::FullPageImages | Protection::None => half_page,
    }
}

/// Plays writes 1 to `cut.after_write` and the step after it, and cuts the power.
pub fn crash(geometry: PageGeometry, protection: Protection, cut: CutPoint) -> Result<Crash, BranchBError> {
    if !(1..=LAST_WRITE).contains(&cut.after_write) {
        return Err(BranchBError::CutOutOfRange { after_write: cut.after_write });
    }
    let mut engine = PageEngine::format(geometry, protection, KeyRouter::tiny_store()).map_err(BranchBError::Engine)?;
    let mut events = Vec::new();
    for write in &tiny_store::WRITES[..cut.after_write as usize] {
        let event = engine.write(write.op, write.key, write.value).map_err(BranchBError::Engine)?;
        assert_eq!(engine.durable_lsn(), write.id, "write n is LSN n");
        events.push(event);
        let last = write.id == cut.after_write;
        let mut power = if last {
            let batch = match write.id {
                CHECKPOINT_AFTER_WRITE => engine.dirty_pages().len(),
                _ => 1,
            };
            PowerBudget::cut_after(cut.sector_writes.unwrap_or_else(|| default_sector_writes(engine.media().geometry, protection, batch)))
        } else {
            PowerBudget::unlimited()
        };
        let step = match write.id {
            CHECKPOINT_AFTER_WRITE => engine.checkpoint(&mut power, &mut events),
            P2_WRITE_BACK_AFTER_WRITE => engine.write_back(PageNo(2), &mut power, &mut events),
            P1_WRITE_BACK_AFTER_WRITE => engine.write_back(PageNo(1), &mut power, &mut events),
            _ => Ok(()),
        };
        if last || step.is_err() {
            break;
        }
    }
    events.push(PageEvent::PowerCut);
    Ok(Crash { protection, events, log: engine.log().to_vec(), media: engine.media().clone(), expected: engine.pages_in_memory() })
}

/// Crashes at `cut` and recovers with the power on.
pub fn run(geometry: PageGeometry, protection: Protection, cut: CutPoint) -> Result<BranchB, BranchBError> {
    let crash = crash(geometry, protection, cut)?;
    let pages_at_cut = crash.media.read_all();
    let mut media = crash.media.clone();
    let recovery = recover(&mut media, &crash.log, protection, &mut PowerBudget::unlimited());
    let pages_after = media.read_all();
    Ok(BranchB { crash, pages_at_cut, recovery, pages_after })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pages::engine::RedoAction;
    use expect_test::expect;

    const PROTECTED: [Protection; 2] = [Protection::FullPageImages, Protection::Doublewrite];
    const GEOMETRIES: [PageGeometry; 2] = [PageGeometry::TINY, PageGeometry::POSTGRES];

    fn page_text(page: &Result<Page, PageReadError>) -> String {
        match page {
            Ok(page) => format!("{}, pageLSN {}", page.describe_entries(), page.page_lsn),
            Err(error) => format!("{error:?}"),
        }
    }

    fn final_pages(branch: &BranchB) -> String {
        branch.pages_after.iter().map(|(page_no, page)| format!("{page_no} = {}\n", page_text(page))).collect()
    }

    #[test]
    fn part9_with_full_page_images_and_with_doublewrite_recovers_both_pages() {
        for geometry in GEOMETRIES {
            for protection in PROTECTED {
                let branch = run(geometry, protection, CutPoint::PAGE).unwrap();
                // The cut really tore P1 at its place.
                assert_eq!(branch.pages_at_cut[&PageNo(1)], Err(PageReadError::Checksum), "{protection:?} {geometry:?}");
                assert!(branch.recovery.completed);
                assert!(branch.recovery.damaged.is_empty());
                assert!(branch.recovered_everything());
                expect![[r#"
                    P1 = order:7 pen, order:9 book, pageLSN 7
                    P2 = user:1 alicia, user:3 carol, user:4 dave, pageLSN 8
                "#]]
                .assert_eq(&final_pages(&branch));
            }
        }
    }

    #[test]
    fn part9_with_neither_p1_loses_order_9_book() {
        for geometry in GEOMETRIES {
            let branch = run(geometry, Protection::None, CutPoint::PAGE).unwrap();
            assert_eq!(branch.recovery.damaged, vec![PageNo(1)]);
            assert!(!branch.recovered_everything());
            expect![[r#"
                P1 = order:7 pen, pageLSN 7
                P2 = user:1 alicia, user:3 carol, user:4 dave, pageLSN 8
            "#]]
            .assert_eq(&final_pages(&branch));
        }
    }

    #[test]
    fn part9_setup_checkpoint_images_and_write_backs() {
        let branch = run(PageGeometry::TINY, Protection::FullPageImages, CutPoint::PAGE).unwrap();
        let images: Vec<Lsn> = branch.crash.log.iter().filter(|record| record.image.is_some()).map(|record| record.lsn).collect();
        // 1 and 3 against the fresh file's redo point; 5 (P2) and 7 (P1) after the checkpoint.
        assert_eq!(images, [1, 3, 5, 7]);
        let checkpoint_redo: Vec<Lsn> = branch
            .crash
            .events
            .iter()
            .filter_map(|event| match event {
                PageEvent::Checkpoint { redo_lsn } => Some(*redo_lsn),
                _ => None,
            })
            .collect();
        assert_eq!(checkpoint_redo, [5]);
        let written: Vec<(PageNo, Lsn)> = branch
            .crash
            .events
            .iter()
            .filter_map(|event| match event {
                PageEvent::PageWrite { page_no, page_lsn, sectors_written, sectors_total } if sectors_written == sectors_total => Some((*page_no, *page_lsn)),
                _ => None,
            })
            .collect();
        assert_eq!(written, [(PageNo(1), 3), (PageNo(2), 4), (PageNo(2), 6)]);
        assert_eq!(branch.recovery.events[0], PageEvent::RecoveryStart { redo_lsn: 5, records: 4 });
    }

    #[test]
    fn part9_trace_with_full_page_images() {
        let branch = run(PageGeometry::TINY, Protection::FullPageImages, CutPoint::PAGE).unwrap();
        let text: String = branch.crash.events.iter().chain(&branch.recovery.events).map(|event| event.describe() + "\n").collect();
        expect![[r#"
            write 1: put user:1 alice on P2, logged: 29 B record + 64 B full-page image; P2 in memory, pageLSN 1: user:1 alice
            write 2: put user:2 bob on P2, logged: 27 B record; P2 in memory, pageLSN 2: user:1 alice, user:2 bob
            write 3: put order:9 book on P1, logged: 29 B record + 64 B full-page image; P1 in memory, pageLSN 3: order:9 book
            write 4: put user:3 carol on P2, logged: 29 B record; P2 in memory, pageLSN 4: user:1 alice, user:2 bob, user:3 carol
            write-back P1 (pageLSN 3) to the data file: 2/2 sectors
            write-back P2 (pageLSN 4) to the data file: 2/2 sectors
            control file: redo point LSN 5
            write 5: put user:1 alicia on P2, logged: 30 B record + 64 B full-page image; P2 in memory, pageLSN 5: user:1 alicia, user:2 bob, user:3 carol
            write 6: del user:2 on P2, logged: 24 B record; P2 in memory, pageLSN 6: user:1 alicia, user:3 carol
            write-back P2 (pageLSN 6) to the data file: 2/2 sectors
            write 7: put order:7 pen on P1, logged: 28 B record + 64 B full-page image; P1 in memory, pageLSN 7: order:7 pen, order:9 book
            write 8: put user:4 dave on P2, logged: 28 B record; P2 in memory, pageLSN 8: user:1 alicia, user:3 carol, user:4 dave
            write-back P1 (pageLSN 7) to the data file: TORN: 1 of 2 sectors
            POWER CUT
            recovery: redo point LSN 5, 4 log records to replay
            redo LSN 5 on P2 (read, pageLSN 6): full-page image installed -> pageLSN 5: user:1 alicia, user:2 bob, user:3 carol
            redo LSN 6 on P2 (in memory): apply -> pageLSN 6: user:1 alicia, user:3 carol
            redo LSN 7 on P1 (read, CHECKSUM FAILS): full-page image installed -> pageLSN 7: order:7 pen, order:9 book
            redo LSN 8 on P2 (in memory): apply -> pageLSN 8: user:1 alicia, user:3 carol, user:4 dave
            write-back P1 (pageLSN 7) to the data file: 2/2 sectors
            write-back P2 (pageLSN 8) to the data file: 2/2 sectors
            control file: redo point LSN 9
            recovery done: redo point LSN 9
        "#]]
        .assert_eq(&text);
    }

    #[test]
    fn part9_doublewrite_restores_p1_and_redo_skips() {
        let branch = run(PageGeometry::TINY, Protection::Doublewrite, CutPoint::PAGE).unwrap();
        assert!(branch.recovery.events.iter().any(|event| matches!(event, PageEvent::DoublewriteRestore { page_no: PageNo(1), page_lsn: 7, .. })));
        let actions: Vec<(Lsn, RedoAction)> = branch.recovery.redo_steps().iter().map(|step| (step.lsn, step.action)).collect();
        assert_eq!(actions, [(5, RedoAction::Skip), (6, RedoAction::Skip), (7, RedoAction::Skip), (8, RedoAction::Apply)]);
        assert!(branch.crash.log.iter().all(|record| record.image.is_none()));
    }

    /// Every cut point during the run: each step after each write, at each sector.
    fn every_run_cut(geometry: PageGeometry, protection: Protection) -> Vec<CutPoint> {
        let mut cuts = Vec::new();
        for after_write in 1..=LAST_WRITE {
            // The most a step writes: two pages, twice under doublewrite, plus the control file.
            let most = 4 * geometry.sectors_per_page() + 1;
            for sector_writes in 0..=most {
                cuts.push(CutPoint { after_write, sector_writes: Some(sector_writes) });
            }
        }
        let _ = protection;
        cuts
    }

    #[test]
    fn protected_recovery_reaches_the_pages_in_memory_from_every_cut_of_the_run() {
        for geometry in GEOMETRIES {
            for protection in PROTECTED {
                for cut in every_run_cut(geometry, protection) {
                    let branch = run(geometry, protection, cut).unwrap();
                    assert!(branch.recovered_everything(), "{protection:?} {geometry:?} {cut:?}");
                    assert!(branch.recovery.damaged.is_empty());
                }
            }
        }
    }

    #[test]
    fn unprotected_recovery_never_hides_damage() {
        for geometry in GEOMETRIES {
            for cut in every_run_cut(geometry, Protection::None) {
                let branch = run(geometry, Protection::None, cut).unwrap();
                for (page_no, expected) in &branch.crash.expected {
                    let recovered = &branch.pages_after[page_no];
                    assert!(recovered == &Ok(expected.clone()) || branch.recovery.damaged.contains(page_no), "{cut:?} {page_no}");
                }
            }
        }
    }

    /// Redo idempotence: cut the power at every sector write of recovery, recover again
    /// (and cut that one too, at every point), then recover with the power on. The pages
    /// always come out the same as after one uninterrupted recovery.
    #[test]
    fn recovery_is_idempotent_under_cuts_at_every_point() {
        for geometry in GEOMETRIES {
            for protection in PROTECTED {
                for after_write in [CHECKPOINT_AFTER_WRITE, P2_WRITE_BACK_AFTER_WRITE, P1_WRITE_BACK_AFTER_WRITE, 7] {
                    let crash = crash(geometry, protection, CutPoint { after_write, sector_writes: None }).unwrap();
                    let mut clean = crash.media.clone();
                    let mut power = PowerBudget::unlimited();
                    let once = recover(&mut clean, &crash.log, protection, &mut power);
                    assert!(once.completed);
                    let spent = power.spent();
                    assert_eq!(clean.read_all(), crash.expected.iter().map(|(no, page)| (*no, Ok(page.clone()))).collect());
                    for first_cut in 0..spent {
                        let mut media = crash.media.clone();
                        let interrupted = recover(&mut media, &crash.log, protection, &mut PowerBudget::cut_after(first_cut));
                        assert!(!interrupted.completed);
                        // Cutting the second attempt too, at every point, on the tiny pages;
                        // on 8 KiB pages (16 sectors each) once is enough to keep this quick.
                        let second_cuts = if geometry == PageGeometry::TINY { 0..=spent } else { spent..=spent };
                        for second_cut in second_cuts {
                            let mut media = media.clone();
                            recover(&mut media, &crash.log, protection, &mut PowerBudget::cut_after(second_cut));
                            let last = recover(&mut media, &crash.log, protection, &mut PowerBudget::unlimited());
                            assert!(last.completed);
                            assert_eq!(media.read_all(), clean.read_all(), "{protection:?} {geometry:?} after {after_write}, cuts {first_cut} {second_cut}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn refuses_a_cut_outside_writes_1_to_8() {
        assert_eq!(
            run(PageGeometry::TINY, Protection::None, CutPoint { after_write: 9, sector_writes: None }).unwrap_err(),
            BranchBError::CutOutOfRange { after_write: 9 }
        );
        assert!(crash(PageGeometry::TINY, Protection::None, CutPoint { after_write: 0, sector_writes: None }).is_err());
    }
}
