//! Part 2's figure: wal-1's units on their way from the process to the media.
//!
//! Four rows are the four places a byte can be (the process's memory, the kernel's page
//! cache, the drive's volatile cache, the stable media); a fifth is the directory. Each
//! of wal-1's units is drawn once in the media row as what the media holds, and once as
//! a moving copy that sits in the row of its state: it slides down a row per step (a
//! CSS transform, so it moves) and fades into the media row when the drive's flush puts
//! it there. The records being built in the process are drawn at their byte offsets
//! above the units, so their boundaries line up with the units they fill.

use std::rc::Rc;

use yew::prelude::*;

use crate::model::journey::{CallAt, JourneyStep, UnitPlace, WritePlace};

/// What [`sync_journey`] draws.
#[derive(PartialEq)]
pub struct SyncJourneyProps {
    pub step: Rc<JourneyStep>,
    pub unit_bytes: u64,
    pub segment_bytes: u64,
    /// (write, first byte, end byte) in the segment.
    pub records: Rc<Vec<(u64, u64, u64)>>,
}

const CELL_HEIGHT: f64 = 44.0;
/// Below this room (CSS pixels) the figure is drawn for a phone: each row's name above
/// its units instead of beside them, so the units get the whole width.
const NARROW_BELOW: f64 = 560.0;

/// Where things go: beside the row names on a wide stage, under them on a phone.
#[derive(Clone, Copy)]
struct Geometry {
    narrow: bool,
    width: f64,
    label_right: f64,
    units_left: f64,
    units_width: f64,
    row: f64,
    top: f64,
}

const WIDE: Geometry = Geometry { narrow: false, width: 760.0, label_right: 186.0, units_left: 194.0, units_width: 556.0, row: 56.0, top: 34.0 };
const NARROW: Geometry = Geometry { narrow: true, width: 360.0, label_right: 0.0, units_left: 4.0, units_width: 352.0, row: 70.0, top: 76.0 };

impl Geometry {
    fn row_y(self, row: usize) -> f64 {
        self.top + self.row * row as f64
    }
}

/// Rows, top to bottom.
const ROWS: [(&str, &str); 5] = [
    ("client", "client (OK)"),
    ("process", "process memory"),
    ("page-cache", "page cache (kernel)"),
    ("device-cache", "drive's volatile cache"),
    ("media", "stable media"),
];

fn row_of(place: UnitPlace) -> usize {
    match place {
        UnitPlace::Dirty => 2,
        UnitPlace::DeviceCache => 3,
        UnitPlace::Absent | UnitPlace::Zero | UnitPlace::Media => 4,
    }
}

fn active_row(call: CallAt) -> Option<usize> {
    match call {
        CallAt::Write => Some(2),
        CallAt::SyncRunning => Some(3),
        CallAt::Flush | CallAt::Create => Some(4),
        CallAt::SyncReturned | CallAt::Ack => Some(0),
        CallAt::Idle => Some(1),
    }
}

fn records_text(records: &[u64]) -> String {
    match records {
        [] => "zeros".to_string(),
        [one] => format!("rec {one}"),
        many => format!("rec {}", many.iter().map(u64::to_string).collect::<Vec<_>>().join("+")),
    }
}

/// The journey at this step, laid out for the stage's `room`.
pub fn sync_journey(props: &SyncJourneyProps, room: crate::layout::FigureRoom) -> Html {
    let step = &props.step;
    let geo = if room.measured() && room.width < NARROW_BELOW { NARROW } else { WIDE };
    let segment = props.segment_bytes.max(1) as f64;
    let bx = |byte: u64| geo.units_left + byte as f64 / segment * geo.units_width;
    let unit_width = props.unit_bytes as f64 / segment * geo.units_width;
    let height = geo.row_y(ROWS.len()) + 40.0;
    let active = active_row(step.call);
    let rows = ROWS.iter().enumerate().map(|(index, (name, label))| {
        let y = geo.row_y(index);
        // A phone names the row above its units; a wide stage beside them.
        let (band_y, label_x, label_y, anchor) =
            if geo.narrow { (y - 22.0, 4.0, y - 6.0, "start") } else { (y - 6.0, geo.label_right - 8.0, y + CELL_HEIGHT / 2.0 + 4.0, "end") };
        html! {
            <g class={classes!("row", (active == Some(index)).then_some("active"))} data-row={*name}>
                <rect class="row-band" x="0" y={band_y.to_string()} width={geo.width.to_string()} height={(geo.row - 2.0).to_string()} rx="6" />
                <text class="row-label" x={label_x.to_string()} y={label_y.to_string()} text-anchor={anchor}>{ *label }</text>
            </g>
        }
    });
    // What the media holds, unit by unit (always drawn).
    let media_y = geo.row_y(4);
    let media = step.units.iter().map(|unit| {
        let x = bx(u64::from(unit.unit) * props.unit_bytes);
        let holds = if unit.place == UnitPlace::Absent { "no file".to_string() } else { records_text(&unit.media_records) };
        html! {
            <g class={classes!("media-cell", unit.media_records.is_empty().then_some("zeros"), (unit.place == UnitPlace::Absent).then_some("absent"))}
                data-media-unit={unit.unit.to_string()} data-media-records={unit.media_records.iter().map(u64::to_string).collect::<Vec<_>>().join(",")}>
                <rect x={(x + 2.0).to_string()} y={media_y.to_string()} width={(unit_width - 4.0).to_string()} height={CELL_HEIGHT.to_string()} rx="4" />
                <text x={(x + 8.0).to_string()} y={(media_y + 17.0).to_string()}>{ format!("unit {}", unit.unit) }</text>
                <text class="holds" x={(x + 8.0).to_string()} y={(media_y + 35.0).to_string()}>{ holds }</text>
            </g>
        }
    });
    // The moving copy of each unit, in the row of its state.
    let moving = step.units.iter().map(|unit| {
        let x = bx(u64::from(unit.unit) * props.unit_bytes);
        let y = geo.row_y(row_of(unit.place));
        let on_media = matches!(unit.place, UnitPlace::Absent | UnitPlace::Zero | UnitPlace::Media);
        // `--x` and `--p` (the process row) let a unit that turns dirty come down from the
        // process, as write() copies it, instead of rising from the media row.
        let style = format!("transform: translate({x:.1}px, {y:.1}px); opacity: {}; --x: {x:.1}px; --p: {:.1}px", if on_media { 0 } else { 1 }, geo.row_y(1));
        html! {
            <g class={classes!("unit", unit.place.name())} data-unit={unit.unit.to_string()} data-state={unit.place.name()}
                data-cache-records={unit.cache_records.iter().map(u64::to_string).collect::<Vec<_>>().join(",")} style={style}>
                <title>{ format!("unit {}: {}", unit.unit, unit.place.label()) }</title>
                <rect x="2" y="0" width={(unit_width - 4.0).to_string()} height={CELL_HEIGHT.to_string()} rx="4" />
                <text x="8" y="17">{ format!("unit {}", unit.unit) }</text>
                <text class="holds" x="8" y="35">{ if geo.narrow { records_text(&unit.cache_records) } else { format!("{} · {}", records_text(&unit.cache_records), if unit.place == UnitPlace::Dirty { "dirty" } else { "sent" }) } }</text>
            </g>
        }
    });
    // Records: drawn at their bytes, in the process row while they are built there.
    let process_y = geo.row_y(1);
    let client_y = geo.row_y(0);
    let records = props.records.iter().map(|(id, from, to)| {
        let write = step.writes.iter().find(|write| write.id == *id);
        let place = write.map_or(WritePlace::NotYet, |write| write.place);
        let acked = write.is_some_and(|write| write.acked);
        let (x, width) = (bx(*from), bx(*to) - bx(*from));
        html! {
            <g class={classes!("record", place.name(), acked.then_some("acked"))} data-write={id.to_string()} data-state={place.name()} data-acked={acked.to_string()}>
                <g class="in-process" style={format!("opacity: {}", if place == WritePlace::Process { 1 } else { 0 })}>
                    <rect x={(x + 1.0).to_string()} y={process_y.to_string()} width={(width - 2.0).to_string()} height={CELL_HEIGHT.to_string()} rx="4" />
                    <text x={(x + 6.0).to_string()} y={(process_y + 17.0).to_string()}>{ format!("{} {id}", if geo.narrow { "rec" } else { "record" }) }</text>
                    <text class="holds" x={(x + 6.0).to_string()} y={(process_y + 35.0).to_string()}>{ format!("{}{from}-{}", if geo.narrow { "" } else { "bytes " }, to - 1) }</text>
                </g>
                <g class="ok" style={format!("opacity: {}", if acked { 1 } else { 0 })}>
                    <rect x={(x + 1.0).to_string()} y={(client_y + 6.0).to_string()} width={(width - 2.0).to_string()} height={(CELL_HEIGHT - 12.0).to_string()} rx="4" />
                    <text x={(x + 6.0).to_string()} y={(client_y + 27.0).to_string()}>{ format!("OK {id}") }</text>
                </g>
            </g>
        }
    });
    // Unit boundaries, as a ruler of bytes under the media row.
    let ruler_y = media_y + CELL_HEIGHT + 14.0;
    let ruler = (0..=step.units.len()).map(|unit| {
        let byte = unit as u64 * props.unit_bytes;
        let anchor = if unit == step.units.len() { "end" } else { "middle" };
        html! { <text class="ruler" x={bx(byte).to_string()} y={ruler_y.to_string()} text-anchor={anchor}>{ byte }</text> }
    });
    let directory = if step.directory.is_empty() { "directory: (no segment yet)".to_string() } else { format!("directory (synced): {}", step.directory.join(", ")) };
    let call = match step.call {
        CallAt::Idle => "",
        CallAt::Create => "create + fsync(dir)",
        CallAt::Write => "write()",
        CallAt::SyncRunning => "fdatasync() running",
        CallAt::Flush => "drive: cache flush",
        CallAt::SyncReturned => "fdatasync() returned",
        CallAt::Ack => "OK sent",
    };
    let dirty = step.units.iter().filter(|unit| unit.place == UnitPlace::Dirty).count();
    let on_media = step.units.iter().filter(|unit| !unit.media_records.is_empty()).count();
    let label = format!("wal-1's units: {dirty} dirty in the page cache, {on_media} holding records on the media. {}", step.caption);
    // The svg is keyed by its layout: when the stage's measured room switches it, the
    // figure is drawn afresh instead of sliding every place from the other layout.
    html! {
        <div class="figure sync-journey" data-figure="sync-journey" data-call={step.call.name()} aria-label={label}>
            <svg key={if geo.narrow { "narrow" } else { "wide" }} class={classes!(geo.narrow.then_some("fitted"))} style={geo.narrow.then_some("--text: 13px")} viewBox={format!("0 0 {} {height}", geo.width)}
                role="img" aria-label="wal-1's units between the process and the media">
                <text class="call" x={geo.units_left.to_string()} y="20" data-call={step.call.name()}>{ call }</text>
                // A phone puts the directory on a line of its own, under the call.
                <text class="directory" x={(if geo.narrow { 4.0 } else { geo.width - 6.0 }).to_string()} y={if geo.narrow { "42" } else { "20" }}
                    text-anchor={if geo.narrow { "start" } else { "end" }} data-directory={step.directory.join(",")}>{ directory }</text>
                <g class="rows">{ for rows }</g>
                <g class="media">{ for media }</g>
                <g class="units">{ for moving }</g>
                <g class="records">{ for records }</g>
                <g class="rulers">{ for ruler }</g>
                if !geo.narrow {
                    <text class="ruler" x={(geo.label_right - 8.0).to_string()} y={ruler_y.to_string()} text-anchor="end">{ "byte" }</text>
                }
            </svg>
        </div>
    }
}
