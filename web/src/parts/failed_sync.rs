//! Part 3: when fsync fails. The text; the two branches run on the core's device model.

use std::rc::Rc;

use yew::prelude::*;

use super::power::{answer_revealed, cut_controls, field_message, id_ranges, lanes, power_report, tiny_model};
use super::predict::{answer_pending, Predict};
use super::ChapterProps;
use crate::model::failed_sync_view::paths_at;
use crate::figures::failed_sync::{failed_sync_figure, FailedSyncFigureProps};
use crate::layout::Scene;
use crate::player::{player, PlayerProps};
use crate::state::{Field, LabAction, Setting};
use crate::url_state::{Fault, Handling};

/// The Part's text, as static markup (see `super::markup`).
const FAILED_SYNC_TEXT: &str = r#"<div class="prose"><p>A sync can fail: EIO from a failing device or a lost network volume, ENOSPC from a full disk. The natural reaction, trying again, is exactly wrong. When Linux fails to write dirty pages back, it may mark them clean anyway and report the error once, to the next sync that asks. The bytes may never have reached the disk, yet the kernel no longer holds them as waiting to be written, so a second sync finds nothing to do and returns success. <a class="source" href="https://man7.org/linux/man-pages/man2/fsync.2.html" target="_blank" rel="noopener">[fsync(2) ERRORS]</a></p><p>This bit PostgreSQL in 2018 ("fsyncgate"). Its fix was to stop retrying: by default a failed data sync now raises a PANIC, and the server restarts and recovers from its WAL (data_sync_retry = off). A study at USENIX ATC 2020 tested five widely used systems (PostgreSQL, LMDB, LevelDB, SQLite, Redis) and found that none handled a failed fsync safely in every case. <a class="source" href="https://www.postgresql.org/docs/current/runtime-config-error-handling.html#GUC-DATA-SYNC-RETRY" target="_blank" rel="noopener">[PostgreSQL: data_sync_retry]</a><a class="source" href="https://www.usenix.org/conference/atc20/presentation/rebello" target="_blank" rel="noopener">[Rebello et al., Can Applications Recover from fsync Failures? (ATC &#39;20)]</a></p><h3>The rule</h3><ol><li>A failed sync is fatal to the log: never retry it and carry on.</li><li>Fail every writer waiting on that sync; none of them was acknowledged.</li><li>Stop taking writes, restart, and recover from what is on the disk.</li><li>A client that got an error does not know the outcome: the write may or may not exist after recovery. Its retry must be idempotent.</li></ol><p>One more trap: after a write-back error the kernel may keep the pages&#39; contents in memory. A process that restarts without a reboot and reads its log through the page cache can see records the disk does not have, replay them as durable, and lose them at the next power cut. Recover after a reboot, or read the log with direct I/O.</p></div>"#;

pub fn failed_sync_chapter(props: &ChapterProps) -> Html {
    let (revealed, _) = answer_revealed(props);
    let Some(model) = tiny_model(props) else { return Html::default() };
    let caption = AttrValue::from(model.caption_now(props.player.now, revealed));
    let on_player = props.on_action.reform(LabAction::Player);
    let on_fault = props.on_action.reform(|event: Event| {
        let select: web_sys::HtmlSelectElement = event.target_unchecked_into();
        LabAction::Set(Setting::Fault(Fault::from_url_name(&select.value()).unwrap_or(Fault::None)))
    });
    let on_handling = props.on_action.reform(|event: Event| {
        let select: web_sys::HtmlSelectElement = event.target_unchecked_into();
        LabAction::Set(Setting::Handling(Handling::from_url_name(&select.value()).unwrap_or(Handling::Right)))
    });
    let (acked, failed) = match &model.full {
        Ok((run, _)) => (run.acknowledged(), run.failed()),
        Err(_) => (Vec::new(), Vec::new()),
    };
    let paths = paths_at(model, &props.params, props.player.now, revealed);
    let figure = (!paths.is_empty()).then(|| html! { { failed_sync_figure(&FailedSyncFigureProps { paths: Rc::new(paths) }) } });
    let page_cache = model.through_page_cache.as_ref().filter(|_| revealed).map(|recovered| html! {
        <p class="note page-cache">{ format!("A process that restarts without a reboot and reads the log through the page cache \
            would find {}.", id_ranges(recovered)) }</p>
    });
    let settings = html! {
        <div class="controls">
            <label>{ "fault " }<select class="fault" onchange={on_fault}>
                { for Fault::ALL.iter().map(|fault| html! { <option value={fault.url_name()} selected={*fault == props.params.fault}>{ fault.label() }</option> }) }
            </select></label>
            if props.params.fault == Fault::LogSync {
                <label>{ "failing batch B" }<input class="eio-batch" type="number" min="1" max="24" value={props.params.eio_batch.to_string()}
                    onchange={{
                        let (on_action, in_use) = (props.on_action.clone(), props.params.eio_batch.to_string());
                        Callback::from(move |event: Event| {
                            let input: web_sys::HtmlInputElement = event.target_unchecked_into();
                            let typed = input.value();
                            input.set_value(&in_use);
                            on_action.emit(LabAction::Type(Field::EioBatch, typed));
                        })
                    }} /></label>
                { field_message(&props.field_problem, Field::EioBatch) }
            }
            <label>{ "when the log's sync fails " }<select class="handling" onchange={on_handling}>
                <option value={Handling::Right.url_name()} selected={props.params.handling == Handling::Right}>{ "fail the waiters and stop (right)" }</option>
                <option value={Handling::Wrong.url_name()} selected={props.params.handling == Handling::Wrong}>{ "retry and carry on (wrong)" }</option>
            </select></label>
        </div>
    };
    let whole_run_table = super::markup_owned(format!("<table class=\"summary\" data-acked=\"{}\" data-failed=\"{}\"><tr><th>acknowledged (whole run)</th><td>{}</td></tr>\
        <tr><th>told &quot;outcome unknown&quot;</th><td>{}</td></tr></table>", acked.len(), failed.len(), id_ranges(&acked), id_ranges(&failed)));
    let whole_run = html! {
        if props.params.cut.is_some() && !revealed {
            { answer_pending("The whole run's acknowledgements appear once you predict what recovery finds (below), or ask to see the answer.") }
        } else if props.params.cut.is_some() {
            // The link's prediction answers the cut's question: no second verdict on it here.
            { whole_run_table }
        } else {
            <Predict question="with this fault and this handling, how many of the 24 writes are acknowledged over the whole run?"
                answer={Some(acked.len() as u32)} params={props.params.clone()} on_action={props.on_action.clone()}>
                { whole_run_table }
            </Predict>
        }
    };
    // The step's sentence goes with the scene the view opens on (a cut's, when the link has one).
    let cut_opens = props.params.cut.is_some();
    let player = |caption: Option<AttrValue>| player(&PlayerProps { state: props.player.clone(), on_action: on_player.clone(), caption, ..PlayerProps::default() });
    html! {
        <>
        <Scene name="failed-sync" title="The branches, on the simulated device"
            settings={settings}
            controls={player((!cut_opens).then(|| caption.clone()))}
            figure={figure.unwrap_or_default()}
            outcome={whole_run}>
            { super::markup(FAILED_SYNC_TEXT) }
        </Scene>
        <Scene name="power-cut" title="Pull the power" opens_here={props.params.cut.is_some()}
            controls={player(cut_opens.then(|| caption.clone()))}
            actions={html! { <>{ cut_controls(props) }{ loss_note(model, &props.params) }</> }}
            figure={lanes(model, props, revealed)}
            outcome={html! { <>{ power_report(props) }{ page_cache.unwrap_or_default() }</> }}>
            { super::markup(r#"<div class="prose"><p>Then pull the power, before or after F11&#39;s flush completes, and compare the paths: on the wrong path the retried sync &quot;succeeded&quot; without writing, so whether B11&#39;s acknowledged writes survive depends on timing.</p></div>"#) }
        </Scene>
        </>
    }
}


/// Which cuts lose writes told OK on this path, as the core's runs found them (with E1).
fn loss_note(model: &crate::model::tiny::TinyModel, params: &crate::url_state::LabParams) -> Html {
    if params.fault != Fault::LogSync {
        return Html::default();
    }
    let text = match &model.loss_window {
        Some(window) => format!("On this path a cut after {} ms and before {} ms loses writes {}, told OK: try {} ms.",
            crate::url_state::format_millis(window.after), crate::url_state::format_millis(window.before),
            crate::model::captions::id_runs(&window.lost), crate::url_state::format_millis(window.suggested())),
        None => "On this path no cut after the failed sync loses a write told OK (the core tried one between every two events).".to_string(),
    };
    html! { <p class="note loss-window" data-suggested={model.loss_window.as_ref().map(|window| window.suggested().0.to_string())}>{ text }</p> }
}
