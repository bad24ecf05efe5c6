//! The page's frame around a chapter, drawn from the lab's state: the header, the
//! navigation with the student's progress, the URL's problems, the previous and next
//! links and the key list. Functions returning `Html`: none keeps state (the menu's
//! open state is [`crate::App`]'s).

use yew::prelude::*;

use crate::keys::KEYS;
use crate::parts::{NAV_ORDER, PART_TITLES};
use crate::progress::Progress;
use crate::state::LabAction;
use crate::url_state::{UrlProblem, PART_COUNT};

/// The query for Part `part`, keeping presenter mode.
fn part_query(part: u8, present: bool) -> String {
    if present { format!("?part={part}&present=1") } else { format!("?part={part}") }
}

/// What the frame's links and buttons send: a Part to open (the menu closes), the menu
/// toggled, or a lab action.
#[derive(Clone, PartialEq)]
pub struct ShellEvents {
    pub go_to: Callback<u8>,
    pub toggle_menu: Callback<()>,
    pub dispatch: Callback<LabAction>,
}

impl ShellEvents {
    /// A link's click, taken over by the app; a click meant for a new tab or window (a
    /// modifier key, the middle button) is left to the browser, which opens the link.
    fn go_to(&self, target: u8) -> Callback<MouseEvent> {
        let go_to = self.go_to.clone();
        Callback::from(move |event: MouseEvent| {
            if event.ctrl_key() || event.meta_key() || event.shift_key() || event.alt_key() || event.button() != 0 {
                return;
            }
            event.prevent_default();
            go_to.emit(target);
        })
    }
}

pub fn header(part: u8, present: bool, menu_open: bool, events: &ShellEvents) -> Html {
    let toggle_menu = events.toggle_menu.reform(|_: MouseEvent| ());
    let toggle_present = events.dispatch.reform(|_: MouseEvent| LabAction::TogglePresent);
    let show_keys = events.dispatch.reform(|_: MouseEvent| LabAction::ShowKeys(true));
    html! {
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
    }
}

/// The Parts in the navigation's order, the current one marked, the visited ticked, and
/// the progress line. Each Part is a link (`?part=N`), so it opens in a new tab and can
/// be shared; a plain click is the app's.
pub fn parts_nav(part: u8, present: bool, progress: &Progress, events: &ShellEvents) -> Html {
    let items = NAV_ORDER.iter().map(|&index| {
        let title = &PART_TITLES[index as usize];
        let current = part == index;
        let visited = progress.visited.contains(&index);
        html! {
            <li>
                <a class={classes!("nav-part", current.then_some("current"), visited.then_some("visited"))} data-part={index.to_string()}
                    href={part_query(index, present)} aria-current={current.then_some("page")} onclick={events.go_to(index)}>
                    <span class="nav-number">{ index }</span><span class="nav-title">{ *title }</span>
                    if visited { <span class="nav-visited" title="visited">{ "✓" }<span class="visually-hidden">{ " visited" }</span></span> }
                </a>
            </li>
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
        <nav id="parts-nav" class="parts-nav" aria-label="Parts">
            <ol class="parts">{ for items }</ol>
            <p class="progress" data-visited={visited_count.to_string()} data-predictions={progress.predictions.len().to_string()}
                data-drills={progress.drills.len().to_string()}>{ progress_line }</p>
        </nav>
    }
}

/// What the link said that the page could not use, until dismissed.
pub fn url_problems(problems: &[UrlProblem], dispatch: &Callback<LabAction>) -> Html {
    if problems.is_empty() {
        return Html::default();
    }
    let items = problems.iter().map(|problem| html! { <li>{ problem.to_string() }</li> });
    let dismiss = dispatch.reform(|_: MouseEvent| LabAction::DismissUrlProblems);
    html! {
        <div class="url-problems" role="alert">
            <p>{ "The link had parameters the lab could not use; it shows the defaults in their place:" }</p>
            <ul>{ for items }</ul>
            <button onclick={dismiss}>{ "dismiss" }</button>
        </div>
    }
}

/// Previous and next in the order the navigation lists the Parts.
pub fn pager(part: u8, present: bool, events: &ShellEvents) -> Html {
    let link = |target: u8, rel: &'static str| {
        let title = PART_TITLES[target as usize];
        let label = if rel == "prev" { format!("← Part {target}. {title}") } else { format!("Part {target}. {title} →") };
        html! { <a class={classes!("pager", rel)} rel={rel} href={part_query(target, present)} data-part={target.to_string()} onclick={events.go_to(target)}>{ label }</a> }
    };
    let position = NAV_ORDER.iter().position(|listed| *listed == part).unwrap_or(0);
    let previous = position.checked_sub(1).map(|index| NAV_ORDER[index]);
    let next = NAV_ORDER.get(position + 1).copied();
    html! {
        <nav class="part-pager" aria-label="previous and next Part">
            if let Some(previous) = previous { { link(previous, "prev") } } else { <span /> }
            if let Some(next) = next { { link(next, "next") } }
        </nav>
    }
}

/// The key list, as a dialog.
pub fn keys_dialog(dispatch: &Callback<LabAction>) -> Html {
    let close_keys = dispatch.reform(|_: MouseEvent| LabAction::ShowKeys(false));
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
}
