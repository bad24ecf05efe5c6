//! The trace-file drop zone: drop (or choose) a trace written by `walab`, and Part 5's
//! lanes animate it, or Part 13's or 14's figures when it is a `walab sim remote` run.
//! Reading the file is the browser's job; parsing and checking it is
//! [`crate::model::dropped::parse_dropped`].

use std::rc::Rc;

use gloo_events::{EventListener, EventListenerOptions};
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::{spawn_local, JsFuture};
use yew::prelude::*;

use crate::model::dropped::{parse_dropped, DropError, Dropped, DroppedFile};
use crate::model::trace_reader::{ReadProgress, TraceReader};
use crate::format::group_thousands;
use crate::state::LabAction;

/// Gives the browser a turn (to paint the progress line, to answer a click) before the
/// next piece of a long read.
async fn browser_turn() {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        if let Some(window) = web_sys::window() {
            let _ = window.set_timeout_with_callback(&resolve);
        }
    });
    let _ = JsFuture::from(promise).await;
}

fn now_ms() -> f64 {
    web_sys::window().and_then(|window| window.performance()).map_or(0.0, |performance| performance.now())
}

/// How long one piece of a read may hold the browser, in milliseconds.
const TURN_MS: f64 = 40.0;

/// Reads a trace's text in pieces (see [`crate::model::trace_reader`]), telling
/// `progress` how far it got after each; a text the reader cannot cut is parsed whole.
async fn parse_in_turns(name: &str, text: &str, progress: &UseStateHandle<Option<String>>) -> Result<DroppedFile, DropError> {
    if text.contains("\"walab-latency/") {
        return parse_dropped(name, text);
    }
    let Some(mut reader) = TraceReader::new(text) else { return parse_dropped(name, text) };
    loop {
        let started = now_ms();
        let finished = loop {
            match reader.step(2_000) {
                Some(false) if now_ms() - started < TURN_MS => {}
                Some(done) => break done,
                None => return parse_dropped(name, text),
            }
        };
        let ReadProgress { done, total } = reader.progress();
        progress.set(Some(if finished {
            format!("Read {name}: {} writes and events; drawing the run…", group_thousands(total as u64))
        } else {
            format!("Reading {name}: {} of {} writes and events ({}%)…", group_thousands(done as u64), group_thousands(total as u64), done * 100 / total.max(1))
        }));
        browser_turn().await;
        if finished {
            return reader.finish(name);
        }
    }
}

fn read_file(file: web_sys::File, on_action: Callback<LabAction>, progress: UseStateHandle<Option<String>>) {
    spawn_local(async move {
        let name = file.name();
        progress.set(Some(format!("Opening {name} ({})…", crate::format::count(file.size() as u64, "byte"))));
        browser_turn().await;
        let result = match JsFuture::from(file.text()).await {
            Ok(text) => match text.as_string() {
                Some(text) => parse_in_turns(&name, &text, &progress).await,
                None => Err(DropError { message: format!("{name}: the file is not text"), kind: None }),
            },
            Err(_) => Err(DropError { message: format!("{name}: the browser could not read the file"), kind: None }),
        };
        progress.set(None);
        on_action.emit(match result {
            Ok(DroppedFile::Trace(trace)) => LabAction::LoadTrace(Ok(Dropped::Commit(Rc::new(trace)))),
            Ok(DroppedFile::Remote(remote)) => LabAction::LoadTrace(Ok(Dropped::Remote(Rc::new(remote)))),
            Ok(DroppedFile::Latency(latency)) => LabAction::LoadLatency(Rc::new(latency)),
            Err(error) => LabAction::LoadTrace(Err(error)),
        });
    });
}

#[derive(Properties, PartialEq)]
pub struct DropZoneProps {
    pub dropped: Option<Result<Dropped, String>>,
    pub on_action: Callback<LabAction>,
    /// The remote chapters' wording: their own `walab sim remote --trace` first.
    #[prop_or_default]
    pub remote: bool,
}

#[component]
pub fn DropZone(props: &DropZoneProps) -> Html {
    let hovering = use_state(|| false);
    // How far the read of a dropped file has come (a long recording takes seconds).
    let progress = use_state(|| None::<String>);
    let on_drag_over = {
        let hovering = hovering.clone();
        Callback::from(move |event: DragEvent| {
            event.prevent_default();
            hovering.set(true);
        })
    };
    let on_drag_leave = {
        let hovering = hovering.clone();
        Callback::from(move |_: DragEvent| hovering.set(false))
    };
    let on_drop = {
        let (hovering, progress) = (hovering.clone(), progress.clone());
        let on_action = props.on_action.clone();
        Callback::from(move |event: DragEvent| {
            event.prevent_default();
            hovering.set(false);
            if let Some(file) = event.data_transfer().and_then(|transfer| transfer.files()).and_then(|files| files.get(0)) {
                read_file(file, on_action.clone(), progress.clone());
            }
        })
    };
    // A file dropped anywhere on the page is read as if on the zone (which handles its own
    // drops first), instead of the browser opening it in place of the lab.
    {
        let (on_action, progress) = (props.on_action.clone(), progress.clone());
        use_effect_with((), move |_| {
            let window = web_sys::window().expect("a window");
            let options = EventListenerOptions::enable_prevent_default();
            let over = EventListener::new_with_options(&window, "dragover", options, |event| event.prevent_default());
            let dropped = EventListener::new_with_options(&window, "drop", options, move |event| {
                if event.default_prevented() {
                    return;
                }
                event.prevent_default();
                let file = event.dyn_ref::<DragEvent>().and_then(|drag| drag.data_transfer()).and_then(|transfer| transfer.files()).and_then(|files| files.get(0));
                if let Some(file) = file {
                    read_file(file, on_action.clone(), progress.clone());
                }
            });
            move || drop((over, dropped))
        });
    }
    let on_choose = {
        let (on_action, progress) = (props.on_action.clone(), progress.clone());
        Callback::from(move |event: Event| {
            let input: web_sys::HtmlInputElement = event.target_unchecked_into();
            if let Some(file) = input.files().and_then(|files| files.get(0)) {
                read_file(file, on_action.clone(), progress.clone());
            }
            input.set_value("");
        })
    };
    let error = match &props.dropped {
        Some(Err(error)) => html! { <p class="error drop-error" role="alert">{ error.clone() }</p> },
        _ => Html::default(),
    };
    html! {
        <div class={classes!("drop-zone", (*hovering).then_some("hovering"))}
            ondragover={on_drag_over} ondragleave={on_drag_leave} ondrop={on_drop}>
            if props.remote {
                <p>{ "Drop a trace of your own run here, written by " }<code>{ "walab sim remote --backend s3 --trace run.json" }</code>
                   { " (or " }<code>{ "--backend postgres" }</code>{ "), or " }<label class="choose">{ "choose one" }<input class="trace-file" type="file" accept=".json,application/json" onchange={on_choose} /></label>
                   { ": the figures of this chapter draw it. A commit trace (" }<code>{ "walab sim power-cut --trace" }</code>{ ", " }<code>{ "walab bench --trace" }</code>{ ") plays in Part 5's lanes." }</p>
            } else {
                <p>{ "Drop a trace file written by walab here (" }<code>{ "walab sim power-cut --trace run.json" }</code>{ ", " }
                   <code>{ "walab sim quorum --trace" }</code>{ ", or a run measured on a real disk with " }<code>{ "walab bench --trace" }</code>
                   { "), or a sync-latency file from " }<code>{ "walab fsync-test --export-latency" }</code>{ " to simulate that disk; or " }<label class="choose">{ "choose one" }<input class="trace-file" type="file" accept=".json,application/json" onchange={on_choose} /></label>
                   { ". It plays in Part 5's lanes; a trace of " }<code>{ "walab sim remote" }</code>{ " plays in Part 13 (S3) or 14 (Postgres)." }</p>
            }
            { error }
            if let Some(line) = &*progress {
                <p class="trace-progress" role="status" aria-live="polite" aria-busy="true">{ line.clone() }</p>
            }
        </div>
    }
}
