//! Part 1's figure: the durability chain as places in a machine, and what a failure
//! wipes.
//!
//! The process's buffer sits inside the process, the page cache inside the kernel, the
//! volatile cache and the media inside the drive, all inside one machine; replicas sit
//! on other machines. The chosen failure's reach is drawn as a red outline around the
//! places it takes, each wiped place fades and is struck through, and the first place
//! that survives is marked as where the record must be before the OK.

use yew::prelude::*;

use crate::benches::chain::{needed_before_ok, survives, Failure, Stage};

/// What [`chain_figure`] draws.
#[derive(PartialEq)]
pub struct ChainFigureProps {
    pub failure: Failure,
}

const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 276.0;

/// (x, y, width, height) of a place.
fn place_box(stage: Stage) -> (f64, f64, f64, f64) {
    match stage {
        Stage::AppBuffer => (28.0, 84.0, 132.0, 66.0),
        Stage::PageCache => (196.0, 84.0, 132.0, 66.0),
        Stage::DeviceCache => (364.0, 84.0, 150.0, 66.0),
        Stage::Media => (364.0, 160.0, 150.0, 66.0),
        Stage::OtherMachines => (586.0, 84.0, 156.0, 66.0),
    }
}

fn short_label(stage: Stage) -> &'static str {
    match stage {
        Stage::AppBuffer => "process's buffer",
        Stage::PageCache => "page cache",
        Stage::DeviceCache => "volatile cache",
        Stage::Media => "stable media",
        Stage::OtherMachines => "replicas",
    }
}

/// The outline of what a failure takes: (x, y, width, height).
fn reach(failure: Failure) -> (f64, f64, f64, f64) {
    match failure {
        Failure::ProcessCrash => (16.0, 44.0, 156.0, 196.0),
        Failure::KernelCrash => (12.0, 40.0, 332.0, 204.0),
        Failure::PowerLoss => (8.0, 40.0, 520.0, 116.0),
        Failure::MachineLoss => (4.0, 28.0, 548.0, 222.0),
    }
}

pub fn chain_figure(props: &ChainFigureProps) -> Html {
    let failure = props.failure;
    let needed = needed_before_ok(failure);
    let places = Stage::ALL.iter().map(|stage| {
        let (x, y, w, h) = place_box(*stage);
        let alive = survives(*stage, failure);
        let is_needed = *stage == needed;
        html! {
            <g class={classes!("place", if alive { "survives" } else { "wiped" }, is_needed.then_some("needed"))}
                data-place={format!("{stage:?}").to_ascii_lowercase()} data-state={if alive { "survives" } else { "wiped" }} data-needed={is_needed.to_string()}>
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
    let (rx, ry, rw, rh) = reach(failure);
    let (nx, ny, nw, _) = place_box(needed);
    html! {
        <div class="figure chain" data-figure="chain" data-failure={failure.url_name()} data-needed={format!("{needed:?}").to_ascii_lowercase()}
            aria-label={format!("If {}, everything in the red outline is wiped; the record must reach {} before the OK.", failure.label(), needed.label())}>
            <svg viewBox={format!("0 0 {WIDTH} {HEIGHT}")} role="img" aria-label="the places a record passes through, and what the chosen failure wipes">
                <g class="enclosures">
                    <rect class="machine" x="10" y="34" width="536" height="212" rx="10" />
                    <text class="enclosure-label" x="18" y="28">{ "one machine" }</text>
                    <rect class="process" x="20" y="48" width="148" height="188" rx="8" />
                    <text class="enclosure-label" x="28" y="70">{ "process" }</text>
                    <rect class="kernel" x="188" y="48" width="148" height="188" rx="8" />
                    <text class="enclosure-label" x="196" y="70">{ "kernel" }</text>
                    <rect class="drive" x="356" y="48" width="166" height="188" rx="8" />
                    <text class="enclosure-label" x="364" y="64">{ "drive" }</text>
                    <rect class="others" x="576" y="34" width="176" height="212" rx="10" />
                    <text class="enclosure-label" x="584" y="28">{ "other machines" }</text>
                </g>
                <g class="places">{ for places }</g>
                <rect class="reach" x={rx.to_string()} y={ry.to_string()} width={rw.to_string()} height={rh.to_string()} rx="12"
                    style={format!("x: {rx}px; y: {ry}px; width: {rw}px; height: {rh}px;")} />
                <text class="reach-label" x={(rx + 6.0).to_string()} y={(ry + rh + 18.0).min(HEIGHT - 6.0).to_string()}>{ format!("wiped if {}", failure.label()) }</text>
                <g class="record" data-state="needed" style={format!("transform: translate({:.1}px, {:.1}px);", nx + nw - 34.0, ny + 6.0)}>
                    <rect width="28" height="20" rx="5" />
                    <text x="14" y="15" text-anchor="middle">{ "rec" }</text>
                </g>
            </svg>
        </div>
    }
}
