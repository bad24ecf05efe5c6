//! The drawings of Parts 13 and 14: the bulks in flight as lanes on a time axis, the
//! Postgres ring's slot tables, and the write path from append to data objects. They
//! take values computed in `benches::remote` and draw them (see `figures/mod.rs` for the
//! conventions: `class="figure"`, `data-figure`, an `aria-label`, data per drawn thing).

use std::rc::Rc;

use walab_core::ring::{RingGeometry, SlotState};
use walab_core::sim::remote::{RemoteBackend, RemoteRun};
use walab_core::time::Nanos;
use yew::prelude::*;

use crate::benches::remote::{bulk_state, bulks_drawn, counts_at};
use crate::url_state::format_millis;

#[derive(Properties, PartialEq)]
pub struct BulkLanesProps {
    pub run: Rc<RemoteRun>,
    pub now: Nanos,
}

const WIDTH: f64 = 760.0;
const LABEL_W: f64 = 118.0;
const ROW_H: f64 = 22.0;
const TOP: f64 = 34.0;

/// One lane per bulk: formed (thin), in flight (solid), stored but held back (striped),
/// acknowledged (tick), with a playhead; a takeover draws its instant and the epochs.
#[component]
pub fn BulkLanes(props: &BulkLanesProps) -> Html {
    let run = &props.run;
    let bulks = bulks_drawn(run);
    let end = bulks
        .iter()
        .flat_map(|b| [b.acked, b.stored, b.answered, b.checked, b.sent, Some(b.formed)])
        .flatten()
        .max()
        .unwrap_or(Nanos(1))
        .max(Nanos(1));
    let span = WIDTH - LABEL_W - 12.0;
    let x = |t: Nanos| LABEL_W + span * (t.0 as f64 / end.0 as f64).min(1.0);
    let height = TOP + bulks.len() as f64 * ROW_H + 26.0;
    let put = if run.backend == RemoteBackend::S3 { "PUT" } else { "INSERT" };
    let now = props.now;
    let rows = bulks.iter().enumerate().map(|(index, bulk)| {
        let y = TOP + index as f64 * ROW_H;
        let state = bulk_state(run, bulk, now);
        let clip = |t: Nanos| x(t.min(now));
        let sent = bulk.sent.unwrap_or(bulk.formed);
        let answered = bulk.answered.or(bulk.stored);
        let waiting = (bulk.formed < sent && bulk.formed <= now).then(|| {
            html! { <rect class="wait" x={format!("{:.1}", x(bulk.formed))} y={format!("{:.1}", y + 8.0)} width={format!("{:.1}", (clip(sent) - x(bulk.formed)).max(0.0))} height="4" /> }
        });
        let flight_end = answered.unwrap_or(end);
        let flight = (sent <= now && bulk.sent.is_some()).then(|| {
            html! { <rect class="flight" x={format!("{:.1}", x(sent))} y={format!("{:.1}", y + 4.0)} width={format!("{:.1}", (clip(flight_end) - x(sent)).max(1.5))} height="12" rx="2" /> }
        });
        // S3: from the PUT's answer to the fence read's, then held until acknowledged.
        let check = bulk.stored.filter(|&stored| stored <= now).and_then(|stored| {
            let checked = bulk.checked?;
            Some(html! { <rect class="check" x={format!("{:.1}", x(stored))} y={format!("{:.1}", y + 4.0)} width={format!("{:.1}", (clip(checked) - x(stored)).max(0.0))} height="12" /> })
        });
        let held_from = bulk.checked.or(bulk.stored);
        let held = held_from.filter(|&from| from <= now).map(|from| {
            let until = bulk.acked.unwrap_or(end);
            html! { <rect class="held" x={format!("{:.1}", x(from))} y={format!("{:.1}", y + 4.0)} width={format!("{:.1}", (clip(until) - x(from)).max(0.0))} height="12" /> }
        });
        let ack = bulk.acked.filter(|&acked| acked <= now).map(|acked| {
            html! { <rect class="ack" x={format!("{:.1}", x(acked) - 1.5)} y={format!("{:.1}", y + 1.0)} width="3" height="18" /> }
        });
        let label = format!("bulk {}: {} rec", bulk.bulk, bulk.records);
        html! {
            <g class={classes!("bulk", state.name())} data-bulk={bulk.bulk.to_string()} data-state={state.name()}
                data-records={bulk.records.to_string()} data-epoch={bulk.epoch.to_string()}
                data-sent={bulk.sent.map(|t| format_millis(t))} data-stored={bulk.stored.map(|t| format_millis(t))}
                data-acked={bulk.acked.map(|t| format_millis(t))} data-checked={bulk.checked.map(|t| format_millis(t))}>
                <title>{ format!("bulk {}: {} records, {put} {}, {}", bulk.bulk, bulk.records, bulk.request.unwrap_or(0), state.name()) }</title>
                <text class="lane-label" x="4" y={format!("{:.1}", y + 15.0)}>{ label }</text>
                { waiting.unwrap_or_default() }
                { flight.unwrap_or_default() }
                { check.unwrap_or_default() }
                { held.unwrap_or_default() }
                { ack.unwrap_or_default() }
            </g>
        }
    });
    let takeover = run.takeover.as_ref().filter(|t| t.at <= now).map(|takeover| {
        let tx = x(takeover.at);
        html! {
            <g class="takeover" data-at={format_millis(takeover.at)}>
                <line x1={format!("{tx:.1}")} x2={format!("{tx:.1}")} y1={format!("{}", TOP - 6.0)} y2={format!("{:.1}", height - 20.0)} />
                <text x={format!("{:.1}", (tx + 4.0).min(WIDTH - 260.0))} y={format!("{}", TOP - 14.0)}>{ format!("B claims epoch {}", takeover.new_epoch) }</text>
            </g>
        }
    });
    let px = x(now);
    let (in_flight, held, acked) = counts_at(run, now);
    let label = format!(
        "{} bulks drawn; at {} ms {in_flight} in flight, {held} stored but not acknowledged, {acked} records acknowledged",
        bulks.len(),
        format_millis(now)
    );
    html! {
        <div class="figure remote-lanes" data-figure="remote-bulks" aria-label={label.clone()} role="img"
            data-in-flight={in_flight.to_string()} data-held={held.to_string()} data-acked={acked.to_string()}>
            <svg viewBox={format!("0 0 {WIDTH} {height:.0}")} aria-hidden="true">
                <text class="axis" x={LABEL_W.to_string()} y="16">{ "0 ms" }</text>
                <text class="axis" x={format!("{:.0}", WIDTH - 8.0)} y="16" text-anchor="end">{ format!("{} ms", format_millis(end)) }</text>
                { for rows }
                { takeover.unwrap_or_default() }
                <line class="playhead" x1={format!("{px:.1}")} x2={format!("{px:.1}")} y1="20" y2={format!("{:.1}", height - 20.0)} />
                <g class="legend" transform={format!("translate(4 {:.0})", height - 8.0)}>
                    <rect class="flight" x="0" y="-9" width="14" height="9" /><text x="18" y="0">{ "in flight" }</text>
                    <rect class="held" x="92" y="-9" width="14" height="9" /><text x="110" y="0">{ "stored, not acknowledged" }</text>
                    <rect class="ack" x="296" y="-11" width="3" height="13" /><text x="304" y="0">{ "acknowledged" }</text>
                    <rect class="wait" x="414" y="-6" width="14" height="4" /><text x="432" y="0">{ "waiting to be sent" }</text>
                    if run.backend == RemoteBackend::S3 {
                        <rect class="check" x="580" y="-9" width="14" height="9" /><text x="598" y="0">{ "fence read" }</text>
                    }
                </g>
            </svg>
        </div>
    }
}

#[derive(Properties, PartialEq)]
pub struct RingFigureProps {
    pub geometry: RingGeometry,
    pub trim_offset: u64,
    pub head: u64,
    /// A batch waiting for its slot: (generation, slot).
    pub waiting: Option<(u64, u64)>,
}

/// The slot tables, each holding one generation; the head's slot and a waiting batch.
#[component]
pub fn RingFigure(props: &RingFigureProps) -> Html {
    let states = props.geometry.slots(props.trim_offset, props.head);
    let count = states.len().max(1);
    let box_w = ((WIDTH - 16.0) / count as f64 - 8.0).min(150.0);
    let slots = states.iter().enumerate().map(|(slot, state)| {
        let x0 = 8.0 + slot as f64 * (box_w + 8.0);
        let (name, text) = match state {
            SlotState::Free => ("free", "free".to_string()),
            SlotState::Kept { generation } => ("kept", format!("gen {generation}")),
            SlotState::Head { generation } => ("head", format!("gen {generation} ← head")),
        };
        let wanted = props.waiting.is_some_and(|(_, waiting_slot)| waiting_slot == slot as u64);
        html! {
            <g class={classes!("slot", name, wanted.then_some("wanted"))} data-slot={slot.to_string()} data-state={name}
                data-generation={match state { SlotState::Kept { generation } | SlotState::Head { generation } => Some(generation.to_string()), SlotState::Free => None }}>
                <rect x={format!("{x0:.1}")} y="30" width={format!("{box_w:.1}")} height="54" rx="6" />
                <text x={format!("{:.1}", x0 + 8.0)} y="50">{ format!("slot {slot}") }</text>
                <text class="slot-content" x={format!("{:.1}", x0 + 8.0)} y="72">{ text }</text>
            </g>
        }
    });
    let waiting = props.waiting.map(|(generation, slot)| {
        html! { <text class="waiting-note" x="8" y="106">{ format!("gen {generation} waits: slot {slot} still holds an untrimmed generation") }</text> }
    });
    let label = format!(
        "{} slot tables; trim offset {}, head {}{}",
        states.len(),
        props.trim_offset,
        props.head,
        props.waiting.map_or(String::new(), |(g, s)| format!("; generation {g} waits for slot {s}"))
    );
    html! {
        <div class="figure remote-ring" data-figure="postgres-ring" aria-label={label} role="img"
            data-trim-offset={props.trim_offset.to_string()} data-head={props.head.to_string()}
            data-waiting={props.waiting.map(|(g, _)| g.to_string())}>
            <svg viewBox={format!("0 0 {WIDTH} 116")} aria-hidden="true">
                <text class="axis" x="8" y="18">{ format!("pico_wal_… slot tables: generation g lives in slot g % {}", props.geometry.segments) }</text>
                { for slots }
                { waiting.unwrap_or_default() }
            </svg>
        </div>
    }
}

/// The steps of the write path, as places an append passes through.
pub const WRITE_PATH: [(&str, &str); 8] = [
    ("append", "A POST reaches the node that owns the stream."),
    ("offsets", "Under the stream's lock the record gets its offsets; the caller waits outside the lock."),
    ("cache + WAL", "The record enters the log cache (for tail reads) and the WAL (for durability)."),
    ("bulk", "Records that arrive while uploads run gather into the next bulk."),
    ("one PUT", "Each bulk is one PUT of one object (or one committed INSERT)."),
    ("ack in order", "A record is acknowledged once its bulk and every bulk before it are stored."),
    ("upload", "In the background, sealed cache blocks become stream-set objects, big per-stream runs stream objects; their ids are reserved first, then one atomic commit advances every stream."),
    ("delete", "The WAL objects the commit covers hold nothing unique any more and are deleted."),
];

#[derive(Properties, PartialEq)]
pub struct WritePathProps {
    /// The step to highlight (0-based), if any.
    #[prop_or_default]
    pub here: Option<usize>,
}

#[component]
pub fn WritePathFigure(props: &WritePathProps) -> Html {
    let steps = WRITE_PATH.iter().enumerate().map(|(index, (name, text))| {
        let here = props.here == Some(index);
        html! {
            <li class={classes!("station", here.then_some("here"))} data-step={index.to_string()} data-station={*name}>
                <span class="station-name">{ *name }</span><span class="station-text">{ *text }</span>
            </li>
        }
    });
    html! {
        <ol class="figure remote-path" data-figure="remote-write-path" aria-label="the write path of the WAL with no local disk, in eight steps">
            { for steps }
        </ol>
    }
}
