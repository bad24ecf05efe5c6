//! A dropped trace read a piece at a time, so a 26 MB recording does not freeze the tab.
//!
//! `serde_json` reads a whole document in one call: for a recorded run of a hundred
//! thousand writes that is seconds in which the browser can neither paint nor answer.
//! The reader therefore first cuts the text into its parts without parsing them (one
//! linear pass that only tracks strings and brackets): the header (every field but the
//! writes and the events) and the byte range of each write and each event. Then
//! [`TraceReader::step`] parses the next few thousand of them, and the drop zone gives the
//! browser a turn between steps and shows how far it got.
//!
//! Anything unexpected in the text (a bracket that does not close, an element that does
//! not parse) is not judged here: the reader gives up and the whole text goes through
//! [`super::dropped::parse_dropped`], whose one sentence names what is wrong, exactly as
//! for a small file.

use std::ops::Range;

use walab_core::trace::Trace;

use super::dropped::{checked_trace, trace_json, DropError, DroppedFile, TRACE_FILE_BYTES_MAX};

/// How far a read has come: items (writes and events) parsed, of how many.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadProgress {
    pub done: usize,
    pub total: usize,
}

/// A trace text being parsed in steps.
pub struct TraceReader<'a> {
    text: &'a str,
    cut: Cut,
    trace: Trace,
    done: usize,
}

impl<'a> TraceReader<'a> {
    /// Cuts `text` into its header and elements; `None` when it is not a trace this reader
    /// can cut (the caller then parses the whole text, which names the problem).
    pub fn new(text: &'a str) -> Option<TraceReader<'a>> {
        if text.len() > TRACE_FILE_BYTES_MAX {
            return None;
        }
        let cut = cut_trace(text.as_bytes())?;
        let trace = piece(text, &cut, None, None)?;
        Some(TraceReader { text, cut, trace, done: 0 })
    }

    fn total(&self) -> usize {
        self.cut.writes.elements.len() + self.cut.events.elements.len()
    }

    pub fn progress(&self) -> ReadProgress {
        ReadProgress { done: self.done, total: self.total() }
    }

    /// Parses up to `count` more items; `Some(true)` once every one is read, `None` when
    /// they do not parse.
    pub fn step(&mut self, count: usize) -> Option<bool> {
        let writes = self.cut.writes.elements.len();
        if self.done < writes {
            let until = (self.done + count).min(writes);
            let read = piece(self.text, &self.cut, Some(self.done..until), None)?;
            self.trace.writes.extend(read.writes);
            self.done = until;
        } else if self.done < self.total() {
            let until = (self.done + count).min(self.total());
            let read = piece(self.text, &self.cut, None, Some(self.done - writes..until - writes))?;
            self.trace.events.extend(read.events);
            self.done = until;
        }
        Some(self.done == self.total())
    }

    /// The trace read, through the same checks and dispatch as a file read whole.
    pub fn finish(self, file_name: &str) -> Result<DroppedFile, DropError> {
        let trace = checked_trace(file_name, self.trace).map_err(|message| DropError { message, kind: None })?;
        super::dropped::dropped_of_trace(file_name, trace)
    }
}

/// The text's header with `writes` and `events` (ranges of elements) in its two arrays,
/// read by the page's one trace parser: a piece of the trace is a small trace.
fn piece(text: &str, cut: &Cut, writes: Option<Range<usize>>, events: Option<Range<usize>>) -> Option<Trace> {
    let elements = |array: &Array, range: Option<Range<usize>>| match range {
        Some(range) if !range.is_empty() => &text[array.elements[range.start].start..array.elements[range.end - 1].end],
        _ => "",
    };
    let mut json = String::new();
    let mut from = 0;
    let mut arrays = [(&cut.writes, writes), (&cut.events, events)];
    if arrays[1].0.span.start < arrays[0].0.span.start {
        arrays.swap(0, 1);
    }
    for (array, range) in arrays {
        if array.span.is_empty() {
            continue;
        }
        json.push_str(&text[from..array.span.start]);
        json.push('[');
        json.push_str(elements(array, range));
        json.push(']');
        from = array.span.end;
    }
    json.push_str(&text[from..]);
    trace_json(&json).ok()
}

/// Reads a whole text in steps of `count` (what the page does between turns, in one go).
#[cfg(test)]
pub fn read_in_steps(file_name: &str, text: &str, count: usize) -> Result<DroppedFile, DropError> {
    let Some(mut reader) = TraceReader::new(text) else { return super::dropped::parse_dropped(file_name, text) };
    loop {
        match reader.step(count) {
            Some(true) => return reader.finish(file_name),
            Some(false) => {}
            None => return super::dropped::parse_dropped(file_name, text),
        }
    }
}

#[derive(Default)]
struct Array {
    /// The array's bytes, brackets included.
    span: Range<usize>,
    elements: Vec<Range<usize>>,
}

#[derive(Default)]
struct Cut {
    writes: Array,
    events: Array,
}

fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while at < bytes.len() && bytes[at].is_ascii_whitespace() {
        at += 1;
    }
    at
}

/// The end of the string that starts at `at` (its opening quote), past the closing one.
fn string_end(bytes: &[u8], mut at: usize) -> Option<usize> {
    at += 1;
    while at < bytes.len() {
        match bytes[at] {
            b'\\' => at += 2,
            b'"' => return Some(at + 1),
            _ => at += 1,
        }
    }
    None
}

/// The end of the JSON value that starts at `at`.
fn value_end(bytes: &[u8], at: usize) -> Option<usize> {
    match *bytes.get(at)? {
        b'"' => string_end(bytes, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            while i < bytes.len() {
                match bytes[i] {
                    b'"' => {
                        i = string_end(bytes, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.checked_sub(1)?;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        _ => {
            let len = bytes[at..].iter().position(|byte| matches!(byte, b',' | b'}' | b']') || byte.is_ascii_whitespace()).unwrap_or(bytes.len() - at);
            (len > 0).then_some(at + len)
        }
    }
}

/// The elements of the array that starts at `at`.
fn array_elements(bytes: &[u8], at: usize) -> Option<Array> {
    let mut array = Array::default();
    let mut i = skip_space(bytes, at + 1);
    if bytes.get(i) == Some(&b']') {
        array.span = at..i + 1;
        return Some(array);
    }
    loop {
        let end = value_end(bytes, i)?;
        array.elements.push(i..end);
        i = skip_space(bytes, end);
        match bytes.get(i)? {
            b',' => i = skip_space(bytes, i + 1),
            b']' => {
                array.span = at..i + 1;
                return Some(array);
            }
            _ => return None,
        }
    }
}

/// The top-level object's `writes` and `events` arrays, cut into elements.
fn cut_trace(bytes: &[u8]) -> Option<Cut> {
    let mut cut = Cut::default();
    let mut i = skip_space(bytes, 0);
    if bytes.get(i) != Some(&b'{') {
        return None;
    }
    i = skip_space(bytes, i + 1);
    loop {
        if bytes.get(i)? == &b'}' {
            return (skip_space(bytes, i + 1) == bytes.len()).then_some(cut);
        }
        let key_end = string_end(bytes, i).filter(|_| bytes[i] == b'"')?;
        let key = &bytes[i + 1..key_end - 1];
        i = skip_space(bytes, key_end);
        if bytes.get(i)? != &b':' {
            return None;
        }
        i = skip_space(bytes, i + 1);
        let array = match key {
            b"writes" if bytes.get(i) == Some(&b'[') => Some(&mut cut.writes),
            b"events" if bytes.get(i) == Some(&b'[') => Some(&mut cut.events),
            _ => None,
        };
        let end = match array {
            Some(array) => {
                *array = array_elements(bytes, i)?;
                array.span.end
            }
            None => value_end(bytes, i)?,
        };
        i = skip_space(bytes, end);
        match bytes.get(i)? {
            b',' => i = skip_space(bytes, i + 1),
            b'}' => {}
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use walab_core::group_commit::{Config, Policy};
    use walab_core::sim::commit;

    fn tiny_trace_json(pretty: bool) -> String {
        let (setup, arrivals) = commit::tiny_store_setup(Config::file(Policy::Group));
        let trace = commit::run(&setup, &arrivals).unwrap().trace.unwrap();
        if pretty { serde_json::to_string_pretty(&trace).unwrap() } else { serde_json::to_string(&trace).unwrap() }
    }

    #[test]
    fn read_in_steps_it_is_the_same_trace_as_read_whole() {
        for pretty in [false, true] {
            let text = tiny_trace_json(pretty);
            let whole = super::super::dropped::parse_dropped("run.json", &text).unwrap();
            for count in [1, 7, 10_000] {
                let (DroppedFile::Trace(read), DroppedFile::Trace(whole)) = (read_in_steps("run.json", &text, count).unwrap(), &whole) else {
                    panic!("not read as a commit trace");
                };
                assert!(read.same_as(whole), "pretty {pretty}, steps of {count}");
            }
            let reader = TraceReader::new(&text).unwrap();
            assert!(reader.progress().total > 24, "the writes and the events are cut apart");
        }
    }

    #[test]
    fn a_broken_file_gets_the_whole_parse_sentence() {
        let text = tiny_trace_json(false);
        for broken in [&text[..text.len() / 2], "{\"format_version\": 1, \"events\": [", "[1, 2]"] {
            assert!(TraceReader::new(broken).is_none() || read_in_steps("b.json", broken, 5).is_err());
            assert_eq!(read_in_steps("b.json", broken, 5).unwrap_err(), super::super::dropped::parse_dropped("b.json", broken).unwrap_err());
        }
        // An element that is valid JSON but not an event.
        let odd = text.replacen("{\"at\":", "{\"nonsense\":1,\"at\":", 1).replacen("\"event\":\"arrive\"", "\"event\":\"leave\"", 1);
        assert_eq!(read_in_steps("o.json", &odd, 5).unwrap_err(), super::super::dropped::parse_dropped("o.json", &odd).unwrap_err());
    }
}
