//! Part 8: the log's segment files in a row, each with its two deletion gates, and the
//! change-data-capture reader's confirmed position pinning the files it has not read.

use std::rc::Rc;

use yew::prelude::*;

use crate::benches::segments::{FileStatus, SegmentFile};

#[derive(Properties, PartialEq)]
pub struct SegmentsFigureProps {
    pub files: Rc<Vec<SegmentFile>>,
    /// The reader's confirmed seq, if there is a reader.
    pub reader: Option<u64>,
    pub kept: usize,
}

/// The design size, when the figure is not laid out in a measured stage.
const WIDTH: f64 = 900.0;
const TEXT: f64 = 15.0;
const LEFT: f64 = 10.0;
/// The longest line in a file's box ("deleted 13.71 ms"), in characters.
const BOX_CHARS: f64 = 15.0;

#[component]
pub fn SegmentsFigure(props: &SegmentsFigureProps) -> Html {
    let drawing = crate::layout::use_figure_room().drawing(WIDTH, TEXT, 200.0);
    let crate::layout::Drawing { width, text, char, fitted } = drawing;
    let line = text * 1.45;
    let box_width = if fitted { BOX_CHARS * char + 34.0 } else { 146.0 };
    let box_height = 6.6 * line;
    let count = props.files.len().max(1);
    // As many files a row as the width holds; the rows wrap on a phone.
    let per_row = (((width - 2.0 * LEFT) / (box_width + 2.0)).floor() as usize).clamp(1, count);
    let title_lines = crate::layout::wrap_words("the log's segment files, oldest first: a file is deleted once both of its gates are open",
        ((width - 2.0 * LEFT) / char).floor().max(10.0) as usize);
    let reader_file = props.reader.map(|seq| props.files.iter().position(|file| file.last_seq >= seq).unwrap_or(count - 1));
    let reader_row = reader_file.map(|file| file / per_row);
    // Each row's top; the reader's row leaves room under it for the reader's two lines.
    let rows = count.div_ceil(per_row);
    let mut row_tops = Vec::with_capacity(rows);
    let mut y = title_lines.len() as f64 * line + 8.0;
    for row in 0..rows {
        row_tops.push(y);
        y += box_height + 10.0 + if reader_row == Some(row) { 2.6 * line + 12.0 } else { 0.0 };
    }
    let height = y + 4.0;
    let place = |index: usize| (LEFT + (index % per_row) as f64 * (box_width + 2.0), row_tops[index / per_row]);
    let files = props.files.iter().enumerate().map(|(index, file)| {
        let (x, top) = place(index);
        let gate = |open: bool, y: f64, label: String, name: &'static str| html! {
            <g class={classes!("gate", name, if open { "open" } else { "closed" })} data-gate={name} data-open={open.to_string()}>
                <circle cx={(x + 14.0).to_string()} cy={(y - text * 0.3).to_string()} r={(text * 0.45).to_string()} />
                <text x={(x + 26.0).to_string()} y={y.to_string()}>{ label }</text>
            </g>
        };
        let status_words = match file.status {
            FileStatus::NotCreated => "not created yet".to_string(),
            FileStatus::Kept if file.pinned => "kept: pinned".to_string(),
            FileStatus::Kept => "kept".to_string(),
            FileStatus::Deleted => format!("deleted {:.2} ms", file.deleted_at.map_or(0.0, |at| at.as_millis_f64())),
        };
        html! {
            <g class={classes!("segment-file", file.status.class(), file.pinned.then_some("pinned"))} data-file={file.name.clone()}
                data-state={file.status.class()} data-pinned={file.pinned.to_string()}>
                <rect class="file-box" x={x.to_string()} y={top.to_string()} width={box_width.to_string()} height={box_height.to_string()} rx="6" />
                <text class="file-name" x={(x + 8.0).to_string()} y={(top + line).to_string()}>{ file.name.clone() }</text>
                <text class="file-seqs" x={(x + 8.0).to_string()} y={(top + 2.2 * line).to_string()}>{ format!("writes {}-{}", file.first_seq, file.last_seq) }</text>
                { gate(file.flushed_into.is_some(), top + 3.5 * line, file.flushed_into.as_ref().map_or("not flushed".to_string(), |table| format!("flushed: {table}")), "flushed") }
                { gate(file.readers_done, top + 4.8 * line, if file.readers_done { "reader past it".to_string() } else { "reader behind".to_string() }, "readers") }
                <text class="file-status" x={(x + 8.0).to_string()} y={(top + 6.1 * line).to_string()}>{ status_words }</text>
            </g>
        }
    });
    let reader = props.reader.zip(reader_file).map(|(seq, index)| {
        let file = &props.files[index];
        let (box_x, top) = place(index);
        // Seq s sits at the right edge of its share of its file's box.
        let span = (file.last_seq + 1).saturating_sub(file.first_seq).max(1) as f64;
        let share = ((seq + 1).saturating_sub(file.first_seq) as f64 / span).clamp(0.0, 1.0);
        let x = box_x + share * box_width;
        let bottom = top + box_height + 10.0;
        let pinned_from = props.files.iter().find(|file| file.last_seq > seq && file.status == FileStatus::Kept);
        let words = format!("CDC reader: confirmed seq {seq}");
        // Labels go to the side with room.
        let (text_x, anchor) = if x + 10.0 + words.len() as f64 * char > width - 4.0 { (x - 10.0, "end") } else { (x + 10.0, "start") };
        html! {
            <g class="reader" data-reader-seq={seq.to_string()}>
                <line x1={x.to_string()} x2={x.to_string()} y1={(top - 4.0).to_string()} y2={bottom.to_string()} />
                <polygon points={format!("{},{} {},{} {},{}", x - 7.0, bottom + 12.0, x + 7.0, bottom + 12.0, x, bottom)} />
                <text x={text_x.to_string()} y={(bottom + line * 0.9).to_string()} text-anchor={anchor}>{ words }</text>
                if let Some(file) = pinned_from {
                    <text class="pin-note" x={text_x.to_string()} y={(bottom + line * 2.0).to_string()} text-anchor={anchor}>{ format!("{} onwards stay until it reads on", file.name) }</text>
                }
            </g>
        }
    });
    html! {
        <figure class="figure segments-figure" data-figure="segments" data-kept={props.kept.to_string()}
            aria-label={format!("the log's segment files: {} kept{}", props.kept, props.reader.map(|seq| format!(", a reader at seq {seq}")).unwrap_or_default())}>
            <svg class={classes!(fitted.then_some("fitted"))} viewBox={format!("0 0 {width} {height}")} style={format!("--text: {text}px")} aria-hidden="true">
                { for title_lines.iter().enumerate().map(|(index, words)| html! {
                    <text class="axis-title" x={LEFT.to_string()} y={(line * (index as f64 + 1.0) - 2.0).to_string()}>{ words.clone() }</text>
                }) }
                { for files }
                { reader.unwrap_or_default() }
            </svg>
            <figcaption class="legend">
                <span class="key gate-open">{ "gate open" }</span>
                <span class="key gate-closed">{ "gate closed" }</span>
                <span class="key file-kept">{ "file kept" }</span>
                <span class="key file-deleted">{ "file deleted" }</span>
            </figcaption>
        </figure>
    }
}
