//! Part 7: the log segments as bytes: atomic units, the records' boundaries inside them,
//! which units are dirty, in a sync or on the media, and after a cut the recovery scan's
//! cursor walking the bytes.

use std::rc::Rc;

use yew::prelude::*;

use crate::model::torn::{LogView, RecordMark, UnitPlace};

#[derive(Properties, PartialEq)]
pub struct LogMediaProps {
    pub view: Rc<LogView>,
}

/// The design size, when the figure is not laid out in a measured stage.
const WIDTH: f64 = 900.0;
const TEXT: f64 = 15.0;
/// Room above the first row for its units' labels, which also slide down into place
/// when a unit lands after a cut.
const TOP: f64 = 14.0;

/// The longest of `candidates` that fits in `room` units at `char` units a character.
fn fitting(candidates: &[String], room: f64, char: f64) -> Option<String> {
    candidates.iter().find(|text| text.chars().count() as f64 * char <= room).cloned()
}

#[component]
pub fn LogMedia(props: &LogMediaProps) -> Html {
    let view = &props.view;
    let crate::layout::Drawing { width, text, char, fitted } = crate::layout::use_figure_room().drawing(WIDTH, TEXT, 240.0);
    let left = 5.0 * char + 12.0;
    // A row: two lines of unit labels, the units with the records inside, the offsets
    // under them and a line for the scan's cursor.
    let label_1 = text;
    let label_2 = 2.1 * text;
    let bar_top = 2.1 * text + 6.0;
    let bar_height = 2.8 * text;
    let offsets = bar_top + bar_height + text + 2.0;
    let cursor_line = offsets + 1.3 * text;
    let row_height = cursor_line + 0.8 * text;
    let height = TOP + row_height * view.segments.len().max(1) as f64;
    let rows = view.segments.iter().enumerate().map(|(row, segment)| {
        let scale = (width - left - 2.0 * char - 4.0) / segment.bytes.max(1) as f64;
        let x = |byte: usize| left + byte as f64 * scale;
        let y = TOP + row as f64 * row_height;
        let units = segment.units.iter().enumerate().map(|(unit, place)| {
            let start = unit * segment.unit_bytes;
            let end = ((unit + 1) * segment.unit_bytes).min(segment.bytes);
            // A unit in flight at the cut: when it reached the media among the others, or never.
            let landing = view.landing(&segment.name, unit);
            let order = landing.map(|landing| landing.order.map_or_else(|| "never".to_string(), |order| order.to_string()));
            let state = match landing.map(|landing| landing.order) {
                Some(Some(order)) => format!("landed {}", ordinal(order)),
                _ => place.short().to_string(),
            };
            // One line when it fits the unit, else the unit's number over its state.
            let room = x(end) - x(start) - 4.0;
            let one_line = format!("unit {unit}: {state}");
            let lines: Vec<String> = if one_line.chars().count() as f64 * char <= room {
                vec![one_line]
            } else {
                [format!("unit {unit}"), state].into_iter().filter_map(|line| fitting(&[line], room.max(4.0 * char), char)).collect()
            };
            // Landed units arrive one after another, in their order; a unit that never
            // landed shows last.
            let delay = landing.map(|landing| format!("animation-delay: {:.1}s", 0.6 * landing.order.unwrap_or(view.landings.len() + 1) as f64));
            html! {
                <g class={classes!("unit", place.class(), landing.is_some().then_some("arrival"))} data-file={segment.name.clone()} data-unit={unit.to_string()} data-state={place.class()}
                    data-landed-order={order} style={delay}>
                    <title>{ format!("{} unit {unit} (bytes {start}-{}): {}", segment.name, end - 1, place.words()) }</title>
                    <rect x={x(start).to_string()} y={(y + bar_top).to_string()} width={(x(end) - x(start) - 2.0).to_string()} height={bar_height.to_string()} rx="3" />
                    <text class="unit-label" x={(x(start) + 3.0).to_string()} y={(y + if lines.len() == 1 { label_2 } else { label_1 }).to_string()}>
                        { for lines.iter().enumerate().map(|(index, line)| html! {
                            <tspan x={(x(start) + 3.0).to_string()} dy={if index == 0 { "0".to_string() } else { (label_2 - label_1).to_string() }}>{ line.clone() }</tspan>
                        }) }
                    </text>
                </g>
            }
        });
        let records = segment.records.iter().map(|record| {
            let write = record.write;
            // The longest label the record's width holds, down to its number alone.
            let candidates: Vec<String> = match record.mark {
                RecordMark::Stopped => vec![format!("rec {write} ✗"), format!("{write} ✗"), "✗".into()],
                RecordMark::Accepted => vec![format!("rec {write} ✓"), format!("{write} ✓"), "✓".into()],
                RecordMark::Skipped => vec![format!("rec {write} (flushed)"), format!("{write} (flushed)"), format!("{write}")],
                RecordMark::Unread => vec![format!("rec {write}"), format!("{write}")],
            };
            // The label sits in the record's widest stretch between unit borders, so no
            // border runs through it; a record too short for that is labelled across them.
            let unit_bytes = segment.unit_bytes.max(1);
            let mut cuts = vec![record.start];
            cuts.extend((record.start / unit_bytes + 1..).map(|unit| unit * unit_bytes).take_while(|border| *border < record.end));
            cuts.push(record.end);
            let (from, to) = cuts.windows(2).map(|pair| (pair[0], pair[1])).max_by_key(|(from, to)| to - from).unwrap_or((record.start, record.end));
            let (label, middle) = match fitting(&candidates, x(to) - x(from) - 4.0, char) {
                Some(label) => (Some(label), (x(from) + x(to)) / 2.0),
                None => (fitting(&candidates, x(record.end) - x(record.start) - 4.0, char), (x(record.start) + x(record.end)) / 2.0),
            };
            html! {
                <g class={classes!("record", record.mark.class())} data-record={write.to_string()} data-state={record.mark.class()}
                    data-start={record.start.to_string()} data-end={record.end.to_string()}>
                    <title>{ format!("record {write} at bytes {}-{}", record.start, record.end) }</title>
                    <rect x={x(record.start).to_string()} y={(y + bar_top + 0.25 * bar_height).to_string()} width={(x(record.end) - x(record.start) - 1.0).to_string()} height={(0.5 * bar_height).to_string()} />
                    if let Some(label) = label {
                        <text class="record-label" x={middle.to_string()} y={(y + bar_top + 0.5 * bar_height + 0.35 * text).to_string()} text-anchor="middle">{ label }</text>
                    }
                    <text class="offset" x={x(record.start).to_string()} y={(y + offsets).to_string()} text-anchor="middle">{ record.start }</text>
                </g>
            }
        });
        let last_end = segment.records.last().map(|record| record.end);
        let cursor = view.cursor.as_ref().filter(|cursor| cursor.segment == segment.name).map(|cursor| {
            let cursor_width = (x(cursor.end) - x(cursor.start)).max(3.0);
            html! {
                <g class={classes!("scan-cursor", if cursor.ok { "ok" } else { "fail" })} data-segment={cursor.segment.clone()} data-start={cursor.start.to_string()} data-end={cursor.end.to_string()}>
                    <rect x={(x(cursor.start) - 1.0).to_string()} y={(y + bar_top - 2.0).to_string()} width={cursor_width.to_string()} height={(bar_height + 4.0).to_string()} rx="4" />
                    <text class="cursor-label" x={x(cursor.start).min(width - 20.0 * char).max(2.0).to_string()} y={(y + cursor_line).to_string()}>{ format!("scan: {}{}", cursor.what, if cursor.ok { "" } else { " NO" }) }</text>
                </g>
            }
        });
        html! {
            <g class="segment-row" data-file={segment.name.clone()}>
                <text class="segment-name" x="4" y={(y + bar_top + 0.5 * bar_height + 0.35 * text).to_string()}>{ segment.name.clone() }</text>
                { for units }
                { for records }
                if let Some(end) = last_end {
                    <text class="offset" x={x(end).to_string()} y={(y + offsets).to_string()} text-anchor="middle">{ end }</text>
                }
                { cursor.unwrap_or_default() }
            </g>
        }
    });
    let label = if view.after_cut {
        match view.stop_record {
            Some(record) => format!("the log on the media after the power cut; the recovery scan stopped at record {record}"),
            None => "the log on the media after the power cut, and the recovery scan".to_string(),
        }
    } else {
        "the log segments' units and records at the playhead".to_string()
    };
    html! {
        <figure class="figure log-media" data-figure="log-media" aria-label={label}
            data-stop-record={view.stop_record.map(|record| record.to_string()).unwrap_or_default()}>
            if let Some(words) = view.landing_words() {
                <p class="landing-order" data-order={landed_order(view)}>{ format!("At the cut, in {words}.") }</p>
            }
            <svg class={classes!(fitted.then_some("fitted"))} viewBox={format!("0 0 {width} {height}")} style={format!("--text: {text}px")} aria-hidden="true">
                { for rows }
            </svg>
            <figcaption class="legend">
                { for UnitPlace::ALL.iter().filter(|place| view.after_cut || !matches!(place, UnitPlace::Landed | UnitPlace::NotLanded)).map(|place| html! {
                    <span class={classes!("key", "unit-key", place.class())}>{ place.words() }</span> }) }
                <span class="key record-key">{ "a record; the numbers under it are byte offsets" }</span>
            </figcaption>
        </figure>
    }
}

/// "1st", "2nd", "3rd", "4th".
fn ordinal(n: usize) -> String {
    match (n % 10, n % 100) {
        (1, hundred) if hundred != 11 => format!("{n}st"),
        (2, hundred) if hundred != 12 => format!("{n}nd"),
        (3, hundred) if hundred != 13 => format!("{n}rd"),
        _ => format!("{n}th"),
    }
}

/// The in-flight units that landed, in their order: "wal-6:1 wal-6:2".
fn landed_order(view: &LogView) -> String {
    let mut landed: Vec<_> = view.landings.iter().filter(|landing| landing.order.is_some()).collect();
    walab_core::sort::sort_by_key(&mut landed, |landing| landing.order);
    landed.iter().map(|landing| format!("{}:{}", landing.segment, landing.unit)).collect::<Vec<_>>().join(" ")
}
