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

const WIDTH: f64 = 900.0;
const LEFT: f64 = 10.0;
const BOX: f64 = 146.0;

#[component]
pub fn SegmentsFigure(props: &SegmentsFigureProps) -> Html {
    let seqs = props.files.last().map_or(24, |file| file.last_seq) as f64;
    // Seq s sits at the right edge of its quarter of its file's box.
    let seq_x = |seq: f64| LEFT + (seq / seqs) * (BOX + 2.0) * props.files.len() as f64;
    let files = props.files.iter().enumerate().map(|(index, file)| {
        let x = LEFT + index as f64 * (BOX + 2.0);
        let gate = |open: bool, y: f64, label: String, name: &'static str| html! {
            <g class={classes!("gate", name, if open { "open" } else { "closed" })} data-gate={name} data-open={open.to_string()}>
                <circle cx={(x + 14.0).to_string()} cy={y.to_string()} r="7" />
                <text x={(x + 26.0).to_string()} y={(y + 4.0).to_string()}>{ label }</text>
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
                <rect class="file-box" x={x.to_string()} y="24" width={BOX.to_string()} height="112" rx="6" />
                <text class="file-name" x={(x + 8.0).to_string()} y="44">{ file.name.clone() }</text>
                <text class="file-seqs" x={(x + 8.0).to_string()} y="62">{ format!("writes {}-{}", file.first_seq, file.last_seq) }</text>
                { gate(file.flushed_into.is_some(), 84.0, file.flushed_into.as_ref().map_or("not flushed".to_string(), |table| format!("flushed: {table}")), "flushed") }
                { gate(file.readers_done, 106.0, if file.readers_done { "reader past it".to_string() } else { "reader behind".to_string() }, "readers") }
                <text class="file-status" x={(x + 8.0).to_string()} y="128">{ status_words }</text>
            </g>
        }
    });
    let reader = props.reader.map(|seq| {
        let x = seq_x(seq as f64);
        let pinned_from = props.files.iter().find(|file| file.last_seq > seq && file.status == FileStatus::Kept);
        // Labels go to the side with room.
        let (text_x, anchor) = if x > WIDTH / 2.0 { (x - 10.0, "end") } else { (x + 10.0, "start") };
        html! {
            <g class="reader" data-reader-seq={seq.to_string()}>
                <line x1={x.to_string()} x2={x.to_string()} y1="20" y2="160" />
                <polygon points={format!("{},{} {},{} {},{}", x - 7.0, 172.0, x + 7.0, 172.0, x, 160.0)} />
                <text x={text_x.to_string()} y="176" text-anchor={anchor}>{ format!("CDC reader: confirmed seq {seq}") }</text>
                if let Some(file) = pinned_from {
                    <text class="pin-note" x={text_x.to_string()} y="194" text-anchor={anchor}>{ format!("{} onwards stay until it reads on", file.name) }</text>
                }
            </g>
        }
    });
    html! {
        <figure class="figure segments-figure" data-figure="segments" data-kept={props.kept.to_string()}
            aria-label={format!("the log's segment files: {} kept{}", props.kept, props.reader.map(|seq| format!(", a reader at seq {seq}")).unwrap_or_default())}>
            <svg viewBox={format!("0 0 {WIDTH} 204")} aria-hidden="true">
                <text class="axis-title" x={LEFT.to_string()} y="14">{ "the log's segment files, oldest first: a file is deleted once both of its gates are open" }</text>
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
