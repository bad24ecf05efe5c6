//! The drawings of Parts 13 and 14: the batches in flight as lanes on a time axis, the
//! Postgres ring's slot tables, and the write path from append to data objects. They
//! take values computed in `model::remote` and draw them (see `figures/mod.rs` for the
//! conventions: `class="figure"`, `data-figure`, an `aria-label`, data per drawn thing).

use std::rc::Rc;

use walab_core::ring::{RingGeometry, SlotState};
use walab_core::sim::remote::{RemoteBackend, RemoteRun};
use walab_core::time::Nanos;
use yew::prelude::*;

use crate::model::remote::{batch_state, batches_drawn, counts_at};
use crate::url_state::format_millis;

#[derive(Properties, PartialEq)]
pub struct BatchLanesProps {
    pub run: Rc<RemoteRun>,
    pub now: Nanos,
    /// What a batch's request is called, when not the backend's PUT or INSERT (a live
    /// file WAL's fdatasync); such lanes draw no fence read.
    #[prop_or_default]
    pub request: Option<AttrValue>,
    /// Draw at most this many lanes, the window around the playhead (a projector).
    #[prop_or_default]
    pub lanes_max: Option<usize>,
    /// Clicking the lanes at a millisecond makes node B take over there (Part 13); Enter
    /// takes over at the playhead, Delete takes no takeover.
    #[prop_or_default]
    pub on_take: Option<Callback<Option<Nanos>>>,
    /// What the figure says after a takeover was chosen in it, from a polite live region.
    #[prop_or_default]
    pub announce: AttrValue,
}

/// The lanes a window of `max` shows at `now`: from two before the first batch not yet
/// acknowledged, so the batches in flight and those held back are on screen.
fn lane_window(batches: &[walab_core::sim::remote::BatchRow], now: Nanos, max: Option<usize>) -> std::ops::Range<usize> {
    let Some(max) = max.filter(|max| *max < batches.len()) else { return 0..batches.len() };
    let open = batches.iter().position(|b| b.formed <= now && b.acked.is_none_or(|acked| acked > now));
    let formed = batches.iter().filter(|b| b.formed <= now).count();
    let first = open.unwrap_or(formed.saturating_sub(max)).saturating_sub(2).min(batches.len() - max);
    first..first + max
}

/// The lanes a phone shows: the window around the playhead.
const PHONE_LANES: usize = 8;
/// The widest the figures are laid out; a wider column scales them up (a projector).
const WIDTH: f64 = 760.0;
/// The narrowest: a phone's column is about 350 px.
const WIDTH_MIN: f64 = 300.0;
const LABEL_W: f64 = 118.0;
const ROW_H: f64 = 22.0;
/// An estimate of a legend character's width at its 12.5 px, for wrapping the legend.
const LEGEND_CHAR_W: f64 = 7.0;

/// The width the figure's column has, in CSS pixels, measured after the first render and
/// on every resize: the drawing is laid out at that width, so its text keeps its size on
/// a phone instead of shrinking with the column or scrolling sideways.
#[hook]
fn use_layout_width(node: NodeRef) -> f64 {
    let width = use_state_eq(|| WIDTH);
    {
        let width = width.clone();
        use_effect_with((), move |_| {
            let measure = move || {
                if let Some(element) = node.cast::<web_sys::Element>() {
                    // The frame's padding (0.3rem each side) is not the drawing's.
                    let measured = f64::from(element.client_width()) - 10.0;
                    if measured > 0.0 {
                        width.set(measured.clamp(WIDTH_MIN, WIDTH).floor());
                    }
                }
            };
            measure.clone()();
            let listener = web_sys::window().map(|window| gloo_events::EventListener::new(&window, "resize", move |_| measure()));
            move || drop(listener)
        });
    }
    *width
}

/// Legend entries flowed into rows that fit `width`: each entry's x and row.
fn legend_rows(entries: &[(f64, &str)], width: f64) -> Vec<(f64, usize)> {
    let mut placed = Vec::new();
    let (mut x, mut row) = (0.0, 0);
    for (swatch, text) in entries {
        let item = swatch + 4.0 + text.chars().count() as f64 * LEGEND_CHAR_W;
        if x > 0.0 && x + item > width - 8.0 {
            x = 0.0;
            row += 1;
        }
        placed.push((x, row));
        x += item + 18.0;
    }
    placed
}

/// One lane per batch: formed (thin), in flight (solid), stored but held back (striped),
/// acknowledged (tick), with a playhead; a takeover draws its instant and the epochs.
#[component]
pub fn BatchLanes(props: &BatchLanesProps) -> Html {
    let node = use_node_ref();
    let width = use_layout_width(node.clone());
    let run = &props.run;
    let all = batches_drawn(run);
    // A projector's or a phone's window of lanes, its time axis zoomed to their lifetimes.
    let window = lane_window(all, props.now, props.lanes_max.or((width < 560.0).then_some(PHONE_LANES)));
    let batches = &all[window.clone()];
    let zoomed = window.len() < all.len();
    let lifetime = |b: &walab_core::sim::remote::BatchRow| [b.acked, b.stored, b.answered, b.checked, b.sent, Some(b.formed)];
    let end = batches.iter().flat_map(lifetime).flatten().max().unwrap_or(Nanos(1)).max(Nanos(1));
    let start = if zoomed { batches.iter().map(|b| b.formed).min().unwrap_or(Nanos::ZERO).min(end) } else { Nanos::ZERO };
    // A zoomed axis ends no later than as far past the playhead as it starts before it: a
    // batch that waits long (for its slot) does not squeeze the others to a corner.
    let end = if zoomed && props.now > start { end.min(Nanos(props.now.0 + (props.now.0 - start.0))) } else { end };
    let length = (end.0 - start.0).max(1) as f64;
    let span = width - LABEL_W - 12.0;
    let x = |t: Nanos| LABEL_W + span * (t.0.saturating_sub(start.0) as f64 / length).min(1.0);
    let (on_click, on_key) = match &props.on_take {
        Some(on_take) => {
            let (take, svg) = (on_take.clone(), node.clone());
            let on_click = Callback::from(move |event: MouseEvent| {
                let Some(element) = svg.cast::<web_sys::Element>().and_then(|div| div.query_selector("svg").ok().flatten()) else { return };
                let rect = element.get_bounding_client_rect();
                if rect.width() <= 0.0 {
                    return;
                }
                let svg_x = (f64::from(event.client_x()) - rect.left()) * width / rect.width();
                let fraction = ((svg_x - LABEL_W) / span).clamp(0.0, 1.0);
                // To a tenth of a millisecond, as the link writes it.
                let tenths = ((start.0 as f64 + fraction * length) / 100_000.0).round() as u64;
                take.emit(Some(Nanos(tenths * 100_000)));
            });
            let (take, now) = (on_take.clone(), props.now);
            let on_key = Callback::from(move |event: KeyboardEvent| match event.key().as_str() {
                "Enter" | " " => {
                    event.prevent_default();
                    event.stop_propagation();
                    take.emit(Some(Nanos(now.0 / 100_000 * 100_000)));
                }
                "Delete" | "Backspace" => {
                    event.prevent_default();
                    event.stop_propagation();
                    take.emit(None);
                }
                _ => {}
            });
            (Some(on_click), Some(on_key))
        }
        None => (None, None),
    };
    // Row 1 the axis, row 2 the takeover's label, then the lanes, then the legend.
    let top = if run.takeover.is_some() { 50.0 } else { 30.0 };
    let s3 = run.backend == RemoteBackend::S3 && props.request.is_none();
    let mut legend_entries: Vec<(f64, &str, Html)> = vec![
        (14.0, "in flight", html! { <rect class="flight" x="0" y="-9" width="14" height="9" /> }),
        (14.0, "stored, not acknowledged", html! { <rect class="held" x="0" y="-9" width="14" height="9" /> }),
        (3.0, "acknowledged", html! { <rect class="ack" x="0" y="-11" width="3" height="13" /> }),
        (14.0, "waiting to be sent", html! { <rect class="wait" x="0" y="-6" width="14" height="4" /> }),
    ];
    // A fence read is drawn only where the run made one (fence=read, with a takeover).
    if s3 && run.batches.iter().any(|batch| batch.checked.is_some_and(|checked| Some(checked) > batch.stored)) {
        legend_entries.insert(1, (14.0, "fence read", html! { <rect class="check" x="0" y="-9" width="14" height="9" /> }));
    }
    let sizes: Vec<(f64, &str)> = legend_entries.iter().map(|(swatch, text, _)| (*swatch, *text)).collect();
    let placed = legend_rows(&sizes, width);
    let legend_rows_count = placed.iter().map(|(_, row)| row + 1).max().unwrap_or(1);
    let lanes_bottom = top + batches.len() as f64 * ROW_H;
    let height = lanes_bottom + 10.0 + legend_rows_count as f64 * 18.0;
    let put = match &props.request {
        Some(request) => request.to_string(),
        None if s3 => "PUT".to_string(),
        None => "INSERT".to_string(),
    };
    let now = props.now;
    let rows = batches.iter().enumerate().map(|(index, batch)| {
        let y = top + index as f64 * ROW_H;
        let state = batch_state(run, batch, now);
        let clip = |t: Nanos| x(t.min(now));
        let sent = batch.sent.unwrap_or(batch.formed);
        let answered = batch.answered.or(batch.stored);
        let waiting = (batch.formed < sent && batch.formed <= now).then(|| {
            html! { <rect class="wait" x={format!("{:.1}", x(batch.formed))} y={format!("{:.1}", y + 8.0)} width={format!("{:.1}", (clip(sent) - x(batch.formed)).max(0.0))} height="4" /> }
        });
        let flight_end = answered.unwrap_or(end);
        let flight = (sent <= now && batch.sent.is_some()).then(|| {
            html! { <rect class="flight" x={format!("{:.1}", x(sent))} y={format!("{:.1}", y + 4.0)} width={format!("{:.1}", (clip(flight_end) - x(sent)).max(1.5))} height="12" rx="2" /> }
        });
        // S3: from the PUT's answer to the fence read's, then held until acknowledged.
        let check = batch.stored.filter(|&stored| stored <= now).and_then(|stored| {
            let checked = batch.checked?;
            Some(html! { <rect class="check" x={format!("{:.1}", x(stored))} y={format!("{:.1}", y + 4.0)} width={format!("{:.1}", (clip(checked) - x(stored)).max(0.0))} height="12" /> })
        });
        let held_from = batch.checked.or(batch.stored);
        let held = held_from.filter(|&from| from <= now).map(|from| {
            let until = batch.acked.unwrap_or(end);
            html! { <rect class="held" x={format!("{:.1}", x(from))} y={format!("{:.1}", y + 4.0)} width={format!("{:.1}", (clip(until) - x(from)).max(0.0))} height="12" /> }
        });
        let ack = batch.acked.filter(|&acked| acked <= now).map(|acked| {
            html! { <rect class="ack" x={format!("{:.1}", x(acked) - 1.5)} y={format!("{:.1}", y + 1.0)} width="3" height="18" /> }
        });
        let label = format!("batch {}: {} rec", batch.batch, batch.records);
        html! {
            <g class={classes!("batch", state.name())} data-batch={batch.batch.to_string()} data-state={state.name()}
                data-records={batch.records.to_string()} data-epoch={batch.epoch.to_string()}
                data-sent={batch.sent.map(format_millis)} data-stored={batch.stored.map(format_millis)}
                data-acked={batch.acked.map(format_millis)} data-checked={batch.checked.map(format_millis)}>
                <title>{ format!("batch {}: {}, {put} {}, {}", batch.batch, crate::format::count(batch.records, "record"), batch.request.unwrap_or(0), state.name()) }</title>
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
        let text = format!("node B claims epoch {}", takeover.new_epoch);
        // Right of the line if it fits, else left of it.
        let text_w = text.chars().count() as f64 * 8.0;
        let (text_x, anchor) = if tx + 4.0 + text_w <= width - 4.0 { (tx + 4.0, "start") } else { (tx - 4.0, "end") };
        html! {
            <g class="takeover" data-at={format_millis(takeover.at)}>
                <line x1={format!("{tx:.1}")} x2={format!("{tx:.1}")} y1={format!("{}", top - 8.0)} y2={format!("{lanes_bottom:.1}")} />
                <text x={format!("{text_x:.1}")} y={format!("{}", top - 14.0)} text-anchor={anchor}>{ text }</text>
            </g>
        }
    });
    let px = x(now);
    let (in_flight, held, acked) = counts_at(run, now);
    let mut label = format!(
        "{} drawn; at {} {in_flight} in flight, {held} stored but not acknowledged, {} acknowledged",
        crate::format::count(batches.len(), "batch"),
        crate::format::ms(now),
        crate::format::count(acked, "record")
    );
    if props.on_take.is_some() {
        label.push_str("; click a moment to make node B take the node over then, or press Enter to take it over at the playhead (Delete: no takeover)");
    }
    let takes = props.on_take.is_some();
    let legend = legend_entries.into_iter().zip(placed).map(|((swatch, text, key), (lx, row))| {
        html! {
            <g transform={format!("translate({lx:.0} {:.0})", row as f64 * 18.0)}>
                { key }<text x={format!("{:.0}", swatch + 4.0)} y="0">{ text }</text>
            </g>
        }
    });
    html! {
        <div class={classes!("figure", "remote-lanes", takes.then_some("takes-over"))} data-figure="remote-batches" aria-label={label.clone()}
            role={if takes { "group" } else { "img" }} tabindex={takes.then_some("0")} ref={node} onclick={on_click} onkeydown={on_key}
            data-in-flight={in_flight.to_string()} data-held={held.to_string()} data-acked={acked.to_string()}
            data-lanes={format!("{}-{}", window.start + 1, window.end)}>
            <svg viewBox={format!("0 0 {width:.0} {height:.0}")} aria-hidden="true">
                <text class="axis" x={LABEL_W.to_string()} y="14">{ format!("{} ms", if zoomed { format!("{:.1}", start.as_millis_f64()) } else { "0".into() }) }</text>
                <text class="axis" x={format!("{:.0}", width - 8.0)} y="14" text-anchor="end">{ format!("{:.1} ms", end.as_millis_f64()) }</text>
                { for rows }
                { takeover.unwrap_or_default() }
                <line class="playhead" x1="0" x2="0" style={format!("transform:translateX({px:.1}px)")} y1="18" y2={format!("{lanes_bottom:.1}")} />
                <g class="legend" transform={format!("translate(4 {:.0})", lanes_bottom + 22.0)}>{ for legend }</g>
            </svg>
            if takes { <p class="visually-hidden" aria-live="polite">{ props.announce.clone() }</p> }
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
    /// What each slot holds, in words, for the slot the student clicks (or picks with
    /// the keys); empty: slots are not chosen.
    #[prop_or_default]
    pub slot_words: Vec<AttrValue>,
}

/// The slot a key moves the choice to, from `chosen` among `slots`.
fn slot_for_key(key: &str, chosen: Option<usize>, slots: usize) -> Option<usize> {
    let last = slots.checked_sub(1)?;
    match (key, chosen) {
        ("ArrowRight" | "ArrowDown", Some(at)) => Some((at + 1).min(last)),
        ("ArrowLeft" | "ArrowUp", Some(at)) => Some(at.saturating_sub(1)),
        ("ArrowRight" | "ArrowDown" | "ArrowLeft" | "ArrowUp", None) | ("Home", _) => Some(0),
        ("End", _) => Some(last),
        _ => None,
    }
}

/// The narrowest a slot box is drawn: "gen 12 ← head" fits.
const SLOT_W_MIN: f64 = 118.0;

/// Splits a sentence in two at the space nearest its middle, for a narrow column.
fn two_lines(text: &str) -> (String, String) {
    let middle = text.len() / 2;
    let split = text
        .char_indices()
        .filter(|(_, c)| *c == ' ')
        .map(|(index, _)| index)
        .min_by_key(|index| index.abs_diff(middle));
    match split {
        Some(index) => (text[..index].to_string(), text[index + 1..].to_string()),
        None => (text.to_string(), String::new()),
    }
}

/// The slot tables, each holding one generation; the head's slot and a waiting batch.
/// On a narrow column the slots wrap into rows and the sentences into two lines.
#[component]
pub fn RingFigure(props: &RingFigureProps) -> Html {
    let node = use_node_ref();
    let width = use_layout_width(node.clone());
    let chosen = use_state_eq(|| None::<usize>);
    let states = props.geometry.slots(props.trim_offset, props.head);
    let choosing = !props.slot_words.is_empty();
    let chosen_slot = (*chosen).filter(|slot| *slot < states.len());
    let count = states.len().max(1);
    // As many slots a row as fit, balanced over the rows (8 slots: 4 and 4, not 5 and 3).
    let fit = (((width - 8.0) / (SLOT_W_MIN + 8.0)).floor() as usize).clamp(1, count);
    let per_row = count.div_ceil(count.div_ceil(fit));
    let box_w = ((width - 8.0) / per_row as f64 - 8.0).min(150.0);
    let narrow = width < 560.0;
    let line_h = 17.0;
    let heading = format!("walab_… slot tables: generation g lives in slot g % {}", props.geometry.segments);
    let heading_lines: Vec<String> = if narrow { let (a, b) = two_lines(&heading); vec![a, b] } else { vec![heading] };
    let slots_top = 8.0 + heading_lines.len() as f64 * line_h;
    let slot_rows = count.div_ceil(per_row);
    let slots_bottom = slots_top + slot_rows as f64 * 62.0;
    let place = |slot: usize| (8.0 + (slot % per_row) as f64 * (box_w + 8.0), slots_top + (slot / per_row) as f64 * 62.0);
    // The head's frame glides from slot to slot as the head moves (CSS), around the ring.
    let head = states.iter().position(|state| matches!(state, SlotState::Head { .. })).map(|slot| {
        let (x0, y0) = place(slot);
        html! { <rect class="head-frame" x="-3" y="-3" width={format!("{:.1}", box_w + 6.0)} height="60" rx="8" style={format!("transform:translate({x0:.1}px,{y0:.1}px)")} /> }
    });
    let slots = states.iter().enumerate().map(|(slot, state)| {
        let (x0, y0) = place(slot);
        let (name, text) = match state {
            SlotState::Free => ("free", "free".to_string()),
            SlotState::Kept { generation } => ("kept", format!("gen {generation}")),
            SlotState::Head { generation } => ("head", format!("gen {generation} ← head")),
        };
        let wanted = props.waiting.is_some_and(|(_, waiting_slot)| waiting_slot == slot as u64);
        let is_chosen = chosen_slot == Some(slot);
        let onclick = choosing.then(|| {
            let chosen = chosen.clone();
            Callback::from(move |_: MouseEvent| chosen.set(Some(slot)))
        });
        html! {
            <g class={classes!("slot", name, wanted.then_some("wanted"), is_chosen.then_some("chosen"))} data-slot={slot.to_string()} data-state={name} {onclick}
                data-generation={match state { SlotState::Kept { generation } | SlotState::Head { generation } => Some(generation.to_string()), SlotState::Free => None }}>
                <rect x={format!("{x0:.1}")} y={format!("{y0:.1}")} width={format!("{box_w:.1}")} height="54" rx="6" />
                <text x={format!("{:.1}", x0 + 8.0)} y={format!("{:.1}", y0 + 20.0)}>{ format!("slot {slot}") }</text>
                <text class="slot-content" x={format!("{:.1}", x0 + 8.0)} y={format!("{:.1}", y0 + 42.0)}>{ text }</text>
            </g>
        }
    });
    let waiting_lines: Vec<String> = props
        .waiting
        .map(|(generation, slot)| {
            let text = format!("gen {generation} waits: slot {slot} still holds an untrimmed generation");
            if narrow { let (a, b) = two_lines(&text); vec![a, b] } else { vec![text] }
        })
        .unwrap_or_default();
    let waiting = waiting_lines.iter().enumerate().map(|(index, line)| {
        html! { <text class="waiting-note" x="8" y={format!("{:.1}", slots_bottom + 14.0 + index as f64 * line_h)}>{ line.clone() }</text> }
    });
    let height = slots_bottom + 8.0 + waiting_lines.len().max(1) as f64 * line_h;
    let heading = heading_lines.iter().enumerate().map(|(index, line)| {
        html! { <text class="axis" x="8" y={format!("{:.1}", 18.0 + index as f64 * line_h)}>{ line.clone() }</text> }
    });
    let label = format!(
        "{} slot tables; trim offset {}, head {}{}",
        states.len(),
        props.trim_offset,
        props.head,
        props.waiting.map_or(String::new(), |(g, s)| format!("; generation {g} waits for slot {s}"))
    );
    let slot_count = states.len();
    let on_key = choosing.then(|| {
        let chosen = chosen.clone();
        Callback::from(move |event: KeyboardEvent| {
            if let Some(slot) = slot_for_key(&event.key(), *chosen, slot_count) {
                event.prevent_default();
                event.stop_propagation();
                chosen.set(Some(slot));
            }
        })
    });
    let said = chosen_slot.and_then(|slot| props.slot_words.get(slot).cloned());
    let label = if choosing { format!("{label}; click a slot, or use the arrow keys, to see what it holds") } else { label };
    html! {
        <div class={classes!("figure", "remote-ring", choosing.then_some("chooses"))} data-figure="postgres-ring" aria-label={label}
            role={if choosing { "group" } else { "img" }} tabindex={choosing.then_some("0")} onkeydown={on_key} ref={node}
            data-trim-offset={props.trim_offset.to_string()} data-head={props.head.to_string()}
            data-waiting={props.waiting.map(|(g, _)| g.to_string())} data-chosen={chosen_slot.map(|slot| slot.to_string())}>
            <svg viewBox={format!("0 0 {width:.0} {height:.0}")} aria-hidden="true">
                { for heading }
                { for slots }
                { head.unwrap_or_default() }
                { for waiting }
            </svg>
            if choosing {
                <p class="slot-words" aria-live="polite">{ said.unwrap_or_else(|| AttrValue::from("Click a slot table to see what it holds.")) }</p>
            }
        </div>
    }
}

/// The steps of the write path, as places an append passes through.
pub const WRITE_PATH: [(&str, &str); 8] = [
    ("append", "A POST reaches the node that owns the stream."),
    ("offsets", "Under the stream's lock the record gets its offsets; the caller waits outside the lock."),
    ("cache + WAL", "The record enters the log cache (for tail reads) and the WAL (for durability)."),
    ("batch", "Records that arrive while uploads run gather into the next batch."),
    ("one PUT", "Each batch is one PUT of one object (or one committed INSERT)."),
    ("ack in order", "A record is acknowledged once its batch and every batch before it are stored."),
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
