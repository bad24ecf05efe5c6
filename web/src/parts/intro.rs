//! Parts 0 and 1: the problem, and what an OK promises.

use std::rc::Rc;

use walab_core::time::Nanos;
use yew::prelude::*;

use super::controls::{controls, group_thousands, Shown};
use super::ChapterProps;
use crate::model::chain::{needed_before_ok, Failure};
use crate::model::commit::keeps_up;
use crate::model::write_path::reached;
use crate::model::Model;
use crate::figures::chain::{chain_figure, ChainFigureProps};
use crate::figures::write_path::{write_path, LogQueue, WritePathProps};
use crate::layout::Scene;
use crate::player::{Clock, player, PlayerProps};
use crate::state::LabAction;
use crate::url_state::{format_millis, PolicyKind};

pub fn start_chapter(props: &ChapterProps) -> Html {
    // The load is dragged on the figure (the dial); L is chosen beside it.
    let shown = Shown { sync: true, ..Shown::default() };
    let params = &props.params;
    let ceiling = 1e9 / params.sync_latency.0.max(1) as f64;
    // The rows as markup made from the runs' numbers (cheaper than elements, see `super::markup_owned`).
    let rows: String = match &*props.model.0 {
        Model::Commit(model) => model
            .steady_by_policy
            .iter()
            .map(|(policy, run)| match run {
                Ok(run) => {
                    // The verdict is read from the same run as the row's numbers.
                    let window = if *policy == PolicyKind::Window { params.window } else { Nanos::ZERO };
                    let keeps_up = keeps_up(&run.summary, params.sync_latency, window);
                    let bound = format_millis(Nanos(2 * params.sync_latency.0 + window.0));
                    // The steady state; a run too short to have one shows its whole run, said so.
                    let (syncs, batch, wait_mean, wait_max, whole) = match run.steady {
                        Some(steady) => (steady.syncs_per_s, steady.writes_per_sync, steady.wait_mean, steady.wait_max, false),
                        None => (run.summary.syncs_per_s(), run.summary.batch_mean(), run.summary.wait_mean(), run.summary.wait_max, true),
                    };
                    format!("<tr data-policy=\"{}\" data-steady=\"{}\"><td data-label=\"policy\">{}{}</td><td class=\"num syncs\" data-label=\"syncs/s\">{}</td>\
                        <td class=\"num batch\" data-label=\"writes per sync\">{batch:.1}</td><td class=\"num\" data-label=\"mean wait\">{:.2} ms</td>\
                        <td class=\"num worst\" data-label=\"worst wait\">{:.2} ms</td><td class=\"verdict {}\" data-label=\"verdict\" data-keeps-up=\"{keeps_up}\">{}</td></tr>",
                        policy.name(), !whole, super::escape(policy.label()), if whole { " (whole run, warm-up included)" } else { "" },
                        group_thousands(syncs.round() as u64), wait_mean.as_millis_f64(), wait_max.as_millis_f64(), if keeps_up { "ok" } else { "danger" },
                        if keeps_up { format!("keeps up: no write waits over {bound} ms") } else { format!("falls behind: waits grow past {bound} ms") })
                }
                Err(error) => format!("<tr><td>{}</td><td colspan=\"5\" class=\"error\">{}</td></tr>", super::escape(policy.label()), super::escape(error)),
            })
            .collect(),
        _ => String::new(),
    };
    let steady_note = "Each row is the run's steady state: its first sync (a lone write, nothing queued yet, the warm-up) and \
        its last (the drain after the arrivals stop) are left out.";
    html! {
        <>
        { super::markup("<div class=\"prose\"><p>Picture a storage node that must take 100,000 small writes a second, each about 100 bytes, on an \
            EBS gp3 volume, and reply OK to each one only when the write would survive a crash. Before it \
            replies, the write&#39;s log record has to be synced: pushed out of memory onto the device itself.</p></div>") }
        { write_path_view(props) }
        <Scene name="arithmetic" title="The arithmetic, run on the simulator"
            controls={html! { <div class="arithmetic-controls">{ load_dial(props) }
                { controls(&params, shown, None, &props.on_action) }</div> }}
            figure={html! {
                <>
                if let Model::Commit(model) = &*props.model.0 {
                    <LogQueue queue={Rc::new(model.per_write_queue.clone())} load_per_second={params.load_per_second} ceiling_per_second={ceiling as u64} />
                }
                { super::markup_owned(format!("<table class=\"problem stack\"><caption>{steady_note}</caption><thead><tr><th>policy</th><th class=\"num\">syncs/s</th>\
                    <th class=\"num\">writes per sync</th><th class=\"num\">mean wait</th><th class=\"num\">worst wait</th><th>at {} writes/s</th></tr></thead><tbody>{rows}</tbody></table>",
                    group_thousands(params.load_per_second))) }
                </>
            }}>
            <div class="scene-prose-inner prose">
                <p>{ format!("One sync takes L = {} ms, so one log that syncs once per write can acknowledge at \
                    most {} writes a second. Past that, writes queue faster than the log can sync them: the bars are \
                    sync per write's queue, the writes still waiting for their OK, sampled once per L.",
                    format_millis(params.sync_latency), group_thousands(ceiling as u64)) }</p>
                { super::markup("<p>Change the load and L; each row of the table is a run of the core&#39;s group-commit simulator at that \
                    load. Group commit shares one sync among every write that queued while the previous sync ran, so \
                    at a load the log keeps up with, syncs a second times writes per sync is the load.</p>") }
            </div>
        </Scene>
        { super::markup("<div class=\"prose\"><p>AWS describes gp3&#39;s latency only as single-digit milliseconds, so walab assumes 1 ms per sync of \
            the log and lets you change it. Part 2 shows how to measure the real figure on your own volume. \
            <a class=\"source\" href=\"https://docs.aws.amazon.com/ebs/latest/userguide/general-purpose.html\" target=\"_blank\" rel=\"noopener\">[AWS: EBS General Purpose SSD volumes]</a></p></div>") }
        </>
    }
}

/// The load, dragged on the figure: what each mode does at it is announced.
fn load_dial(props: &ChapterProps) -> Html {
    let params = &props.params;
    let said = match &*props.model.0 {
        Model::Commit(model) => model
            .steady_by_policy
            .iter()
            .filter_map(|(policy, run)| {
                let run = run.as_ref().ok()?;
                let window = if *policy == PolicyKind::Window { params.window } else { Nanos::ZERO };
                let verdict = if keeps_up(&run.summary, params.sync_latency, window) { "keeps up" } else { "falls behind" };
                Some(format!("{} {verdict}", policy.label()))
            })
            .collect::<Vec<_>>()
            .join("; "),
        _ => String::new(),
    };
    super::controls::load_dial(params.load_per_second, &props.on_action, &said)
}

/// Write 1's path, one station per step.
fn write_path_view(props: &ChapterProps) -> Html {
    let Model::Commit(model) = &*props.model.0 else { return Html::default() };
    let reached = reached(props.player.now);
    let caption = match reached.checked_sub(1).and_then(|index| model.write_path.get(index)) {
        Some(step) => step.caption.clone(),
        None => "Before the first step: write 1 is still in the client. Step forward to follow it.".to_string(),
    };
    html! {
        <Scene name="write-path" title="One write's path"
            controls={player(&PlayerProps { state: props.player.clone(), on_action: props.on_action.reform(LabAction::Player), mark_name: "station".into(), clock: Clock::Steps, caption: Some(AttrValue::from(caption)), ..PlayerProps::default() })}
            drawn={{
                let steps = Rc::new(model.write_path.clone());
                Callback::from(move |room| write_path(&WritePathProps { steps: steps.clone(), reached }, room))
            }}>
            { super::markup(WRITE_PATH) }
        </Scene>
    }
}

#[component]
pub fn AckChapter(_props: &ChapterProps) -> Html {
    let selected = use_state(|| Failure::PowerLoss);
    let buttons = Failure::ALL.iter().map(|failure| {
        let selected_handle = selected.clone();
        let failure = *failure;
        let onclick = Callback::from(move |_: MouseEvent| selected_handle.set(failure));
        html! {
            <button class={classes!("failure", (*selected == failure).then_some("primary"))} data-failure={failure.url_name()} {onclick}>
                { failure.label() }
            </button>
        }
    });
    let failure = *selected;
    let needed = needed_before_ok(failure);
    // A static table: written as markup, not as elements.
    let table_rows: String = Failure::ALL.iter().map(|failure| format!(
        "<tr><td data-label=\"failure\">{}</td><td data-label=\"for example\">{}</td><td data-label=\"must have reached\">{}</td></tr>",
        failure.label(), failure.example(), needed_before_ok(*failure).label())).collect();
    html! {
        <>
        { super::markup(ACK) }
        <Scene name="chain" title="The durability chain"
            controls={html! { <>
                <div class="failure-buttons" role="group" aria-label="the failure">{ for buttons }</div>
                <p class="verdict-line" aria-live="polite">{ format!("If {} ({}), an OK is safe only once the record has reached {}.", failure.label(), failure.example(), needed.label()) }</p>
            </> }}
            drawn={Callback::from(move |room| chain_figure(&ChainFigureProps { failure }, room))}>
            { super::markup(CHAIN) }
        </Scene>
        { Html::from_html_unchecked(AttrValue::from(format!("<h3>Four ways to fail</h3><table class=\"failures stack\"><thead><tr><th>failure</th><th>for example</th>\
            <th>the record must have reached, before the OK</th></tr></thead><tbody>{table_rows}</tbody></table>"))) }
        </>
    }
}

/// Part 1's opening: the rule with two halves.
const ACK: &str = "<div class=\"prose\"><p>An OK is a promise, and a promise needs terms: survive what? Every engine follows one rule with two halves:</p><ol><li>Log the change before applying it: the record enters the log before the MemTable, the page or anything else changes.</li><li>Make the log durable before acknowledging: the record must survive the failures the OK covers.</li></ol><p>Durable is not one thing. A record passes through several places on its way to safety, and each place survives a different set of failures.</p></div>";

/// Beside the durability chain.
const CHAIN: &str = "<div class=\"prose\"><p>Pick a failure and watch what it wipes: the OK may only go out once the record is in a place the failure cannot reach.</p><p class=\"note\">A write() puts data in the page cache and promises nothing about the disk; fsync() returns only when the data is on the device, cache flush included. <a class=\"source\" href=\"https://man7.org/linux/man-pages/man2/write.2.html\" target=\"_blank\" rel=\"noopener\">[write(2)]</a><a class=\"source\" href=\"https://man7.org/linux/man-pages/man2/fsync.2.html\" target=\"_blank\" rel=\"noopener\">[fsync(2)]</a> Other machines are the subject of Part 10.</p></div>";

/// Beside write 1's path.
const WRITE_PATH: &str = "<div class=\"prose\"><p>A write-ahead log (WAL) is an append-only file in which every change is recorded before it is applied anywhere else. Follow one write from the client to its OK, a station per step: the log record is built, copied into the kernel's page cache, sent to the drive's cache, and only on the media does it survive a power loss.</p><p>This lab takes that path apart, one Part at a time, on one small running example, the tiny store: 24 writes, few enough to show every byte and every sync.</p></div>";
