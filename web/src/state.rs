//! The lab's state and its reducer.
//!
//! `LabState` is everything the page shows that is not fixed text: the view's parameters
//! (which are also the URL), the player's playhead, and the problems found in the URL.
//! Components never change it directly; they send a [`LabAction`] and the reducer
//! computes the next state. Runs of the core are derived from the parameters, never
//! stored half-updated, so a link, a slider and the back button all land on the same view.

use std::rc::Rc;

use walab_core::time::Nanos;
use yew::prelude::*;

use crate::model::dropped::{DropError, Dropped, MeasuredLatency};
use crate::model::{self, ModelRef};
use crate::parts::choice;
use crate::player::{PlayerAction, PlayerState};
use crate::url_state::{
    format_millis, parse_query, power_parts_text, set_param, Fault, Handling, LabParams, PageProtection, PolicyKind, Scenario,
    UrlProblem, PART_COUNT, PREDICT_MAX,
};

#[derive(Clone, Debug, PartialEq)]
pub struct LabState {
    pub params: LabParams,
    /// What the URL said that the page could not use; shown until dismissed.
    pub url_problems: Vec<UrlProblem>,
    pub player: PlayerState,
    /// The core's runs for the current Part and parameters.
    pub model: ModelRef,
    /// A trace file dropped onto the page, or why it could not be read.
    pub dropped: Option<Result<Dropped, String>>,
    /// A measured sync-latency distribution the simulator uses instead of a fixed L.
    pub latency: Option<Rc<MeasuredLatency>>,
    /// The last thing worth announcing (a power cut, a result, a key that did nothing),
    /// shown in the status line, an `aria-live` region.
    pub status: Option<String>,
    /// A value typed into a field that the lab refused, shown beside that field.
    pub field_problem: Option<FieldProblem>,
    /// The key list (`?`) is open.
    pub keys_open: bool,
}

/// The fields a student types into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Cut,
    Seed,
    EioBatch,
}

/// A refused typed value: which field, and what it accepts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldProblem {
    pub field: Field,
    pub message: String,
}

impl LabState {
    /// The state a URL query describes.
    pub fn from_query(query: &str) -> LabState {
        let (params, url_problems) = parse_query(query);
        let mut state = LabState {
            player: PlayerState::default(),
            params,
            url_problems,
            model: ModelRef::default(),
            dropped: None,
            latency: None,
            status: None,
            field_problem: None,
            keys_open: false,
        };
        state.open_view();
        state
    }

    /// Builds the runs for the parameters, refuses a cut past the end of the run (naming
    /// the range) and puts the playhead at the cut.
    fn open_view(&mut self) {
        self.reload_timeline();
        if let Some(cut) = self.params.cut {
            if let Err(reason) = self.check_cut(cut) {
                self.url_problems.push(UrlProblem { param: "cut".into(), value: format_millis(cut), reason });
                self.params.cut = None;
                self.params.forget_answer();
                self.reload_timeline();
            }
        }
        // A view opens at its cut, or else on the moment its figure is about.
        match self.params.cut {
            Some(cut) => self.player.apply(PlayerAction::Seek(cut)),
            None => {
                let opening = self.opening();
                self.player.apply(PlayerAction::Seek(opening));
                self.player.opened_at = Some(opening);
            }
        }
    }

    /// Where the figure opens when nothing names a moment (see `moments::opening`).
    fn opening(&self) -> Nanos {
        model::moments::opening(&self.model.0).unwrap_or(Nanos::ZERO)
    }

    /// Whether the power can be cut at `at` in this view: the Part has a power button
    /// and the instant lies inside the run.
    fn check_cut(&self, at: Nanos) -> Result<(), String> {
        if !self.params.has_power() {
            return Err(format!("Part {} has no power button; {} have one", self.params.part, power_parts_text()));
        }
        match model::moments::run_end(&self.model.0) {
            // Part 4's run is counted in steps, one a (display) millisecond.
            Some(end) if at > end && matches!(&*self.model.0, model::Model::Append) => {
                Err(format!("past the end of the append; give 0 to {}", crate::format::count(end.0 / 1_000_000, "step")))
            }
            Some(end) if at > end => Err(format!("past the end of the run; give 0 to {} ms", format_millis(end))),
            _ => Ok(()),
        }
    }

    /// What the view's answer is, in one sentence, for the status line.
    fn result_sentence(&self) -> Option<String> {
        let model::Model::Tiny(tiny) = &*self.model.0 else { return None };
        let Some(Ok(outcome)) = &tiny.cut else { return None };
        let crash = &outcome.crash;
        Some(format!(
            "Recovery found {} of the {} acknowledged writes; {} acknowledged writes were lost.",
            crash.acknowledged.len() - crash.lost_acknowledged.len(),
            crash.acknowledged.len(),
            crash.lost_acknowledged.len()
        ))
    }

    /// The status line after a cut.
    fn cut_sentence(&self) -> String {
        let at = self.params.cut.map(format_millis).unwrap_or_default();
        let acknowledged = match &*self.model.0 {
            model::Model::Tiny(tiny) => match &tiny.cut {
                Some(Ok(outcome)) => format!(" {} had been acknowledged.", crate::format::count(outcome.crash.acknowledged.len(), "write")),
                _ => String::new(),
            },
            _ => String::new(),
        };
        format!("The power failed at {at} ms.{acknowledged}")
    }

    /// Runs the current Part's model and loads its timeline into the player, keeping
    /// the speed.
    fn reload_timeline(&mut self) {
        let speed_index = self.player.speed_index;
        let dropped = self.dropped.as_ref().and_then(|dropped| dropped.as_ref().ok());
        self.model = choice::build(&self.params, dropped, self.latency.as_ref());
        let timeline = self.model.0.timeline();
        self.player = PlayerState::for_run(timeline.marks, timeline.end);
        self.player.notable = Rc::new(model::moments::notable_marks(&self.model.0));
        self.player.speed_index = speed_index;
    }
}

/// Everything a component, a key or the clock can ask of the lab.
#[derive(Clone, Debug, PartialEq)]
pub enum LabAction {
    GoToPart(u8),
    Player(PlayerAction),
    /// A control set one parameter.
    Set(Setting),
    /// Choose (or clear) the instant the power fails.
    SetCut(Option<Nanos>),
    /// Pull the power now, at the playhead (in a Part with a power button; elsewhere the
    /// status line says there is none).
    CutAtPlayhead,
    /// A value as typed into a field (the cut's instant, a seed, the failing batch of
    /// branch E1): checked as the link's parameter is, then used or refused.
    Type(Field, String),
    /// The student commits a prediction: the answer shows, and the link keeps it.
    Predict(u32),
    /// The student asks to see the answer without predicting.
    Reveal,
    /// The address changed under the page (Back, Forward): show the view it names.
    LoadQuery(String),
    TogglePresent,
    ShowKeys(bool),
    /// A trace file was read (or failed to parse): the Part that plays it opens (Part 5
    /// a commit trace, 13 or 14 a remote run's); a file that could not be read opens the
    /// Part it says it belongs to, or Part 5, unless a remote chapter is open.
    LoadTrace(Result<Dropped, DropError>),
    CloseTrace,
    /// A measured latency file was read: Parts 0, 5 and 11 simulate with it.
    LoadLatency(Rc<MeasuredLatency>),
    ClearLatency,
    DismissUrlProblems,
}

/// One parameter as a control sets it.
#[derive(Clone, Debug, PartialEq)]
pub enum Setting {
    Scenario(Scenario),
    Policy(PolicyKind),
    SyncLatency(Nanos),
    Load(u64),
    Window(Nanos),
    Quorum(u8),
    /// Part 10's lost followers (bit i for replica i).
    LostFollowers(u8),
    UnitBytes(u32),
    Fault(Fault),
    Handling(Handling),
    Cdc(Option<u64>),
    Protection(PageProtection),
    /// The call run on the record, in the chapter on what fsync guarantees.
    Call(crate::url_state::SyncCall),
    /// New parameters for the remote WAL's run.
    Remote(crate::remote_params::RemoteParams),
}

impl Setting {
    /// Writes the setting into the parameters; true when the view's runs change (every
    /// setting but the call, which only picks what the figure shows).
    fn apply(self, params: &mut LabParams) -> bool {
        match self {
            Setting::Scenario(scenario) => params.scenario = scenario,
            Setting::Policy(policy) => params.policy = policy,
            Setting::SyncLatency(latency) => params.sync_latency = latency,
            Setting::Load(load) => params.load_per_second = load,
            Setting::Window(window) => params.window = window,
            Setting::Quorum(w) => params.quorum_w = w,
            Setting::LostFollowers(lost) => params.lost_followers = lost,
            Setting::UnitBytes(unit) => params.unit_bytes = unit,
            Setting::Fault(fault) => params.fault = fault,
            Setting::Handling(handling) => params.handling = handling,
            Setting::Cdc(seq) => params.cdc_confirmed_seq = seq,
            Setting::Protection(protection) => params.protection = protection,
            Setting::Remote(remote) => params.remote = remote,
            Setting::Call(call) => {
                params.call = call;
                return false;
            }
        }
        true
    }
}

impl Field {
    /// The link's parameter the field types.
    fn param(self) -> &'static str {
        match self {
            Field::Cut => "cut",
            Field::Seed => "seed",
            Field::EioBatch => "log_sync_fails",
        }
    }
}

impl LabState {
    /// Cuts the power at `at` if this view allows it; otherwise says why, in the status
    /// line and beside the cut's field.
    fn cut_at(&mut self, at: Nanos, timeline_changed: &mut bool) {
        match self.check_cut(at) {
            Ok(()) => {
                self.player.apply(PlayerAction::Pause);
                self.field_problem = None;
                if self.params.cut != Some(at) {
                    self.params.cut = Some(at);
                    self.params.forget_answer();
                    *timeline_changed = true;
                    // The sentence names the new run's numbers, so it is written after the rerun.
                    self.status = None;
                }
            }
            Err(reason) => {
                let message = format!("{} ms: {reason}", format_millis(at));
                self.status = Some(format!("The power stays on: {message}."));
                self.field_problem = Some(FieldProblem { field: Field::Cut, message });
            }
        }
    }
}

/// A link opened whole keeps its prediction; any other change of the question clears it.
enum ActionKind {
    Load,
    Other,
}

impl Reducible for LabState {
    type Action = LabAction;

    fn reduce(self: Rc<Self>, action: LabAction) -> Rc<Self> {
        let action_kind = if matches!(action, LabAction::LoadQuery(_)) { ActionKind::Load } else { ActionKind::Other };
        let mut next = (*self).clone();
        let mut timeline_changed = false;
        let mut playhead_kept = true;
        match action {
            LabAction::GoToPart(part) => {
                if part < PART_COUNT && part != next.params.part {
                    next.params.part = part;
                    next.params.part_defaults(part);
                    next.params.cut = None;
                    next.params.forget_answer();
                    next.field_problem = None;
                    next.status = None;
                    timeline_changed = true;
                    playhead_kept = false;
                }
            }
            LabAction::Player(action) => next.player.apply(action),
            LabAction::Set(setting) => timeline_changed = setting.apply(&mut next.params),
            LabAction::SetCut(None) => {
                next.player.apply(PlayerAction::Pause);
                next.field_problem = None;
                if next.params.cut.is_some() {
                    next.params.cut = None;
                    next.params.forget_answer();
                    next.status = Some("The power is back on; the run plays to its end.".into());
                    timeline_changed = true;
                } else {
                    next.status = Some("The power is on: there is no cut to restore.".into());
                }
            }
            LabAction::SetCut(Some(at)) => next.cut_at(at, &mut timeline_changed),
            LabAction::CutAtPlayhead if !next.params.has_power() => {
                next.status = Some(format!(
                    "p does nothing here: Part {} has no power button ({} have one).",
                    next.params.part,
                    power_parts_text()
                ));
            }
            LabAction::CutAtPlayhead => {
                // The instant the player shows (to the hundredth of a millisecond), so the
                // link, the CLI's --at-ms and the screen name the same instant.
                let now = next.player.now;
                let shown = crate::format::shown_instant(now);
                let at = if next.check_cut(shown).is_ok() { shown } else { Nanos(now.0 / 10_000 * 10_000) };
                next.cut_at(at, &mut timeline_changed);
            }
            LabAction::Type(field, text) => {
                let typed = text.trim();
                let mut params = next.params.clone();
                match set_param(&mut params, field.param(), typed) {
                    Ok(()) if field == Field::Cut => next.cut_at(params.cut.unwrap_or_default(), &mut timeline_changed),
                    Ok(()) => {
                        next.params = params;
                        next.field_problem = None;
                        timeline_changed = true;
                    }
                    Err(reason) => next.field_problem = Some(FieldProblem { field, message: format!("{typed}: {reason}") }),
                }
            }
            LabAction::Predict(guess) => {
                next.params.predict = Some(guess.min(PREDICT_MAX));
                next.status = next.result_sentence().map(|result| format!("You predicted {guess}. {result}"));
            }
            LabAction::Reveal => {
                next.params.reveal = true;
                next.status = next.result_sentence();
            }
            LabAction::LoadQuery(query) => {
                let mut opened = LabState::from_query(&query);
                if opened.params == next.params {
                    return self;
                }
                opened.dropped = next.dropped.take();
                opened.latency = next.latency.take();
                opened.player.speed_index = next.player.speed_index;
                opened.keys_open = next.keys_open;
                if opened.dropped.is_some() || opened.latency.is_some() {
                    opened.open_view();
                }
                next = opened;
            }
            LabAction::TogglePresent => next.params.present = !next.params.present,
            LabAction::ShowKeys(open) => next.keys_open = open,

            LabAction::LoadTrace(result) => {
                next.params.part = match &result {
                    Ok(dropped) => choice::part_of_dropped(dropped.kind()),
                    Err(DropError { kind: Some(kind), .. }) => choice::part_of_dropped(*kind),
                    // A file that is no trace at all leaves the student where they are.
                    Err(DropError { kind: None, .. }) => next.params.part,
                };
                next.status = result.as_ref().err().map(|error| format!("That file was not opened: {}. The page stays on Part {}.", error.message, next.params.part));
                next.dropped = Some(result.map_err(|error| error.message));
                next.params.forget_answer();
                next.params.cut = None;
                timeline_changed = true;
                playhead_kept = false;
            }
            LabAction::LoadLatency(latency) => {
                next.latency = Some(latency);
                next.dropped = None;
                next.params.part = choice::COMMIT_PART;
                if next.params.scenario == Scenario::Tiny {
                    next.params.scenario = Scenario::Random;
                }
                timeline_changed = true;
                playhead_kept = false;
            }
            LabAction::ClearLatency => {
                next.latency = None;
                timeline_changed = true;
            }
            LabAction::CloseTrace => {
                next.dropped = None;
                timeline_changed = true;
                playhead_kept = false;
            }
            LabAction::DismissUrlProblems => next.url_problems.clear(),
        }
        // Another seed, mode, unit or fault asks the question again.
        let (was, now) = (&self.params, &next.params);
        let question_changed = (was.seed, was.policy, was.unit_bytes, was.fault, was.handling, was.eio_batch, was.sync_latency, was.window)
            != (now.seed, now.policy, now.unit_bytes, now.fault, now.handling, now.eio_batch, now.sync_latency, now.window);
        if question_changed && !matches!(action_kind, ActionKind::Load) {
            next.params.forget_answer();
        }
        if timeline_changed {
            let kept = playhead_kept.then_some(next.player.now);
            next.reload_timeline();
            let now = kept.unwrap_or_else(|| next.opening());
            next.player.apply(PlayerAction::Seek(next.params.cut.unwrap_or(now)));
            if next.params.cut.is_some() && next.params.cut != self.params.cut {
                next.status = Some(next.cut_sentence());
            }
        }
        if next == *self {
            self
        } else {
            Rc::new(next)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reduce(state: LabState, action: LabAction) -> LabState {
        (*Rc::new(state).reduce(action)).clone()
    }

    #[test]
    fn a_deep_link_opens_its_part_at_its_cut() {
        let state = LabState::from_query("?part=6&cut=13.5");
        assert_eq!(state.params.part, 6);
        assert_eq!(state.params.cut, Some(Nanos(13_500_000)));
        assert!(state.url_problems.is_empty());
    }

    #[test]
    fn changing_part_clears_the_cut_and_keeps_the_speed() {
        let mut state = LabState::from_query("?part=6&cut=13.5");
        state = reduce(state, LabAction::Player(PlayerAction::Faster));
        let speed = state.player.speed_index;
        state = reduce(state, LabAction::GoToPart(4));
        assert_eq!(state.params.part, 4);
        assert_eq!(state.params.cut, None);
        assert_eq!(state.player.speed_index, speed);
        assert_eq!(state.player.now, Nanos::ZERO);
    }

    #[test]
    fn cutting_at_the_playhead_pauses_and_records_the_instant() {
        let mut state = LabState::from_query("?part=4");
        state = reduce(state, LabAction::Player(PlayerAction::StepForward));
        state = reduce(state, LabAction::Player(PlayerAction::StepForward));
        let at = state.player.now;
        state = reduce(state, LabAction::CutAtPlayhead);
        assert_eq!(state.params.cut, Some(at));
        assert!(!state.player.playing);
    }

    #[test]
    fn p_cuts_at_the_millisecond_the_player_shows() {
        let mut state = LabState::from_query("?part=6");
        state = reduce(state, LabAction::Player(PlayerAction::Seek(Nanos(9_584_000))));
        assert_eq!(crate::format::format_fixed_millis(state.player.now), "9.58");
        state = reduce(state, LabAction::CutAtPlayhead);
        assert_eq!(state.params.cut, Some(Nanos(9_580_000)));
        assert_eq!(crate::url_state::to_query(&state.params), "?part=6&cut=9.58");
    }

    #[test]
    fn choosing_the_unit_reruns_the_cut_and_goes_into_the_link() {
        let state = LabState::from_query("?part=7&cut=13.5");
        let state = reduce(state, LabAction::Set(Setting::UnitBytes(512)));
        assert_eq!(state.params.cut, Some(Nanos(13_500_000)), "the cut is kept");
        let query = crate::url_state::to_query(&state.params);
        assert_eq!(query, "?part=7&unit=512&cut=13.5");
        let crate::model::Model::Tiny(model) = &*state.model.0 else { panic!("Part 7 runs the tiny store") };
        assert_eq!(model.cut.as_ref().unwrap().as_ref().unwrap().run.device.unit_bytes(), 512);
        // The shared link opens the same view.
        let opened = LabState::from_query(&query);
        assert_eq!(opened.params, state.params);
        assert!(opened.url_problems.is_empty());
    }

    #[test]
    fn p_in_a_part_without_power_changes_nothing_and_says_so() {
        let state = LabState::from_query("?part=2");
        let state = reduce(state, LabAction::Player(PlayerAction::StepForward));
        let now = state.player.now;
        let state = reduce(state, LabAction::CutAtPlayhead);
        assert_eq!(state.params.cut, None, "no cut= in the link");
        assert_eq!(state.player.now, now);
        assert_eq!(state.status.as_deref(), Some("p does nothing here: Part 2 has no power button (Parts 3, 4, 6, 7 and 8 have one)."));
        assert_eq!(crate::url_state::to_query(&state.params), "?part=2");
    }

    #[test]
    fn a_cut_past_the_end_of_the_run_is_refused_with_the_range() {
        let state = LabState::from_query("?part=6&cut=500");
        assert_eq!(state.params.cut, None);
        let problem = state.url_problems[0].to_string();
        assert!(problem.starts_with("cut=500: past the end of the run; give 0 to 16 ms"), "{problem}");
        let state = reduce(state, LabAction::Type(Field::Cut, "250".into()));
        assert_eq!(state.params.cut, None);
        let field = state.field_problem.clone().unwrap();
        assert_eq!(field.field, Field::Cut);
        assert!(field.message.starts_with("250 ms: past the end of the run; give 0 to 16 ms"), "{}", field.message);
        let state = reduce(state, LabAction::Type(Field::Cut, "1e9".into()));
        assert_eq!(state.field_problem.unwrap().message, "1e9: out of range; give 0 to 10000 ms");
    }

    #[test]
    fn a_typed_cut_in_range_cuts_and_is_announced() {
        let state = LabState::from_query("?part=7");
        let state = reduce(state, LabAction::Type(Field::Cut, "13.5".into()));
        assert_eq!(state.params.cut, Some(Nanos(13_500_000)));
        assert!(state.field_problem.is_none());
        assert!(state.status.as_deref().unwrap().starts_with("The power failed at 13.5 ms. "), "{:?}", state.status);
        let state = reduce(state, LabAction::Type(Field::Seed, "many".into()));
        assert_eq!(state.field_problem.as_ref().unwrap().field, Field::Seed);
        assert_eq!(state.params.seed, crate::url_state::PART_7_TORN_SEED, "the seed in use is kept");
    }

    #[test]
    fn the_answer_waits_for_a_prediction_or_a_reveal_and_a_new_cut_asks_again() {
        let state = LabState::from_query("?part=7&cut=13.5");
        assert!(!state.params.answer_shown());
        let state = reduce(state, LabAction::Predict(22));
        assert!(state.params.answer_shown());
        assert_eq!(crate::url_state::to_query(&state.params), "?part=7&cut=13.5&predict=22");
        assert!(state.status.as_deref().unwrap().starts_with("You predicted 22. Recovery found "), "{:?}", state.status);
        let state = reduce(state, LabAction::SetCut(Some(Nanos::from_millis(12))));
        assert!(!state.params.answer_shown(), "a new cut is a new question");
        let state = reduce(state, LabAction::Reveal);
        assert_eq!(crate::url_state::to_query(&state.params), "?part=7&cut=12&reveal=1");
        let state = reduce(state, LabAction::SetCut(None));
        assert_eq!(crate::url_state::to_query(&state.params), "?part=7");
    }

    #[test]
    fn another_seed_or_unit_asks_the_question_again() {
        let state = LabState::from_query("?part=7&cut=13.5&reveal=1");
        let state = reduce(state, LabAction::Set(Setting::UnitBytes(512)));
        assert!(!state.params.answer_shown());
        let state = reduce(state, LabAction::Predict(20));
        let state = reduce(state, LabAction::Type(Field::Seed, "4".into()));
        assert!(!state.params.answer_shown());
        let state = reduce(state, LabAction::Reveal);
        let state = reduce(state, LabAction::Player(PlayerAction::StepBack));
        assert!(state.params.answer_shown(), "moving the playhead keeps the answer");
    }

    #[test]
    fn back_restores_the_view_the_address_names() {
        let state = LabState::from_query("?part=2");
        let state = reduce(state, LabAction::Player(PlayerAction::Faster));
        let state = reduce(state, LabAction::GoToPart(3));
        let speed = state.player.speed_index;
        let state = reduce(state, LabAction::LoadQuery("?part=2".into()));
        assert_eq!(state.params.part, 2);
        assert_eq!(state.player.speed_index, speed, "the speed is the student's, not the link's");
        let state = reduce(state, LabAction::LoadQuery("?part=6&cut=13.5&present=1".into()));
        assert_eq!((state.params.part, state.params.cut, state.params.present), (6, Some(Nanos(13_500_000)), true));
        assert_eq!(state.player.now, Nanos(13_500_000));
    }

    fn remote_trace(backend: walab_core::sim::remote::RemoteBackend) -> Dropped {
        use walab_core::sim::remote::{self, to_trace, Load, RemoteSetup};
        let run = remote::run(&RemoteSetup::new(backend, Load::Writers { writers: 8 }, 40)).unwrap();
        let text = serde_json::to_string(&to_trace(&run, "group")).unwrap();
        match crate::model::dropped::parse_dropped("run.json", &text).unwrap() {
            crate::model::dropped::DroppedFile::Remote(remote) => Dropped::Remote(Rc::new(remote)),
            other => panic!("read as {other:?}"),
        }
    }

    #[test]
    fn a_remote_trace_opens_its_backends_part_and_plays_there_only() {
        use walab_core::sim::remote::RemoteBackend;
        let state = reduce(LabState::from_query("?part=2"), LabAction::LoadTrace(Ok(remote_trace(RemoteBackend::S3))));
        assert_eq!(state.params.part, 13);
        let crate::model::Model::Remote(model) = &*state.model.0 else { panic!("Part 13 runs the remote model") };
        assert_eq!(model.trace.as_ref().unwrap().file_name, "run.json");
        assert_eq!(model.run.as_ref().unwrap().records_acked, 40);
        // Part 14 keeps its own run while an S3 trace is loaded, and Part 13 plays it again.
        let state = reduce(state, LabAction::GoToPart(14));
        let crate::model::Model::Remote(model) = &*state.model.0 else { panic!("Part 14 runs the remote model") };
        assert!(model.trace.is_none());
        let state = reduce(state, LabAction::GoToPart(13));
        let crate::model::Model::Remote(model) = &*state.model.0 else { panic!("Part 13 runs the remote model") };
        assert!(model.trace.is_some());
        let state = reduce(state, LabAction::CloseTrace);
        let crate::model::Model::Remote(model) = &*state.model.0 else { panic!("Part 13 runs the remote model") };
        assert!(model.trace.is_none(), "closed: the lab's own run again");
        let state = reduce(LabState::from_query("?part=5"), LabAction::LoadTrace(Ok(remote_trace(RemoteBackend::Postgres))));
        assert_eq!(state.params.part, 14);
    }

    #[test]
    fn an_unreadable_file_opens_the_part_it_names_or_stays_where_it_was() {
        use crate::model::dropped::DroppedKind;
        use walab_core::sim::remote::RemoteBackend;
        let error = |kind| LabAction::LoadTrace(Err(DropError { message: "x.json: the file is empty".into(), kind }));
        assert_eq!(reduce(LabState::from_query("?part=13"), error(None)).params.part, 13);
        let stays = reduce(LabState::from_query("?part=2"), error(None));
        assert_eq!(stays.params.part, 2);
        assert_eq!(stays.status.as_deref(), Some("That file was not opened: x.json: the file is empty. The page stays on Part 2."));
        let state = reduce(LabState::from_query("?part=2"), error(Some(DroppedKind::Remote(RemoteBackend::Postgres))));
        assert_eq!(state.params.part, 14);
        assert_eq!(state.dropped, Some(Err("x.json: the file is empty".to_string())));
        let crate::model::Model::Remote(model) = &*state.model.0 else { panic!("Part 14 runs the remote model") };
        assert!(model.trace.is_none() && model.run.is_ok(), "the lab's own run stays");
    }

    #[test]
    fn url_problems_are_kept_until_dismissed() {
        let state = LabState::from_query("?part=x");
        assert_eq!(state.url_problems.len(), 1);
        let state = reduce(state, LabAction::DismissUrlProblems);
        assert!(state.url_problems.is_empty());
    }
}
