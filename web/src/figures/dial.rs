//! A handle the student drags inside a figure to choose one of a few values (the load in
//! writes a second, say): a track with a stop per value and a knob on the chosen one.
//!
//! Pointer: press anywhere on the track and drag; the knob follows the nearest stop and
//! each new stop is sent at once, so the figure redraws while the pointer moves. Keyboard:
//! it is a focusable `role="slider"`; the arrow keys move one stop, Home and End to the
//! ends (its keys are its own: they do not reach the player). Screen readers hear the
//! stop's words (`aria-valuetext`) and the `announce` sentence the figure gives for the
//! new value, from a polite live region.

use wasm_bindgen::JsCast;
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct DialProps {
    /// What the dial chooses ("load"), its accessible name.
    pub label: AttrValue,
    /// Each stop's words, in order ("100 writes/s").
    pub stops: Vec<AttrValue>,
    /// The stop chosen now.
    pub index: usize,
    /// A new stop was chosen.
    pub on_change: Callback<usize>,
    /// What the figure says about the chosen value, announced when it changes.
    #[prop_or_default]
    pub announce: AttrValue,
    /// The words under the track's two ends.
    #[prop_or_default]
    pub ends: Option<(AttrValue, AttrValue)>,
}

/// The stop under a pointer at `x` on a track from `left` of `width` pixels.
pub fn stop_at(x: f64, left: f64, width: f64, stops: usize) -> usize {
    if stops < 2 || width <= 0.0 {
        return 0;
    }
    let fraction = ((x - left) / width).clamp(0.0, 1.0);
    (fraction * (stops - 1) as f64).round() as usize
}

/// The stop a key moves to from `index`, if the key is the dial's.
pub fn stop_for_key(key: &str, index: usize, stops: usize) -> Option<usize> {
    let last = stops.saturating_sub(1);
    match key {
        "ArrowRight" | "ArrowUp" => Some((index + 1).min(last)),
        "ArrowLeft" | "ArrowDown" => Some(index.saturating_sub(1)),
        "PageUp" => Some((index + 3).min(last)),
        "PageDown" => Some(index.saturating_sub(3)),
        "Home" => Some(0),
        "End" => Some(last),
        _ => None,
    }
}

#[component]
pub fn Dial(props: &DialProps) -> Html {
    let track = use_node_ref();
    let dragging = use_mut_ref(|| false);
    let count = props.stops.len().max(1);
    let index = props.index.min(count - 1);
    let pick = {
        let (track, on_change, current) = (track.clone(), props.on_change.clone(), index);
        move |x: f64| {
            let Some(element) = track.cast::<web_sys::Element>() else { return };
            let rect = element.get_bounding_client_rect();
            let stop = stop_at(x, rect.left(), rect.width(), count);
            if stop != current {
                on_change.emit(stop);
            }
        }
    };
    let on_down = {
        let (pick, dragging) = (pick.clone(), dragging.clone());
        Callback::from(move |event: PointerEvent| {
            event.prevent_default();
            if let Some(target) = event.target().and_then(|target| target.dyn_into::<web_sys::Element>().ok()) {
                let _ = target.set_pointer_capture(event.pointer_id());
                if let Some(html) = target.dyn_ref::<web_sys::HtmlElement>() {
                    let _ = html.focus();
                }
            }
            *dragging.borrow_mut() = true;
            pick(f64::from(event.client_x()));
        })
    };
    let on_move = {
        let (pick, dragging) = (pick.clone(), dragging.clone());
        Callback::from(move |event: PointerEvent| {
            if *dragging.borrow() {
                pick(f64::from(event.client_x()));
            }
        })
    };
    let on_up = {
        let dragging = dragging.clone();
        Callback::from(move |_: PointerEvent| *dragging.borrow_mut() = false)
    };
    // The stop last asked for: keys pressed faster than the figure redraws (each stop
    // reruns the simulator) still move one stop each.
    let asked = use_mut_ref(|| index);
    *asked.borrow_mut() = index;
    let on_key = {
        let on_change = props.on_change.clone();
        Callback::from(move |event: KeyboardEvent| {
            if event.ctrl_key() || event.meta_key() || event.alt_key() {
                return;
            }
            let from = *asked.borrow();
            if let Some(stop) = stop_for_key(&event.key(), from, count) {
                // The dial's own keys: the player's listener on the document never sees them.
                event.prevent_default();
                event.stop_propagation();
                if stop != from {
                    *asked.borrow_mut() = stop;
                    on_change.emit(stop);
                }
            }
        })
    };
    let at = if count > 1 { index as f64 / (count - 1) as f64 * 100.0 } else { 0.0 };
    let words = props.stops.get(index).cloned().unwrap_or_default();
    let ticks = (0..count).map(|stop| {
        let left = if count > 1 { stop as f64 / (count - 1) as f64 * 100.0 } else { 0.0 };
        html! { <span class={classes!("dial-stop", (stop <= index).then_some("below"))} style={format!("left: {left:.2}%")}></span> }
    });
    html! {
        <div class="dial" data-dial={props.label.clone()} data-index={index.to_string()}>
            <div class="dial-track" ref={track} role="slider" tabindex="0" aria-label={props.label.clone()}
                aria-valuemin="0" aria-valuemax={(count - 1).to_string()} aria-valuenow={index.to_string()} aria-valuetext={words.clone()}
                onpointerdown={on_down} onpointermove={on_move} onpointerup={on_up.clone()} onpointercancel={on_up} onkeydown={on_key}>
                <span class="dial-fill" style={format!("width: {at:.2}%")}></span>
                { for ticks }
                <span class={classes!("dial-knob", (at < 20.0).then_some("near-start"), (at > 80.0).then_some("near-end"))} style={format!("left: {at:.2}%")}><span class="dial-value">{ words.clone() }</span></span>
            </div>
            if let Some((low, high)) = &props.ends {
                <div class="dial-ends"><span>{ low.clone() }</span><span>{ high.clone() }</span></div>
            }
            <p class="visually-hidden" aria-live="polite">{ props.announce.clone() }</p>
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pointer_picks_the_nearest_stop() {
        assert_eq!(stop_at(0.0, 10.0, 120.0, 13), 0);
        assert_eq!(stop_at(130.0, 10.0, 120.0, 13), 12);
        assert_eq!(stop_at(70.0, 10.0, 120.0, 13), 6);
        assert_eq!(stop_at(74.0, 10.0, 120.0, 13), 6);
        assert_eq!(stop_at(76.0, 10.0, 120.0, 13), 7);
        assert_eq!(stop_at(50.0, 10.0, 0.0, 13), 0);
    }

    #[test]
    fn keys_move_a_stop_and_stay_on_the_track() {
        assert_eq!(stop_for_key("ArrowRight", 12, 13), Some(12));
        assert_eq!(stop_for_key("ArrowLeft", 0, 13), Some(0));
        assert_eq!(stop_for_key("ArrowUp", 3, 13), Some(4));
        assert_eq!(stop_for_key("End", 3, 13), Some(12));
        assert_eq!(stop_for_key("p", 3, 13), None);
    }
}
