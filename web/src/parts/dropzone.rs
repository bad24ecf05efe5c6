//! The trace-file drop zone: drop (or choose) a trace written by `walab`, and Part 5's
//! lanes animate it, or Part 13's or 14's figures when it is a `walab sim remote` run.
//! Reading the file is the browser's job; parsing and checking it is
//! [`crate::benches::dropped::parse_dropped`].

use std::rc::Rc;

use wasm_bindgen_futures::{spawn_local, JsFuture};
use yew::prelude::*;

use crate::benches::dropped::{parse_dropped, DropError, Dropped, DroppedFile};
use crate::state::LabAction;

fn read_file(file: web_sys::File, on_action: Callback<LabAction>) {
    spawn_local(async move {
        let name = file.name();
        let result = match JsFuture::from(file.text()).await {
            Ok(text) => match text.as_string() {
                Some(text) => parse_dropped(&name, &text),
                None => Err(DropError { message: format!("{name}: the file is not text"), part: None }),
            },
            Err(_) => Err(DropError { message: format!("{name}: the browser could not read the file"), part: None }),
        };
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
        let hovering = hovering.clone();
        let on_action = props.on_action.clone();
        Callback::from(move |event: DragEvent| {
            event.prevent_default();
            hovering.set(false);
            if let Some(file) = event.data_transfer().and_then(|transfer| transfer.files()).and_then(|files| files.get(0)) {
                read_file(file, on_action.clone());
            }
        })
    };
    let on_choose = {
        let on_action = props.on_action.clone();
        Callback::from(move |event: Event| {
            let input: web_sys::HtmlInputElement = event.target_unchecked_into();
            if let Some(file) = input.files().and_then(|files| files.get(0)) {
                read_file(file, on_action.clone());
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
        </div>
    }
}
