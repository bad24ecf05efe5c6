//! Part 3: a failed sync inside the machine, on the right and the wrong path side by side:
//! the segment's units in the page cache against the media (pages marked clean though
//! never written), the failing batch's sync and what its writers were told, the flushed
//! file and its manifest edit, and after a cut what a restart reads through the page
//! cache against what the disk holds.

use std::rc::Rc;

use yew::prelude::*;

use crate::model::captions::id_runs;
use crate::model::failed_sync_view::{CacheUnit, FlushStage, PathAt};

/// What [`failed_sync_figure`] draws.
#[derive(PartialEq)]
pub struct FailedSyncFigureProps {
    pub paths: Rc<Vec<PathAt>>,
}

const W: f64 = 520.0;

fn title(name: &str) -> &'static str {
    match name {
        "right" => "right path: fail the waiters and stop",
        "wrong" => "wrong path: retry the sync and carry on",
        "e2" => "E2: the flushed file's fsync fails",
        _ => "no fault",
    }
}

fn flush_words(stage: FlushStage) -> &'static str {
    match stage {
        FlushStage::NotStarted => "not started",
        FlushStage::Writing => "being written",
        FlushStage::Syncing => "fsync running",
        FlushStage::Failed => "fsync FAILED: no manifest edit",
        FlushStage::EditWritten => "synced; its manifest edit is being synced",
        FlushStage::Counts => "counts: its manifest edit is durable",
    }
}

fn panel(path: &PathAt) -> Html {
    let unit_w = (W - 20.0) / path.units.len().max(1) as f64;
    let units = |y: f64, media: bool| {
        let each = path.units.iter().enumerate().map(move |(unit, place)| {
            let (class, words) = if media {
                if place.on_media() { ("on-media", "on the media") } else if *place == CacheUnit::Empty { ("empty", "empty") } else { ("not-on-media", "NOT on media") }
            } else {
                (place.class(), place.words())
            };
            let x = 10.0 + unit as f64 * unit_w;
            html! {
                <g class={classes!("unit", class)} data-place={if media { "media" } else { "cache" }} data-unit={unit.to_string()} data-state={class}>
                    <rect x={x.to_string()} y={y.to_string()} width={(unit_w - 4.0).to_string()} height="34" rx="3" />
                    <text x={(x + 4.0).to_string()} y={(y + 14.0).to_string()}>{ format!("unit {unit}") }</text>
                    <text class="small" x={(x + 4.0).to_string()} y={(y + 28.0).to_string()}>{ words.split(',').next().unwrap_or(words).to_string() }</text>
                </g>
            }
        });
        html! { <>{ for each }</> }
    };
    let failing = path.sync_story.contains("EIO") || path.sync_story.contains("retry");
    let writes = path.batch_writes.iter().enumerate().map(|(index, write)| {
        let x = 10.0 + index as f64 * 125.0;
        let state = match write.told { "OK" => "acked", "\"unknown\"" => "failed", _ => "waiting" };
        html! {
            <g class={classes!("told", state)} data-write={write.id.to_string()} data-state={state}>
                <rect x={x.to_string()} y="196" width="120" height="24" rx="4" />
                <text x={(x + 6.0).to_string()} y="213">{ format!("{}: {}", write.id, write.told) }</text>
            </g>
        }
    });
    let edits = (5u64..=10).map(|edit| {
        let durable = path.edits_durable.contains(&edit);
        let x = 160.0 + (edit - 5) as f64 * 46.0;
        html! {
            <g class={classes!("edit", if durable { "durable" } else { "absent" })} data-edit={edit.to_string()} data-state={if durable { "durable" } else { "absent" }}>
                <rect x={x.to_string()} y="262" width="42" height="22" rx="3" />
                <text x={(x + 6.0).to_string()} y="278">{ format!("e{edit}") }</text>
            </g>
        }
    });
    let reads = match (&path.reads_cache, &path.reads_disk) {
        (Some(cache), Some(disk)) => html! {
            <g class="reads" data-reads-cache={id_runs(cache)} data-reads-disk={id_runs(disk)}>
                <text x="10" y="330">{ format!("restart through the page cache reads {}: {}", path.segment, if cache.is_empty() { "nothing".into() } else { format!("writes {}", id_runs(cache)) }) }</text>
                <text class={classes!((cache != disk).then_some("danger"))} x="10" y="350">{ format!("the disk holds: {}", if disk.is_empty() { "nothing".into() } else { format!("writes {}", id_runs(disk)) }) }</text>
            </g>
        },
        _ => html! {},
    };
    let height = if path.reads_cache.is_some() { 362.0 } else { 318.0 };
    html! {
        <svg class={classes!("path-panel", path.name)} data-path={path.name} viewBox={format!("0 0 {W} {height}")} role="img" aria-label={title(path.name)}>
            <text class="panel-title" x="10" y="18">{ title(path.name) }</text>
            <text class="row-title" x="10" y="40">{ format!("{} in the page cache (what a read sees)", path.segment) }</text>
            { units(46.0, false) }
            <text class="row-title" x="10" y="102">{ format!("{} on the media (what survives power loss)", path.segment) }</text>
            { units(108.0, true) }
            if let Some(batch) = path.batch {
                <text class={classes!("sync-story", failing.then_some("danger"))} x="10" y="170" data-batch={batch.to_string()} data-sync-state={path.sync_story.clone()}>
                    { format!("B{batch}: {}", path.sync_story) }</text>
                <text class="row-title" x="10" y="188">{ format!("B{batch}'s writers, then any queued behind it, told:") }</text>
                { for writes }
            }
            <g class={classes!("flushed-file", path.flush.class())} data-file={path.flush_name.clone()} data-state={path.flush.class()}>
                <text x="10" y="246">{ format!("{}: {}", path.flush_name, flush_words(path.flush)) }</text>
            </g>
            <text class="row-title" x="10" y="278">{ "manifest edits:" }</text>
            { for edits }
            <g class={classes!("segment-state", if path.segment_exists { "kept" } else { "deleted" })} data-file={path.segment.clone()} data-state={if path.segment_exists { "kept" } else { "deleted" }}>
                <text x="10" y="306">{ format!("{}: {}", path.segment, if path.segment_exists { "kept (not yet in a file that counts)" } else { "deleted" }) }</text>
            </g>
            { reads }
        </svg>
    }
}

pub fn failed_sync_figure(props: &FailedSyncFigureProps) -> Html {
    html! {
        <figure class="figure failed-sync-figure" data-figure="failed-sync" aria-label="the failed sync: the page cache against the media, on each path">
            <div class="paths">{ for props.paths.iter().map(panel) }</div>
            { crate::parts::markup(r#"<figcaption class="legend"><span class="key cache-key empty">page cache: empty</span><span class="key cache-key dirty">page cache: dirty</span><span class="key cache-key syncing">page cache: being synced</span><span class="key cache-key clean">page cache: clean</span><span class="key cache-key marked-clean">page cache: marked clean, NOT on the media</span><span class="key cache-key on-media">media: holds the new bytes</span><span class="key cache-key not-on-media">media: does not</span><span class="key edit-durable">manifest edit durable</span><span class="key edit-absent">manifest edit not written</span></figcaption>"#) }
        </figure>
    }
}
