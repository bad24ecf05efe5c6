//! A dropped commit trace on Part 5: a recorded run of any size, told and played.
//!
//! A short run (a power cut's, a quorum's, the tiny store's) plays whole in the lanes,
//! each step captioned from its events, with its outcome: what recovery found after the
//! cut. A long one (`walab bench --trace`, a hundred thousand writes) is told first by
//! its summary, computed from every write; its lanes show a window of a few hundred
//! writes around the playhead, which opens in the run's busiest moment. The strip above
//! them is the whole run: pressing, dragging or the arrow keys on it move the window.

use std::rc::Rc;

use walab_core::time::Nanos;
use walab_core::trace::Event;
use wasm_bindgen::JsCast;
use yew::prelude::*;

use super::commit::trace_lanes;
use super::dropzone::DropZone;
use super::ChapterProps;
use crate::model::captions::{id_runs, step_caption};
use crate::model::dropped::{DroppedTrace, LANE_WRITES_MAX};
use crate::charts::{bar_chart, Bar, BarChartProps};
use crate::format::{count, group_thousands};
use crate::layout::Scene;
use crate::player::{format_fixed_millis, player, PlayerAction, PlayerProps, PlayerState};
use crate::state::LabAction;

/// The caption of the step at the playhead, from the trace's events since the step
/// before (a binary search into the events, whatever the run's length).
fn caption(trace: &DroppedTrace, player: &PlayerState) -> AttrValue {
    let Some(at) = player.current_mark() else {
        return AttrValue::from("Before the first event: no write has arrived yet. Step forward, or press play.");
    };
    let previous = at.checked_sub(1).map(|before| player.marks[before]);
    AttrValue::from(step_caption(&trace.trace, previous, player.marks[at]))
}

/// What the truncation of a recording means, in words; nothing when it is whole.
fn truncation(trace: &DroppedTrace) -> Html {
    if !trace.truncated {
        return Html::default();
    }
    let summary = &trace.summary;
    // Markup, one string: cheaper than a tree of nodes (the page's size budget).
    super::markup_owned(format!("<p class=\"truncated-note\" role=\"note\" data-truncated=\"true\"><strong>This trace is truncated. </strong>\
        walab stops recording at {} events (its limit, events_max), and this run reached it {} ms in: \
        whatever the run did after that is not in the file. The summary and the lanes cover those first {} ms only{}.</p>",
        group_thousands(trace.events_max as u64), format_fixed_millis(trace.spans.end), format_fixed_millis(trace.spans.end),
        if summary.unanswered > 0 {
            format!("; the last {} in it have no OK recorded: their answer came after the recording stopped, which does not mean they were lost",
                count(summary.unanswered, "write"))
        } else { String::new() }))
}

/// The whole run in numbers: syncs a second, writes per sync, the waits.
fn summary(trace: &DroppedTrace) -> Html {
    let summary = &trace.summary;
    let bars = |buckets: &[(String, usize)]| Rc::new(buckets.iter().map(|(label, n)| Bar { label: label.clone(), value: *n as f64, color: (31, 95, 191) }).collect::<Vec<_>>());
    let busiest = summary.busiest.as_ref().map(|busiest| {
        let ms = (busiest.end.0 - busiest.start.0) as f64 / 1e6;
        format!("{}-{} ms: {} told OK in {ms:.0} ms ({} a second)", format_fixed_millis(busiest.start), format_fixed_millis(busiest.end),
            count(busiest.acked, "write"), group_thousands((busiest.acked as f64 / ms * 1e3) as u64))
    });
    let per_s = |n: usize, rate: f64| format!("{} ({} a second)", group_thousands(n as u64), group_thousands(rate as u64));
    let mut rows = vec![
        ("told OK", per_s(summary.acked, summary.acked_per_s())),
        ("syncs", per_s(summary.syncs, summary.syncs_per_s())),
        ("writes per sync", format!("{:.1} on average", summary.batch_mean())),
        ("arrival at the log to OK", format!("p50 {} ms · p99 {} ms · max {} ms", format_fixed_millis(summary.wait_p50), format_fixed_millis(summary.wait_p99), format_fixed_millis(summary.wait_max))),
    ];
    if summary.failed > 0 {
        rows.push(("told \"unknown\"", group_thousands(summary.failed as u64)));
    }
    rows.extend(busiest.map(|busiest| ("busiest moment", busiest)));
    html! {
        <div class="run-summary">
            { super::markup_owned(format!("<table class=\"summary whole-run\" data-syncs-per-s=\"{:.0}\" data-p50-ns=\"{}\" data-p99-ns=\"{}\" data-max-ns=\"{}\" data-acked=\"{}\">\
                <caption>The whole run: {} ms, {}</caption>{}</table>", summary.syncs_per_s(), summary.wait_p50.0, summary.wait_p99.0, summary.wait_max.0, summary.acked,
                format_fixed_millis(summary.duration), count(trace.writes, "write"),
                rows.into_iter().map(|(name, value)| format!("<tr><th>{name}</th><td class=\"num\">{value}</td></tr>")).collect::<String>())) }
            <div class="charts">
                { bar_chart(&BarChartProps { title: "syncs by writes carried".into(), y_label: "syncs".into(), bars: bars(&summary.batch_sizes), ..BarChartProps::default() }) }
                { bar_chart(&BarChartProps { title: "writes by wait (ms)".into(), y_label: "writes".into(), bars: bars(&summary.waits), ..BarChartProps::default() }) }
            </div>
        </div>
    }
}

/// The strip under the pointer (Yew listens at the page's root, so the event's current
/// target is not the strip).
fn strip_of(event: &PointerEvent) -> Option<web_sys::Element> {
    let target: web_sys::Element = event.target()?.dyn_into().ok()?;
    target.closest(".window-strip").ok().flatten()
}

/// Where the pointer is on the strip, as an instant of the run.
fn instant_at(event: &PointerEvent, trace: &DroppedTrace) -> Option<Nanos> {
    let strip = strip_of(event)?;
    let rect = strip.get_bounding_client_rect();
    let fraction = ((f64::from(event.client_x()) - rect.left()) / rect.width().max(1.0)).clamp(0.0, 1.0);
    // Display-only arithmetic: a place on the strip becomes a playhead position.
    Some(Nanos((fraction * trace.spans.end.0 as f64) as u64))
}

/// The whole run as a strip of its acknowledgements over time, the window drawn on it:
/// press, drag or use the arrows on it to move the window.
fn window_strip(trace: &Rc<DroppedTrace>, window: (Nanos, Nanos, u64, u64), now: Nanos, on_action: &Callback<LabAction>) -> Html {
    let end = trace.spans.end.0.max(1) as f64;
    let fraction = |t: Nanos| t.0 as f64 / end * 100.0;
    let (start, stop, first, last) = window;
    let slices = &trace.summary.slices;
    let most = slices.iter().copied().max().unwrap_or(1).max(1) as f64;
    let slice_ns = trace.summary.slice.0 as f64;
    let first_ns = trace.summary.first.0 as f64;
    let mut path = String::new();
    for (at, n) in slices.iter().enumerate() {
        let x = (first_ns + at as f64 * slice_ns) / end * 100.0;
        let height = *n as f64 / most * 36.0;
        path.push_str(&format!("M{x:.2} 40v-{height:.1}h{:.2}v{height:.1}z", slice_ns / end * 100.0));
    }
    let seek = |on_action: &Callback<LabAction>, at: Nanos| {
        on_action.emit(LabAction::Player(PlayerAction::Pause));
        on_action.emit(LabAction::Player(PlayerAction::Seek(at)));
    };
    let on_down = {
        let (trace, on_action) = (trace.clone(), on_action.clone());
        Callback::from(move |event: PointerEvent| {
            if let Some(strip) = strip_of(&event) {
                let _ = strip.set_pointer_capture(event.pointer_id());
            }
            if let Some(at) = instant_at(&event, &trace) {
                seek(&on_action, at);
            }
        })
    };
    let on_move = {
        let (trace, on_action) = (trace.clone(), on_action.clone());
        Callback::from(move |event: PointerEvent| {
            if event.buttons() & 1 == 1 {
                if let Some(at) = instant_at(&event, &trace) {
                    on_action.emit(LabAction::Player(PlayerAction::Seek(at)));
                }
            }
        })
    };
    let on_key = {
        let (on_action, run_end) = (on_action.clone(), trace.spans.end);
        let step = Nanos((run_end.0 / 100).max(1));
        Callback::from(move |event: KeyboardEvent| {
            let to = match event.key().as_str() {
                "ArrowRight" | "ArrowUp" => Nanos(now.0.saturating_add(step.0)),
                "ArrowLeft" | "ArrowDown" => Nanos(now.0.saturating_sub(step.0)),
                "PageUp" => Nanos(now.0.saturating_add(step.0 * 10)),
                "PageDown" => Nanos(now.0.saturating_sub(step.0 * 10)),
                "Home" => Nanos::ZERO,
                "End" => run_end,
                _ => return,
            };
            event.prevent_default();
            seek(&on_action, to.min(run_end));
        })
    };
    let words = format!("The lanes show writes {}-{} of {}, from {} to {} ms.", group_thousands(first), group_thousands(last),
        group_thousands(trace.writes as u64), format_fixed_millis(start), format_fixed_millis(stop));
    let busiest = trace.summary.busiest.as_ref().map(|busiest| html! {
        <rect class="busiest" x={format!("{:.2}", fraction(busiest.start))} y="0" width={format!("{:.2}", (fraction(busiest.end) - fraction(busiest.start)).max(0.4))} height="40" />
    });
    html! {
        <div class="window-strip-box">
            <p class="strip-title">{ format!("The whole run, {} ms: writes told OK over time. The lanes below zoom into the {} writes around the playhead; press or drag here, or use the arrows, to move them.",
                format_fixed_millis(trace.spans.end), LANE_WRITES_MAX) }</p>
            <div class="window-strip" role="slider" tabindex="0" aria-label="the window of writes the lanes show"
                aria-valuemin="0" aria-valuemax={format!("{:.1}", trace.spans.end.as_millis_f64())} aria-valuenow={format!("{:.1}", now.as_millis_f64())}
                aria-valuetext={words.clone()} data-first={first.to_string()} data-last={last.to_string()}
                onpointerdown={on_down} onpointermove={on_move} onkeydown={on_key}>
                <svg viewBox="0 0 100 40" preserveAspectRatio="none" aria-hidden="true">
                    { busiest.unwrap_or_default() }
                    <path class="acks" d={path} />
                    <rect class="window" x={format!("{:.2}", fraction(start))} y="0" width={format!("{:.2}", (fraction(stop) - fraction(start)).max(0.6))} height="40" />
                </svg>
            </div>
            <p class="window-line" aria-live="polite" data-start-ns={start.0.to_string()} data-end-ns={stop.0.to_string()}>{ words }</p>
        </div>
    }
}

/// What a power cut's recovery found, once the playhead has reached the cut.
fn recovery(trace: &DroppedTrace, now: Nanos) -> Html {
    let Some(cut) = trace.spans.power_cut else { return Html::default() };
    let found = trace.trace.events.iter().rev().find_map(|event| match &event.event {
        Event::Recovery { acknowledged, recovered, lost_acknowledged, stop } => Some((acknowledged, recovered, lost_acknowledged, stop)),
        _ => None,
    });
    if now < cut {
        return super::markup_owned(format!("<p class=\"recovery-report pending\" data-state=\"pending\">The power fails at {} ms. Which acknowledged writes will recovery find? Play on to the cut to see.</p>", format_fixed_millis(cut)));
    }
    let Some((acknowledged, recovered, lost, stop)) = found else {
        return super::markup_owned(format!("<p class=\"recovery-report\" data-state=\"cut\">The power failed at {} ms; this trace does not say what recovery found.</p>", format_fixed_millis(cut)));
    };
    let file = stop.file.map(|file| trace.trace.files.get(file as usize).map_or_else(|| format!("file {file}"), |file| file.name.clone()));
    let reason = match stop.reason.as_str() {
        "end" => "the end of what was written".to_string(),
        "checksum" => "a record whose checksum no longer matches".to_string(),
        "zero" => "zeroes, where no record was written".to_string(),
        other => format!("a record it rejects ({other})"),
    };
    let stop_words = match file {
        Some(file) => format!("The scan of the log stopped at {file}, byte {}: {reason}.", stop.offset),
        None => "No log segment was left to scan.".to_string(),
    };
    let extra = recovered.iter().filter(|id| !acknowledged.contains(id)).count();
    // Markup, one string; the file's own words (its names) escaped.
    super::markup_owned(format!("<div class=\"recovery-report\" data-state=\"found\" data-lost=\"{}\" data-recovered=\"{}\"><p class=\"verdict\">\
        The power failed at {} ms, with {} told OK. Recovery found {} of them{}.</p><p class=\"scan-stop\">{}{}</p></div>",
        lost.len(), recovered.len(), format_fixed_millis(cut), count(acknowledged.len(), "write"), recovered.len() - extra,
        if lost.is_empty() { ": no acknowledged write was lost".to_string() } else { format!("; LOST, although told OK: {}", id_runs(lost)) },
        if extra > 0 { format!("It also found {} never told OK (the OK would have come after the sync that was running). ", count(extra, "write")) } else { String::new() },
        super::escape(&stop_words)))
}

/// A dropped trace file, told by its summary and drawn in the lanes.
pub fn dropped_view(trace: &Rc<DroppedTrace>, props: &ChapterProps) -> Html {
    let now = props.player.now;
    let on_player = props.on_action.reform(LabAction::Player);
    let on_close = props.on_action.reform(|_: MouseEvent| LabAction::CloseTrace);
    let acked = trace.spans.writes.iter().filter(|write| write.ack.is_some_and(|ack| ack <= now)).count();
    let window = Rc::new(trace.window_at(now));
    let long = trace.spans.writes.len() > LANE_WRITES_MAX;
    let first_last = (window.writes.first().map_or(0, |write| write.id), window.writes.last().map_or(0, |write| write.id));
    let strip = long.then(|| window_strip(trace, (window.start, window.end, first_last.0, first_last.1), now, &props.on_action));
    let notes: Vec<String> = trace.trace.events.iter().take(2_000).filter_map(|event| match &event.event {
        Event::Note { text } => Some(text.clone()),
        _ => None,
    }).take(1).collect();
    html! {
        <div class="dropped" data-file={trace.file_name.clone()} data-writes={trace.writes.to_string()} data-truncated={trace.truncated.to_string()}>
            <p class="headline">{ format!("{}: scenario {}, policy {}, {}, {} events", trace.file_name, trace.scenario, trace.policy, count(trace.writes, "write"), group_thousands(trace.events as u64)) }
                { " " }<button class="close-trace" onclick={on_close}>{ "close the file" }</button></p>
            { super::markup(super::LINK_NOTE) }
            if let Some(note) = notes.first() { <p class="trace-note">{ note.clone() }</p> }
            { truncation(trace) }
            if long { { summary(trace) } }
            { strip.unwrap_or_default() }
            <Scene name="dropped-trace" title="Your run, step by step"
                controls={player(&PlayerProps { state: props.player.clone(), on_action: on_player, caption: Some(caption(trace, &props.player)), ..PlayerProps::default() })}
                figure={trace_lanes(window, now, trace.spans.power_cut)}
                outcome={html! { <>
                    { recovery(trace, now) }
                    { super::markup_owned(format!("{}<p class=\"acked-line\" data-acked=\"{acked}\">{} acknowledged at the playhead.</p>",
                        if trace.spans.power_cut.is_some() { String::new() } else {
                            format!("<p class=\"run-outcome\" data-acked=\"{}\">The run: {} told OK by {} (writes per sync {:.1}); from arrival at the log to OK: p50 {} ms, p99 {} ms, max {} ms.</p>",
                                trace.summary.acked, count(trace.summary.acked, "write"), count(trace.summary.syncs, "sync"), trace.summary.batch_mean(),
                                format_fixed_millis(trace.summary.wait_p50), format_fixed_millis(trace.summary.wait_p99), format_fixed_millis(trace.summary.wait_max))
                        }, count(acked, "write"))) }
                </> }}>
                { super::markup_owned(format!("<div class=\"prose\"><p>Each lane is one write, from its arrival to its OK; the bars above are the syncs, B for a batch of the log. \
                    Step with the arrows: the caption says what each event did.</p>{}</div>", trace.spans.power_cut.map_or(String::new(), |cut| format!(
                    "<p class=\"cut-words\">The red line is the power cut at {} ms: the page cache and the drive's cache are gone, and recovery scans the log for what reached the media. \
                    Under it, the report says which writes told OK it found.</p>", format_fixed_millis(cut))))) }
            </Scene>
            <DropZone dropped={props.dropped.clone()} on_action={props.on_action.clone()} />
        </div>
    }
}
