//! Crash recovery for the page engine: doublewrite repair, then REDO from the redo point,
//! then an end-of-recovery checkpoint.
//!
//! REDO follows the teaching page's pseudocode line by line. For each log record `r` from
//! the control file's redo point on, in LSN order, it reads `r`'s page (from the buffer
//! it is rebuilding, or else from the data file) and then:
//!
//! 1. if `r` carries a full-page image, the page *becomes* the image and its pageLSN is
//!    `r.LSN`, whatever the data file held, because a torn page cannot be recognised by
//!    its own LSN (its first sector may carry the new LSN over old data);
//! 2. else if `r.LSN <= pageLSN`, it skips `r`: the change is already on the page;
//! 3. else it applies `r` and sets pageLSN to `r.LSN`.
//!
//! A page whose checksum fails and for which no image comes is a case the pseudocode does
//! not have, because a correctly protected engine never meets it. walab meets it on
//! purpose (protection [`Protection::None`]) and rebuilds the page from empty, so the
//! result shows what the log alone still holds, and reports the page as damaged.
//!
//! Why this is safe to repeat: recovery writes nothing to the log and moves the redo point
//! only at its very end, after every page it rebuilt is back in the data file. A power
//! cut anywhere before that leaves the same log and the same redo point, and the pages in
//! the data file at least as good as before (each is either intact with a pageLSN the
//! skip test understands, or torn and about to be replaced by an image or a doublewrite
//! copy). So running recovery again reaches the same pages. The exhaustive tests in
//! `branch_b` cut the power at every sector write of recovery, twice over, to check it.

use std::collections::{BTreeMap, BTreeSet};

use super::engine::{restore_from_doublewrite, write_back, write_checkpoint, LogRecord, Media, PageEvent, PageRead, PowerBudget, PowerCut, Protection, RedoAction, RedoStep};
use super::page::{Lsn, Page, PageNo, PageReadError};

/// What one run of recovery did and left behind.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Recovery {
    /// Every step, in order; ends with `RecoveryDone` or `PowerCut`.
    pub events: Vec<PageEvent>,
    /// False when the power failed before recovery finished.
    pub completed: bool,
    /// Pages that came out torn, or rebuilt from empty because nothing could restore them.
    pub damaged: Vec<PageNo>,
}

impl Recovery {
    /// The REDO steps alone.
    pub fn redo_steps(&self) -> Vec<&RedoStep> {
        self.events
            .iter()
            .filter_map(|event| match event {
                PageEvent::Redo(step) => Some(step),
                _ => None,
            })
            .collect()
    }
}

/// Recovers `media` from the durable `log`, spending `power` on every sector write. On a
/// power cut it stops and returns with `completed == false`; the media keep whatever
/// reached them, ready for the next attempt.
pub fn recover(media: &mut Media, log: &[LogRecord], protection: Protection, power: &mut PowerBudget) -> Recovery {
    let mut events = Vec::new();
    let mut damaged = BTreeSet::new();
    let completed = run(media, log, protection, power, &mut events, &mut damaged).is_ok();
    if !completed {
        events.push(PageEvent::PowerCut);
    }
    Recovery { events, completed, damaged: damaged.into_iter().collect() }
}

fn run(
    media: &mut Media,
    log: &[LogRecord],
    protection: Protection,
    power: &mut PowerBudget,
    events: &mut Vec<PageEvent>,
    damaged: &mut BTreeSet<PageNo>,
) -> Result<(), PowerCut> {
    let redo_lsn = media.redo_lsn;
    let to_replay: Vec<&LogRecord> = log.iter().filter(|record| record.lsn >= redo_lsn).collect();
    events.push(PageEvent::RecoveryStart { redo_lsn, records: to_replay.len() });

    // 1. Doublewrite: a page torn at its place is copied back from an intact slot copy.
    //    A torn slot is ignored: its write never finished, so the page's place was not
    //    touched and still holds the intact older version.
    //    A slot may also hold an older copy of the same page from an earlier write-back;
    //    the newest copy (highest pageLSN) is the one whose write to the page's place
    //    was interrupted.
    if protection == Protection::Doublewrite {
        let mut newest: BTreeMap<PageNo, (Lsn, usize)> = BTreeMap::new();
        for (slot, bytes) in media.doublewrite.iter().enumerate() {
            let Ok(copy) = Page::decode(bytes) else { continue };
            let entry = newest.entry(copy.page_no).or_insert((copy.page_lsn, slot));
            if copy.page_lsn > entry.0 {
                *entry = (copy.page_lsn, slot);
            }
        }
        for (page_no, (_, slot)) in newest {
            if media.read_page(page_no) == Err(PageReadError::Checksum) {
                restore_from_doublewrite(media, slot, power, events)?;
            }
        }
    }

    // 2. REDO, in LSN order, into a buffer of rebuilt pages.
    let mut buffer: BTreeMap<PageNo, (Page, bool)> = BTreeMap::new();
    for record in &to_replay {
        let (read, current) = match buffer.get(&record.page_no) {
            Some((page, _)) => (PageRead::InBuffer, Some(page.clone())),
            None => match media.read_page(record.page_no) {
                Ok(page) => (PageRead::Intact { page_lsn: page.page_lsn }, Some(page)),
                Err(_) => (PageRead::Torn, None),
            },
        };
        let was_dirty = buffer.get(&record.page_no).is_some_and(|(_, dirty)| *dirty);
        let (action, page) = match (&record.image, current) {
            (Some(image), _) => {
                let page = Page::decode(image).expect("a logged image is a whole page");
                assert_eq!(page.page_lsn, record.lsn, "an image carries its record's change");
                (RedoAction::InstallImage, page)
            }
            (None, Some(page)) if record.lsn <= page.page_lsn => (RedoAction::Skip, page),
            (None, Some(mut page)) => {
                record.apply_to(&mut page);
                page.page_lsn = record.lsn;
                (RedoAction::Apply, page)
            }
            (None, None) => {
                let mut page = Page::empty(record.page_no);
                record.apply_to(&mut page);
                page.page_lsn = record.lsn;
                damaged.insert(record.page_no);
                (RedoAction::RebuildFromEmpty, page)
            }
        };
        events.push(PageEvent::Redo(RedoStep {
            lsn: record.lsn,
            page_no: record.page_no,
            read,
            action,
            page_lsn_after: page.page_lsn,
            entries_after: page.describe_entries(),
        }));
        let dirty = was_dirty || action != RedoAction::Skip;
        buffer.insert(record.page_no, (page, dirty));
    }

    // 3. End-of-recovery checkpoint: every rebuilt page back to its place (through the
    //    doublewrite area if that is the protection), then the new redo point.
    let durable_lsn = log.last().map_or(0, |record| record.lsn);
    let dirty: Vec<&Page> = buffer.values().filter(|(_, dirty)| *dirty).map(|(page, _)| page).collect();
    write_back(media, protection, &dirty, durable_lsn, power, events)?;
    let next_redo_lsn = (durable_lsn + 1).max(redo_lsn);
    write_checkpoint(media, next_redo_lsn, power, events)?;

    // 4. A page still torn now had no image, no doublewrite copy and no record to
    //    rebuild it from.
    for (page_no, page) in media.read_all() {
        if page.is_err() {
            damaged.insert(page_no);
        }
    }
    for &page_no in damaged.iter() {
        events.push(PageEvent::Damaged { page_no });
    }
    events.push(PageEvent::RecoveryDone { redo_lsn: next_redo_lsn });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::Op;
    use crate::pages::engine::{KeyRouter, PageEngine};
    use crate::pages::page::PageGeometry;
    use proptest::prelude::*;

    /// One step of a random run.
    #[derive(Clone, Debug)]
    enum Step {
        Write { op: Op, key: String, value: String },
        Checkpoint,
        WriteBack(u32),
    }

    fn step() -> impl Strategy<Value = Step> {
        let key = prop_oneof![Just("order:"), Just("user:")].prop_flat_map(|prefix| (1u8..4).prop_map(move |n| format!("{prefix}{n}")));
        prop_oneof![
            6 => (any::<bool>(), key, "[a-z]{1,5}").prop_map(|(put, key, value)| Step::Write { op: if put { Op::Put } else { Op::Del }, value: if put { value } else { String::new() }, key }),
            1 => Just(Step::Checkpoint),
            2 => (1u32..3).prop_map(Step::WriteBack),
        ]
    }

    /// Plays `steps` until the power budget runs out; returns the engine at the cut.
    fn play(protection: Protection, steps: &[Step], cut_after: usize) -> PageEngine {
        let mut engine = PageEngine::format(PageGeometry::TINY, protection, KeyRouter::tiny_store()).unwrap();
        let mut power = PowerBudget::cut_after(cut_after);
        let mut events = Vec::new();
        for step in steps {
            let result = match step {
                Step::Write { op, key, value } => {
                    engine.write(*op, key, value).unwrap();
                    Ok(())
                }
                Step::Checkpoint => engine.checkpoint(&mut power, &mut events),
                Step::WriteBack(page) => engine.write_back(PageNo(*page), &mut power, &mut events),
            };
            if result.is_err() {
                break;
            }
        }
        engine
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

        /// Any run of writes, checkpoints and write-backs, cut anywhere, recovered (and
        /// cut again during recovery, then recovered): with full-page images or
        /// doublewrite, the pages come back exactly as the engine held them in memory.
        #[test]
        fn protected_recovery_brings_back_every_logged_change(
            steps in proptest::collection::vec(step(), 1..40),
            cut_after in 0usize..60,
            recovery_cut in 0usize..12,
            doublewrite in any::<bool>(),
        ) {
            let protection = if doublewrite { Protection::Doublewrite } else { Protection::FullPageImages };
            let engine = play(protection, &steps, cut_after);
            let expected: BTreeMap<PageNo, Result<Page, PageReadError>> = engine.pages_in_memory().into_iter().map(|(no, page)| (no, Ok(page))).collect();
            let mut media = engine.media().clone();
            recover(&mut media, engine.log(), protection, &mut PowerBudget::cut_after(recovery_cut));
            let last = recover(&mut media, engine.log(), protection, &mut PowerBudget::unlimited());
            prop_assert!(last.completed);
            prop_assert!(last.damaged.is_empty());
            prop_assert_eq!(media.read_all(), expected);
        }

        /// Without protection, one recovery never reports a page as fine when it is not.
        #[test]
        fn unprotected_damage_is_always_reported(
            steps in proptest::collection::vec(step(), 1..40),
            cut_after in 0usize..60,
        ) {
            let engine = play(Protection::None, &steps, cut_after);
            let mut media = engine.media().clone();
            let recovery = recover(&mut media, engine.log(), Protection::None, &mut PowerBudget::unlimited());
            for (page_no, page) in engine.pages_in_memory() {
                prop_assert!(media.read_page(page_no) == Ok(page) || recovery.damaged.contains(&page_no));
            }
        }
    }
}
