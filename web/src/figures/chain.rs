//! Part 1's figure: the durability chain as places in a machine, and what a failure
//! wipes.
//!
//! The process's buffer sits inside the process, the page cache inside the kernel, the
//! volatile cache and the media inside the drive, all inside one machine; replicas sit
//! on other machines. The chosen failure's reach is drawn as a red outline around the
//! places it takes, each wiped place fades and is struck through, and the first place
//! that survives is marked as where the record must be before the OK.

use yew::prelude::*;

use crate::model::chain::{needed_before_ok, survives, Failure, Stage};

/// What [`chain_figure`] draws.
#[derive(PartialEq)]
pub struct ChainFigureProps {
    pub failure: Failure,
}

const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 276.0;
/// On a phone the places stack: the machine's layers one under another, the other
/// machines below it, so the figure fits the phone's width instead of swiping sideways.
const NARROW_WIDTH: f64 = 360.0;
const NARROW_HEIGHT: f64 = 506.0;
/// Below this room (CSS pixels) the stacked layout is drawn.
const NARROW_BELOW: f64 = 560.0;

/// (x, y, width, height) of a place.
fn place_box(stage: Stage, narrow: bool) -> (f64, f64, f64, f64) {
    match (stage, narrow) {
        (Stage::AppBuffer, false) => (28.0, 84.0, 132.0, 66.0),
        (Stage::PageCache, false) => (196.0, 84.0, 132.0, 66.0),
        (Stage::DeviceCache, false) => (364.0, 84.0, 150.0, 66.0),
        (Stage::Media, false) => (364.0, 160.0, 150.0, 66.0),
        (Stage::OtherMachines, false) => (586.0, 84.0, 156.0, 66.0),
        (Stage::AppBuffer, true) => (110.0, 40.0, 228.0, 66.0),
        (Stage::PageCache, true) => (110.0, 126.0, 228.0, 66.0),
        (Stage::DeviceCache, true) => (110.0, 212.0, 228.0, 66.0),
        (Stage::Media, true) => (110.0, 284.0, 228.0, 66.0),
        (Stage::OtherMachines, true) => (110.0, 402.0, 228.0, 66.0),
    }
}

/// The enclosures: (class, x, y, width, height, label, label's x and y).
type Enclosure = (&'static str, f64, f64, f64, f64, &'static str, f64, f64);

fn enclosures(narrow: bool) -> [Enclosure; 5] {
    if narrow {
        [
            ("machine", 6.0, 24.0, 348.0, 342.0, "one machine", 10.0, 18.0),
            ("process", 14.0, 34.0, 332.0, 78.0, "process", 22.0, 56.0),
            ("kernel", 14.0, 120.0, 332.0, 78.0, "kernel", 22.0, 142.0),
            ("drive", 14.0, 206.0, 332.0, 152.0, "drive", 22.0, 228.0),
            ("others", 6.0, 394.0, 348.0, 82.0, "other machines", 10.0, 388.0),
        ]
    } else {
        [
            ("machine", 10.0, 34.0, 536.0, 212.0, "one machine", 18.0, 28.0),
            ("process", 20.0, 48.0, 148.0, 188.0, "process", 28.0, 70.0),
            ("kernel", 188.0, 48.0, 148.0, 188.0, "kernel", 196.0, 70.0),
            ("drive", 356.0, 48.0, 166.0, 188.0, "drive", 364.0, 64.0),
            ("others", 576.0, 34.0, 176.0, 212.0, "other machines", 584.0, 28.0),
        ]
    }
}

fn short_label(stage: Stage) -> &'static str {
    match stage {
        Stage::AppBuffer => "buffer",
        Stage::PageCache => "page cache",
        Stage::DeviceCache => "volatile cache",
        Stage::Media => "stable media",
        Stage::OtherMachines => "replicas",
    }
}

/// The outline of what a failure takes: (x, y, width, height).
fn reach(failure: Failure, narrow: bool) -> (f64, f64, f64, f64) {
    match (failure, narrow) {
        (Failure::ProcessCrash, false) => (16.0, 44.0, 156.0, 196.0),
        (Failure::KernelCrash, false) => (12.0, 40.0, 332.0, 204.0),
        (Failure::PowerLoss, false) => (8.0, 40.0, 520.0, 116.0),
        (Failure::MachineLoss, false) => (4.0, 28.0, 548.0, 222.0),
        (Failure::ProcessCrash, true) => (10.0, 30.0, 340.0, 86.0),
        (Failure::KernelCrash, true) => (10.0, 30.0, 340.0, 172.0),
        (Failure::PowerLoss, true) => (8.0, 30.0, 344.0, 251.0),
        (Failure::MachineLoss, true) => (3.0, 20.0, 354.0, 350.0),
    }
}

/// The chain for the chosen failure, laid out for the stage's `room`.
pub fn chain_figure(props: &ChainFigureProps, room: crate::layout::FigureRoom) -> Html {
    let failure = props.failure;
    let narrow = room.measured() && room.width < NARROW_BELOW;
    let (width, height) = if narrow { (NARROW_WIDTH, NARROW_HEIGHT) } else { (WIDTH, HEIGHT) };
    let needed = needed_before_ok(failure);
    let places = Stage::ALL.iter().map(|stage| {
        let (x, y, w, h) = place_box(*stage, narrow);
        let alive = survives(*stage, failure);
        let is_needed = *stage == needed;
        html! {
            <g class={classes!("place", if alive { "survives" } else { "wiped" }, is_needed.then_some("needed"))}
                data-place={stage.data_name()} data-state={if alive { "survives" } else { "wiped" }} data-needed={is_needed.to_string()}>
                <rect x={x.to_string()} y={y.to_string()} width={w.to_string()} height={h.to_string()} rx="6" />
                <text class="place-label" x={(x + 8.0).to_string()} y={(y + 22.0).to_string()}>{ short_label(*stage) }</text>
                <text class="place-verdict" x={(x + 8.0).to_string()} y={(y + 40.0).to_string()}>{ if alive { "survives" } else { "wiped" } }</text>
                <line class="strike" x1={(x + 4.0).to_string()} y1={(y + h - 6.0).to_string()} x2={(x + w - 4.0).to_string()} y2={(y + 6.0).to_string()} />
                if is_needed {
                    <text class="needed-mark" x={(x + 8.0).to_string()} y={(y + h - 9.0).to_string()}>{ "OK only once here" }</text>
                }
            </g>
        }
    });
    let (rx, ry, rw, rh) = reach(failure, narrow);
    let (nx, ny, nw, _) = place_box(needed, narrow);
    // Stacked, the outline's label goes under the whole figure, clear of every place.
    let reach_label_y = if narrow { height - 10.0 } else { (ry + rh + 18.0).min(height - 6.0) };
    let boxes = enclosures(narrow).map(|(class, x, y, w, h, label, lx, ly)| html! { <>
        <rect class={class} x={x.to_string()} y={y.to_string()} width={w.to_string()} height={h.to_string()} rx="8" />
        <text class="enclosure-label" x={lx.to_string()} y={ly.to_string()}>{ label }</text>
    </> });
    // The svg is keyed by its layout: when the stage's measured room switches it, the
    // figure is drawn afresh instead of sliding every place from the other layout.
    html! {
        <div class="figure chain" data-figure="chain" data-failure={failure.url_name()} data-needed={needed.data_name()}
            aria-label={format!("If {}, everything in the red outline is wiped; the record must reach {} before the OK.", failure.label(), needed.label())}>
            <svg key={if narrow { "narrow" } else { "wide" }} class={classes!(narrow.then_some("fitted"))} viewBox={format!("0 0 {width} {height}")} role="img" aria-label="the places a record passes through, and what the chosen failure wipes">
                <g class="enclosures">{ for boxes }</g>
                <g class="places">{ for places }</g>
                <rect class="reach" x={rx.to_string()} y={ry.to_string()} width={rw.to_string()} height={rh.to_string()} rx="12"
                    style={format!("x: {rx}px; y: {ry}px; width: {rw}px; height: {rh}px;")} />
                <text class="reach-label" x={(rx + 6.0).to_string()} y={reach_label_y.to_string()}>{ format!("wiped if {}", failure.label()) }</text>
                <g class="record" data-state="needed" style={format!("transform: translate({:.1}px, {:.1}px);", nx + nw - 34.0, ny + 6.0)}>
                    <rect width="28" height="20" rx="5" />
                    <text x="14" y="15" text-anchor="middle">{ "rec" }</text>
                </g>
            </svg>
        </div>
    }
}
