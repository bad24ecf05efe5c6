//! The keyboard: which key does what, and where keys are left to the page.
//!
//! The lab's keys work wherever focus is (after a click on a button, after dragging the
//! scrubber) except where the student is typing: a text or number field, a drop-down, a
//! text area. A range input (the scrubber, the load slider) and a button are not fields
//! for this purpose: the arrows and space act on the player, and the slider's own arrow
//! handling is prevented, so "step" never turns into "move the slider by 0.01 ms".
//!
//! The table [`KEYS`] is the one list: the key dialog (`?`) and the footer print it.

use crate::player::{action_for_key, PlayerAction};

/// What a key asks of the lab.
#[derive(Clone, Debug, PartialEq)]
pub enum KeyCommand {
    Player(PlayerAction),
    /// `p`: pull the power at the playhead (in a Part with a power button).
    CutPower,
    /// `r`: restore the power (clear the cut).
    RestorePower,
    /// `f`: presenter mode on or off.
    TogglePresent,
    /// `?`: the list of keys.
    ShowKeys,
    /// Escape: close the key list (or the menu).
    Close,
}

/// Every key, as the key dialog lists it.
pub const KEYS: [(&str, &str); 11] = [
    ("space", "play / pause"),
    ("→ or l", "next event"),
    ("← or j", "previous event"),
    ("n", "next event worth talking about (a batch, a failed sync, the power cut)"),
    ("Home / End", "to the start / to the end"),
    ("+ / −", "faster / slower"),
    ("p", "pull the power at the playhead (Parts with a power button)"),
    ("r", "restore the power"),
    ("f", "presenter mode on / off"),
    ("?", "this list of keys"),
    ("Esc", "close this list"),
];

pub fn command_for_key(key: &str) -> Option<KeyCommand> {
    Some(match key {
        "p" | "P" => KeyCommand::CutPower,
        "r" | "R" => KeyCommand::RestorePower,
        "f" | "F" => KeyCommand::TogglePresent,
        "?" => KeyCommand::ShowKeys,
        "Escape" => KeyCommand::Close,
        "−" => KeyCommand::Player(PlayerAction::Slower),
        other => KeyCommand::Player(action_for_key(other)?),
    })
}

/// Whether an element with this tag (upper case, as the DOM gives it) and input type
/// takes typed keys itself, so the lab must leave them alone.
pub fn is_text_field(tag: &str, input_type: &str) -> bool {
    match tag {
        "TEXTAREA" | "SELECT" => true,
        "INPUT" => !matches!(input_type, "range" | "button" | "submit" | "reset" | "checkbox" | "radio" | "file" | "color"),
        _ => false,
    }
}

/// Whether a key pressed on a range input must be kept from the slider (which would
/// otherwise move itself instead of the player stepping).
pub fn slider_must_not_handle(key: &str) -> bool {
    matches!(key, "ArrowLeft" | "ArrowRight" | "ArrowUp" | "ArrowDown" | "Home" | "End" | "PageUp" | "PageDown" | " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sliders_and_buttons_are_not_text_fields() {
        assert!(!is_text_field("INPUT", "range"));
        assert!(!is_text_field("BUTTON", ""));
        assert!(is_text_field("INPUT", "text"));
        assert!(is_text_field("INPUT", "number"));
        assert!(is_text_field("SELECT", ""));
        assert!(slider_must_not_handle("ArrowRight"));
        assert!(!slider_must_not_handle("p"));
    }

    #[test]
    fn every_listed_key_does_something() {
        assert_eq!(command_for_key("p"), Some(KeyCommand::CutPower));
        assert_eq!(command_for_key("r"), Some(KeyCommand::RestorePower));
        assert_eq!(command_for_key("?"), Some(KeyCommand::ShowKeys));
        assert_eq!(command_for_key("n"), Some(KeyCommand::Player(PlayerAction::NextNotable)));
        assert_eq!(command_for_key("Home"), Some(KeyCommand::Player(PlayerAction::ToStart)));
        assert_eq!(command_for_key("x"), None);
        for key in [" ", "ArrowRight", "ArrowLeft", "n", "Home", "End", "+", "-", "p", "r", "f", "?", "Escape"] {
            assert!(command_for_key(key).is_some(), "{key}");
        }
    }
}
