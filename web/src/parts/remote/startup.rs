//! Part 14's start-up: the server's state as toggles, the core's start-up checks, and the
//! timeline verdict of a restart at the playhead, told with the core's counts (what the
//! restarted database no longer holds, how much of that the upload had already taken to
//! data objects, what is lost), so the sentence and its numbers agree at every instant.

use walab_core::sim::remote::{RemoteRun, RestartOutcome, TimelineCase};
use yew::prelude::*;

use crate::parts::escape;

use super::{choice, opt, ChapterProps};
use crate::model::remote::{refusal_name, startup_at, warning_name};
use crate::remote_params::{timeline_name, RemoteParams, BACKUP_AT};
use crate::format::{are, count};
use crate::state::{LabAction, Setting};

/// What a restart loses, from the core's counts: "Of 80 acknowledged records, 55 were
/// committed after the backup point (20 ms) and are not in the restored database; none of
/// them had been uploaded to data objects yet, so 55 are lost."
pub fn restart_words(restart: &RestartOutcome, case: TimelineCase) -> String {
    let acked = count(restart.acked, "acknowledged record");
    if restart.past_database == 0 && restart.lost.is_empty() {
        return match (restart.acked, case) {
            (0, _) => "Nothing was acknowledged yet, so nothing is lost.".into(),
            (_, TimelineCase::Lower { backup_at }) => format!(
                "Of {acked}, every one was committed before the backup point ({}) and is in the restored database, so none are lost. \
                 Play past {} to see what a restore loses.",
                crate::format::ms(backup_at), crate::format::ms(backup_at)
            ),
            _ => format!("Of {acked}, every one is still in the database, so none are lost."),
        };
    }
    let past = match case {
        TimelineCase::HigherAsynchronous { lag } => format!(
            "committed in the last {} before the promotion, which the standby had not replayed, and are not on it",
            crate::format::ms(lag)
        ),
        _ => format!("committed after the backup point ({}) and are not in the restored database", crate::format::ms(BACKUP_AT)),
    };
    let (n, uploaded) = (restart.past_database, restart.past_database_uploaded);
    let uploaded_words = match uploaded {
        0 if n == 1 => "it had not been uploaded to data objects yet".to_string(),
        0 => "none of them had been uploaded to data objects yet".to_string(),
        _ if uploaded == n && n == 1 => "it had already been uploaded to data objects, and recovery reads it from there".to_string(),
        _ if uploaded == n => format!("all {n} had already been uploaded to data objects, and recovery reads them from there"),
        _ => format!("{uploaded} of them had already been uploaded to data objects, and recovery reads those from there"),
    };
    let lost = restart.lost.len();
    let lost_words = match lost {
        0 => "so none are lost".to_string(),
        _ => format!("so {lost} {} lost", are(lost)),
    };
    let gap = match restart.lost_past_gap {
        0 => String::new(),
        gap => format!(" ({} of them still in the database but past the first gap, where the scan stops)", count(gap, "record")),
    };
    let were = if n == 1 { "was" } else { "were" };
    format!("Of {acked}, {n} {were} {past}; {uploaded_words}, {lost_words}{gap}.")
}

/// A checkbox that rewrites the remote parameters.
fn toggle(label: &'static str, class: &'static str, checked: bool, params: &RemoteParams, on_action: &Callback<LabAction>, apply: fn(&mut RemoteParams, bool)) -> Html {
    let params = params.clone();
    let onchange = on_action.reform(move |event: Event| {
        let input: web_sys::HtmlInputElement = event.target_unchecked_into();
        let mut next = params.clone();
        apply(&mut next, input.checked());
        LabAction::Set(Setting::Remote(next))
    });
    html! { <label class={classes!("remote-control", "toggle", class)}><input type="checkbox" {checked} {onchange} />{ " " }{ label }</label> }
}

/// A start-up verdict's level, as the WAL logs it.
fn severity_name(severity: walab_core::ring::startup::Severity) -> &'static str {
    use walab_core::ring::startup::Severity;
    match severity {
        Severity::Info => "info",
        Severity::Warning => "warning",
        Severity::Error => "error",
    }
}

/// Part 14's start-up: the server's state as toggles, and what the core's start-up
/// checks and timeline verdict make of it at a restart at the playhead.
pub(super) fn startup_panel(props: &ChapterProps, run: &RemoteRun) -> Html {
    let params = &props.params.remote;
    let on = &props.on_action;
    let timeline = match params.timeline {
        TimelineCase::Equal => "equal",
        TimelineCase::Lower { .. } => "lower",
        TimelineCase::HigherSynchronous | TimelineCase::HigherAsynchronous { .. } => "higher",
    };
    let controls = html! {
        <div class="controls remote-controls startup-controls">
            { choice("timeline now, against the one recorded at the last start", "timeline", vec![opt("equal", "equal: a normal restart"),
                opt("lower", &format!("lower: restored from a backup (taken at {})", crate::format::ms(BACKUP_AT))), opt("higher", "higher: a standby was promoted")],
                timeline.to_string(), params, on, |p, v| p.set_timeline(v)) }
            { toggle("synchronous_standby_names is set (a synchronous standby)", "ssn", params.synchronous_standby_set(), params, on, |p, on| p.set_synchronous_standby(on)) }
            { toggle("pg_is_in_recovery() is true (the server is a standby)", "recovery", params.server.in_recovery, params, on, |p, on| p.server.in_recovery = on) }
            { toggle("fsync = off on the server", "fsync", params.server.fsync_off, params, on, |p, on| p.server.fsync_off = on) }
            { toggle("allow_unsafe=true in the WAL's URL", "unsafe", params.server.allow_unsafe, params, on, |p, on| p.server.allow_unsafe = on) }
        </div>
    };
    let now = props.player.now;
    let view = startup_at(run, params, now);
    let warnings: Vec<&str> = view.warnings.iter().map(|w| warning_name(*w)).collect();
    let warning_items: String = view.warnings.iter().map(|warning| format!("<li class=\"warning\">Warning: {}.</li>", escape(&warning.to_string()))).collect();
    let verdict = match (&view.refusal, &view.restart) {
        (Some(refusal), _) => format!("<p class=\"refusal\">The WAL refuses to start: {}. Nothing is recovered and nothing is acknowledged until the server is fixed.</p>", escape(&refusal.to_string())),
        (None, Some(restart)) => format!(
            "<p class=\"timeline-verdict\" data-case=\"{}\" data-severity=\"{}\" data-lost=\"{}\" data-acked=\"{}\" data-past=\"{}\" data-uploaded=\"{}\">It starts. Restart at {}: {}. Logged as {}. {}</p>",
            timeline_name(params.timeline), severity_name(restart.severity), restart.lost.len(), restart.acked, restart.past_database, restart.past_database_uploaded,
            crate::format::ms(now), escape(&restart.verdict.to_string()), severity_name(restart.severity), escape(&restart_words(restart, params.timeline))),
        (None, None) => String::new(),
    };
    // The verdict and the warnings as one piece of markup, their numbers as data.
    let attr = |value: Option<String>| value.map_or(String::new(), |value| format!(" {value}"));
    html! {
        <>
        { controls }
        { crate::parts::markup_owned(format!("<div class=\"startup-verdict\" data-verdict=\"{}\"{}{} data-warnings=\"{}\"{} aria-live=\"polite\">{verdict}<ul class=\"startup-warnings\">{warning_items}</ul></div>",
            if view.refusal.is_some() { "refused" } else { "starts" },
            attr(view.refusal.map(|r| format!("data-refusal=\"{}\"", refusal_name(r)))),
            attr(view.restart.as_ref().map(|_| format!("data-timeline=\"{}\"", timeline_name(params.timeline)))),
            warnings.join(" "),
            attr(view.restart.as_ref().map(|r| format!("data-lost=\"{}\"", r.lost.len()))))) }
        </>
    }
}

