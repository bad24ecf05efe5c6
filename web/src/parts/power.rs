//! The instructor's power button and its report, shared by the Parts built on the tiny
//! store's device runs (3, 6, 7, 8: `failed_sync`, `modes`, `torn`, `segments`).

use std::rc::Rc;

use walab_core::time::Nanos;
use walab_core::tiny_store::UNIT_BYTES;
use yew::prelude::*;

use super::cut_handle::{CutHandle, TimeAxis};
use super::predict::Predict;
use super::ChapterProps;
use crate::model::tiny::TinyModel;
use crate::model::Model;
use crate::figures::lanes::FateLanes;
use crate::state::{Field, FieldProblem, LabAction, Setting};
use crate::url_state::{format_millis, UNIT_BYTES_ALLOWED};

pub(super) fn ids(list: &[u64]) -> String {
    list.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
}

/// Runs of consecutive ids: "1-13, 17".
pub(super) fn id_ranges(list: &[u64]) -> String {
    if list.is_empty() {
        return "none".into();
    }
    let mut parts = Vec::new();
    let mut start = list[0];
    let mut previous = list[0];
    for id in list[1..].iter().copied().chain(std::iter::once(u64::MAX)) {
        if id != previous + 1 {
            parts.push(if start == previous { format!("{start}") } else { format!("{start}-{previous}") });
            start = id;
        }
        previous = id;
    }
    format!("{} ({})", parts.join(", "), list.len())
}

/// A refused typed value's message, beside its field.
pub(super) fn field_message(problem: &Option<FieldProblem>, field: Field) -> Html {
    match problem {
        Some(problem) if problem.field == field => html! { <span class="field-problem" role="alert">{ problem.message.clone() }</span> },
        _ => Html::default(),
    }
}

/// The power button: at the playhead, at a typed millisecond, or cleared; the seed and
/// the device's atomic unit decide what the cut tears: a stage's controls.
pub(super) fn cut_controls(props: &ChapterProps) -> Html {
    let (cut, seed, unit_bytes) = (props.params.cut, props.params.seed, props.params.unit_bytes);
    let on_now = props.on_action.reform(|_: MouseEvent| LabAction::CutAtPlayhead);
    let on_clear = props.on_action.reform(|_: MouseEvent| LabAction::SetCut(None));
    // A typed value goes to the reducer, which uses it or says why not; the field shows
    // the value in use until the reducer's answer redraws it.
    let in_use = cut.map(format_millis).unwrap_or_default();
    let on_typed = {
        let on_action = props.on_action.clone();
        Callback::from(move |event: Event| {
            let input: web_sys::HtmlInputElement = event.target_unchecked_into();
            let typed = input.value();
            input.set_value(&in_use);
            on_action.emit(LabAction::Type(Field::Cut, typed));
        })
    };
    let seed_in_use = seed.to_string();
    let on_seed = {
        let on_action = props.on_action.clone();
        Callback::from(move |event: Event| {
            let input: web_sys::HtmlInputElement = event.target_unchecked_into();
            let typed = input.value();
            input.set_value(&seed_in_use);
            on_action.emit(LabAction::Type(crate::state::Field::Seed, typed));
        })
    };
    let on_unit = props.on_action.reform(|event: Event| {
        let select: web_sys::HtmlSelectElement = event.target_unchecked_into();
        LabAction::Set(Setting::UnitBytes(select.value().parse::<u32>().ok().filter(|unit| UNIT_BYTES_ALLOWED.contains(unit)).unwrap_or(UNIT_BYTES as u32)))
    });
    html! {
        <div class="cut-controls">
            <button class="power-button" title="pull the power at the playhead (p)" onclick={on_now}>{ "pull the power (p)" }</button>
            <label>{ "or at " }<input class="cut-ms" type="text" inputmode="decimal" size="6" aria-label="the millisecond the power fails"
                value={cut.map(format_millis).unwrap_or_default()} placeholder={suggested_cut(props)} onchange={on_typed} />{ " ms" }</label>
            { field_message(&props.field_problem, Field::Cut) }
            <label title="chooses which units of the running syncs reached the media">{ "seed " }
                <input class="seed" type="number" min="0" aria-label="seed: which in-flight units reach the media" value={seed.to_string()} onchange={on_seed} /></label>
            { field_message(&props.field_problem, Field::Seed) }
            <label title="the device's atomic unit: each unit reaches the media whole or not at all">{ "atomic unit " }
                <select class="unit" onchange={on_unit}>
                    { for UNIT_BYTES_ALLOWED.iter().map(|unit| html! {
                        <option value={unit.to_string()} selected={*unit == unit_bytes}>{ unit_label(*unit) }</option>
                    }) }
                </select></label>
            if cut.is_some() { <button class="restore" onclick={on_clear}>{ "restore power (r)" }</button> }
        </div>
    }
}

/// The cut the field suggests: where Part 3's path loses writes told OK, else the lesson's.
fn suggested_cut(props: &ChapterProps) -> String {
    let window = tiny_model(props).and_then(|model| model.loss_window.as_ref());
    format_millis(window.map_or(walab_core::tiny_store::POWER_CUT, |window| window.suggested()))
}

/// "32 bytes (the tiny store)", "512 bytes (a sector)", "4096 bytes (a 4 KiB page)".
fn unit_label(unit: u32) -> String {
    match unit {
        32 => "32 bytes (the tiny store)".into(),
        512 => "512 bytes (a sector)".into(),
        4096 => "4096 bytes (4 KiB)".into(),
        other => format!("{other} bytes"),
    }
}

/// What was acknowledged, what survived: first a prediction, then the run's answer (a
/// stage's outcome). Keyed by the run, so a new cut, seed, mode or unit asks again.
pub(super) fn power_report(props: &ChapterProps) -> Html {
    let Model::Tiny(model) = &*props.model.0 else { return Html::default() };
    let Some(cut) = &model.cut else { return Html::default() };
    let outcome = match cut {
        Ok(outcome) => outcome,
        Err(error) => return html! { <p class="error">{ format!("the simulator refused the run: {error}") }</p> },
    };
    let crash = &outcome.crash;
    let stop = &crash.recovery.stop;
    let cli = match crate::cli_line::power_cut_command(&props.params, outcome.at) {
        Ok(command) => html! { <p class="note">{ "The same run on the command line: " }<code class="cli">{ command }</code></p> },
        Err(why) => html! { <p class="note cli-none">{ format!("No command line reproduces this view: {why}.") }</p> },
    };
    let acknowledged = crash.acknowledged.len();
    html! {
        <div class="power report" key={reveal_key(props)} data-cut-ns={outcome.at.0.to_string()}>
            <p class="headline">{ format!("The power failed at {} ms. {} had been acknowledged.", format_millis(outcome.at), crate::format::count(acknowledged, "write")) }</p>
            <Predict question={format!("how many of the {acknowledged} acknowledged writes will recovery find?")}
                answer={Some((acknowledged - crash.lost_acknowledged.len()) as u32)} params={props.params.clone()} on_action={props.on_action.clone()}>
                <div class="revealed" data-acknowledged={ids(&crash.acknowledged)} data-survived={ids(&crash.survived)}
                    data-lost={ids(&crash.lost_acknowledged)} data-recovered={ids(&crash.recovery.recovered)}
                    data-stop-reason={stop.reason.name()} data-stop-segment={stop.segment.clone().unwrap_or_default()}
                    data-stop-offset={stop.offset.to_string()}>
                    { super::markup_owned(format!(
                        "<table class=\"summary\"><tr><th>acknowledged before the cut</th><td>{}</td></tr><tr><th>survived</th><td>{}</td></tr>\
                        <tr><th>acknowledged and lost</th><td{}>{}</td></tr><tr><th>recovered (acknowledged or not)</th><td>{}</td></tr>\
                        <tr><th>the log scan stopped</th><td>{}</td></tr><tr><th>in-flight units that reached the media</th><td>{}</td></tr></table>",
                        id_ranges(&crash.acknowledged), id_ranges(&crash.survived),
                        if crash.lost_acknowledged.is_empty() { "" } else { " class=\"danger\"" }, id_ranges(&crash.lost_acknowledged),
                        id_ranges(&crash.recovery.recovered),
                        super::escape(&format!("{} at {}:{}", stop.reason.name(), stop.segment.clone().unwrap_or_else(|| "-".into()), stop.offset)),
                        super::escape(&if crash.kept_units.is_empty() { "none".to_string() } else {
                            crash.kept_units.iter().map(|(file, unit)| format!("{file} unit {unit}")).collect::<Vec<_>>().join(", ") }))) }
                    { cli }
                </div>
            </Predict>
        </div>
    }
}

/// The step's caption, except at the moment the view opens on (no cut chosen yet): there
/// the Part's lesson, `idea`, is the one idea said first, and the step's details follow.
pub(super) fn opening_caption(props: &ChapterProps, model: &TinyModel, revealed: bool, idea: Option<String>) -> AttrValue {
    let caption = model.caption_now(props.player.now, revealed);
    let at_opening = props.params.cut.is_none() && crate::model::moments::opening(&props.model.0) == Some(props.player.now);
    match idea.filter(|_| at_opening) {
        Some(idea) => {
            let details = caption.split_once('\n').map_or(caption.as_str(), |(_, details)| details);
            AttrValue::from(format!("{idea}\n{details}"))
        }
        None => AttrValue::from(caption),
    }
}

pub(super) fn tiny_model(props: &ChapterProps) -> Option<&TinyModel> {
    match &*props.model.0 {
        Model::Tiny(model) => Some(model),
        _ => None,
    }
}

/// The writes and syncs as lanes; after a revealed cut, each write's fate.
pub(super) fn lanes(model: &TinyModel, props: &ChapterProps, revealed: bool) -> Html {
    let (Some(spans), Some(trace)) = (model.spans(), model.trace()) else {
        return html! { <p class="error">{ "the simulator refused the run" }</p> };
    };
    let outcome = model.cut.as_ref().and_then(|cut| cut.as_ref().ok());
    let fates = outcome.filter(|_| revealed).map(|outcome| Rc::new(outcome.fates.clone()));
    let files = Rc::new(trace.files.iter().map(|file| file.name.clone()).collect::<Vec<_>>());
    let now = props.player.now.min(model.cut_at().unwrap_or(Nanos::MAX));
    let cut = model.cut_at();
    // The cut is acted on in the lanes: its line's grip and the plug.
    // The arrows step between the events of the whole run, not only those before a cut
    // (after a cut the player's steps end there, and → would leap to the axis' end).
    let marks = match &model.full {
        Ok((_, spans)) => {
            let mut marks = spans.marks();
            walab_core::sort::sort(&mut marks);
            marks.dedup();
            Rc::new(marks)
        }
        Err(_) => props.player.marks.clone(),
    };
    let overlay = {
        let on_action = props.on_action.clone();
        Callback::from(move |axis: TimeAxis| html! { <CutHandle {axis} {now} {cut} marks={marks.clone()} on_action={on_action.clone()} /> })
    };
    let axis_end = model.full.as_ref().ok().map(|(_, spans)| spans.end);
    html! { <FateLanes spans={Rc::new(spans.clone())} {files} {now} {cut} {fates} {overlay} {axis_end} /> }
}

/// Whether the power cut's answer is shown: once the link has a committed prediction
/// (`predict=`) or `reveal=1`; the reducer clears both for a new cut, seed, mode or unit,
/// which hides the answer again.
pub(super) fn answer_revealed(props: &ChapterProps) -> (bool, Callback<()>) {
    (props.params.answer_shown(), props.on_action.reform(|()| LabAction::Reveal))
}

fn reveal_key(props: &ChapterProps) -> String {
    let params = &props.params;
    // Names, not Debug: a derived Debug costs the page code.
    format!("{}-{}-{}-{}-{}-{}-{}-{}", params.part, params.cut.map_or(u64::MAX, |cut| cut.0), params.seed, params.policy.name(), params.unit_bytes,
        params.fault.url_name(), params.handling.url_name(), params.eio_batch)
}

impl TinyModel {
    pub(super) fn cut_at(&self) -> Option<Nanos> {
        self.cut.as_ref().and_then(|cut| cut.as_ref().ok()).map(|outcome| outcome.at)
    }
}
