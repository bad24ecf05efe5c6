//! A trace file dropped onto the page: a run recorded by `walab` (simulated, or measured on
//! a real disk) read back and drawn in the same lanes as the simulator's own runs.
//!
//! The file is untrusted input, so every way it can be wrong becomes one clear sentence
//! for the page, never a panic or a blank view.

use walab_core::trace::{Trace, TRACE_FORMAT_VERSION};

use walab_core::time::Nanos;

use super::trace_summary::RunSummary;
use super::trace_view::TraceSpans;
use super::Timeline;

/// The largest trace file the page reads, in bytes.
pub const TRACE_FILE_BYTES_MAX: usize = 64 << 20;
/// The most writes the lanes draw one by one: a longer run is drawn as a window of this
/// many writes around the playhead.
pub const LANE_WRITES_MAX: usize = 120;

/// A trace read from a file.
#[derive(Debug)]
pub struct DroppedTrace {
    pub file_name: String,
    pub scenario: String,
    pub policy: String,
    pub events: usize,
    pub writes: usize,
    /// The recording stopped at `events_max` events: what came after is not in the file.
    pub truncated: bool,
    pub events_max: usize,
    pub summary: RunSummary,
    /// Every write's span (the lanes draw a window of them).
    pub spans: TraceSpans,
    /// The trace itself: each step's caption is told from its events.
    pub trace: std::rc::Rc<Trace>,
}

/// Two reads are the same when they hold the same parsed trace: the page compares its
/// props on every render, and a hundred thousand writes are not compared one by one.
impl PartialEq for DroppedTrace {
    fn eq(&self, other: &DroppedTrace) -> bool {
        std::rc::Rc::ptr_eq(&self.trace, &other.trace) && self.file_name == other.file_name
    }
}

impl DroppedTrace {
    /// The same file read the same way (what the tests compare; `==` is identity).
    #[cfg(test)]
    pub fn same_as(&self, other: &DroppedTrace) -> bool {
        (&self.file_name, self.events, self.writes, self.truncated, &self.summary, &self.spans, &*self.trace)
            == (&other.file_name, other.events, other.writes, other.truncated, &other.summary, &other.spans, &*other.trace)
    }

    pub fn timeline(&self) -> Timeline {
        Timeline { marks: self.spans.marks(), end: self.spans.end }
    }

    /// The writes the lanes draw with the playhead at `now`: all of a short run, or the
    /// window of [`LANE_WRITES_MAX`] writes around the playhead, its axis its own. Most of
    /// the window has arrived (the lanes show what happened to them), a few are still to
    /// come.
    pub fn window_at(&self, now: Nanos) -> TraceSpans {
        if self.spans.writes.len() <= LANE_WRITES_MAX {
            return self.spans.clone();
        }
        let first = self.spans.arrived_by(now).saturating_sub(LANE_WRITES_MAX * 4 / 5).min(self.spans.writes.len() - LANE_WRITES_MAX);
        self.spans.window(first, LANE_WRITES_MAX)
    }

    /// Where the lanes open: in the middle of the run's busiest moment.
    pub fn opening(&self) -> Option<Nanos> {
        let busiest = self.summary.busiest.as_ref()?;
        Some(Nanos(busiest.start.0 + (busiest.end.0 - busiest.start.0) / 2))
    }
}

/// Reads a commit trace file's text (the page reads every dropped file through
/// [`parse_dropped`]). The error names the file and what is wrong with it.
#[cfg(test)]
pub fn parse_trace(file_name: &str, text: &str) -> Result<DroppedTrace, String> {
    let trace = read_trace(file_name, text)?;
    Ok(commit_trace(file_name, trace))
}

/// A trace's JSON read back: the one place the page parses a trace (a dropped file, the
/// live feed's header and its events in batches).
pub fn trace_json(text: &str) -> Result<Trace, serde_json::Error> {
    serde_json::from_str(text)
}

/// The checks every trace file passes, whatever it recorded: its size, its JSON, its
/// format version, events in time order, at least one event.
fn read_trace(file_name: &str, text: &str) -> Result<Trace, String> {
    if text.len() > TRACE_FILE_BYTES_MAX {
        return Err(format!("{file_name}: {} bytes is larger than the {} MiB the page reads", text.len(), TRACE_FILE_BYTES_MAX >> 20));
    }
    if text.trim().is_empty() {
        return Err(format!("{file_name}: the file is empty"));
    }
    let trace: Trace = trace_json(text).map_err(|error| {
        format!("{file_name}: not a walab trace (line {}, column {}: {})", error.line(), error.column(), strip_position(&error.to_string()))
    })?;
    checked_trace(file_name, trace)
}

/// The checks on a trace's content: its format version, events in time order, at least
/// one event.
pub fn checked_trace(file_name: &str, trace: Trace) -> Result<Trace, String> {
    if trace.format_version != TRACE_FORMAT_VERSION {
        return Err(format!(
            "{file_name}: trace format {} is not the {} this page reads",
            trace.format_version, TRACE_FORMAT_VERSION
        ));
    }
    if let Some(index) = trace.events.windows(2).position(|pair| pair[1].at < pair[0].at) {
        return Err(format!("{file_name}: event {} goes back in time", index + 2));
    }
    if trace.events.is_empty() {
        return Err(format!("{file_name}: the trace has no events"));
    }
    Ok(trace)
}

fn commit_trace(file_name: &str, trace: Trace) -> DroppedTrace {
    let spans = TraceSpans::from_trace(&trace);
    let summary = RunSummary::of(&spans);
    DroppedTrace {
        file_name: file_name.to_string(),
        scenario: trace.scenario.clone(),
        policy: trace.policy.clone(),
        events: trace.events.len(),
        writes: trace.writes.len(),
        truncated: trace.truncated,
        events_max: trace.events_max,
        summary,
        spans,
        trace: std::rc::Rc::new(trace),
    }
}

fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(at) => message[..at].to_string(),
        None => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use walab_core::group_commit::{Config, Policy};
    use walab_core::sim::commit;

    fn tiny_trace_json() -> String {
        let (setup, arrivals) = commit::tiny_store_setup(Config::file(Policy::Group));
        let run = commit::run(&setup, &arrivals).unwrap();
        serde_json::to_string(&run.trace.unwrap()).unwrap()
    }

    #[test]
    fn a_simulated_trace_reads_back_into_the_same_spans() {
        let dropped = parse_trace("run.json", &tiny_trace_json()).unwrap();
        assert_eq!(dropped.writes, 24);
        assert!(dropped.spans.writes.iter().all(|write| write.ack.is_some()));
        assert!(!dropped.timeline().marks.is_empty());
    }

    #[test]
    fn bad_files_get_one_clear_sentence() {
        assert_eq!(parse_trace("a.json", "  ").unwrap_err(), "a.json: the file is empty");
        let error = parse_trace("b.json", "{\"format_version\": 1").unwrap_err();
        assert!(error.starts_with("b.json: not a walab trace (line 1, column"), "{error}");
        let wrong_version = tiny_trace_json().replacen("\"format_version\":1", "\"format_version\":99", 1);
        assert_eq!(parse_trace("c.json", &wrong_version).unwrap_err(), "c.json: trace format 99 is not the 1 this page reads");
    }
}

/// A sync-latency distribution measured by `walab fsync-test --export-latency`
/// (schema `walab-latency/1`), loaded to run the simulator on that disk's numbers.
#[derive(Debug, PartialEq)]
pub struct MeasuredLatency {
    pub file_name: String,
    pub method: String,
    pub model: walab_core::sim::SyncLatency,
    pub median: walab_core::time::Nanos,
    pub p99: walab_core::time::Nanos,
}

#[derive(serde::Deserialize)]
struct LatencyExport {
    schema: String,
    #[serde(default)]
    method: String,
    quantiles_ns: Vec<u64>,
}

/// What a dropped file turned out to be.
#[derive(Debug, PartialEq)]
pub enum DroppedFile {
    /// A commit trace: group commit's lanes play it.
    Trace(DroppedTrace),
    /// A trace of `walab sim remote` on S3 or Postgres.
    Remote(super::remote_trace::DroppedRemote),
    Latency(MeasuredLatency),
}

/// A trace being played, of either kind.
#[derive(Clone, Debug, PartialEq)]
pub enum Dropped {
    Commit(std::rc::Rc<DroppedTrace>),
    Remote(std::rc::Rc<super::remote_trace::DroppedRemote>),
}

impl Dropped {
    /// What it is.
    pub fn kind(&self) -> DroppedKind {
        match self {
            Dropped::Commit(_) => DroppedKind::CommitTrace,
            Dropped::Remote(remote) => DroppedKind::Remote(remote.backend()),
        }
    }
}

/// What a dropped file is, as far as it said: the view that plays it is chosen from this.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DroppedKind {
    CommitTrace,
    Latency,
    Remote(walab_core::sim::remote::RemoteBackend),
}

/// A file the page could not read: the sentence, and what the file is when it said so
/// (a latency export, or a remote run on a backend).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DropError {
    pub message: String,
    pub kind: Option<DroppedKind>,
}

/// Reads a dropped file: a latency export if it says so, else a trace, a remote run's
/// when its scenario says so.
pub fn parse_dropped(file_name: &str, text: &str) -> Result<DroppedFile, DropError> {
    if text.contains("\"walab-latency/") {
        return parse_latency(file_name, text).map(DroppedFile::Latency).map_err(|message| DropError { message, kind: Some(DroppedKind::Latency) });
    }
    let trace = read_trace(file_name, text).map_err(|message| DropError { message, kind: None })?;
    dropped_of_trace(file_name, trace)
}

/// A checked trace as what it is: a remote run's when its scenario says so, else a
/// commit trace.
pub fn dropped_of_trace(file_name: &str, trace: Trace) -> Result<DroppedFile, DropError> {
    if super::remote_trace::is_remote(&trace) {
        let backend = super::remote_trace::backend_of_scenario(&trace.scenario);
        return super::remote_trace::read_remote(file_name, &trace)
            .map(DroppedFile::Remote)
            .map_err(|message| DropError { message, kind: Some(DroppedKind::Remote(backend)) });
    }
    Ok(DroppedFile::Trace(commit_trace(file_name, trace)))
}

pub fn parse_latency(file_name: &str, text: &str) -> Result<MeasuredLatency, String> {
    let export: LatencyExport = serde_json::from_str(text).map_err(|error| {
        format!("{file_name}: not a latency export (line {}, column {}: {})", error.line(), error.column(), strip_position(&error.to_string()))
    })?;
    if export.schema != "walab-latency/1" {
        return Err(format!("{file_name}: schema {:?}, expected \"walab-latency/1\"", export.schema));
    }
    let model = walab_core::sim::SyncLatency::from_quantiles(&export.quantiles_ns).map_err(|error| format!("{file_name}: {error}"))?;
    Ok(MeasuredLatency {
        file_name: file_name.to_string(),
        method: export.method,
        model,
        median: walab_core::time::Nanos(export.quantiles_ns[50]),
        p99: walab_core::time::Nanos(export.quantiles_ns[99]),
    })
}

#[cfg(test)]
mod latency_tests {
    use super::*;

    fn export(quantiles: &[u64]) -> String {
        format!("{{\"schema\": \"walab-latency/1\", \"method\": \"overwrite-fdatasync\", \"quantiles_ns\": {quantiles:?}}}")
    }

    #[test]
    fn a_latency_export_becomes_a_sync_model() {
        let quantiles: Vec<u64> = (0..101).map(|i| 500_000 + i * 10_000).collect();
        let DroppedFile::Latency(latency) = parse_dropped("lat.json", &export(&quantiles)).unwrap() else {
            panic!("read as a trace");
        };
        assert_eq!(latency.median.0, 1_000_000);
        assert!(latency.model.is_positive());
    }

    #[test]
    fn a_bad_latency_export_says_why() {
        let error = parse_dropped("lat.json", &export(&[1, 2, 3])).unwrap_err().message;
        assert!(error.starts_with("lat.json: "), "{error}");
    }
}
