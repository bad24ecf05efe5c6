//! Parts 13 and 14: the stream store's WAL with no local disk, on S3 and in Postgres.
//!
//! Both chapters draw one run of the core's remote simulator (`model::remote`): the
//! batches in flight at the playhead, the request bill, the takeover, the Postgres ring,
//! and what each event or timeline case loses at the playhead. Every control changes a
//! URL parameter (`r...`), so every view is a link.

mod figures;
pub mod live;
mod startup;
mod upload;

use std::rc::Rc;

use walab_core::sim::remote::{LatencyProfile, Load, RemoteBackend, RemoteRun, Standby, WalEvent};
use walab_core::time::Nanos;
use yew::prelude::*;

use self::figures::{BatchLanes, RingFigure, WritePathFigure};
use self::startup::startup_panel;
use self::upload::UploadFigure;
use super::dropzone::DropZone;
use super::ChapterProps;
use crate::model::remote::{
    caption_at, caption_with_upload, loss_at, ring_at, slot_words, startup_rows, RemoteModel, COST_RECORDS,
};
use crate::model::remote_trace::DroppedRemote;
use crate::model::Model;
use crate::remote_params::{event_name, RemoteLatency, RemoteParams, BACKUP_AT, LAB_SEGMENT_BYTES, STANDBY_LAG};
use crate::player::{player, PlayerProps, PlayerState};
use crate::state::{LabAction, Setting};
use crate::url_state::format_millis;

/// The lanes a projector shows of Part 14's run: the window around the playhead.
const PRESENTED_LANES: usize = 7;

const PRICE_PAGE: &str = "https://aws.amazon.com/s3/pricing/";
const EXPRESS_PAGE: &str = "https://docs.aws.amazon.com/AmazonS3/latest/userguide/s3-express-performance.html";

fn model_of(props: &ChapterProps) -> Option<&RemoteModel> {
    match &*props.model.0 {
        Model::Remote(model) => Some(model),
        _ => None,
    }
}

/// The element the trace's caption and the player sit in, for scrolling to them.
const TRACE_BANNER_ID: &str = "remote-trace";
const RUN_SECTION_ID: &str = "remote-run";

fn scroll_to(id: &str) {
    if let Some(element) = web_sys::window().and_then(|window| window.document()).and_then(|document| document.get_element_by_id(id)) {
        element.scroll_into_view();
    }
}

/// The top of a remote chapter: which trace file is playing and what it holds, or why a
/// dropped file could not be read (the chapter then shows the lab's own run).
fn trace_banner(props: &ChapterProps, trace: Option<&Rc<DroppedRemote>>) -> Html {
    let on_close = props.on_action.reform(|_: MouseEvent| LabAction::CloseTrace);
    match (trace, &props.dropped) {
        (Some(trace), _) => {
            let run = &trace.run;
            let takeover = run.takeover.as_ref();
            let to_run = Callback::from(|_: MouseEvent| scroll_to(RUN_SECTION_ID));
            html! {
                <section class="dropped-remote" id={TRACE_BANNER_ID} aria-label="the trace file playing"
                    data-file={trace.file_name.clone()} data-backend={run.backend.name()} data-records={run.records.len().to_string()}
                    data-batches={run.batches.len().to_string()} data-puts={run.puts.to_string()} data-records-acked={run.records_acked.to_string()}
                    data-takeover={if takeover.is_some() { "yes" } else { "no" }}>
                    { super::markup_owned(format!("<p class=\"headline\"><strong>Playing your trace file. </strong>{}</p><p class=\"note\">{} The player, the batches' lanes, the totals, the takeover and what each event loses below all draw the file; \
                        the controls that choose the lab's own run come back when you close it.</p>{}", super::escape(&trace.summary()), trace.left_out(), super::LINK_NOTE)) }
                    <p class="trace-actions">
                        <button class="primary to-run" onclick={to_run}>{ "play it ↓" }</button>{ " " }
                        <button class="close-trace" onclick={on_close}>{ "close the file" }</button>
                    </p>
                </section>
            }
        }
        (None, Some(Err(error))) => html! {
            <p class="error trace-error" role="alert">{ format!("{error}. The chapter shows the lab's own run.") }</p>
        },
        _ => Html::default(),
    }
}

/// Scrolls to the trace's caption when a new file starts playing in this chapter.
#[hook]
fn use_scroll_to_new_trace(trace: Option<&Rc<DroppedRemote>>) {
    let key = trace.map(|trace| (trace.file_name.clone(), trace.events, trace.run.end));
    use_effect_with(key, |key| {
        if key.is_some() {
            scroll_to(TRACE_BANNER_ID);
        }
    });
}

/// Where the lab's own controls were: the file in their place.
fn trace_in_place_of_controls(trace: &DroppedRemote, on_action: &Callback<LabAction>) -> Html {
    let on_close = on_action.reform(|_: MouseEvent| LabAction::CloseTrace);
    html! {
        <p class="trace-playing note" data-file={trace.file_name.clone()}>{ format!("These lanes draw {}. ", trace.file_name) }
            <button class="close-trace" onclick={on_close}>{ "close the file" }</button></p>
    }
}

fn own_run_section(props: &ChapterProps) -> Html {
    html! {
        <>
        { super::markup("<h3>Your own run</h3>") }
        <DropZone dropped={props.dropped.clone()} on_action={props.on_action.clone()} remote={true} />
        </>
    }
}

/// A select that rewrites one remote parameter.
pub(super) fn choice(
    label: &'static str,
    class: &'static str,
    options: Vec<(String, String)>,
    current: String,
    params: &RemoteParams,
    on_action: &Callback<LabAction>,
    apply: fn(&mut RemoteParams, &str),
) -> Html {
    let params = params.clone();
    let onchange = on_action.reform(move |event: Event| {
        let select: web_sys::HtmlSelectElement = event.target_unchecked_into();
        let mut next = params.clone();
        apply(&mut next, &select.value());
        LabAction::Set(Setting::Remote(next))
    });
    // A value from the link that no option offers is shown as it is, never as another.
    let mut options = options;
    if !options.iter().any(|(value, _)| *value == current) {
        options.push((current.clone(), format!("{current} (from the link)")));
    }
    let options = options.into_iter().map(|(value, text)| {
        let selected = value == current;
        html! { <option value={value} selected={selected}>{ text }</option> }
    });
    html! { <label class={classes!("remote-control", class)}>{ label }{ " " }<select {onchange}>{ for options }</select></label> }
}

pub(super) fn opt(value: &str, text: &str) -> (String, String) {
    (value.to_string(), text.to_string())
}

fn latency_value(params: &RemoteParams, backend: RemoteBackend) -> String {
    match params.latency.unwrap_or(RemoteLatency::Profile(LatencyProfile::default_for(backend))) {
        RemoteLatency::Profile(profile) => profile.name().to_string(),
        RemoteLatency::Fixed(fixed) => format_millis(fixed),
    }
}

fn load_value(params: &RemoteParams) -> String {
    match params.load {
        Load::Writers { writers } => format!("w{writers}"),
        Load::Rate { rate_per_s, poisson } => format!("r{rate_per_s}{}", if poisson { "p" } else { "" }),
    }
}

fn common_controls(props: &ChapterProps, backend: RemoteBackend) -> Html {
    let params = &props.params.remote;
    let on = &props.on_action;
    let all = [
        opt("s3-standard", "S3 Standard, 20-40 ms"),
        opt("s3-express", "S3 Express One Zone, 2-8 ms"),
        opt("postgres", "a Postgres commit, 1-2 ms"),
        opt("25", "exactly 25 ms"),
        opt("1", "exactly 1 ms"),
    ];
    // Each backend offers its own service's latencies and the two fixed ones; a link's
    // other value is shown too, under its name.
    let current_latency = latency_value(params, backend);
    let own = |value: &str| match value {
        "s3-standard" | "s3-express" => backend == RemoteBackend::S3,
        "postgres" => backend == RemoteBackend::Postgres,
        _ => true,
    };
    let mut latency_options: Vec<_> = all.iter().filter(|(value, _)| own(value) || *value == current_latency).cloned().collect();
    if !latency_options.iter().any(|(value, _)| *value == current_latency) {
        latency_options.push((current_latency.clone(), format!("exactly {current_latency} ms")));
    }
    let mut load_options = vec![
        opt("r20000", "20,000 records/s, evenly"),
        opt("r20000p", "20,000 records/s, Poisson"),
        opt("r2000", "2,000 records/s, evenly"),
        opt("w1", "1 writer (closed loop)"),
        opt("w16", "16 writers"),
        opt("w64", "64 writers"),
    ];
    let current_load = load_value(params);
    if !load_options.iter().any(|(value, _)| *value == current_load) {
        let text = match params.load {
            Load::Writers { writers } => format!("{writers} writers"),
            Load::Rate { rate_per_s, poisson } => format!("{rate_per_s} records/s{}", if poisson { ", Poisson" } else { "" }),
        };
        load_options.push((current_load.clone(), text));
    }
    let mut slow_options = vec![opt("", "none"), opt("3:200", "the 3rd takes 200 ms"), opt("2:100", "the 2nd takes 100 ms"), opt("5:400", "the 5th takes 400 ms")];
    let current_slow = params.slow_put.map_or(String::new(), |(k, ms)| format!("{k}:{}", format_millis(ms)));
    if let Some((k, ms)) = params.slow_put.filter(|_| !slow_options.iter().any(|(value, _)| *value == current_slow)) {
        slow_options.push((current_slow.clone(), format!("request {k} takes {} ms", format_millis(ms))));
    }
    html! {
        <div class="controls remote-controls">
            { choice("latency", "latency", latency_options, current_latency, params, on, |p, v| {
                let _ = p.parse("rlat", v);
            }) }
            { choice("load", "load", load_options, current_load, params, on, |p, v| {
                if let Some(writers) = v.strip_prefix('w') {
                    let _ = p.parse("rwriters", writers);
                } else if let Some(rate) = v.strip_prefix('r') {
                    let (rate, poisson) = rate.strip_suffix('p').map_or((rate, false), |r| (r, true));
                    p.load = Load::Rate { rate_per_s: rate.parse().unwrap_or(20_000), poisson };
                }
            }) }
            { choice("in flight", "inflight", (1..=8).map(|n| (n.to_string(), n.to_string())).collect(), params.inflight.to_string(), params, on, |p, v| {
                let _ = p.parse("rinflight", v);
            }) }
            { choice("slow request", "slow-put", slow_options, current_slow, params, on, |p, v| {
                if v.is_empty() { p.slow_put = None } else { let _ = p.parse("rslow", v); }
            }) }
            { choice(if backend == RemoteBackend::S3 { "failed PUT" } else { "lost INSERT answer" }, "fail-put", vec![opt("", "none"), opt("3", "request 3"), opt("6", "request 6")],
                params.fail_put.map_or(String::new(), |k| k.to_string()), params, on, |p, v| {
                if v.is_empty() { p.fail_put = None } else { let _ = p.parse("rfail", v); }
            }) }
            { choice("takeover by node B", "takeover", takeover_options(params),
                params.takeover_at.map_or(String::new(), format_millis), params, on, |p, v| {
                if v.is_empty() { p.takeover_at = None } else { let _ = p.parse("rtake", v); }
            }) }
        </div>
    }
}

/// The link's request and block numbers that this run never reaches, each said plainly
/// with the range that would take effect: the run is not silently the same as without them.
fn unreached(params: &RemoteParams, run: &RemoteRun, blocks: Option<usize>) -> Html {
    let mut notes = Vec::new();
    let mut check = |name: &str, asked: Option<u64>, made: u64, what: &str| {
        if let Some(asked) = asked.filter(|asked| *asked > made) {
            notes.push(format!("{name}={asked}: this run makes {}, so {what} {asked} never comes; give {name} from 1 to {made}.", crate::format::count(made, what), ));
        }
    };
    check("rfail", params.fail_put, run.puts, "request");
    check("rslow", params.slow_put.map(|(k, _)| k), run.puts, "request");
    if let Some(blocks) = blocks {
        check("rupcrash", params.upload_crash, blocks as u64, "block");
    }
    if let (Some(at), None) = (params.takeover_at, &run.takeover) {
        notes.push(format!("rtake={}: the run ends at {} ms, before it; give rtake from 0 to {} ms.", format_millis(at), format_millis(run.end), format_millis(run.end)));
    }
    if notes.is_empty() {
        return Html::default();
    }
    let items: String = notes.iter().map(|note| format!("<li>{}</li>", super::escape(note))).collect();
    super::markup_owned(format!("<ul class=\"field-problem link-unreached\" role=\"note\">{items}</ul>"))
}

/// The takeover's choices, with the instant chosen in the lanes among them.
fn takeover_options(params: &RemoteParams) -> Vec<(String, String)> {
    let mut options = vec![opt("", "none"), opt("10", "at 10 ms"), opt("30", "at 30 ms"), opt("60", "at 60 ms"), opt("100", "at 100 ms")];
    if let Some(at) = params.takeover_at.map(format_millis).filter(|at| !options.iter().any(|(value, _)| value == at)) {
        options.push((at.clone(), format!("at {at} ms")));
    }
    options
}

/// Part 13's lanes take a takeover where they are clicked: the link's `rtake`.
fn take_over(props: &ChapterProps) -> Callback<Option<Nanos>> {
    let (params, on_action) = (props.params.remote.clone(), props.on_action.clone());
    Callback::from(move |at: Option<Nanos>| {
        let mut next = params.clone();
        next.takeover_at = at;
        on_action.emit(LabAction::Set(Setting::Remote(next)));
    })
}

/// What the lanes say once a takeover is chosen in them.
fn takeover_said(run: &RemoteRun) -> AttrValue {
    match &run.takeover {
        Some(takeover) => AttrValue::from(format!(
            "Node B takes the node over at {} ms: it claims epoch {} (node A wrote under {}); node A is fenced at its next fence read.",
            format_millis(takeover.at), takeover.new_epoch, takeover.old_epoch
        )),
        None => AttrValue::from("No takeover: node A keeps the node."),
    }
}

/// The figure's outcome at the playhead, under the lanes (and on the projector).
fn outcome_line(run: &RemoteRun, now: Nanos) -> Html {
    html! { <p class="verdict-line remote-outcome" aria-live="polite">{ crate::model::remote::outcome_words(run, now) }</p> }
}

fn caption(run: &RemoteRun, player: &PlayerState) -> Option<AttrValue> {
    let mark = player.marks.get(player.current_mark()?).copied()?;
    Some(AttrValue::from(caption_at(run, mark)))
}

/// Part 13's caption: the WAL's events and the upload's at the step.
fn caption_s3(model: &RemoteModel, run: &RemoteRun, player: &PlayerState) -> Option<AttrValue> {
    let mark = player.marks.get(player.current_mark()?).copied()?;
    let upload = model.upload.as_ref().and_then(|upload| upload.as_deref().ok());
    Some(AttrValue::from(caption_with_upload(run, upload, mark)))
}

/// The upload from WAL to data objects, under the same player as the batches.
fn upload_section(props: &ChapterProps, model: &RemoteModel, run: &Rc<RemoteRun>) -> Html {
    let params = &props.params.remote;
    let control = choice("crash the upload", "upload-crash", vec![opt("", "never"), opt("1", "between block 1's upload and its commit"),
        opt("2", "between block 2's upload and its commit"), opt("3", "between block 3's upload and its commit")],
        params.upload_crash.map_or(String::new(), |k| k.to_string()), params, &props.on_action, |p, v| {
            if v.is_empty() { p.upload_crash = None } else { let _ = p.parse("rupcrash", v); }
        });
    let figure = match (&model.upload, &model.trace) {
        (_, Some(trace)) => html! { <p class="note upload-left-out">{ trace.left_out() }{ " Close the file to watch the lab's own run's upload." }</p> },
        (Some(Ok(upload)), None) => html! { <UploadFigure run={run.clone()} upload={upload.clone()} now={props.player.now} /> },
        (Some(Err(error)), None) => html! { <p class="error">{ format!("the upload could not run: {error}") }</p> },
        (None, None) => Html::default(),
    };
    let control = if model.trace.is_some() { Html::default() } else { html! { <div class="controls remote-controls">{ control }</div> } };
    html! {
        <>
        { super::markup("<h3>From WAL to committed objects</h3><div class=\"prose beside\"><p>The WAL is only a staging area. A background task copies acknowledged records, a sealed block of the log cache at a time, into read-optimized objects: one stream-set object for the streams with little data in the block, a stream object of its own for a stream with a long run.</p><p>Order matters: reserve an id for every object, upload the objects (invisible, as readers find objects only through the metadata), then one commit registers them all and moves every stream's end at once. Only then are the WAL objects below it deleted. Step the player and watch; then crash the upload between an upload and its commit.</p></div>") }
        { control }
        { figure }
        </>
    }
}

/// A running server's WAL and upload, live.
fn live_section(feed: &self::live::LiveFeed) -> Html {
    html! {
        <>
        <h3 id="live">{ "Watch a real server" }</h3>
        { self::live::live_view(feed) }
        </>
    }
}

/// Says so when the lanes draw only the first batches of a longer run.
fn lanes_note(run: &RemoteRun) -> Html {
    let drawn = crate::model::remote::batches_drawn(run).len();
    if drawn == run.batches.len() {
        return Html::default();
    }
    super::markup_owned(format!("<p class=\"note lanes-note\">The lanes draw the first {drawn} of the run's {} batches; the totals count them all.</p>", run.batches.len()))
}

/// The run's totals, with the numbers as data for the browser test.
fn totals(run: &RemoteRun, model: &RemoteModel) -> Html {
    let per_record = run.puts_per_record();
    let request = if run.backend == RemoteBackend::S3 { "PUT" } else { "INSERT" };
    let source = match &model.trace {
        Some(trace) => format!("<p class=\"note trace-source\">Read from {}; walab sim remote printed the same totals with --json.</p>", super::escape(&trace.file_name)),
        None => format!("<p class=\"cli-line\">The same run on the command line: <code class=\"cli\">{}</code></p>", super::escape(&model.command)),
    };
    // Markup, one string, with the numbers as data for the browser test.
    super::markup_owned(format!(
        "<p class=\"remote-totals\" data-puts=\"{}\" data-records-acked=\"{}\"{} data-batches=\"{}\">The whole run: {}, {}, {}, {} acknowledged, {} {request}s per record.</p>{source}",
        run.puts, run.records_acked, per_record.map_or(String::new(), |p| format!(" data-puts-per-record=\"{p:.6}\"")), run.batches.len(),
        crate::format::count(run.records.len(), "record"), crate::format::count(run.batches.len(), "batch"), crate::format::count(run.puts, request),
        crate::format::count(run.records_acked, "record"), per_record.map_or("-".to_string(), |p| format!("{p:.4}"))))
}

fn takeover_panel(run: &RemoteRun, now: Nanos, from_trace: bool) -> Html {
    let Some(takeover) = &run.takeover else {
        if from_trace {
            return super::markup("<p class=\"note\" data-takeover=\"none\">This trace has no takeover: record one with walab sim remote --takeover-at-ms.</p>");
        }
        return super::markup("<p class=\"note\">Choose a takeover above to watch node B fence node A.</p>");
    };
    if now < takeover.at {
        return super::markup_owned(format!("<p class=\"note\" data-takeover=\"pending\">Node B will claim the node at {} ms; play on.</p>", format_millis(takeover.at)));
    }
    let fenced = takeover.fenced_batches.first().map_or("none yet".to_string(), |b| format!("batch {b}"));
    let stragglers = if run.backend == RemoteBackend::S3 {
        match takeover.stragglers_ignored {
            0 => format!("None of A's objects landed under epoch {} at or past B's start: no straggler this time.", takeover.old_epoch),
            1 => format!("One of A's objects landed under epoch {} at or past B's start: a straggler, ignored by every recovery.", takeover.old_epoch),
            n => format!("{n} of A's objects landed under epoch {} at or past B's start: stragglers, ignored by every recovery.", takeover.old_epoch),
        }
    } else {
        "No straggler can land: the epoch is checked inside each insert's transaction, and B's claim waited for the inserts holding the node row.".to_string()
    };
    // Markup, one string: the panel's five sentences with their numbers as data.
    super::markup_owned(format!(
        "<div class=\"takeover-panel\" data-takeover=\"done\" data-old-epoch=\"{old}\" data-new-epoch=\"{new}\" data-acked-by-old=\"{acked}\" \
         data-recovered-by-new=\"{recovered}\" data-stragglers-ignored=\"{}\"><ul><li>Node A wrote under epoch {old}; at {} ms node B claimed epoch {new}.</li>\
         <li>B's own objects start at offset {} (the end of what it recovered).</li><li>A's first request to find the new epoch: {fenced}. From there A fails every waiting writer and stops.</li>\
         <li>A acknowledged {} before the claim; B's recovery replays {recovered} of A's records{}.</li><li class=\"stragglers\">{stragglers}</li></ul></div>",
        takeover.stragglers_ignored, format_millis(takeover.at), takeover.new_session_start, crate::format::count(takeover.acked_by_old, "record"),
        if takeover.recovered_by_new >= takeover.acked_by_old { ": nothing acknowledged is lost" } else { "" },
        old = takeover.old_epoch, new = takeover.new_epoch, acked = takeover.acked_by_old, recovered = takeover.recovered_by_new,
    ))
}

fn losses(props: &ChapterProps, run: &RemoteRun, backend: RemoteBackend) -> Html {
    let params = &props.params.remote;
    let now = props.player.now;
    let events: Vec<(WalEvent, &str)> = match backend {
        RemoteBackend::S3 => vec![(WalEvent::NodeCrash, "the node crashes"), (WalEvent::ZoneLost, "a zone is lost")],
        RemoteBackend::Postgres => vec![
            (WalEvent::NodeCrash, "the node crashes"),
            (WalEvent::PostgresCrash, "Postgres crashes (same disk, fsync = on)"),
            (WalEvent::PrimaryHostLost, "the primary's host is lost"),
            (WalEvent::ZoneLost, "a zone is lost"),
        ],
    };
    let buttons = events.iter().map(|&(event, text)| {
        let mut next = params.clone();
        next.event = event;
        let onclick = props.on_action.reform(move |_: MouseEvent| LabAction::Set(Setting::Remote(next.clone())));
        let pressed = params.event == event;
        html! { <button class="event" data-event={event_name(event)} aria-pressed={pressed.to_string()} {onclick}>{ text }</button> }
    });
    let loss = loss_at(run, params, now);
    let option = match backend {
        RemoteBackend::S3 => choice("bucket", "bucket", vec![opt("0", "regional (S3 Standard)"), opt("1", "one zone (S3 Express One Zone)")],
            if params.one_zone_bucket { "1" } else { "0" }.to_string(), params, &props.on_action, |p, v| p.one_zone_bucket = v == "1"),
        RemoteBackend::Postgres => choice("standby", "standby", vec![opt("none", "none"), opt("async", "asynchronous, 10 ms behind"), opt("sync", "synchronous")],
            match params.standby { Standby::None => "none", Standby::Asynchronous { .. } => "async", Standby::Synchronous => "sync" }.to_string(),
            params, &props.on_action, |p, v| { let _ = p.parse("rstandby", v); }),
    };
    let verdict = if !loss.applicable {
        "This event does not apply to this backend.".to_string()
    } else if loss.lost.is_empty() {
        format!("At {}, {} acknowledged; recovery brings back every one.", crate::format::ms(now), crate::format::count(loss.acked, "record"))
    } else {
        format!("At {}, {} acknowledged; {} of them lost (records {}..{}).", crate::format::ms(now), crate::format::count(loss.acked, "record"), loss.lost.len(),
            loss.lost.first().copied().unwrap_or(0), loss.lost.last().copied().unwrap_or(0))
    };
    html! {
        <div class="remote-losses">
            <div class="controls">{ for buttons }{ option }</div>
            { super::markup_owned(format!("<p class=\"loss\" data-acked=\"{}\" data-lost=\"{}\" data-applicable=\"{}\">{verdict}</p>", loss.acked, loss.lost.len(), loss.applicable)) }
        </div>
    }
}

#[component]
pub fn ObjectStoreChapter(props: &ChapterProps) -> Html {
    use_scroll_to_new_trace(model_of(props).and_then(|model| model.trace.as_ref()));
    let live_feed = self::live::use_live_feed(props.params.server.clone());
    let Some(model) = model_of(props) else { return html! { <p class="error">{ "this Part's model did not run" }</p> } };
    let run = match &model.run {
        Ok(run) => run.clone(),
        Err(error) => return html! { <p class="error">{ format!("the run could not start: {error}") }</p> },
    };
    let on_player = props.on_action.reform(LabAction::Player);
    let controls = match &model.trace {
        Some(trace) => trace_in_place_of_controls(trace, &props.on_action),
        None => html! { <>{ common_controls(props, RemoteBackend::S3) }
            { unreached(&props.params.remote, &run, model.upload.as_ref().and_then(|upload| upload.as_ref().ok()).map(|upload| upload.blocks.len())) }</> },
    };
    let cost_latency = if model.trace.is_some() { "the lab's latency (its control comes back when you close the file)" } else { "the latency chosen above" };
    // What a PUT costs: prose, the runs' table and the latencies' note as one markup string.
    let costs: String = model.costs.iter().map(|row| format!(
        "<tr data-writers=\"{}\" data-puts-per-record=\"{:.6}\"><td>{}</td><td>{}</td><td>{:.4}</td><td>${:.3}</td></tr>",
        row.writers, row.puts_per_record, row.writers, row.puts, row.puts_per_record, row.bill_per_million)).collect();
    let costs = format!("<details class=\"more\"><summary>What a PUT costs: the request bill per million appends</summary><div class=\"prose\"><p>S3 Standard charges $0.005 per 1,000 PUT requests in us-east-1 \
        <a class=\"source\" href=\"{PRICE_PAGE}\" target=\"_blank\" rel=\"noopener\">[AWS S3 pricing]</a>: $5 per million appends at one PUT per record. \
        With closed-loop writers a batch holds about one record per writer. Each row is a run of {COST_RECORDS} records at {cost_latency}.</p></div>\
        <table class=\"remote-costs\"><thead><tr><th>writers</th><th>PUTs</th><th>PUTs per record</th><th>PUT bill per million appends</th></tr></thead>\
        <tbody>{costs}<tr class=\"per-record\"><td>one PUT per record</td><td>-</td><td>1.0000</td><td>$5.000</td></tr></tbody></table>\
        <p class=\"note\">Latencies: S3 Standard takes tens of milliseconds per request; S3 Express One Zone promises single-digit milliseconds \
        <a class=\"source\" href=\"{EXPRESS_PAGE}\" target=\"_blank\" rel=\"noopener\">[AWS S3 Express performance]</a>; a Postgres commit a millisecond or two.</p></details>");
    html! {
        <>
        { trace_banner(props, model.trace.as_ref()) }
        { super::markup("<div class=\"prose\"><p>So far the log lived in a file on the machine's own disk. A stream store can keep its write-ahead log elsewhere: in an object store such as Amazon S3 (files, called objects, stored by PUT requests) or in Postgres. No disk of the node is then in the write path: a node that dies loses nothing it acknowledged. The price is a network round trip, tens of milliseconds to S3, so records that arrive together travel as one batch.</p></div>") }
        <details class="more write-path"><summary>{ "The write path, in eight steps" }</summary><WritePathFigure /></details>
        { super::markup("<h3 id=\"remote-run\">Batches in flight, acknowledgements in order</h3><div class=\"prose beside\"><p>Each batch is one PUT, and its records are acknowledged when that PUT returns: one round trip, however many records the batch carries (a single append on an idle stream pays exactly one). Up to \"in flight\" PUTs run at once (4 by default); a batch starts beside another only once it holds 32 records. PUTs may finish in any order, but a record is acknowledged only when its batch and every batch before it are stored. Slow one PUT down: the batches behind it are stored (striped) but not acknowledged until it lands.</p></div>") }
        { controls }
        { player(&PlayerProps { state: props.player.clone(), on_action: on_player, mark_name: "event".into(), caption: caption_s3(model, &run, &props.player), ..PlayerProps::default() }) }
        <BatchLanes run={run.clone()} now={props.player.now} on_take={model.trace.is_none().then(|| take_over(props))} announce={takeover_said(&run)} />
        { outcome_line(&run, props.player.now) }
        { lanes_note(&run) }
        { totals(&run, model) }
        { upload_section(props, model, &run) }
        { live_section(&live_feed) }
        { super::markup_owned(costs) }
        { super::markup("<h3>Fencing: two nodes, one log</h3><div class=\"prose\"><p>A node's log has one writer at a time, named by its epoch, which every object's key carries: {prefix}{epoch}/wal/{start}-{end}. When node B takes over it raises the epoch, and node A stops at its first request that finds the new one.</p><details class=\"more\"><summary>How the takeover and the fence work</summary><p>Node B takes over by raising the epoch in a registration object (5 becomes 6), reading it back, listing what is there and recording where its own objects begin: four requests. walab serve gives the owner a lease on the registration, renewed in the background, so an OK costs only its PUT and a new owner waits the lease out before it lists. The lab's run is too short for a 10-second lease, so with a takeover chosen A reads the registration after each upload instead (a HEAD, fence=read: one more round trip before each OK); the first read that shows epoch 6 fences it. An upload of A's slower than B's claim and LIST lands under epoch 5 past B's start: a straggler, which recovery ignores. Slow down a PUT in flight at the takeover to make one.</p></details></div>") }
        { takeover_panel(&run, props.player.now, model.trace.is_some()) }
        { super::markup("<h3>Recovery</h3><div class=\"prose\"><p>The next owner lists the objects under the previous session's prefix, walks them from the lowest start, stops at the first gap and checks every record's CRC. Acknowledged records are all there; records in flight were never promised.</p></div>") }
        { super::markup("<h3>What each event loses</h3>") }
        { losses(props, &run, RemoteBackend::S3) }
        { own_run_section(props) }
        </>
    }
}

#[component]
pub fn PostgresChapter(props: &ChapterProps) -> Html {
    use_scroll_to_new_trace(model_of(props).and_then(|model| model.trace.as_ref()));
    let Some(model) = model_of(props) else { return html! { <p class="error">{ "this Part's model did not run" }</p> } };
    let run = match &model.run {
        Ok(run) => run.clone(),
        Err(error) => return html! { <p class="error">{ format!("the run could not start: {error}") }</p> },
    };
    let params = &props.params.remote;
    let on_player = props.on_action.reform(LabAction::Player);
    let (trim_offset, head, waiting) = ring_at(&run, props.player.now);
    // The start-up checks' table, the backup point's note before it: one markup string.
    let startup: String = startup_rows().into_iter().map(|(condition, verdict)| format!("<tr><td>{}</td><td>{}</td></tr>", super::escape(condition), super::escape(&verdict))).collect();
    let startup = format!("<p class=\"note\">(The backup point is {} ms and the asynchronous standby replays {} ms behind.)</p>\
        <table class=\"startup-checks\"><thead><tr><th>at start</th><th>the WAL</th></tr></thead><tbody>{startup}</tbody></table><h3>What each event loses</h3>",
        format_millis(BACKUP_AT), format_millis(STANDBY_LAG));
    let ring_controls = html! {
        <div class="controls remote-controls">
            { choice("slot tables", "segments", (2..=8).map(|n| (n.to_string(), n.to_string())).collect(), params.segments.to_string(), params, &props.on_action, |p, v| {
                let _ = p.parse("rseg", v);
            }) }
            { choice("upload", "stall", vec![opt("", "runs every 50 ms"), opt("0:300", "stalls until 300 ms"), opt("0:", "stalls for good")],
                params.stall.map_or(String::new(), |(from, until)| format!("{}:{}", format_millis(from), if until == Nanos::MAX { String::new() } else { format_millis(until) })),
                params, &props.on_action, |p, v| { if v.is_empty() { p.stall = None } else { let _ = p.parse("rstall", v); } }) }
        </div>
    };
    let (controls, ring) = match &model.trace {
        Some(trace) => (trace_in_place_of_controls(trace, &props.on_action), html! { <p class="note ring-left-out">{ trace.left_out() }</p> }),
        None => (
            html! { <>{ ring_controls }{ common_controls(props, RemoteBackend::Postgres) }{ unreached(params, &run, None) }</> },
            html! { <RingFigure geometry={run.ring} trim_offset={trim_offset} head={head} waiting={waiting}
                slot_words={(0..run.ring.segments).map(|slot| AttrValue::from(slot_words(&run, slot, props.player.now))).collect::<Vec<_>>()} /> },
        ),
    };
    html! {
        <>
        { trace_banner(props, model.trace.as_ref()) }
        { super::markup_owned(format!("<div class=\"prose\"><p>The same log can live in Postgres: each batch is one row, written by one INSERT whose COMMIT is the batch's \
                  sync. Deleting rows one by one bloats tables, so the WAL spreads its rows over slot tables and empties a whole table \
                  with TRUNCATE: generation g (offsets cut into segment_bytes) lives in slot g % segments, a slot is truncated once the \
                  trim passes its generation, and appends wait when the head reaches a slot not yet trimmed. The lab's ring is tiny \
                  ({LAB_SEGMENT_BYTES} bytes a generation) so that you can watch it fill: stall the upload.</p></div>")) }
        <div id={RUN_SECTION_ID}>{ controls }</div>
        { player(&PlayerProps { state: props.player.clone(), on_action: on_player, mark_name: "event".into(), caption: caption(&run, &props.player), ..PlayerProps::default() }) }
        { ring }
        <BatchLanes run={run.clone()} now={props.player.now} lanes_max={props.params.present.then_some(PRESENTED_LANES)} />
        { outcome_line(&run, props.player.now) }
        { lanes_note(&run) }
        { totals(&run, model) }
        { super::markup("<h3>The fenced insert</h3><div class=\"prose\"><p>Every batch goes in as INSERT … SELECT … FROM walab_node WHERE epoch = $epoch FOR SHARE: once a newer process has claimed the node row with a higher epoch, the INSERT writes nothing and the writer knows it is fenced. The claim is an upsert that succeeds only when the new epoch is at least the stored one.</p><p>A failed insert is retried against the same table; a row already at that offset (its answer was lost) is compared with the batch: the same bytes mean success, different bytes corruption. Choose a lost INSERT answer above.</p></div>") }
        { super::markup("<h3>Fencing</h3>") }
        { takeover_panel(&run, props.player.now, model.trace.is_some()) }
        { super::markup("<h3>Recovery and the start-up checks</h3><div class=\"prose\"><p>Recovery scans from the trim offset across the slot tables to the first gap, checking every record's CRC and each row's epoch. First the WAL refuses a standby (pg_is_in_recovery()) and fsync = off, then compares the database's timeline (raised at every promotion) with the one recorded at the last start. Set the server up below: the verdicts are the core's start-up checks, for a restart at the playhead.</p></div>") }
        { startup_panel(props, &run) }
        { super::markup_owned(startup) }
        { losses(props, &run, RemoteBackend::Postgres) }
        { own_run_section(props) }
        </>
    }
}
