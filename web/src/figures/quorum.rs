//! Part 10: replicas A, B and C in their zones; one batch's legs drawn to scale, the
//! leg whose end is the commit marked, Raft-style beside PostgreSQL's flush-then-ship.

use std::rc::Rc;

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
}

const WIDTH: f64 = 900.0;
const LEFT: f64 = 190.0;
const ROW: f64 = 30.0;

#[component]
pub fn QuorumFigure(props: &QuorumFigureProps) -> Html {
    let longest = props.modes.iter().flat_map(|mode| mode.legs.iter().map(|leg| leg.ends_after())).max().unwrap_or(Nanos(1)).max(props.modes.first().map_or(Nanos(1), |mode| mode.sum));
    let scale = (WIDTH - LEFT - 20.0) / longest.0.max(1) as f64;
    let x = |t: Nanos| LEFT + t.0 as f64 * scale;
    let mut y = 30.0;
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
            let (label_x, anchor) = if end_x + 200.0 > WIDTH { (end_x - 6.0, "end") } else { (end_x + 5.0, "start") };
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
    let sum = props.modes.first().map(|mode| mode.sum).unwrap_or(Nanos::ZERO);
    let commit = props.modes.first().map(|mode| mode.commit_after).unwrap_or(Nanos::ZERO);
    let compare_y = y;
    let height = compare_y + 62.0;
    html! {
        <figure class="figure quorum-figure" data-figure="quorum" aria-label={format!("{}: each replica's leg; the commit waits for the W-th fastest, not the sum", props.batch_label)}>
            <svg viewBox={format!("0 0 {WIDTH} {height}")} role="img">
                <text class="batch-title" x="8" y="14">{ props.batch_label.clone() }</text>
                { for panels }
                <g class="max-vs-sum" data-commit-ms={format!("{:.1}", commit.as_millis_f64())} data-sum-ms={format!("{:.1}", sum.as_millis_f64())}>
                    <text class="replica" x="8" y={(compare_y + 15.0).to_string()}>{ "the commit waits" }</text>
                    <rect class="commit-bar" x={LEFT.to_string()} y={(compare_y + 3.0).to_string()} width={(commit.0 as f64 * scale).to_string()} height="14" rx="3" />
                    <text class="leg-label" x={(x(commit) + 5.0).to_string()} y={(compare_y + 15.0).to_string()}>{ format!("{:.1} ms: the legs run at once", commit.as_millis_f64()) }</text>
                    <text class="replica" x="8" y={(compare_y + 41.0).to_string()}>{ "every leg added up" }</text>
                    <rect class="sum-bar" x={LEFT.to_string()} y={(compare_y + 29.0).to_string()} width={(sum.0 as f64 * scale).to_string()} height="14" rx="3" />
                    <text class="leg-label" x={(x(sum) - 5.0).to_string()} y={(compare_y + 56.0).to_string()} text-anchor="end">{ format!("{:.1} ms: a naive budget", sum.as_millis_f64()) }</text>
                </g>
            </svg>
            <figcaption class="legend">
                <span class="key leg-waited">{ "a leg the commit waits for" }</span>
                <span class="key leg-decisive">{ "the W-th fastest: its end is the commit" }</span>
                <span class="key leg-free">{ "a leg not waited for" }</span>
                <span class="key leg-progress">{ "how far the playhead is into this batch" }</span>
            </figcaption>
        </figure>
    }
}
