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

use crate::benches::dropped::{DroppedTrace, MeasuredLatency};
use crate::benches::{self, BenchRef};
use crate::player::{PlayerAction, PlayerState};
use crate::url_state::{parse_query, Fault, Handling, LabParams, PageProtection, Policy, Scenario, UrlProblem, PART_COUNT};

#[derive(Clone, Debug, PartialEq)]
pub struct LabState {
    pub params: LabParams,
    /// What the URL said that the page could not use; shown until dismissed.
    pub url_problems: Vec<UrlProblem>,
    pub player: PlayerState,
    /// The core's runs for the current Part and parameters.
    pub bench: BenchRef,
    /// A trace file dropped onto the page, or why it could not be read.
    pub dropped: Option<Result<Rc<DroppedTrace>, String>>,
    /// A measured sync-latency distribution the simulator uses instead of a fixed L.
    pub latency: Option<Rc<MeasuredLatency>>,
}

impl LabState {
    /// The state a URL query describes.
    pub fn from_query(query: &str) -> LabState {
        let (params, url_problems) = parse_query(query);
        let mut state = LabState { player: PlayerState::default(), params, url_problems, bench: BenchRef::default(), dropped: None, latency: None };
        state.reload_timeline();
        if let Some(cut) = state.params.cut {
            state.player.apply(PlayerAction::Seek(cut));
        }
        state
    }

    /// Runs the current Part's bench and loads its timeline into the player, keeping
    /// the speed.
    fn reload_timeline(&mut self) {
        let speed_index = self.player.speed_index;
        let dropped = self.dropped.as_ref().and_then(|dropped| dropped.as_ref().ok());
        self.bench = benches::build(&self.params, dropped, self.latency.as_ref());
        let timeline = self.bench.0.timeline();
        self.player = PlayerState::for_run(timeline.marks, timeline.end);
        self.player.speed_index = speed_index;
    }
}

/// Everything a component, a key or the clock can ask of the lab.
#[derive(Clone, Debug, PartialEq)]
pub enum LabAction {
    GoToPart(u8),
    Player(PlayerAction),
    SetScenario(Scenario),
    SetPolicy(Policy),
    SetSyncLatency(Nanos),
    SetLoad(u64),
    SetWindow(Nanos),
    SetQuorum(u8),
    SetUnitBytes(u32),
    SetSeed(u64),
    /// Choose (or clear) the instant the power fails.
    SetCut(Option<Nanos>),
    /// Pull the power now, at the playhead.
    CutAtPlayhead,
    SetFault(Fault),
    SetHandling(Handling),
    SetCdc(Option<u64>),
    SetProtection(PageProtection),
    SetEioBatch(u64),
    /// A trace file was read (or failed to parse).
    LoadTrace(Result<Rc<DroppedTrace>, String>),
    CloseTrace,
    /// A measured latency file was read: Parts 0, 5 and 11 simulate with it.
    LoadLatency(Rc<MeasuredLatency>),
    ClearLatency,
    DismissUrlProblems,
    /// Parts 13 and 14: new parameters for the remote WAL's run.
    SetRemote(crate::benches::remote::RemoteParams),
}

impl Reducible for LabState {
    type Action = LabAction;

    fn reduce(self: Rc<Self>, action: LabAction) -> Rc<Self> {
        let mut next = (*self).clone();
        let mut timeline_changed = false;
        let mut playhead_kept = true;
        match action {
            LabAction::GoToPart(part) => {
                if part < PART_COUNT && part != next.params.part {
                    next.params.part = part;
                    next.params.cut = None;
                    timeline_changed = true;
                    playhead_kept = false;
                }
            }
            LabAction::Player(action) => next.player.apply(action),
            LabAction::SetScenario(scenario) => {
                next.params.scenario = scenario;
                timeline_changed = true;
            }
            LabAction::SetPolicy(policy) => {
                next.params.policy = policy;
                timeline_changed = true;
            }
            LabAction::SetSyncLatency(latency) => {
                next.params.sync_latency = latency;
                timeline_changed = true;
            }
            LabAction::SetLoad(load) => {
                next.params.load_per_second = load;
                timeline_changed = true;
            }
            LabAction::SetWindow(window) => {
                next.params.window = window;
                timeline_changed = true;
            }
            LabAction::SetQuorum(w) => {
                next.params.quorum_w = w;
                timeline_changed = true;
            }
            LabAction::SetUnitBytes(unit) => {
                next.params.unit_bytes = unit;
                timeline_changed = true;
            }
            LabAction::SetSeed(seed) => {
                next.params.seed = seed;
                timeline_changed = true;
            }
            LabAction::SetCut(cut) => {
                next.params.cut = cut;
                next.player.apply(PlayerAction::Pause);
                timeline_changed = true;
            }
            LabAction::CutAtPlayhead => {
                next.player.apply(PlayerAction::Pause);
                // Cut on a 0.1 ms grid, so the link and the CLI's --at-ms name the same instant.
                let tenth = 100_000;
                next.params.cut = Some(Nanos(next.player.now.0 / tenth * tenth));
                timeline_changed = true;
            }
            LabAction::SetFault(fault) => {
                next.params.fault = fault;
                timeline_changed = true;
            }
            LabAction::SetHandling(handling) => {
                next.params.handling = handling;
                timeline_changed = true;
            }
            LabAction::SetCdc(seq) => {
                next.params.cdc_confirmed_seq = seq;
                timeline_changed = true;
            }
            LabAction::SetEioBatch(batch) => {
                next.params.eio_batch = batch;
                timeline_changed = true;
            }
            LabAction::SetProtection(protection) => {
                next.params.protection = protection;
                timeline_changed = true;
            }
            LabAction::LoadTrace(result) => {
                next.dropped = Some(result);
                next.params.part = 5;
                next.params.cut = None;
                timeline_changed = true;
                playhead_kept = false;
            }
            LabAction::LoadLatency(latency) => {
                next.latency = Some(latency);
                next.dropped = None;
                next.params.part = 5;
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
            LabAction::SetRemote(remote) => {
                next.params.remote = remote;
                timeline_changed = true;
            }
        }
        if timeline_changed {
            let now = if playhead_kept { next.player.now } else { Nanos::ZERO };
            next.reload_timeline();
            next.player.apply(PlayerAction::Seek(next.params.cut.unwrap_or(now)));
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
    fn choosing_the_unit_reruns_the_cut_and_goes_into_the_link() {
        let state = LabState::from_query("?part=7&cut=13.5");
        let state = reduce(state, LabAction::SetUnitBytes(512));
        assert_eq!(state.params.cut, Some(Nanos(13_500_000)), "the cut is kept");
        let query = crate::url_state::to_query(&state.params);
        assert_eq!(query, "?part=7&unit=512&cut=13.5");
        let crate::benches::Bench::Tiny(bench) = &*state.bench.0 else { panic!("Part 7 runs the tiny store") };
        assert_eq!(bench.cut.as_ref().unwrap().as_ref().unwrap().run.device.unit_bytes(), 512);
        // The shared link opens the same view.
        let opened = LabState::from_query(&query);
        assert_eq!(opened.params, state.params);
        assert!(opened.url_problems.is_empty());
    }

    #[test]
    fn url_problems_are_kept_until_dismissed() {
        let state = LabState::from_query("?part=x");
        assert_eq!(state.url_problems.len(), 1);
        let state = reduce(state, LabAction::DismissUrlProblems);
        assert!(state.url_problems.is_empty());
    }
}
