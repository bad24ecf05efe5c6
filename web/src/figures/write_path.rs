//! Part 0's figure: the write path as one picture, and sync per write's queue.
//!
//! Eight stations in two rows (client, log record, page cache, device cache; media,
//! MemTable, visible, OK). A token for the write slides from station to station as the
//! player steps (a CSS transform); the stations from the media on are marked as
//! surviving a power loss. Under it, sync per write's queue at the chosen load: one bar
//! per sync latency, the writes still waiting for their OK, so a load past 1 / L is seen
//! as a queue that only grows.

use std::rc::Rc;

use walab_core::time::Nanos;
use yew::prelude::*;

use crate::model::write_path::{PathStep, Station};
use crate::parts::controls::group_thousands;

/// What [`write_path`] draws.
#[derive(PartialEq)]
pub struct WritePathProps {
    pub steps: Rc<Vec<PathStep>>,
    /// Stations reached (0 before the first).
    pub reached: usize,
}

const WIDTH: f64 = 760.0;
const BOX_W: f64 = 170.0;
const GAP_X: f64 = 20.0;
const GAP_Y: f64 = 46.0;

/// Where the stations go for a drawing `width` wide with text `text` high: four a row
/// when four boxes fit their labels, else two (a phone), the rows snaking so the path is
/// one line; the boxes share the width, so the figure never scrolls sideways.
#[derive(Clone, Copy, Debug, PartialEq)]
struct PathGeometry {
    per_row: usize,
    box_w: f64,
    box_h: f64,
    top: f64,
}

impl PathGeometry {
    fn new(width: f64, text: f64) -> PathGeometry {
        // A box holds "device cache" and the instant under it.
        let box_min = 13.0 * text * 0.62 + 20.0;
        let per_row = if 4.0 * box_min + 3.0 * GAP_X + 20.0 <= width { 4 } else { 2 };
        let box_w = ((width - 20.0 - GAP_X * (per_row as f64 - 1.0)) / per_row as f64).min(BOX_W * 1.3);
        PathGeometry { per_row, box_w, box_h: text * 2.0 + 26.0, top: text * 1.3 + 16.0 }
    }

    fn xy(&self, index: usize) -> (f64, f64) {
        let row = index / self.per_row;
        let column = index % self.per_row;
        // Every other row runs right to left, so the path is one continuous snake.
        let column = if row % 2 == 1 { self.per_row - 1 - column } else { column };
        (10.0 + column as f64 * (self.box_w + GAP_X), self.top + row as f64 * (self.box_h + GAP_Y))
    }

    fn height(&self) -> f64 {
        let rows = Station::ALL.len().div_ceil(self.per_row);
        self.top + rows as f64 * (self.box_h + GAP_Y) - GAP_Y + 10.0
    }
}

/// Write 1's path, laid out for `room` (a stage's measured figure slot).
pub fn write_path(props: &WritePathProps, room: crate::layout::FigureRoom) -> Html {
    let drawing = room.drawing(WIDTH, 14.0, 280.0);
    let (width, text) = (drawing.width, drawing.text);
    let g = PathGeometry::new(width, text);
    let height = g.height();
    let current = props.reached.checked_sub(1).and_then(|index| props.steps.get(index));
    let stations = Station::ALL.iter().enumerate().map(|(index, station)| {
        let (x, y) = g.xy(index);
        let state = if index + 1 < props.reached {
            "passed"
        } else if index + 1 == props.reached {
            "here"
        } else {
            "ahead"
        };
        let at = props.steps.iter().find(|step| step.station == *station).map(|step| format!("{} ms", crate::url_state::format_millis(step.at)));
        html! {
            <g class={classes!("station", state, station.durable().then_some("durable"))} data-station={station.name()} data-state={state}>
                <rect x={x.to_string()} y={y.to_string()} width={g.box_w.to_string()} height={g.box_h.to_string()} rx="8" />
                <text class="station-label" x={(x + 10.0).to_string()} y={(y + text + 6.0).to_string()}>{ station.label() }</text>
                <text class="station-at" x={(x + 10.0).to_string()} y={(y + 2.0 * text + 14.0).to_string()}>
                    { if index < props.reached { at.unwrap_or_default() } else { String::new() } }
                </text>
            </g>
        }
    });
    let arrows = (0..Station::ALL.len() - 1).map(|index| {
        let (x1, y1) = g.xy(index);
        let (x2, y2) = g.xy(index + 1);
        let (ax, ay, bx, by) = if y1 == y2 {
            if x2 > x1 {
                (x1 + g.box_w, y1 + g.box_h / 2.0, x2, y2 + g.box_h / 2.0)
            } else {
                (x1, y1 + g.box_h / 2.0, x2 + g.box_w, y2 + g.box_h / 2.0)
            }
        } else {
            (x1 + g.box_w / 2.0, y1 + g.box_h, x2 + g.box_w / 2.0, y2)
        };
        html! { <line class={classes!("path-arrow", (index + 1 < props.reached).then_some("passed"))} x1={ax.to_string()} y1={ay.to_string()} x2={bx.to_string()} y2={by.to_string()} marker-end="url(#write-path-head)" /> }
    });
    let token_w = text * 2.0;
    let (token_x, token_y) = match props.reached.checked_sub(1) {
        Some(index) => {
            let (x, y) = g.xy(index);
            (x + g.box_w - token_w - 6.0, y + 6.0)
        }
        None => (g.xy(0).0 + g.box_w - token_w - 6.0, g.xy(0).1 - text - 10.0),
    };
    let station_name = current.map(|step| step.station.name()).unwrap_or("none");
    let label = current.map(|step| step.caption.clone()).unwrap_or_else(|| "the write has not left the client yet".to_string());
    // The note sits over the first durable station's row.
    let media = Station::ALL.iter().position(|station| station.durable()).unwrap_or(0);
    let (_, durable_y) = g.xy(media);
    let note = "from the media on: survives power loss";
    html! {
        <div class="figure write-path" data-figure="write-path" data-station={station_name} aria-label={label}>
            <svg class={classes!(drawing.fitted.then_some("fitted"))} style={format!("--text: {text}px")}
                viewBox={format!("0 0 {width} {height}")} role="img" aria-label="one write's path from the client to its OK">
                <text class="durable-note" x="10" y={(durable_y - 12.0).to_string()}>{ note }</text>
                <defs>
                    <marker id="write-path-head" viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" markerWidth="11" markerHeight="11" orient="auto-start-reverse">
                        <path d="M 0 0 L 10 5 L 0 10 z" class="path-head" />
                    </marker>
                </defs>
                <g class="arrows">{ for arrows }</g>
                <g class="stations">{ for stations }</g>
                <g class="token" data-write="1" data-state={station_name}
                    style={format!("transform: translate({token_x:.1}px, {token_y:.1}px); opacity: {};", if props.reached == 0 { 0.4 } else { 1.0 })}>
                    <rect width={token_w.to_string()} height={(text + 8.0).to_string()} rx="6" />
                    <text x={(token_w / 2.0).to_string()} y={(text + 2.0).to_string()} text-anchor="middle">{ "w1" }</text>
                </g>
            </svg>
        </div>
    }
}

#[derive(Properties, PartialEq)]
pub struct LogQueueProps {
    /// (instant, writes waiting) at each sync latency of the run.
    pub queue: Rc<Vec<(Nanos, u64)>>,
    pub load_per_second: u64,
    pub ceiling_per_second: u64,
}

/// Sync per write's queue over the run, one bar per sync latency. Laid out for the room
/// its stage gives it: the title wraps instead of running off the right edge, and the
/// time ticks thin out so they never touch.
#[component]
pub fn LogQueue(props: &LogQueueProps) -> Html {
    let crate::layout::Drawing { width, text, char, fitted } = crate::layout::use_figure_room().drawing(WIDTH, 13.5, 300.0);
    let last = props.queue.last().map(|(_, waiting)| *waiting).unwrap_or(0);
    let middle = props.queue.get(props.queue.len() / 2).map(|(_, waiting)| *waiting).unwrap_or(0);
    let grows = last > middle;
    let title = format!(
        "sync per write at {} writes/s (ceiling 1 / L = {}/s): {} waiting for their OK at the end",
        group_thousands(props.load_per_second),
        group_thousands(props.ceiling_per_second),
        group_thousands(last)
    );
    let peak = props.queue.iter().map(|(_, waiting)| *waiting).max().unwrap_or(0).max(1);
    let left = (group_thousands(peak).len() as f64 + 1.0) * char + 6.0;
    let lines = crate::layout::wrap_words(&title, ((width - 8.0) / char).floor().max(10.0) as usize);
    let line_h = text * 1.3;
    let top = 8.0 + line_h * lines.len() as f64 + text * 0.9;
    let (plot, bottom) = (110.0, text * 1.3 + 10.0);
    let height = top + plot + bottom;
    let count = props.queue.len().max(1);
    let bar_w = (width - left - 10.0) / count as f64;
    // A tick label is at most "20 ms" wide; every `every` bars, so neighbours keep a gap.
    let every = ((6.5 * char + text) / bar_w).ceil().max(1.0) as usize;
    let y_of = |waiting: u64| top + plot - waiting as f64 / peak as f64 * plot;
    let bars = props.queue.iter().enumerate().map(|(index, (at, waiting))| {
        let x = left + index as f64 * bar_w;
        let y = y_of(*waiting);
        html! {
            <g class="queue-bar" data-at-ms={crate::url_state::format_millis(*at)} data-waiting={waiting.to_string()}>
                <rect x={(x + 2.0).to_string()} y={y.to_string()} width={(bar_w - 4.0).max(1.0).to_string()} height={(top + plot - y).max(0.0).to_string()} />
                if index % every == 0 {
                    <text class="tick" x={(x + bar_w / 2.0).min(width - 3.2 * char).to_string()} y={(height - 6.0).to_string()} text-anchor="middle">{ crate::format::ms(*at) }</text>
                }
            </g>
        }
    });
    let title_lines = lines.iter().enumerate().map(|(index, line)| {
        html! { <tspan x="4" y={(8.0 + line_h * (index as f64 + 0.8)).to_string()}>{ line.clone() }</tspan> }
    });
    html! {
        <div class="figure log-queue" data-figure="log-queue" data-queue-last={last.to_string()} data-queue-peak={peak.to_string()} aria-label={title.clone()}>
            <svg class={classes!(fitted.then_some("fitted"))} viewBox={format!("0 0 {width} {height}")} style={format!("--text: {text}px")} role="img" aria-label="sync per write's queue over the run">
                <text class="queue-title">{ for title_lines }</text>
                <text class="tick" x={(left - 6.0).to_string()} y={(y_of(peak) + text * 0.35).to_string()} text-anchor="end">{ group_thousands(peak) }</text>
                <text class="tick" x={(left - 6.0).to_string()} y={(top + plot).to_string()} text-anchor="end">{ "0" }</text>
                <g class={classes!("bars", grows.then_some("growing"))}>{ for bars }</g>
            </svg>
        </div>
    }
}
