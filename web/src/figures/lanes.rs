//! The tiny store's writes and syncs as lanes, with each write's fate after a power cut.
//!
//! One lane per write, from its arrival to its OK (or its failure); the syncs run on two
//! rows above them: the log's batch syncs (B1, B2 ...) and the other files' syncs (a
//! flushed file's, the manifest's, a background sync of the log). Labels that would
//! overlap move to a second line or, if that is taken too, are left to the bar's
//! tooltip, so no two labels ever share pixels. After a cut, once the answer is
//! revealed, every write that had arrived is drawn with its fate.

use std::rc::Rc;

use walab_core::time::Nanos;
use yew::prelude::*;

use crate::model::fates::Fate;
use crate::model::trace_view::{BatchSpan, Phase, TraceSpans};
use crate::parts::cut_handle::TimeAxis;

#[derive(Properties, PartialEq)]
pub struct FateLanesProps {
    pub spans: Rc<TraceSpans>,
    /// The trace's file names, indexed like its files (none for a commit trace).
    #[prop_or_default]
    pub files: Rc<Vec<String>>,
    pub now: Nanos,
    #[prop_or_default]
    pub cut: Option<Nanos>,
    /// Each arrived write's fate, drawn once the playhead is at the cut (`None` until the
    /// answer is revealed).
    #[prop_or_default]
    pub fates: Option<Rc<Vec<(u64, Fate)>>>,
    /// Drawn over the lanes, told where their time axis runs (the power cut's handle).
    #[prop_or_default]
    pub overlay: Option<Callback<TimeAxis, Html>>,
    /// Where the time axis ends, when it is not where these spans end: a run cut short by
    /// the power keeps the whole run's axis, so the cut line can be moved past its cut.
    #[prop_or_default]
    pub axis_end: Option<Nanos>,
    /// A commit trace (Part 5, a dropped file): every sync on one row, each batch's
    /// leader marked, the axis from the spans' start (a window of a long run), no legend.
    #[prop_or_default]
    pub one_row: bool,
}

/// The drawing's width when it is not drawn in a measured stage: scaled to its column.
const WIDTH: f64 = 880.0;
/// Its text size then, in its own units.
const TEXT: f64 = 15.0;

/// Where things go, for a figure `width` wide whose text is `text` high (both in the
/// drawing's units; inside a stage they are CSS pixels, so the text keeps its size on a
/// phone and grows on a projector instead of being scaled).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LanesGeometry {
    pub width: f64,
    pub text: f64,
    /// Left of the time axis: the row titles ("files") and the write ids.
    pub left: f64,
    /// Right of the time axis: an "OK" after the last acknowledgement.
    pub right: f64,
    pub lane: f64,
    /// One sync row: two lines of labels over its bars.
    pub row: f64,
    /// A monospace character's width.
    pub char: f64,
}

impl LanesGeometry {
    pub fn new(width: f64, text: f64) -> LanesGeometry {
        let char = text * 0.62;
        LanesGeometry { width, text, left: 5.0 * char + 6.0, right: 3.0 * char + 6.0, lane: text + 2.0, row: 2.0 * (text + 4.0) + 13.0, char }
    }

    /// The geometry of the room a stage measured, or the scaled drawing's.
    pub fn for_room(room: crate::layout::FigureRoom) -> LanesGeometry {
        if room.measured() { LanesGeometry::new(room.width.max(240.0), room.text) } else { LanesGeometry::new(WIDTH, TEXT) }
    }
}

/// The ticks of a time axis from `start` to `end`: instants at a round step (10 µs to
/// 10 s) far enough apart that their labels keep a character's gap, each with its label
/// in milliseconds (the last carries the unit). A window of a long run starts far from
/// 0, so its ticks read "812.4", not "0".
pub fn axis_ticks(geometry: &LanesGeometry, start: Nanos, end: Nanos) -> Vec<(Nanos, String)> {
    let span = end.0.saturating_sub(start.0).max(1);
    let per_ns = (geometry.width - geometry.left - geometry.right) / span as f64;
    let end_ms = end.0 as f64 / 1e6;
    let digits = (end_ms.max(1.0).log10().floor() + 1.0) as usize;
    const STEPS_NS: [u64; 19] = [
        10_000, 20_000, 50_000, 100_000, 200_000, 500_000, 1_000_000, 2_000_000, 5_000_000, 10_000_000, 20_000_000, 50_000_000,
        100_000_000, 200_000_000, 500_000_000, 1_000_000_000, 2_000_000_000, 5_000_000_000, 10_000_000_000,
    ];
    let decimals = |step: u64| if step >= 1_000_000 { 0 } else if step >= 100_000 { 1 } else { 2 };
    let step = STEPS_NS
        .into_iter()
        .find(|step| {
            let places = decimals(*step);
            let label = digits as f64 + places as f64 + if places > 0 { 1.0 } else { 0.0 } + 2.5;
            *step as f64 * per_ns >= label * geometry.char
        })
        .unwrap_or(10_000_000_000);
    let places = decimals(step);
    let first = start.0.div_ceil(step) * step;
    let ticks: Vec<Nanos> = (first..=end.0).step_by(step as usize).map(Nanos).take(200).collect();
    let last = ticks.len().saturating_sub(1);
    ticks
        .into_iter()
        .enumerate()
        .map(|(at, t)| {
            let ms = format!("{:.places$}", t.0 as f64 / 1e6);
            (t, if at == last { format!("{ms} ms") } else { ms })
        })
        .collect()
}

/// The time axis under the lanes: a tick line and its label at each of [`axis_ticks`].
pub fn ticks_html(geometry: &LanesGeometry, start: Nanos, end: Nanos, x: impl Fn(Nanos) -> f64, top: f64, height: f64) -> Html {
    let text = geometry.text;
    let ticks = axis_ticks(geometry, start, end).into_iter().map(|(t, label)| {
        let tx = x(t).to_string();
        html! { <g class="tick"><line x1={tx.clone()} x2={tx.clone()} y1={top.to_string()} y2={(height - text - 6.0).to_string()} />
            <text x={tx} y={(height - 4.0).to_string()} text-anchor="middle">{ label }</text></g> }
    });
    html! { <g class="ticks">{ for ticks }</g> }
}

/// A write's lane from its arrival (`from`) to `to`, and its arrival's dot of radius `r`.
pub fn span_html(from: f64, to: f64, y: f64, r: &'static str) -> Html {
    html! { <>
        <line x2="1" vector-effect="non-scaling-stroke" style={crate::figures::span_style(from, y, to - from)} />
        <circle cx={from.to_string()} cy={y.to_string()} {r} />
    </> }
}

/// The cut's line (when there is a cut) and the playhead, across the lanes.
pub fn time_lines(cut: Option<f64>, now: f64, height: f64) -> Html {
    html! { <>
        if let Some(cut) = cut { <line class="cut-line" x1={cut.to_string()} x2={cut.to_string()} y2={height.to_string()} /> }
        <line class="playhead" y2={height.to_string()} style={crate::figures::span_style(now, 0.0, 1.0)} />
    </> }
}

/// What a sync bar is called: `B4` for a batch; a file's name otherwise.
fn sync_label(batch: &BatchSpan, files: &[String]) -> (String, String) {
    let Some(file) = files.get(batch.file as usize).cloned() else {
        let label = format!("{}{}", if batch.first_write == 0 { "S" } else { "B" }, batch.id);
        return (label.clone(), format!("{label}: a sync of {}", crate::format::count(batch.writes as usize, "write")));
    };
    if batch.first_write != 0 {
        (format!("B{}", batch.id), format!("B{}: the log sync of writes {}-{} ({} bytes, {file})", batch.id, batch.first_write, batch.first_write + batch.writes - 1, batch.bytes))
    } else if file == "MANIFEST" {
        ("M".to_string(), "M: the manifest's fsync (a new edit made durable)".to_string())
    } else if file.starts_with("wal-") {
        (format!("S·{file}"), format!("a background sync of {file}"))
    } else {
        (file.clone(), format!("{file}: the flushed file's fsync"))
    }
}

/// Places labels on two lines of a row without overlaps; `None` when neither line has
/// room (the label is then only in the bar's tooltip).
pub fn place_labels(spans: &[(f64, f64)]) -> Vec<Option<usize>> {
    let mut line_end = [f64::MIN; 2];
    spans
        .iter()
        .map(|(start, width)| {
            let line = (0..2).find(|line| line_end[*line] + 3.0 <= *start)?;
            line_end[line] = start + width;
            Some(line)
        })
        .collect()
}

#[component]
pub fn FateLanes(props: &FateLanesProps) -> Html {
    let spans = &props.spans;
    let now = props.now;
    let room = crate::layout::use_figure_room();
    let geometry = LanesGeometry::for_room(room);
    let LanesGeometry { width, text, left, right, lane, row: row_height, char } = geometry;
    let axis_end = props.axis_end.unwrap_or(spans.end).max(spans.end);
    let one_row = props.one_row;
    // A window of a long run starts far from 0 (a commit trace); the tiny store's at 0.
    let start = if one_row { spans.start } else { Nanos::ZERO };
    let span_ns = axis_end.0.saturating_sub(start.0).max(1) as f64;
    let x = |t: Nanos| left + ((t.0 as f64 - start.0 as f64) / span_ns).clamp(-0.01, 1.01) * (width - left - right);
    // The rows of syncs: the log's and the other files', or (one row) every sync.
    let row_kinds: &[Option<bool>] = if one_row { &[None] } else { &[Some(true), Some(false)] };
    let top = row_kinds.len() as f64 * row_height + 8.0;
    let height = top + lane * spans.writes.len() as f64 + text + 12.0;
    let at_cut = props.cut.is_some_and(|cut| now >= cut);
    let fates = props.fates.as_ref().filter(|_| at_cut);
    // Id -> fate by binary search (the fates are in id order).
    let fate_of = |id: u64| fates.and_then(|fates| fates.binary_search_by_key(&id, |(each, _)| *each).ok().map(|at| fates[at].1));
    let started: Vec<&BatchSpan> = spans.batches.iter().filter(|batch| batch.start <= now).collect();
    let rows: Vec<Html> = row_kinds
        .iter()
        .enumerate()
        .map(|(row, kind)| {
            let row_batches: Vec<&&BatchSpan> = started.iter().filter(|batch| kind.is_none_or(|log| (batch.first_write != 0) == log)).collect();
            let labels: Vec<(String, String)> = row_batches.iter().map(|batch| sync_label(batch, &props.files)).collect();
            let extents: Vec<(f64, f64)> = row_batches.iter().zip(&labels).map(|(batch, (label, _))| (x(batch.start), label.chars().count() as f64 * char)).collect();
            let lines = place_labels(&extents);
            let y0 = row as f64 * row_height;
            let bar_y = y0 + 2.0 * (text + 4.0) + 2.0;
            let bars = row_batches.iter().zip(labels).zip(lines).map(|((batch, (label, title)), line)| {
                let end = batch.end.map(|end| end.min(now)).unwrap_or(now);
                let running = batch.end.is_none_or(|end| end > now);
                let class = classes!("sync", if batch.first_write != 0 { "log-sync" } else { "other-sync" }, running.then_some("running"), (!batch.ok).then_some("failed"));
                let state = if !batch.ok && !running { "failed" } else if running { "running" } else { "done" };
                html! {
                    <g class={class} data-batch={batch.id.to_string()} data-state={state}>
                        <title>{ if batch.ok || running { title.clone() } else { format!("{title}: FAILED (EIO)") } }</title>
                        <rect x={x(batch.start).to_string()} y={bar_y.to_string()} width={(x(end) - x(batch.start)).max(1.5).to_string()} height="10" rx="2" />
                        if let Some(line) = line {
                            <text class="sync-label" x={x(batch.start).to_string()} y={(y0 + text + line as f64 * (text + 4.0)).to_string()}>{ if !batch.ok && !running { format!("{label} ✗") } else { label } }</text>
                        }
                    </g>
                }
            });
            html! {
                <g class="sync-row">
                    <text class="row-title" x="2" y={(bar_y + 9.0).to_string()}>{ match kind { None => "syncs", Some(true) => "log", Some(false) => "files" } }</text>
                    { for bars }
                </g>
            }
        })
        .collect();
    // The first write of a batch that has started is the one that led it (marked on one row).
    let mut leaders: Vec<u64> = if one_row { started.iter().map(|batch| batch.first_write).collect() } else { Vec::new() };
    walab_core::sort::sort(&mut leaders);
    let writes = spans.writes.iter().enumerate().map(|(index, write)| {
        let y = top + lane * index as f64 + lane / 2.0;
        let phase = spans.phase_at(index, now);
        let leader = leaders.binary_search(&write.id).is_ok() && phase != Phase::NotYet;
        let fate = fate_of(write.id);
        let line_end = match phase {
            Phase::Acked => write.ack.unwrap_or(now),
            Phase::Failed => write.failed.unwrap_or(now),
            _ => now,
        };
        let state = fate.map(Fate::class).unwrap_or(phase.class());
        let mark = match (fate, phase) {
            (Some(fate), _) => Some(fate.mark().to_string()),
            (None, Phase::Acked) => Some("OK".to_string()),
            (None, Phase::Failed) => Some("✗ unknown".to_string()),
            _ => None,
        };
        // A mark with no room after the line's end goes before its start.
        let mark_width = mark.as_ref().map_or(0.0, |mark| mark.chars().count() as f64 * char);
        let (mark_x, mark_anchor) = if x(line_end) + 4.0 + mark_width <= width - 2.0 { (x(line_end) + 4.0, "start") } else { (x(write.arrival) - 5.0, "end") };
        let baseline = y + text * 0.35;
        html! {
            <g class={classes!("write", phase.class(), fate.map(Fate::class), leader.then_some("leader"))} data-write={write.id.to_string()} data-state={state} data-phase={phase.class()}>
                <text class="write-id" x={(left - 6.0).to_string()} y={baseline.to_string()} text-anchor="end">
                    if leader { <tspan class="leader-mark">{ "L " }</tspan> }{ write.id }</text>
                if phase != Phase::NotYet { { span_html(x(write.arrival), x(line_end), y, if leader { "4.5" } else { "3" }) } }
                if let Some(mark) = mark {
                    <text class="end-mark" x={mark_x.to_string()} y={baseline.to_string()} text-anchor={mark_anchor}>{ mark }</text>
                }
            </g>
        }
    });
    let ticks = ticks_html(&geometry, start, axis_end, x, top, height);
    let label = match (fates, props.cut) {
        (Some(_), Some(cut)) => format!("writes and syncs up to the power cut at {:.2} ms, each write marked kept or lost", cut.as_millis_f64()),
        _ => crate::labels::lanes_label(spans, now, props.cut),
    };
    html! {
        <figure class="figure lanes-figure" data-figure="lanes" aria-label={label}>
            <div class="lanes-box">
            <svg class={classes!("lanes", one_row.then_some("trace-lanes"), room.measured().then_some("fitted"))} viewBox={format!("0 0 {width} {height}")}
                style={format!("--text: {text}px")} aria-hidden="true">
                { ticks }
                { for rows }
                <g class="writes">{ for writes }</g>
                { time_lines(props.cut.map(x), x(now), height) }
            </svg>
            if let Some(overlay) = &props.overlay {
                { overlay.emit(TimeAxis { left: left / width, right: (width - right) / width, end: axis_end, ruler: (height - text - 12.0) / height }) }
            }
            </div>
            if one_row {
            } else if fates.is_some() {
                { crate::parts::markup(concat!(r#"<figcaption class="legend"><span class="key log-sync">B4: batch 4 written to the log; its bar is the batch&#39;s fdatasync (a dash where the mode does not sync)</span><span class="key other-sync">F7: a flushed file&#39;s fsync · M: the manifest&#39;s fsync · S·wal-k: a background sync of the log</span><span class="key queued">waiting</span><span class="key syncing">in a running sync</span><span class="key acked">told OK</span><span class="key failed">told &quot;unknown&quot;</span>"#, crate::model::fates::fate_keys!(), r#"</figcaption>"#)) }
            } else {
                { crate::parts::markup(r#"<figcaption class="legend"><span class="key log-sync">B4: batch 4 written to the log; its bar is the batch&#39;s fdatasync (a dash where the mode does not sync)</span><span class="key other-sync">F7: a flushed file&#39;s fsync · M: the manifest&#39;s fsync · S·wal-k: a background sync of the log</span><span class="key queued">waiting</span><span class="key syncing">in a running sync</span><span class="key acked">told OK</span><span class="key failed">told &quot;unknown&quot;</span></figcaption>"#) }
            }
        </figure>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_of_a_window_far_from_zero_read_its_own_instants() {
        let geometry = LanesGeometry::new(880.0, 15.0);
        let ticks = axis_ticks(&geometry, Nanos(812_430_000), Nanos(814_100_000));
        assert!(ticks.len() >= 3, "{ticks:?}");
        assert!(ticks.iter().all(|(t, _)| t.0 >= 812_430_000 && t.0 <= 814_100_000));
        assert!(ticks[0].1.starts_with("812."), "{ticks:?}");
        assert!(ticks.last().unwrap().1.ends_with(" ms"));
        let whole = axis_ticks(&geometry, Nanos::ZERO, Nanos::from_millis(16));
        assert_eq!(whole[0].1, "0");
    }

    #[test]
    fn labels_never_overlap() {
        // "B2" at 100 and "B3" at 105 would collide on one line: the second moves down;
        // a third at 108 has no room on either line.
        let lines = place_labels(&[(100.0, 14.0), (105.0, 14.0), (108.0, 14.0), (140.0, 14.0)]);
        assert_eq!(lines, vec![Some(0), Some(1), None, Some(0)]);
    }
}
