//! wal-1's first writes followed unit by unit, one step per event.
//!
//! The tiny store's trace records a batch's `write()` and the start of its `fdatasync()`
//! at the same simulated instant (the simulated `write()` takes no time), so a player
//! that steps from instant to instant never shows a unit dirty in the page cache: the
//! fold of every event at that instant has already handed it to the sync. The lesson
//! is exactly that in-between state, so this model steps through the trace *event by
//! event* instead, on a clock of steps (`Clock::Steps`), and keeps only the events
//! about wal-1 and its four writes (plus the creation of wal-2, the next segment).
//!
//! One sync is drawn as its two halves. At `SyncStart` the kernel hands the dirty units
//! to the drive, which holds them in its volatile cache (the device model's "syncing":
//! they may or may not be on the media yet); the `UnitPersisted` events at the sync's
//! end are the drive's cache flush, its own step; `SyncEnd` is `fdatasync()` returning,
//! and `Ack` the OK. Every step's picture and caption come from those events.

use walab_core::sim::tiny;
use walab_core::time::Nanos;
use walab_core::trace::{Event, Trace};

use super::chain::{survives, Failure, Stage};
use super::Timeline;
use crate::url_state::{LabParams, PolicyKind};

/// The display time of one step (the player shows steps, not times).
pub const STEP: Nanos = Nanos::from_millis(1);
/// The segment the journey follows, and its writes.
pub const SEGMENT: u64 = 1;

/// Where one of wal-1's units is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnitPlace {
    /// The file does not exist yet.
    Absent,
    /// Zeros on the media: nothing was ever written here.
    Zero,
    /// Changed in the page cache; the media holds older bytes.
    Dirty,
    /// Handed to the drive by a running fdatasync: in its volatile cache.
    DeviceCache,
    /// The media holds what the page cache holds.
    Media,
}

impl UnitPlace {
    /// The name used in the DOM (`data-state`) and the CSS.
    pub fn name(self) -> &'static str {
        match self {
            UnitPlace::Absent => "absent",
            UnitPlace::Zero => "zero",
            UnitPlace::Dirty => "dirty",
            UnitPlace::DeviceCache => "device-cache",
            UnitPlace::Media => "media",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            UnitPlace::Absent => "no file yet",
            UnitPlace::Zero => "zeros on the media",
            UnitPlace::Dirty => "dirty in the page cache",
            UnitPlace::DeviceCache => "in the drive's volatile cache",
            UnitPlace::Media => "on the media",
        }
    }
}

/// One unit at a step: where it is, which records the page cache holds in it, which the
/// media holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnitAt {
    pub unit: u32,
    pub place: UnitPlace,
    pub cache_records: Vec<u64>,
    pub media_records: Vec<u64>,
}

/// Where one write's record is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WritePlace {
    NotYet,
    /// Arrived; its record is (or will be) built in the process's memory.
    Process,
    PageCache,
    DeviceCache,
    Media,
}

impl WritePlace {
    pub fn name(self) -> &'static str {
        match self {
            WritePlace::NotYet => "not-yet",
            WritePlace::Process => "process",
            WritePlace::PageCache => "page-cache",
            WritePlace::DeviceCache => "device-cache",
            WritePlace::Media => "media",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteAt {
    pub id: u64,
    pub place: WritePlace,
    pub acked: bool,
}

/// The system call (or drive action) the step is about, for the figure's marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallAt {
    Idle,
    /// A segment created and its directory synced.
    Create,
    Write,
    /// fdatasync() running: the pages are on their way to the drive.
    SyncRunning,
    /// The drive's cache flush.
    Flush,
    SyncReturned,
    Ack,
}

impl CallAt {
    pub fn name(self) -> &'static str {
        match self {
            CallAt::Idle => "idle",
            CallAt::Create => "create",
            CallAt::Write => "write",
            CallAt::SyncRunning => "fdatasync",
            CallAt::Flush => "flush",
            CallAt::SyncReturned => "returned",
            CallAt::Ack => "ok",
        }
    }
}

/// The whole picture after one step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JourneyStep {
    /// The trace instant of the step's events (for the caption's "at 1.0 ms").
    pub at: Nanos,
    pub units: Vec<UnitAt>,
    pub writes: Vec<WriteAt>,
    /// Segment names whose directory entry exists (and was synced).
    pub directory: Vec<String>,
    pub call: CallAt,
    pub caption: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JourneyModel {
    pub unit_bytes: u64,
    pub segment_bytes: u64,
    /// Byte ranges of the followed writes in wal-1: (write, from, to).
    pub records: Vec<(u64, u64, u64)>,
    /// Step 0 is the state before the first event.
    pub steps: Vec<JourneyStep>,
}

impl JourneyModel {
    pub fn build(params: &LabParams) -> Result<JourneyModel, String> {
        let setup = super::tiny::setup_for(params, PolicyKind::Group);
        let run = tiny::run(&setup).map_err(|error| error.to_string())?;
        Ok(journey(&run.trace))
    }

    pub fn timeline(&self) -> Timeline {
        let count = self.steps.len().saturating_sub(1) as u64;
        let marks: Vec<Nanos> = (1..=count).map(|step| Nanos(STEP.0 * step)).collect();
        Timeline { end: Nanos(STEP.0 * count), marks }
    }

    /// The step shown at the playhead.
    pub fn step_at(&self, now: Nanos) -> &JourneyStep {
        let index = usize::try_from(now.0 / STEP.0).unwrap_or(usize::MAX).min(self.steps.len() - 1);
        &self.steps[index]
    }

    /// The step the journey opens on: the first write() (write 1 in the page cache, its units
    /// dirty), the moment the chapter's first sentence is about.
    pub fn opening(&self) -> Option<Nanos> {
        self.find(|step| step.call == CallAt::Write).map(|(index, _)| Nanos(STEP.0 * index as u64))
    }

    /// The first step at which `matches` holds, with its index.
    pub fn find(&self, matches: impl Fn(&JourneyStep) -> bool) -> Option<(usize, &JourneyStep)> {
        self.steps.iter().enumerate().find(|(_, step)| matches(step))
    }
}

fn list(ids: &[u64]) -> String {
    match ids {
        [] => "none".to_string(),
        [one] => one.to_string(),
        [init @ .., last] => format!("{} and {last}", init.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")),
    }
}

fn units_list(units: &[u32]) -> String {
    let ids: Vec<u64> = units.iter().map(|unit| u64::from(*unit)).collect();
    if ids.len() == 1 {
        format!("unit {}", ids[0])
    } else {
        format!("units {}", list(&ids))
    }
}

fn writes_list(ids: &[u64]) -> String {
    if ids.len() == 1 {
        format!("write {}", ids[0])
    } else {
        format!("writes {}", list(ids))
    }
}

/// Folds wal-1's events into steps.
pub fn journey(trace: &Trace) -> JourneyModel {
    let unit_bytes = u64::from(trace.unit_bytes.max(1));
    let segment_file = trace.files.iter().position(|file| file.name == format!("wal-{SEGMENT}")).unwrap_or(0) as u32;
    let segment_bytes = trace.files.get(segment_file as usize).map_or(0, |file| file.bytes);
    let followed: Vec<u64> = trace.writes.iter().filter(|write| write.segment == SEGMENT).map(|write| write.id).collect();
    let mut records = Vec::new();
    let mut offset = 0;
    for write in trace.writes.iter().filter(|write| write.segment == SEGMENT) {
        records.push((write.id, offset, offset + write.record_bytes));
        offset += write.record_bytes;
    }
    let unit_count = segment_bytes.div_ceil(unit_bytes) as u32;
    let mut state = JourneyStep {
        at: Nanos::ZERO,
        units: (0..unit_count)
            .map(|unit| UnitAt { unit, place: UnitPlace::Absent, cache_records: Vec::new(), media_records: Vec::new() })
            .collect(),
        writes: followed.iter().map(|id| WriteAt { id: *id, place: WritePlace::NotYet, acked: false }).collect(),
        directory: Vec::new(),
        call: CallAt::Idle,
        caption: format!(
            "Before the store opens: no wal-{SEGMENT} yet. Step forward to follow {} from the process to the media.",
            writes_list(&followed)
        ),
    };
    let mut steps = vec![state.clone()];
    let records_in = |from: u64, to: u64| -> Vec<u64> {
        records.iter().filter(|(_, start, end)| *start < to && *end > from).map(|(id, _, _)| *id).collect()
    };
    let unit_range = |unit: u32| (u64::from(unit) * unit_bytes, u64::from(unit + 1) * unit_bytes);
    let last_followed = followed.last().copied().unwrap_or(0);
    let last_ack = trace.events.iter().find_map(|event| match &event.event {
        Event::Ack { first_write, writes } if (*first_write..first_write + writes).contains(&last_followed) => Some(event.at),
        _ => None,
    });
    let mut index = 0;
    let events = &trace.events;
    while index < events.len() {
        let event = &events[index];
        if last_ack.is_some_and(|last| event.at > last) {
            break;
        }
        index += 1;
        let caption = match &event.event {
            Event::Create { file } if trace.files.get(*file as usize).is_some_and(|entry| entry.name.starts_with("wal-")) => {
                let name = trace.files[*file as usize].name.clone();
                state.call = CallAt::Create;
                state.directory.push(name.clone());
                if *file == segment_file {
                    for unit in &mut state.units {
                        unit.place = UnitPlace::Zero;
                    }
                    format!(
                        "The store creates {name}: {segment_bytes} zero bytes ({unit_count} units of {unit_bytes} bytes), written and synced onto the media, then syncs the directory so the name {name} itself survives a power loss."
                    )
                } else {
                    format!(
                        "{} is full after write {}: the next writes go to a new segment. {name} is created zero-filled, and the directory is synced again: a new file's name is durable only after the directory's own sync.",
                        trace.files[segment_file as usize].name,
                        followed.last().copied().unwrap_or(0)
                    )
                }
            }
            Event::Arrive { write } if followed.contains(write) => {
                set_write(&mut state, *write, WritePlace::Process);
                let detail = trace.writes.iter().find(|entry| entry.id == *write).map(describe_op).unwrap_or_default();
                let waiting = if state.call == CallAt::SyncRunning { "; a sync is running, so it waits in the process's memory" } else { "" };
                state.call = if state.call == CallAt::SyncRunning { CallAt::SyncRunning } else { CallAt::Idle };
                format!("Write {write} arrives ({detail}){waiting}.")
            }
            Event::BatchFormed { batch, segment, first_write, writes, offset, bytes } if *segment == SEGMENT => {
                let ids: Vec<u64> = (*first_write..first_write + writes).collect();
                state.call = CallAt::Idle;
                format!(
                    "B{batch}: the engine frames {} as {bytes} bytes of log records in its own buffer, for bytes {offset} to {} of wal-{SEGMENT}.",
                    writes_list(&ids),
                    offset + bytes - 1
                )
            }
            Event::Write { file, offset, bytes } if *file == segment_file && *bytes > 0 => {
                let (from, to) = (*offset, offset + bytes);
                let mut touched = Vec::new();
                for unit in &mut state.units {
                    let (start, end) = unit_range(unit.unit);
                    if start < to && end > from {
                        unit.place = UnitPlace::Dirty;
                        // The records written so far that overlap this unit.
                        unit.cache_records = records
                            .iter()
                            .filter(|(_, record_start, record_end)| *record_start < end && *record_end > start && *record_start < to)
                            .map(|(id, _, _)| *id)
                            .collect();
                        touched.push(unit.unit);
                    }
                }
                let ids = records_in(from, to);
                for id in &ids {
                    set_write(&mut state, *id, WritePlace::PageCache);
                }
                state.call = CallAt::Write;
                format!(
                    "write() copies bytes {from} to {} into the kernel's page cache and returns: {} now dirty. Nothing new is on the media; a power loss now would lose {}.",
                    to - 1,
                    if touched.len() == 1 { format!("unit {} is", touched[0]) } else { format!("{} are", units_list(&touched)) },
                    writes_list(&ids)
                )
            }
            Event::SyncStart { file, units, .. } if *file == segment_file => {
                let mut moved = Vec::new();
                for unit in &mut state.units {
                    if units.contains(&unit.unit) && unit.place == UnitPlace::Dirty {
                        unit.place = UnitPlace::DeviceCache;
                        moved.push(unit.unit);
                    }
                }
                let ids: Vec<u64> = state.writes.iter().filter(|write| write.place == WritePlace::PageCache).map(|write| write.id).collect();
                for id in &ids {
                    set_write(&mut state, *id, WritePlace::DeviceCache);
                }
                state.call = CallAt::SyncRunning;
                format!(
                    "fdatasync(wal-{SEGMENT}) starts: the kernel sends dirty {} to the drive, which holds them in its volatile cache. Still not safe: the drive's cache loses power with the machine.",
                    units_list(&moved)
                )
            }
            Event::UnitPersisted { file, .. } if *file == segment_file => {
                // The flush: every unit persisted at this instant is one step.
                let mut flushed = Vec::new();
                let mut cursor = index - 1;
                while cursor < events.len() && events[cursor].at == event.at {
                    if let Event::UnitPersisted { file, unit } = &events[cursor].event {
                        if *file == segment_file {
                            if let Some(entry) = state.units.iter_mut().find(|entry| entry.unit == *unit) {
                                entry.media_records = entry.cache_records.clone();
                                entry.place = if entry.media_records.is_empty() { UnitPlace::Zero } else { UnitPlace::Media };
                                flushed.push(*unit);
                            }
                        }
                    } else {
                        break;
                    }
                    cursor += 1;
                }
                index = cursor;
                let ids: Vec<u64> = state.writes.iter().filter(|write| write.place == WritePlace::DeviceCache).map(|write| write.id).collect();
                for id in &ids {
                    set_write(&mut state, *id, WritePlace::Media);
                }
                state.call = CallAt::Flush;
                format!(
                    "The drive flushes its cache: {} {} on the stable media, so {} would survive a power loss from now on.",
                    units_list(&flushed),
                    if flushed.len() == 1 { "is" } else { "are" },
                    writes_list(&ids)
                )
            }
            Event::SyncEnd { file, ok, .. } if *file == segment_file => {
                state.call = CallAt::SyncReturned;
                if *ok {
                    "fdatasync() returns 0: every byte written to wal-1 before it started is on the media.".to_string()
                } else {
                    "fdatasync() returns an error: the bytes may not be on the media.".to_string()
                }
            }
            Event::Ack { first_write, writes } if followed.contains(first_write) => {
                let ids: Vec<u64> = (*first_write..first_write + writes).collect();
                for write in &mut state.writes {
                    if ids.contains(&write.id) {
                        write.acked = true;
                    }
                }
                state.call = CallAt::Ack;
                format!("Only now is {} told OK: the promise is backed by bytes on the media.", writes_list(&ids))
            }
            _ => continue,
        };
        state.at = event.at;
        state.caption = caption;
        steps.push(state.clone());
    }
    JourneyModel { unit_bytes, segment_bytes, records, steps }
}

fn set_write(state: &mut JourneyStep, id: u64, place: WritePlace) {
    if let Some(write) = state.writes.iter_mut().find(|write| write.id == id) {
        write.place = place;
    }
}

fn describe_op(write: &walab_core::trace::TraceWrite) -> String {
    match (write.op.as_deref(), write.key.as_deref(), write.value.as_deref()) {
        (Some("del"), Some(key), _) => format!("del {key}"),
        (_, Some(key), Some(value)) => format!("put {key} {value}"),
        _ => format!("{} bytes", write.record_bytes),
    }
}

/// Where a call leaves the bytes it was given when it returns, and so what a power loss
/// right after it keeps (the durability chain decides).
pub fn power_loss_after(stage: Stage) -> &'static str {
    if survives(stage, Failure::PowerLoss) {
        "kept: the bytes are on the media"
    } else {
        match stage {
            Stage::PageCache => "lost: the bytes were only in the page cache",
            Stage::DeviceCache => "maybe lost: the bytes may still be in the drive's cache",
            _ => "lost",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::url_state::parse_query;

    fn model() -> JourneyModel {
        JourneyModel::build(&parse_query("").0).unwrap()
    }

    fn unit(step: &JourneyStep, unit: u32) -> &UnitAt {
        step.units.iter().find(|entry| entry.unit == unit).unwrap()
    }

    #[test]
    fn write_1_is_dirty_after_write_and_on_the_media_after_its_fdatasync() {
        let model = model();
        let (after_write, step) = model.find(|step| step.call == CallAt::Write).unwrap();
        assert_eq!(unit(step, 0).place, UnitPlace::Dirty);
        assert_eq!(unit(step, 0).cache_records, [1]);
        assert!(step.units.iter().all(|unit| unit.media_records.is_empty()), "nothing is on the media yet");
        let (started, step) = model.find(|step| step.call == CallAt::SyncRunning).unwrap();
        assert!(started > after_write);
        assert_eq!(unit(step, 0).place, UnitPlace::DeviceCache);
        let (flushed, step) = model.find(|step| step.call == CallAt::Flush).unwrap();
        assert!(flushed > started);
        assert_eq!(unit(step, 0).place, UnitPlace::Media);
        assert_eq!(unit(step, 0).media_records, [1]);
        let (returned, _) = model.find(|step| step.call == CallAt::SyncReturned).unwrap();
        let (ok, step) = model.find(|step| step.call == CallAt::Ack).unwrap();
        assert!(flushed < returned && returned < ok);
        assert!(step.writes.iter().find(|write| write.id == 1).unwrap().acked);
    }

    #[test]
    fn every_step_changes_the_caption_and_the_journey_ends_with_wal_1_on_the_media() {
        let model = model();
        assert!(model.steps.len() > 15, "{} steps", model.steps.len());
        for pair in model.steps.windows(2) {
            assert_ne!(pair[0].caption, pair[1].caption);
            assert_ne!(pair[0], JourneyStep { caption: pair[0].caption.clone(), ..pair[1].clone() }, "step '{}' changes nothing", pair[1].caption);
        }
        let last = model.steps.last().unwrap();
        assert!(last.writes.iter().all(|write| write.acked && write.place == WritePlace::Media));
        let on_media: Vec<Vec<u64>> = last.units.iter().map(|unit| unit.media_records.clone()).collect();
        assert_eq!(on_media, [vec![1, 2], vec![2, 3], vec![3, 4], vec![4]]);
        assert_eq!(last.directory, ["wal-1", "wal-2"]);
        assert_eq!(model.records.iter().map(|range| range.1).collect::<Vec<_>>(), [0, 29, 56, 85]);
        assert!(model.steps.iter().any(|step| step.units.iter().filter(|unit| unit.place == UnitPlace::Dirty).count() >= 2));
    }

    #[test]
    fn the_timeline_has_one_mark_per_step() {
        let model = model();
        let timeline = model.timeline();
        assert_eq!(timeline.marks.len(), model.steps.len() - 1);
        assert_eq!(model.step_at(timeline.end), model.steps.last().unwrap());
        assert_eq!(model.step_at(Nanos::ZERO), &model.steps[0]);
    }

    #[test]
    fn a_power_loss_after_write_loses_and_after_fdatasync_keeps() {
        assert!(power_loss_after(Stage::PageCache).starts_with("lost"));
        assert!(power_loss_after(Stage::Media).starts_with("kept"));
    }
}
