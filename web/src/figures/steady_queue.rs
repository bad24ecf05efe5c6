//! Part 5's steady-load figure: the queue, the leader's batch in its sync, the OKs.
//!
//! Thousands of writes cannot each be a box, so each place draws its writes as a grid
//! of small cells (one per write, up to [`CELLS`], then a count; drawn as one patterned
//! rect per row): the queue of writes
//! that arrived while the sync ran, the batch the leader took (its leader's cell
//! marked, the bar under it how far its sync has got), and how many are acknowledged.

use yew::prelude::*;

use crate::model::commit::SteadyQueueAt;
use crate::parts::controls::group_thousands;

/// What [`steady_queue`] draws.
#[derive(PartialEq)]
pub struct SteadyQueueProps {
    pub state: SteadyQueueAt,
    /// Bytes per write, to say what the batch weighs.
    pub record_bytes: u64,
}

/// At most this many cells per place; beyond it the count says the rest.
const CELLS: u64 = 200;
const PER_ROW: u64 = 25;
const CELL: f64 = 9.0;
const REGION_W: f64 = PER_ROW as f64 * CELL + 16.0;
const TOP: f64 = 56.0;

/// A place's writes as cells: one rect per row of cells, tiled by the place's pattern (a
/// few elements per place however many writes, so a frame while playing stays cheap),
/// and the leader's cell drawn on top.
fn cells(left: f64, count: u64, class: &'static str, leader: bool) -> Html {
    let drawn = count.min(CELLS);
    let rows = (0..drawn.div_ceil(PER_ROW)).map(|row| {
        let in_row = (drawn - row * PER_ROW).min(PER_ROW);
        let y = TOP + row as f64 * CELL;
        html! { <rect class={classes!("cells", class)} data-cells={in_row.to_string()} x={(left + 8.0).to_string()} y={y.to_string()}
            width={(in_row as f64 * CELL).to_string()} height={CELL.to_string()} fill={format!("url(#steady-cell-{class})")} /> }
    });
    html! {
        <>
        <pattern id={format!("steady-cell-{class}")} patternUnits="userSpaceOnUse" x={(left + 8.0).to_string()} y={TOP.to_string()}
            width={CELL.to_string()} height={CELL.to_string()}>
            <rect class={classes!("cell", class)} width={(CELL - 1.5).to_string()} height={(CELL - 1.5).to_string()} />
        </pattern>
        { for rows }
        if leader && drawn > 0 {
            <rect class="cell leader" x={(left + 8.0).to_string()} y={TOP.to_string()} width={(CELL - 1.5).to_string()} height={(CELL - 1.5).to_string()} />
        }
        </>
    }
}

pub fn steady_queue(props: &SteadyQueueProps) -> Html {
    let state = &props.state;
    let rows = CELLS.div_ceil(PER_ROW) as f64;
    let height = TOP + rows * CELL + 40.0;
    // Each place is its own card (its own drawing), so the cards wrap: side by side on a
    // wide screen, one under another on a phone, each drawn large enough to read.
    let left = |_region: usize| 8.0;
    let width = REGION_W + 16.0;
    let card = |body: Html| html! { <svg viewBox={format!("0 0 {width} {height}")} role="img">{ body }</svg> };
    let more = |count: u64| if count > CELLS { format!(" (first {CELLS} drawn)") } else { String::new() };
    let sync_text = match &state.syncing {
        Some(batch) => format!(
            "B{} syncing: leader write {}, covering writes {} to {}, {} writes, {} bytes",
            batch.id,
            group_thousands(batch.first_write),
            group_thousands(batch.first_write),
            group_thousands(batch.first_write + batch.writes - 1),
            group_thousands(batch.writes),
            group_thousands(batch.bytes)
        ),
        None => "no sync running".to_string(),
    };
    let note = format!(
        "{}: {} queued behind it; {} acknowledged of {} arrived.",
        sync_text,
        group_thousands(state.queued),
        group_thousands(state.acked as u64),
        group_thousands(state.arrived as u64)
    );
    let progress = state.syncing.map(|batch| match batch.end {
        Some(end) if end > batch.start => ((state.t - batch.start).0 as f64 / (end - batch.start).0 as f64).clamp(0.0, 1.0),
        _ => 0.0,
    });
    let batch_writes = state.syncing.map(|batch| batch.writes).unwrap_or(0);
    let acked_drawn = (state.acked as u64).min(CELLS);
    html! {
        <div class="figure steady-queue" data-figure="steady-queue" data-queued={state.queued.to_string()}
            data-acked={state.acked.to_string()} data-arrived={state.arrived.to_string()}
            data-batch={state.syncing.map(|batch| batch.id.to_string())}
            data-batch-writes={state.syncing.map(|batch| batch.writes.to_string())}
            data-first-write={state.syncing.map(|batch| batch.first_write.to_string())}
            data-last-write={state.syncing.map(|batch| (batch.first_write + batch.writes - 1).to_string())}
            data-bytes={state.syncing.map(|batch| batch.bytes.to_string())}
            aria-label={note.clone()}>
            <p class="queue-note">{ note }</p>
            <div class="places" role="group" aria-label="the queue, the running sync and the acknowledged writes">
                { card(html! { <g class="place queue" data-count={state.queued.to_string()}>
                    <rect class="region" x={left(0).to_string()} y="6" width={REGION_W.to_string()} height={(height - 12.0).to_string()} rx="6" />
                    <text x={(left(0) + 8.0).to_string()} y="26">{ "queue" }</text>
                    <text class="count" x={(left(0) + 8.0).to_string()} y="44">{ format!("{} waiting{}", group_thousands(state.queued), more(state.queued)) }</text>
                    { cells(left(0), state.queued, "queued", false) }
                </g> }) }
                { card(html! { <g class="place sync" data-count={batch_writes.to_string()}>
                    <rect class="region" x={left(1).to_string()} y="6" width={REGION_W.to_string()} height={(height - 12.0).to_string()} rx="6" />
                    <text x={(left(1) + 8.0).to_string()} y="26">{ state.syncing.map(|batch| format!("sync of B{}", batch.id)).unwrap_or_else(|| "no sync running".into()) }</text>
                    <text class="count" x={(left(1) + 8.0).to_string()} y="44">{ format!("{}, one fdatasync{}", crate::format::count(batch_writes, "write"), more(batch_writes)) }</text>
                    { cells(left(1), batch_writes, "syncing", true) }
                    if let Some(progress) = progress {
                        <rect class="progress-track" x={(left(1) + 8.0).to_string()} y={(height - 26.0).to_string()} width={(REGION_W - 16.0).to_string()} height="8" />
                        <rect class="progress" x={(left(1) + 8.0).to_string()} y={(height - 26.0).to_string()} width={((REGION_W - 16.0) * progress).to_string()} height="8" />
                    }
                </g> }) }
                { card(html! { <g class="place acked" data-count={state.acked.to_string()}>
                    <rect class="region" x={left(2).to_string()} y="6" width={REGION_W.to_string()} height={(height - 12.0).to_string()} rx="6" />
                    <text x={(left(2) + 8.0).to_string()} y="26">{ "acknowledged (OK sent)" }</text>
                    <text class="count" x={(left(2) + 8.0).to_string()} y="44">{ format!("{} so far{}", group_thousands(state.acked as u64), if state.acked as u64 > CELLS { format!(" (last {CELLS} drawn)") } else { String::new() }) }</text>
                    { cells(left(2), acked_drawn, "done", false) }
                </g> }) }
            </div>
            <p class="legend">
                <span class="key queued">{ "queued: arrived while a sync ran" }</span>
                <span class="key leader">{ "the leader: takes the whole queue" }</span>
                <span class="key syncing">{ format!("in the sync ({} bytes a write)", props.record_bytes) }</span>
                <span class="key done">{ "told OK" }</span>
            </p>
        </div>
    }
}
