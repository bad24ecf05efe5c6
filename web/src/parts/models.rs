//! Part 11's model: the AWS budget calculator (Parts 9 and 10 are `pages` and `replication`).

use std::rc::Rc;

use walab_core::budget::{Budget, Fit, MIB};
use yew::prelude::*;

use super::controls::{controls, Shown};
use super::ChapterProps;
use crate::model::Model;
use crate::model::recap::{mib_up, BudgetWords};
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
/// fit, the throughput (log pages plus flushes and compaction) against the baseline, in
/// the words Part 12's card uses too.
fn verdict(budget: &Budget, words: &BudgetWords, load: u64) -> Html {
    let limits = &budget.limits;
    let over = budget.shared.throughput_fit != Fit::Included;
    // The answer to the question the Part opens with: which runs out first.
    let answer = match (budget.shared.iops_fit != Fit::Included, over) {
        (false, true) => "The bytes run out first. ",
        (true, false) => "The I/Os run out first. ",
        (true, true) => "Both run out. ",
        (false, false) => "Neither runs out. ",
    };
    let text = format!(
        "{answer}At {} writes a second: {} log syncs a second (one I/O each) plus {} I/Os of flushes and compaction ({} MiB/s ÷ 256 KiB) \
         make {} IOPS, {} {}'s {} IOPS baseline. {}{} MiB/s of log pages plus {} MiB/s of flushes and compaction is {} MiB/s, \
         {} {}'s {} MiB/s baseline{}",
        group_thousands(load), words.log_iops, words.lsm_iops, words.lsm_mib, words.iops, words.above_iops, limits.name, words.iops_baseline,
        if over { "The bytes are the limit: " } else { "The bytes: " },
        words.log_mib, words.lsm_mib, words.needed_mib, words.above_mib, limits.name, limits.mib_per_s_included,
        if over { ": provision more throughput, or give the log a volume of its own." } else { ": one volume carries both." },
    );
    html! {
        <p class="verdict" data-needed-mib={(budget.shared.bytes_per_s as f64 / MIB as f64).to_string()} data-baseline-mib={limits.mib_per_s_included.to_string()}
            data-lsm-iops={budget.lsm_iops.to_string()}><strong>{ text }</strong></p>
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
    // The bars carry the numbers the words say (MiB/s rounded up).
    let mib = |bytes: u64| mib_up(bytes).replace(',', "").parse::<f64>().unwrap_or(0.0);
    let words = BudgetWords::of(budget);
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
            { super::markup("<div class=\"prose\"><p>Put Part 5's log and the LSM tree it protects on one EBS gp3 volume, whose baseline is 3,000 I/Os and 125 MiB a second. Drag the load on the figure: which runs out first, the I/Os or the bytes?</p></div><details class=\"more\"><summary>How the budget is counted</summary><div class=\"prose\"><p>Each sync of a group-commit batch is one I/O (EBS counts an SSD I/O of up to 256 KiB as one) and \
                writes the whole 4 KiB pages the batch touches. The LSM tree's flushes and compaction add 2,000 bytes a write \
                (200 MB/s at 100,000 writes a second), so they grow with the load. The rest comes from a group-commit run at your \
                load and sync latency, in MiB/s rounded up. \
                <a class=\"source\" href=\"https://docs.aws.amazon.com/ebs/latest/userguide/ebs-io-characteristics.html\" target=\"_blank\" rel=\"noopener\">[AWS: EBS I/O characteristics]</a></p></div></details>") }
            { controls(&props.params, shown, None, &props.on_action) }
            <div class="charts budget-figure" data-figure="budget">
                { super::controls::load_dial(props.params.load_per_second, &props.on_action, &format!(
                    "{} log syncs a second, {} IOPS against {}'s {}, {} MiB/s against its {} MiB/s",
                    group_thousands(budget.syncs_per_s), words.iops, budget.limits.name,
                    words.iops_baseline, words.needed_mib, budget.limits.mib_per_s_included)) }
                { bar_chart(&BarChartProps { title: "IOPS".into(), y_label: "I/Os per second".into(), bars: iops_bars, limit: Some((budget.limits.iops_included as f64, AttrValue::from(format!("{} baseline: {} IOPS", budget.limits.name, group_thousands(budget.limits.iops_included))))), ..BarChartProps::default() }) }
                { bar_chart(&BarChartProps { title: "throughput".into(), y_label: "MiB/s".into(), bars: throughput_bars, limit: Some((budget.limits.mib_per_s_included as f64, AttrValue::from(format!("{} baseline: {} MiB/s", budget.limits.name, budget.limits.mib_per_s_included)))), ..BarChartProps::default() }) }
            </div>
            { verdict(budget, &words, props.params.load_per_second) }
            { super::markup_owned(format!("<table class=\"summary\"><tr><th>writes per sync / syncs per second</th><td class=\"num\">{:.1} / {}</td></tr>\
                <tr><th>pages per sync (fewest-most)</th><td class=\"num\">{}</td></tr><tr><th>bare records / log as written</th><td class=\"num\">{} MiB/s / {} MiB/s</td></tr>\
                <tr><th>the log on its own volume</th><td>{} IOPS, {} MiB/s: {}</td></tr></table>",
                budget.writes_per_batch_mean, group_thousands(budget.syncs_per_s),
                if budget.pages_per_sync_min == budget.pages_per_sync_max { budget.pages_per_sync_max.to_string() } else { format!("{}-{}", budget.pages_per_sync_min, budget.pages_per_sync_max) },
                mib_up(budget.record_bytes_per_s), words.log_mib,
                group_thousands(budget.log_alone.iops), mib_up(budget.log_alone.bytes_per_s), fit_text(budget.log_alone.throughput_fit, "MiB/s"))) }
        </div>
    }
}
