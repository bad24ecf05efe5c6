//! Part 5's figure: the queue, the leader and its batch, and the writes it woke.
//!
//! Three places side by side: the queue (writes that arrived while a sync ran), the
//! sync (the batch the leader took, its leader marked), and the acknowledged writes.
//! Every write is one box that moves between them with a CSS transform, so a step shows
//! the leader taking the whole queue into its sync, and the OK sending them on.

use std::rc::Rc;

use yew::prelude::*;

use crate::model::group_steps::{GroupAt, Slot};

#[derive(Properties, PartialEq)]
pub struct GroupCommitFigureProps {
    pub state: Rc<GroupAt>,
    /// The sync latency, to draw how far the running sync has got.
    pub sync_latency_ns: u64,
    /// The most writes the queue or a batch holds in the run: the queue's and the sync's
    /// places are made that big, so the figure keeps its size as the run plays.
    #[prop_or(8)]
    pub most: usize,
}

/// The drawing's width and text size when it is not drawn in a measured stage.
const WIDTH: f64 = 800.0;
const TEXT: f64 = 14.0;

/// Where the three places and their boxes go, for a drawing `width` wide with text
/// `text` high: side by side when three regions fit their titles, else one above the
/// other (a phone, a projector's large type), so the figure never scrolls sideways.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GroupGeometry {
    pub width: f64,
    pub text: f64,
    pub box_w: f64,
    pub box_h: f64,
    pub gap: f64,
    pub per_row: usize,
    pub region_w: f64,
    pub stacked: bool,
    /// The region's title and the leader's mark above the boxes.
    pub header: f64,
    pub top: f64,
}

impl GroupGeometry {
    pub fn new(width: f64, text: f64) -> GroupGeometry {
        let char = text * 0.62;
        let box_w = (2.0 * char + 0.9 * text).max(text * 2.2);
        let box_h = text * 1.8;
        let gap = 4.0;
        // A region's title, "B14 syncing: 2 writes, 60 B", and four boxes.
        let region_min = (26.0 * char + 16.0).max(4.0 * (box_w + gap) + 16.0);
        let stacked = 3.0 * region_min + 2.0 * 12.0 + 16.0 > width;
        let region_w = if stacked { width - 16.0 } else { (width - 16.0 - 24.0) / 3.0 };
        let per_row = (((region_w - 16.0) / (box_w + gap)).floor() as usize).max(1);
        let header = 2.0 * text + 16.0;
        let top = if stacked { 4.0 } else { text + 14.0 };
        GroupGeometry { width, text, box_w, box_h, gap, per_row, region_w, stacked, header, top }
    }

    /// A region's height when it holds `boxes` boxes (and the sync's progress bar).
    fn region_h(&self, boxes: usize) -> f64 {
        self.header + boxes.div_ceil(self.per_row).max(1) as f64 * (self.box_h + self.gap) + 14.0
    }

    /// The boxes each region is made for: stacked, the queue and the sync hold the most a
    /// batch holds and the acknowledged all of them; side by side all three are as tall.
    fn holds(&self, region: usize, total: usize, most: usize) -> usize {
        if self.stacked && region < 2 { most.min(total).max(1) } else { total }
    }

    /// The region's top-left corner and height.
    fn region_box(&self, region: usize, total: usize, most: usize) -> (f64, f64, f64) {
        let height = self.region_h(self.holds(region, total, most));
        if self.stacked {
            let above: f64 = (0..region).map(|each| self.region_h(self.holds(each, total, most)) + 12.0).sum();
            (8.0, self.top + above, height)
        } else {
            (8.0 + region as f64 * (self.region_w + 12.0), self.top, height)
        }
    }

    fn slot_xy(&self, region: usize, index: usize, total: usize, most: usize) -> (f64, f64) {
        let (x, y, _) = self.region_box(region, total, most);
        let column = index % self.per_row;
        let row = index / self.per_row;
        (x + 8.0 + column as f64 * (self.box_w + self.gap), y + self.header + row as f64 * (self.box_h + self.gap))
    }
}

#[component]
pub fn GroupCommitFigure(props: &GroupCommitFigureProps) -> Html {
    let room = crate::layout::use_figure_room();
    let drawing = room.drawing(WIDTH, TEXT, 240.0);
    let g = GroupGeometry::new(drawing.width, drawing.text);
    let state = &props.state;
    let total = state.slots.len();
    let most = props.most;
    let (_, last_top, last_h) = g.region_box(2, total, most);
    let regions_bottom = last_top + last_h;
    let (sync_x, sync_y, sync_h) = g.region_box(1, total, most);
    // The running sync's progress, along the bottom of the sync's place.
    let (bar_x, bar_y, bar_w) = (sync_x + 8.0, sync_y + sync_h - 10.0, g.region_w - 16.0);
    let height = regions_bottom + if state.tie.is_some() { g.text + 16.0 } else { 6.0 };
    let width = g.width;
    let running_ids: Vec<u64> = state.running.iter().flat_map(|batch| batch.writes.iter().copied()).collect();
    let acked_ids: Vec<u64> =
        (1..=total as u64).filter(|id| state.slots[*id as usize - 1] == Slot::Acked).collect();
    let writes = state.slots.iter().enumerate().map(|(index, slot)| {
        let id = index as u64 + 1;
        let (x, y, shown) = match slot {
            Slot::NotYet => {
                let (x, y) = g.slot_xy(0, 0, total, most);
                (x, y - g.box_h, false)
            }
            Slot::Queued => {
                let position = state.queue.iter().position(|queued| *queued == id).unwrap_or(0);
                let (x, y) = g.slot_xy(0, position, total, most);
                (x, y, true)
            }
            Slot::Syncing { .. } => {
                let position = running_ids.iter().position(|running| *running == id).unwrap_or(0);
                let (x, y) = g.slot_xy(1, position, total, most);
                (x, y, true)
            }
            Slot::Acked | Slot::Failed => {
                let position = acked_ids.iter().position(|acked| *acked == id).unwrap_or(index);
                let (x, y) = g.slot_xy(2, position, total, most);
                (x, y, true)
            }
        };
        let woken = state.woken.contains(&id);
        let tie = state.tie == Some(id);
        let style = format!("transform: translate({x:.1}px, {y:.1}px); opacity: {};", if shown { 1 } else { 0 });
        html! {
            <g class={classes!("write", slot.name(), woken.then_some("woken"), tie.then_some("tie"))} data-write={id.to_string()} data-state={slot.name()} style={style}>
                <rect width={g.box_w.to_string()} height={g.box_h.to_string()} rx="5" />
                <text x={(g.box_w / 2.0).to_string()} y={(g.box_h / 2.0 + g.text * 0.35).to_string()} text-anchor="middle">{ id }</text>
                if matches!(slot, Slot::Syncing { leader: true, .. }) {
                    <text class="leader-mark" x="0" y="-4">{ "leader" }</text>
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
        // "Waiting" means no OK yet: the queue and the running sync's batch together.
        format!("queue: {} · {} without OK", state.queue.len(), state.queue.len() + running_ids.len()),
        running_label,
        format!("acknowledged: {}", acked_ids.len()),
    ];
    let flows = ["arrive, queue →", "leader takes the queue →", "sync returns: OK to all"];
    let regions = titles.iter().enumerate().map(|(region, title)| {
        let name = ["queue", "sync", "acked"][region];
        let (rx, ry, region_h) = g.region_box(region, total, most);
        html! {
            <g class={classes!("region", name)} data-region={name}>
                <rect x={rx.to_string()} y={ry.to_string()} width={g.region_w.to_string()} height={region_h.to_string()} rx="8" />
                <text class="region-title" x={(rx + 8.0).to_string()} y={(ry + g.text + 6.0).to_string()}>{ title.clone() }</text>
                if !g.stacked {
                    <text class="flow" x={(rx + 8.0).to_string()} y={(ry - 8.0).to_string()}>{ flows[region] }</text>
                }
            </g>
        }
    });
    let label = format!(
        "queue {}; {} waiting for their OK; {}; {} acknowledged",
        state.queue.len(),
        state.queue.len() + running_ids.len(),
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
            <svg class={classes!(drawing.fitted.then_some("fitted"))} viewBox={format!("0 0 {width} {height}")} style={format!("--text: {}px", g.text)}
                role="img" aria-label="the queue, the leader's batch and the acknowledged writes">
                { for regions }
                <g class="writes">{ for writes }</g>
                <rect class="sync-progress-track" x={bar_x.to_string()} y={bar_y.to_string()} width={bar_w.to_string()} height="6" rx="3" />
                <rect class="sync-progress" x={bar_x.to_string()} y={bar_y.to_string()} width={(bar_w * progress).to_string()} height="6" rx="3" />
                if let Some(tie) = state.tie {
                    <text class="tie-note" x="8" y={(height - 6.0).to_string()}>{ format!("tie rule: write {tie} arrived as the sync returned") }</text>
                }
            </svg>
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_regions_stack_when_their_titles_do_not_fit_side_by_side() {
        assert!(!GroupGeometry::new(800.0, 14.0).stacked, "a laptop: side by side");
        let phone = GroupGeometry::new(350.0, 14.0);
        assert!(phone.stacked);
        assert!(8.0 + 8.0 + phone.per_row as f64 * (phone.box_w + phone.gap) <= 350.0, "the boxes fit the phone's width");
        assert!(GroupGeometry::new(600.0, 17.0).stacked, "a projector's large type");
    }
}
