//! Part 10: replicas A, B and C in their zones; one batch's legs drawn to scale, the
//! leg whose end is the commit marked, Raft-style beside PostgreSQL's flush-then-ship.

use std::rc::Rc;

use walab_core::quorum::{BatchTiming, WriteBudget};
use walab_core::time::Nanos;
use yew::prelude::*;

use crate::model::quorum_view::{mode_name, BatchLegs};

#[derive(Properties, PartialEq)]
pub struct QuorumFigureProps {
    /// Raft-style first, then PostgreSQL's.
    pub modes: Rc<Vec<BatchLegs>>,
    pub w: usize,
    /// The batch drawn ("B15: writes 21-22") and how far into it the playhead is.
    pub batch_label: AttrValue,
    pub elapsed: Option<Nanos>,
    /// Every batch of the branch, and the one at the playhead (once it has started).
    pub batches: Rc<Vec<BatchTiming>>,
    pub current: Option<u64>,
    /// Write 23's wait: the batch in flight, then its own.
    pub write_23: Option<WriteBudget>,
    pub now: Nanos,
    /// A follower's row was pressed: lose it, or bring it back (its index).
    #[prop_or_default]
    pub on_replica: Callback<usize>,
}

const WIDTH: f64 = 900.0;
const TEXT: f64 = 15.0;
/// The longest name in the left column ("write 23's real wait"), in characters.
const NAME_CHARS: f64 = 21.0;

/// The figure's measures for the room it is drawn in: the names' column (or, on a narrow
/// screen, names on a line of their own above their bars), a bar's row, the text.
#[derive(Clone, Copy)]
struct Geometry {
    width: f64,
    text: f64,
    char: f64,
    left: f64,
    /// Names above their bars (a phone), not beside them.
    stacked: bool,
    row: f64,
    bar: f64,
}

impl Geometry {
    fn new(drawing: crate::layout::Drawing) -> Geometry {
        let crate::layout::Drawing { width, text, char, .. } = drawing;
        let beside = NAME_CHARS * char + 16.0;
        let stacked = width - beside < 30.0 * char;
        let bar = text * 1.1;
        let row = if stacked { text * 1.5 + bar + 8.0 } else { bar + 12.0 };
        Geometry { width, text, char, left: if stacked { 8.0 } else { beside }, stacked, row, bar }
    }

    /// Where a row's name goes (x, y) for a bar whose top is `bar_top`.
    fn name_at(&self, bar_top: f64) -> (f64, f64) {
        if self.stacked { (8.0, bar_top - 4.0) } else { (8.0, bar_top + self.bar * 0.82) }
    }

    /// A row's bar top, for a row starting at `row_top`.
    fn bar_top(&self, row_top: f64) -> f64 {
        if self.stacked { row_top + self.text * 1.5 } else { row_top + 4.0 }
    }
}
/// What the table under the figure calls write 23's legs added up; the figure uses the same words.
pub const NAIVE_SUM_LABEL: &str = "the naive sum of every leg";

#[component]
pub fn QuorumFigure(props: &QuorumFigureProps) -> Html {
    let g = Geometry::new(crate::layout::use_figure_room().drawing(WIDTH, TEXT, 300.0));
    let fitted = crate::layout::use_figure_room().measured();
    let (width, text, char) = (g.width, g.text, g.char);
    let line = text * 1.45;
    let longest = props.modes.iter().flat_map(|mode| mode.legs.iter().filter(|leg| !leg.lost()).map(|leg| leg.ends_after())).max().unwrap_or(Nanos(1)).max(props.modes.first().map_or(Nanos(1), |mode| mode.sum));
    let longest = longest.max(props.write_23.as_ref().map_or(Nanos(1), |budget| budget.naive_sum));
    let scale = (width - g.left - 12.0) / longest.0.max(1) as f64;
    let x = |t: Nanos| g.left + t.0 as f64 * scale;
    let chars = ((width - 16.0) / char).floor().max(10.0) as usize;
    let title_lines = crate::layout::wrap_words(&props.batch_label, chars);
    let (strip, strip_bottom) = batch_strip(props, &g, title_lines.len() as f64 * line + 6.0);
    let mut y = strip_bottom + line;
    let mut panels = Vec::new();
    for batch in props.modes.iter() {
        let title = match mode_name(batch.mode) {
            "raft" => "Raft-style: A sends while it syncs; commit at the W-th fastest leg",
            _ => "PostgreSQL: A flushes first, then ships to the standbys",
        };
        let title_lines = crate::layout::wrap_words(title, chars);
        let top = y;
        let rows_top = top + title_lines.len() as f64 * line + 4.0;
        let commit_x = x(batch.commit_after);
        let rows = batch.legs.iter().enumerate().map(|(index, leg)| {
            let bar_top = g.bar_top(rows_top + index as f64 * g.row);
            let elapsed = props.elapsed.map(|elapsed| Nanos(elapsed.0.saturating_sub(leg.starts_after.0).min(leg.length.0)));
            let words = if leg.lost() {
                "lost: never answers (press to bring it back)".to_string()
            } else {
                format!("{:.1} ms{}", leg.length.as_millis_f64(), if leg.decisive { " ← commit" } else if !leg.waited { " (not waited for)" } else { "" })
            };
            let end_x = if leg.lost() { x(leg.starts_after) } else { x(leg.ends_after()) };
            // The label goes right of the bar, past the commit line when that line would cross
            // it, or inside the bar's end when the bar reaches the edge.
            let words_width = words.chars().count() as f64 * char;
            let crosses = end_x < commit_x && end_x + words_width + 10.0 > commit_x;
            let (label_x, anchor) = if crosses && commit_x + words_width + 8.0 <= width {
                (commit_x + 5.0, "start")
            } else if end_x + words_width + 10.0 > width || crosses {
                ((end_x - 6.0).max(g.left + words_width), "end")
            } else {
                (end_x + 5.0, "start")
            };
            let (name_x, name_y) = g.name_at(bar_top);
            let onclick = (index > 0).then(|| props.on_replica.reform(move |_: MouseEvent| index));
            html! {
                <g class={classes!("leg", leg.waited.then_some("waited"), leg.decisive.then_some("decisive"), leg.lost().then_some("lost"), (index > 0).then_some("follower"))} data-mode={mode_name(batch.mode)} {onclick}
                    data-leg={leg.replica.clone()} data-ms={format!("{:.1}", leg.length.as_millis_f64())} data-waited={leg.waited.to_string()}
                    data-decisive={leg.decisive.to_string()}>
                    <text class="replica" x={name_x.to_string()} y={name_y.to_string()}>{ format!("{} · {}{}", leg.replica, leg.zone, if index == 0 { " (leader)" } else { "" }) }</text>
                    if !leg.lost() { <rect class="leg-bar" x={x(leg.starts_after).to_string()} y={bar_top.to_string()} width={(leg.length.0 as f64 * scale).to_string()} height={g.bar.to_string()} rx="3" /> }
                    if let Some(elapsed) = elapsed.filter(|_| !leg.lost()) {
                        <rect class="leg-progress" x={x(leg.starts_after).to_string()} y={bar_top.to_string()} width={(elapsed.0 as f64 * scale).to_string()} height={g.bar.to_string()} rx="3" />
                    }
                    <text class="leg-label" x={label_x.to_string()} text-anchor={anchor} y={(bar_top + g.bar * 0.82).to_string()}>{ words }</text>
                    <title>{ format!("{}: {} ({:.1} ms)", leg.replica, leg.what, leg.length.as_millis_f64()) }</title>
                </g>
            }
        });
        let bottom = rows_top + batch.legs.len() as f64 * g.row;
        let commit_words = format!("commit at {:.1} ms (W = {})", batch.commit_after.as_millis_f64(), props.w);
        let commit_label_x = commit_x.min(width - 4.0 - commit_words.len() as f64 * char).max(4.0);
        panels.push(html! {
            <g class="mode-panel" data-mode={mode_name(batch.mode)} data-commit-ms={format!("{:.1}", batch.commit_after.as_millis_f64())}>
                { for title_lines.iter().enumerate().map(|(index, words)| html! {
                    <text class="panel-title" x="8" y={(top + (index as f64 + 0.8) * line).to_string()}>{ words.clone() }</text>
                }) }
                { for rows }
                <line class="commit-line" x1={commit_x.to_string()} x2={commit_x.to_string()} y1={rows_top.to_string()} y2={bottom.to_string()} />
                <text class="commit-label" x={(commit_label_x + 4.0).to_string()} y={(bottom + line * 0.8).to_string()}>{ commit_words }</text>
            </g>
        });
        y = bottom + line * 1.6;
    }
    // The comparison under the panels: write 23's real wait against the naive sum of
    // every leg, the very numbers (and words) of the table below the figure; without
    // write 23, one batch's commit against its legs added up.
    let (real, naive, real_label, naive_label) = match &props.write_23 {
        Some(budget) => (budget.total, budget.naive_sum, format!("write {}'s real wait", budget.write), NAIVE_SUM_LABEL),
        None => {
            let first = props.modes.first();
            (first.map_or(Nanos::ZERO, |mode| mode.commit_after), first.map_or(Nanos::ZERO, |mode| mode.sum), "the commit waits".to_string(), "one batch's legs added up")
        }
    };
    let real_top = g.bar_top(y);
    let sum_top = real_top + g.bar + 6.0;
    // The words after the bar; shorter when the full ones would run off the figure.
    let full = format!("{:.1} ms: the legs run at once", real.as_millis_f64());
    let real_words = if x(real) + 5.0 + full.len() as f64 * char > width { format!("{:.1} ms", real.as_millis_f64()) } else { full };
    let (real_x, real_anchor) = (x(real) + 5.0, "start");
    let (name_x, name_y) = g.name_at(real_top);
    let height = sum_top + g.bar + line * 1.5;
    html! {
        <figure class="figure quorum-figure" data-figure="quorum" aria-label={format!("{}: each replica's leg; the commit waits for the W-th fastest, not the sum", props.batch_label)}>
            <svg class={classes!(fitted.then_some("fitted"))} viewBox={format!("0 0 {width} {height}")} style={format!("--text: {text}px")} aria-hidden="true">
                { for title_lines.iter().enumerate().map(|(index, words)| html! {
                    <text class="batch-title" x="8" y={((index as f64 + 0.8) * line).to_string()}>{ words.clone() }</text>
                }) }
                { strip }
                { for panels }
                <g class="max-vs-sum" data-real-ms={format!("{:.1}", real.as_millis_f64())} data-sum-ms={format!("{:.1}", naive.as_millis_f64())}>
                    <text class="replica" x={name_x.to_string()} y={name_y.to_string()}>{ real_label }</text>
                    <rect class="commit-bar" x={g.left.to_string()} y={real_top.to_string()} width={(real.0 as f64 * scale).to_string()} height={g.bar.to_string()} rx="3" />
                    <text class="leg-label" x={real_x.to_string()} text-anchor={real_anchor} y={(real_top + g.bar * 0.82).to_string()}>{ real_words }</text>
                    <rect class="sum-bar" x={g.left.to_string()} y={sum_top.to_string()} width={(naive.0 as f64 * scale).to_string()} height={g.bar.to_string()} rx="3" />
                    <text class="leg-label" x={(x(naive) - 5.0).max(8.0 + format!("{}: {:.1} ms", naive_label, naive.as_millis_f64()).len() as f64 * char).to_string()} y={(sum_top + g.bar + line).to_string()} text-anchor="end">{ format!("{}: {:.1} ms", naive_label, naive.as_millis_f64()) }</text>
                </g>
            </svg>
            { crate::parts::markup("<figcaption class=\"legend\"><span class=\"key leg-waited\">a leg the commit waits for</span><span class=\"key leg-decisive\">the W-th fastest: its end is the commit</span><span class=\"key leg-free\">a leg not waited for</span><span class=\"key leg-progress\">how far the playhead is into this batch</span><span class=\"key wait-in-flight\">write 23 waits for the batch in flight</span><span class=\"key wait-own\">then for its own batch</span></figcaption>") }
        </figure>
    }
}

/// The branch's batches in a row on their own time axis, the one at the playhead marked,
/// and write 23's wait under them: the batch in flight, then its own. Returns the
/// drawing and its bottom edge.
fn batch_strip(props: &QuorumFigureProps, g: &Geometry, top: f64) -> (Html, f64) {
    let (Some(first), Some(last)) = (props.batches.first(), props.batches.last()) else { return (Html::default(), top) };
    let (text, char) = (g.text, g.char);
    let from = props.write_23.as_ref().map_or(first.start, |budget| budget.arrival.min(first.start));
    let to = last.end;
    let scale = (g.width - g.left - 12.0) / (to.0.saturating_sub(from.0)).max(1) as f64;
    let x = |t: Nanos| g.left + t.0.saturating_sub(from.0) as f64 * scale;
    let count = props.batches.len();
    let chip_top = g.bar_top(top);
    let chip_height = text * 1.4;
    let chips = props.batches.iter().enumerate().map(|(index, batch)| {
        let current = props.current == Some(batch.batch);
        let room = x(batch.end) - x(batch.start) - 2.0;
        let words = if room >= 9.0 * char + 4.0 { format!("B{} · {}/{count}", batch.batch, index + 1) } else { format!("B{}", batch.batch) };
        html! {
            <g class={classes!("batch-chip", current.then_some("current"))} data-batch={batch.batch.to_string()} data-place={format!("{} of {count}", index + 1)}>
                <rect x={x(batch.start).to_string()} y={chip_top.to_string()} width={room.to_string()} height={chip_height.to_string()} rx="3" />
                <text class="chip-label" x={((x(batch.start) + x(batch.end)) / 2.0).to_string()} y={(chip_top + chip_height * 0.75).to_string()} text-anchor="middle">{ words }</text>
            </g>
        }
    });
    let (name_x, name_y) = g.name_at(chip_top);
    let wait_row = chip_top + chip_height + 6.0;
    let wait_top = g.bar_top(wait_row);
    let mut bottom = wait_top + g.bar + 4.0;
    let write = props.write_23.as_ref().map(|budget| {
        let own_start = budget.arrival + budget.waited_for_batch_in_flight;
        let ms = |t: Nanos| format!("{:.1}", t.as_millis_f64());
        let sum = format!("{} + {} = {} ms", ms(budget.waited_for_batch_in_flight), ms(budget.own_batch), ms(budget.total));
        // The sum goes left of the wait, or right of it, where there is room; else (names
        // stacked on a phone) on the name's line; else under the bar, on a line of its own
        // (above it, it would cross the batches).
        let sum_width = sum.len() as f64 * char;
        let own_end = x(own_start + budget.own_batch);
        let (sum_at, sum_y) = if g.stacked {
            (None, 0.0)
        } else if x(budget.arrival) - g.left > sum_width + 6.0 {
            (Some((x(budget.arrival) - 6.0, "end")), wait_top + g.bar * 0.82)
        } else if own_end + 6.0 + sum_width < g.width {
            (Some((own_end + 6.0, "start")), wait_top + g.bar * 0.82)
        } else {
            bottom += text * 1.3;
            (Some(((own_end - sum_width).max(g.left), "start")), wait_top + g.bar + text * 1.1)
        };
        let name = if sum_at.is_none() { format!("write {}'s wait: {sum}", budget.write) } else { format!("write {}'s wait", budget.write) };
        let (wait_name_x, wait_name_y) = g.name_at(wait_top);
        html! {
            <g class="write-wait" data-write={budget.write.to_string()} data-waited-ms={ms(budget.waited_for_batch_in_flight)}
                data-own-ms={ms(budget.own_batch)} data-total-ms={ms(budget.total)}>
                <text class="replica" x={wait_name_x.to_string()} y={wait_name_y.to_string()}>{ name }</text>
                <rect class="wait-in-flight" x={x(budget.arrival).to_string()} y={wait_top.to_string()} width={(x(own_start) - x(budget.arrival)).to_string()} height={g.bar.to_string()} rx="2" />
                <rect class="wait-own" x={x(own_start).to_string()} y={wait_top.to_string()} width={(x(own_start + budget.own_batch) - x(own_start)).to_string()} height={g.bar.to_string()} rx="2" />
                if let Some((sum_x, anchor)) = sum_at {
                    <text class="leg-label" x={sum_x.to_string()} y={sum_y.to_string()} text-anchor={anchor}>{ sum.clone() }</text>
                }
                <title>{ format!("write {} waits {} ms for the batch in flight, then {} ms for its own batch: {} ms", budget.write, ms(budget.waited_for_batch_in_flight), ms(budget.own_batch), ms(budget.total)) }</title>
            </g>
        }
    });
    let playhead = (props.now >= from && props.now <= to).then(|| html! {
        <line class="strip-playhead" x1="0" x2="0" style={format!("transform:translateX({}px)", x(props.now))} y1={chip_top.to_string()} y2={bottom.to_string()} />
    });
    let drawn = html! {
        <g class="batch-strip" data-batches={count.to_string()} data-current={props.current.map(|batch| batch.to_string()).unwrap_or_default()}>
            <text class="replica" x={name_x.to_string()} y={name_y.to_string()}>{ "the branch's batches" }</text>
            { for chips }
            { write.unwrap_or_default() }
            { playhead.unwrap_or_default() }
        </g>
    };
    (drawn, bottom)
}
