//! Part 8: segments and their two deletion gates.

use std::rc::Rc;

use yew::prelude::*;

use super::power::{answer_revealed, cut_controls, lanes, power_report, tiny_model};
use super::ChapterProps;
use crate::model::segments::{kept as kept_files, segment_files};
use crate::figures::segments::SegmentsFigure;
use crate::layout::Scene;
use crate::player::{format_fixed_millis, player, PlayerProps};
use crate::state::{LabAction, Setting};

#[component]
pub fn SegmentsChapter(props: &ChapterProps) -> Html {
    let (revealed, _) = answer_revealed(props);
    let Some(model) = tiny_model(props) else { return Html::default() };
    // The view opens on a reader pinning segments: the lesson, said first.
    let pinned: Vec<u64> = model.gates_at(props.player.now).iter().filter(|gate| gate.exists && gate.flushed && !gate.readers_done).map(|gate| gate.segment).collect();
    let idea = match (props.params.cdc_confirmed_seq, pinned.as_slice()) {
        (Some(seq), [first, ..]) => Some(format!(
            "A reader that has read only up to seq {seq} pins the log: wal-{first}{} could go (flushed) but must stay until the reader moves on.",
            if pinned.len() == 1 { String::new() } else { format!(" to wal-{}", pinned[pinned.len() - 1]) })),
        _ => None,
    };
    let caption = super::power::opening_caption(props, model, revealed, idea);
    let on_player = props.on_action.reform(LabAction::Player);
    let gates = model.gates_at(props.player.now);
    // The table as markup: its cells are the run's values (cheaper than an element each in code).
    let rows: String = gates.iter().map(|gate| {
        let deletable = gate.flushed && gate.readers_done;
        let status = if !gate.exists && deletable { "deleted" } else if !gate.exists { "not created yet" } else if deletable { "may be deleted" } else { "kept" };
        // A segment not created yet has no gates to pass.
        let unborn = status == "not created yet";
        let gate_cell = |open: bool, closed: &'static str| match (unborn, open) {
            (true, _) => "<td class=\"none\">—</td>".to_string(),
            (false, true) => "<td class=\"ok\">passed</td>".to_string(),
            (false, false) => format!("<td class=\"danger\">{closed}</td>"),
        };
        format!("<tr class=\"segment {}\" data-segment=\"{}\" data-status=\"{status}\"><td>wal-{}</td><td>{}-{}</td>{}{}<td>{status}</td></tr>",
            status.replace(' ', "-"), gate.segment, gate.segment, gate.segment * 4 - 3, gate.segment * 4,
            gate_cell(gate.flushed, "not yet"), gate_cell(gate.readers_done, "pinned by the reader"))
    }).collect();
    let kept = gates.iter().filter(|gate| gate.exists && !(gate.flushed && gate.readers_done)).count();
    let figure = model.full.as_ref().ok().map(|(run, _)| {
        let files = segment_files(run, props.player.now);
        let kept = kept_files(&files);
        let on_reader = props.on_action.reform(|seq: u64| LabAction::Set(Setting::Cdc(Some(seq))));
        html! { <SegmentsFigure files={Rc::new(files)} reader={props.params.cdc_confirmed_seq} {kept} {on_reader} /> }
    });
    let on_reader = props.on_action.reform(|event: Event| {
        let select: web_sys::HtmlSelectElement = event.target_unchecked_into();
        LabAction::Set(Setting::Cdc(select.value().parse::<u64>().ok()))
    });
    let reader = props.params.cdc_confirmed_seq;
    // The seqs offered, and the one the reader was dragged to.
    let mut choices = vec![4u64, 10, 16, 20];
    if let Some(seq) = reader.filter(|seq| !choices.contains(seq)) {
        choices.push(seq);
        walab_core::sort::sort(&mut choices);
    }
    let player = |caption: Option<AttrValue>| player(&PlayerProps { state: props.player.clone(), on_action: on_player.clone(), caption, ..PlayerProps::default() });
    html! {
        <>
        <Scene name="segments" controls={player(Some(caption))}
            settings={html! {
                <div class="controls">
                    <label>{ "change-data-capture reader " }
                        <select class="cdc" onchange={on_reader}>
                            <option value="none" selected={reader.is_none()}>{ "none" }</option>
                            { for choices.iter().map(|seq| html! { <option value={seq.to_string()} selected={reader == Some(*seq)}>{ format!("stuck at seq {seq}") }</option> }) }
                        </select>
                    </label>
                </div>
            }}
            figure={html! {
                <>
                { figure.unwrap_or_default() }
                { super::markup_owned(format!("<table class=\"gates\" data-kept=\"{kept}\"><thead><tr><th>segment</th><th>writes</th><th>gate 1: flushed</th>\
                    <th>gate 2: readers</th><th>at t = {} ms</th></tr></thead><tbody>{rows}</tbody></table>", format_fixed_millis(props.player.now))) }
                </>
            }}
            outcome={html! { <p class="verdict-line">{ format!("{} kept at this instant.", crate::format::count(kept, "segment")) }</p> }}>
            { super::markup(r#"<div class="prose"><p>A log grows forever unless something deletes it, so it is cut into segments, separate files that are deleted, recycled or archived whole. RocksDB and the tiny store start a segment at each MemTable switch; PostgreSQL at a fixed size (16 MB by default); Kafka at a size or an age. <a class="source" href="https://www.postgresql.org/docs/current/wal-configuration.html" target="_blank" rel="noopener">[PostgreSQL: WAL configuration]</a></p><p>A segment may go only when two gates are open: every record in it is durable somewhere else (a flushed file the durable manifest lists, or pages a checkpoint wrote), and every reader of the log (replicas, backup shippers, change-data-capture) has confirmed a position past its last record. PostgreSQL&#39;s replication slots keep WAL for their consumer for exactly this reason. <a class="source" href="https://www.postgresql.org/docs/current/warm-standby.html#STREAMING-REPLICATION-SLOTS" target="_blank" rel="noopener">[PostgreSQL: replication slots]</a></p></div>"#) }
        </Scene>
        <Scene name="power-cut" title="Pull the power" opens_here={props.params.cut.is_some()}
            controls={player(None)} actions={cut_controls(props)} figure={lanes(model, props, revealed)} outcome={power_report(props)} />
        </>
    }
}

