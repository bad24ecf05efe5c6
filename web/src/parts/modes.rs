//! Part 6: durability modes, one power cut under each.

use std::rc::Rc;

use walab_core::tiny_store;
use yew::prelude::*;

use super::controls::{controls, Shown};
use super::power::{answer_revealed, cut_controls, id_ranges, lanes, power_report, tiny_model};
use super::predict::{answer_pending, Predict};
use super::ChapterProps;
use crate::figures::modes::{ModeRow, ModesFigure};
use crate::layout::Scene;
use crate::player::{player, PlayerProps};
use crate::state::LabAction;
use crate::url_state::{format_millis, PolicyKind};

/// The Part's opening text and the ladder of modes, as static markup (see `super::markup`).
const MODES_INTRO: &str = r#"<div class="modes-intro"><div class="prose"><p>Not every write deserves a sync before its OK: a second of metrics can be lost, a payment cannot. Every engine lets you choose, and the classic mistake is to choose without saying what the choice can lose.</p></div><h3>The ladder, and what engines call each rung</h3><table class="ladder"><thead><tr><th>OK is sent when</th><th>a power loss can lose</th><th>engines&#39; settings</th></tr></thead><tbody><tr><td>the record is in the page cache (no sync)</td><td>everything the kernel has not yet written back</td><td>RocksDB WriteOptions.sync = false (its default); Redis appendfsync no <a class="source" href="https://github.com/facebook/rocksdb/blob/main/include/rocksdb/options.h" target="_blank" rel="noopener">[RocksDB options.h]</a> <a class="source" href="https://redis.io/docs/latest/operate/oss_and_stack/management/persistence/" target="_blank" rel="noopener">[Redis persistence]</a></td></tr><tr><td>the record is written; a background sync runs about every second</td><td>about the last second</td><td>InnoDB innodb_flush_log_at_trx_commit = 2 (or 0); PostgreSQL synchronous_commit = off (up to three wal_writer_delay); Redis appendfsync everysec; Cassandra commitlog_sync periodic <a class="source" href="https://dev.mysql.com/doc/refman/8.4/en/innodb-parameters.html#sysvar_innodb_flush_log_at_trx_commit" target="_blank" rel="noopener">[MySQL: innodb_flush_log_at_trx_commit]</a> <a class="source" href="https://www.postgresql.org/docs/current/runtime-config-wal.html#GUC-SYNCHRONOUS-COMMIT" target="_blank" rel="noopener">[PostgreSQL: synchronous_commit]</a> <a class="source" href="https://cassandra.apache.org/doc/latest/cassandra/managing/configuration/cass_yaml_file.html" target="_blank" rel="noopener">[Cassandra: commitlog_sync]</a></td></tr><tr><td>the record&#39;s sync returned (per write or group commit)</td><td>no acknowledged write</td><td>InnoDB innodb_flush_log_at_trx_commit = 1 (default); PostgreSQL synchronous_commit = on (default); RocksDB sync = true; SQLite synchronous = FULL (in WAL mode NORMAL can lose the last commits on power loss) <a class="source" href="https://www.sqlite.org/pragma.html#pragma_synchronous" target="_blank" rel="noopener">[SQLite: PRAGMA synchronous]</a></td></tr><tr><td>a quorum of replicas has the record</td><td>no acknowledged write even if a machine is lost (Part 10)</td><td>PostgreSQL synchronous_standby_names with synchronous_commit = on or remote_apply; Kafka acks = all with min.insync.replicas <a class="source" href="https://kafka.apache.org/documentation/#producerconfigs_acks" target="_blank" rel="noopener">[Kafka: producer acks]</a></td></tr></tbody></table><div class="prose"><p>Losing writes is not the same as corrupting data. PostgreSQL&#39;s synchronous_commit = off can lose the last few commits after a crash but always comes back consistent; fsync = off can leave pages and log out of step, and its documentation warns of unrecoverable corruption. <a class="source" href="https://www.postgresql.org/docs/current/runtime-config-wal.html#GUC-FSYNC" target="_blank" rel="noopener">[PostgreSQL: fsync]</a></p></div></div>"#;

/// Part 6. The lesson's four modes are always cut at the lesson's instant (13.5 ms) and
/// keep their own question: a student's own cut, below, is another question, so it
/// neither redraws the lesson nor reveals its answer, and it does not hide an answer the
/// student already has (kept here while the Part is open; a link carries it as
/// `predict=` or `reveal=1` when it has no cut, or its cut is the lesson's).
#[component]
pub fn ModesChapter(props: &ChapterProps) -> Html {
    let lesson_answer = use_state(|| None::<Option<u32>>);
    let (revealed, _) = answer_revealed(props);
    let Some(model) = tiny_model(props) else { return Html::default() };
    let at = tiny_store::POWER_CUT;
    let mut lesson_params = props.params.clone();
    match *lesson_answer {
        Some(guess) => {
            lesson_params.predict = guess;
            lesson_params.reveal = guess.is_none();
        }
        None if props.params.cut.is_none() => {}
        // A link cut at the lesson's instant: its answer shows the modes too, graded once,
        // in the cut's report.
        None => {
            let shown = props.params.cut == Some(at) && props.params.answer_shown();
            lesson_params.forget_answer();
            lesson_params.reveal = shown;
        }
    }
    let lesson_revealed = lesson_params.answer_shown();
    let own_question_open = props.params.cut.is_some() && !revealed;
    let on_lesson = {
        let (lesson_answer, on_action, forward) = (lesson_answer.clone(), props.on_action.clone(), props.params.cut.is_none());
        Callback::from(move |action: LabAction| {
            match action {
                LabAction::Predict(guess) => lesson_answer.set(Some(Some(guess))),
                LabAction::Reveal => lesson_answer.set(Some(None)),
                _ => {}
            }
            // Into the link only when no cut of the student's own would take the answer too.
            if forward {
                on_action.emit(action);
            }
        })
    };
    let caption = AttrValue::from(model.caption_now(props.player.now, revealed));
    let on_player = props.on_action.reform(LabAction::Player);
    let shown = Shown { policy: true, sync: true, ..Shown::default() };
    let modes: String = model.modes.iter().map(|(policy, mode)| match mode {
        Ok(mode) => format!("<tr data-policy=\"{}\" data-acknowledged=\"{}\" data-lost=\"{}\"><td data-label=\"mode\">{}</td><td class=\"num\" data-label=\"acknowledged\">{}</td><td class=\"num{}\" data-label=\"acknowledged and lost\">{}</td><td data-label=\"lost writes\">{}</td></tr>",
            policy.name(), mode.acknowledged.len(), mode.lost_acknowledged.len(), super::escape(policy.label()), mode.acknowledged.len(),
            if mode.lost_acknowledged.is_empty() { "" } else { " danger" }, mode.lost_acknowledged.len(), id_ranges(&mode.lost_acknowledged)),
        Err(error) => format!("<tr><td>{}</td><td colspan=\"3\" class=\"error\">{}</td></tr>", super::escape(policy.label()), super::escape(error)),
    }).collect();
    let no_sync_lost = model.modes.iter().find(|(policy, _)| *policy == PolicyKind::NoSync)
        .and_then(|(_, mode)| mode.as_ref().ok()).map(|mode| mode.lost_acknowledged.len() as u32);
    let rows: Vec<ModeRow> = model
        .modes
        .iter()
        .filter_map(|(policy, mode)| mode.as_ref().ok().map(|mode| ModeRow { name: policy.label().to_string(), url_name: policy.name().to_string(), fates: mode.fates.clone() }))
        .collect();
    // The figure is always drawn: before the answer it shows which writes each mode had
    // told OK when the power failed (what the prediction starts from), after it their fates.
    let figure = html! { <ModesFigure rows={Rc::new(rows)} at={format_millis(at)} writes={tiny_store::WRITES.len() as u64} revealed={lesson_revealed} /> };
    let table = super::markup_owned(format!("<table class=\"modes\"><thead><tr><th>mode</th><th class=\"num\">acknowledged</th>\
        <th class=\"num\">acknowledged and lost</th><th>lost writes</th></tr></thead><tbody>{modes}</tbody></table>"));
    // The scene's one idea, with the run's numbers: what each mode promised, then what it kept.
    let counts = |kind: PolicyKind| model.modes.iter().find(|(policy, _)| *policy == kind).and_then(|(_, mode)| mode.as_ref().ok())
        .map(|mode| (mode.acknowledged.len(), mode.lost_acknowledged.len()));
    let idea = match (counts(PolicyKind::Group), counts(PolicyKind::NoSync)) {
        (Some((group_ok, group_lost)), Some((fast_ok, fast_lost))) if lesson_revealed => format!(
            "The power fails at {} ms. Group commit told {} OK and loses {}; no sync told {} OK and loses {}: an OK sent before the disk has the write is a promise the power can break.",
            format_millis(at), crate::format::count(group_ok, "write"), group_lost, crate::format::count(fast_ok, "write"), fast_lost),
        (Some((group_ok, _)), Some((fast_ok, _))) => format!(
            "The power fails at {} ms. Group commit had told {} OK, each after the disk stored it; no sync had told {} OK the moment they reached memory. Which of them come back?",
            format_millis(at), crate::format::count(group_ok, "write"), crate::format::count(fast_ok, "write")),
        _ => String::new(),
    };
    html! {
        <>
        { super::markup(MODES_INTRO) }
        <Scene name="modes" title={AttrValue::from(format!("One power cut, four modes: at {} ms", format_millis(at)))}
            controls={html! { <p class="scene-idea" aria-live="polite">{ idea }</p> }}
            figure={figure}
            outcome={html! {
                // One question at a time: while the student's own cut asks its question
                // (below), this one waits, then comes back to be graded on its own answer.
                if own_question_open && !lesson_revealed {
                    { answer_pending("This question waits while you answer your own cut's, below.") }
                } else {
                    <Predict question={format!("how many of the writes “{}” told OK does recovery lose?", PolicyKind::NoSync.label())}
                        answer={no_sync_lost} params={lesson_params} on_action={on_lesson}>
                        { table }
                    </Predict>
                }
            }}>
            { super::markup(r#"<div class="prose"><p>The same 24 arrivals under each mode, cut at the same instant. The two fast modes send OK before any sync: one never syncs the log, the other syncs it in the background once a second (InnoDB&#39;s 2, PostgreSQL&#39;s synchronous_commit = off). Flushed files are synced in every mode. Each row is the core&#39;s run; for the modes with syncs in flight, the row shows the worst legal outcome of the units in flight.</p></div>"#) }
        </Scene>
        <Scene name="power-cut" title="Your own cut" opens_here={props.params.cut.is_some()}
            settings={html! { { controls(&props.params, shown, None, &props.on_action) } }}
            controls={player(&PlayerProps { state: props.player.clone(), on_action: on_player, caption: Some(caption), ..PlayerProps::default() })}
            actions={cut_controls(props)}
            figure={lanes(model, props, revealed)}
            outcome={power_report(props)}>
            { super::markup(r#"<div class="prose"><p>Choose a mode, play the run and pull the power at any moment (the button, the p key, or a millisecond typed in). Before the answer shows, predict how many of the acknowledged writes recovery finds.</p></div>"#) }
        </Scene>
        </>
    }
}

