//! The instructor's power button, and the Parts built on the tiny store's device runs:
//! Part 3 (failed syncs), Part 6 (durability modes), Part 7 (torn writes and the
//! recovery scan), Part 8 (segments and their two gates).

use std::rc::Rc;

use walab_core::scan::ScanCheck;
use walab_core::time::Nanos;
use walab_core::tiny_store::{self, UNIT_BYTES};
use walab_core::sim::tiny::SEGMENT_BYTES;
use yew::prelude::*;

use super::commit::TraceLanes;
use super::controls::{Controls, Shown};
use super::failed_sync::failed_sync_text;
use super::{ChapterProps, Source};
use crate::benches::tiny::{cli_policy, describe_check, CutOutcome, TinyBench};
use crate::benches::Bench;
use crate::player::{format_fixed_millis, Player};
use crate::state::LabAction;
use crate::url_state::{format_millis, Fault, Handling, UNIT_BYTES_ALLOWED};

fn ids(list: &[u64]) -> String {
    list.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
}

/// Runs of consecutive ids: "1-13, 17".
fn id_ranges(list: &[u64]) -> String {
    if list.is_empty() {
        return "none".into();
    }
    let mut parts = Vec::new();
    let mut start = list[0];
    let mut previous = list[0];
    for id in list[1..].iter().copied().chain(std::iter::once(u64::MAX)) {
        if id != previous + 1 {
            parts.push(if start == previous { format!("{start}") } else { format!("{start}-{previous}") });
            start = id;
        }
        previous = id;
    }
    format!("{} ({})", parts.join(", "), list.len())
}

#[derive(Properties, PartialEq)]
struct CutControlsProps {
    cut: Option<Nanos>,
    seed: u64,
    unit_bytes: u32,
    on_action: Callback<LabAction>,
}

/// The power button: at the playhead, at a typed millisecond, or cleared; the seed and
/// the device's atomic unit decide what the cut tears.
#[component]
fn CutControls(props: &CutControlsProps) -> Html {
    let on_now = props.on_action.reform(|_: MouseEvent| LabAction::CutAtPlayhead);
    let on_clear = props.on_action.reform(|_: MouseEvent| LabAction::SetCut(None));
    let on_typed = {
        let on_action = props.on_action.clone();
        Callback::from(move |event: Event| {
            let input: web_sys::HtmlInputElement = event.target_unchecked_into();
            if let Some(at) = Nanos::parse_millis(&input.value()) {
                on_action.emit(LabAction::SetCut(Some(at)));
            }
        })
    };
    let on_seed = {
        let on_action = props.on_action.clone();
        Callback::from(move |event: Event| {
            let input: web_sys::HtmlInputElement = event.target_unchecked_into();
            if let Ok(seed) = input.value().trim().parse::<u64>() {
                on_action.emit(LabAction::SetSeed(seed));
            }
        })
    };
    let on_unit = props.on_action.reform(|event: Event| {
        let select: web_sys::HtmlSelectElement = event.target_unchecked_into();
        LabAction::SetUnitBytes(select.value().parse::<u32>().ok().filter(|unit| UNIT_BYTES_ALLOWED.contains(unit)).unwrap_or(UNIT_BYTES as u32))
    });
    html! {
        <div class="cut-controls">
            <button class="power-button" onclick={on_now}>{ "pull the power at the playhead (p)" }</button>
            <label>{ "or at " }<input class="cut-ms" type="text" inputmode="decimal" size="6"
                value={props.cut.map(format_millis).unwrap_or_default()} placeholder="13.5" onchange={on_typed} />{ " ms" }</label>
            <label title="chooses which units of the running syncs reached the media">{ "seed " }
                <input class="seed" type="number" min="0" value={props.seed.to_string()} onchange={on_seed} /></label>
            <label title="the device's atomic unit: each unit reaches the media whole or not at all">{ "atomic unit " }
                <select class="unit" onchange={on_unit}>
                    { for UNIT_BYTES_ALLOWED.iter().map(|unit| html! {
                        <option value={unit.to_string()} selected={*unit == props.unit_bytes}>{ unit_label(*unit) }</option>
                    }) }
                </select></label>
            if props.cut.is_some() { <button class="restore" onclick={on_clear}>{ "restore power" }</button> }
        </div>
    }
}

#[derive(Properties, PartialEq)]
struct ReportProps {
    bench: crate::benches::BenchRef,
    policy_cli: AttrValue,
    seed: u64,
    unit_bytes: u32,
}

/// "32 bytes (the tiny store)", "512 bytes (a sector)", "4096 bytes (a 4 KiB page)".
fn unit_label(unit: u32) -> String {
    match unit {
        32 => "32 bytes (the tiny store)".into(),
        512 => "512 bytes (a sector)".into(),
        4096 => "4096 bytes (4 KiB)".into(),
        other => format!("{other} bytes"),
    }
}

/// What was acknowledged, what survived: first a prediction, then the run's answer.
#[component]
fn PowerCutReport(props: &ReportProps) -> Html {
    let revealed = use_state(|| false);
    let guess = use_state(String::new);
    let Bench::Tiny(bench) = &*props.bench.0 else { return Html::default() };
    let Some(cut) = &bench.cut else { return Html::default() };
    let outcome = match cut {
        Ok(outcome) => outcome,
        Err(error) => return html! { <p class="error">{ format!("the simulator refused the run: {error}") }</p> },
    };
    let crash = &outcome.crash;
    let stop = &crash.recovery.stop;
    let unit_flag = if props.unit_bytes as usize == UNIT_BYTES { String::new() } else { format!(" --unit-bytes {}", props.unit_bytes) };
    let cli = format!(
        "walab sim power-cut --at-ms {} --policy {} --seed {}{unit_flag} --json",
        format_millis(outcome.at),
        props.policy_cli,
        props.seed
    );
    let on_reveal = {
        let revealed = revealed.clone();
        Callback::from(move |_: MouseEvent| revealed.set(true))
    };
    let on_guess = {
        let guess = guess.clone();
        Callback::from(move |event: InputEvent| {
            let input: web_sys::HtmlInputElement = event.target_unchecked_into();
            guess.set(input.value());
        })
    };
    let acknowledged = crash.acknowledged.len();
    html! {
        <div class="power report" data-cut-ns={outcome.at.0.to_string()}>
            <p class="headline">{ format!("The power failed at {} ms. {} writes had been acknowledged.", format_millis(outcome.at), acknowledged) }</p>
            if !*revealed {
                <div class="predict">
                    <label>{ format!("Predict: how many of the {acknowledged} acknowledged writes will recovery find? ") }
                        <input class="guess" type="number" min="0" max="24" value={(*guess).clone()} oninput={on_guess} /></label>
                    <button class="reveal primary" onclick={on_reveal}>{ "reveal" }</button>
                </div>
            } else {
                <div class="revealed" data-acknowledged={ids(&crash.acknowledged)} data-survived={ids(&crash.survived)}
                    data-lost={ids(&crash.lost_acknowledged)} data-recovered={ids(&crash.recovery.recovered)}
                    data-stop-reason={stop.reason.name()} data-stop-segment={stop.segment.clone().unwrap_or_default()}
                    data-stop-offset={stop.offset.to_string()}>
                    if let Ok(guessed) = guess.parse::<usize>() {
                        <p class="verdict">{ if guessed == crash.survived.len() { "Your prediction was right.".to_string() } else { format!("You predicted {guessed}; the run says {}.", crash.survived.len()) } }</p>
                    }
                    <table class="summary">
                        <tr><th>{ "acknowledged before the cut" }</th><td>{ id_ranges(&crash.acknowledged) }</td></tr>
                        <tr><th>{ "survived" }</th><td>{ id_ranges(&crash.survived) }</td></tr>
                        <tr><th>{ "acknowledged and lost" }</th><td class={classes!((!crash.lost_acknowledged.is_empty()).then_some("danger"))}>{ id_ranges(&crash.lost_acknowledged) }</td></tr>
                        <tr><th>{ "recovered (acknowledged or not)" }</th><td>{ id_ranges(&crash.recovery.recovered) }</td></tr>
                        <tr><th>{ "the log scan stopped" }</th><td>{ format!("{} at {}:{}", stop.reason.name(), stop.segment.clone().unwrap_or_else(|| "-".into()), stop.offset) }</td></tr>
                        <tr><th>{ "in-flight units that reached the media" }</th><td>{
                            if crash.kept_units.is_empty() { "none".to_string() } else {
                                crash.kept_units.iter().map(|(file, unit)| format!("{file} unit {unit}")).collect::<Vec<_>>().join(", ") } }</td></tr>
                    </table>
                    <p class="note">{ "The same run on the command line: " }<code class="cli">{ cli }</code></p>
                </div>
            }
        </div>
    }
}

fn tiny_bench(props: &ChapterProps) -> Option<&TinyBench> {
    match &*props.bench.0 {
        Bench::Tiny(bench) => Some(bench),
        _ => None,
    }
}

fn lanes(bench: &TinyBench, props: &ChapterProps) -> Html {
    match bench.spans() {
        Some(spans) => html! { <TraceLanes spans={Rc::new(spans.clone())} now={props.player.now.min(bench.cut_at().unwrap_or(Nanos::MAX))} cut={props.params.cut} /> },
        None => html! { <p class="error">{ "the simulator refused the run" }</p> },
    }
}

impl TinyBench {
    fn cut_at(&self) -> Option<Nanos> {
        self.cut.as_ref().and_then(|cut| cut.as_ref().ok()).map(|outcome| outcome.at)
    }
}

fn power_section(props: &ChapterProps) -> Html {
    html! {
        <>
        <CutControls cut={props.params.cut} seed={props.params.seed} unit_bytes={props.params.unit_bytes} on_action={props.on_action.clone()} />
        <PowerCutReport key={format!("{:?}-{}-{:?}-{}", props.params.cut, props.params.seed, props.params.policy, props.params.unit_bytes)}
            bench={props.bench.clone()} policy_cli={cli_policy(props.params.policy)} seed={props.params.seed} unit_bytes={props.params.unit_bytes} />
        </>
    }
}

#[component]
pub fn ModesChapter(props: &ChapterProps) -> Html {
    let Some(bench) = tiny_bench(props) else { return Html::default() };
    let on_player = props.on_action.reform(LabAction::Player);
    let shown = Shown { policy: true, sync: true, ..Shown::default() };
    let modes = bench.modes.iter().map(|(policy, mode)| match mode {
        Ok(mode) => html! {
            <tr data-policy={policy.url_name()} data-acknowledged={mode.acknowledged.len().to_string()} data-lost={mode.lost_acknowledged.len().to_string()}>
                <td>{ policy.label() }</td>
                <td class="num">{ mode.acknowledged.len() }</td>
                <td class={classes!("num", (!mode.lost_acknowledged.is_empty()).then_some("danger"))}>{ mode.lost_acknowledged.len() }</td>
                <td>{ id_ranges(&mode.lost_acknowledged) }</td>
            </tr>
        },
        Err(error) => html! { <tr><td>{ policy.label() }</td><td colspan="3" class="error">{ error.clone() }</td></tr> },
    });
    let at = props.params.cut.unwrap_or(tiny_store::POWER_CUT);
    html! {
        <>
        <div class="prose">
            <p>{ "Not every write deserves a sync before its OK: a second of metrics can be lost, a payment cannot. Every \
                  engine lets you choose, and the classic mistake is to choose without saying what the choice can lose." }</p>
        </div>
        <h3>{ "The ladder, and what engines call each rung" }</h3>
        <table class="ladder">
            <thead><tr><th>{ "OK is sent when" }</th><th>{ "a power loss can lose" }</th><th>{ "engines' settings" }</th></tr></thead>
            <tbody>
                <tr><td>{ "the record is in the page cache (no sync)" }</td><td>{ "everything the kernel has not yet written back" }</td>
                    <td>{ "RocksDB WriteOptions.sync = false (its default); Redis appendfsync no " }
                        <Source name="RocksDB options.h" href="https://github.com/facebook/rocksdb/blob/main/include/rocksdb/options.h" />
                        <Source name="Redis persistence" href="https://redis.io/docs/latest/operate/oss_and_stack/management/persistence/" /></td></tr>
                <tr><td>{ "the record is written; a background sync runs about every second" }</td><td>{ "about the last second" }</td>
                    <td>{ "InnoDB innodb_flush_log_at_trx_commit = 2 (or 0); PostgreSQL synchronous_commit = off (up to three wal_writer_delay); Redis appendfsync everysec; Cassandra commitlog_sync periodic " }
                        <Source name="MySQL: innodb_flush_log_at_trx_commit" href="https://dev.mysql.com/doc/refman/8.4/en/innodb-parameters.html#sysvar_innodb_flush_log_at_trx_commit" />
                        <Source name="PostgreSQL: synchronous_commit" href="https://www.postgresql.org/docs/current/runtime-config-wal.html#GUC-SYNCHRONOUS-COMMIT" />
                        <Source name="Cassandra: commitlog_sync" href="https://cassandra.apache.org/doc/latest/cassandra/managing/configuration/cass_yaml_file.html" /></td></tr>
                <tr><td>{ "the record's sync returned (per write or group commit)" }</td><td>{ "no acknowledged write" }</td>
                    <td>{ "InnoDB innodb_flush_log_at_trx_commit = 1 (default); PostgreSQL synchronous_commit = on (default); RocksDB sync = true; SQLite synchronous = FULL (in WAL mode NORMAL can lose the last commits on power loss) " }
                        <Source name="SQLite: PRAGMA synchronous" href="https://www.sqlite.org/pragma.html#pragma_synchronous" /></td></tr>
                <tr><td>{ "a quorum of replicas has the record" }</td><td>{ "no acknowledged write even if a machine is lost (Part 10)" }</td>
                    <td>{ "PostgreSQL synchronous_standby_names with synchronous_commit = on or remote_apply; Kafka acks = all with min.insync.replicas " }
                        <Source name="Kafka: producer acks" href="https://kafka.apache.org/documentation/#producerconfigs_acks" /></td></tr>
            </tbody>
        </table>
        <div class="prose"><p>{ "Losing writes is not the same as corrupting data. PostgreSQL's synchronous_commit = off can lose \
            the last few commits after a crash but always comes back consistent; fsync = off can leave pages and log out of step, \
            and its documentation warns of unrecoverable corruption. " }
            <Source name="PostgreSQL: fsync" href="https://www.postgresql.org/docs/current/runtime-config-wal.html#GUC-FSYNC" /></p></div>
        <h3>{ format!("One power cut, four modes: at {} ms", format_millis(at)) }</h3>
        <div class="prose"><p>{ "The same 24 arrivals under each mode, cut at the same instant. Flushed files are synced in every mode. \
            Each row is the core's run; for the modes with syncs in flight, the row shows the worst legal outcome of the units in flight." }</p></div>
        <table class="modes">
            <thead><tr><th>{ "mode" }</th><th class="num">{ "acknowledged" }</th><th class="num">{ "acknowledged and lost" }</th><th>{ "lost writes" }</th></tr></thead>
            <tbody>{ for modes }</tbody>
        </table>
        <h3>{ "Your own cut" }</h3>
        <Controls params={props.params.clone()} shown={shown} on_action={props.on_action.clone()} />
        <Player state={props.player.clone()} on_action={on_player} />
        { lanes(bench, props) }
        { power_section(props) }
        </>
    }
}

#[component]
pub fn TornChapter(props: &ChapterProps) -> Html {
    let Some(bench) = tiny_bench(props) else { return Html::default() };
    let on_player = props.on_action.reform(LabAction::Player);
    let outcome = bench.cut.as_ref().and_then(|cut| cut.as_ref().ok());
    let checks_done = bench.checks_done(props.player.now);
    let recovery_view = outcome.map(|outcome| {
        let segments = &outcome.crash.recovery.segments;
        let checks = &outcome.crash.recovery.scan.checks;
        let items = checks.iter().enumerate().map(|(index, check)| {
            let class = if index < checks_done { "done" } else { "todo" };
            let failed = matches!(check,
                ScanCheck::Checksum { ok: false, .. } | ScanCheck::PayloadPresent { ok: false, .. } | ScanCheck::LengthBound { ok: false, .. } | ScanCheck::Stop { .. });
            html! { <li class={classes!("check", class, (failed && index < checks_done).then_some("danger"))}>{ describe_check(check, segments) }</li> }
        });
        html! {
            <>
            <h3>{ "wal-6 on the media after the cut" }</h3>
            <UnitsView outcome={UnitsData::from(outcome)} />
            <h3>{ format!("Recovery: {} of {} checks", checks_done.min(checks.len()), checks.len()) }</h3>
            <div class="prose"><p>{ "Play on past the cut: the scan reads the segments that remain, oldest first, checking each \
                record's header, length and checksum, and stops at the first one that fails." }</p></div>
            <ol class="scan-checks" data-checks-done={checks_done.min(checks.len()).to_string()}>{ for items }</ol>
            </>
        }
    });
    let states = outcome.and_then(|outcome| outcome.all_states.as_ref()).map(|states| {
        let rows = states.iter().map(|state| html! {
            <tr>
                <td>{ if state.kept_units.is_empty() { "none".to_string() } else { state.kept_units.iter().map(|(file, unit)| format!("{file}:{unit}")).collect::<Vec<_>>().join(" ") } }</td>
                <td>{ id_ranges(&state.recovery.recovered) }</td>
                <td class={classes!((!state.lost_acknowledged.is_empty()).then_some("danger"))}>{ id_ranges(&state.lost_acknowledged) }</td>
                <td>{ format!("{} at {}:{}", state.recovery.stop.reason.name(), state.recovery.stop.segment.clone().unwrap_or_default(), state.recovery.stop.offset) }</td>
            </tr>
        });
        html! {
            <>
            <h3>{ "Every legal outcome of this cut" }</h3>
            <table class="states"><thead><tr><th>{ "in-flight units that landed" }</th><th>{ "recovered" }</th><th>{ "acknowledged and lost" }</th><th>{ "scan stop" }</th></tr></thead>
            <tbody>{ for rows }</tbody></table>
            </>
        }
    });
    let unit_bytes = props.params.unit_bytes as usize;
    let unit_text = if unit_bytes < SEGMENT_BYTES {
        format!("Cut the power while B14's sync is running (it runs from 13.0 to 14.0 ms) and change the seed to choose \
            which of its {unit_bytes}-byte units reached the media. In one outcome record 23 is whole and record 24 has its \
            header and a few payload bytes before zeros: its checksum fails and the scan stops there. In another the sync \
            completed just before the power went, and writes 23 and 24 survive although nobody was told OK: a timeout is \
            an unknown outcome.")
    } else {
        format!("With {unit_bytes}-byte units one unit covers all of wal-6's {SEGMENT_BYTES} bytes, so a cut during B14's \
            sync (13.0 to 14.0 ms) keeps all of it or none of it: writes 23 and 24 both survive or are both gone, and no \
            record is torn in half. The tiny store's records are a few dozen bytes, so only a unit smaller than a record's span \
            can tear one; on a real drive the same happens to a record that crosses a 512-byte or 4 KiB boundary. Choose \
            32 bytes to see the tear.")
    };
    html! {
        <>
        <div class="prose">
            <p>{ "A device persists data in atomic units (sectors): each unit is written whole or not at all, but a write \
                  of several units is not atomic. If the power fails during a sync, some units hold the new bytes and some \
                  the old, in any combination: a torn write. The tiny store uses 32-byte units so the effect shows in a few \
                  bytes; real devices use 512 bytes or 4 KiB (choose the unit next to the power button)." }</p>
            <p class="unit-text" data-unit-bytes={unit_bytes.to_string()}>{ unit_text }</p>
        </div>
        <Player state={props.player.clone()} on_action={on_player} mark_name="event or check" />
        { lanes(bench, props) }
        { power_section(props) }
        { recovery_view.unwrap_or_default() }
        { states.unwrap_or_default() }
        </>
    }
}

/// The bytes of wal-6 on the media, unit by unit.
#[derive(Clone, Debug, PartialEq)]
struct UnitsData {
    bytes: Option<Vec<u8>>,
    kept_units: Vec<u32>,
    /// The run's atomic unit.
    unit_bytes: usize,
}

impl UnitsData {
    fn from(outcome: &CutOutcome) -> UnitsData {
        UnitsData {
            bytes: outcome.segment_bytes("wal-6").map(<[u8]>::to_vec),
            kept_units: outcome.crash.kept_units.iter().filter(|(file, _)| file == "wal-6").map(|(_, unit)| *unit).collect(),
            unit_bytes: outcome.run.device.unit_bytes(),
        }
    }
}

#[derive(Properties, PartialEq)]
struct UnitsProps {
    outcome: UnitsData,
}

#[component]
fn UnitsView(props: &UnitsProps) -> Html {
    let Some(bytes) = &props.outcome.bytes else {
        return html! { <p class="note">{ "wal-6 did not exist at the cut." }</p> };
    };
    let unit_bytes = props.outcome.unit_bytes.max(1);
    let units = bytes.chunks(unit_bytes).enumerate().map(|(unit, chunk)| {
        let hex: Vec<String> = chunk.iter().map(|byte| format!("{byte:02x}")).collect();
        let zero = chunk.iter().all(|byte| *byte == 0);
        let landed = props.outcome.kept_units.contains(&(unit as u32));
        html! {
            <tr class={classes!("unit", zero.then_some("zero"), landed.then_some("landed"))} data-unit={unit.to_string()}>
                <td class="num">{ format!("unit {unit}") }</td>
                <td class="num">{ unit_range(unit, unit_bytes, chunk.len()) }</td>
                <td class="hex"><code>{ hex.join(" ") }</code></td>
                <td>{ if landed { "reached the media during the cut sync" } else if zero { "zeros" } else { "on the media" } }</td>
            </tr>
        }
    });
    html! { <table class="units" data-unit-bytes={unit_bytes.to_string()}>{ for units }</table> }
}

/// A unit's byte range, and how much of it the file holds when the file ends inside it:
/// "0-31", or "0-127 (of a 512-byte unit)".
fn unit_range(unit: usize, unit_bytes: usize, held: usize) -> String {
    let start = unit * unit_bytes;
    if held < unit_bytes {
        format!("{start}-{} (of a {unit_bytes}-byte unit)", start + held - 1)
    } else {
        format!("{start}-{}", start + unit_bytes - 1)
    }
}

#[component]
pub fn SegmentsChapter(props: &ChapterProps) -> Html {
    let Some(bench) = tiny_bench(props) else { return Html::default() };
    let on_player = props.on_action.reform(LabAction::Player);
    let gates = bench.gates_at(props.player.now);
    let rows = gates.iter().map(|gate| {
        let deletable = gate.flushed && gate.readers_done;
        let status = if !gate.exists && deletable { "deleted" } else if !gate.exists { "not created yet" } else if deletable { "may be deleted" } else { "kept" };
        html! {
            <tr class={classes!("segment", status.replace(' ', "-"))} data-segment={gate.segment.to_string()} data-status={status}>
                <td>{ format!("wal-{}", gate.segment) }</td>
                <td>{ format!("{}-{}", gate.segment * 4 - 3, gate.segment * 4) }</td>
                <td class={classes!(if gate.flushed { "ok" } else { "danger" })}>{ if gate.flushed { "passed" } else { "not yet" } }</td>
                <td class={classes!(if gate.readers_done { "ok" } else { "danger" })}>{ if gate.readers_done { "passed" } else { "pinned by the reader" } }</td>
                <td>{ status }</td>
            </tr>
        }
    });
    let kept = gates.iter().filter(|gate| gate.exists && !(gate.flushed && gate.readers_done)).count();
    let on_reader = props.on_action.reform(|event: Event| {
        let select: web_sys::HtmlSelectElement = event.target_unchecked_into();
        LabAction::SetCdc(select.value().parse::<u64>().ok())
    });
    let reader = props.params.cdc_confirmed_seq;
    html! {
        <>
        <div class="prose">
            <p>{ "A log grows forever unless something deletes it, so it is cut into segments, separate files that are \
                  deleted, recycled or archived whole. RocksDB and the tiny store start a segment at each MemTable switch; \
                  PostgreSQL at a fixed size (16 MB by default); Kafka at a size or an age. " }
               <Source name="PostgreSQL: WAL configuration" href="https://www.postgresql.org/docs/current/wal-configuration.html" /></p>
            <p>{ "A segment may go only when two gates are open: every record in it is durable somewhere else (a flushed \
                  file the durable manifest lists, or pages a checkpoint wrote), and every reader of the log (replicas, \
                  backup shippers, change-data-capture) has confirmed a position past its last record. PostgreSQL's \
                  replication slots keep WAL for their consumer for exactly this reason. " }
               <Source name="PostgreSQL: replication slots" href="https://www.postgresql.org/docs/current/warm-standby.html#STREAMING-REPLICATION-SLOTS" /></p>
        </div>
        <div class="controls">
            <label>{ "change-data-capture reader " }
                <select class="cdc" onchange={on_reader}>
                    <option value="none" selected={reader.is_none()}>{ "none" }</option>
                    { for [4u64, 10, 16, 20].iter().map(|seq| html! { <option value={seq.to_string()} selected={reader == Some(*seq)}>{ format!("stuck at seq {seq}") }</option> }) }
                </select>
            </label>
        </div>
        <Player state={props.player.clone()} on_action={on_player} />
        <table class="gates" data-kept={kept.to_string()}>
            <thead><tr><th>{ "segment" }</th><th>{ "writes" }</th><th>{ "gate 1: flushed" }</th><th>{ "gate 2: readers" }</th><th>{ format!("at t = {} ms", format_fixed_millis(props.player.now)) }</th></tr></thead>
            <tbody>{ for rows }</tbody>
        </table>
        <p class="verdict-line">{ format!("{kept} segment(s) must be kept at this instant.") }</p>
        { lanes(bench, props) }
        </>
    }
}

#[component]
pub fn FailedSyncBenchChapter(props: &ChapterProps) -> Html {
    let Some(bench) = tiny_bench(props) else { return Html::default() };
    let on_player = props.on_action.reform(LabAction::Player);
    let on_fault = props.on_action.reform(|event: Event| {
        let select: web_sys::HtmlSelectElement = event.target_unchecked_into();
        LabAction::SetFault(Fault::from_url_name(&select.value()).unwrap_or(Fault::None))
    });
    let on_handling = props.on_action.reform(|event: Event| {
        let select: web_sys::HtmlSelectElement = event.target_unchecked_into();
        LabAction::SetHandling(if select.value() == "wrong" { Handling::Wrong } else { Handling::Right })
    });
    let (acked, failed) = match &bench.full {
        Ok((run, _)) => (run.acknowledged(), run.failed()),
        Err(_) => (Vec::new(), Vec::new()),
    };
    let page_cache = bench.through_page_cache.as_ref().map(|recovered| html! {
        <p class="note page-cache">{ format!("A process that restarts without a reboot and reads the log through the page cache \
            would find {}.", id_ranges(recovered)) }</p>
    });
    html! {
        <>
        { failed_sync_text() }
        <h3>{ "The branches, on the simulated device" }</h3>
        <div class="controls">
            <label>{ "fault " }<select class="fault" onchange={on_fault}>
                { for Fault::ALL.iter().map(|fault| html! { <option value={fault.url_name()} selected={*fault == props.params.fault}>{ fault.label() }</option> }) }
            </select></label>
            if props.params.fault == Fault::LogSync {
                <label>{ "failing batch B" }<input class="eio-batch" type="number" min="1" max="14" value={props.params.eio_batch.to_string()}
                    onchange={props.on_action.reform(|event: Event| {
                        let input: web_sys::HtmlInputElement = event.target_unchecked_into();
                        LabAction::SetEioBatch(input.value().trim().parse::<u64>().unwrap_or(11).clamp(1, 24))
                    })} /></label>
            }
            <label>{ "when the log's sync fails " }<select class="handling" onchange={on_handling}>
                <option value="right" selected={props.params.handling == Handling::Right}>{ "fail the waiters and stop (right)" }</option>
                <option value="wrong" selected={props.params.handling == Handling::Wrong}>{ "retry and carry on (wrong)" }</option>
            </select></label>
        </div>
        <table class="summary" data-acked={acked.len().to_string()} data-failed={failed.len().to_string()}>
            <tr><th>{ "acknowledged (whole run)" }</th><td>{ id_ranges(&acked) }</td></tr>
            <tr><th>{ "told \"outcome unknown\"" }</th><td>{ id_ranges(&failed) }</td></tr>
        </table>
        <div class="prose"><p>{ "Then pull the power, before or after F11's flush completes, and compare the paths: on the wrong \
            path the retried sync 'succeeded' without writing, so whether B11's acknowledged writes survive depends on timing." }</p></div>
        <Player state={props.player.clone()} on_action={on_player} />
        { lanes(bench, props) }
        { power_section(props) }
        { page_cache.unwrap_or_default() }
        </>
    }
}
