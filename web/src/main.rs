//! walab-web: the browser lab.
//!
//! A Yew single-page app in the reducer style: [`state::LabState`] holds the view (its
//! parameters are the URL), [`state::LabAction`] is everything that can change it, and
//! the components under [`parts`] take props and draw. The simulations are the core's
//! (`walab-core`, compiled to WebAssembly with this crate); [`model`] turns their runs
//! into values a figure draws. This file is the page: its state, the browser edge's hooks
//! ([`hooks`]: the URL and the history, one entry per Part so Back returns to the Part
//! before; the keyboard; the animation clock; the student's progress in local storage)
//! and the frame around the chapter ([`shell`]).

mod charts;
mod cli_line;
mod figures;
mod format;
mod hooks;
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
mod shell;
mod sorted_map;
mod state;
mod url_state;

use yew::prelude::*;

use parts::Chapter;
use parts::PART_TITLES;
use shell::ShellEvents;
use state::{LabAction, LabState};

/// The page: the lab's state, the browser edge's hooks, and the frame around the chapter.
#[component]
fn App() -> Html {
    let lab = use_reducer(|| LabState::from_query(&hooks::current_query()));
    let menu_open = use_state(|| false);
    let dispatch = {
        let lab = lab.clone();
        Callback::from(move |action: LabAction| lab.dispatch(action))
    };
    hooks::use_address(&lab.params, dispatch.clone());
    let progress = hooks::use_progress(&lab.params);
    hooks::use_keys(dispatch.clone(), menu_open.clone());
    hooks::use_clock(lab.player.playing, dispatch.clone());
    hooks::use_focus_on_open(lab.keys_open);
    hooks::use_remove_boot();

    let (part, present) = (lab.params.part, lab.params.present);
    let events = ShellEvents {
        go_to: {
            let (dispatch, menu_open) = (dispatch.clone(), menu_open.clone());
            Callback::from(move |target: u8| {
                menu_open.set(false);
                dispatch.emit(LabAction::GoToPart(target));
            })
        },
        toggle_menu: {
            let menu_open = menu_open.clone();
            Callback::from(move |()| menu_open.set(!*menu_open))
        },
        dispatch: dispatch.clone(),
    };
    html! {
        <div class={classes!("lab", present.then_some("present"), menu_open.then_some("menu-open"), lab.player.playing.then_some("playing"))}>
            <a class="skip-link" href="#chapter">{ "skip to the Part" }</a>
            { shell::header(part, present, *menu_open, &events) }
            { shell::parts_nav(part, present, &progress, &events) }
            <main id="chapter" data-part={part.to_string()} tabindex="-1">
                { shell::url_problems(&lab.url_problems, &dispatch) }
                <h2>{ format!("Part {part}. {}", PART_TITLES[part as usize]) }</h2>
                <p class="lab-status" role="status" aria-live="polite">{ lab.status.clone().unwrap_or_default() }</p>
                <Chapter params={lab.params.clone()} player={lab.player.clone()} model={lab.model.clone()} dropped={lab.dropped.clone()}
                    field_problem={lab.field_problem.clone()} on_action={dispatch.clone()} />
                { shell::pager(part, present, &events) }
            </main>
            <footer>
                if !parts::choice::drops_in_chapter(part) { <parts::dropzone::DropZone dropped={lab.dropped.clone()} on_action={dispatch.clone()} /> }
                <p>{ "Keys: space play/pause · ← → step · n next moment · Home/End · + − speed · p pull the power · r restore · f presenter mode · ? all keys" }</p>
            </footer>
            if lab.keys_open { { shell::keys_dialog(&dispatch) } }
        </div>
    }
}

fn main() {
    panic_report::install();
    yew::Renderer::<App>::new().render();
}
