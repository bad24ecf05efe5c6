//! walab-web: the browser lab.
//!
//! A Yew single-page app in the reducer style: [`state::LabState`] holds the view (its
//! parameters are the URL), [`state::LabAction`] is everything that can change it, and
//! the components under [`parts`] take props and draw. The simulations are the core's
//! (`walab-core`, compiled to WebAssembly with this crate); [`model`] turns their runs
//! into values a figure draws. This file is the edge with the browser: it reads and writes the
//! URL and the history (one entry per Part, Back returns to the Part before), listens to
//! the keyboard, runs the animation clock, and keeps the student's progress in local
//! storage.

mod charts;
mod cli_line;
mod figures;
mod format;
mod keys;
mod labels;
mod layout;
mod model;
mod panic_report;
mod parts;
mod player;
mod progress;
mod record_layout;
mod remote_params;
mod sorted_map;
mod state;
mod url_state;

use std::cell::RefCell;
use std::rc::Rc;

use gloo_events::{EventListener, EventListenerOptions, EventListenerPhase};
use gloo_render::{request_animation_frame, AnimationFrame};
use wasm_bindgen::JsCast;
use yew::prelude::*;

use keys::{command_for_key, is_text_field, slider_must_not_handle, KeyCommand, KEYS};
use parts::{Chapter, PART_TITLES};
use progress::Progress;
use state::{LabAction, LabState};
use url_state::{parse_query, to_query, PART_COUNT};

fn current_query() -> String {
    web_sys::window().and_then(|window| window.location().search().ok()).unwrap_or_default()
}

/// Keeps the address bar equal to the view: a new Part is a new history entry (so Back
/// returns to the Part before), any other change replaces the current one.
fn write_query(query: &str) {
    let Some(window) = web_sys::window() else { return };
    let shown = window.location().search().ok().unwrap_or_default();
    if shown == query {
        return;
    }
    let Ok(history) = window.history() else { return };
    let new_part = parse_query(&shown).0.part != parse_query(query).0.part;
    let _ = if new_part {
        history.push_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(query))
    } else {
        history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(query))
    };
}

fn local_storage() -> Option<web_sys::Storage> {
    web_sys::window().and_then(|window| window.local_storage().ok().flatten())
}

fn load_progress() -> Progress {
    let stored = local_storage().and_then(|storage| storage.get_item(progress::STORAGE_KEY).ok().flatten());
    Progress::decode(&stored.unwrap_or_default())
}

/// Applies a change to the stored progress (read fresh, so two listeners never undo each
/// other) and shows the result.
fn update_progress(shown: &UseStateHandle<Progress>, change: impl FnOnce(&mut Progress) -> bool) {
    let mut progress = load_progress();
    if change(&mut progress) {
        if let Some(storage) = local_storage() {
            let _ = storage.set_item(progress::STORAGE_KEY, &progress.encode());
        }
    }
    if **shown != progress {
        shown.set(progress);
    }
}

/// The query for Part `part`, keeping presenter mode.
fn part_query(part: u8, present: bool) -> String {
    if present { format!("?part={part}&present=1") } else { format!("?part={part}") }
}

#[component]
fn App() -> Html {
    let lab = use_reducer(|| LabState::from_query(&current_query()));
    let progress = use_state(load_progress);
    let menu_open = use_state(|| false);
    let dispatch = {
        let lab = lab.clone();
        Callback::from(move |action: LabAction| lab.dispatch(action))
    };
    let part = lab.params.part;

    // The URL follows the view.
    {
        let query = to_query(&lab.params);
        use_effect_with(query, |query| write_query(query));
    }

    // Back and Forward: the address changed, so the view follows it.
    {
        let dispatch = dispatch.clone();
        use_effect_with((), move |_| {
            let window = web_sys::window().expect("a browser page has a window");
            let listener = EventListener::new(&window, "popstate", move |_| dispatch.emit(LabAction::LoadQuery(current_query())));
            move || drop(listener)
        });
    }

    // A new Part: the title names it, the page opens at its top (or at the scene its link
    // names, a power cut's), it counts as visited.
    {
        let progress = progress.clone();
        use_effect_with(part, move |part| {
            let document = gloo_utils_document();
            document.set_title(&format!("Part {part}. {} · walab", PART_TITLES[*part as usize]));
            layout::scroll_to_opening();
            let part = *part;
            update_progress(&progress, |progress| progress.visit(part));
        });
    }

    // A committed prediction counts once per Part and moment.
    {
        let progress = progress.clone();
        let moment = lab.params.predict.map(|_| format!("{part}@{}", lab.params.cut.map(url_state::format_millis).unwrap_or_default()));
        use_effect_with(moment, move |moment| {
            if let Some(moment) = moment.clone() {
                update_progress(&progress, |progress| progress.predicted(&moment));
            }
        });
    }

    // An opened drill counts once ("toggle" does not bubble, so listen while it descends).
    {
        let progress = progress.clone();
        use_effect_with((), move |_| {
            let document = gloo_utils_document();
            let options = EventListenerOptions { phase: EventListenerPhase::Capture, passive: true };
            let listener = EventListener::new_with_options(&document, "toggle", options, move |event| {
                let Some(details) = event.target().and_then(|target| target.dyn_into::<web_sys::HtmlDetailsElement>().ok()) else { return };
                let (Some(drill), true) = (details.get_attribute("data-drill"), details.open()) else { return };
                let part = gloo_utils_document()
                    .get_element_by_id("chapter")
                    .and_then(|chapter| chapter.get_attribute("data-part"))
                    .unwrap_or_default();
                update_progress(&progress, |progress| progress.drill(&format!("{part}:{drill}")));
            });
            move || drop(listener)
        });
    }

    // The keys, wherever focus is except where the student types.
    {
        let dispatch = dispatch.clone();
        let menu_open = menu_open.clone();
        use_effect_with((), move |_| {
            let document = gloo_utils_document();
            let options = EventListenerOptions::enable_prevent_default();
            let keydown = EventListener::new_with_options(&document, "keydown", options, move |event| {
                let Some(event) = event.dyn_ref::<web_sys::KeyboardEvent>() else { return };
                if event.ctrl_key() || event.meta_key() || event.alt_key() {
                    return;
                }
                let (tag, input_type) = focus_kind(event);
                // A text field keeps its keys, and so does an element that handled the key
                // itself (the power cut's grip takes the arrows and Enter).
                if is_text_field(&tag, &input_type) || event.default_prevented() {
                    return;
                }
                let key = event.key();
                let Some(command) = command_for_key(&key) else { return };
                // The scrubber after a drag, a button after a click: the key is the lab's,
                // not the slider's step of 0.01 ms nor the button's click.
                if (tag == "INPUT" && slider_must_not_handle(&key)) || (tag == "BUTTON" && key == " ") || key == " " {
                    event.prevent_default();
                }
                let action = match command {
                    KeyCommand::Player(action) => LabAction::Player(action),
                    KeyCommand::CutPower => LabAction::CutAtPlayhead,
                    KeyCommand::RestorePower => LabAction::SetCut(None),
                    KeyCommand::TogglePresent => LabAction::TogglePresent,
                    KeyCommand::ShowKeys => LabAction::ShowKeys(true),
                    KeyCommand::Close => {
                        menu_open.set(false);
                        LabAction::ShowKeys(false)
                    }
                };
                if !matches!(action, LabAction::ShowKeys(false)) {
                    event.prevent_default();
                }
                dispatch.emit(action);
            });
            // A button's click by space fires on key-up: keep it from pressing the button
            // the lab has already acted for.
            let keyup = EventListener::new_with_options(&document, "keyup", options, move |event| {
                let Some(event) = event.dyn_ref::<web_sys::KeyboardEvent>() else { return };
                let (tag, _) = focus_kind(event);
                if tag == "BUTTON" && event.key() == " " {
                    event.prevent_default();
                }
            });
            move || drop((keydown, keyup))
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

    // The key list takes focus when it opens, so Escape and Tab work inside it.
    {
        use_effect_with(lab.keys_open, |open| {
            if *open {
                if let Some(button) = gloo_utils_document().query_selector(".keys-dialog button").ok().flatten() {
                    if let Some(button) = button.dyn_ref::<web_sys::HtmlElement>() {
                        let _ = button.focus();
                    }
                }
            }
        });
    }

    let present = lab.params.present;
    let go_to = |target: u8| {
        let dispatch = dispatch.clone();
        let menu_open = menu_open.clone();
        Callback::from(move |event: MouseEvent| {
            event.prevent_default();
            menu_open.set(false);
            dispatch.emit(LabAction::GoToPart(target));
        })
    };
    let nav = parts::NAV_ORDER.iter().map(|&index| {
        let title = &PART_TITLES[index as usize];
        let current = part == index;
        let visited = progress.visited.contains(&index);
        html! {
            <li>
                <button class={classes!("nav-part", current.then_some("current"), visited.then_some("visited"))} data-part={index.to_string()}
                    aria-current={current.then_some("page")} onclick={go_to(index)}>
                    <span class="nav-number">{ index }</span><span class="nav-title">{ *title }</span>
                    if visited { <span class="nav-visited" title="visited">{ "✓" }<span class="visually-hidden">{ " visited" }</span></span> }
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
    let pager_link = |target: u8, rel: &'static str| {
        let label = if rel == "prev" { format!("← Part {target}. {}", PART_TITLES[target as usize]) } else { format!("Part {target}. {} →", PART_TITLES[target as usize]) };
        html! { <a class={classes!("pager", rel)} rel={rel} href={part_query(target, present)} data-part={target.to_string()} onclick={go_to(target)}>{ label }</a> }
    };
    // Previous and next in the order the navigation lists the Parts.
    let position = parts::NAV_ORDER.iter().position(|listed| *listed == part).unwrap_or(0);
    let previous = position.checked_sub(1).map(|index| parts::NAV_ORDER[index]);
    let next = parts::NAV_ORDER.get(position + 1).copied();
    let pager = html! {
        <nav class="part-pager" aria-label="previous and next Part">
            if let Some(previous) = previous { { pager_link(previous, "prev") } } else { <span /> }
            if let Some(next) = next { { pager_link(next, "next") } }
        </nav>
    };
    let toggle_menu = {
        let menu_open = menu_open.clone();
        Callback::from(move |_: MouseEvent| menu_open.set(!*menu_open))
    };
    let toggle_present = dispatch.reform(|_: MouseEvent| LabAction::TogglePresent);
    let show_keys = dispatch.reform(|_: MouseEvent| LabAction::ShowKeys(true));
    let close_keys = dispatch.reform(|_: MouseEvent| LabAction::ShowKeys(false));
    let keys_dialog = lab.keys_open.then(|| {
        let rows = KEYS.iter().map(|(key, what)| html! { <tr><th scope="row"><kbd>{ *key }</kbd></th><td>{ *what }</td></tr> });
        html! {
            <div class="keys-backdrop">
                <div class="keys-dialog" role="dialog" aria-modal="true" aria-labelledby="keys-title">
                    <h2 id="keys-title">{ "Keys" }</h2>
                    <p class="note">{ "They work wherever focus is, except in a text field or a drop-down. Enter presses a focused button." }</p>
                    <table class="keys">{ for rows }</table>
                    <button class="close-keys primary" onclick={close_keys}>{ "close (Esc)" }</button>
                </div>
            </div>
        }
    });
    let visited_count = progress.visited.iter().filter(|visited| **visited < PART_COUNT).count();
    let progress_line = format!(
        "{visited_count} of {PART_COUNT} Parts visited · {} prediction{} · {} drill{} answered",
        progress.predictions.len(),
        if progress.predictions.len() == 1 { "" } else { "s" },
        progress.drills.len(),
        if progress.drills.len() == 1 { "" } else { "s" },
    );
    html! {
        <div class={classes!("lab", present.then_some("present"), menu_open.then_some("menu-open"))}>
            <a class="skip-link" href="#chapter">{ "skip to the Part" }</a>
            <header>
                <button class="menu-button" aria-expanded={menu_open.to_string()} aria-controls="parts-nav" onclick={toggle_menu}>
                    { "☰ Parts" }</button>
                <h1>{ "walab" }<span class="subtitle">{ " · the write-ahead log lab" }</span></h1>
                <span class="header-part">{ format!("Part {part}") }</span>
                <div class="header-actions">
                    <button class="present-toggle" aria-pressed={present.to_string()} onclick={toggle_present}>
                        { if present { "leave presenter mode (f)" } else { "presenter mode (f)" } }</button>
                    <button class="keys-button" onclick={show_keys}>{ "keys (?)" }</button>
                </div>
            </header>
            <nav id="parts-nav" class="parts-nav" aria-label="Parts">
                <ol class="parts">{ for nav }</ol>
                <p class="progress" data-visited={visited_count.to_string()} data-predictions={progress.predictions.len().to_string()}
                    data-drills={progress.drills.len().to_string()}>{ progress_line }</p>
            </nav>
            <main id="chapter" data-part={part.to_string()} tabindex="-1">
                { problems.unwrap_or_default() }
                <h2>{ format!("Part {part}. {}", PART_TITLES[part as usize]) }</h2>
                <p class="lab-status" role="status" aria-live="polite">{ lab.status.clone().unwrap_or_default() }</p>
                <Chapter params={lab.params.clone()} player={lab.player.clone()} model={lab.model.clone()} dropped={lab.dropped.clone()}
                    field_problem={lab.field_problem.clone()} on_action={dispatch.clone()} />
                { pager }
            </main>
            <footer>
                if !matches!(part, 5 | 13 | 14) { <parts::dropzone::DropZone dropped={lab.dropped.clone()} on_action={dispatch.clone()} /> }
                <p>{ "Keys: space play/pause · ← → step · n next moment · Home/End · + − speed · p pull the power · r restore · f presenter mode · ? all keys" }</p>
            </footer>
            { keys_dialog.unwrap_or_default() }
        </div>
    }
}

/// The focused element's tag and, for an input, its type.
fn focus_kind(event: &web_sys::KeyboardEvent) -> (String, String) {
    let Some(element) = event.target().and_then(|target| target.dyn_into::<web_sys::Element>().ok()) else {
        return (String::new(), String::new());
    };
    let input_type = element.dyn_ref::<web_sys::HtmlInputElement>().map(|input| input.type_()).unwrap_or_default();
    (element.tag_name().to_ascii_uppercase(), input_type)
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
    panic_report::install();
    yew::Renderer::<App>::new().render();
}
