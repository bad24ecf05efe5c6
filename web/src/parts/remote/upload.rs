//! Part 13's upload figure: the metadata log's committed end per stream, the objects of
//! each sealed block (reserved, uploading, stored but unreferenced, committed, orphaned,
//! expired) and the WAL objects the commits let the trim delete, at the playhead. Drawn
//! in HTML so it wraps on a phone; every drawn thing carries its state as `data-*`.

use std::rc::Rc;

use walab_core::sim::remote::upload::{ObjectKind, UploadRun};
use walab_core::sim::remote::RemoteRun;
use walab_core::time::Nanos;
use yew::prelude::*;

use crate::model::remote_upload::{caption_parts, kind_text, label_at, marks, object_state, ranges_text, wal_object_state, ObjectState};

/// WAL objects the strip draws at most.
pub const WAL_OBJECTS_DRAWN_MAX: usize = 80;

#[derive(Properties, PartialEq)]
pub struct UploadFigureProps {
    pub run: Rc<RemoteRun>,
    pub upload: Rc<UploadRun>,
    pub now: Nanos,
}

#[component]
pub fn UploadFigure(props: &UploadFigureProps) -> Html {
    let upload = &props.upload;
    let now = props.now;
    let ends = upload.stream_ends_at(now);
    let mut totals = vec![0u64; upload.streams as usize];
    for record in props.run.records.iter().filter(|r| r.acked.is_some_and(|acked| acked <= now)) {
        totals[upload.record_stream[record.record as usize - 1] as usize] += 1;
    }
    let streams = ends.iter().enumerate().map(|(stream, &end)| {
        let acked = totals[stream].max(end);
        let percent = if acked == 0 { 0.0 } else { 100.0 * end as f64 / acked as f64 };
        html! {
            <li class="stream" data-stream={(stream + 1).to_string()} data-committed-end={end.to_string()} data-acked={acked.to_string()}>
                <span class="stream-name">{ format!("stream s{}", stream + 1) }</span>
                <span class="stream-bar" aria-hidden="true"><span class="stream-fill" style={format!("width: {percent:.1}%")}></span></span>
                <span class="stream-end">{ if acked == 0 { "nothing acknowledged yet".to_string() } else { format!("committed to {end} of {acked} acknowledged") } }</span>
            </li>
        }
    });
    let blocks = upload.blocks.iter().filter(|block| block.sealed <= now).map(|block| {
        // What the block is waiting for while none of its ids is reserved yet.
        let asking = block.attempts.iter().rev().find(|attempt| attempt.reserve_sent <= now).filter(|attempt| attempt.reserved > now);
        let waiting = match asking {
            Some(attempt) => Some(format!("asking the metadata log for {} ids", attempt.ids.len())),
            None if block.attempts[0].reserve_sent > now => Some("sealed; waiting for the upload task".to_string()),
            None => None,
        };
        let objects = upload.objects.iter().filter(|object| object.block == block.block && object.reserved <= now).map(|object| {
            let state = object_state(upload, object, now);
            let state_text = match state {
                ObjectState::NotYet => "id not reserved yet",
                ObjectState::Uploading => "id reserved, uploading",
                ObjectState::Unreferenced => "stored, not referenced",
                ObjectState::Committed => "committed",
                ObjectState::Orphan => "orphan: never committed",
                ObjectState::Expired => "id expired: garbage",
            };
            let kind = match object.kind {
                ObjectKind::StreamSet => "stream-set",
                ObjectKind::Stream => "stream",
            };
            let streams: Vec<String> = object.ranges.iter().map(|r| (r.stream + 1).to_string()).collect();
            html! {
                <li class={classes!("upload-object", state.name())} data-id={object.id.to_string()} data-kind={kind} data-state={state.name()}
                    data-block={object.block.to_string()} data-attempt={object.attempt.to_string()} data-streams={streams.join(",")}
                    data-ranges={object.ranges.iter().map(|r| format!("{}:{}-{}", r.stream + 1, r.start, r.end)).collect::<Vec<_>>().join(" ")}>
                    <span class="object-id">{ format!("id {}", object.id) }</span>
                    <span class="object-kind">{ kind_text(object.kind) }</span>
                    <span class="object-ranges">{ ranges_text(object) }</span>
                    <span class="object-state">{ state_text }</span>
                </li>
            }
        });
        html! {
            <li class="upload-block" data-block={block.block.to_string()} data-attempts={block.attempts.iter().filter(|a| a.reserve_sent <= now).count().to_string()}>
                <span class="block-name">{ format!("block {}: {} record{}", block.block, block.records, if block.records == 1 { "" } else { "s" }) }</span>
                <ul class="block-objects">{ for objects }
                    if let Some(text) = waiting { <li class="block-waiting">{ text }</li> }
                </ul>
            </li>
        }
    });
    let wal = props.run.batches.iter().take(WAL_OBJECTS_DRAWN_MAX).map(|batch| {
        let state = wal_object_state(&props.run, upload, batch.batch, now);
        html! { <li class={classes!("wal-object", state)} data-batch={batch.batch.to_string()} data-state={state} title={format!("batch {}", batch.batch)}>{ batch.batch }</li> }
    });
    let deleted = upload.deleted_by(now).count();
    let label = label_at(upload, now);
    // The upload's last step at or before the playhead, in words (the player's caption,
    // above, says everything that happens at the step).
    let last = marks(upload).into_iter().filter(|&mark| mark <= now).max();
    let last_step = match last {
        Some(at) => {
            let text = caption_parts(upload, at).join("; ");
            format!("t = {}. The upload's last step, at {}: {text}.", crate::format::ms(now), crate::format::ms(at))
        }
        // Said plainly: nothing is uploaded yet, and why.
        None => format!("t = {}. Nothing uploaded yet: {} acknowledged so far; the first block is sealed, then copied, {}; step on.",
            crate::format::ms(now), crate::format::count(totals.iter().sum::<u64>(), "record"),
            upload.blocks.first().map_or("once enough records are acknowledged".to_string(), |block| format!("at {}", crate::format::ms(block.sealed)))),
    };
    html! {
        <div class="figure remote-upload" data-figure="remote-upload" role="group" aria-label={label}
            data-committed-ends={ends.iter().map(u64::to_string).collect::<Vec<_>>().join(",")}
            data-read-twice={upload.read_twice.to_string()} data-orphan-overlap={upload.orphan_overlap.to_string()}
            data-wal-deleted={deleted.to_string()}>
            <p class="upload-step">{ last_step }</p>
            <div class="upload-panel metadata">
                <p class="panel-name">{ "the metadata log: each stream's committed end (records a reader can find)" }</p>
                <ul class="streams">{ for streams }</ul>
            </div>
            <div class="upload-panel objects">
                <p class="panel-name">{ "sealed log-cache blocks and the objects they become" }</p>
                <ul class="upload-blocks">{ for blocks }</ul>
            </div>
            <div class="upload-panel wal">
                <p class="panel-name">{ format!("the WAL's objects (batches): {deleted} deleted after their records were committed") }</p>
                <ul class="wal-objects">{ for wal }</ul>
            </div>
        </div>
    }
}
