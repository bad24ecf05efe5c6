//! Part 4: the log record and the append.

use std::rc::Rc;

use walab_core::codec::tiny::HEADER_BYTES;
use walab_core::tiny_store;
use yew::prelude::*;

use super::{ChapterProps, source};
use crate::model::append::{self, Step};
use crate::figures::record_bytes::RecordBytes;
use crate::layout::Scene;
use crate::player::{Clock, player, PlayerProps, PlayerAction};
use crate::record_layout::{tiny_record_fields, Field};
use crate::state::LabAction;

#[component]
pub fn RecordChapter(props: &ChapterProps) -> Html {
    let on_player = props.on_action.reform(LabAction::Player);
    let done_right = append::steps_done(props.player.now, append::RIGHT_ORDER.len());
    let done_wrong = append::steps_done(props.player.now, append::WRONG_ORDER.len());
    let cut_right = props.params.cut.map(|cut| append::steps_done(cut, append::RIGHT_ORDER.len()));
    let cut_wrong = props.params.cut.map(|cut| append::steps_done(cut, append::WRONG_ORDER.len()));
    // A step in either column pulls the power right after it.
    let on_step_cut = props.on_action.reform(|steps: usize| LabAction::SetCut(Some(walab_core::time::Nanos(append::STEP.0 * steps as u64))));
    let records = use_memo((), |_| Rc::new(append::wal_1_records()));
    let records: Rc<Vec<_>> = (*records).clone();
    let units = records.iter().find(|record| record.write == append::APPENDED_WRITE).map(|record| {
        let (first, last) = (record.offset / tiny_store::UNIT_BYTES, (record.offset + record.bytes.len() - 1) / tiny_store::UNIT_BYTES);
        if first == last { format!("unit {first}") } else { format!("units {first} to {last}") }
    }).unwrap_or_default();
    html! {
        <>
        <div class="prose">
            <p>{ "After a crash, recovery reads the log back and may find half a record at its end. \
                  So each record carries its own length and a checksum of its bytes: the reader can tell \
                  a whole record from a torn one without any outside help." }</p>
            <p>{ "The header is the one LevelDB and RocksDB use: a CRC32C over the type byte and the payload, \
                  the payload's length as two little-endian bytes, and a type byte (FULL = 1 for a record in one piece). \
                  The payload is the tiny store's own: the sequence number as eight little-endian bytes, the operation \
                  (PUT = 1, DEL = 0), then the key and the value, each behind a LEB128 length. The checksum is shown \
                  unmasked here; LevelDB and RocksDB store it masked. " }
               { source("LevelDB log_format.md", "https://github.com/google/leveldb/blob/main/doc/log_format.md") }</p>
        </div>
        <Scene name="record-bytes" title="wal-1 after write 4"
            figure={html! { <RecordBytes records={records.clone()} segment_bytes={walab_core::sim::tiny::SEGMENT_BYTES} unit_bytes={tiny_store::UNIT_BYTES} /> }}>
            <div class="prose"><p>{ "Each square is one byte of wal-1, in rows of one 32-byte unit (two rows a unit on a phone); a thick bar marks where a record starts. \
                Records do not line up with units: record 2 starts inside unit 0 and ends in unit 1." }</p>
                <p>{ "The table below gives the same bytes in hex, field by field, as the core's codec wrote them." }</p></div>
        </Scene>
        { wal_bytes() }
        <Scene name="append" title="The append, in order and out of order" opens_here={props.params.cut.is_some()}
            controls={html! { <>
                { player(&PlayerProps { state: props.player.clone(), on_action: on_player, mark_name: "step".into(), clock: Clock::Steps, caption: Some(AttrValue::from(append::caption(done_wrong))), ..PlayerProps::default() }) }
                { power_button(props.params.cut.is_some(), props.on_action.reform(|_| LabAction::CutAtPlayhead)) }
            </> }}
            figure={html! { <>
                <div class="append-columns">
                    { append_column("right: durable, then OK", &append::RIGHT_ORDER, done_right, cut_right, &on_step_cut) }
                    { append_column("wrong: OK, then durable", &append::WRONG_ORDER, done_wrong, cut_wrong, &on_step_cut) }
                </div>
                { power_report(props.params.cut.map(|cut| append::steps_done(cut, append::WRONG_ORDER.len())),
                    props.on_action.reform(|_| LabAction::SetCut(None)),
                    props.on_action.reform(|_| LabAction::Player(PlayerAction::ToStart))) }
                <div class="append-bytes">
                    <h4>{ format!("Right order: record {} in wal-1's {units}", append::APPENDED_WRITE) }</h4>
                    <RecordBytes records={records.clone()} segment_bytes={walab_core::sim::tiny::SEGMENT_BYTES} unit_bytes={tiny_store::UNIT_BYTES}
                        appended={Some((append::APPENDED_WRITE, append::bytes_at(&append::RIGHT_ORDER, done_right, cut_right)))} crop=true
                        order={AttrValue::from("right")} highlight={Some(append::APPENDED_WRITE)} />
                    <h4>{ format!("Wrong order: record {} in wal-1's {units}", append::APPENDED_WRITE) }</h4>
                    <RecordBytes records={records.clone()} segment_bytes={walab_core::sim::tiny::SEGMENT_BYTES} unit_bytes={tiny_store::UNIT_BYTES}
                        appended={Some((append::APPENDED_WRITE, append::bytes_at(&append::WRONG_ORDER, done_wrong, cut_wrong)))} crop=true
                        order={AttrValue::from("wrong")} highlight={Some(append::APPENDED_WRITE)} />
                </div>
            </> }}>
            <div class="prose">
                <p>{ "Both columns run the same steps for one write. On the left the OK waits for the sync; on the \
                      right the OK goes out first and the sync follows later." }</p>
                <p>{ "Step through, then pull the power (the button or the p key): only one of them can tell a client OK \
                      and then lose the write." }</p>
            </div>
        </Scene>
        </>
    }
}

/// The 114 bytes of wal-1, record by record, each field coloured.
fn wal_bytes() -> Html {
    let mut offset = 0usize;
    let rows = tiny_store::WRITES[..tiny_store::MEMTABLE_WRITES].iter().map(|write| {
        let record = write.record();
        let start = offset;
        offset += record.len();
        let cells = match tiny_record_fields(&record) {
            Ok(spans) => spans
                .iter()
                .map(|span| {
                    let hex: Vec<String> = record[span.start..span.end].iter().map(|byte| format!("{byte:02x}")).collect();
                    html! { <span class={classes!("field", span.field.class())} title={span.field.label()}>{ hex.join(" ") }</span> }
                })
                .collect::<Html>(),
            Err(error) => html! { <span class="error">{ format!("cannot lay out record: {error:?}") }</span> },
        };
        let op = match write.op {
            walab_core::codec::Op::Put => format!("put {} {}", write.key, write.value),
            walab_core::codec::Op::Del => format!("del {}", write.key),
        };
        html! {
            <tr class="record-row" data-write={write.id.to_string()} data-offset={start.to_string()}>
                <td class="num">{ start }</td>
                <td class="num">{ record.len() }</td>
                <td>{ format!("{}: {op}", write.id) }</td>
                <td class="hex"><code>{ cells }</code></td>
            </tr>
        }
    });
    let rows: Html = rows.collect();
    let legend = Field::ALL.iter().map(|field| html! { <span class={classes!("field", field.class())}>{ field.label() }</span> });
    html! {
        <div class="wal-bytes">
            <table class="records">
                <thead><tr><th>{ "offset" }</th><th>{ "bytes" }</th><th>{ "write" }</th><th>{ "record (hex)" }</th></tr></thead>
                <tbody>{ rows }</tbody>
            </table>
            <p class="legend">{ for legend }</p>
            <p class="note">{ format!("wal-1 ends at byte {offset}; the rest of the zero-filled segment stays zero. \
                The header is {HEADER_BYTES} bytes on every record, about {HEADER_BYTES}% of a 100-byte write.") }</p>
        </div>
    }
}

/// One order's steps, `done` of them taken, and what that leaves; `cut` is the steps
/// done when the power failed, if it did (the cut line follows that step), and a click
/// on a step (or Enter on it) asks `on_cut` to pull the power right after it.
fn append_column(title: &'static str, order: &[Step], done: usize, cut: Option<usize>, on_cut: &Callback<usize>) -> Html {
    let steps = order.iter().enumerate().map(|(index, step)| {
        // The step the player is at is the last one done: the one the caption names.
        let class = if index + 1 < done { "done" } else if index + 1 == done { "current" } else { "todo" };
        let cut_after = cut == Some(index + 1);
        // The step is a button: a click, or Enter on it, pulls the power right after it.
        let on_click = on_cut.reform(move |_: MouseEvent| index + 1);
        html! {
            <li class={classes!("step", class, cut_after.then_some("cut-after"))}>
                <button class="step-cut" title="pull the power right after this step" onclick={on_click}>{ step.text() }</button>
                if cut_after { <span class="cut-line">{ "the power fails here" }</span> }
            </li>
        }
    });
    let outcome = append::outcome(order, done);
    let status = match (outcome.acknowledged, outcome.durable) {
        (true, true) => "acknowledged and durable",
        (true, false) => "acknowledged, NOT durable",
        (false, true) => "durable, not yet acknowledged",
        (false, false) => "neither durable nor acknowledged",
    };
    html! {
        <div class="append-column">
            <h4>{ title }</h4>
            <ol>{ for steps }</ol>
            <p class={classes!("status", outcome.acknowledged_but_lost().then_some("danger"))}>{ status }</p>
        </div>
    }
}

/// The power button, on the figure's stage with the player (disabled once the power is cut).
fn power_button(cut: bool, on_cut: Callback<MouseEvent>) -> Html {
    html! {
        <div class="power">
            <button class="power-button" disabled={cut} onclick={on_cut}
                title="cut the power after the step the player is at (p)">{ "pull the power now (p)" }</button>
        </div>
    }
}

/// What a power cut after `cut_steps` steps left of each order.
fn power_report(cut_steps: Option<usize>, on_clear: Callback<MouseEvent>, on_restart: Callback<MouseEvent>) -> Html {
    let Some(done) = cut_steps else {
        return html! { <p class="note power-hint">{ "The power is on. Pull it at any step to see which order keeps its promise." }</p> };
    };
    let right = append::outcome(&append::RIGHT_ORDER, done);
    let wrong = append::outcome(&append::WRONG_ORDER, done);
    let describe = |outcome: append::Outcome| {
        if outcome.acknowledged_but_lost() {
            "the client got OK and the write is gone: the promise is broken"
        } else if outcome.durable {
            "the write survives"
        } else {
            "the write is lost, but nobody was told OK: the client retries"
        }
    };
    html! {
        <div class="power report" data-cut-steps={done.to_string()} aria-live="polite">
            <p class="headline">{ format!("Power failed after {}.", crate::format::count(done, "step")) }</p>
            <p class="right-outcome">{ format!("Right order: {}.", describe(right)) }</p>
            <p class={classes!("wrong-outcome", wrong.acknowledged_but_lost().then_some("danger"))}>{ format!("Wrong order: {}.", describe(wrong)) }</p>
            <button onclick={on_clear}>{ "restore power" }</button>
            <button onclick={on_restart}>{ "back to step 0" }</button>
        </div>
    }
}
