//! Part 10: replicas A, B and C in their zones; one batch's legs drawn to scale, the
//! leg whose end is the commit marked, Raft-style beside PostgreSQL's flush-then-ship.

use std::rc::Rc;

use walab_core::quorum::{BatchTiming, WriteBudget};
use walab_core::time::Nanos;
use yew::prelude::*;

use crate::benches::quorum_view::{mode_name, BatchLegs};

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
}

const WIDTH: f64 = 900.0;
const LEFT: f64 = 190.0;
const ROW: f64 = 30.0;
/// What the table under the figure calls write 23's legs added up; the figure uses the same words.
pub const NAIVE_SUM_LABEL: &str = "the naive sum of every leg";

#[component]
pub fn QuorumFigure(props: &QuorumFigureProps) -> Html {
    let longest = props.modes.iter().flat_map(|mode| mode.legs.iter().map(|leg| leg.ends_after())).max().unwrap_or(Nanos(1)).max(props.modes.first().map_or(Nanos(1), |mode| mode.sum));
    let longest = longest.max(props.write_23.as_ref().map_or(Nanos(1), |budget| budget.naive_sum));
    let scale = (WIDTH - LEFT - 20.0) / longest.0.max(1) as f64;
    let x = |t: Nanos| LEFT + t.0 as f64 * scale;
    let (strip, strip_bottom) = batch_strip(props, 24.0);
    let mut y = strip_bottom + 22.0;
    let mut panels = Vec::new();
    for batch in props.modes.iter() {
        let title = match mode_name(batch.mode) {
            "raft" => "Raft-style: A sends while it syncs; commit at the W-th fastest leg",
            _ => "PostgreSQL: A flushes first, then ships to the standbys",
        };
        let top = y;
        let rows = batch.legs.iter().enumerate().map(|(index, leg)| {
            let ry = top + 16.0 + index as f64 * ROW;
            let elapsed = props.elapsed.map(|elapsed| Nanos(elapsed.0.saturating_sub(leg.starts_after.0).min(leg.length.0)));
            // The label goes right of the bar, or inside its end when the bar reaches the edge.
            let end_x = x(leg.ends_after());
            // It also goes inside when the commit line would cross it.
            let commit_x = x(batch.commit_after);
            let crosses = end_x < commit_x && end_x + 60.0 > commit_x;
            let (label_x, anchor) = if end_x + 200.0 > WIDTH || crosses { (end_x - 6.0, "end") } else { (end_x + 5.0, "start") };
            html! {
                <g class={classes!("leg", leg.waited.then_some("waited"), leg.decisive.then_some("decisive"))} data-mode={mode_name(batch.mode)}
                    data-leg={leg.replica.clone()} data-ms={format!("{:.1}", leg.length.as_millis_f64())} data-waited={leg.waited.to_string()}
                    data-decisive={leg.decisive.to_string()}>
                    <text class="replica" x="8" y={(ry + 15.0).to_string()}>{ format!("{} · {}{}", leg.replica, leg.zone, if index == 0 { " (leader)" } else { "" }) }</text>
                    <rect class="leg-bar" x={x(leg.starts_after).to_string()} y={(ry + 3.0).to_string()} width={(leg.length.0 as f64 * scale).to_string()} height="16" rx="3" />
                    if let Some(elapsed) = elapsed {
                        <rect class="leg-progress" x={x(leg.starts_after).to_string()} y={(ry + 3.0).to_string()} width={(elapsed.0 as f64 * scale).to_string()} height="16" rx="3" />
                    }
                    <text class="leg-label" x={label_x.to_string()} text-anchor={anchor} y={(ry + 16.0).to_string()}>
                        { format!("{:.1} ms{}", leg.length.as_millis_f64(), if leg.decisive { " ← commit" } else if !leg.waited { " (not waited for)" } else { "" }) }
                    </text>
                    <title>{ format!("{}: {} ({:.1} ms)", leg.replica, leg.what, leg.length.as_millis_f64()) }</title>
                </g>
            }
        });
        let commit_x = x(batch.commit_after);
        let bottom = top + 16.0 + batch.legs.len() as f64 * ROW;
        panels.push(html! {
            <g class="mode-panel" data-mode={mode_name(batch.mode)} data-commit-ms={format!("{:.1}", batch.commit_after.as_millis_f64())}>
                <text class="panel-title" x="8" y={(top + 8.0).to_string()}>{ title }</text>
                { for rows }
                <line class="commit-line" x1={commit_x.to_string()} x2={commit_x.to_string()} y1={(top + 14.0).to_string()} y2={bottom.to_string()} />
                <text class="commit-label" x={(commit_x + 4.0).to_string()} y={(bottom + 12.0).to_string()}>{ format!("commit at {:.1} ms (W = {})", batch.commit_after.as_millis_f64(), props.w) }</text>
            </g>
        });
        y = bottom + 32.0;
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
    let compare_y = y;
    let height = compare_y + 62.0;
    html! {
        <figure class="figure quorum-figure" data-figure="quorum" aria-label={format!("{}: each replica's leg; the commit waits for the W-th fastest, not the sum", props.batch_label)}>
            <svg viewBox={format!("0 0 {WIDTH} {height}")} aria-hidden="true">
                <text class="batch-title" x="8" y="14">{ props.batch_label.clone() }</text>
                { strip }
                { for panels }
                <g class="max-vs-sum" data-real-ms={format!("{:.1}", real.as_millis_f64())} data-sum-ms={format!("{:.1}", naive.as_millis_f64())}>
                    <text class="replica" x="8" y={(compare_y + 15.0).to_string()}>{ real_label }</text>
                    <rect class="commit-bar" x={LEFT.to_string()} y={(compare_y + 3.0).to_string()} width={(real.0 as f64 * scale).to_string()} height="14" rx="3" />
                    <text class="leg-label" x={(x(real) + 5.0).to_string()} y={(compare_y + 15.0).to_string()}>{ format!("{:.1} ms: the legs run at once", real.as_millis_f64()) }</text>
                    <rect class="sum-bar" x={LEFT.to_string()} y={(compare_y + 29.0).to_string()} width={(naive.0 as f64 * scale).to_string()} height="14" rx="3" />
                    <text class="leg-label" x={(x(naive) - 5.0).to_string()} y={(compare_y + 56.0).to_string()} text-anchor="end">{ format!("{}: {:.1} ms", naive_label, naive.as_millis_f64()) }</text>
                </g>
            </svg>
            <figcaption class="legend">
                <span class="key leg-waited">{ "a leg the commit waits for" }</span>
                <span class="key leg-decisive">{ "the W-th fastest: its end is the commit" }</span>
                <span class="key leg-free">{ "a leg not waited for" }</span>
                <span class="key leg-progress">{ "how far the playhead is into this batch" }</span>
                <span class="key wait-in-flight">{ "write 23 waits for the batch in flight" }</span>
                <span class="key wait-own">{ "then for its own batch" }</span>
            </figcaption>
        </figure>
    }
}

/// The branch's batches in a row on their own time axis, the one at the playhead marked,
/// and write 23's wait under them: the batch in flight, then its own. Returns the
/// drawing and its bottom edge.
fn batch_strip(props: &QuorumFigureProps, top: f64) -> (Html, f64) {
    let (Some(first), Some(last)) = (props.batches.first(), props.batches.last()) else { return (Html::default(), top) };
    let from = props.write_23.as_ref().map_or(first.start, |budget| budget.arrival.min(first.start));
    let to = last.end;
    let scale = (WIDTH - LEFT - 20.0) / (to.0.saturating_sub(from.0)).max(1) as f64;
    let x = |t: Nanos| LEFT + t.0.saturating_sub(from.0) as f64 * scale;
    let count = props.batches.len();
    let chips = props.batches.iter().enumerate().map(|(index, batch)| {
        let current = props.current == Some(batch.batch);
        html! {
            <g class={classes!("batch-chip", current.then_some("current"))} data-batch={batch.batch.to_string()} data-place={format!("{} of {count}", index + 1)}>
                <rect x={x(batch.start).to_string()} y={(top + 2.0).to_string()} width={(x(batch.end) - x(batch.start) - 2.0).to_string()} height="20" rx="3" />
                <text class="chip-label" x={((x(batch.start) + x(batch.end)) / 2.0).to_string()} y={(top + 17.0).to_string()} text-anchor="middle">
                    { format!("B{} · {}/{count}", batch.batch, index + 1) }
                </text>
            </g>
        }
    });
    let playhead = (props.now >= from && props.now <= to).then(|| html! {
        <line class="strip-playhead" x1={x(props.now).to_string()} x2={x(props.now).to_string()} y1={top.to_string()} y2={(top + 52.0).to_string()} />
    });
    let write = props.write_23.as_ref().map(|budget| {
        let own_start = budget.arrival + budget.waited_for_batch_in_flight;
        let ms = |t: Nanos| format!("{:.1}", t.as_millis_f64());
        html! {
            <g class="write-wait" data-write={budget.write.to_string()} data-waited-ms={ms(budget.waited_for_batch_in_flight)}
                data-own-ms={ms(budget.own_batch)} data-total-ms={ms(budget.total)}>
                <text class="replica" x="8" y={(top + 44.0).to_string()}>{ format!("write {}'s wait", budget.write) }</text>
                <rect class="wait-in-flight" x={x(budget.arrival).to_string()} y={(top + 32.0).to_string()} width={(x(own_start) - x(budget.arrival)).to_string()} height="14" rx="2" />
                <rect class="wait-own" x={x(own_start).to_string()} y={(top + 32.0).to_string()} width={(x(own_start + budget.own_batch) - x(own_start)).to_string()} height="14" rx="2" />
                <text class="leg-label" x={(x(budget.arrival) - 6.0).to_string()} y={(top + 44.0).to_string()} text-anchor="end">
                    { format!("{} + {} = {} ms", ms(budget.waited_for_batch_in_flight), ms(budget.own_batch), ms(budget.total)) }
                </text>
                <title>{ format!("write {} waits {} ms for the batch in flight, then {} ms for its own batch: {} ms", budget.write, ms(budget.waited_for_batch_in_flight), ms(budget.own_batch), ms(budget.total)) }</title>
            </g>
        }
    });
    let drawn = html! {
        <g class="batch-strip" data-batches={count.to_string()} data-current={props.current.map(|batch| batch.to_string()).unwrap_or_default()}>
            <text class="replica" x="8" y={(top + 17.0).to_string()}>{ "the branch's batches" }</text>
            { for chips }
            { write.unwrap_or_default() }
            { playhead.unwrap_or_default() }
        </g>
    };
    (drawn, top + 52.0)
}
