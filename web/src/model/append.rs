//! The append procedure, in the right order and in the order that loses
//! acknowledged writes. The model plays one step per (display) millisecond.
use super::Timeline;
use crate::record_layout::{tiny_record_fields, Field};
use walab_core::time::Nanos;
use walab_core::tiny_store;

/// One record laid out: its write, where it starts, and its fields as byte spans.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordLayout {
    pub write: u64,
    pub offset: usize,
    pub bytes: Vec<u8>,
    pub fields: Vec<(Field, usize, usize)>,
    pub description: String,
}

/// The records of the tiny store's first segment, encoded by the core's codec, at
/// their offsets (a record whose fields cannot be laid out is drawn without them).
pub fn wal_1_records() -> Vec<RecordLayout> {
    let mut offset = 0;
    tiny_store::WRITES[..tiny_store::MEMTABLE_WRITES]
        .iter()
        .map(|write| {
            let bytes = write.record();
            let fields = tiny_record_fields(&bytes)
                .map(|spans| spans.iter().map(|span| (span.field, span.start, span.end)).collect())
                .unwrap_or_default();
            let description = match write.op {
                walab_core::codec::Op::Put => format!("put {} {}", write.key, write.value),
                walab_core::codec::Op::Del => format!("del {}", write.key),
            };
            let layout = RecordLayout { write: write.id, offset, fields, description, bytes };
            offset += layout.bytes.len();
            layout
        })
        .collect()
}

/// wal-1 with one byte changed by the student, and what the core's recovery scan makes of
/// it: the records it still accepts, where and why it stops, and the records lost.
#[derive(Clone, Debug, PartialEq)]
pub struct Corrupted {
    pub byte: usize,
    pub was: u8,
    pub now: u8,
    /// The writes whose records the scan accepted, in log order.
    pub accepted: Vec<u64>,
    pub stop: walab_core::scan::ScanStop,
    /// The stored and computed checksums, when the scan stopped at a checksum.
    pub checksums: Option<(u32, u32)>,
    /// Records that were whole before the change and that the scan no longer replays.
    pub lost: Vec<u64>,
}

/// Flips every bit of byte `byte` of the segment holding `records` and scans it.
pub fn corrupt_and_scan(records: &[RecordLayout], segment_bytes: usize, byte: usize) -> Option<Corrupted> {
    let mut segment = vec![0u8; segment_bytes];
    for record in records {
        segment.get_mut(record.offset..record.offset + record.bytes.len())?.copy_from_slice(&record.bytes);
    }
    let was = *segment.get(byte)?;
    let now = !was;
    segment[byte] = now;
    let scan = walab_core::scan::scan_tiny(&[&segment], 0);
    let accepted: Vec<u64> = scan.records.iter().map(|accepted| accepted.record.seq).collect();
    let checksums = scan.checks.iter().rev().find_map(|check| match check {
        walab_core::scan::ScanCheck::Checksum { stored, computed, ok: false, .. } => Some((*stored, *computed)),
        _ => None,
    });
    let lost = records.iter().map(|record| record.write).filter(|write| !accepted.contains(write)).collect();
    Some(Corrupted { byte, was, now, accepted, stop: scan.stop, checksums, lost })
}

/// What the scan did with a changed byte, in a sentence or two.
pub fn corrupted_text(corrupted: &Corrupted, records: &[RecordLayout]) -> String {
    let owner = records.iter().find(|record| (record.offset..record.offset + record.bytes.len()).contains(&corrupted.byte));
    let what = match owner {
        Some(record) => format!("byte {} (record {})", corrupted.byte, record.write),
        None => format!("byte {} (the zero fill)", corrupted.byte),
    };
    let changed = format!("You changed {what} from {:02x} to {:02x}.", corrupted.was, corrupted.now);
    let stop = corrupted.stop;
    let why = match (stop.reason, corrupted.checksums) {
        (walab_core::scan::StopReason::Checksum, Some((stored, computed))) => format!(
            "the record at byte {} stores CRC {stored:08x} but its bytes give {computed:08x}", stop.offset),
        (reason, _) if reason.is_clean() => format!("it reached the zero fill at byte {}", stop.offset),
        (reason, _) => format!("the record at byte {} fails its {} check", stop.offset, reason.name()),
    };
    let kept = match corrupted.accepted.as_slice() {
        [] => "no record".to_string(),
        [one] => format!("record {one}"),
        [first, second] => format!("records {first} and {second}"),
        many => format!("records {} to {}", many[0], many[many.len() - 1]),
    };
    let lost = match corrupted.lost.as_slice() {
        [] => "Nothing is lost.".to_string(),
        [one] => format!("Record {one} is not replayed."),
        [first, second] => format!("Records {first} and {second} are not replayed."),
        many => format!("Records {} are not replayed.", many.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")),
    };
    format!("{changed} The scan accepts {kept}, then stops: {why}. {lost}")
}

/// The caption of append step `done` (1-based; 0 is before the first), both orders.
pub fn caption(done: usize) -> String {
    if done == 0 {
        return "Before the first step: one write waits to be appended, in both columns.".to_string();
    }
    let describe = |order: &[Step]| -> String {
        match order.get(done - 1) {
            Some(step) => step.text().to_string(),
            None => "done".to_string(),
        }
    };
    let right = outcome(&RIGHT_ORDER, done);
    let wrong = outcome(&WRONG_ORDER, done);
    let risk = if wrong.acknowledged_but_lost() {
        " Now the wrong order has told the client OK for a write that is not durable: a power loss here breaks the promise."
    } else if right.acknowledged && wrong.durable {
        " Both are durable and acknowledged now."
    } else if right.durable && !wrong.durable {
        " The right order's record is durable; the wrong one's is only in the page cache."
    } else {
        ""
    };
    format!("Step {done}. Right order: {}. Wrong order: {}.{risk}", describe(&RIGHT_ORDER), describe(&WRONG_ORDER))
}

/// One step of APPEND.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    TakeSeq,
    Frame,
    /// Write the record and wait for the sync that makes it durable.
    WriteAndSync,
    /// Write the record into the page cache only (the bug's step 3).
    WriteOnly,
    Apply,
    MakeVisible,
    Acknowledge,
    /// The bug's late sync, after the client already has its OK.
    SyncLater,
}

impl Step {
    pub fn text(self) -> &'static str {
        match self {
            Step::TakeSeq => "take the next sequence number",
            Step::Frame => "frame the record: CRC32C, length, type, payload",
            Step::WriteAndSync => "write it and wait for the group's sync: now it is durable",
            Step::WriteOnly => "write it into the page cache (no sync yet)",
            Step::Apply => "apply it to the MemTable",
            Step::MakeVisible => "make seq visible to readers",
            Step::Acknowledge => "send OK to the client",
            Step::SyncLater => "sync the log, some time later",
        }
    }

    fn makes_durable(self) -> bool {
        matches!(self, Step::WriteAndSync | Step::SyncLater)
    }
}

/// The order every engine must follow: durable before acknowledged.
pub const RIGHT_ORDER: [Step; 6] =
    [Step::TakeSeq, Step::Frame, Step::WriteAndSync, Step::Apply, Step::MakeVisible, Step::Acknowledge];
/// The order that produces "acknowledged but lost": the OK goes out before the sync.
pub const WRONG_ORDER: [Step; 7] = [
    Step::TakeSeq,
    Step::Frame,
    Step::WriteOnly,
    Step::Apply,
    Step::MakeVisible,
    Step::Acknowledge,
    Step::SyncLater,
];

/// The write the append steps are about: the last record of wal-1 (records 1 to 3 were
/// appended and synced before it).
pub const APPENDED_WRITE: u64 = tiny_store::MEMTABLE_WRITES as u64;

/// Where the appended write's bytes are: what the byte figure draws for them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BytesAt {
    /// Not framed yet: the file holds zeros where the record will go.
    NotYet,
    /// Framed in the process's memory; the file still holds zeros.
    Framed,
    /// Written into the page cache: the file shows the bytes, the media does not hold them.
    PageCache,
    /// Synced: on the media.
    Media,
    /// They were in the page cache when the power failed: the file holds zeros again.
    Lost,
}

impl BytesAt {
    /// The name the figure carries in its `data-state`.
    pub fn name(self) -> &'static str {
        match self {
            BytesAt::NotYet => "not-yet",
            BytesAt::Framed => "framed",
            BytesAt::PageCache => "page-cache",
            BytesAt::Media => "media",
            BytesAt::Lost => "lost",
        }
    }

    /// What the figure says about the appended record's bytes.
    pub fn text(self, bytes: usize) -> String {
        match self {
            BytesAt::NotYet => format!("its {bytes} bytes are not written yet: zeros in the file"),
            BytesAt::Framed => format!("its {bytes} bytes are framed in the process's memory; the file still holds zeros"),
            BytesAt::PageCache => format!("its {bytes} bytes are in the page cache (dashed): a power loss now erases them"),
            BytesAt::Media => format!("its {bytes} bytes are on the media: they survive a power loss"),
            BytesAt::Lost => format!("the power failed while its {bytes} bytes were only in the page cache: zeros again"),
        }
    }
}

/// Where the appended write's bytes are after `done` steps of `order`; with a power cut
/// after `cut` steps, from then on what the cut left.
pub fn bytes_at(order: &[Step], done: usize, cut: Option<usize>) -> BytesAt {
    let run = |steps: usize| {
        order[..steps.min(order.len())].iter().fold(BytesAt::NotYet, |at, step| match step {
            Step::Frame => BytesAt::Framed,
            Step::WriteOnly => BytesAt::PageCache,
            Step::WriteAndSync | Step::SyncLater => BytesAt::Media,
            _ => at,
        })
    };
    match cut {
        Some(cut) if done >= cut => match run(cut) {
            BytesAt::Media => BytesAt::Media,
            BytesAt::PageCache => BytesAt::Lost,
            BytesAt::NotYet | BytesAt::Framed | BytesAt::Lost => BytesAt::NotYet,
        },
        _ => run(done),
    }
}

/// The time the model gives one step.
pub const STEP: Nanos = Nanos::from_millis(1);

pub fn timeline() -> Timeline {
    let marks: Vec<Nanos> = (1..=WRONG_ORDER.len() as u64).map(|step| Nanos(STEP.0 * step)).collect();
    Timeline { end: *marks.last().expect("steps"), marks }
}

/// How many steps of an order have completed at `now`.
pub fn steps_done(now: Nanos, order_len: usize) -> usize {
    usize::try_from(now.0 / STEP.0).unwrap_or(usize::MAX).min(order_len)
}

/// What a power failure does to the write once `done` steps of `order` completed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub acknowledged: bool,
    pub durable: bool,
}

impl Outcome {
    /// The broken promise: the client was told OK and the write is gone.
    pub fn acknowledged_but_lost(self) -> bool {
        self.acknowledged && !self.durable
    }
}

pub fn outcome(order: &[Step], done: usize) -> Outcome {
    let completed = &order[..done.min(order.len())];
    Outcome {
        acknowledged: completed.contains(&Step::Acknowledge),
        durable: completed.iter().any(|step| step.makes_durable()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_right_order_never_loses_an_acknowledged_write() {
        for done in 0..=RIGHT_ORDER.len() {
            assert!(!outcome(&RIGHT_ORDER, done).acknowledged_but_lost(), "after {done} steps");
        }
    }

    #[test]
    fn the_wrong_order_loses_the_write_between_ok_and_sync() {
        let lost: Vec<usize> =
            (0..=WRONG_ORDER.len()).filter(|done| outcome(&WRONG_ORDER, *done).acknowledged_but_lost()).collect();
        assert_eq!(lost, [6], "only a cut after the OK and before the late sync");
    }

    #[test]
    fn captions_differ_step_to_step_and_wal_1_ends_at_114() {
        let captions: Vec<String> = (0..=WRONG_ORDER.len()).map(caption).collect();
        for pair in captions.windows(2) {
            assert_ne!(pair[0], pair[1]);
        }
        assert!(captions[6].contains("breaks the promise"), "{}", captions[6]);
        let records = wal_1_records();
        let starts: Vec<usize> = records.iter().map(|record| record.offset).collect();
        assert_eq!(starts, [0, 29, 56, 85]);
        let last = records.last().unwrap();
        assert_eq!(last.offset + last.bytes.len(), 114);
        assert!(records.iter().all(|record| record.fields.last().map(|field| field.2) == Some(record.bytes.len())));
    }

    #[test]
    fn the_bytes_reach_the_media_at_the_sync_and_a_cut_erases_the_page_cache() {
        let right: Vec<BytesAt> = (0..=RIGHT_ORDER.len()).map(|done| bytes_at(&RIGHT_ORDER, done, None)).collect();
        use BytesAt::*;
        assert_eq!(right, [NotYet, NotYet, Framed, Media, Media, Media, Media]);
        let wrong: Vec<BytesAt> = (0..=WRONG_ORDER.len()).map(|done| bytes_at(&WRONG_ORDER, done, None)).collect();
        assert_eq!(wrong, [NotYet, NotYet, Framed, PageCache, PageCache, PageCache, PageCache, Media]);
        assert_eq!(bytes_at(&WRONG_ORDER, 6, Some(6)), Lost);
        assert_eq!(bytes_at(&RIGHT_ORDER, 6, Some(6)), Media);
        assert_eq!(bytes_at(&WRONG_ORDER, 2, Some(2)), NotYet);
        assert_eq!(bytes_at(&WRONG_ORDER, 1, Some(6)), NotYet, "before the cut, the run as it was");
        assert_eq!(APPENDED_WRITE, wal_1_records().last().unwrap().write);
    }

    #[test]
    fn a_changed_byte_stops_the_scan_at_its_record() {
        let records = wal_1_records();
        // A byte of record 3's value: records 1 and 2 replay, the scan stops at 3 on its CRC.
        let corrupted = corrupt_and_scan(&records, 128, 80).unwrap();
        assert_eq!(corrupted.accepted, [1, 2]);
        assert_eq!(corrupted.stop.reason, walab_core::scan::StopReason::Checksum);
        assert_eq!(corrupted.stop.offset, 56);
        assert_eq!(corrupted.lost, [3, 4]);
        assert!(corrupted_text(&corrupted, &records).contains("stores CRC"), "{}", corrupted_text(&corrupted, &records));
        // The zero fill: every record replays.
        let tail = corrupt_and_scan(&records, 128, 127).unwrap();
        assert_eq!(tail.accepted, [1, 2, 3, 4]);
        assert!(corrupt_and_scan(&records, 128, 128).is_none());
    }

    #[test]
    fn steps_follow_the_clock() {
        assert_eq!(steps_done(Nanos::ZERO, 6), 0);
        assert_eq!(steps_done(Nanos::from_micros(2_500), 6), 2);
        assert_eq!(steps_done(Nanos::from_millis(9), 6), 6);
    }
}

