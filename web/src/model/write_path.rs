//! One write's path through the engine, as stations, from the tiny store's run.
//!
//! Write 1 of the tiny store leaves the client, becomes a log record, is copied into
//! the page cache, handed to the drive's cache by the sync, put on the media by the
//! drive's flush, applied to the MemTable, made visible to readers, and only then
//! answered OK. Each station's instant comes from the run's trace; the MemTable, the
//! publication and the OK happen at the same simulated instant, in the order every
//! engine must keep (durable, then applied, then visible, then OK).

use walab_core::sim::tiny;
use walab_core::time::Nanos;
use walab_core::trace::Event;

use super::Timeline;
use crate::url_state::{LabParams, PolicyKind};

/// The display time of one station (the player shows steps).
pub const STEP: Nanos = Nanos::from_millis(1);
/// The write the path follows.
pub const WRITE: u64 = 1;

/// A place on the write path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Station {
    Client,
    LogRecord,
    PageCache,
    DeviceCache,
    Media,
    MemTable,
    Visible,
    Ok,
}

impl Station {
    pub const ALL: [Station; 8] = [
        Station::Client,
        Station::LogRecord,
        Station::PageCache,
        Station::DeviceCache,
        Station::Media,
        Station::MemTable,
        Station::Visible,
        Station::Ok,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Station::Client => "client",
            Station::LogRecord => "log-record",
            Station::PageCache => "page-cache",
            Station::DeviceCache => "device-cache",
            Station::Media => "media",
            Station::MemTable => "memtable",
            Station::Visible => "visible",
            Station::Ok => "ok",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Station::Client => "client",
            Station::LogRecord => "log record",
            Station::PageCache => "page cache",
            Station::DeviceCache => "device cache",
            Station::Media => "media",
            Station::MemTable => "MemTable",
            Station::Visible => "visible",
            Station::Ok => "OK",
        }
    }

    /// Durable from here on (survives a power loss).
    pub fn durable(self) -> bool {
        matches!(self, Station::Media | Station::MemTable | Station::Visible | Station::Ok)
    }
}

/// One station reached, at its instant in the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathStep {
    pub station: Station,
    pub at: Nanos,
    pub caption: String,
}

/// The stations of write 1, from the tiny store's run (empty if the run failed).
pub fn path(params: &LabParams) -> Vec<PathStep> {
    let Ok(run) = tiny::run(&super::tiny::setup_for(params, PolicyKind::Group)) else { return Vec::new() };
    let trace = &run.trace;
    let Some(write) = trace.writes.iter().find(|write| write.id == WRITE) else { return Vec::new() };
    let segment = trace.file_index(&format!("wal-{}", write.segment));
    let at = |matches: &dyn Fn(&Event) -> bool| trace.events.iter().find(|event| matches(&event.event)).map(|event| event.at);
    let arrive = at(&|event| matches!(event, Event::Arrive { write } if *write == WRITE));
    let framed = at(&|event| matches!(event, Event::BatchFormed { first_write, writes, .. } if (*first_write..first_write + writes).contains(&WRITE)));
    let written = at(&|event| matches!(event, Event::Write { file, .. } if Some(*file) == segment));
    let sync = at(&|event| matches!(event, Event::SyncStart { file, .. } if Some(*file) == segment));
    let persisted = at(&|event| matches!(event, Event::UnitPersisted { file, .. } if Some(*file) == segment));
    let applied = at(&|event| matches!(event, Event::Apply { write } if *write == WRITE));
    let acked = at(&|event| matches!(event, Event::Ack { first_write, writes } if (*first_write..first_write + writes).contains(&WRITE)));
    let what = match (write.op.as_deref(), write.key.as_deref(), write.value.as_deref()) {
        (_, Some(key), Some(value)) => format!("put {key} = {value}"),
        (_, Some(key), None) => format!("del {key}"),
        _ => "a write".to_string(),
    };
    let key = write.key.clone().unwrap_or_default();
    let ms = |t: Nanos| crate::url_state::format_millis(t);
    let mut steps = Vec::new();
    let mut push = |station: Station, at: Option<Nanos>, caption: String| {
        if let Some(at) = at {
            steps.push(PathStep { station, at, caption: format!("{} ms: {caption}", ms(at)) });
        }
    };
    push(Station::Client, arrive, format!("a client sends write {WRITE} ({what}) and waits for OK"));
    push(Station::LogRecord, framed, format!("the engine frames it as a {}-byte log record in its own memory", write.record_bytes));
    push(Station::PageCache, written, "write() copies the record into the kernel's page cache: fast, and gone if the machine loses power".into());
    push(Station::DeviceCache, sync, "fdatasync() sends it to the drive, whose volatile cache holds it: still not safe".into());
    push(Station::Media, persisted, "the drive flushes its cache: the record is on the stable media and survives a power loss".into());
    push(Station::MemTable, applied, "only now is the change applied to the MemTable".into());
    push(Station::Visible, applied, format!("and made visible: readers of {key} see the new value"));
    push(Station::Ok, acked, format!("the client gets its OK, {} ms after sending: the wait is one sync", ms(Nanos(acked.unwrap_or(Nanos::ZERO).0.saturating_sub(arrive.unwrap_or(Nanos::ZERO).0)))));
    steps
}

pub fn timeline() -> Timeline {
    let count = Station::ALL.len() as u64;
    let marks: Vec<Nanos> = (1..=count).map(|step| Nanos(STEP.0 * step)).collect();
    Timeline { end: Nanos(STEP.0 * count), marks }
}

/// The step the path opens on: its first, write 1 leaving the client (step 1 of 8), so a
/// student follows it from the start.
pub fn opening() -> Nanos {
    STEP
}

/// How many stations the write has reached at the playhead (0 before the first).
pub fn reached(now: Nanos) -> usize {
    usize::try_from(now.0 / STEP.0).unwrap_or(usize::MAX).min(Station::ALL.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_1_visits_every_station_in_order_and_is_durable_before_its_ok() {
        let steps = path(&crate::url_state::parse_query("").0);
        let stations: Vec<Station> = steps.iter().map(|step| step.station).collect();
        assert_eq!(stations, Station::ALL);
        assert!(steps.windows(2).all(|pair| pair[0].at <= pair[1].at));
        let media = steps.iter().find(|step| step.station == Station::Media).unwrap().at;
        let ok = steps.iter().find(|step| step.station == Station::Ok).unwrap().at;
        assert!(media <= ok);
        assert_eq!(ok - steps[0].at, Nanos::from_millis(1), "one sync of the tiny store");
        for pair in steps.windows(2) {
            assert_ne!(pair[0].caption, pair[1].caption);
        }
        assert_eq!(reached(timeline().end), Station::ALL.len());
    }
}
