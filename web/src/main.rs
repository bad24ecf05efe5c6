//! walab-web: the browser lab.
//!
//! A Yew single-page app in the reducer style: [`state::LabState`] holds the view (its
//! parameters are the URL), [`state::LabAction`] is everything that can change it, and
//! the components under [`parts`] take props and draw. The simulations are the core's
//! (`walab-core`, compiled to WebAssembly with this crate); [`benches`] turns their runs
//! into values to draw. This file is the edge with the browser: it reads and writes the
//! URL, listens to the keyboard and runs the animation clock.

mod benches;
mod charts;
mod figures;
mod parts;
mod player;
mod record_layout;
mod state;
mod url_state;

use std::cell::RefCell;
use std::rc::Rc;

use gloo_events::{EventListener, EventListenerOptions};
use gloo_render::{request_animation_frame, AnimationFrame};
use wasm_bindgen::JsCast;
use yew::prelude::*;

use parts::{Chapter, PART_TITLES};
use player::action_for_key;
use state::{LabAction, LabState};
use url_state::to_query;

fn current_query() -> String {
    web_sys::window().and_then(|window| window.location().search().ok()).unwrap_or_default()
}

/// Keeps the address bar equal to the view, without adding history entries per slider move.
fn write_query(query: &str) {
    let Some(window) = web_sys::window() else { return };
    if window.location().search().ok().as_deref() == Some(query) {
        return;
    }
    if let Ok(history) = window.history() {
        let _ = history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(query));
    }
}

#[component]
fn App() -> Html {
    let lab = use_reducer(|| LabState::from_query(&current_query()));
    let dispatch = {
        let lab = lab.clone();
        Callback::from(move |action: LabAction| lab.dispatch(action))
    };

    // The URL follows the view.
    {
        let query = to_query(&lab.params);
        use_effect_with(query, |query| write_query(query));
    }

    // Keyboard shortcuts for the player, anywhere on the page except in form fields.
    {
        let dispatch = dispatch.clone();
        use_effect_with((), move |_| {
            let document = gloo_utils_document();
            let options = EventListenerOptions::enable_prevent_default();
            let listener = EventListener::new_with_options(&document, "keydown", options, move |event| {
                let Some(event) = event.dyn_ref::<web_sys::KeyboardEvent>() else { return };
                if event.ctrl_key() || event.meta_key() || event.alt_key() {
                    return;
                }
                let in_field = event
                    .target()
                    .and_then(|target| target.dyn_into::<web_sys::Element>().ok())
                    .map(|element| matches!(element.tag_name().as_str(), "INPUT" | "SELECT" | "TEXTAREA"))
                    .unwrap_or(false);
                if in_field {
                    return;
                }
                let key = event.key();
                if key == "p" {
                    event.prevent_default();
                    dispatch.emit(LabAction::CutAtPlayhead);
                } else if let Some(action) = action_for_key(&key) {
                    event.prevent_default();
                    dispatch.emit(LabAction::Player(action));
                }
            });
            move || drop(listener)
        });
    }

    // The animation clock: one Frame per browser frame while the player plays.
    {
        let dispatch = dispatch.clone();
        use_effect_with(lab.player.playing, move |playing| {
            let handle: Rc<RefCell<Option<AnimationFrame>>> = Rc::new(RefCell::new(None));
            if *playing {
                schedule_frame(handle.clone(), dispatch, None);
            }
            move || drop(handle.borrow_mut().take())
        });
    }

    let nav = parts::NAV_ORDER.iter().map(|&part| {
        let title = &PART_TITLES[part as usize];
        let onclick = dispatch.reform(move |_: MouseEvent| LabAction::GoToPart(part));
        let current = lab.params.part == part;
        html! {
            <li>
                <button class={classes!("nav-part", current.then_some("current"))} data-part={part.to_string()}
                    aria-current={current.then_some("page")} {onclick}>
                    <span class="nav-number">{ part }</span>{ *title }
                </button>
            </li>
        }
    });
    let problems = (!lab.url_problems.is_empty()).then(|| {
        let items = lab.url_problems.iter().map(|problem| html! { <li>{ problem.to_string() }</li> });
        let dismiss = dispatch.reform(|_: MouseEvent| LabAction::DismissUrlProblems);
        html! {
            <div class="url-problems" role="alert">
                <p>{ "The link had parameters the lab could not use; it shows the defaults in their place:" }</p>
                <ul>{ for items }</ul>
                <button onclick={dismiss}>{ "dismiss" }</button>
            </div>
        }
    });
    let part = lab.params.part;
    html! {
        <div class="lab">
            <header>
                <h1>{ "walab" }<span class="subtitle">{ " · the write-ahead log lab" }</span></h1>
            </header>
            <nav aria-label="Parts"><ol class="parts">{ for nav }</ol></nav>
            <main id="chapter" data-part={part.to_string()}>
                { problems.unwrap_or_default() }
                <h2>{ format!("Part {part}. {}", PART_TITLES[part as usize]) }</h2>
                <Chapter params={lab.params.clone()} player={lab.player.clone()} bench={lab.bench.clone()} dropped={lab.dropped.clone()} on_action={dispatch.clone()} />
            </main>
            <footer>
                if part != 5 { <parts::dropzone::DropZone dropped={lab.dropped.clone()} on_action={dispatch.clone()} /> }
                <p>{ "Keys: space play/pause · ← → step · Home/End · + − speed · p pull the power" }</p>
            </footer>
        </div>
    }
}

fn gloo_utils_document() -> web_sys::Document {
    web_sys::window().and_then(|window| window.document()).expect("a browser page has a document")
}

/// Requests the next animation frame; each frame reports the real time elapsed since the
/// previous one and schedules the next, until the effect's cleanup drops the handle.
fn schedule_frame(handle: Rc<RefCell<Option<AnimationFrame>>>, dispatch: Callback<LabAction>, previous: Option<f64>) {
    let next_handle = handle.clone();
    let frame = request_animation_frame(move |timestamp| {
        if let Some(previous) = previous {
            dispatch.emit(LabAction::Player(player::PlayerAction::Frame { elapsed_ms: timestamp - previous }));
        }
        schedule_frame(next_handle, dispatch, Some(timestamp));
    });
    *handle.borrow_mut() = Some(frame);
}

fn main() {
    yew::Renderer::<App>::new().render();
}
