//! Part 10: replication: the leader's sync and the followers' legs.

use std::rc::Rc;

use walab_core::quorum::QuorumMode;
use walab_core::time::Nanos;
use yew::prelude::*;

use super::ChapterProps;
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
    let legs: Vec<String> = walab_core::quorum::QuorumSetup::branch_r().legs.iter().map(|leg| format!("{} ms", format_millis(*leg))).collect();
    // Lose a follower, or bring it back: a press on its row in the figure, or its button.
    let lost = props.params.lost_followers;
    let on_replica = props.on_action.reform(move |index: usize| LabAction::Set(Setting::LostFollowers(lost ^ (1 << index) as u8)));
    let replica_buttons = (1..3usize).map(|index| {
        let name = walab_core::quorum::replica_name(index);
        let down = lost & (1 << index) != 0;
        let onclick = on_replica.reform(move |_: MouseEvent| index);
        html! { <button class="replica-toggle" data-replica={name.clone()} aria-pressed={down.to_string()} {onclick}>{ format!("lose {name}") }</button> }
    });
    let replicas_said = match (&model.branch, lost) {
        (_, 0) => "Press B or C (in the figure or here) to lose that follower.".to_string(),
        (Ok(branch), _) => format!("{} lost: each batch now commits at {:.1} ms, the {} fastest of the replicas left.",
            if lost == 6 { "B and C" } else if lost == 2 { "B" } else { "C" }, branch.setup.batch_latency().as_millis_f64(), crate::model::quorum_view::ordinal(branch.setup.w)),
        (Err(error), _) => format!("{}.", error),
    };
    let lanes = match &model.spans {
        Some(spans) => html! { <FateLanes spans={Rc::new(spans.clone())} files={Rc::new(model.files.clone())} now={props.player.now} /> },
        None => match &model.branch {
            Err(_) if lost != 0 => Html::default(),
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
        html! { <QuorumFigure {modes} w={model.setup.w} batch_label={label} {elapsed} {batches} {current} {write_23} {now} on_replica={on_replica.clone()} /> }
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
        super::markup_owned(format!("<table class=\"summary write-23\" data-total-ns=\"{}\" data-naive-ns=\"{}\">{}</table>", budget.total.0, budget.naive_sum.0,
            rows.into_iter().map(|(what, value)| format!("<tr><th>{what}</th><td class=\"num\">{value}</td></tr>")).collect::<String>()))
    });
    // The survival table as markup: one string, not a node per cell.
    let heads: String = walab_core::quorum::Failure::ALL.iter().map(|failure| format!("<th>{}</th>", failure.label())).collect();
    let rows: String = model.survival.iter().map(|row| {
        let cells: String = row.survives.iter().map(|(_, survives)| if *survives { "<td class=\"ok\">survives</td>" } else { "<td class=\"danger\">can lose it</td>" }).collect();
        format!("<tr><td>{}</td><td class=\"num\">{} ms</td>{cells}</tr>", row.policy, format_millis(row.commit_latency))
    }).collect();
    let survival = format!("<h3>What an acknowledged write survives</h3><table class=\"survival\"><thead><tr><th>policy</th><th>commit latency</th>{heads}</tr></thead><tbody>{rows}</tbody></table><p class=\"note\">Neither column alone covers everything: replicas cover the lost disk and the lost zone, local syncs cover a power event that hits every replica at once. Systems that promise both do both.</p>");
    let settings = html! {
        <div class="controls">
            <label>{ "commit at W = " }<select class="quorum-w" onchange={on_w}>
                { for (1..=3u8).map(|w| html! { <option value={w.to_string()} selected={w == props.params.quorum_w}>{ format!("{w} of 3") }</option> }) }
            </select></label>
            { for replica_buttons }
            <p class="replicas-said" aria-live="polite">{ replicas_said }</p>
        </div>
    };
    html! {
        <>
        <Scene name="replicas" controls={player(&PlayerProps { scrub_from: props.player.marks.first().copied().unwrap_or_default(), state: props.player.clone(), on_action: on_player, caption: Some(caption), ..PlayerProps::default() })}
            {settings} figure={figure.unwrap_or_default()} outcome={budget.unwrap_or_default()}>
            { super::markup_owned(format!("<div class=\"prose\"><p>Everything so far survives a power loss on one machine. A dead volume, a lost instance or a zone outage still takes the only copy; the next rung is copies on other machines. The leader appends the record to its own log and sends it to the followers at the same time; it commits once W of the N replicas, itself included, have it.</p><p>Because the legs run in parallel, a commit costs the slowest leg it must wait for, not the sum: the larger of the local sync and the (W−1)-th fastest follower. Raft-style logs work this way. PostgreSQL's synchronous replication ships WAL only after flushing it locally, so a synchronous commit costs the local flush plus the standby's round trip. <a class=\"source\" href=\"https://raft.github.io/raft.pdf\" target=\"_blank\" rel=\"noopener\">[Ongaro and Ousterhout, Raft (ATC '14)]</a><a class=\"source\" href=\"https://www.postgresql.org/docs/current/warm-standby.html#SYNCHRONOUS-REPLICATION\" target=\"_blank\" rel=\"noopener\">[PostgreSQL: synchronous replication]</a></p><p>Branch R: the tiny store forks after write 20 onto three replicas, A leading in zone a with legs {}. One batch is in flight at a time.</p></div>", legs.join(", "))) }
        </Scene>
        { lanes }
        { super::markup_owned(survival) }
        </>
    }
}
