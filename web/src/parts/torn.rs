//! Part 7: power loss, torn writes and the recovery scan.

use walab_core::scan::ScanCheck;
use walab_core::sim::tiny::SEGMENT_BYTES;
use std::rc::Rc;

use yew::prelude::*;

use super::power::{answer_revealed, cut_controls, id_ranges, lanes, power_report, tiny_model};
use super::predict::answer_pending;
use super::ChapterProps;
use crate::model::tiny::{describe_check, CutOutcome};
use crate::model::torn::log_view;
use crate::figures::log_media::LogMedia;
use crate::layout::Scene;
use crate::player::{Clock, player, PlayerProps};
use crate::state::LabAction;
use crate::url_state::{format_millis, to_query};

pub fn torn_chapter(props: &ChapterProps) -> Html {
    let (revealed, _) = answer_revealed(props);
    let Some(model) = tiny_model(props) else { return Html::default() };
    // The view opens while B14's sync is writing wal-6: the moment a cut tears a record.
    let in_flight = model.trace().and_then(|trace| trace.events.iter().rev().find_map(|event| match &event.event {
        walab_core::trace::Event::SyncStart { batch: Some(batch), units, .. } if event.at <= props.player.now && !units.is_empty() => Some((*batch, units.clone())),
        _ => None,
    }));
    let idea = in_flight.map(|(batch, units)| format!(
        "The disk is writing B{batch}'s {} one {}-byte unit at a time, and a multi-unit write is not atomic: pull the power now and some units may land while others do not.",
        if units.len() == 1 { format!("unit {}", units[0]) } else { format!("units {}", crate::model::captions::unit_list(&units)) },
        props.params.unit_bytes));
    let caption = super::power::opening_caption(props, model, revealed, idea);
    let on_player = props.on_action.reform(LabAction::Player);
    let outcome = model.cut.as_ref().and_then(|cut| cut.as_ref().ok());
    let checks_done = model.checks_done(props.player.now);
    // Up to the cut the steps are instants of the run; after it, checks of the scan.
    let clock = if model.cut_at().is_some_and(|cut| props.player.now > cut) { Clock::Steps } else { Clock::Millis };
    // The log's bytes at the playhead; what the cut left only once the answer is revealed.
    let media = model.trace().map(|trace| {
        let view = log_view(trace, props.params.unit_bytes as usize, props.player.now, outcome.filter(|_| revealed), checks_done);
        html! { <LogMedia view={Rc::new(view)} /> }
    });
    let recovery_figure = outcome.map(|outcome| {
        let segments = &outcome.crash.recovery.segments;
        let checks = &outcome.crash.recovery.scan.checks;
        let items = checks.iter().enumerate().map(|(index, check)| {
            let class = if index < checks_done { "done" } else { "todo" };
            let failed = matches!(check,
                ScanCheck::Checksum { ok: false, .. } | ScanCheck::PayloadPresent { ok: false, .. } | ScanCheck::LengthBound { ok: false, .. } | ScanCheck::Stop { .. });
            html! { <li class={classes!("check", class, (failed && index < checks_done).then_some("danger"))}>{ describe_check(check, segments) }</li> }
        });
        let title = format!("Recovery: {} of {} checks", checks_done.min(checks.len()), checks.len());
        let figure = html! {
            <>
            <h4>{ "wal-6 on the media after the cut" }</h4>
            { units_view(&UnitsData::from(outcome)) }
            <ol class="scan-checks" data-checks-done={checks_done.min(checks.len()).to_string()}>{ for items }</ol>
            </>
        };
        (title, figure)
    });
    let states = outcome.and_then(|outcome| outcome.all_states.as_ref()).map(|states| {
        let rows: String = states.iter().map(|state| format!("<tr><td data-label=\"units that landed\">{}</td><td data-label=\"recovered\">{}</td><td data-label=\"acknowledged and lost\"{}>{}</td><td data-label=\"scan stop\">{}</td></tr>",
            super::escape(&if state.kept_units.is_empty() { "none".to_string() } else { state.kept_units.iter().map(|(file, unit)| format!("{file}:{unit}")).collect::<Vec<_>>().join(" ") }),
            id_ranges(&state.recovery.recovered),
            if state.lost_acknowledged.is_empty() { "" } else { " class=\"danger\"" }, id_ranges(&state.lost_acknowledged),
            super::escape(&format!("{} at {}:{}", state.recovery.stop.reason.name(), state.recovery.stop.segment.clone().unwrap_or_default(), state.recovery.stop.offset)))).collect();
        super::markup_owned(format!("<div class=\"all-states\"><h4>Every legal outcome of this cut</h4><table class=\"states\"><thead><tr>\
            <th>in-flight units that landed</th><th>recovered</th><th>acknowledged and lost</th><th>scan stop</th></tr></thead><tbody>{rows}</tbody></table></div>"))
    });
    let unit_bytes = props.params.unit_bytes as usize;
    let unit_text = if unit_bytes < SEGMENT_BYTES {
        format!("Cut the power while B14's sync is running (it runs from 13.0 to 14.0 ms) and choose, in the menu beside \
            the seed (or by the seed), which of its {unit_bytes}-byte units reached the media. In one outcome record 23 is whole and record 24 has its \
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
    // The two outcomes the lesson is about, one click away: each is a link (a cut and a seed).
    // Each named case's link, and whether the view is it.
    let named: Vec<(String, bool)> = model.named_cuts.iter().map(|named| {
        let mut params = props.params.clone();
        params.cut = Some(named.at);
        params.seed = named.seed;
        params.forget_answer();
        (to_query(&params), props.params.cut == Some(named.at) && props.params.seed == named.seed)
    }).collect();
    // Beside the seed, the same cases by what they do: the seed stays for engineers.
    let choice = (!named.is_empty()).then(|| {
        let queries: Vec<String> = named.iter().map(|(query, _)| query.clone()).collect();
        let on_action = props.on_action.clone();
        let on_change = Callback::from(move |event: Event| {
            let select: web_sys::HtmlSelectElement = event.target_unchecked_into();
            if let Some(query) = select.value().parse::<usize>().ok().and_then(|index| queries.get(index)) {
                on_action.emit(LabAction::LoadQuery(query.clone()));
            }
        });
        let other = !named.iter().any(|(_, current)| *current);
        html! {
            <label class="named-case" title="the cases the lesson is about; the seed above chooses any other">{ "sync's units that land " }
                <select class="named-case" onchange={on_change}>
                    { for model.named_cuts.iter().zip(&named).enumerate().map(|(index, (cut, (_, current)))| html! {
                        <option value={index.to_string()} selected={*current}>{ cut.case.choice() }</option> }) }
                    if other { <option value="" selected=true>{ format!("seed {}: other", props.params.seed) }</option> }
                </select></label>
        }
    });
    let cases = (!model.named_cuts.is_empty()).then(|| {
        let buttons = model.named_cuts.iter().zip(&named).map(|(named, (query, current))| {
            let (query, current) = (query.clone(), *current);
            let on_click = {
                let on_action = props.on_action.clone();
                let query = query.clone();
                Callback::from(move |event: MouseEvent| {
                    event.prevent_default();
                    on_action.emit(LabAction::LoadQuery(query.clone()));
                })
            };
            html! {
                <a class={classes!("named-cut", current.then_some("current"))} href={query} onclick={on_click}
                    data-case={if named.case == crate::model::torn::NamedCase::TornRecord { "TornRecord" } else { "SyncFinished" }} data-seed={named.seed.to_string()} aria-current={current.then_some("true")}>
                    { format!("{} (cut at {} ms, seed {})", named.case.label(), format_millis(named.at), named.seed) }
                </a>
            }
        });
        html! { <p class="named-cuts">{ "Start from one of the two outcomes this Part is about: " }{ for buttons }</p> }
    });
    let player = |caption: Option<AttrValue>| html! {
        { player(&PlayerProps { state: props.player.clone(), on_action: on_player.clone(), caption, mark_name: "event or check".into(), clock, ..PlayerProps::default() }) }
    };
    html! {
        <>
        <Scene name="torn" opens_here={outcome.is_some()}
            controls={player(Some(caption))}
            actions={html! { <>{ cut_controls(props) }{ choice.unwrap_or_default() }</> }}
            figure={html! { <>{ lanes(model, props, revealed) }{ media.unwrap_or_default() }</> }}
            outcome={power_report(props)}>
            <div class="prose">
                { super::markup(r#"<p>A device persists data in atomic units (sectors): each unit is written whole or not at all, but a write of several units is not atomic. If the power fails during a sync, some units hold the new bytes and some the old, in any combination: a torn write. The tiny store uses 32-byte units so the effect shows in a few bytes; real devices use 512 bytes or 4 KiB (choose the unit next to the power button).</p>"#) }
                <p class="unit-text" data-unit-bytes={unit_bytes.to_string()}>{ unit_text }</p>
                { cases.unwrap_or_default() }
            </div>
        </Scene>
        if let (true, Some((title, figure))) = (revealed, recovery_figure) {
            <Scene name="recovery" title={AttrValue::from(title)} controls={player(None)} figure={html! { <>{ figure }{ states.unwrap_or_default() }</> }}>
                { super::markup(r#"<div class="prose"><p>Play on past the cut: the scan reads the segments that remain, oldest first, checking each record&#39;s header, length and checksum, and stops at the first one that fails.</p></div>"#) }
            </Scene>
        } else if outcome.is_some() {
            { answer_pending("wal-6 on the media, the recovery scan check by check and every legal outcome of this cut appear once you predict above (or ask to see the answer).") }
        }
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

/// wal-6's atomic units at the cut: their bytes, and which reached the media during it.
fn units_view(outcome: &UnitsData) -> Html {
    let Some(bytes) = &outcome.bytes else {
        return html! { <p class="note">{ "wal-6 did not exist at the cut." }</p> };
    };
    let unit_bytes = outcome.unit_bytes.max(1);
    let rows: String = bytes.chunks(unit_bytes).enumerate().map(|(unit, chunk)| {
        let hex: Vec<String> = chunk.iter().map(|byte| format!("{byte:02x}")).collect();
        let zero = chunk.iter().all(|byte| *byte == 0);
        let landed = outcome.kept_units.contains(&(unit as u32));
        format!("<tr class=\"unit{}{}\" data-unit=\"{unit}\"><td class=\"num\">unit {unit}</td><td class=\"num\">{}</td><td class=\"hex\"><code>{}</code></td><td>{}</td></tr>",
            if zero { " zero" } else { "" }, if landed { " landed" } else { "" }, unit_range(unit, unit_bytes, chunk.len()), hex.join(" "),
            if landed { "reached the media during the cut sync" } else if zero { "zeros" } else { "on the media" })
    }).collect();
    super::markup_owned(format!("<table class=\"units\" data-unit-bytes=\"{unit_bytes}\">{rows}</table>"))
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

