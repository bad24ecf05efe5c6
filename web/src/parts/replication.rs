//! Part 10: replication: the leader's sync and the followers' legs.

use std::rc::Rc;

use walab_core::quorum::QuorumMode;
use walab_core::time::Nanos;
use yew::prelude::*;

use super::{ChapterProps, source};
use crate::model::captions::id_span;
use crate::model::quorum_view::{batch_at, batch_legs, batch_place};
use crate::model::Model;
use crate::figures::lanes::FateLanes;
use crate::figures::quorum::QuorumFigure;
use crate::layout::Scene;
use crate::player::{player, PlayerProps};
use crate::state::{LabAction, Setting};
use crate::url_state::format_millis;

#[component]
pub fn ReplicationChapter(props: &ChapterProps) -> Html {
    let Model::Quorum(model) = &*props.model.0 else { return Html::default() };
    let on_player = props.on_action.reform(LabAction::Player);
    let on_w = props.on_action.reform(|event: Event| {
        let select: web_sys::HtmlSelectElement = event.target_unchecked_into();
        LabAction::Set(Setting::Quorum(select.value().parse::<u8>().unwrap_or(2)))
    });
    let legs: Vec<String> = model.setup.legs.iter().map(|leg| format!("{} ms", format_millis(*leg))).collect();
    let lanes = match &model.spans {
        Some(spans) => html! { <FateLanes spans={Rc::new(spans.clone())} files={Rc::new(model.files.clone())} now={props.player.now} /> },
        None => match &model.branch {
            Err(error) => html! { <p class="error">{ format!("the quorum model refused the run: {error}") }</p> },
            Ok(_) => Html::default(),
        },
    };
    let caption = AttrValue::from(model.caption_now(props.player.now));
    let figure = model.branch.as_ref().ok().map(|branch| {
        let now = props.player.now;
        let batch = batch_at(branch, now);
        let elapsed = batch.filter(|batch| batch.start <= now).map(|batch| Nanos(now.0 - batch.start.0));
        let place = batch.map(|batch| batch_place(branch, batch));
        let of = |(place, count): (usize, usize)| format!("batch {place} of {count} on the replicas");
        let label = match (batch, place) {
            (Some(batch), Some(place)) if batch.start <= now => format!("B{}, {}: {}, started at {} ms", batch.batch, of(place), id_span(batch.first_write, batch.writes), format_millis(batch.start)),
            (Some(batch), Some(place)) => format!("B{} ({}), {}, once the log forks after write 20", batch.batch, id_span(batch.first_write, batch.writes), of(place)),
            _ => "one batch".to_string(),
        };
        let modes = Rc::new(vec![batch_legs(&model.setup, QuorumMode::Raft), batch_legs(&model.setup, QuorumMode::Postgres)]);
        let batches = Rc::new(branch.branch.batches.clone());
        let current = batch.filter(|batch| batch.start <= now).map(|batch| batch.batch);
        let write_23 = model.write_23.clone();
        html! { <QuorumFigure {modes} w={model.setup.w} batch_label={label} {elapsed} {batches} {current} {write_23} {now} /> }
    });
    let budget = model.write_23.as_ref().map(|budget| {
        let ms = |t: Nanos| format!("{} ms", format_millis(t));
        let rows = [
            ("write 23 arrives", ms(budget.arrival)),
            ("waits for the batch in flight", ms(budget.waited_for_batch_in_flight)),
            ("its own batch (the quorum's slowest needed leg)", ms(budget.own_batch)),
            ("its real wait", ms(budget.total)),
            (crate::figures::quorum::NAIVE_SUM_LABEL, ms(budget.naive_sum)),
        ];
        html! {
            <table class="summary write-23" data-total-ns={budget.total.0.to_string()} data-naive-ns={budget.naive_sum.0.to_string()}>
                { for rows.into_iter().map(|(what, value)| html! { <tr><th>{ what }</th><td class="num">{ value }</td></tr> }) }
            </table>
        }
    });
    let survival = model.survival.iter().map(|row| html! {
        <tr>
            <td>{ row.policy }</td>
            <td class="num">{ format!("{} ms", format_millis(row.commit_latency)) }</td>
            { for row.survives.iter().map(|(_, survives)| html! { <td class={classes!(if *survives { "ok" } else { "danger" })}>{ if *survives { "survives" } else { "can lose it" } }</td> }) }
        </tr>
    });
    let failure_heads = walab_core::quorum::Failure::ALL.iter().map(|failure| html! { <th>{ failure.label() }</th> });
    let settings = html! {
        <div class="controls">
            <label>{ "commit at W = " }<select class="quorum-w" onchange={on_w}>
                { for (1..=3u8).map(|w| html! { <option value={w.to_string()} selected={w == props.params.quorum_w}>{ format!("{w} of 3") }</option> }) }
            </select></label>
        </div>
    };
    html! {
        <>
        <Scene name="replicas" controls={player(&PlayerProps { state: props.player.clone(), on_action: on_player, caption: Some(caption), ..PlayerProps::default() })}
            {settings} figure={figure.unwrap_or_default()} outcome={budget.unwrap_or_default()}>
            <div class="prose">
                <p>{ "Everything so far survives a power loss on one machine. A dead volume, a lost instance or a zone outage \
                      still takes the only copy; the next rung is copies on other machines. The leader appends the record to its \
                      own log and sends it to the followers at the same time; it commits once W of the N replicas, itself \
                      included, have it." }</p>
                <p>{ "Because the legs run in parallel, a commit costs the slowest leg it must wait for, not the sum: the larger \
                      of the local sync and the (W−1)-th fastest follower. Raft-style logs work this way. PostgreSQL's \
                      synchronous replication ships WAL only after flushing it locally, so a synchronous commit costs the local \
                      flush plus the standby's round trip. " }
                   { source("Ongaro and Ousterhout, Raft (ATC '14)", "https://raft.github.io/raft.pdf") }
                   { source("PostgreSQL: synchronous replication", "https://www.postgresql.org/docs/current/warm-standby.html#SYNCHRONOUS-REPLICATION") }</p>
                <p>{ format!("Branch R: the tiny store forks after write 20 onto three replicas, A leading in zone a with legs {}. \
                    One batch is in flight at a time.", legs.join(", ")) }</p>
            </div>
        </Scene>
        { lanes }
        <h3>{ "What an acknowledged write survives" }</h3>
        <table class="survival">
            <thead><tr><th>{ "policy" }</th><th>{ "commit latency" }</th>{ for failure_heads }</tr></thead>
            <tbody>{ for survival }</tbody>
        </table>
        <p class="note">{ "Neither column alone covers everything: replicas cover the lost disk and the lost zone, local syncs \
            cover a power event that hits every replica at once. Systems that promise both do both." }</p>
        </>
    }
}
