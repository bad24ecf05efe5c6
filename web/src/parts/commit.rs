//! Part 5: group commit, on the core's simulator.

use std::rc::Rc;

use walab_core::time::Nanos;
use wasm_bindgen::JsCast;
use yew::prelude::*;

use super::controls::{controls, group_thousands, Shown};
use super::dropzone::DropZone;
use super::ChapterProps;
use crate::model::commit::{steady_caption, CommitModel, SteadyCommit, SweepPoint, STEADY_RECORD_BYTES};
use crate::model::group_steps::{caption_at, group_at};
use crate::figures::group_commit::GroupCommitFigure;
use crate::figures::lanes::FateLanes;
use crate::figures::steady_queue::{steady_queue, SteadyQueueProps};
use crate::model::trace_view::{Phase, TraceSpans};
use crate::model::{Model, ModelRef};
use crate::charts::{bar_chart, line_chart, Bar, BarChartProps, LineChartProps, Series};
use crate::player::{format_fixed_millis, player, PlayerProps, PlayerState};
use crate::state::LabAction;
use crate::layout::Scene;
use crate::url_state::{format_millis, PolicyKind, Scenario};

pub fn group_commit_chapter(props: &ChapterProps) -> Html {
    if let Model::Dropped(trace) = &*props.model.0 {
        return super::dropped_view::dropped_view(trace, props);
    }
    let Model::Commit(model) = &*props.model.0 else {
        return html! { <p class="error">{ "this Part's model did not run" }</p> };
    };
    let shown = Shown {
        scenario: true,
        policy: true,
        policies_sync_only: true,
        // The load is dragged on the steady run's figure.
        load: false,
        sync: props.params.scenario != Scenario::Tiny,
        window: props.params.policy == PolicyKind::Window,
        seed: props.params.scenario == Scenario::Random,
    };
    let on_player = props.on_action.reform(LabAction::Player);
    let latency = model.latency.as_ref().map(|latency| html! {
        <p class="measured-latency" data-file={latency.file_name.clone()}>
            { format!("Steady runs draw each sync from {} ({}): median {} ms, p99 {} ms, measured by walab fsync-test. ",
                latency.file_name, latency.method, format_millis(latency.median), format_millis(latency.p99)) }
            <button onclick={props.on_action.reform(|_: MouseEvent| LabAction::ClearLatency)}>{ "use a fixed L again" }</button>
        </p>
    });
    let (figure, outcome) = if props.params.scenario == Scenario::Tiny {
        tiny_view(model, &props.player, props.params.cut)
    } else {
        steady_view(model, props)
    };
    html! {
        <>
        <Scene name="group-commit" title="Writers sharing one sync"
            settings={html! { <>
                { controls(&props.params, shown, props.field_problem.as_ref(), &props.on_action) }
                { latency.unwrap_or_default() }
            </> }}
            controls={html! { { player(&PlayerProps { state: props.player.clone(), on_action: on_player, mark_name: "event".into(), caption: caption_for(model, &props.player), ..PlayerProps::default() }) } }}
            figure={figure}
            outcome={outcome}>
            { super::markup(GROUP_COMMIT) }
        </Scene>
        if props.params.scenario == Scenario::Tiny {
            if let Some(trace) = &model.tie_example {
                { tie_view(trace, model.sync_latency) }
            }
        }
        <h3>{ "Against load" }</h3>
        <div class="prose"><p>{ format!("Each point is a run of the core's simulator at that load (L = {} ms, 100-byte writes). \
            Group commit keeps syncs near 1 ÷ L a second while its batches grow; its wait stays between L and 2L. \
            The window variant halves the syncs at high load but adds up to W to every write, even when the disk is idle. \
            Sync per write is drawn only below its ceiling of 1 ÷ L: above it the queue grows without end.",
            format_millis(model.sync_latency)) }</p></div>
        <SweepCharts model={props.model.clone()} />
        <h3>{ "Your own run" }</h3>
        <DropZone dropped={props.dropped.clone()} on_action={props.on_action.clone()} />
        </>
    }
}

/// The caption of the step at the playhead, from the run's events at that instant.
fn caption_for(model: &CommitModel, player: &PlayerState) -> Option<AttrValue> {
    let Some(mark) = player.current_mark().and_then(|index| player.marks.get(index).copied()) else {
        return Some(AttrValue::from("Before the first event: no write has arrived yet. Step forward to watch the queue form."));
    };
    match model.scenario {
        Scenario::Tiny => model.tiny.as_ref().ok().map(|tiny| AttrValue::from(caption_at(&tiny.trace, mark))),
        _ => model.steady.as_ref().ok().map(|steady| AttrValue::from(steady_caption(steady, mark))),
    }
}

fn policy_color(policy: PolicyKind) -> (u8, u8, u8) {
    match policy {
        PolicyKind::Group => (31, 95, 191),
        PolicyKind::PerWrite => (179, 38, 30),
        PolicyKind::Window => (27, 122, 61),
        PolicyKind::NoSync | PolicyKind::Periodic => (120, 120, 120),
    }
}

#[derive(Properties, PartialEq)]
struct SweepChartsProps {
    model: ModelRef,
}

/// The charts against load, drawn once the page has painted: their thirty runs are not
/// what the student sees first, so the first render does not wait for them.
#[component]
fn SweepCharts(props: &SweepChartsProps) -> Html {
    let ready = use_state_eq(|| false);
    {
        let ready = ready.clone();
        use_effect_with((), move |_| {
            let timeout = gloo_timers::callback::Timeout::new(30, move || ready.set(true));
            move || drop(timeout)
        });
    }
    let sweep: &[SweepPoint] = match &*props.model.0 {
        Model::Commit(model) if *ready => model.sweep(),
        _ => &[],
    };
    let series_of = |value: fn(&SweepPoint) -> f64| -> Rc<Vec<Series>> {
        let mut series = Vec::new();
        // Sync per write last, so its line is drawn over group commit's where they meet.
        for policy in [PolicyKind::Group, PolicyKind::Window, PolicyKind::PerWrite] {
            let points: Vec<(f64, f64)> = sweep
                .iter()
                .filter(|point| point.policy == policy)
                .map(|point| (point.rate_per_s as f64, value(point)))
                .collect();
            if !points.is_empty() {
                series.push(Series { label: policy.label().to_string(), color: policy_color(policy), points });
            }
        }
        Rc::new(series)
    };
    let waits = use_memo((props.model.clone(), *ready), |_| series_of(|point| point.wait_mean_ms));
    let syncs = use_memo((props.model.clone(), *ready), |_| series_of(|point| point.syncs_per_s));
    if !*ready {
        return html! { <p class="note sweep-pending" aria-busy="true">{ "Running the load sweep…" }</p> };
    }
    html! {
        <div class="charts">
            { line_chart(&LineChartProps { title: "mean wait against load".into(), x_label: "writes per second".into(), y_label: "mean wait (ms)".into(), series: (*waits).clone(), ..LineChartProps::default() }) }
            { line_chart(&LineChartProps { title: "syncs per second against load".into(), x_label: "writes per second".into(), y_label: "syncs per second".into(), series: (*syncs).clone(), ..LineChartProps::default() }) }
        </div>
    }
}

/// The tiny store's 24 writes: the queue and its leader, the lanes (arrival to
/// acknowledgement, batches on top); and the run's summary, the stage's outcome.
fn tiny_view(model: &CommitModel, player: &PlayerState, cut: Option<Nanos>) -> (Html, Html) {
    let tiny = match &model.tiny {
        Ok(tiny) => tiny,
        Err(error) => return (html! { <p class="error">{ format!("the simulator refused the run: {error}") }</p> }, Html::default()),
    };
    let summary = tiny.summary;
    let now = player.now;
    let acked_now = (0..tiny.spans.writes.len()).filter(|index| tiny.spans.phase_at(*index, now) == Phase::Acked).count();
    let waiting_now = (0..tiny.spans.writes.len()).filter(|index| matches!(tiny.spans.phase_at(*index, now), Phase::Queued | Phase::Syncing)).count();
    let figure = group_at(&tiny.trace, now);
    let drawing = html! {
        <>
        <GroupCommitFigure state={Rc::new(figure)} sync_latency_ns={model.sync_latency.0}
            most={tiny.spans.batches.iter().map(|batch| batch.writes as usize).max().unwrap_or(1)} />
        { trace_lanes(Rc::new(tiny.spans.clone()), now, cut) }
        </>
    };
    let outcome = super::markup_owned(format!("<table class=\"summary\" data-syncs=\"{}\">{}</table>", summary.syncs, stat_rows(vec![
        ("policy", "", model.policy.label().to_string()),
        ("syncs for 24 writes", "syncs", summary.syncs.to_string()),
        ("mean wait", "", format!("{} ÷ {} = {:.2} ms", format_millis(summary.wait_total), summary.acked, summary.wait_total.as_millis_f64() / summary.acked.max(1) as f64)),
        ("best / worst wait", "", format!("{} ms / {} ms", format_millis(summary.wait_min), format_millis(summary.wait_max))),
        ("acknowledged at the playhead", "acked-now", acked_now.to_string()),
        ("waiting for their OK at the playhead", "waiting-now", waiting_now.to_string()),
    ])));
    (drawing, outcome)
}

/// The tie rule at the instant it applies, on the core's run of three writes.
fn tie_view(trace: &walab_core::trace::Trace, sync_latency: Nanos) -> Html {
    let Some(tie_at) = trace.instants().into_iter().find(|t| group_at(trace, *t).tie.is_some()) else { return Html::default() };
    let state = group_at(trace, tie_at);
    html! {
        <div class="tie-example" data-tie-at-ns={tie_at.0.to_string()}>
            <p class="note">{ format!("The tie rule, on a run of its own (writes at 0, 0.5 and 1.0 ms, L = {} ms): {}", format_millis(sync_latency), caption_at(trace, tie_at)) }</p>
            <GroupCommitFigure state={Rc::new(state)} sync_latency_ns={sync_latency.0} />
        </div>
    }
}

/// Any commit trace's writes and syncs as lanes (also a dropped trace file's): the lanes
/// of Parts 3 and 6 on one row of syncs, laid out for the stage's room.
pub fn trace_lanes(spans: Rc<TraceSpans>, now: Nanos, cut: Option<Nanos>) -> Html {
    html! { <FateLanes {spans} {now} {cut} one_row=true /> }
}

fn steady_view(model: &CommitModel, props: &ChapterProps) -> (Html, Html) {
    let (model_ref, player) = (&props.model, &props.player);
    let steady = match &model.steady {
        Ok(steady) => steady,
        Err(error) => return (html! { <p class="error">{ format!("the simulator refused the run: {error}") }</p> }, Html::default()),
    };
    let at = steady.at(player.now);
    let summary = steady.summary;
    let sizes: Rc<Vec<Bar>> = Rc::new(
        steady
            .batch_size_counts()
            .into_iter()
            .map(|(label, count)| Bar { label, value: count as f64, color: (31, 95, 191) })
            .collect(),
    );
    // The load is dragged on the figure; the run at the new load is announced.
    // In the steady state (the warm-up's lone first sync and the drain left out), as the
    // outcome's first table shows it.
    let said = match steady.steady_state {
        Some(window) => format!("steady state: {:.1} writes per sync, mean wait {:.2} ms", window.writes_per_sync, window.wait_mean.as_millis_f64()),
        None => format!("whole run, warm-up included: {:.1} writes per sync, mean wait {:.2} ms", summary.batch_mean(), summary.wait_mean().as_millis_f64()),
    };
    let drawing = html! {
        <>
        { super::controls::load_dial(props.params.load_per_second, &props.on_action, &said) }
        <SteadyCanvas model={model_ref.clone()} now={player.now} />
        { steady_queue(&SteadyQueueProps { state: steady.queue_at(player.now), record_bytes: u64::from(STEADY_RECORD_BYTES) }) }
        { bar_chart(&BarChartProps { title: "batch sizes in this run: writes per batch".into(), y_label: "batches".into(), bars: sizes, ..BarChartProps::default() }) }
        </>
    };
    let live = stat_rows(vec![
        ("at the playhead", "", format!("t = {} ms", format_fixed_millis(player.now))),
        ("arrived / acknowledged", "", format!("{} / {}", at.arrived, at.acked)),
        ("in flight (waiting for OK)", "in-flight", at.in_flight.to_string()),
        ("batch in the running sync", "", at.running_batch.map(|(writes, bytes)| format!("{writes} writes, {bytes} bytes")).unwrap_or_else(|| "none".into())),
    ]);
    let steady_table = steady.steady_state.map(|window| format!(
        "<table class=\"summary steady-state\" data-syncs-per-s=\"{:.0}\" data-writes-per-sync=\"{:.1}\" data-bytes-per-sync=\"{:.0}\" data-in-flight=\"{:.0}\" \
         data-wait-mean-ms=\"{:.2}\" data-wait-max-ms=\"{:.1}\"><caption>steady state: B{} to B{} ({} syncs). The first sync, a lone write, and the last, the drain, are left out.</caption>{}</table>",
        window.syncs_per_s, window.writes_per_sync, window.bytes_per_sync, window.in_flight_mean, window.wait_mean.as_millis_f64(), window.wait_max.as_millis_f64(),
        window.first_batch, window.last_batch, window.syncs, stat_rows(vec![
            ("syncs per second", "", group_thousands(window.syncs_per_s.round() as u64)),
            ("writes per sync", "", format!("{:.1}", window.writes_per_sync)),
            ("bytes per sync", "", group_thousands(window.bytes_per_sync.round() as u64)),
            ("writes in flight, on average", "", format!("{:.0}", window.in_flight_mean)),
            ("mean / worst wait", "", format!("{:.2} ms / {:.1} ms", window.wait_mean.as_millis_f64(), window.wait_max.as_millis_f64())),
        ]))).unwrap_or_default();
    let outcome = super::markup_owned(format!(
        "<div class=\"steady-stats\"><table class=\"summary live\">{live}</table>{steady_table}<p class=\"note steady-whole\" data-batch-mean=\"{:.1}\">\
         The whole run, warm-up and drain included: {} writes at {}/s, {:.1} writes per sync, mean wait {:.2} ms.</p></div>",
        summary.batch_mean(), group_thousands(summary.writes), group_thousands(steady.rate_per_s), summary.batch_mean(), summary.wait_mean().as_millis_f64()));
    (drawing, outcome)
}

#[derive(Properties, PartialEq)]
struct SteadyCanvasProps {
    model: ModelRef,
    now: Nanos,
}

/// Thousands of writes are drawn on a canvas, not as elements: each write is a dot at
/// (arrival, wait so far), grey while waiting, blue once acknowledged; the syncs run
/// along the top.
#[component]
fn SteadyCanvas(props: &SteadyCanvasProps) -> Html {
    let canvas = use_node_ref();
    {
        let canvas = canvas.clone();
        use_effect_with((props.model.clone(), props.now), move |(model, now)| {
            if let (Some(element), Model::Commit(model)) = (canvas.cast::<web_sys::HtmlCanvasElement>(), &*model.0) {
                if let Ok(steady) = &model.steady {
                    draw_steady(&element, steady, *now);
                }
            }
        });
    }
    html! { <canvas class="steady-canvas" ref={canvas} width="880" height="260" role="img" aria-label="steady load: each write's wait" /> }
}

fn draw_steady(canvas: &web_sys::HtmlCanvasElement, steady: &SteadyCommit, now: Nanos) {
    let Some(context) = canvas
        .get_context("2d")
        .ok()
        .flatten()
        .and_then(|context| context.dyn_into::<web_sys::CanvasRenderingContext2d>().ok())
    else {
        return;
    };
    // Drawn at the size it is shown (in CSS pixels, times the screen's pixel ratio), so
    // its labels are 14 px on a phone as on a projector rather than a wide drawing shrunk.
    let shown = f64::from(canvas.client_width());
    let (width, height) = if shown > 0.0 { (shown.min(880.0), 260.0) } else { (880.0, 260.0) };
    let ratio = web_sys::window().map_or(1.0, |window| window.device_pixel_ratio()).clamp(1.0, 3.0);
    let (pixels_w, pixels_h) = ((width * ratio).round() as u32, (height * ratio).round() as u32);
    if canvas.width() != pixels_w || canvas.height() != pixels_h {
        canvas.set_width(pixels_w);
        canvas.set_height(pixels_h);
    }
    let _ = context.set_transform(ratio, 0.0, 0.0, ratio, 0.0, 0.0);
    let (left, top, bottom) = (50.0, 30.0, 22.0);
    context.set_fill_style_str("#ffffff");
    context.fill_rect(0.0, 0.0, width, height);
    let end = steady.end.0.max(1) as f64;
    let wait_max = steady.summary.wait_max.0.max(1) as f64 * 1.1;
    let x = |t: u64| left + t as f64 / end * (width - left - 8.0);
    let y = |wait: u64| height - bottom - wait as f64 / wait_max * (height - top - bottom);
    // Axes and labels.
    context.set_stroke_style_str("#c8ced6");
    context.stroke_rect(left, top, width - left - 8.0, height - top - bottom);
    context.set_fill_style_str("#5b6673");
    context.set_font("14px sans-serif");
    let _ = context.fill_text(&format!("{:.1} ms", steady.summary.wait_max.as_millis_f64()), 4.0, y(steady.summary.wait_max.0) + 4.0);
    let _ = context.fill_text("0", 36.0, height - bottom + 4.0);
    let _ = context.fill_text(&format!("{:.1} ms", steady.end.as_millis_f64()), width - 64.0, height - 4.0);
    let _ = context.fill_text("wait", 4.0, top + 10.0);
    // Syncs along the top.
    let started = steady.batches.partition_point(|batch| batch.start <= now);
    for (index, batch) in steady.batches[..started].iter().enumerate() {
        let end_at = batch.end.map(|end| end.min(now)).unwrap_or(now);
        context.set_fill_style_str(if index % 2 == 0 { "#1f5fbf" } else { "#6f9be0" });
        context.fill_rect(x(batch.start.0), 6.0, (x(end_at.0) - x(batch.start.0)).max(1.0), 16.0);
    }
    // Writes: a dot at (arrival, wait so far).
    let arrived = steady.writes.partition_point(|write| write.arrival <= now);
    for write in &steady.writes[..arrived] {
        let (wait, color) = match write.ack.filter(|ack| *ack <= now) {
            Some(ack) => ((ack - write.arrival).0, "#1f5fbf"),
            None => ((now - write.arrival).0, "#a86400"),
        };
        context.set_fill_style_str(color);
        context.fill_rect(x(write.arrival.0) - 1.0, y(wait) - 1.0, 2.5, 2.5);
    }
    context.set_stroke_style_str("#b3261e");
    context.begin_path();
    context.move_to(x(now.0), 0.0);
    context.line_to(x(now.0), height);
    context.stroke();
}

/// What group commit is, and who does it.
const GROUP_COMMIT: &str = "<div class=\"prose\"><p>With one sync per write, a log can acknowledge at most 1 ÷ L writes a second, whatever the rest of the engine can do: a thousand a second at L = 1 ms. Yet a sync makes durable every byte written to the file before it, so writers can share one. That is group commit: while a sync runs, new writers queue; when it returns, one of them becomes the leader, takes the whole queue as a batch, writes it in one go and syncs once. No timer is involved, and batches grow by themselves with load.</p><p>Real engines do exactly this: LevelDB's and RocksDB's write leader merges the queued batches into one log record before one sync, and a PostgreSQL backend waiting for the WAL lock first checks whether the holder already flushed its record. <a class=\"source\" href=\"https://github.com/google/leveldb/blob/main/db/db_impl.cc\" target=\"_blank\" rel=\"noopener\">[LevelDB db_impl.cc BuildBatchGroup]</a><a class=\"source\" href=\"https://github.com/postgres/postgres/blob/master/src/backend/access/transam/xlog.c\" target=\"_blank\" rel=\"noopener\">[PostgreSQL xlog.c XLogFlush]</a></p><p>The tiny store's tie rule: a write arriving at the very instant a sync completes was not in that sync; it joins the batch the next leader forms at that same instant. In the lanes, L marks each batch's leader, a bar runs from a write's arrival to its OK, and its length is the write's wait.</p></div>";

/// A summary table's rows: a label, the value cell's class, the value.
/// A table's rows as markup: each a name, the value cell's extra class and the value.
fn stat_rows(rows: Vec<(&'static str, &'static str, String)>) -> String {
    rows.into_iter().map(|(label, class, value)| format!("<tr><th>{label}</th><td class=\"num {class}\">{}</td></tr>", super::escape(&value))).collect()
}
