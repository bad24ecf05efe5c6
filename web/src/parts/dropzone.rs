//! The trace-file drop zone: drop (or choose) a trace written by `walab`, and Part 5's
//! lanes animate it. Reading the file is the browser's job; parsing and checking it is
//! [`crate::benches::dropped::parse_trace`].

use std::rc::Rc;

use wasm_bindgen_futures::{spawn_local, JsFuture};
use yew::prelude::*;

use crate::benches::dropped::{parse_dropped, DroppedFile, DroppedTrace};
use crate::state::LabAction;

fn read_file(file: web_sys::File, on_action: Callback<LabAction>) {
    spawn_local(async move {
        let name = file.name();
        let result = match JsFuture::from(file.text()).await {
            Ok(text) => match text.as_string() {
                Some(text) => parse_dropped(&name, &text),
                None => Err(format!("{name}: the file is not text")),
            },
            Err(_) => Err(format!("{name}: the browser could not read the file")),
        };
        on_action.emit(match result {
            Ok(DroppedFile::Trace(trace)) => LabAction::LoadTrace(Ok(Rc::new(trace))),
            Ok(DroppedFile::Latency(latency)) => LabAction::LoadLatency(Rc::new(latency)),
            Err(error) => LabAction::LoadTrace(Err(error)),
        });
    });
}

#[derive(Properties, PartialEq)]
pub struct DropZoneProps {
    pub dropped: Option<Result<Rc<DroppedTrace>, String>>,
    pub on_action: Callback<LabAction>,
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
            <p>{ "Drop a trace file written by walab here (" }<code>{ "walab sim power-cut --trace run.json" }</code>{ ", " }
               <code>{ "walab sim quorum --trace" }</code>{ ", or a run measured on a real disk with " }<code>{ "walab bench --trace" }</code>
               { "), or a sync-latency file from " }<code>{ "walab fsync-test --export-latency" }</code>{ " to simulate that disk; or " }<label class="choose">{ "choose one" }<input class="trace-file" type="file" accept=".json,application/json" onchange={on_choose} /></label>
               { ". It plays in Part 5's lanes." }</p>
            { error }
        </div>
    }
}
