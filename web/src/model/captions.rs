//! Captions: what each step of a run did, in walab's own words, from the trace's events.
//!
//! A player step stops at a mark; its caption tells the events since the previous mark
//! ("3.00 ms: B3 takes writes 4-5 ..."). Pure functions over a [`Trace`], so every
//! caption is checked natively.

use crate::sorted_map::SortedMap;

use walab_core::time::Nanos;
use walab_core::trace::{Event, FileKind, Trace};

use crate::player::format_fixed_millis;

/// "5", "5-7": a run of write ids.
pub fn id_span(first: u64, count: u64) -> String {
    match count {
        0 => String::new(),
        1 => format!("write {first}"),
        _ => format!("writes {first}-{}", first + count - 1),
    }
}

/// "0", "0-2", "1, 3": unit numbers, runs joined.
pub fn unit_list(units: &[u32]) -> String {
    let ids: Vec<u64> = units.iter().map(|unit| u64::from(*unit)).collect();
    id_runs(&ids)
}

/// Ids joined by runs: "1-4, 9".
pub fn id_runs(ids: &[u64]) -> String {
    let mut sorted = ids.to_vec();
    walab_core::sort::sort(&mut sorted);
    sorted.dedup();
    let mut parts: Vec<String> = Vec::new();
    let mut index = 0;
    while index < sorted.len() {
        let start = sorted[index];
        let mut end = start;
        while index + 1 < sorted.len() && sorted[index + 1] == end + 1 {
            index += 1;
            end = sorted[index];
        }
        parts.push(if start == end { start.to_string() } else { format!("{start}-{end}") });
        index += 1;
    }
    parts.join(", ")
}

/// The sentences for the events `events[from..to]` of a trace.
fn describe_events(trace: &Trace, from: usize, to: usize, sync_batch: &mut SortedMap<u64, Option<u64>>) -> Vec<String> {
    let name = |file: u32| trace.files.get(file as usize).map(|file| file.name.clone()).unwrap_or_else(|| format!("file {file}"));
    let kind = |file: u32| trace.files.get(file as usize).map(|file| file.kind);
    let mut sentences: Vec<String> = Vec::new();
    let mut arrivals: Vec<u64> = Vec::new();
    let mut applied: Vec<u64> = Vec::new();
    let mut persisted: SortedMap<u32, Vec<u32>> = SortedMap::default();
    let mut deleted: Vec<String> = Vec::new();
    let flush_arrivals = |arrivals: &mut Vec<u64>, sentences: &mut Vec<String>| {
        if !arrivals.is_empty() {
            let label = if arrivals.len() == 1 { format!("write {} arrives", arrivals[0]) } else { format!("writes {} arrive", id_runs(arrivals)) };
            sentences.push(label);
            arrivals.clear();
        }
    };
    for event in &trace.events[from..to] {
        if !matches!(event.event, Event::Arrive { .. }) {
            flush_arrivals(&mut arrivals, &mut sentences);
        }
        match &event.event {
            Event::Arrive { write } => arrivals.push(*write),
            // In words for a student, not the log's error text: a log that failed a sync.
            Event::Refuse { write, reason } if reason.starts_with("log failed earlier") =>
                sentences.push(format!("write {write} is refused: the log stopped at its failed sync and takes no write until it is recovered")),
            Event::Refuse { write, reason } => sentences.push(format!("write {write} is refused ({reason})")),
            Event::BatchFormed { batch, segment, first_write, writes, offset, bytes } => sentences.push(format!(
                "B{batch} takes {} and write() copies its {bytes} bytes into wal-{segment}'s page cache at byte {offset}, where they are dirty",
                id_span(*first_write, *writes)
            )),
            Event::SyncStart { sync, file, batch, units } => {
                sync_batch.put(*sync, *batch);
                let what = match batch {
                    Some(batch) => format!("B{batch}'s fdatasync of {} starts", name(*file)),
                    None => match kind(*file) {
                        Some(FileKind::Table) => format!("{}'s fsync starts", name(*file)),
                        Some(FileKind::Manifest) => "the manifest's fsync starts".to_string(),
                        _ => format!("a background sync of {} starts", name(*file)),
                    },
                };
                if units.is_empty() {
                    sentences.push(what);
                } else {
                    sentences.push(format!("{what}: unit{} {} must reach the media", if units.len() == 1 { "" } else { "s" }, unit_list(units)));
                }
            }
            Event::UnitPersisted { file, unit } => persisted.entry_or_default(*file).push(*unit),
            Event::UnitsDropped { file, units } => sentences.push(format!(
                "the write-back of {} fails; the kernel marks unit{} {} clean although {} never reached the media",
                name(*file),
                if units.len() == 1 { "" } else { "s" },
                unit_list(units),
                if units.len() == 1 { "it" } else { "they" }
            )),
            Event::SyncEnd { sync, file, ok, .. } => {
                if let Some(units) = persisted.remove(*file) {
                    sentences.push(format!("{}'s unit{} {} reach{} the media", name(*file), if units.len() == 1 { "" } else { "s" }, unit_list(&units), if units.len() == 1 { "es" } else { "" }));
                }
                let who = match sync_batch.get(*sync).copied().flatten() {
                    Some(batch) => format!("B{batch}'s sync"),
                    None => format!("the sync of {}", name(*file)),
                };
                sentences.push(if *ok { format!("{who} returns") } else { format!("{who} returns EIO: the write failed") });
            }
            Event::Ack { first_write, writes } => sentences.push(format!("{} told OK", match writes {
                1 => format!("write {first_write} is"),
                _ => format!("{} are", id_span(*first_write, *writes)),
            })),
            Event::Fail { first_write, writes, .. } => sentences.push(format!(
                "{} told the outcome is unknown (not OK)",
                match writes {
                    1 => format!("write {first_write} is"),
                    _ => format!("{} are", id_span(*first_write, *writes)),
                }
            )),
            Event::Apply { write } => applied.push(*write),
            Event::FlushStart { file, first_write, last_write } => sentences.push(format!(
                "the MemTable (writes {first_write}-{last_write}) is full and is written out as {}",
                name(*file)
            )),
            Event::ManifestEdit { edit, table, flushed_through } => sentences.push(format!(
                "manifest edit {edit} names {} (everything through seq {flushed_through})",
                name(*table)
            )),
            Event::ManifestDurable { edit } => sentences.push(format!("manifest edit {edit} is durable")),
            Event::Delete { file } => deleted.push(name(*file)),
            Event::PowerCut => sentences.push("the power fails: the page cache and the drive's cache are gone".to_string()),
            Event::Note { text } => sentences.push(text.clone()),
            Event::BlockSealed { block, records, objects, .. } => sentences.push(format!(
                "the upload seals log-cache block {block}: {}, to become {}",
                crate::format::count(*records, "record"), crate::format::count(*objects, "object")
            )),
            Event::Committed { block, records } => {
                sentences.push(format!("one commit in the metadata log makes block {block}'s {} committed", crate::format::count(*records, "record")))
            }
            Event::Create { .. } | Event::Write { .. } | Event::Gates { .. } | Event::ReaderConfirmed { .. } | Event::Recovery { .. } => {}
        }
    }
    flush_arrivals(&mut arrivals, &mut sentences);
    for (file, units) in persisted.into_pairs() {
        sentences.push(format!("{}'s unit{} {} reach the media", name(file), if units.len() == 1 { "" } else { "s" }, unit_list(&units)));
    }
    if !applied.is_empty() {
        sentences.push(format!("{} into the MemTable", if applied.len() == 1 { format!("write {} goes", applied[0]) } else { format!("writes {} go", id_runs(&applied)) }));
    }
    if !deleted.is_empty() {
        sentences.push(format!("{} passed both gates and {} deleted", deleted.join(", "), if deleted.len() == 1 { "is" } else { "are" }));
    }
    sentences
}

/// The one idea of the events `events[from..to]`, in plain words a newcomer follows,
/// told before the step's details: the event that changes the story most (the power
/// failing, a sync failing, a batch's sync starting, writes told OK, ...). `None` when
/// the step holds nothing worth a headline.
pub fn step_idea(trace: &Trace, from: usize, to: usize) -> Option<String> {
    let name = |file: u32| trace.files.get(file as usize).map(|file| file.name.clone()).unwrap_or_else(|| format!("file {file}"));
    let events = &trace.events[from..to.min(trace.events.len())];
    // A batch's writes, from the event that formed it (in this step or before).
    let batch_writes = |batch: u64| {
        trace.events[..to.min(trace.events.len())].iter().find_map(|event| match event.event {
            Event::BatchFormed { batch: formed, first_write, writes, .. } if formed == batch => Some(id_span(first_write, writes)),
            _ => None,
        })
    };
    let sync_of = |sync: u64| {
        trace.events[..to.min(trace.events.len())].iter().find_map(|event| match &event.event {
            Event::SyncStart { sync: started, batch, file, .. } if *started == sync => Some((*batch, *file)),
            _ => None,
        })
    };
    let find = |wanted: fn(&Event) -> bool| events.iter().map(|event| &event.event).find(|event| wanted(event));
    if find(|event| matches!(event, Event::PowerCut)).is_some() {
        return Some("The power fails: whatever was only in memory is gone, and only what reached the disk survives.".into());
    }
    if let Some(Event::SyncEnd { sync, file, .. }) = find(|event| matches!(event, Event::SyncEnd { ok: false, .. })) {
        return Some(match sync_of(*sync) {
            Some((Some(batch), _)) => format!(
                "The disk reports an error (EIO): B{batch}'s {} may never have been stored.",
                batch_writes(batch).unwrap_or_else(|| "writes".into())
            ),
            _ => format!("The disk reports an error (EIO): {} may not be stored.", name(*file)),
        });
    }
    if let Some(Event::Fail { first_write, writes, .. }) = find(|event| matches!(event, Event::Fail { .. })) {
        return Some(format!("{} told the outcome is unknown: not OK, and maybe not stored.", capitalized(&id_span(*first_write, *writes), *writes)));
    }
    if let Some(Event::SyncStart { batch: Some(batch), .. }) = find(|event| matches!(event, Event::SyncStart { batch: Some(_), .. })) {
        return Some(format!(
            "B{batch} asks the disk to store {} (a sync): until the disk answers, {} not safe.",
            batch_writes(*batch).unwrap_or_else(|| "its writes".into()),
            if batch_writes(*batch).is_some_and(|span| span.starts_with("write ")) { "it is" } else { "they are" }
        ));
    }
    let deleted: Vec<String> = events.iter().filter_map(|event| match event.event { Event::Delete { file } => Some(name(file)), _ => None }).collect();
    if !deleted.is_empty() {
        return Some(format!(
            "{} deleted: every record in {} is stored elsewhere, and no reader still needs {}.",
            if deleted.len() == 1 { format!("The log file {} is", deleted[0]) } else { format!("The log files {} are", deleted.join(", ")) },
            if deleted.len() == 1 { "it" } else { "them" },
            if deleted.len() == 1 { "it" } else { "them" }
        ));
    }
    if let Some(Event::Ack { first_write, writes }) = find(|event| matches!(event, Event::Ack { .. })) {
        let synced = events.iter().any(|event| matches!(event.event, Event::SyncEnd { ok: true, .. }));
        let who = capitalized(&id_span(*first_write, *writes), *writes);
        return Some(if synced {
            format!("{who} told OK: the disk has confirmed {} stored.", if *writes == 1 { "it is" } else { "they are" })
        } else {
            format!("{who} told OK although {} only in memory: nothing has asked the disk to store {} yet.",
                if *writes == 1 { "it is" } else { "they are" }, if *writes == 1 { "it" } else { "them" })
        });
    }
    if let Some(Event::ManifestDurable { edit }) = find(|event| matches!(event, Event::ManifestDurable { .. })) {
        return Some(format!("Manifest edit {edit} is on the disk: the flushed file now counts, so the log before it may go."));
    }
    if let Some(Event::FlushStart { file, first_write, last_write }) = find(|event| matches!(event, Event::FlushStart { .. })) {
        return Some(format!("The MemTable is full: writes {first_write}-{last_write} are written out to a new file, {}.", name(*file)));
    }
    if let Some(Event::BatchFormed { first_write, writes, .. }) = find(|event| matches!(event, Event::BatchFormed { .. })) {
        return Some(format!("{} copied into memory (the page cache): not on the disk yet.", capitalized(&id_span(*first_write, *writes), *writes)));
    }
    let arrived: Vec<u64> = events.iter().filter_map(|event| match event.event { Event::Arrive { write } => Some(write), _ => None }).collect();
    match arrived.as_slice() {
        [] => None,
        [write] => Some(format!("Write {write} arrives and waits its turn.")),
        _ => Some(format!("Writes {} arrive and wait their turn.", id_runs(&arrived))),
    }
}

/// "Writes 18-20 are", "Write 5 is": a span of writes as a sentence's subject.
fn capitalized(span: &str, writes: u64) -> String {
    // ASCII only: `char::to_uppercase` would bring Unicode's case tables into the page.
    let mut subject = span.to_string();
    if let Some(first) = subject.get_mut(..1) {
        first.make_ascii_uppercase();
    }
    format!("{subject} {}", if writes == 1 { "is" } else { "are" })
}

/// One idea per mark (as [`trace_captions`] tells the details): the headline of the
/// events after the previous mark up to and including this one.
pub fn trace_ideas(trace: &Trace, marks: &[Nanos]) -> Vec<Option<String>> {
    let mut from = 0;
    marks
        .iter()
        .map(|mark| {
            let to = trace.events_through(*mark).max(from);
            let idea = step_idea(trace, from, to);
            from = to;
            idea
        })
        .collect()
}

/// Joins sentences into one caption: "A; b; c."
fn sentence(at: Nanos, parts: &[String]) -> String {
    let body = if parts.is_empty() { "nothing new happens".to_string() } else { parts.join("; ") };
    let mut text = format!("{} ms: {body}", format_fixed_millis(at));
    text.push('.');
    text
}

/// One caption per mark (sorted, deduplicated), each telling the events after the
/// previous mark up to and including this one. Marks past the trace's end get none.
pub fn trace_captions(trace: &Trace, marks: &[Nanos]) -> Vec<String> {
    let mut captions = Vec::with_capacity(marks.len());
    let mut sync_batch = SortedMap::default();
    let mut from = 0;
    for mark in marks {
        let to = trace.events_through(*mark);
        let parts = describe_events(trace, from, to.max(from), &mut sync_batch);
        captions.push(sentence(*mark, &parts));
        from = to.max(from);
    }
    captions
}

/// The caption of one step, the events after `previous` up to and including `mark`,
/// found by binary search: a recorded run's captions are told one at a time, never all.
pub fn step_caption(trace: &Trace, previous: Option<Nanos>, mark: Nanos) -> String {
    let from = previous.map_or(0, |previous| trace.events_through(previous));
    let to = trace.events_through(mark).max(from);
    sentence(mark, &describe_events(trace, from, to, &mut SortedMap::default()))
}

/// The caption for the playhead: before the first mark, `before`; else the caption of
/// the last mark passed.
pub fn caption_at(captions: &[String], marks: &[Nanos], now: Nanos, before: &str) -> String {
    match marks.partition_point(|mark| *mark <= now).checked_sub(1) {
        Some(index) => captions.get(index).cloned().unwrap_or_default(),
        None => before.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use walab_core::group_commit::Policy;
    use walab_core::sim::tiny::{self, TinySetup};

    fn marks_of(trace: &Trace) -> Vec<Nanos> {
        let mut marks = trace.instants();
        marks.dedup();
        marks
    }

    #[test]
    fn every_step_of_the_tiny_run_is_told_and_no_two_in_a_row_match() {
        let run = tiny::run(&TinySetup::new(Policy::Group)).unwrap();
        let marks = marks_of(&run.trace);
        let captions = trace_captions(&run.trace, &marks);
        assert_eq!(captions.len(), marks.len());
        for pair in captions.windows(2) {
            assert_ne!(pair[0], pair[1]);
        }
        assert!(captions.iter().all(|caption| !caption.contains("nothing new")), "{captions:#?}");
        assert!(captions.iter().all(|caption| !caption.contains("{") && !caption.contains("Some(")));
        let first = &captions[0];
        assert!(first.starts_with("0.00 ms: "), "{first}");
        assert!(captions.iter().any(|caption| caption.contains("B1 takes write 1 and write() copies")), "{captions:#?}");
        assert!(captions.iter().any(|caption| caption.contains("writes 2-3 are told OK") || caption.contains("are told OK")));
    }

    #[test]
    fn every_step_of_the_tiny_run_has_one_plain_idea() {
        let run = tiny::run(&TinySetup::new(Policy::Group)).unwrap();
        let marks = marks_of(&run.trace);
        let ideas = trace_ideas(&run.trace, &marks);
        assert_eq!(ideas.len(), marks.len());
        for idea in ideas.iter().flatten() {
            assert!(idea.ends_with('.') && idea.chars().next().is_some_and(char::is_uppercase), "{idea}");
            assert!(!idea.contains("fdatasync") && !idea.contains("  "), "{idea}");
        }
        assert!(ideas.iter().flatten().any(|idea| idea.starts_with("B14 asks the disk to store writes 23-24")), "{ideas:#?}");
        assert!(ideas.iter().flatten().any(|idea| idea.contains("told OK: the disk has confirmed")), "{ideas:#?}");
    }

    #[test]
    fn runs_of_units_and_ids_read_as_ranges() {
        assert_eq!(unit_list(&[3, 1, 2, 7]), "1-3, 7");
        assert_eq!(id_runs(&[21, 22, 23, 24, 9]), "9, 21-24");
        assert_eq!(id_span(5, 3), "writes 5-7");
        assert_eq!(id_span(5, 1), "write 5");
    }

    #[test]
    fn the_caption_at_the_playhead_is_the_last_mark_passed() {
        let captions = vec!["one".to_string(), "two".to_string()];
        let marks = [Nanos(10), Nanos(20)];
        assert_eq!(caption_at(&captions, &marks, Nanos(5), "start"), "start");
        assert_eq!(caption_at(&captions, &marks, Nanos(10), "start"), "one");
        assert_eq!(caption_at(&captions, &marks, Nanos(25), "start"), "two");
    }
}
