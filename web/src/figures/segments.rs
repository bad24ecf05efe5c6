//! Part 8: the log's segment files in a row, each with its two deletion gates, and the
//! change-data-capture reader's confirmed position pinning the files it has not read.
//!
//! The reader is acted on in the figure: a press anywhere on the files puts the reader at
//! the seq under the pointer and a drag moves it, each new seq sent at once
//! (`on_reader`), so the run is made again with the reader there and the files it keeps
//! and frees redraw while the pointer moves. Its handle is a focusable slider: the arrows
//! move the reader a seq, Shift or Page Up/Down a segment, Home and End to the log's ends;
//! a polite live region says what the reader pins.

use std::rc::Rc;

use yew::prelude::*;

use crate::model::segments::{FileStatus, SegmentFile};
use crate::format::count;

#[derive(Properties, PartialEq)]
pub struct SegmentsFigureProps {
    pub files: Rc<Vec<SegmentFile>>,
    /// The reader's confirmed seq, if there is a reader.
    pub reader: Option<u64>,
    pub kept: usize,
    /// The reader was put at a seq (by a press, a drag or a key).
    pub on_reader: Callback<u64>,
}

/// The design size, when the figure is not laid out in a measured stage.
const WIDTH: f64 = 900.0;
const TEXT: f64 = 15.0;
const LEFT: f64 = 10.0;
/// The longest line in a file's box ("deleted 13.71 ms", "flushed: F10"), in characters,
/// with the gate's dot before it.
const BOX_CHARS: f64 = 17.0;

/// Where the files are drawn: the boxes' size, how many a row and each row's top.
#[derive(Clone, Debug, PartialEq)]
pub struct FilesLayout {
    pub box_width: f64,
    pub box_height: f64,
    pub per_row: usize,
    pub row_tops: Vec<f64>,
    pub height: f64,
    pub line: f64,
}

impl FilesLayout {
    /// Lays out `count` files in `width` with `char`-wide text, leaving `title_lines` for
    /// the title and room under the reader's row for its words.
    pub fn new(width: f64, text: f64, char: f64, count: usize, title_lines: usize, reader_file: Option<usize>) -> FilesLayout {
        let line = text * 1.45;
        let box_width = BOX_CHARS * char + 16.0;
        let box_height = 6.6 * line;
        let count = count.max(1);
        // As many files a row as the width holds; the rows wrap on a phone.
        let per_row = (((width - 2.0 * LEFT) / (box_width + 2.0)).floor() as usize).clamp(1, count);
        let reader_row = reader_file.map(|file| file / per_row);
        let rows = count.div_ceil(per_row);
        let mut row_tops = Vec::with_capacity(rows);
        let mut y = title_lines as f64 * line + 8.0;
        for row in 0..rows {
            row_tops.push(y);
            y += box_height + 10.0 + if reader_row == Some(row) { 2.6 * line + 12.0 } else { 0.0 };
        }
        FilesLayout { box_width, box_height, per_row, row_tops, height: y + 4.0, line }
    }

    /// The top-left corner of file `index`'s box.
    pub fn place(&self, index: usize) -> (f64, f64) {
        let row = (index / self.per_row).min(self.row_tops.len().saturating_sub(1));
        (LEFT + (index % self.per_row) as f64 * (self.box_width + 2.0), self.row_tops.get(row).copied().unwrap_or(0.0))
    }

    /// The x of the reader at `seq` in file `index` (the right edge of seq's share of it).
    pub fn reader_x(&self, file: &SegmentFile, index: usize, seq: u64) -> f64 {
        let span = (file.last_seq + 1).saturating_sub(file.first_seq).max(1) as f64;
        let share = ((seq + 1).saturating_sub(file.first_seq) as f64 / span).clamp(0.0, 1.0);
        self.place(index).0 + share * self.box_width
    }

    /// The seq a press at (`x`, `y`) in the drawing's units puts the reader at: the file
    /// under it, and the seq whose share of that file ends nearest the pointer.
    pub fn seq_at(&self, files: &[SegmentFile], x: f64, y: f64) -> Option<u64> {
        let last = files.len().checked_sub(1)?;
        let row = self.row_tops.iter().rposition(|top| *top <= y + 10.0).unwrap_or(0);
        let column = ((x - LEFT) / (self.box_width + 2.0)).floor().clamp(0.0, (self.per_row - 1) as f64) as usize;
        let index = (row * self.per_row + column).min(last);
        let file = &files[index];
        let span = (file.last_seq + 1).saturating_sub(file.first_seq);
        let share = ((x - self.place(index).0) / self.box_width).clamp(0.0, 1.0);
        Some((file.first_seq - 1 + (share * span as f64).round() as u64).min(files[last].last_seq))
    }
}

/// Where a key moves the reader from `seq` in a log of `last` seqs and segments of `per`.
pub fn reader_key(key: &str, shift: bool, seq: u64, last: u64, per: u64) -> Option<u64> {
    let step = if shift { per } else { 1 };
    Some(match key {
        "ArrowRight" | "ArrowUp" => (seq + step).min(last),
        "ArrowLeft" | "ArrowDown" => seq.saturating_sub(step),
        "PageUp" => (seq + per).min(last),
        "PageDown" => seq.saturating_sub(per),
        "Home" => 0,
        "End" => last,
        _ => return None,
    })
}

/// Numbers as one range or a list: "3-5", "2", "1, 3".
fn number_list(numbers: &[u64]) -> String {
    match numbers {
        [] => String::new(),
        [one] => one.to_string(),
        [first, .., last] if numbers.windows(2).all(|pair| pair[1] == pair[0] + 1) => format!("{first}-{last}"),
        _ => numbers.iter().map(u64::to_string).collect::<Vec<_>>().join(", "),
    }
}

/// What the reader at `seq` holds back, in words: the files it pins and how many stay.
pub fn reader_sentence(files: &[SegmentFile], seq: Option<u64>, kept: usize) -> String {
    let Some(seq) = seq else { return format!("no change-data-capture reader: {} kept", count(kept, "segment")) };
    let pinned: Vec<u64> = files.iter().filter(|file| file.pinned).map(|file| file.last_seq / (file.last_seq + 1 - file.first_seq)).collect();
    let pins = match pinned.len() {
        0 => "pins no segment".to_string(),
        1 => format!("pins segment {}", number_list(&pinned)),
        _ => format!("pins segments {}", number_list(&pinned)),
    };
    format!("reader at seq {seq} {pins}; {} kept", count(kept, "segment"))
}

fn file_box(file: &SegmentFile, (x, top): (f64, f64), layout: &FilesLayout, text: f64) -> Html {
    let line = layout.line;
    let created = file.status != FileStatus::NotCreated;
    let gate = |open: Option<bool>, y: f64, label: String, name: &'static str| html! {
        <g class={classes!("gate", name, match open { Some(true) => "open", Some(false) => "closed", None => "none" })} data-gate={name}
            data-open={open.map_or("none".to_string(), |open| open.to_string())}>
            if open.is_some() { <circle cx={(x + 14.0).to_string()} cy={(y - text * 0.3).to_string()} r={(text * 0.45).to_string()} /> }
            <text x={(x + 26.0).to_string()} y={y.to_string()}>{ label }</text>
        </g>
    };
    let status_words = match file.status {
        FileStatus::NotCreated => "not created yet".to_string(),
        FileStatus::Kept if file.pinned => "kept: pinned".to_string(),
        FileStatus::Kept => "kept".to_string(),
        FileStatus::Deleted => format!("deleted {:.2} ms", file.deleted_at.map_or(0.0, |at| at.as_millis_f64())),
    };
    // A file not created yet has no gates to pass.
    let (flushed, flushed_words) = match (created, &file.flushed_into) {
        (false, _) => (None, "—".to_string()),
        (true, Some(table)) => (Some(true), format!("flushed: {table}")),
        (true, None) => (Some(false), "not flushed".to_string()),
    };
    let (readers, readers_words) = match (created, file.readers_done) {
        (false, _) => (None, "—"),
        (true, true) => (Some(true), "reader past it"),
        (true, false) => (Some(false), "reader behind"),
    };
    html! {
        <g class={classes!("segment-file", file.status.class(), file.pinned.then_some("pinned"))} data-file={file.name.clone()}
            data-state={file.status.class()} data-pinned={file.pinned.to_string()}>
            <rect class="file-box" x={x.to_string()} y={top.to_string()} width={layout.box_width.to_string()} height={layout.box_height.to_string()} rx="6" />
            <text class="file-name" x={(x + 8.0).to_string()} y={(top + line).to_string()}>{ file.name.clone() }</text>
            <text class="file-seqs" x={(x + 8.0).to_string()} y={(top + 2.2 * line).to_string()}>{ format!("writes {}-{}", file.first_seq, file.last_seq) }</text>
            { gate(flushed, top + 3.5 * line, flushed_words, "flushed") }
            { gate(readers, top + 4.8 * line, readers_words.to_string(), "readers") }
            <text class="file-status" x={(x + 8.0).to_string()} y={(top + 6.1 * line).to_string()}>{ status_words }</text>
        </g>
    }
}

/// The reader's line and words under its file (`x` where it stands).
fn reader_mark(props: &SegmentsFigureProps, layout: &FilesLayout, seq: u64, index: usize, x: f64, width: f64, char: f64) -> Html {
    let (_, top) = layout.place(index);
    let line = layout.line;
    let bottom = top + layout.box_height + 10.0;
    let pinned_from = props.files.iter().find(|file| file.last_seq > seq && file.status == FileStatus::Kept);
    let words = format!("CDC reader: confirmed seq {seq}");
    let note = pinned_from.map(|file| format!("{} onwards stay until it reads on", file.name));
    // Labels go to the side with room (for the longer of the two lines).
    let longest = words.len().max(note.as_ref().map_or(0, String::len)) as f64;
    // Neither side has room (a phone): the words start where they end at the edge.
    let room = longest * char;
    let (text_x, anchor) = if x + 10.0 + room <= width - 4.0 {
        (x + 10.0, "start")
    } else if x - 10.0 - room >= 4.0 {
        (x - 10.0, "end")
    } else {
        ((width - 4.0 - room).max(4.0), "start")
    };
    // The line marks the reader's place on the file's edges, clear of the file's words.
    // Drawn at the origin and moved there by a transform, so that a step glides (CSS).
    let (text_x, bottom, box_bottom) = (text_x - x, bottom - top, layout.box_height);
    html! {
        <g class="reader" data-reader-seq={seq.to_string()} style={format!("transform:translate({x}px,{top}px)")}>
            <line x1="0" x2="0" y1="-4" y2="6" />
            <line x1="0" x2="0" y1={(box_bottom - 6.0).to_string()} y2={bottom.to_string()} />
            <polygon points={format!("-7,{} 7,{} 0,{bottom}", bottom + 12.0, bottom + 12.0)} />
            <text x={text_x.to_string()} y={(bottom + line * 0.9).to_string()} text-anchor={anchor}>{ words }</text>
            if let Some(note) = note {
                <text class="pin-note" x={text_x.to_string()} y={(bottom + line * 2.0).to_string()} text-anchor={anchor}>{ note }</text>
            }
        </g>
    }
}

#[component]
pub fn SegmentsFigure(props: &SegmentsFigureProps) -> Html {
    let drawing = crate::layout::use_figure_room().drawing(WIDTH, TEXT, 200.0);
    let crate::layout::Drawing { width, text, char, fitted } = drawing;
    let count = props.files.len().max(1);
    let title_lines = crate::layout::wrap_words("the log's segment files, oldest first: a file is deleted once both of its gates are open",
        ((width - 2.0 * LEFT) / char).floor().max(10.0) as usize);
    let last_seq = props.files.last().map_or(0, |file| file.last_seq);
    let file_of = |seq: u64| props.files.iter().position(|file| file.last_seq >= seq).unwrap_or(count - 1);
    // The handle's row leaves room under it (for the reader's words, or the handle alone).
    let handle_file = file_of(props.reader.unwrap_or(last_seq));
    let layout = Rc::new(FilesLayout::new(width, text, char, props.files.len(), title_lines.len(), Some(handle_file)));
    let height = layout.height;
    let files = props.files.iter().enumerate().map(|(index, file)| file_box(file, layout.place(index), &layout, text));
    // The handle stands at the reader, or (no reader) at the log's end, where a reader
    // that has read everything would be.
    let seq = props.reader.unwrap_or(last_seq);
    let index = file_of(seq);
    let handle_x = props.files.get(index).map_or(LEFT, |file| layout.reader_x(file, index, seq));
    let reader = props.reader.map(|seq| reader_mark(props, &layout, seq, index, handle_x, width, char));
    let sentence = reader_sentence(&props.files, props.reader, props.kept);
    let area = use_node_ref();
    let handle = reader_handle(props, &layout, area, (handle_x / width, (layout.place(index).1 + layout.box_height + 12.0) / height), (width, height), (seq, last_seq), sentence);
    html! {
        <figure class="figure segments-figure" data-figure="segments" data-kept={props.kept.to_string()}
            aria-label={format!("the log's segment files: {} kept{}", props.kept, props.reader.map(|seq| format!(", a reader at seq {seq}")).unwrap_or_default())}>
            <div class="reader-stage">
                <svg class={classes!(fitted.then_some("fitted"))} viewBox={format!("0 0 {width} {height}")} style={format!("--text: {text}px")} aria-hidden="true">
                    { for title_lines.iter().enumerate().map(|(index, words)| html! {
                        <text class="axis-title" x={LEFT.to_string()} y={(layout.line * (index as f64 + 1.0) - 2.0).to_string()}>{ words.clone() }</text>
                    }) }
                    { for files }
                    { reader.unwrap_or_default() }
                </svg>
                { handle }
            </div>
            { crate::parts::markup(r#"<figcaption class="legend"><span class="key gate-open">gate open</span><span class="key gate-closed">gate closed</span><span class="key file-kept">file kept</span><span class="key file-deleted">file deleted</span><span class="key reader-key">drag the reader, or focus it and use the arrows</span></figcaption>"#) }
        </figure>
    }
}

/// The reader's grip at `at` (fractions of the drawing), the pointer's handlers that put
/// the reader where it is pressed and dragged, and the keys.
fn reader_handle(props: &SegmentsFigureProps, layout: &Rc<FilesLayout>, area: NodeRef, at: (f64, f64), size: (f64, f64), (seq, last): (u64, u64), sentence: String) -> Html {
    let per = props.files.first().map_or(4, |file| file.last_seq + 1 - file.first_seq);
    let to_seq = {
        let (layout, files, area) = (layout.clone(), props.files.clone(), area.clone());
        move |event: &PointerEvent| -> Option<u64> {
            let element = area.cast::<web_sys::Element>()?;
            let rect = element.get_bounding_client_rect();
            if rect.width() <= 0.0 || rect.height() <= 0.0 {
                return None;
            }
            let x = (f64::from(event.client_x()) - rect.left()) / rect.width() * size.0;
            let y = (f64::from(event.client_y()) - rect.top()) / rect.height() * size.1;
            layout.seq_at(&files, x, y)
        }
    };
    let on_reader = props.on_reader.clone();
    let current = props.reader;
    let send = move |to: Option<u64>| {
        if let Some(to) = to.filter(|to| Some(*to) != current) {
            on_reader.emit(to);
        }
    };
    let on_down = {
        let (to_seq, send, area) = (to_seq.clone(), send.clone(), area.clone());
        Callback::from(move |event: PointerEvent| {
            if event.button() != 0 {
                return;
            }
            event.prevent_default();
            // The area takes the pointer, so it sees the moves wherever the pointer goes.
            // (Yew delegates events, so the event's current target is not the area.)
            if let Some(element) = area.cast::<web_sys::HtmlElement>() {
                let _ = element.set_pointer_capture(event.pointer_id());
                if let Some(grip) = element.query_selector(".reader-grip").ok().flatten() {
                    let _ = wasm_bindgen::JsCast::unchecked_into::<web_sys::HtmlElement>(grip).focus();
                }
            }
            send(to_seq(&event));
        })
    };
    let on_move = {
        let (to_seq, send) = (to_seq.clone(), send.clone());
        Callback::from(move |event: PointerEvent| {
            let pressed = event.buttons() & 1 == 1;
            if pressed {
                send(to_seq(&event));
            }
        })
    };
    // The release puts the reader where the pointer let go (a move the page was too busy
    // to draw is not lost).
    let on_up = {
        let (to_seq, send) = (to_seq.clone(), send.clone());
        Callback::from(move |event: PointerEvent| send(to_seq(&event)))
    };
    let on_key = {
        let send = send.clone();
        Callback::from(move |event: KeyboardEvent| {
            if event.ctrl_key() || event.meta_key() || event.alt_key() {
                return;
            }
            if let Some(to) = reader_key(&event.key(), event.shift_key(), seq, last, per) {
                // The reader's own keys: the player does not step on them.
                event.prevent_default();
                send(Some(to));
            }
        })
    };
    let style = format!("left: {:.3}%; top: {:.3}%", at.0 * 100.0, at.1 * 100.0);
    // The label leans inward as the grip nears either edge, so it never leaves the figure.
    let knob_lean = format!("transform: translateX({:.1}%)", -100.0 * at.0.clamp(0.0, 1.0));
    let value = if props.reader.is_some() { sentence.clone() } else { format!("{sentence}; move it to add a reader") };
    html! {
        <div class="reader-area" ref={area} title="press or drag on the files to move the reader" onpointerdown={on_down} onpointermove={on_move} onpointerup={on_up}>
            <div class={classes!("reader-grip", props.reader.is_none().then_some("absent"))} style={style} role="slider" tabindex="0"
                aria-label="the change-data-capture reader's confirmed seq: drag, or use the arrows"
                aria-valuemin="0" aria-valuemax={last.to_string()} aria-valuenow={seq.to_string()} aria-valuetext={value}
                onkeydown={on_key}>
                <span class="reader-knob" aria-hidden="true" style={knob_lean}>{ if props.reader.is_some() { "" } else { "drag to add a reader" } }</span>
            </div>
            <span class="visually-hidden reader-said" aria-live="polite">{ sentence }</span>
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files() -> Vec<SegmentFile> {
        (1..=6u64)
            .map(|segment| SegmentFile {
                name: format!("wal-{segment}"),
                first_seq: segment * 4 - 3,
                last_seq: segment * 4,
                status: FileStatus::Kept,
                flushed_into: None,
                readers_done: false,
                pinned: (3..=5).contains(&segment),
                deleted_at: None,
            })
            .collect()
    }

    #[test]
    fn a_press_on_a_file_names_the_seq_under_it_and_back() {
        let files = files();
        let layout = FilesLayout::new(900.0, 15.0, 9.3, files.len(), 1, Some(2));
        for seq in 0..=24u64 {
            let index = files.iter().position(|file| file.last_seq >= seq).unwrap();
            let x = layout.reader_x(&files[index], index, seq);
            let y = layout.place(index).1 + layout.box_height / 2.0;
            assert_eq!(layout.seq_at(&files, x, y), Some(seq), "seq {seq}");
        }
        assert_eq!(layout.seq_at(&files, -50.0, 0.0), Some(0), "left of the files is the log's start");
        assert_eq!(layout.seq_at(&files, 5000.0, 5000.0), Some(24), "past them, its end");
    }

    #[test]
    fn keys_move_the_reader_a_seq_or_a_segment_and_the_sentence_names_what_it_pins() {
        assert_eq!(reader_key("ArrowRight", false, 10, 24, 4), Some(11));
        assert_eq!(reader_key("ArrowRight", true, 22, 24, 4), Some(24));
        assert_eq!(reader_key("ArrowLeft", true, 2, 24, 4), Some(0));
        assert_eq!(reader_key("End", false, 2, 24, 4), Some(24));
        assert_eq!(reader_key("p", false, 2, 24, 4), None);
        assert_eq!(reader_sentence(&files(), Some(10), 4), "reader at seq 10 pins segments 3-5; 4 segments kept");
        assert_eq!(reader_sentence(&files()[..0], Some(24), 1), "reader at seq 24 pins no segment; 1 segment kept");
    }
}
