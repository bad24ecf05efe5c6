//! The parameter controls shared by the Parts. Each control shows a parameter from
//! the URL state and sends a [`LabAction`] when changed; none of them computes anything.

use walab_core::time::Nanos;
use yew::prelude::*;

pub use crate::format::group_thousands;
use crate::state::{LabAction, Setting};
use crate::url_state::{format_millis, LabParams, PolicyKind, Scenario, LOAD_PER_SECOND_MAX};

/// Which controls a model shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Shown {
    pub scenario: bool,
    pub policy: bool,
    pub policies_sync_only: bool,
    pub load: bool,
    pub sync: bool,
    pub window: bool,
    pub seed: bool,
}

/// Load slider positions: a log scale from 100 to 1,000,000 writes a second.
pub const LOAD_STEPS: [u64; 13] =
    [100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000, 500_000, 1_000_000];

/// The load, dragged along a track in the figure (or stepped with the arrow keys): each
/// stop runs the simulator again at that load. `said` is what the figure's run says at
/// the chosen load, announced after "At N writes/s:".
pub fn load_dial(load: u64, on_action: &Callback<LabAction>, said: &str) -> Html {
    // A load from the link that is not a stop gets a stop of its own, so the dial shows
    // the load the figure ran at.
    let mut steps = LOAD_STEPS.to_vec();
    let index = match steps.binary_search(&load) {
        Ok(index) => index,
        Err(index) => {
            steps.insert(index, load);
            index
        }
    };
    let stops: Vec<AttrValue> = steps.iter().map(|step| AttrValue::from(format!("{} writes/s", group_thousands(*step)))).collect();
    let last = steps.len() - 1;
    let on_change = on_action.reform(move |stop: usize| LabAction::Set(Setting::Load(steps[stop.min(last)].min(LOAD_PER_SECOND_MAX))));
    html! {
        <crate::figures::dial::Dial label="load" stops={stops} index={index} on_change={on_change}
            announce={AttrValue::from(format!("At {} writes/s: {said}.", group_thousands(load)))}
            ends={Some((AttrValue::from(format!("drag the load: {} writes/s", group_thousands(LOAD_STEPS[0].min(load)))), AttrValue::from("1,000,000")))} />
    }
}

/// The controls `shown` asks for, each showing its parameter in `params`; `field_problem`
/// is a refused typed value, shown beside its field.
pub fn controls(params: &LabParams, shown: Shown, field_problem: Option<&crate::state::FieldProblem>, on_action: &Callback<LabAction>) -> Html {
    let on_scenario = on_action.reform(|event: Event| {
        let select: web_sys::HtmlSelectElement = event.target_unchecked_into();
        LabAction::Set(Setting::Scenario(Scenario::from_url_name(&select.value()).unwrap_or(Scenario::Tiny)))
    });
    let on_policy = on_action.reform(|event: Event| {
        let select: web_sys::HtmlSelectElement = event.target_unchecked_into();
        LabAction::Set(Setting::Policy(crate::url_state::page_policy(&select.value()).unwrap_or(PolicyKind::Group)))
    });
    let on_load = on_action.reform(|event: InputEvent| {
        let input: web_sys::HtmlInputElement = event.target_unchecked_into();
        let step = input.value().parse::<usize>().unwrap_or(0).min(LOAD_STEPS.len() - 1);
        LabAction::Set(Setting::Load(LOAD_STEPS[step].min(LOAD_PER_SECOND_MAX)))
    });
    let on_sync = {
        let on_action = on_action.clone();
        Callback::from(move |event: Event| {
            let select: web_sys::HtmlSelectElement = event.target_unchecked_into();
            if let Some(latency) = Nanos::parse_millis(&select.value()) {
                on_action.emit(LabAction::Set(Setting::SyncLatency(latency)));
            }
        })
    };
    let on_window = {
        let on_action = on_action.clone();
        Callback::from(move |event: Event| {
            let select: web_sys::HtmlSelectElement = event.target_unchecked_into();
            if let Some(window) = Nanos::parse_millis(&select.value()) {
                on_action.emit(LabAction::Set(Setting::Window(window)));
            }
        })
    };
    // The reducer uses the typed seed or says why not; the field shows the seed in use.
    let on_seed = {
        let on_action = on_action.clone();
        let in_use = params.seed.to_string();
        Callback::from(move |event: Event| {
            let input: web_sys::HtmlInputElement = event.target_unchecked_into();
            let typed = input.value();
            input.set_value(&in_use);
            on_action.emit(LabAction::Type(crate::state::Field::Seed, typed));
        })
    };
    let seed_problem = field_problem.filter(|problem| problem.field == crate::state::Field::Seed).map(|problem| problem.message.clone());
    let load_step = LOAD_STEPS.iter().position(|load| *load >= params.load_per_second).unwrap_or(LOAD_STEPS.len() - 1);
    let policies: Vec<PolicyKind> = if shown.policies_sync_only {
        vec![PolicyKind::Group, PolicyKind::PerWrite, PolicyKind::Window]
    } else {
        crate::url_state::PAGE_POLICIES.to_vec()
    };
    let sync_choices = ["0.1", "0.25", "0.5", "1", "2", "5", "10"];
    let window_choices = ["0.5", "1", "2", "5"];
    let sync_now = format_millis(params.sync_latency);
    let window_now = format_millis(params.window);
    html! {
        <div class="controls">
            if shown.scenario {
                <label>{ "arrivals " }
                    <select class="scenario" onchange={on_scenario}>
                        { for Scenario::ALL.iter().map(|scenario| html! {
                            <option value={scenario.url_name()} selected={*scenario == params.scenario}>{ scenario.label() }</option>
                        }) }
                    </select>
                </label>
            }
            if shown.policy {
                <label>{ "policy " }
                    <select class="policy" onchange={on_policy}>
                        { for policies.iter().map(|policy| html! {
                            <option value={policy.name()} selected={*policy == params.policy}>{ policy.label() }</option>
                        }) }
                    </select>
                </label>
            }
            if shown.load {
                <label class="load">{ "load " }
                    <input type="range" class="load-slider" min="0" max={(LOAD_STEPS.len() - 1).to_string()} step="1"
                        value={load_step.to_string()} oninput={on_load} />
                    <span class="value">{ format!("{} writes/s", group_thousands(params.load_per_second)) }</span>
                </label>
            }
            if shown.sync {
                <label>{ "sync latency L " }
                    <select class="sync" onchange={on_sync}>
                        { for sync_choices.iter().map(|choice| html! { <option value={*choice} selected={*choice == sync_now}>{ format!("{choice} ms") }</option> }) }
                        if !sync_choices.contains(&sync_now.as_str()) { <option value={sync_now.clone()} selected=true>{ format!("{sync_now} ms") }</option> }
                    </select>
                </label>
            }
            if shown.window {
                <label>{ "window W " }
                    <select class="window" onchange={on_window}>
                        { for window_choices.iter().map(|choice| html! { <option value={*choice} selected={*choice == window_now}>{ format!("{choice} ms") }</option> }) }
                        if !window_choices.contains(&window_now.as_str()) { <option value={window_now.clone()} selected=true>{ format!("{window_now} ms") }</option> }
                    </select>
                </label>
            }
            if shown.seed {
                <label>{ "seed " }<input class="seed" type="number" min="0" value={params.seed.to_string()} onchange={on_seed} /></label>
                if let Some(problem) = seed_problem { <span class="field-problem" role="alert">{ problem }</span> }
            }
        </div>
    }
}

