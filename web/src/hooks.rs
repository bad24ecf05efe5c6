//! The browser edge's hooks: the address bar, Back and Forward, the student's progress in
//! local storage, the keys wherever focus is, the animation clock and the key list's
//! focus. Each is one `use_...` the page's [`crate::App`] calls; none draws anything.

use std::cell::RefCell;
use std::rc::Rc;

use gloo_events::{EventListener, EventListenerOptions};
use gloo_render::{request_animation_frame, AnimationFrame};
use wasm_bindgen::JsCast;
use yew::prelude::*;

use crate::keys::{command_for_key, is_text_field, slider_must_not_handle, KeyCommand};
use crate::parts::PART_TITLES;
use crate::progress::{self, Progress};
use crate::state::LabAction;
use crate::url_state::{parse_query, to_query, LabParams};

pub fn current_query() -> String {
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
    let (before, after) = (parse_query(&shown).0, parse_query(query).0);
    let _ = if before.part != after.part {
        history.push_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(query))
    } else {
        history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(query))
    };
    // A power cut pulled on the projector (presenter mode's p, the button, a typed
    // instant) brings its scene and report into view: nobody scrolls in front of a class.
    if after.present && after.cut.is_some() && after.cut != before.cut {
        crate::layout::scroll_to_opening();
    }
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

/// The address bar follows the view, and Back and Forward bring the view they name.
#[hook]
pub fn use_address(params: &LabParams, dispatch: Callback<LabAction>) {
    use_effect_with(to_query(params), |query| write_query(query));
    use_effect_with((), move |_| {
        let window = web_sys::window().expect("a browser page has a window");
        let listener = EventListener::new(&window, "popstate", move |_| dispatch.emit(LabAction::LoadQuery(current_query())));
        move || drop(listener)
    });
}

/// The student's progress: a new Part is titled, opened at its top (or at the scene its
/// link names) and counted as visited; a committed prediction counts once per Part and
/// moment; a drill answered (an answer chosen, not only revealed) counts once.
#[hook]
pub fn use_progress(params: &LabParams) -> UseStateHandle<Progress> {
    let progress = use_state(load_progress);
    let part = params.part;
    {
        let progress = progress.clone();
        use_effect_with(part, move |part| {
            let document = gloo_utils_document();
            document.set_title(&format!("Part {part}. {} · walab", PART_TITLES[*part as usize]));
            crate::layout::scroll_to_opening();
            let part = *part;
            update_progress(&progress, |progress| progress.visit(part));
        });
    }
    {
        let progress = progress.clone();
        let moment = params.predict.map(|_| format!("{part}@{}", params.cut.map(crate::url_state::format_millis).unwrap_or_default()));
        use_effect_with(moment, move |moment| {
            if let Some(moment) = moment.clone() {
                update_progress(&progress, |progress| progress.predicted(&moment));
            }
        });
    }
    {
        // A drill counts once an answer is chosen (a radio button's "change"); revealing
        // its answer does not count.
        let progress = progress.clone();
        use_effect_with((), move |_| {
            let document = gloo_utils_document();
            let listener = EventListener::new(&document, "change", move |event| {
                let Some(input) = event.target().and_then(|target| target.dyn_into::<web_sys::Element>().ok()) else { return };
                let Some(drill) = input.get_attribute("data-drill") else { return };
                let part = gloo_utils_document()
                    .get_element_by_id("chapter")
                    .and_then(|chapter| chapter.get_attribute("data-part"))
                    .unwrap_or_default();
                update_progress(&progress, |progress| progress.drill(&format!("{part}:{drill}")));
            });
            move || drop(listener)
        });
    }
    progress
}

/// The keys, wherever focus is except where the student types; Escape also closes the
/// navigation menu.
#[hook]
pub fn use_keys(dispatch: Callback<LabAction>, menu_open: UseStateHandle<bool>) {
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
                // Enter in a typed field (not a menu) applies the value (the blur fires its
                // change) and hands the keys back to the page (the figure's keys).
                if event.key() == "Enter" && tag == "INPUT" {
                    if let Some(field) = event.target().and_then(|target| target.dyn_into::<web_sys::HtmlElement>().ok()) {
                        let _ = field.blur();
                    }
                }
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

/// The animation clock: one Frame per browser frame while the player plays.
#[hook]
pub fn use_clock(playing: bool, dispatch: Callback<LabAction>) {
    use_effect_with(playing, move |playing| {
        let handle: Rc<RefCell<Option<AnimationFrame>>> = Rc::new(RefCell::new(None));
        if *playing {
            schedule_frame(handle.clone(), dispatch, None);
        }
        move || drop(handle.borrow_mut().take())
    });
}

/// The key list takes focus when it opens, so Escape and Tab work inside it.
#[hook]
pub fn use_focus_on_open(open: bool) {
    use_effect_with(open, |open| {
        if *open {
            if let Some(button) = gloo_utils_document().query_selector(".keys-dialog button").ok().flatten() {
                if let Some(button) = button.dyn_ref::<web_sys::HtmlElement>() {
                    let _ = button.focus();
                }
            }
        }
    });
}

/// index.html's static page (the title and a loading line, shown before the WebAssembly
/// has loaded) goes once the app has drawn its first frame.
#[hook]
pub fn use_remove_boot() {
    use_effect_with((), |_| {
        if let Some(boot) = gloo_utils_document().get_element_by_id("boot") {
            boot.remove();
        }
    });
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
            dispatch.emit(LabAction::Player(crate::player::PlayerAction::Frame { elapsed_ms: timestamp - previous }));
        }
        schedule_frame(next_handle, dispatch, Some(timestamp));
    });
    *handle.borrow_mut() = Some(frame);
}

