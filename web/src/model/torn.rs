//! The torn tail's drawing: the log segments' bytes at the playhead, unit by unit with the
//! records' boundaries in them; after a cut, which units reached the media; then the
//! recovery scan's cursor walking those bytes check by check.

use walab_core::codec::tiny::HEADER_BYTES;
use walab_core::scan::ScanCheck;
use walab_core::sim::tiny::SEGMENT_BYTES;
use walab_core::time::Nanos;
use walab_core::trace::{Event, FileKind, StateAt, Trace, UnitState};

use walab_core::tiny_store::WRITES;

use super::tiny::CutOutcome;

/// Byte ranges of writes `first ..= last` in their segment (they share one): (id, start, end).
pub fn record_ranges(first: u64, last: u64) -> Vec<(u64, usize, usize)> {
    let mut offset = 0usize;
    let mut ranges = Vec::new();
    for write in WRITES.iter().filter(|write| write.id >= first && write.id <= last) {
        let len = write.record().len();
        ranges.push((write.id, offset, offset + len));
        offset += len;
    }
    ranges
}

/// Where a unit's bytes are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnitPlace {
    /// Nothing was ever written into it: the zeros the segment was created with.
    Zero,
    /// Changed in the page cache only.
    Dirty,
    /// In a running sync: it may or may not be on the media yet.
    Syncing,
    /// On the media.
    Media,
    /// A failed sync marked it clean without writing it.
    Dropped,
    /// After the cut: it was in flight and did reach the media.
    Landed,
    /// After the cut: it was in flight (or only dirty) and did not reach the media.
    NotLanded,
}

impl UnitPlace {
    pub fn class(self) -> &'static str {
        match self {
            UnitPlace::Zero => "zero",
            UnitPlace::Dirty => "dirty",
            UnitPlace::Syncing => "syncing",
            UnitPlace::Media => "media",
            UnitPlace::Dropped => "dropped",
            UnitPlace::Landed => "landed",
            UnitPlace::NotLanded => "not-on-media",
        }
    }

    pub fn words(self) -> &'static str {
        match self {
            UnitPlace::Zero => "zeros (never written)",
            UnitPlace::Dirty => "dirty in the page cache",
            UnitPlace::Syncing => "in a running sync",
            UnitPlace::Media => "on the media",
            UnitPlace::Dropped => "marked clean, never written",
            UnitPlace::Landed => "reached the media as the power failed",
            UnitPlace::NotLanded => "did not reach the media",
        }
    }

    /// A label short enough for the unit's box.
    pub fn short(self) -> &'static str {
        match self {
            UnitPlace::Zero => "zeros",
            UnitPlace::Dirty => "dirty",
            UnitPlace::Syncing => "in the sync",
            UnitPlace::Media => "on the media",
            UnitPlace::Dropped => "marked clean",
            UnitPlace::Landed => "landed",
            UnitPlace::NotLanded => "NOT on media",
        }
    }

    pub const ALL: [UnitPlace; 7] =
        [UnitPlace::Zero, UnitPlace::Dirty, UnitPlace::Syncing, UnitPlace::Media, UnitPlace::Dropped, UnitPlace::Landed, UnitPlace::NotLanded];
}

/// What the scan did with a record so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordMark {
    /// Not reached by the scan (or no scan yet).
    Unread,
    Accepted,
    /// Accepted, but already in a flushed file: skipped.
    Skipped,
    /// The scan stopped here.
    Stopped,
}

impl RecordMark {
    pub fn class(self) -> &'static str {
        match self {
            RecordMark::Unread => "unread",
            RecordMark::Accepted => "accepted",
            RecordMark::Skipped => "skipped",
            RecordMark::Stopped => "stopped",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordView {
    pub write: u64,
    pub start: usize,
    pub end: usize,
    pub mark: RecordMark,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentView {
    pub name: String,
    pub bytes: usize,
    pub unit_bytes: usize,
    pub units: Vec<UnitPlace>,
    /// The records written into it by the playhead.
    pub records: Vec<RecordView>,
}

/// The scan's cursor: a byte range of one segment and what the check asks of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cursor {
    pub segment: String,
    pub start: usize,
    pub end: usize,
    pub ok: bool,
    pub what: &'static str,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogView {
    pub segments: Vec<SegmentView>,
    pub cursor: Option<Cursor>,
    /// The record at which the scan stopped, once it has.
    pub stop_record: Option<u64>,
    pub after_cut: bool,
    /// After the cut: the units that were in flight, in the order the device held them,
    /// each with its place in the order of arrival on the media (1, 2 ...) or `None` if
    /// the power failed before it landed.
    pub landings: Vec<Landing>,
}

/// One in-flight unit's fate at the cut.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Landing {
    pub segment: String,
    pub unit: usize,
    pub order: Option<usize>,
}

impl LogView {
    /// The landing of a segment's unit, if it was in flight at the cut.
    pub fn landing(&self, segment: &str, unit: usize) -> Option<&Landing> {
        self.landings.iter().find(|landing| landing.segment == segment && landing.unit == unit)
    }

    /// In words: "wal-6, unit 1 lands first, then unit 2; the power fails before unit 3 lands".
    pub fn landing_words(&self) -> Option<String> {
        let first = self.landings.first()?;
        let one_file = self.landings.iter().all(|landing| landing.segment == first.segment);
        let name = |landing: &Landing| if one_file { format!("unit {}", landing.unit) } else { format!("{} unit {}", landing.segment, landing.unit) };
        let mut landed: Vec<&Landing> = self.landings.iter().filter(|landing| landing.order.is_some()).collect();
        walab_core::sort::sort_by_key(&mut landed, |landing| landing.order);
        let missing: Vec<String> = self.landings.iter().filter(|landing| landing.order.is_none()).map(name).collect();
        let arrived = match landed.as_slice() {
            [] => "no unit in flight lands".to_string(),
            [one] => format!("{} lands", name(one)),
            [head, rest @ ..] => format!("{} lands first, then {}", name(head), rest.iter().map(|landing| name(landing)).collect::<Vec<_>>().join(", then ")),
        };
        let fails = match missing.as_slice() {
            [] => "all of them land before the power fails".to_string(),
            [one] => format!("the power fails before {one} lands"),
            many => format!("the power fails before {} land", many.join(" and ")),
        };
        let prefix = if one_file { format!("{}, ", first.segment) } else { String::new() };
        Some(format!("{prefix}{arrived}; {fails}"))
    }
}

/// How far each log file's batches had written by the state's instant.
fn written_extent(trace: &Trace, file: u32, t: Nanos) -> usize {
    let segment = u64::from(file) + 1;
    trace.events[..trace.events_through(t)]
        .iter()
        .filter_map(|event| match &event.event {
            Event::BatchFormed { segment: each, offset, bytes, .. } if *each == segment => Some((offset + bytes) as usize),
            _ => None,
        })
        .max()
        .unwrap_or(0)
}

fn segment_number(name: &str) -> Option<u64> {
    name.strip_prefix("wal-")?.parse().ok()
}

fn records_written(segment: u64, extent: usize) -> Vec<RecordView> {
    record_ranges(segment * 4 - 3, segment * 4)
        .into_iter()
        .filter(|(_, _, end)| *end <= extent)
        .map(|(write, start, end)| RecordView { write, start, end, mark: RecordMark::Unread })
        .collect()
}

fn unit_places_live(state: &StateAt, file: u32, extent: usize, unit_bytes: usize) -> Vec<UnitPlace> {
    let units = SEGMENT_BYTES.div_ceil(unit_bytes);
    (0..units)
        .map(|unit| match state.files.get(file as usize).and_then(|file| file.units.get(unit)) {
            Some(UnitState::Dirty) => UnitPlace::Dirty,
            Some(UnitState::Syncing) => UnitPlace::Syncing,
            Some(UnitState::Dropped) => UnitPlace::Dropped,
            _ if unit * unit_bytes < extent => UnitPlace::Media,
            _ => UnitPlace::Zero,
        })
        .collect()
}

/// The log at the playhead: live before the cut (or without one); after the cut, the
/// segments the media kept, and the scan's progress (`checks_done` checks).
pub fn log_view(trace: &Trace, unit_bytes: usize, now: Nanos, outcome: Option<&CutOutcome>, checks_done: usize) -> LogView {
    let unit_bytes = unit_bytes.max(1);
    let after_cut = outcome.is_some_and(|outcome| now >= outcome.at);
    let t = match outcome {
        Some(outcome) if after_cut => outcome.at,
        _ => now,
    };
    let state = trace.state_at(t);
    let mut segments: Vec<SegmentView> = Vec::new();
    let mut landings: Vec<Landing> = Vec::new();
    for (index, file) in trace.files.iter().enumerate() {
        if file.kind != FileKind::Log || !state.files.get(index).is_some_and(|at| at.exists) {
            continue;
        }
        let Some(segment) = segment_number(&file.name) else { continue };
        let extent = written_extent(trace, index as u32, t);
        let mut units = unit_places_live(&state, index as u32, extent, unit_bytes);
        if let (true, Some(outcome)) = (after_cut, outcome) {
            let kept: Vec<u32> = outcome.crash.kept_units.iter().filter(|(name, _)| *name == file.name).map(|(_, unit)| *unit).collect();
            for (unit, place) in units.iter_mut().enumerate() {
                if *place == UnitPlace::Syncing {
                    // The device's run kept these units, in its order: their arrival order.
                    let order = outcome.crash.kept_units.iter().position(|(name, kept)| *name == file.name && *kept as usize == unit).map(|index| index + 1);
                    landings.push(Landing { segment: file.name.clone(), unit, order });
                }
                *place = match *place {
                    UnitPlace::Syncing if kept.contains(&(unit as u32)) => UnitPlace::Landed,
                    UnitPlace::Syncing | UnitPlace::Dirty | UnitPlace::Dropped => UnitPlace::NotLanded,
                    other => other,
                };
            }
        }
        segments.push(SegmentView { name: file.name.clone(), bytes: SEGMENT_BYTES, unit_bytes, units, records: records_written(segment, extent) });
    }
    let mut view = LogView { segments, cursor: None, stop_record: None, after_cut, landings };
    if let (true, Some(outcome)) = (after_cut, outcome) {
        apply_scan(&mut view, outcome, checks_done);
    }
    view
}

/// Marks the records the scan has passed and places its cursor on the current check.
fn apply_scan(view: &mut LogView, outcome: &CutOutcome, checks_done: usize) {
    let recovery = &outcome.crash.recovery;
    let names = &recovery.segments;
    let mut lengths: Vec<((usize, u64), u64)> = Vec::new();
    for check in recovery.scan.checks.iter().take(checks_done) {
        let (segment, offset, ok, what, span) = match check {
            ScanCheck::SegmentStart { segment, bytes } => (*segment, 0, true, "open the segment", Some(*bytes as usize)),
            ScanCheck::Header { segment, offset, length, .. } => {
                lengths.push(((*segment, *offset), *length));
                (*segment, *offset, true, "read the header", Some(HEADER_BYTES))
            }
            ScanCheck::HeaderZero { segment, offset, header_bytes } => (*segment, *offset, true, "the header is zeros", Some(*header_bytes as usize)),
            ScanCheck::HeaderShort { segment, offset, available, .. } => (*segment, *offset, true, "too few bytes for a header", Some(*available as usize)),
            ScanCheck::LengthBound { segment, offset, ok, .. } => (*segment, *offset, *ok, "is the length possible?", None),
            ScanCheck::PayloadPresent { segment, offset, ok, .. } => (*segment, *offset, *ok, "are the payload bytes there?", None),
            ScanCheck::Checksum { segment, offset, ok, .. } => (*segment, *offset, *ok, "does the checksum match?", None),
            ScanCheck::Fragment { segment, offset, ok, .. } => (*segment, *offset, *ok, "is the record type allowed?", None),
            ScanCheck::Payload { segment, offset, ok, .. } => (*segment, *offset, *ok, "does the payload parse?", None),
            ScanCheck::AlreadyFlushed { segment, offset, .. } => (*segment, *offset, true, "already in a flushed file: skip", None),
            ScanCheck::Accept { segment, offset, len, .. } => (*segment, *offset, true, "accept the record", Some(*len as usize)),
            ScanCheck::SegmentEnd { segment, offset, .. } => (*segment, *offset, true, "clean end: next segment", Some(0)),
            ScanCheck::Stop { stop } => (stop.segment, stop.offset, stop.reason.is_clean(), "stop", Some(0)),
            ScanCheck::BlockTrailer { segment, offset, bytes, .. } => (*segment, *offset, true, "block trailer", Some(*bytes as usize)),
            ScanCheck::LogNumber { segment, offset, ok, .. } | ScanCheck::FrameOffset { segment, offset, ok, .. } => (*segment, *offset, *ok, "header field", None),
        };
        let Some(name) = names.get(segment).cloned() else { continue };
        let span = span.unwrap_or_else(|| {
            lengths.iter().rev().find(|(at, _)| *at == (segment, offset)).map(|(_, length)| HEADER_BYTES + *length as usize).unwrap_or(HEADER_BYTES)
        });
        let start = offset as usize;
        let Some(view_segment) = view.segments.iter_mut().find(|each| each.name == name) else { continue };
        let end = (start + span).min(view_segment.bytes);
        let record = view_segment.records.iter_mut().find(|record| record.start == start);
        match (check, record) {
            (ScanCheck::AlreadyFlushed { .. }, Some(record)) => record.mark = RecordMark::Skipped,
            (ScanCheck::Accept { .. }, Some(record)) if record.mark != RecordMark::Skipped => record.mark = RecordMark::Accepted,
            (ScanCheck::Stop { stop }, Some(record)) if !stop.reason.is_clean() => {
                record.mark = RecordMark::Stopped;
                view.stop_record = Some(record.write);
            }
            (ScanCheck::Stop { .. }, _) => {}
            _ => {}
        }
        view.cursor = Some(Cursor { segment: name, start, end, ok, what });
    }
}

/// A power cut worth opening the torn tail on, named by what it shows: the cut's instant and
/// the seed whose sample of the in-flight units gives that outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamedCut {
    pub case: NamedCase,
    pub at: Nanos,
    pub seed: u64,
}

/// The two outcomes of a cut during the last log sync that the lesson is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NamedCase {
    /// Every unit of the running sync but its last reached the media: the record that
    /// ends in that last unit is torn, and the scan stops at its checksum.
    TornRecord,
    /// Every unit of the running sync reached the media just before the power went: its
    /// records survive, although their writers were never told OK.
    SyncFinished,
}

impl NamedCase {
    pub const ALL: [NamedCase; 2] = [NamedCase::TornRecord, NamedCase::SyncFinished];

    pub fn label(self) -> &'static str {
        match self {
            NamedCase::TornRecord => "Case 1: a torn record",
            NamedCase::SyncFinished => "Case 2: the sync finished first",
        }
    }

    /// The case by what the device did, for the menu beside the seed.
    pub fn choice(self) -> &'static str {
        match self {
            NamedCase::TornRecord => "all but its last: torn record",
            NamedCase::SyncFinished => "all: the sync finished",
        }
    }
}

/// Seeds tried when looking for a named case's seed.
pub const NAMED_CASE_SEEDS_MAX: u64 = 256;

/// The named cases for a cut at `at` in `run` (the tiny store cut there): for each, the
/// first seed whose sample keeps exactly that case's units of the log segment being
/// synced. A case that no seed gives (with a unit as big as the segment there is no
/// torn record) is left out.
pub fn named_cuts(run: &walab_core::sim::tiny::TinyRun, at: Nanos) -> Vec<NamedCut> {
    let log_units = |kept: &[(String, u32)]| -> Vec<(String, u32)> { kept.iter().filter(|(file, _)| file.starts_with("wal-")).cloned().collect() };
    // The in-flight log units: what the state keeping every uncertain unit keeps.
    let Some(states) = run.post_crash_states() else { return Vec::new() };
    let Some(all) = states.iter().max_by_key(|state| state.kept_units.len()) else { return Vec::new() };
    let in_flight = log_units(&all.kept_units);
    if in_flight.is_empty() {
        return Vec::new();
    }
    NamedCase::ALL
        .into_iter()
        .filter_map(|case| {
            let wanted: Vec<(String, u32)> = match case {
                NamedCase::TornRecord if in_flight.len() >= 2 => in_flight[..in_flight.len() - 1].to_vec(),
                NamedCase::TornRecord => return None,
                NamedCase::SyncFinished => in_flight.clone(),
            };
            let seed = (0..NAMED_CASE_SEEDS_MAX).find(|&seed| log_units(&run.sample_post_crash(seed).kept_units) == wanted)?;
            Some(NamedCut { case, at, seed })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::url_state::parse_query;

    #[test]
    fn the_named_cases_are_the_torn_record_and_the_finished_sync() {
        let setup = crate::model::tiny::setup_for(&parse_query("part=7").0, crate::url_state::PolicyKind::Group);
        let at = walab_core::tiny_store::POWER_CUT;
        let run = walab_core::sim::tiny::run(&setup.clone().with_power_cut(at)).unwrap();
        let cuts = named_cuts(&run, at);
        assert_eq!(cuts.iter().map(|cut| cut.case).collect::<Vec<_>>(), NamedCase::ALL);
        let kept = |seed| run.sample_post_crash(seed).kept_units;
        let wal_6 = |units: &[u32]| units.iter().map(|&unit| ("wal-6".to_string(), unit)).collect::<Vec<_>>();
        assert_eq!(kept(cuts[0].seed), wal_6(&[1, 2]), "units 1 and 2 land, unit 3 does not");
        let torn = run.sample_post_crash(cuts[0].seed);
        assert_eq!(torn.recovery.stop.reason.name(), "checksum");
        assert!(torn.recovery.recovered.contains(&23) && !torn.recovery.recovered.contains(&24));
        let finished = run.sample_post_crash(cuts[1].seed);
        assert_eq!(finished.kept_units, wal_6(&[1, 2, 3]));
        assert!(finished.recovery.recovered.contains(&23) && finished.recovery.recovered.contains(&24), "23 and 24 survive without their OK");
        // With 4 KiB units one unit holds all of wal-6: nothing can tear.
        let big = walab_core::sim::tiny::run(&setup.with_unit_bytes(4096).with_power_cut(at)).unwrap();
        assert_eq!(named_cuts(&big, at).iter().map(|cut| cut.case).collect::<Vec<_>>(), [NamedCase::SyncFinished]);
    }

    #[test]
    fn wal_6_records_sit_where_the_page_says() {
        let ranges: Vec<(u64, usize, usize)> = record_ranges(21, 24);
        assert_eq!(ranges, vec![(21, 0, 27), (22, 27, 55), (23, 55, 82), (24, 82, 109)]);
    }

    #[test]
    fn a_torn_cut_keeps_unit_2_loses_unit_3_and_the_scan_stops_at_record_24() {
        // Look for the seed whose outcome lands unit 2 of B14's sync and not unit 3.
        let seed = (0..64)
            .find(|seed| {
                let model = crate::model::tiny::for_link(&format!("part=7&cut=13.5&seed={seed}"));
                let outcome = model.cut.unwrap().unwrap();
                outcome.crash.kept_units.contains(&("wal-6".into(), 1)) && outcome.crash.kept_units.contains(&("wal-6".into(), 2)) && !outcome.crash.kept_units.contains(&("wal-6".into(), 3))
            })
            .expect("some seed tears record 24");
        assert_eq!(seed, 9, "figures-b.test.mjs opens this outcome with seed=9");
        assert_eq!(seed, crate::url_state::PART_7_TORN_SEED, "Part 7's own seed is the torn record");
        let model = crate::model::tiny::for_link(&format!("part=7&cut=13.5&seed={seed}"));
        let outcome = model.cut.as_ref().unwrap().as_ref().unwrap();
        let end = model.timeline().end;
        let view = log_view(&outcome.run.trace, 32, end, Some(outcome), model.checks_done(end));
        let wal_6 = view.segments.iter().find(|segment| segment.name == "wal-6").unwrap();
        assert_eq!(wal_6.units[2], UnitPlace::Landed);
        assert_eq!(wal_6.units[3], UnitPlace::NotLanded);
        assert_eq!(view.stop_record, Some(24));
        let orders: Vec<(usize, Option<usize>)> = view.landings.iter().map(|landing| (landing.unit, landing.order)).collect();
        assert_eq!(orders, vec![(1, Some(1)), (2, Some(2)), (3, None)]);
        assert_eq!(view.landing_words().unwrap(), "wal-6, unit 1 lands first, then unit 2; the power fails before unit 3 lands");
        assert_eq!(wal_6.records.iter().find(|record| record.write == 23).unwrap().mark, RecordMark::Accepted);
        // Before the cut, B14's units are in its running sync.
        let before = log_view(&outcome.run.trace, 32, Nanos::from_micros(13_400), Some(outcome), 0);
        let wal_6 = before.segments.iter().find(|segment| segment.name == "wal-6").unwrap();
        assert!(wal_6.units[2..].iter().all(|place| *place == UnitPlace::Syncing), "{:?}", wal_6.units);
        assert_eq!(before.cursor, None);
        assert!(before.landings.is_empty());
    }
}
