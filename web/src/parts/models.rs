//! Parts 9, 10 and 11's benches: REDO on two pages, three replicas, the AWS budget.

use std::collections::BTreeMap;
use std::rc::Rc;

use walab_core::budget::Fit;
use walab_core::pages::page::{Page, PageNo, PageReadError};
use yew::prelude::*;

use super::commit::TraceLanes;
use super::controls::{Controls, Shown};
use super::{ChapterProps, Source};
use crate::benches::models::describe_page_event;
use crate::benches::Bench;
use crate::charts::{Bar, BarChart};
use crate::player::Player;
use crate::state::LabAction;
use crate::url_state::{format_millis, PageProtection};

fn page_cell(page: Option<&Result<Page, PageReadError>>) -> Html {
    match page {
        Some(Ok(page)) => html! { <td>{ format!("pageLSN {}: {}", page.page_lsn, page.describe_entries()) }</td> },
        Some(Err(PageReadError::Checksum)) => html! { <td class="danger">{ "torn: checksum fails" }</td> },
        Some(Err(PageReadError::Malformed)) => html! { <td class="danger">{ "malformed" }</td> },
        None => html! { <td>{ "-" }</td> },
    }
}

fn pages_table(at_cut: &BTreeMap<PageNo, Result<Page, PageReadError>>, after: &BTreeMap<PageNo, Result<Page, PageReadError>>, expected: &BTreeMap<PageNo, Page>) -> Html {
    let rows = expected.keys().map(|page_no| {
        let want = expected.get(page_no).map(|page| format!("pageLSN {}: {}", page.page_lsn, page.describe_entries())).unwrap_or_default();
        let good = after.get(page_no).and_then(|page| page.as_ref().ok()) == expected.get(page_no);
        html! {
            <tr data-page={page_no.0.to_string()} data-recovered={good.to_string()}>
                <td>{ format!("P{}", page_no.0) }</td>
                { page_cell(at_cut.get(page_no)) }
                { page_cell(after.get(page_no)) }
                <td>{ want }</td>
                <td class={classes!(if good { "ok" } else { "danger" })}>{ if good { "yes" } else { "NO" } }</td>
            </tr>
        }
    });
    html! {
        <table class="pages">
            <thead><tr><th>{ "page" }</th><th>{ "on disk at the power cut" }</th><th>{ "after recovery" }</th><th>{ "before the cut, in memory" }</th><th>{ "recovered?" }</th></tr></thead>
            <tbody>{ for rows }</tbody>
        </table>
    }
}

#[component]
pub fn PagesChapter(props: &ChapterProps) -> Html {
    let Bench::Redo(bench) = &*props.bench.0 else { return Html::default() };
    let on_player = props.on_action.reform(LabAction::Player);
    let on_protection = props.on_action.reform(|event: Event| {
        let select: web_sys::HtmlSelectElement = event.target_unchecked_into();
        LabAction::SetProtection(PageProtection::from_url_name(&select.value()).unwrap_or(PageProtection::FullPageImages))
    });
    let done = bench.events_done(props.player.now);
    let events = bench.events.iter().enumerate().map(|(index, event)| {
        let class = classes!("page-event", if index < done { "done" } else { "todo" }, (index == bench.recovery_from).then_some("recovery-start"));
        html! { <li {class}>{ describe_page_event(event) }</li> }
    });
    let result = match &bench.branch {
        Ok(branch) => {
            let all = branch.recovered_everything();
            html! {
                <>
                { pages_table(&branch.pages_at_cut, &branch.pages_after, &branch.crash.expected) }
                <p class={classes!("verdict-line", if all { "ok" } else { "danger" })} data-recovered-everything={all.to_string()}>
                    { if all { "Recovery rebuilt both pages exactly as they were before the power cut." }
                      else { "Recovery could not rebuild the torn page: the log since the redo point does not hold all of it." } }
                </p>
                </>
            }
        }
        Err(error) => html! { <p class="error">{ format!("the page engine refused the run: {error}") }</p> },
    };
    html! {
        <>
        <div class="prose">
            <p>{ "PostgreSQL, InnoDB and SQLite keep data in fixed-size pages (8 KB in PostgreSQL, 16 KB in InnoDB) and \
                  change them in place. They log first too, and add one rule: a dirty page may be written back only \
                  once the log is durable up to that page's last change. A commit waits for its log record, never for its \
                  pages (no-force), and a page may be written before its transaction commits (steal): ARIES-style \
                  recovery. " }<Source name="PostgreSQL: WAL introduction" href="https://www.postgresql.org/docs/current/wal-intro.html" /></p>
            <p>{ "Each page stores the LSN of the last record applied to it, its pageLSN. REDO applies a record only when \
                  the record's LSN is above the page's, so replaying twice changes nothing. A checkpoint writes dirty pages \
                  back and records a redo point, where the next recovery starts." }</p>
            <p>{ "A page spans many sectors, so a power cut during its write-back can tear it, and a small log record \
                  cannot repair half a page. PostgreSQL logs a full-page image with the first change to each page after a \
                  checkpoint; InnoDB writes every page first to a doublewrite buffer and syncs it before writing the page \
                  in place. " }
               <Source name="PostgreSQL: full_page_writes" href="https://www.postgresql.org/docs/current/runtime-config-wal.html#GUC-FULL-PAGE-WRITES" />
               <Source name="MySQL: doublewrite buffer" href="https://dev.mysql.com/doc/refman/8.4/en/innodb-doublewrite-buffer.html" /></p>
            <p>{ "Below: writes 1 to 8 on two pages (P1 holds the order: keys, P2 the user: keys), a checkpoint after write 4, \
                  P2 written back after write 6, and P1's write-back after write 8 torn by a power cut. Step through the run \
                  and then recovery." }</p>
        </div>
        <div class="controls">
            <label>{ "torn-page protection " }<select class="protection" onchange={on_protection}>
                { for PageProtection::ALL.iter().map(|protection| html! {
                    <option value={protection.url_name()} selected={*protection == props.params.protection}>{ protection.label() }</option>
                }) }
            </select></label>
        </div>
        <Player state={props.player.clone()} on_action={on_player} mark_name="step" />
        <ol class="page-events" data-done={done.to_string()}>{ for events }</ol>
        { result }
        </>
    }
}

#[component]
pub fn ReplicationChapter(props: &ChapterProps) -> Html {
    let Bench::Quorum(bench) = &*props.bench.0 else { return Html::default() };
    let on_player = props.on_action.reform(LabAction::Player);
    let on_w = props.on_action.reform(|event: Event| {
        let select: web_sys::HtmlSelectElement = event.target_unchecked_into();
        LabAction::SetQuorum(select.value().parse::<u8>().unwrap_or(2))
    });
    let legs: Vec<String> = bench.setup.legs.iter().map(|leg| format!("{} ms", format_millis(*leg))).collect();
    let lanes = match &bench.spans {
        Some(spans) => html! { <TraceLanes spans={Rc::new(spans.clone())} now={props.player.now} /> },
        None => match &bench.branch {
            Err(error) => html! { <p class="error">{ format!("the quorum model refused the run: {error}") }</p> },
            Ok(_) => Html::default(),
        },
    };
    let budget = bench.write_23.as_ref().map(|budget| html! {
        <table class="summary write-23" data-total-ns={budget.total.0.to_string()} data-naive-ns={budget.naive_sum.0.to_string()}>
            <tr><th>{ "write 23 arrives" }</th><td class="num">{ format!("{} ms", format_millis(budget.arrival)) }</td></tr>
            <tr><th>{ "waits for the batch in flight" }</th><td class="num">{ format!("{} ms", format_millis(budget.waited_for_batch_in_flight)) }</td></tr>
            <tr><th>{ "its own batch (the quorum's slowest needed leg)" }</th><td class="num">{ format!("{} ms", format_millis(budget.own_batch)) }</td></tr>
            <tr><th>{ "its real wait" }</th><td class="num"><strong>{ format!("{} ms", format_millis(budget.total)) }</strong></td></tr>
            <tr><th>{ "the naive sum of every leg" }</th><td class="num">{ format!("{} ms", format_millis(budget.naive_sum)) }</td></tr>
        </table>
    });
    let survival = bench.survival.iter().map(|row| html! {
        <tr>
            <td>{ row.policy }</td>
            <td class="num">{ format!("{} ms", format_millis(row.commit_latency)) }</td>
            { for row.survives.iter().map(|(_, survives)| html! { <td class={classes!(if *survives { "ok" } else { "danger" })}>{ if *survives { "survives" } else { "can lose it" } }</td> }) }
        </tr>
    });
    let failure_heads = walab_core::quorum::Failure::ALL.iter().map(|failure| html! { <th>{ failure.label() }</th> });
    html! {
        <>
        <div class="prose">
            <p>{ "Everything so far survives a power loss on one machine. A dead volume, a lost instance or a zone outage \
                  still takes the only copy; the next rung is copies on other machines. The leader appends the record to its \
                  own log and sends it to the followers at the same time; it commits once W of the N replicas, itself \
                  included, have it." }</p>
            <p>{ "Because the legs run in parallel, a commit costs the slowest leg it must wait for, not the sum: the larger \
                  of the local sync and the (W−1)-th fastest follower. Raft-style logs work this way. PostgreSQL's \
                  synchronous replication ships WAL only after flushing it locally, so a synchronous commit costs the local \
                  flush plus the standby's round trip. " }
               <Source name="Ongaro and Ousterhout, Raft (ATC '14)" href="https://raft.github.io/raft.pdf" />
               <Source name="PostgreSQL: synchronous replication" href="https://www.postgresql.org/docs/current/warm-standby.html#SYNCHRONOUS-REPLICATION" /></p>
            <p>{ format!("Branch R: the tiny store forks after write 20 onto three replicas, A leading in zone a with legs {}. \
                One batch is in flight at a time.", legs.join(", ")) }</p>
        </div>
        <div class="controls">
            <label>{ "commit at W = " }<select class="quorum-w" onchange={on_w}>
                { for (1..=3u8).map(|w| html! { <option value={w.to_string()} selected={w == props.params.quorum_w}>{ format!("{w} of 3") }</option> }) }
            </select></label>
        </div>
        <Player state={props.player.clone()} on_action={on_player} />
        { lanes }
        { budget.unwrap_or_default() }
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

fn fit_text(fit: Fit, unit: &str) -> String {
    match fit {
        Fit::Included => "within the volume's baseline".to_string(),
        Fit::Provision { to } => format!("provision up to {to} {unit}"),
        Fit::BeyondMax { max } => format!("beyond one volume's maximum of {max} {unit}"),
    }
}

/// Part 11's budget calculator: the log's and the LSM tree's I/O against gp3's limits.
#[component]
pub fn BudgetCalculator(props: &ChapterProps) -> Html {
    let Bench::Budget(bench) = &*props.bench.0 else { return Html::default() };
    let shown = Shown { load: true, sync: true, ..Shown::default() };
    let budget = match &bench.budget {
        Ok(budget) => budget,
        Err(error) => return html! { <p class="error">{ format!("the budget model refused: {error}") }</p> },
    };
    let mib = |bytes: u64| bytes as f64 / (1u64 << 20) as f64;
    let iops_bars = Rc::new(vec![
        Bar { label: "log syncs".into(), value: budget.log_iops as f64, color: (31, 95, 191) },
        Bar { label: "flushes + compaction".into(), value: budget.lsm_iops as f64, color: (111, 155, 224) },
        Bar { label: "one shared volume".into(), value: budget.shared.iops as f64, color: (29, 35, 43) },
    ]);
    let throughput_bars = Rc::new(vec![
        Bar { label: "log (worst)".into(), value: mib(budget.log_bytes_per_s_max), color: (31, 95, 191) },
        Bar { label: "flushes + compaction".into(), value: mib(budget.input.lsm_bytes_per_s), color: (111, 155, 224) },
        Bar { label: "one shared volume".into(), value: mib(budget.shared.bytes_per_s), color: (29, 35, 43) },
    ]);
    html! {
        <div class="budget" data-shared-iops={budget.shared.iops.to_string()}>
            <h3>{ "The budget calculator" }</h3>
            <div class="prose"><p>{ "Each sync of a group-commit batch is one I/O (EBS counts an SSD I/O of up to 256 KiB as one) and \
                writes the whole 4 KiB pages the batch touches. The LSM tree's flushes and compaction add 200 MB/s (an input from the \
                LSM page). The core's budget model computes the rest from a group-commit run at your load and sync latency. " }
                <Source name="AWS: EBS I/O characteristics" href="https://docs.aws.amazon.com/ebs/latest/userguide/ebs-io-characteristics.html" /></p></div>
            <Controls params={props.params.clone()} shown={shown} on_action={props.on_action.clone()} />
            <div class="charts">
                <BarChart title="IOPS" y_label="I/Os per second" bars={iops_bars}
                    limit={Some((budget.limits.iops_included as f64, AttrValue::from(format!("{} baseline: {} IOPS", budget.limits.name, budget.limits.iops_included))))} />
                <BarChart title="throughput" y_label="MiB/s" bars={throughput_bars}
                    limit={Some((budget.limits.mib_per_s_included as f64, AttrValue::from(format!("{} baseline: {} MiB/s", budget.limits.name, budget.limits.mib_per_s_included))))} />
            </div>
            <table class="summary">
                <tr><th>{ "writes per sync / syncs per second" }</th><td class="num">{ format!("{:.1} / {}", budget.writes_per_batch_mean, budget.syncs_per_s) }</td></tr>
                <tr><th>{ "pages per sync (fewest-most)" }</th><td class="num">{ format!("{}-{}", budget.pages_per_sync_min, budget.pages_per_sync_max) }</td></tr>
                <tr><th>{ "bare records / log as written" }</th><td class="num">{ format!("{:.1} MB/s / {:.1}-{:.1} MB/s", budget.record_bytes_per_s as f64 / 1e6, budget.log_bytes_per_s_min as f64 / 1e6, budget.log_bytes_per_s_max as f64 / 1e6) }</td></tr>
                <tr><th>{ "one shared volume: IOPS" }</th><td>{ format!("{}: {}", budget.shared.iops, fit_text(budget.shared.iops_fit, "IOPS")) }</td></tr>
                <tr><th>{ "one shared volume: throughput" }</th><td>{ format!("{:.0} MiB/s: {}", mib(budget.shared.bytes_per_s), fit_text(budget.shared.throughput_fit, "MiB/s")) }</td></tr>
                <tr><th>{ "the log on its own volume" }</th><td>{ format!("{} IOPS, {:.1} MiB/s: {}", budget.log_alone.iops, mib(budget.log_alone.bytes_per_s), fit_text(budget.log_alone.throughput_fit, "MiB/s")) }</td></tr>
            </table>
        </div>
    }
}
