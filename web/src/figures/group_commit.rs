//! Part 5's figure: the queue, the leader and its batch, and the writes it woke.
//!
//! Three places side by side: the queue (writes that arrived while a sync ran), the
//! sync (the batch the leader took, its leader marked), and the acknowledged writes.
//! Every write is one box that moves between them with a CSS transform, so a step shows
//! the leader taking the whole queue into its sync, and the OK sending them on.

use std::rc::Rc;

use yew::prelude::*;

use crate::benches::group_steps::{GroupAt, Slot};

#[derive(Properties, PartialEq)]
pub struct GroupCommitFigureProps {
    pub state: Rc<GroupAt>,
    /// The sync latency, to draw how far the running sync has got.
    pub sync_latency_ns: u64,
}

const WIDTH: f64 = 800.0;
const BOX_W: f64 = 36.0;
const BOX_H: f64 = 26.0;
const GAP: f64 = 4.0;
const PER_ROW: usize = 6;
const REGION_W: f64 = PER_ROW as f64 * (BOX_W + GAP) + 16.0;
const REGIONS_TOP: f64 = 40.0;

fn region_left(region: usize) -> f64 {
    8.0 + region as f64 * (REGION_W + 12.0)
}

fn slot_xy(region: usize, index: usize) -> (f64, f64) {
    let column = index % PER_ROW;
    let row = index / PER_ROW;
    (region_left(region) + 8.0 + column as f64 * (BOX_W + GAP), REGIONS_TOP + 44.0 + row as f64 * (BOX_H + GAP))
}

#[component]
pub fn GroupCommitFigure(props: &GroupCommitFigureProps) -> Html {
    let state = &props.state;
    let total = state.slots.len();
    let rows_needed = total.div_ceil(PER_ROW).max(1);
    let region_h = 44.0 + rows_needed as f64 * (BOX_H + GAP) + 8.0;
    let height = REGIONS_TOP + region_h + if state.tie.is_some() { 50.0 } else { 30.0 };
    let running_ids: Vec<u64> = state.running.iter().flat_map(|batch| batch.writes.iter().copied()).collect();
    let acked_ids: Vec<u64> =
        (1..=total as u64).filter(|id| state.slots[*id as usize - 1] == Slot::Acked).collect();
    let writes = state.slots.iter().enumerate().map(|(index, slot)| {
        let id = index as u64 + 1;
        let (x, y, shown) = match slot {
            Slot::NotYet => {
                let (x, y) = slot_xy(0, 0);
                (x, y - 30.0, false)
            }
            Slot::Queued => {
                let position = state.queue.iter().position(|queued| *queued == id).unwrap_or(0);
                let (x, y) = slot_xy(0, position);
                (x, y, true)
            }
            Slot::Syncing { .. } => {
                let position = running_ids.iter().position(|running| *running == id).unwrap_or(0);
                let (x, y) = slot_xy(1, position);
                (x, y, true)
            }
            Slot::Acked | Slot::Failed => {
                let position = acked_ids.iter().position(|acked| *acked == id).unwrap_or(index);
                let (x, y) = slot_xy(2, position);
                (x, y, true)
            }
        };
        let woken = state.woken.contains(&id);
        let tie = state.tie == Some(id);
        let style = format!("transform: translate({x:.1}px, {y:.1}px); opacity: {};", if shown { 1 } else { 0 });
        html! {
            <g class={classes!("write", slot.name(), woken.then_some("woken"), tie.then_some("tie"))} data-write={id.to_string()} data-state={slot.name()} style={style}>
                <rect width={BOX_W.to_string()} height={BOX_H.to_string()} rx="5" />
                <text x={(BOX_W / 2.0).to_string()} y="18" text-anchor="middle">{ id }</text>
                if matches!(slot, Slot::Syncing { leader: true, .. }) {
                    <text class="leader-mark" x={(BOX_W / 2.0).to_string()} y="-4" text-anchor="middle">{ "leader" }</text>
                }
            </g>
        }
    });
    let running_label = match state.running.as_slice() {
        [] => "no sync running".to_string(),
        [batch] => format!("B{} syncing: {}, {} B", batch.batch, crate::format::count(batch.writes.len(), "write"), batch.bytes),
        many => many.iter().map(|batch| format!("B{}", batch.batch)).collect::<Vec<_>>().join(" + ") + " syncing",
    };
    // How far the (first) running sync has got, for its progress bar.
    let progress = state
        .running
        .first()
        .map(|batch| ((state.at.0.saturating_sub(batch.start.0)) as f64 / props.sync_latency_ns.max(1) as f64).clamp(0.0, 1.0))
        .unwrap_or(0.0);
    let titles = [
        format!("queue: {} waiting", state.queue.len()),
        running_label,
        format!("acknowledged: {}", acked_ids.len()),
    ];
    let regions = titles.iter().enumerate().map(|(region, title)| {
        let name = ["queue", "sync", "acked"][region];
        html! {
            <g class={classes!("region", name)} data-region={name}>
                <rect x={region_left(region).to_string()} y={REGIONS_TOP.to_string()} width={REGION_W.to_string()} height={region_h.to_string()} rx="8" />
                <text class="region-title" x={(region_left(region) + 8.0).to_string()} y={(REGIONS_TOP + 18.0).to_string()}>{ title.clone() }</text>
            </g>
        }
    });
    let bar_x = region_left(1);
    let bar_y = REGIONS_TOP + region_h + 8.0;
    let arrows_y = REGIONS_TOP - 12.0;
    let label = format!(
        "queue {}; {}; {} acknowledged",
        state.queue.len(),
        titles[1],
        acked_ids.len()
    );
    let leader = state.running.first().map(|batch| batch.leader.to_string()).unwrap_or_default();
    html! {
        <div class="figure group-commit" data-figure="group-commit" aria-label={label}
            data-queue={state.queue.iter().map(u64::to_string).collect::<Vec<_>>().join(",")}
            data-leader={leader}
            data-batch={state.running.first().map(|batch| batch.batch.to_string()).unwrap_or_default()}
            data-tie={state.tie.map(|write| write.to_string()).unwrap_or_default()}>
            <svg viewBox={format!("0 0 {WIDTH} {height}")} role="img" aria-label="the queue, the leader's batch and the acknowledged writes">
                <text class="flow" x={(region_left(0) + 8.0).to_string()} y={arrows_y.to_string()}>{ "arrive, queue →" }</text>
                <text class="flow" x={(region_left(1) + 8.0).to_string()} y={arrows_y.to_string()}>{ "leader takes the queue →" }</text>
                <text class="flow" x={(region_left(2) + 8.0).to_string()} y={arrows_y.to_string()}>{ "sync returns: OK to all" }</text>
                { for regions }
                <g class="writes">{ for writes }</g>
                <rect class="sync-progress-track" x={(bar_x + 8.0).to_string()} y={bar_y.to_string()} width={(REGION_W - 16.0).to_string()} height="8" rx="4" />
                <rect class="sync-progress" x={(bar_x + 8.0).to_string()} y={bar_y.to_string()} width={((REGION_W - 16.0) * progress).to_string()} height="8" rx="4" />
                if let Some(tie) = state.tie {
                    <text class="tie-note" x={(region_left(0) + 8.0).to_string()} y={(bar_y + 32.0).to_string()}>{ format!("tie rule: write {tie} arrived as the sync returned") }</text>
                }
            </svg>
        </div>
    }
}
