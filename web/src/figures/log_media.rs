//! Part 7: the log segments as bytes: atomic units, the records' boundaries inside them,
//! which units are dirty, in a sync or on the media, and after a cut the recovery scan's
//! cursor walking the bytes.

use std::rc::Rc;

use yew::prelude::*;

use crate::benches::torn::{LogView, RecordMark, UnitPlace};

#[derive(Properties, PartialEq)]
pub struct LogMediaProps {
    pub view: Rc<LogView>,
}

const WIDTH: f64 = 900.0;
const LEFT: f64 = 70.0;
const ROW: f64 = 84.0;
/// Room above the first row for its units' labels, which also slide down into place
/// when a unit lands after a cut.
const TOP: f64 = 26.0;

#[component]
pub fn LogMedia(props: &LogMediaProps) -> Html {
    let view = &props.view;
    let height = TOP + ROW * view.segments.len().max(1) as f64;
    let rows = view.segments.iter().enumerate().map(|(row, segment)| {
        let scale = (WIDTH - LEFT - 10.0) / segment.bytes.max(1) as f64;
        let x = |byte: usize| LEFT + byte as f64 * scale;
        let y = TOP + row as f64 * ROW;
        let units = segment.units.iter().enumerate().map(|(unit, place)| {
            let start = unit * segment.unit_bytes;
            let end = ((unit + 1) * segment.unit_bytes).min(segment.bytes);
            // A unit in flight at the cut: when it reached the media among the others, or never.
            let landing = view.landing(&segment.name, unit);
            let order = landing.map(|landing| landing.order.map_or_else(|| "never".to_string(), |order| order.to_string()));
            let label = match landing.map(|landing| landing.order) {
                Some(Some(order)) => format!("unit {unit}: landed {}", ordinal(order)),
                _ => format!("unit {unit}: {}", place.short()),
            };
            // Landed units arrive one after another, in their order; a unit that never
            // landed shows last.
            let delay = landing.map(|landing| format!("animation-delay: {:.1}s", 0.6 * landing.order.unwrap_or(view.landings.len() + 1) as f64));
            html! {
                <g class={classes!("unit", place.class(), landing.is_some().then_some("arrival"))} data-file={segment.name.clone()} data-unit={unit.to_string()} data-state={place.class()}
                    data-landed-order={order} style={delay}>
                    <title>{ format!("{} unit {unit} (bytes {start}-{}): {}", segment.name, end - 1, place.words()) }</title>
                    <rect x={x(start).to_string()} y={(y + 14.0).to_string()} width={(x(end) - x(start) - 2.0).to_string()} height="40" rx="3" />
                    <text class="unit-label" x={(x(start) + 3.0).to_string()} y={(y + 10.0).to_string()}>{ label }</text>
                </g>
            }
        });
        let records = segment.records.iter().map(|record| html! {
            <g class={classes!("record", record.mark.class())} data-record={record.write.to_string()} data-state={record.mark.class()}
                data-start={record.start.to_string()} data-end={record.end.to_string()}>
                <title>{ format!("record {} at bytes {}-{}", record.write, record.start, record.end) }</title>
                <rect x={x(record.start).to_string()} y={(y + 24.0).to_string()} width={(x(record.end) - x(record.start) - 1.0).to_string()} height="20" />
                <text class="record-label" x={((x(record.start) + x(record.end)) / 2.0).to_string()} y={(y + 38.0).to_string()} text-anchor="middle">
                    { match record.mark { RecordMark::Stopped => format!("rec {} ✗", record.write), RecordMark::Accepted => format!("rec {} ✓", record.write), RecordMark::Skipped => format!("rec {} (flushed)", record.write), RecordMark::Unread => format!("rec {}", record.write) } }
                </text>
                <text class="offset" x={x(record.start).to_string()} y={(y + 68.0).to_string()} text-anchor="middle">{ record.start }</text>
            </g>
        });
        let last_end = segment.records.last().map(|record| record.end);
        let cursor = view.cursor.as_ref().filter(|cursor| cursor.segment == segment.name).map(|cursor| {
            let width = (x(cursor.end) - x(cursor.start)).max(3.0);
            html! {
                <g class={classes!("scan-cursor", if cursor.ok { "ok" } else { "fail" })} data-segment={cursor.segment.clone()} data-start={cursor.start.to_string()} data-end={cursor.end.to_string()}>
                    <rect x={(x(cursor.start) - 1.0).to_string()} y={(y + 12.0).to_string()} width={width.to_string()} height="44" rx="4" />
                    <text class="cursor-label" x={x(cursor.start).to_string()} y={(y + 80.0).to_string()}>{ format!("scan: {}{}", cursor.what, if cursor.ok { "" } else { " NO" }) }</text>
                </g>
            }
        });
        html! {
            <g class="segment-row" data-file={segment.name.clone()}>
                <text class="segment-name" x="4" y={(y + 40.0).to_string()}>{ segment.name.clone() }</text>
                { for units }
                { for records }
                if let Some(end) = last_end {
                    <text class="offset" x={x(end).to_string()} y={(y + 68.0).to_string()} text-anchor="middle">{ end }</text>
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
            <svg viewBox={format!("0 0 {WIDTH} {height}")} aria-hidden="true">
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
    landed.sort_by_key(|landing| landing.order);
    landed.iter().map(|landing| format!("{}:{}", landing.segment, landing.unit)).collect::<Vec<_>>().join(" ")
}
