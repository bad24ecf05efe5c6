//! The timeline player: play, pause, step, step back, scrub and speed over any list of
//! timed events.
//!
//! Every model in the lab is "draw the run at time t". The player owns only t: where the
//! playhead is, whether it moves, and how fast. It knows the instants at which something
//! happens (the marks) so that stepping jumps from one event to the next, and it knows
//! where the run ends. It knows nothing about what the events mean, which is why one
//! player serves the group-commit timeline, the recovery scan and a trace file dropped
//! onto the page alike.
//!
//! [`PlayerState`] is plain data with a pure `apply`, tested natively; [`player`] draws
//! the controls and sends [`PlayerAction`]s back up.

use std::rc::Rc;

use walab_core::time::Nanos;

pub use crate::format::format_fixed_millis;
use yew::prelude::*;

/// Playback speeds, in simulated milliseconds per real second. The tiny store's whole
/// run is 14 ms, so at 1 ms/s it plays in 14 seconds.
pub const SPEEDS_MS_PER_SECOND: [f64; 7] = [0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0];
/// The speed a model starts at (1 ms per second).
pub const SPEED_DEFAULT_INDEX: usize = 3;
/// A real-time gap longer than this between two frames (a background tab) is not
/// played through in one jump.
pub const FRAME_GAP_MAX_MS: f64 = 100.0;

/// Where the playhead is and how it moves.
#[derive(Clone, Debug, PartialEq)]
pub struct PlayerState {
    pub now: Nanos,
    pub end: Nanos,
    pub playing: bool,
    pub speed_index: usize,
    /// The instants at which something happens, sorted, without duplicates.
    pub marks: Rc<Vec<Nanos>>,
    /// The marks worth talking about (a batch forming, a failed sync, the power cut),
    /// sorted: the presenter's `n` jumps between them.
    pub notable: Rc<Vec<Nanos>>,
    /// The moment the view opened on, when that is past the run's first step: while the
    /// playhead is there the player says so, and how to start from the beginning.
    pub opened_at: Option<Nanos>,
}

impl Default for PlayerState {
    fn default() -> Self {
        PlayerState {
            now: Nanos::ZERO,
            end: Nanos::ZERO,
            playing: false,
            speed_index: SPEED_DEFAULT_INDEX,
            marks: Rc::new(Vec::new()),
            notable: Rc::new(Vec::new()),
            opened_at: None,
        }
    }
}

/// What the controls (or the keyboard, or the animation clock) ask of the player.
#[derive(Clone, Debug, PartialEq)]
pub enum PlayerAction {
    /// Start, or restart from 0 when the playhead is at the end.
    Play,
    Pause,
    Toggle,
    /// Jump to the next event after the playhead.
    StepForward,
    /// Jump to the last event before the playhead.
    StepBack,
    /// Jump to the next notable event (or the next event, when none is notable).
    NextNotable,
    /// Move the playhead (clamped to the run).
    Seek(Nanos),
    ToStart,
    ToEnd,
    Faster,
    Slower,
    SetSpeed(usize),
    /// The animation clock: this much real time has passed since the previous frame.
    Frame { elapsed_ms: f64 },
}

impl PlayerState {
    /// A player for a run with these event instants (any order, duplicates allowed),
    /// ending at `end` (or at the last event if that is later).
    pub fn for_run(mut marks: Vec<Nanos>, end: Nanos) -> PlayerState {
        walab_core::sort::sort(&mut marks);
        marks.dedup();
        let end = end.max(marks.last().copied().unwrap_or(Nanos::ZERO));
        PlayerState { end, marks: Rc::new(marks), ..PlayerState::default() }
    }

    pub fn speed_ms_per_second(&self) -> f64 {
        SPEEDS_MS_PER_SECOND[self.speed_index.min(SPEEDS_MS_PER_SECOND.len() - 1)]
    }

    /// The index of the last mark at or before the playhead, if any.
    pub fn current_mark(&self) -> Option<usize> {
        self.marks.partition_point(|mark| *mark <= self.now).checked_sub(1)
    }

    pub fn apply(&mut self, action: PlayerAction) {
        match action {
            PlayerAction::Play => {
                if self.now >= self.end {
                    self.now = Nanos::ZERO;
                }
                self.playing = self.end > Nanos::ZERO;
            }
            PlayerAction::Pause => self.playing = false,
            PlayerAction::Toggle => {
                let action = if self.playing { PlayerAction::Pause } else { PlayerAction::Play };
                self.apply(action);
            }
            PlayerAction::StepForward => {
                self.playing = false;
                // The marks are sorted: a binary search, not a walk (a recorded run has
                // hundreds of thousands of them).
                let next = self.marks.get(self.marks.partition_point(|mark| *mark <= self.now)).copied();
                self.now = next.unwrap_or(self.end);
            }
            PlayerAction::NextNotable => {
                if self.notable.is_empty() {
                    return self.apply(PlayerAction::StepForward);
                }
                self.playing = false;
                let next = self.notable.get(self.notable.partition_point(|mark| *mark <= self.now)).copied();
                self.now = next.unwrap_or(self.end).min(self.end);
            }
            PlayerAction::StepBack => {
                self.playing = false;
                let previous = self.marks.partition_point(|mark| *mark < self.now).checked_sub(1).map(|at| self.marks[at]);
                self.now = previous.unwrap_or(Nanos::ZERO);
            }
            PlayerAction::Seek(at) => self.now = at.min(self.end),
            PlayerAction::ToStart => {
                self.playing = false;
                self.now = Nanos::ZERO;
            }
            PlayerAction::ToEnd => {
                self.playing = false;
                self.now = self.end;
            }
            PlayerAction::Faster => self.speed_index = (self.speed_index + 1).min(SPEEDS_MS_PER_SECOND.len() - 1),
            PlayerAction::Slower => self.speed_index = self.speed_index.saturating_sub(1),
            PlayerAction::SetSpeed(index) => self.speed_index = index.min(SPEEDS_MS_PER_SECOND.len() - 1),
            PlayerAction::Frame { elapsed_ms } => {
                if !self.playing {
                    return;
                }
                let elapsed_ms = elapsed_ms.clamp(0.0, FRAME_GAP_MAX_MS);
                // Display-only arithmetic: the playhead's position never decides an outcome.
                let advance = (elapsed_ms * self.speed_ms_per_second() * 1_000.0).round() as u64;
                self.now = Nanos(self.now.0.saturating_add(advance)).min(self.end);
                if self.now >= self.end {
                    self.playing = false;
                }
            }
        }
    }
}

/// Maps a key to a player action: space plays and pauses, the arrows step, `n` jumps to
/// the next notable event, Home and End jump, `+` and `-` change speed.
pub fn action_for_key(key: &str) -> Option<PlayerAction> {
    Some(match key {
        " " | "k" => PlayerAction::Toggle,
        "ArrowRight" | "l" => PlayerAction::StepForward,
        "ArrowLeft" | "j" => PlayerAction::StepBack,
        "n" => PlayerAction::NextNotable,
        "Home" => PlayerAction::ToStart,
        "End" => PlayerAction::ToEnd,
        "+" | "=" | "]" => PlayerAction::Faster,
        "-" | "[" => PlayerAction::Slower,
        _ => return None,
    })
}

/// What the player draws; `..PlayerProps::default()` fills what a Part leaves out.
pub struct PlayerProps {
    pub state: PlayerState,
    pub on_action: Callback<PlayerAction>,
    /// What the marks are called in the step buttons' titles ("event", "batch", "check").
    pub mark_name: AttrValue,
    /// What the step at the playhead did, in words: shown under the controls in an
    /// `aria-live` region, so a screen reader says it as the student steps.
    pub caption: Option<AttrValue>,
    /// How the playhead is labelled: a simulated time, or (for runs whose marks are steps
    /// of an algorithm rather than instants) the step number alone.
    pub clock: Clock,
    /// Where the scrubber starts: the run's start, or (a run whose steps begin later, as
    /// Part 10's at the fork) the first step, so the scrubber and the steps agree.
    pub scrub_from: Nanos,
}

impl Default for PlayerProps {
    fn default() -> Self {
        PlayerProps {
            state: PlayerState::default(),
            on_action: Callback::noop(),
            mark_name: AttrValue::Static("event"),
            caption: None,
            clock: Clock::default(),
            scrub_from: Nanos::ZERO,
        }
    }
}

/// The label of the playhead.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Clock {
    /// "t = 3.40 ms": the marks are instants of a simulated run.
    #[default]
    Millis,
    /// "step 3 of 12": the marks are steps with no duration (a scan, REDO, an append).
    Steps,
}

/// The player's controls: buttons, a scrubber over the run, the speed and the time. A
/// function, not a component: it keeps no state of its own.
pub fn player(props: &PlayerProps) -> Html {
    let state = &props.state;
    let send = |action: PlayerAction| {
        let on_action = props.on_action.clone();
        Callback::from(move |_: MouseEvent| on_action.emit(action.clone()))
    };
    let on_scrub = {
        let on_action = props.on_action.clone();
        Callback::from(move |event: InputEvent| {
            let input: web_sys::HtmlInputElement = event.target_unchecked_into();
            if let Ok(micros) = input.value().parse::<u64>() {
                on_action.emit(PlayerAction::Seek(Nanos::from_micros(micros)));
            }
        })
    };
    let on_speed = {
        let on_action = props.on_action.clone();
        Callback::from(move |event: Event| {
            let select: web_sys::HtmlSelectElement = event.target_unchecked_into();
            if let Ok(index) = select.value().parse::<usize>() {
                on_action.emit(PlayerAction::SetSpeed(index));
            }
        })
    };
    let speeds = SPEEDS_MS_PER_SECOND.iter().enumerate().map(|(index, speed)| {
        html! { <option value={index.to_string()} selected={index == state.speed_index}>{ format!("{speed} ms/s") }</option> }
    });
    let mark_name = props.mark_name.clone();
    // Which of the run's marks the playhead has passed: "step 3 of 52" (0 before the first).
    let passed = state.current_mark().map_or(0, |index| index + 1);
    let play_label = if state.playing { "⏸ pause" } else { "▶ play" };
    html! {
        <div class="player" role="group" aria-label="timeline player">
            <button class="to-start" title="to the start (Home)" aria-label="to the start (Home)" onclick={send(PlayerAction::ToStart)}>{ "⇤" }</button>
            <button class="step-back" title={format!("previous {mark_name} (←)")} onclick={send(PlayerAction::StepBack)}>{ "◀ step" }</button>
            <button class="play" title="play / pause (space)" onclick={send(PlayerAction::Toggle)}>{ play_label }</button>
            <button class="step-forward" title={format!("next {mark_name} (→)")} onclick={send(PlayerAction::StepForward)}>{ "step ▶" }</button>
            <button class="to-end" title="to the end (End)" aria-label="to the end (End)" onclick={send(PlayerAction::ToEnd)}>{ "⇥" }</button>
            <input class="scrub" type="range" aria-label="playhead" aria-valuetext={format!("t = {} ms, step {passed} of {}", format_fixed_millis(state.now), state.marks.len())}
                min={(props.scrub_from.0 / 1_000).to_string()} max={(state.end.0 / 1_000).to_string()} step="10"
                value={(state.now.0 / 1_000).to_string()} oninput={on_scrub} />
            if props.clock == Clock::Millis {
                <span class="now" data-now-ns={state.now.0.to_string()}>{ format!("t = {} ms", format_fixed_millis(state.now)) }</span>
            }
            <span class="mark-count" data-mark={passed.to_string()} title="the steps (events) the playhead has passed">{ format!("step {passed} of {}", state.marks.len()) }</span>
            <label class="speed">{ "speed " }<select onchange={on_speed}>{ for speeds }</select></label>
            if let Some(caption) = props.caption.clone() {
                <p class="caption" aria-live="polite" data-mark={passed.to_string()} data-opened-mid-run={(state.opened_at == Some(state.now) && passed > 1).then_some("")}>{ caption_html(&caption) }</p>
            }
        </div>
    }
}

/// A caption's one idea (its first line, when it has two), then its details.
fn caption_html(caption: &str) -> Html {
    match caption.split_once('\n') {
        Some((idea, details)) => html! { <><strong class="idea">{ idea.to_string() }</strong>{ " " }<span class="details">{ details.to_string() }</span></> },
        None => html! { { caption.to_string() } },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(millis: u64) -> Nanos {
        Nanos::from_millis(millis)
    }

    #[test]
    fn steps_walk_the_marks_and_stop_at_the_ends() {
        let mut player = PlayerState::for_run(vec![ms(3), ms(1), ms(3), ms(2)], ms(5));
        assert_eq!(*player.marks, [ms(1), ms(2), ms(3)]);
        player.apply(PlayerAction::StepForward);
        assert_eq!(player.now, ms(1));
        player.apply(PlayerAction::StepForward);
        player.apply(PlayerAction::StepForward);
        assert_eq!(player.now, ms(3));
        assert_eq!(player.current_mark(), Some(2));
        player.apply(PlayerAction::StepForward);
        assert_eq!(player.now, ms(5));
        player.apply(PlayerAction::StepBack);
        assert_eq!(player.now, ms(3));
        player.apply(PlayerAction::Seek(Nanos::from_micros(500)));
        assert_eq!(player.current_mark(), None);
        player.apply(PlayerAction::StepBack);
        assert_eq!(player.now, Nanos::ZERO);
    }

    #[test]
    fn frames_advance_by_speed_and_stop_at_the_end() {
        let mut player = PlayerState::for_run(vec![ms(1)], ms(2));
        player.apply(PlayerAction::Frame { elapsed_ms: 16.0 });
        assert_eq!(player.now, Nanos::ZERO, "a paused player does not move");
        player.apply(PlayerAction::Play);
        player.apply(PlayerAction::Frame { elapsed_ms: 500.0 });
        assert_eq!(player.now, Nanos::from_micros(100), "gaps are capped at 100 ms of real time");
        player.apply(PlayerAction::Frame { elapsed_ms: 50.0 });
        assert_eq!(player.now, Nanos::from_micros(150), "1 ms/s: 50 ms real is 50 us simulated");
        player.apply(PlayerAction::SetSpeed(6));
        for _ in 0..100 {
            player.apply(PlayerAction::Frame { elapsed_ms: 100.0 });
        }
        assert_eq!(player.now, ms(2));
        assert!(!player.playing);
        player.apply(PlayerAction::Play);
        assert_eq!(player.now, Nanos::ZERO, "play at the end restarts");
    }

    #[test]
    fn speed_stays_in_range_and_seek_is_clamped() {
        let mut player = PlayerState::for_run(vec![], ms(4));
        for _ in 0..20 {
            player.apply(PlayerAction::Slower);
        }
        assert_eq!(player.speed_index, 0);
        player.apply(PlayerAction::SetSpeed(99));
        assert_eq!(player.speed_index, SPEEDS_MS_PER_SECOND.len() - 1);
        player.apply(PlayerAction::Seek(ms(40)));
        assert_eq!(player.now, ms(4));
    }

    #[test]
    fn next_notable_skips_the_ordinary_marks() {
        let mut player = PlayerState::for_run(vec![ms(1), ms(2), ms(3), ms(4)], ms(5));
        player.apply(PlayerAction::NextNotable);
        assert_eq!(player.now, ms(1), "without notable marks, n steps");
        player.notable = Rc::new(vec![ms(3)]);
        player.apply(PlayerAction::NextNotable);
        assert_eq!(player.now, ms(3));
        player.apply(PlayerAction::NextNotable);
        assert_eq!(player.now, ms(5), "after the last notable mark, the end");
    }

    #[test]
    fn keys_map_to_actions() {
        assert_eq!(action_for_key(" "), Some(PlayerAction::Toggle));
        assert_eq!(action_for_key("ArrowLeft"), Some(PlayerAction::StepBack));
        assert_eq!(action_for_key("x"), None);
        assert_eq!(format_fixed_millis(Nanos(13_456_000)), "13.46");
    }
}
