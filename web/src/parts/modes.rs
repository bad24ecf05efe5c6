//! Part 6: durability modes, one power cut under each.

use std::rc::Rc;

use walab_core::tiny_store;
use yew::prelude::*;

use super::controls::{controls, Shown};
use super::power::{answer_revealed, cut_controls, id_ranges, lanes, power_report, tiny_model};
use super::predict::{answer_pending, Predict};
use super::{ChapterProps, source};
use crate::figures::modes::{ModeRow, ModesFigure};
use crate::layout::Scene;
use crate::player::{player, PlayerProps};
use crate::state::LabAction;
use crate::url_state::{format_millis, PolicyKind};

pub fn modes_chapter(props: &ChapterProps) -> Html {
    let (revealed, _) = answer_revealed(props);
    let Some(model) = tiny_model(props) else { return Html::default() };
    let caption = AttrValue::from(model.caption_now(props.player.now, revealed));
    let on_player = props.on_action.reform(LabAction::Player);
    let shown = Shown { policy: true, sync: true, ..Shown::default() };
    let modes = model.modes.iter().map(|(policy, mode)| match mode {
        Ok(mode) => html! {
            <tr data-policy={policy.name()} data-acknowledged={mode.acknowledged.len().to_string()} data-lost={mode.lost_acknowledged.len().to_string()}>
                <td>{ policy.label() }</td>
                <td class="num">{ mode.acknowledged.len() }</td>
                <td class={classes!("num", (!mode.lost_acknowledged.is_empty()).then_some("danger"))}>{ mode.lost_acknowledged.len() }</td>
                <td>{ id_ranges(&mode.lost_acknowledged) }</td>
            </tr>
        },
        Err(error) => html! { <tr><td>{ policy.label() }</td><td colspan="3" class="error">{ error.clone() }</td></tr> },
    });
    let at = props.params.cut.unwrap_or(tiny_store::POWER_CUT);
    let no_sync_lost = model.modes.iter().find(|(policy, _)| *policy == PolicyKind::NoSync)
        .and_then(|(_, mode)| mode.as_ref().ok()).map(|mode| mode.lost_acknowledged.len() as u32);
    let rows: Vec<ModeRow> = model
        .modes
        .iter()
        .filter_map(|(policy, mode)| mode.as_ref().ok().map(|mode| ModeRow { name: policy.label().to_string(), url_name: policy.name().to_string(), fates: mode.fates.clone() }))
        .collect();
    let table = html! {
        <>
        <table class="modes">
            <thead><tr><th>{ "mode" }</th><th class="num">{ "acknowledged" }</th><th class="num">{ "acknowledged and lost" }</th><th>{ "lost writes" }</th></tr></thead>
            <tbody>{ for modes }</tbody>
        </table>
        <ModesFigure rows={Rc::new(rows)} at={format_millis(at)} writes={tiny_store::WRITES.len() as u64} />
        </>
    };
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
                        { source("RocksDB options.h", "https://github.com/facebook/rocksdb/blob/main/include/rocksdb/options.h") }
                        { source("Redis persistence", "https://redis.io/docs/latest/operate/oss_and_stack/management/persistence/") }</td></tr>
                <tr><td>{ "the record is written; a background sync runs about every second" }</td><td>{ "about the last second" }</td>
                    <td>{ "InnoDB innodb_flush_log_at_trx_commit = 2 (or 0); PostgreSQL synchronous_commit = off (up to three wal_writer_delay); Redis appendfsync everysec; Cassandra commitlog_sync periodic " }
                        { source("MySQL: innodb_flush_log_at_trx_commit", "https://dev.mysql.com/doc/refman/8.4/en/innodb-parameters.html#sysvar_innodb_flush_log_at_trx_commit") }
                        { source("PostgreSQL: synchronous_commit", "https://www.postgresql.org/docs/current/runtime-config-wal.html#GUC-SYNCHRONOUS-COMMIT") }
                        { source("Cassandra: commitlog_sync", "https://cassandra.apache.org/doc/latest/cassandra/managing/configuration/cass_yaml_file.html") }</td></tr>
                <tr><td>{ "the record's sync returned (per write or group commit)" }</td><td>{ "no acknowledged write" }</td>
                    <td>{ "InnoDB innodb_flush_log_at_trx_commit = 1 (default); PostgreSQL synchronous_commit = on (default); RocksDB sync = true; SQLite synchronous = FULL (in WAL mode NORMAL can lose the last commits on power loss) " }
                        { source("SQLite: PRAGMA synchronous", "https://www.sqlite.org/pragma.html#pragma_synchronous") }</td></tr>
                <tr><td>{ "a quorum of replicas has the record" }</td><td>{ "no acknowledged write even if a machine is lost (Part 10)" }</td>
                    <td>{ "PostgreSQL synchronous_standby_names with synchronous_commit = on or remote_apply; Kafka acks = all with min.insync.replicas " }
                        { source("Kafka: producer acks", "https://kafka.apache.org/documentation/#producerconfigs_acks") }</td></tr>
            </tbody>
        </table>
        <div class="prose"><p>{ "Losing writes is not the same as corrupting data. PostgreSQL's synchronous_commit = off can lose \
            the last few commits after a crash but always comes back consistent; fsync = off can leave pages and log out of step, \
            and its documentation warns of unrecoverable corruption. " }
            { source("PostgreSQL: fsync", "https://www.postgresql.org/docs/current/runtime-config-wal.html#GUC-FSYNC") }</p></div>
        <Scene name="modes" title={AttrValue::from(format!("One power cut, four modes: at {} ms", format_millis(at)))}
            figure={html! {
                if props.params.cut.is_some() && !revealed {
                    { answer_pending("The four modes at your cut appear once you predict what recovery finds (below), or ask to see the answer.") }
                } else if props.params.cut.is_some() {
                    // The link's prediction answers the cut's question (the power report's),
                    // so the four modes are shown without a second verdict on the same guess.
                    { table }
                } else {
                    <Predict question={format!("cut at {} ms, how many acknowledged writes does “{}” lose?", format_millis(at), PolicyKind::NoSync.label())}
                        answer={no_sync_lost} params={props.params.clone()} on_action={props.on_action.clone()}>
                        { table }
                    </Predict>
                }
            }}>
            <div class="prose"><p>{ "The same 24 arrivals under each mode, cut at the same instant. The two fast modes send OK before any sync: \
                one never syncs the log, the other syncs it in the background once a second (InnoDB's 2, PostgreSQL's \
                synchronous_commit = off). Flushed files are synced in every mode. \
                Each row is the core's run; for the modes with syncs in flight, the row shows the worst legal outcome of the units in flight." }</p></div>
        </Scene>
        <Scene name="power-cut" title="Your own cut" opens_here={props.params.cut.is_some()}
            settings={html! { { controls(&props.params, shown, None, &props.on_action) } }}
            controls={player(&PlayerProps { state: props.player.clone(), on_action: on_player, caption: Some(caption), ..PlayerProps::default() })}
            actions={cut_controls(props)}
            figure={lanes(model, props, revealed)}
            outcome={power_report(props)}>
            <div class="prose"><p>{ "Choose a mode, play the run and pull the power at any moment (the button, the p key, or a \
                millisecond typed in). Before the answer shows, predict how many of the acknowledged writes recovery finds." }</p></div>
        </Scene>
        </>
    }
}

