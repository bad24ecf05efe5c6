//! The power cut, acted on in the figure itself.
//!
//! A figure with a time axis (the lanes of Parts 3, 6 and 7; any Part with a power button
//! can reuse it) lays a [`CutHandle`] over its drawing, told where its axis runs:
//!
//! - the cut line has a grip: drag it along the timeline to choose the millisecond the
//!   power fails (while the power is on, the line waits at the playhead, dashed); on
//!   release the power is cut there (`LabAction::SetCut`, so the link and the run change,
//!   not a picture). A press on the time axis moves the line there and drags it too;
//! - the plug in the corner of the drawing pulls the power at the playhead, or plugs it
//!   back in;
//! - the keyboard: the grip is a slider; the arrows move it to the previous or next event,
//!   Shift+arrows by 1 ms (the events are the whole run's, also after a cut), Home and End to the ends, Enter cuts the power there, Escape
//!   puts it back. Its value is spoken (`aria-valuetext`) and the chosen moment is said
//!   in a live region; the cut itself is announced by the lab's status line.
//!
//! While it is dragged or moved by key before Enter, the handle only previews; while the
//! power is on the playhead follows the preview, so the figure shows that moment.

use std::rc::Rc;

use walab_core::time::Nanos;
use yew::prelude::*;

use crate::player::PlayerAction;
use crate::state::LabAction;
use crate::url_state::format_millis;

/// Where a figure's time axis runs, as fractions of the figure's drawn width, and the
/// instant at its right end.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimeAxis {
    /// The axis' 0 ms, as a fraction of the drawing's width.
    pub left: f64,
    /// The axis' `end`, as a fraction of the drawing's width.
    pub right: f64,
    pub end: Nanos,
    /// The bottom band that carries the tick labels, as a fraction of the drawing's
    /// height (a press there moves the cut line).
    pub ruler: f64,
}

impl TimeAxis {
    /// The fraction of the drawing's width at `at`.
    pub fn fraction(&self, at: Nanos) -> f64 {
        let end = self.end.0.max(1) as f64;
        self.left + (at.0.min(self.end.0) as f64 / end) * (self.right - self.left)
    }

    /// The instant at a fraction of the drawing's width, on the 0.1 ms grid cuts are made
    /// on (so the link and the command line's `--at-ms` name the same instant), inside
    /// the axis.
    pub fn instant(&self, fraction: f64) -> Nanos {
        let span = (self.right - self.left).max(1e-9);
        let along = ((fraction - self.left) / span).clamp(0.0, 1.0);
        snap(Nanos((along * self.end.0 as f64).round() as u64), self.end)
    }
}

/// An instant on the 0.1 ms grid, at most `end` (rounded down past it).
pub fn snap(at: Nanos, end: Nanos) -> Nanos {
    let tenth = 100_000;
    let snapped = Nanos((at.0 + tenth / 2) / tenth * tenth);
    if snapped > end { Nanos(end.0 / tenth * tenth) } else { snapped }
}

/// Where a key moves the handle from `at`: an event back or on, or 1 ms with Shift.
pub fn key_move(key: &str, shift: bool, at: Nanos, marks: &[Nanos], end: Nanos) -> Option<Nanos> {
    let millisecond = 1_000_000;
    Some(match (key, shift) {
        ("ArrowRight" | "ArrowUp", true) => Nanos(at.0.saturating_add(millisecond)).min(end),
        ("ArrowLeft" | "ArrowDown", true) => Nanos(at.0.saturating_sub(millisecond)),
        // Past the last event, a millisecond at a time (never a leap to the axis' end).
        ("ArrowRight" | "ArrowUp", false) => marks.iter().copied().find(|mark| *mark > at).unwrap_or(Nanos(at.0.saturating_add(millisecond))).min(end),
        ("ArrowLeft" | "ArrowDown", false) => marks.iter().rev().copied().find(|mark| *mark < at).unwrap_or(Nanos::ZERO),
        ("PageUp", _) => Nanos(at.0.saturating_add(millisecond)).min(end),
        ("PageDown", _) => Nanos(at.0.saturating_sub(millisecond)),
        ("Home", _) => Nanos::ZERO,
        ("End", _) => end,
        _ => return None,
    })
}

#[derive(Properties, PartialEq)]
pub struct CutHandleProps {
    pub axis: TimeAxis,
    pub now: Nanos,
    pub cut: Option<Nanos>,
    /// The run's events, which the arrows step between.
    pub marks: Rc<Vec<Nanos>>,
    pub on_action: Callback<LabAction>,
}

/// The cut line's grip, the time axis as a place to press, and the plug.
#[component]
pub fn CutHandle(props: &CutHandleProps) -> Html {
    // The previewed instant while the grip is dragged or moved by key (before Enter).
    let pending = use_state_eq(|| None::<Nanos>);
    let dragging = use_mut_ref(|| false);
    let track = use_node_ref();
    let grip = use_node_ref();
    let axis = props.axis;
    let end = axis.end;
    let resting = props.cut.unwrap_or(props.now.min(end));
    let shown = (*pending).unwrap_or(resting);
    // Previewing while the power is on moves the playhead with the line.
    let preview = {
        let (pending, on_action, powered) = (pending.clone(), props.on_action.clone(), props.cut.is_none());
        move |at: Nanos| {
            pending.set(Some(at));
            if powered {
                on_action.emit(LabAction::Player(PlayerAction::Seek(at)));
            }
        }
    };
    let at_pointer = {
        let track = track.clone();
        move |event: &PointerEvent| -> Option<Nanos> {
            let element = track.cast::<web_sys::Element>()?;
            let rect = element.get_bounding_client_rect();
            (rect.width() > 0.0).then(|| axis.instant((f64::from(event.client_x()) - rect.left()) / rect.width()))
        }
    };
    let on_down = {
        let (dragging, preview, at_pointer, grip) = (dragging.clone(), preview.clone(), at_pointer.clone(), grip.clone());
        let on_action = props.on_action.clone();
        Callback::from(move |event: PointerEvent| {
            if event.button() != 0 {
                return;
            }
            event.prevent_default();
            // The grip takes the pointer (a press on the ruler too), so its handlers see the
            // moves and the release wherever the pointer goes. (Yew delegates events, so the
            // event's current target is not the grip.)
            if let Some(grip) = grip.cast::<web_sys::HtmlElement>() {
                let _ = grip.set_pointer_capture(event.pointer_id());
                let _ = grip.focus();
            }
            on_action.emit(LabAction::Player(PlayerAction::Pause));
            *dragging.borrow_mut() = true;
            if let Some(at) = at_pointer(&event) {
                preview(at);
            }
        })
    };
    let on_move = {
        let (dragging, preview, at_pointer) = (dragging.clone(), preview.clone(), at_pointer.clone());
        Callback::from(move |event: PointerEvent| {
            if *dragging.borrow() {
                if let Some(at) = at_pointer(&event) {
                    preview(at);
                }
            }
        })
    };
    let on_up = {
        let (dragging, pending, at_pointer) = (dragging.clone(), pending.clone(), at_pointer.clone());
        let on_action = props.on_action.clone();
        Callback::from(move |event: PointerEvent| {
            if !std::mem::replace(&mut *dragging.borrow_mut(), false) {
                return;
            }
            let at = at_pointer(&event).or(*pending);
            pending.set(None);
            if let Some(at) = at {
                on_action.emit(LabAction::SetCut(Some(at)));
            }
        })
    };
    let on_cancel = {
        let (dragging, pending) = (dragging.clone(), pending.clone());
        Callback::from(move |_: PointerEvent| {
            *dragging.borrow_mut() = false;
            pending.set(None);
        })
    };
    let on_key = {
        let (pending, preview) = (pending.clone(), preview.clone());
        let (on_action, marks, now) = (props.on_action.clone(), props.marks.clone(), props.now);
        Callback::from(move |event: KeyboardEvent| {
            let key = event.key();
            let from = (*pending).unwrap_or(resting);
            if key == "Enter" {
                event.prevent_default();
                pending.set(None);
                on_action.emit(LabAction::SetCut(Some(snap(from, end))));
            } else if key == "Escape" {
                if pending.is_some() {
                    event.prevent_default();
                    pending.set(None);
                    if resting == now.min(end) {
                        on_action.emit(LabAction::Player(PlayerAction::Seek(resting)));
                    }
                }
            } else if let Some(to) = key_move(&key, event.shift_key(), from, &marks, end) {
                event.prevent_default();
                on_action.emit(LabAction::Player(PlayerAction::Pause));
                preview(to);
            }
        })
    };
    let on_blur = {
        let pending = pending.clone();
        Callback::from(move |_: FocusEvent| pending.set(None))
    };
    let position = format!("{:.3}%", axis.fraction(shown) * 100.0);
    // The knob leans inward as it nears either edge, so it never leaves the figure.
    let knob_lean = format!("transform: translateX({:.1}%)", -100.0 * axis.fraction(shown).clamp(0.0, 1.0));
    let value_text = match (*pending, props.cut) {
        (Some(at), _) => format!("{} ms: Enter pulls the power here", format_millis(at)),
        (None, Some(cut)) => format!("the power failed at {} ms; move to choose another moment", format_millis(cut)),
        (None, None) => format!("{} ms, the playhead: Enter pulls the power here", format_millis(shown)),
    };
    // The plug: pulled, the power fails at the playhead; pushed back in, it returns.
    let (plug_label, plug_action, plug_state) = match props.cut {
        None => (format!("pull the plug at {} ms (p)", format_millis(crate::format::shown_instant(props.now))), LabAction::CutAtPlayhead, "in"),
        Some(cut) => (format!("power failed at {} ms: plug back in (r)", format_millis(cut)), LabAction::SetCut(None), "pulled"),
    };
    let on_plug = props.on_action.reform(move |_: MouseEvent| plug_action.clone());
    let state = if pending.is_some() { "moving" } else if props.cut.is_some() { "cut" } else { "armed" };
    // Until the power is pulled, the knob offers a cut (it is not one): a question, drawn
    // dashed; once pulled it says the power is off.
    let knob_text = match state {
        "armed" => format!("cut here? {} ms", format_millis(shown)),
        "cut" => format!("⚡ power off at {} ms", format_millis(shown)),
        _ => format!("⚡ {} ms", format_millis(shown)),
    };
    html! {
        <div class="cut-track" ref={track} data-state={state} data-at-ns={shown.0.to_string()}
            style={format!("--ruler-fraction: {:.4}", axis.ruler)}>
            <div class="cut-ruler" aria-hidden="true" title="press or drag on the time axis to choose when the power fails"
                onpointerdown={on_down.clone()} onpointermove={on_move.clone()} onpointerup={on_up.clone()} onpointercancel={on_cancel.clone()} />
            <div class="cut-grip" ref={grip} style={format!("left: {position}")} role="slider" tabindex="0"
                aria-label="the power cut: drag, or use the arrows, then Enter"
                aria-valuemin="0" aria-valuemax={format!("{:.1}", end.as_millis_f64())}
                aria-valuenow={format!("{:.1}", shown.as_millis_f64())} aria-valuetext={value_text.clone()}
                title="drag to choose when the power fails; ← → an event, Shift 1 ms, Enter cuts"
                onpointerdown={on_down} onpointermove={on_move} onpointerup={on_up} onpointercancel={on_cancel}
                onkeydown={on_key} onblur={on_blur}>
                <span class="cut-knob" aria-hidden="true" style={knob_lean}>{ knob_text }</span>
            </div>
            <span class="visually-hidden" aria-live="polite">{ pending.map(|_| value_text).unwrap_or_default() }</span>
            <button class="plug" data-state={plug_state} onclick={on_plug} title={plug_label.clone()} aria-label={plug_label}>
                <svg class="plug-icon" viewBox="0 0 32 20" aria-hidden="true">
                    <rect class="socket" x="1" y="2" width="9" height="16" rx="2" />
                    <path class="plug-body" d="M14 4h10v12h-10z M14 7.5h-4 M14 12.5h-4 M24 10h7" />
                </svg>
            </button>
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const END: Nanos = Nanos(16_000_000);

    #[test]
    fn the_axis_maps_both_ways_on_the_tenth_grid() {
        let axis = TimeAxis { left: 0.1, right: 0.9, end: END, ruler: 0.1 };
        assert_eq!(axis.instant(0.1), Nanos::ZERO);
        assert_eq!(axis.instant(0.9), END);
        assert_eq!(axis.instant(0.5), Nanos(8_000_000));
        assert_eq!(axis.instant(0.0), Nanos::ZERO, "left of the axis is its start");
        assert_eq!(axis.instant(1.2), END, "right of it, its end");
        let at = Nanos(13_500_000);
        assert_eq!(axis.instant(axis.fraction(at)), at);
        assert_eq!(snap(Nanos(13_460_000), END), Nanos(13_500_000));
        assert_eq!(snap(Nanos(15_990_000), Nanos(15_990_000)), Nanos(15_900_000), "never past the end");
    }

    #[test]
    fn keys_step_between_events_or_by_a_millisecond() {
        let marks = [Nanos(1_000_000), Nanos(2_500_000), Nanos(4_000_000)];
        let at = Nanos(2_500_000);
        assert_eq!(key_move("ArrowRight", false, at, &marks, END), Some(Nanos(4_000_000)));
        assert_eq!(key_move("ArrowLeft", false, at, &marks, END), Some(Nanos(1_000_000)));
        assert_eq!(key_move("ArrowRight", true, at, &marks, END), Some(Nanos(3_500_000)));
        assert_eq!(key_move("ArrowLeft", true, Nanos(500_000), &marks, END), Some(Nanos::ZERO));
        assert_eq!(key_move("ArrowRight", false, Nanos(4_000_000), &marks, END), Some(Nanos(5_000_000)), "after the last event, 1 ms on");
        assert_eq!(key_move("End", false, at, &marks, END), Some(END));
        assert_eq!(key_move("x", false, at, &marks, END), None);
    }
}
