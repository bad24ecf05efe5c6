//! Part 11's model: the AWS budget calculator (Parts 9 and 10 are `pages` and `replication`).

use std::rc::Rc;

use walab_core::budget::{Budget, Fit};
use yew::prelude::*;

use super::controls::{controls, Shown};
use super::{ChapterProps, source};
use crate::model::Model;
use crate::charts::{bar_chart, Bar, BarChartProps};
use crate::format::group_thousands;

fn fit_text(fit: Fit, unit: &str) -> String {
    match fit {
        Fit::Included => "within the volume's baseline".to_string(),
        Fit::Provision { to } => format!("provision up to {to} {unit}"),
        Fit::BeyondMax { max } => format!("beyond one volume's maximum of {max} {unit}"),
    }
}

/// The page's conclusion in one paragraph, from the budget the core computed: the IOPS
/// fit, the throughput (log pages plus flushes and compaction) against the baseline.
fn verdict(budget: &Budget, load: u64) -> Html {
    let limits = &budget.limits;
    let needed_mib = budget.shared.bytes_per_s as f64 / (1u64 << 20) as f64;
    let above = |need: f64, have: u64| if need > have as f64 { "above" } else { "within" };
    let lsm_about = (budget.lsm_iops + 5) / 10 * 10;
    let words = format!(
        "At {} writes a second: {} log syncs a second (one I/O each) plus about {} I/Os of flushes and compaction ({} ÷ 256 KiB) \
         make {} IOPS, {} {}'s {} IOPS baseline. The bytes are the limit: {:.0}-{:.0} MB/s of log pages plus {:.0} MB/s of \
         flushes and compaction is {} MiB/s, {} {}'s {} MiB/s baseline{}",
        group_thousands(load),
        group_thousands(budget.log_iops),
        group_thousands(lsm_about),
        format!("{:.0} MB/s", budget.input.lsm_bytes_per_s as f64 / 1e6),
        group_thousands(budget.shared.iops),
        above(budget.shared.iops as f64, limits.iops_included),
        limits.name,
        group_thousands(limits.iops_included),
        budget.log_bytes_per_s_min as f64 / 1e6,
        budget.log_bytes_per_s_max as f64 / 1e6,
        budget.input.lsm_bytes_per_s as f64 / 1e6,
        needed_mib.ceil(),
        above(needed_mib, limits.mib_per_s_included),
        limits.name,
        limits.mib_per_s_included,
        if needed_mib > limits.mib_per_s_included as f64 { ": provision more throughput, or give the log a volume of its own." } else { "." },
    );
    html! {
        <p class="verdict" data-needed-mib={needed_mib.to_string()} data-baseline-mib={limits.mib_per_s_included.to_string()}
            data-lsm-iops={budget.lsm_iops.to_string()}><strong>{ words }</strong></p>
    }
}

/// Part 11's budget calculator: the log's and the LSM tree's I/O against gp3's limits.
#[component]
pub fn BudgetCalculator(props: &ChapterProps) -> Html {
    let Model::Budget(model) = &*props.model.0 else { return Html::default() };
    // The load is dragged on the figure (its dial); the sync latency is chosen above it.
    let shown = Shown { sync: true, ..Shown::default() };
    let budget = match &model.budget {
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
                { source("AWS: EBS I/O characteristics", "https://docs.aws.amazon.com/ebs/latest/userguide/ebs-io-characteristics.html") }</p></div>
            { controls(&props.params, shown, None, &props.on_action) }
            <div class="charts budget-figure" data-figure="budget">
                { super::controls::load_dial(props.params.load_per_second, &props.on_action, &format!(
                    "{} log syncs a second, {} IOPS against {}'s {}, {:.0} MiB/s against its {} MiB/s",
                    group_thousands(budget.syncs_per_s), group_thousands(budget.shared.iops), budget.limits.name,
                    group_thousands(budget.limits.iops_included), mib(budget.shared.bytes_per_s), budget.limits.mib_per_s_included)) }
                { bar_chart(&BarChartProps { title: "IOPS".into(), y_label: "I/Os per second".into(), bars: iops_bars, limit: Some((budget.limits.iops_included as f64, AttrValue::from(format!("{} baseline: {} IOPS", budget.limits.name, group_thousands(budget.limits.iops_included))))), ..BarChartProps::default() }) }
                { bar_chart(&BarChartProps { title: "throughput".into(), y_label: "MiB/s".into(), bars: throughput_bars, limit: Some((budget.limits.mib_per_s_included as f64, AttrValue::from(format!("{} baseline: {} MiB/s", budget.limits.name, budget.limits.mib_per_s_included)))), ..BarChartProps::default() }) }
            </div>
            { verdict(budget, props.params.load_per_second) }
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
