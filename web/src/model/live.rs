//! The live view of a running `walab serve`: its `GET /trace` feed folded into
//! what the view draws (the latest batches, the latest upload blocks, the counts since the
//! page connected) and one sentence per step. Pure, so it is tested natively; the
//! browser edge (the EventSource) is `parts::remote::live`.

use std::collections::VecDeque;

use walab_core::sim::remote::{BatchOutcome, BatchRow, RecordRow, RemoteBackend, RemoteRun};
use walab_core::time::Nanos;
use walab_core::trace::{Event, Trace, TraceEvent, OBJECT_SYNC_BASE};

use crate::format::count;

/// The latest batches drawn as lanes.
pub const LIVE_BATCHES: usize = 10;
/// The latest upload blocks drawn.
pub const LIVE_BLOCKS: usize = 3;
/// The latest step sentences shown.
pub const LIVE_STEPS: usize = 8;
/// The file index of the WAL in the feed's header (then `objects`, `meta`).
const WAL_FILE: u32 = 0;

/// One batch of the WAL: a batch persisted by one fdatasync, PUT or INSERT.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveBatch {
    pub batch: u64,
    pub first_write: u64,
    pub writes: u64,
    pub bytes: u64,
    pub formed: Nanos,
    /// When its persist returned, and whether it succeeded.
    pub synced: Option<(Nanos, bool)>,
    pub acked: Option<Nanos>,
}

/// One sealed block of the log cache and the objects it becomes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveBlock {
    pub block: u64,
    pub records: u64,
    pub objects_planned: u64,
    /// Object id and when its PUT returned (`None` while uploading).
    pub objects: Vec<(u64, Option<Nanos>)>,
    pub committed: Option<Nanos>,
}

impl LiveBlock {
    /// "block 3: 120 records, 2 objects, committed".
    pub fn text(&self) -> String {
        let committed = if self.committed.is_some() { ", committed" } else { "" };
        format!("block {}: {}, {}{committed} ", self.block, count(self.records, "record"), count(self.objects_planned, "object"))
    }
}

/// The feed so far.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LiveState {
    /// The WAL's URL-like name, from the header (`file://...`, `s3://...`).
    pub wal: String,
    pub policy: String,
    /// The latest event's instant, on the server's clock.
    pub now: Nanos,
    /// The first event's instant this page saw: the steps' times count from it.
    pub start: Option<Nanos>,
    pub events: u64,
    pub arrived: u64,
    pub acked: u64,
    pub failed: u64,
    pub batches: u64,
    pub batches_durable: u64,
    pub blocks: u64,
    pub uploads: u64,
    pub commits: u64,
    pub records_committed: u64,
    /// The WAL is confirmed (may trim) through this seq.
    pub confirmed: Option<u64>,
    pub segments_removed: u64,
    /// Events the server dropped because this page fell behind.
    pub dropped: u64,
    pub recent_batches: VecDeque<LiveBatch>,
    pub recent_blocks: VecDeque<LiveBlock>,
    /// The latest steps, newest last: (instant, sentence).
    pub steps: VecDeque<(Nanos, String)>,
}

/// What a persist is called on the WAL's storage.
pub fn persist_name(wal: &str) -> &'static str {
    if wal.starts_with("s3://") {
        "PUT"
    } else if wal.starts_with("postgres") {
        "INSERT"
    } else {
        "fdatasync"
    }
}

fn writes_text(first: u64, count: u64) -> String {
    match count {
        1 => format!("record {first}"),
        _ => format!("records {first}-{}", first + count - 1),
    }
}

impl LiveState {
    /// The state after the feed's header: its WAL, nothing seen yet.
    pub fn from_header(header: &Trace) -> LiveState {
        LiveState {
            wal: header.files.first().map(|file| file.name.clone()).unwrap_or_default(),
            policy: header.policy.clone(),
            ..LiveState::default()
        }
    }

    fn step(&mut self, at: Nanos, text: String) {
        self.steps.push_back((at, text));
        while self.steps.len() > LIVE_STEPS {
            self.steps.pop_front();
        }
    }

    fn batch_mut(&mut self, batch: u64) -> Option<&mut LiveBatch> {
        self.recent_batches.iter_mut().find(|row| row.batch == batch)
    }

    /// Folds one event in.
    pub fn apply(&mut self, event: &TraceEvent) {
        let at = event.at;
        self.now = self.now.max(at);
        self.start.get_or_insert(at);
        self.events += 1;
        let persist = persist_name(&self.wal);
        match &event.event {
            Event::Arrive { .. } => self.arrived += 1,
            Event::BatchFormed { batch, first_write, writes, bytes, .. } => {
                self.batches += 1;
                self.recent_batches.push_back(LiveBatch { batch: *batch, first_write: *first_write, writes: *writes, bytes: *bytes, formed: at, synced: None, acked: None });
                while self.recent_batches.len() > LIVE_BATCHES {
                    self.recent_batches.pop_front();
                }
                self.step(at, format!("batch {batch} forms from {} ({bytes} bytes) and its {persist} starts", writes_text(*first_write, *writes)));
            }
            Event::SyncStart { sync, .. } if *sync >= OBJECT_SYNC_BASE => {
                let id = sync - OBJECT_SYNC_BASE;
                let block = self.recent_blocks.back_mut().map(|block| {
                    block.objects.push((id, None));
                    block.block
                });
                let of = block.map_or(String::new(), |block| format!(" of block {block}"));
                self.step(at, format!("object {id}{of} has its id reserved in the metadata log; its PUT starts"));
            }
            Event::SyncEnd { sync, ok, error, .. } if *sync >= OBJECT_SYNC_BASE => {
                let id = sync - OBJECT_SYNC_BASE;
                if let Some(object) = self.recent_blocks.iter_mut().flat_map(|block| block.objects.iter_mut()).find(|(object, _)| *object == id) {
                    object.1 = Some(at);
                }
                if *ok {
                    self.uploads += 1;
                    self.step(at, format!("object {id} is stored; no reader can find it until the commit names it"));
                } else {
                    let why = error.map_or("it failed".to_string(), |error| error.to_string());
                    self.step(at, format!("the PUT of object {id} failed ({why})"));
                }
            }
            Event::SyncEnd { sync, file: WAL_FILE, ok, error } => {
                if *ok {
                    self.batches_durable += 1;
                }
                if let Some(batch) = self.batch_mut(*sync) {
                    batch.synced = Some((at, *ok));
                }
                self.step(at, match ok {
                    true => format!("batch {sync}'s {persist} returns: its records are durable"),
                    false => format!("batch {sync}'s {persist} fails ({}): its writers will be told the outcome is unknown", error.map_or("an error".to_string(), |error| error.to_string())),
                });
            }
            Event::Ack { first_write, writes } => {
                self.acked += writes;
                let end = first_write + writes;
                for batch in self.recent_batches.iter_mut().filter(|batch| batch.first_write >= *first_write && batch.first_write < end) {
                    batch.acked = Some(at);
                }
                self.step(at, format!("{} told OK: every batch up to theirs is durable", writes_text(*first_write, *writes)));
            }
            Event::Fail { first_write, writes, error } => {
                self.failed += writes;
                self.step(at, format!("{} told the outcome is unknown ({error})", writes_text(*first_write, *writes)));
            }
            Event::BlockSealed { block, records, objects, .. } => {
                self.blocks += 1;
                self.recent_blocks.push_back(LiveBlock { block: *block, records: *records, objects_planned: *objects, objects: Vec::new(), committed: None });
                while self.recent_blocks.len() > LIVE_BLOCKS {
                    self.recent_blocks.pop_front();
                }
                let plural = if *objects == 1 { "" } else { "s" };
                self.step(at, format!("the upload seals log-cache block {block}: {records} durable records, to become {objects} object{plural}"));
            }
            Event::Committed { block, records } => {
                self.commits += 1;
                self.records_committed += records;
                if let Some(entry) = self.recent_blocks.iter_mut().find(|entry| entry.block == *block) {
                    entry.committed = Some(at);
                }
                self.step(at, format!("one commit in the metadata log registers block {block}'s objects: its {} {} committed, readers find them there", count(*records, "record"), crate::format::are(*records)));
            }
            Event::ReaderConfirmed { seq, .. } => {
                self.confirmed = Some(*seq);
                self.step(at, format!("the WAL is told every record through {seq} is committed: it may trim them"));
            }
            Event::Note { text } => {
                if let Some(lost) = text.split_once(" events dropped").and_then(|(count, _)| count.parse::<u64>().ok()) {
                    self.dropped += lost;
                }
                if text.starts_with("WAL segment") {
                    self.segments_removed += 1;
                }
                self.step(at, text.clone());
            }
            _ => {}
        }
    }

    /// The latest batches as a remote run, times from the first drawn batch's forming, for
    /// the batch lanes; and the lanes' playhead (the latest event).
    pub fn lanes(&self) -> (RemoteRun, Nanos) {
        let base = self.recent_batches.front().map_or(Nanos::ZERO, |batch| batch.formed);
        let since = |t: Nanos| Nanos(t.0.saturating_sub(base.0));
        let mut records = Vec::new();
        let batches: Vec<BatchRow> = self
            .recent_batches
            .iter()
            .enumerate()
            .map(|(index, batch)| {
                let stored = batch.synced.filter(|(_, ok)| *ok).map(|(at, _)| since(at));
                let acked = batch.acked.map(since);
                records.extend((batch.first_write..batch.first_write + batch.writes).map(|record| RecordRow {
                    record,
                    arrived: Some(since(batch.formed)),
                    acked,
                    batch: Some(batch.batch),
                }));
                BatchRow {
                    records: batch.writes,
                    first_record: batch.first_write,
                    sent: Some(since(batch.formed)),
                    stored,
                    answered: batch.synced.map(|(at, _)| since(at)),
                    acked,
                    request: Some(index as u64 + 1),
                    outcome: match (acked, batch.synced) {
                        (Some(_), _) => Some(BatchOutcome::Acked),
                        (None, Some((_, false))) => Some(BatchOutcome::Failed),
                        _ => None,
                    },
                    ..BatchRow::formed(batch.batch, since(batch.formed))
                }
            })
            .collect();
        let backend = if self.wal.starts_with("s3://") { RemoteBackend::S3 } else { RemoteBackend::Postgres };
        let records_acked = records.iter().filter(|record| record.acked.is_some()).count() as u64;
        let now = since(self.now);
        let run = RemoteRun {
            backend,
            puts: batches.len() as u64,
            batches,
            records,
            fence_checks: 0,
            records_acked,
            takeover: None,
            trims: Vec::new(),
            ring: Default::default(),
            end: now,
        };
        (run, now)
    }

    /// The counts, in words.
    pub fn counts_text(&self) -> String {
        let trimmed = match self.confirmed {
            Some(seq) => format!("through record {seq} ({})", count(self.segments_removed, "segment removal")),
            None => "not yet".to_string(),
        };
        let dropped = match self.dropped {
            0 => String::new(),
            lost => format!(" This page fell behind and missed {}; the counts miss them too.", count(lost, "event")),
        };
        format!(
            "Since this page connected: {} acknowledged, {} ({} returned), {} sealed, {} uploaded, {} ({} committed), WAL trimmed {trimmed}.{dropped}",
            count(self.acked, "append"), count(self.batches, "batch"), count(self.batches_durable, persist_name(&self.wal)),
            count(self.blocks, "block"), count(self.uploads, "object"), count(self.commits, "commit"), count(self.records_committed, "record")
        )
    }

    /// The counts (with their numbers as `data-*`), the latest steps and the latest
    /// blocks with their objects, as markup.
    pub fn markup(&self) -> String {
        let mut html = format!(
            r#"<p class="live-counts" data-acked="{}" data-batches="{}" data-blocks="{}" data-uploads="{}" data-commits="{}" data-confirmed="{}" data-dropped="{}">"#,
            self.acked, self.batches, self.blocks, self.uploads, self.commits, self.confirmed.unwrap_or(0), self.dropped
        );
        escape_into(&mut html, &self.counts_text());
        html.push_str(r#"</p><ol class="live-steps" aria-label="the latest steps, newest first, in ms from this page's first event">"#);
        for line in self.step_lines() {
            html.push_str("<li>");
            escape_into(&mut html, &line);
            html.push_str("</li>");
        }
        html.push_str(r#"</ol><ul class="live-blocks" data-figure="live-upload" aria-label="the latest sealed blocks and their objects">"#);
        for block in self.recent_blocks.iter().rev() {
            html.push_str(&format!(r#"<li class="upload-block" data-block="{}" data-committed="{}">{}"#, block.block, block.committed.is_some(), block.text()));
            for (id, stored) in &block.objects {
                let state = match (stored, block.committed) {
                    (_, Some(_)) => "committed",
                    (Some(_), None) => "unreferenced",
                    (None, None) => "uploading",
                };
                html.push_str(&format!(r#"<span class="upload-object {state}" data-id="{id}" data-state="{state}">id {id}: {state}</span>"#));
            }
            html.push_str("</li>");
        }
        html.push_str("</ul>");
        html
    }

    /// The latest steps, newest first, each "at 1,234.5 ms: ...", counted from the first
    /// event this page saw (the server's clock starts long before).
    pub fn step_lines(&self) -> Vec<String> {
        let start = self.start.unwrap_or(Nanos::ZERO).0;
        self.steps.iter().rev().map(|(at, text)| {
            let tenths = at.0.saturating_sub(start) / 100_000;
            format!("at {}.{} ms: {text}.", crate::format::group_thousands(tenths / 10), tenths % 10)
        }).collect()
    }
}

/// Appends `text` with `<`, `>`, `&` and `"` escaped.
fn escape_into(html: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '<' => html.push_str("&lt;"),
            '>' => html.push_str("&gt;"),
            '&' => html.push_str("&amp;"),
            '"' => html.push_str("&quot;"),
            c => html.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use walab_core::trace::FileKind;

    fn header(wal: &str) -> Trace {
        let mut trace = Trace::new("walab-serve", "group", 0);
        trace.add_file(wal, FileKind::Log, 0);
        trace.add_file("objects", FileKind::Table, 0);
        trace.add_file("meta", FileKind::Manifest, 0);
        trace
    }

    fn at(ms: u64, event: Event) -> TraceEvent {
        TraceEvent { at: Nanos::from_millis(ms), event }
    }

    #[test]
    fn a_batch_and_an_upload_fold_into_counts_lanes_and_sentences() {
        let mut live = LiveState::from_header(&header("file:///tmp/x/default/0"));
        let events = [
            at(1, Event::Arrive { write: 1 }),
            at(1, Event::Arrive { write: 2 }),
            at(2, Event::BatchFormed { batch: 1, segment: 1, first_write: 1, writes: 2, offset: 0, bytes: 90 }),
            at(2, Event::SyncStart { sync: 1, file: 0, batch: Some(1), units: vec![] }),
            at(4, Event::SyncEnd { sync: 1, file: 0, ok: true, error: None }),
            at(4, Event::Ack { first_write: 1, writes: 2 }),
            at(20, Event::BlockSealed { block: 1, records: 2, bytes: 10, objects: 1 }),
            at(21, Event::SyncStart { sync: OBJECT_SYNC_BASE + 7, file: 1, batch: None, units: vec![] }),
            at(23, Event::SyncEnd { sync: OBJECT_SYNC_BASE + 7, file: 1, ok: true, error: None }),
            at(24, Event::Committed { block: 1, records: 2 }),
            at(24, Event::ReaderConfirmed { reader: "consumer".into(), seq: 2 }),
            at(25, Event::Note { text: "12 events dropped here: this connection fell behind".into() }),
        ];
        for event in &events {
            live.apply(event);
        }
        assert_eq!((live.arrived, live.acked, live.batches, live.batches_durable), (2, 2, 1, 1));
        assert_eq!((live.blocks, live.uploads, live.commits, live.records_committed, live.confirmed, live.dropped), (1, 1, 1, 2, Some(2), 12));
        assert_eq!(live.recent_blocks[0].objects, vec![(7, Some(Nanos::from_millis(23)))]);
        assert_eq!(live.recent_blocks[0].committed, Some(Nanos::from_millis(24)));
        let lines = live.step_lines();
        assert_eq!(lines.len(), LIVE_STEPS);
        // Times count from the first event this page saw (at 1 ms on the server's clock).
        assert_eq!(lines[0], "at 24.0 ms: 12 events dropped here: this connection fell behind.");
        assert!(lines.iter().any(|line| line == "at 3.0 ms: batch 1's fdatasync returns: its records are durable."), "{lines:?}");
        let mut late = LiveState::from_header(&header("file:///tmp/x/default/0"));
        late.apply(&at(3_600_000, Event::Arrive { write: 1 }));
        late.apply(&at(3_601_234, Event::Note { text: "later".into() }));
        assert_eq!(late.step_lines()[0], "at 1,234.0 ms: later.");
        let (run, now) = live.lanes();
        assert_eq!(now, Nanos::from_millis(23), "times from the first drawn batch's forming");
        assert_eq!(run.batches[0].stored, Some(Nanos::from_millis(2)));
        assert_eq!(run.records_acked, 2);
        assert_eq!(live.recent_blocks[0].text(), "block 1: 2 records, 1 object, committed ");
        let markup = live.markup();
        assert!(markup.contains(r#"data-acked="2" data-batches="1" data-blocks="1" data-uploads="1" data-commits="1" data-confirmed="2""#), "{markup}");
        assert!(markup.contains(r#"<span class="upload-object committed" data-id="7" data-state="committed">id 7: committed</span>"#), "{markup}");
        assert!(live.counts_text().starts_with("Since this page connected: 2 appends acknowledged, 1 batch (1 fdatasync returned), 1 block sealed, 1 object uploaded, 1 commit (2 records committed), WAL trimmed through record 2 (0 segment removals). This page fell behind and missed 12 events"), "{}", live.counts_text());
    }

    #[test]
    fn only_the_latest_batches_are_kept_and_a_failed_persist_says_so() {
        let mut live = LiveState::from_header(&header("s3://bucket/wal"));
        for batch in 1..=LIVE_BATCHES as u64 + 5 {
            live.apply(&at(batch, Event::BatchFormed { batch, segment: 1, first_write: batch, writes: 1, offset: 0, bytes: 1 }));
        }
        assert_eq!(live.recent_batches.len(), LIVE_BATCHES);
        assert_eq!(live.recent_batches[0].batch, 6);
        live.apply(&at(30, Event::SyncEnd { sync: 15, file: 0, ok: false, error: Some(walab_core::group_commit::SyncError::Unavailable) }));
        assert_eq!(live.batches_durable, 0);
        assert!(live.step_lines()[0].contains("batch 15's PUT fails (storage unavailable)"), "{:?}", live.step_lines());
        live.apply(&at(31, Event::Note { text: "a <b> & \"c\"".into() }));
        assert!(live.markup().contains("a &lt;b&gt; &amp; &quot;c&quot;"), "{}", live.markup());
        assert_eq!(live.lanes().0.backend, RemoteBackend::S3);
    }
}
