//! Part 4: the log record and the append.

use std::rc::Rc;

use walab_core::codec::tiny::HEADER_BYTES;
use walab_core::tiny_store;
use yew::prelude::*;

use super::ChapterProps;
use crate::model::append::{self, Step};
use crate::figures::record_bytes::RecordBytes;
use crate::layout::Scene;
use crate::player::{Clock, player, PlayerProps, PlayerAction};
use crate::record_layout::Field;
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
    // A byte the student changed in wal-1, and what the core's scan makes of it.
    let changed = use_state(|| None::<usize>);
    let segment_bytes = walab_core::sim::tiny::SEGMENT_BYTES;
    let corrupted = changed.and_then(|byte| append::corrupt_and_scan(&records, segment_bytes, byte));
    let on_byte = {
        let changed = changed.clone();
        Callback::from(move |byte: usize| changed.set(if *changed == Some(byte) { None } else { Some(byte) }))
    };
    let corrupt_outcome = corruption_outcome(corrupted.as_ref(), &records, segment_bytes, &changed);
    html! {
        <>
        { super::markup(RECORD) }
        <Scene name="record-bytes" title="wal-1 after write 4: change a byte, and the checksum stops the scan"
            figure={html! { <RecordBytes records={records.clone()} segment_bytes={segment_bytes} unit_bytes={tiny_store::UNIT_BYTES}
                changed={corrupted.as_ref().map(|c| (c.byte, c.now))} on_byte={Some(on_byte)} /> }}
            outcome={corrupt_outcome}>
            { super::markup(BYTES) }
        </Scene>
        { wal_bytes(&records) }
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
            { super::markup(APPEND) }
        </Scene>
        </>
    }
}

/// The figure's key: each field's colour, and where wal-1 ends.
fn wal_bytes(records: &[append::RecordLayout]) -> Html {
    let end = records.last().map_or(0, |record| record.offset + record.bytes.len());
    let legend = Field::ALL.iter().map(|field| html! { <span class={classes!("field", field.class())}>{ field.label() }</span> });
    html! {
        <div class="wal-bytes">
            <p class="legend">{ for legend }</p>
            <p class="note">{ format!("wal-1 ends at byte {end}; the rest of the zero-filled segment stays zero. \
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

/// The changed byte's field, and the scan's verdict (announced); a field to type a byte's
/// number into (the keyboard's way to change one) and a button to put it back.
fn corruption_outcome(corrupted: Option<&append::Corrupted>, records: &[append::RecordLayout], segment_bytes: usize, changed: &UseStateHandle<Option<usize>>) -> Html {
    let last = segment_bytes.saturating_sub(1);
    let on_change = {
        let changed = changed.clone();
        Callback::from(move |event: Event| {
            let input: web_sys::HtmlInputElement = event.target_unchecked_into();
            match input.value().trim().parse::<usize>() {
                Ok(byte) if byte <= last => changed.set(Some(byte)),
                _ => changed.set(None),
            }
        })
    };
    let restore = {
        let changed = changed.clone();
        Callback::from(move |_: MouseEvent| changed.set(None))
    };
    let verdict = match corrupted {
        Some(corrupted) => append::corrupted_text(corrupted, records),
        None if records.len() == 1 => "Record 1 passes its checks: the scan replays it and stops at the zero fill.".to_string(),
        None => format!("All {} records pass their checks: the scan replays records 1 to {} and stops at the zero fill.", records.len(), records.len()),
    };
    let stopped_early = corrupted.is_some_and(|corrupted| !corrupted.lost.is_empty());
    html! {
        <div class="corrupt" data-changed={corrupted.map(|c| c.byte.to_string())}
            data-accepted={corrupted.map(|c| c.accepted.len()).unwrap_or(records.len()).to_string()}
            data-stop={corrupted.map(|c| c.stop.reason.name())}>
            <label class="corrupt-field">{ format!("change byte (0 to {last}): ") }
                <input type="number" class="corrupt-byte" min="0" max={last.to_string()} inputmode="numeric"
                    value={corrupted.map(|c| c.byte.to_string()).unwrap_or_default()} onchange={on_change} /></label>
            if corrupted.is_some() { <button class="corrupt-restore" onclick={restore}>{ "put it back" }</button> }
            <p class={classes!("corrupt-verdict", stopped_early.then_some("danger"))} role="status" aria-live="polite">{ verdict }</p>
        </div>
    }
}

/// Why a record describes itself, and its layout.
const RECORD: &str = "<div class=\"prose\"><p>After a crash, recovery reads the log back and may find half a record at its end. So each record carries its own length and a checksum of its bytes: the reader can tell a whole record from a torn one without any outside help.</p><p>The header is the one LevelDB and RocksDB use: a CRC32C over the type byte and the payload, the payload's length as two little-endian bytes, and a type byte (FULL = 1 for a record in one piece). The payload is the tiny store's own: the sequence number as eight little-endian bytes, the operation (PUT = 1, DEL = 0), then the key and the value, each behind a LEB128 length. The checksum is shown unmasked here; LevelDB and RocksDB store it masked. <a class=\"source\" href=\"https://github.com/google/leveldb/blob/main/doc/log_format.md\" target=\"_blank\" rel=\"noopener\">[LevelDB log_format.md]</a></p></div>";

/// Beside wal-1's bytes.
const BYTES: &str = "<div class=\"prose\"><p>Click any byte (or type its number) to change it, as a bad sector or a torn write would: the recovery scan, the core's own, reads the records back, checks each one's CRC and stops at the first that fails. Every record after it is not replayed, even the ones whose bytes are fine.</p><p>Each square is one byte of wal-1, in rows of one 32-byte unit (two rows a unit on a phone); a thick bar marks where a record starts. Records do not line up with units: record 2 starts inside unit 0 and ends in unit 1.</p><p>The bytes are the core's codec's, coloured by field (the key is under the figure); hover over a record for what it holds.</p></div>";

/// Beside the two append orders.
const APPEND: &str = "<div class=\"prose\"><p>Both columns run the same steps for one write. On the left the OK waits for the sync; on the right the OK goes out first and the sync follows later.</p><p>Step through, then pull the power (the button or the p key): only one of them can tell a client OK and then lose the write.</p></div>";
