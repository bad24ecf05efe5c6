//! Part 4's figure: wal-1's bytes, one cell per byte, with the records' boundaries.
//!
//! The segment is drawn in rows of one atomic unit (32 bytes; on a phone, two rows of half a unit, a gap between units), so a record that
//! crosses a unit boundary is seen to cross it. Each byte is coloured by its field
//! (checksum, length, type, sequence number, op, key, value), a thick bar marks where
//! each record starts, and a bracket under each row names the record its bytes belong
//! to. The bytes after the last record are the segment's zero fill. The player's step
//! highlights what the append is doing to write 4's record (framing it, writing it).
//!
//! Given an appended write and where its bytes are, the figure follows the append: the
//! record's cells hold zeros until it is written, show its bytes dashed while they sit
//! only in the page cache, solid once synced, and zeros again when a power cut erased
//! them. Cropped, it draws only the units the appended record touches.

use std::rc::Rc;

use yew::prelude::*;

use crate::model::append::{BytesAt, RecordLayout};
use crate::record_layout::Field;

#[derive(Properties, PartialEq)]
pub struct RecordBytesProps {
    pub records: Rc<Vec<RecordLayout>>,
    pub segment_bytes: usize,
    pub unit_bytes: usize,
    /// A write whose record to highlight (the one the append steps are about).
    #[prop_or_default]
    pub highlight: Option<u64>,
    /// A write being appended and where its bytes are; every other record is on the media.
    #[prop_or_default]
    pub appended: Option<(u64, BytesAt)>,
    /// Draw only the units the appended record touches.
    #[prop_or_default]
    pub crop: bool,
    /// Names the figure in its `data-order` (which append order it follows).
    #[prop_or_default]
    pub order: Option<AttrValue>,
    /// A byte the student changed, and the value it holds now.
    #[prop_or_default]
    pub changed: Option<(usize, u8)>,
    /// A click on a byte asks for it to be changed (the figure's cells become targets).
    #[prop_or_default]
    pub on_byte: Option<Callback<usize>>,
}

const ROW_H: f64 = 52.0;
const TOP: f64 = 8.0;
/// Below this room (CSS pixels) a unit is drawn as two rows of half a unit, with a gap
/// between units, so a phone shows every byte at a readable size without swiping.
const NARROW_BELOW: f64 = 560.0;
const UNIT_GAP: f64 = 10.0;

#[component]
pub fn RecordBytes(props: &RecordBytesProps) -> Html {
    let room = crate::layout::use_figure_room();
    // A projector's large type (presenter mode) takes the narrow layout too: half a unit a
    // row, so each byte's text is drawn large enough to read from the back of a room.
    let narrow = room.measured() && (room.width < NARROW_BELOW || room.text >= 16.0) && props.unit_bytes >= 2;
    let unit = props.unit_bytes.max(1);
    // (bytes per row, rows per unit, a byte's width, the row labels' column)
    let (per_row, rows_per_unit, cell, left) = if narrow { (unit / 2, 2, 21.0, 30.0) } else { (unit, 1, 22.0, 56.0) };
    let rows = props.segment_bytes.div_ceil(per_row);
    let gap = if narrow { UNIT_GAP } else { 0.0 };
    let row_y = |row: usize| TOP + row as f64 * ROW_H + (row / rows_per_unit) as f64 * gap;
    let width = left + per_row as f64 * cell + if narrow { 4.0 } else { 8.0 };
    let height = row_y(rows.saturating_sub(1)) + ROW_H + 8.0;
    let xy = |byte: usize| (left + (byte % per_row) as f64 * cell, row_y(byte / per_row));
    // Which record and field each byte belongs to.
    let mut owner: Vec<Option<(u64, Field, u8)>> = vec![None; props.segment_bytes];
    for record in props.records.iter() {
        for (field, from, to) in &record.fields {
            for at in *from..*to {
                if let Some(slot) = owner.get_mut(record.offset + at) {
                    *slot = Some((record.write, *field, record.bytes[at]));
                }
            }
        }
    }
    // Where a write's bytes are: the appended one's as given, every other's on the media.
    let at = |write: u64| match props.appended {
        Some((appended, at)) if appended == write => at,
        _ => BytesAt::Media,
    };
    let in_file = |at: BytesAt| matches!(at, BytesAt::PageCache | BytesAt::Media);
    let cells = owner.iter().enumerate().map(|(byte, owned)| {
        let (x, y) = xy(byte);
        let state = owned.map(|(write, _, _)| at(write));
        let changed = props.changed.filter(|(at, _)| *at == byte);
        let (class, text, write) = match owned {
            Some((write, field, value)) if state.is_some_and(in_file) => (field.class(), format!("{:02x}", changed.map_or(*value, |(_, now)| now)), write.to_string()),
            Some((write, _, _)) => ("zero-fill", "00".to_string(), write.to_string()),
            None => ("zero-fill", format!("{:02x}", changed.map_or(0, |(_, now)| now)), String::new()),
        };
        let lit = owned.is_some_and(|(write, _, _)| Some(write) == props.highlight);
        let state_class = state.filter(|at| *at != BytesAt::Media).map(BytesAt::name);
        html! {
            <g class={classes!("byte", class, lit.then_some("lit"), state_class, changed.map(|_| "changed"))} data-byte={byte.to_string()} data-write={write}
                data-state={state.map(BytesAt::name).unwrap_or("zero")}>
                <rect x={x.to_string()} y={y.to_string()} width={cell.to_string()} height="24" />
                <text x={(x + cell / 2.0).to_string()} y={(y + 16.5).to_string()} text-anchor="middle">{ text }</text>
            </g>
        }
    });
    let row_labels = (0..rows).map(|row| {
        let y = row_y(row);
        html! { <text class="row-label" x={(left - 6.0).to_string()} y={(y + 16.5).to_string()} text-anchor="end">{ row * per_row }</text> }
    });
    // A bar where each record starts, and a bracket per record per row.
    let boundaries = props.records.iter().map(|record| {
        let (x, y) = xy(record.offset);
        let end = record.offset + record.bytes.len();
        let mut brackets = Vec::new();
        let mut start = record.offset;
        while start < end {
            let row_end = ((start / per_row) + 1) * per_row;
            let stop = end.min(row_end);
            let (bx, by) = xy(start);
            let span = (stop - start) as f64 * cell;
            let label = if start == record.offset { format!("record {}", record.write) } else { format!("{} cont.", record.write) };
            brackets.push(html! {
                <g class="bracket">
                    <line x1={(bx + 2.0).to_string()} x2={(bx + span - 2.0).to_string()} y1={(by + 30.0).to_string()} y2={(by + 30.0).to_string()} />
                    if span > 60.0 {
                        <text x={(bx + 4.0).to_string()} y={(by + 44.0).to_string()}>{ label }</text>
                    }
                </g>
            });
            start = stop;
        }
        let state = at(record.write);
        html! {
            <g class={classes!("record", (Some(record.write) == props.highlight).then_some("lit"), (!in_file(state)).then_some("absent"))}
                data-write={record.write.to_string()} data-state={state.name()}
                data-offset={record.offset.to_string()} data-end={end.to_string()}>
                <title>{ format!("record {} at bytes {}-{}: {}", record.write, record.offset, end - 1, record.description) }</title>
                <line class="boundary" x1={x.to_string()} x2={x.to_string()} y1={(y - 3.0).to_string()} y2={(y + 27.0).to_string()} />
                { for brackets }
            </g>
        }
    });
    let end = props.records.last().map(|record| record.offset + record.bytes.len()).unwrap_or(0);
    // Where the file's written bytes end (before the appended record while it is not in the file).
    let written_end = props.records.iter().filter(|record| in_file(at(record.write))).map(|record| record.offset + record.bytes.len()).max().unwrap_or(0);
    let (ex, ey) = xy(written_end.min(props.segment_bytes.saturating_sub(1)));
    // The appended record, where its bytes are, and the rows it spans (for the crop).
    let appended = props.appended.and_then(|(write, at)| props.records.iter().find(|record| record.write == write).map(|record| (record, at)));
    let (top, view_height) = match appended.filter(|_| props.crop) {
        Some((record, _)) => {
            // The whole units the record touches.
            let first = record.offset / unit;
            let last = (record.offset + record.bytes.len()).saturating_sub(1) / unit;
            let (first, last) = (first * rows_per_unit, (last + 1) * rows_per_unit - 1);
            (row_y(first) - TOP, row_y(last) - row_y(first) + ROW_H + 2.0 * TOP)
        }
        None => (0.0, height),
    };
    let label = match appended {
        Some((record, at)) => format!("wal-1 as record {} is appended: {}", record.write, at.text(record.bytes.len())),
        None => format!("wal-1's {} bytes: {} ending at byte {end}, then zeros", props.segment_bytes, crate::format::count(props.records.len(), "record")),
    };
    // One listener for every cell: the byte is the clicked cell's data-byte.
    let onclick = props.on_byte.clone().map(|on_byte| {
        Callback::from(move |event: MouseEvent| {
            use wasm_bindgen::JsCast;
            let byte = event
                .target()
                .and_then(|target| target.dyn_into::<web_sys::Element>().ok())
                .and_then(|element| element.closest("[data-byte]").ok().flatten())
                .and_then(|cell| cell.get_attribute("data-byte"))
                .and_then(|byte| byte.parse::<usize>().ok());
            if let Some(byte) = byte {
                on_byte.emit(byte);
            }
        })
    });
    html! {
        <div class={classes!("figure", "record-bytes", props.crop.then_some("cropped"), props.on_byte.is_some().then_some("editable"))} data-figure="record-bytes"
            data-records={props.records.len().to_string()} data-end={end.to_string()}
            data-order={props.order.clone()} data-appended-state={appended.map(|(_, at)| at.name())}
            aria-label={label.clone()}>
            if let Some((record, at)) = appended {
                <p class={classes!("bytes-note", (at == BytesAt::Lost).then_some("danger"))}>{ format!("record {}: {}", record.write, at.text(record.bytes.len())) }</p>
            }
            <svg class={classes!(narrow.then_some("fitted"))} style={narrow.then_some("--text: 13px")} {onclick}
                viewBox={format!("0 {top} {width} {view_height}")} role="img" aria-label={label}>
                <g class="row-labels">{ for row_labels }</g>
                <g class="bytes">{ for cells }</g>
                <g class="records">{ for boundaries }</g>
                if written_end < props.segment_bytes {
                    <line class="boundary end" x1={ex.to_string()} x2={ex.to_string()} y1={(ey - 3.0).to_string()} y2={(ey + 27.0).to_string()} />
                }
            </svg>
        </div>
    }
}
