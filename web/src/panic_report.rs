//! What the page shows when its code fails.
//!
//! The page is built with `panic = "abort"` (smaller and faster), so a panic cannot be
//! caught and recovered from: the WebAssembly instance stops, and every later click or
//! key would reach a dead program. Left alone, the student sees a page that no longer
//! answers, or a blank one when the failure happens while the first view is built.
//!
//! A panic hook runs before the abort. This one writes, into the page itself, a notice
//! that covers the dead controls: what failed (the panic's message and where in the
//! code), that the page has stopped, and the link of the view that failed, which opens
//! the same view again, so the link is the bug report. It uses only the browser's DOM
//! calls and never panics itself: a failure inside the hook would hide the first one.

use wasm_bindgen::JsCast;

/// The notice's element id (the browser tests look for it).
pub const NOTICE_ID: &str = "lab-failed";

/// The sentence and the details the notice shows for a panic.
pub fn describe(message: &str, location: Option<(&str, u32)>) -> (String, String) {
    let headline = "The lab stopped: part of its code failed, and this page cannot go on.".to_string();
    let details = match location {
        Some((file, line)) => format!("{message} (at {file}:{line})"),
        None => message.to_string(),
    };
    (headline, details)
}

/// The panic's message, from its payload.
fn payload_text(info: &std::panic::PanicHookInfo<'_>) -> String {
    if let Some(text) = info.payload().downcast_ref::<&str>() {
        (*text).to_string()
    } else if let Some(text) = info.payload().downcast_ref::<String>() {
        text.clone()
    } else {
        "a panic without a message".to_string()
    }
}

/// Installs the hook. Call it first thing, before the first view is built. It goes
/// through Yew, whose renderer otherwise replaces any hook with its own console logger.
pub fn install() {
    yew::set_custom_panic_hook(Box::new(|info| {
        let message = payload_text(info);
        let location = info.location().map(|location| (location.file(), location.line()));
        let (headline, details) = describe(&message, location);
        web_sys::console::error_1(&format!("walab: {details}").into());
        show(&headline, &details);
    }));
}

/// Puts the notice on the page (once: a second panic keeps the first notice).
fn show(headline: &str, details: &str) -> Option<()> {
    let window = web_sys::window()?;
    let document = window.document()?;
    if document.get_element_by_id(NOTICE_ID).is_some() {
        return Some(());
    }
    let link = window.location().href().ok().unwrap_or_default();
    let notice = document.create_element("div").ok()?;
    notice.set_id(NOTICE_ID);
    notice.set_attribute("role", "alert").ok()?;
    notice
        .set_attribute(
            "style",
            "position:fixed;inset:0;z-index:1000;overflow:auto;padding:2rem 1.5rem;\
             background:var(--paper,#fff);color:var(--ink,#111);font:1.1rem/1.5 system-ui,sans-serif",
        )
        .ok()?;
    let add = |parent: &web_sys::Element, tag: &str, text: &str| -> Option<web_sys::Element> {
        let element = document.create_element(tag).ok()?;
        element.set_text_content(Some(text));
        parent.append_child(&element).ok()?;
        Some(element)
    };
    let box_element = document.create_element("div").ok()?;
    box_element
        .set_attribute("style", "max-width:46rem;margin:0 auto;border:2px solid var(--danger,#b00020);border-radius:8px;padding:1rem 1.5rem")
        .ok()?;
    notice.append_child(&box_element).ok()?;
    add(&box_element, "h2", headline)?;
    add(&box_element, "p", "What failed:")?;
    let code = add(&box_element, "pre", details)?;
    code.set_attribute("style", "white-space:pre-wrap;overflow-wrap:anywhere;font-size:0.95rem").ok()?;
    add(&box_element, "p", "This link opens the view that failed. Send it with the text above to report the failure:")?;
    let anchor = add(&box_element, "a", &link)?;
    anchor.set_attribute("href", &link).ok()?;
    anchor.set_attribute("class", "failed-link").ok()?;
    anchor.set_attribute("style", "overflow-wrap:anywhere").ok()?;
    let start = add(&box_element, "p", "")?;
    let restart = add(&start, "a", "Open the lab at its start")?;
    restart.set_attribute("href", "?").ok()?;
    let body = document.body()?;
    body.append_child(&notice).ok()?;
    // Keys and clicks would reach a stopped program: move focus to the notice.
    notice.set_attribute("tabindex", "-1").ok()?;
    notice.dyn_ref::<web_sys::HtmlElement>()?.focus().ok()?;
    Some(())
}

/// A panic on purpose, for the browser test of the notice (and for anyone curious, from
/// the console: `wasmBindings.lab_fail_for_test()`). Nothing on the page calls it.
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn lab_fail_for_test() {
    panic!("lab_fail_for_test: a failure asked for by a test");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_notice_names_the_message_and_where_it_failed() {
        let (headline, details) = describe("a block is due", Some(("core/src/sim/remote/upload.rs", 452)));
        assert!(headline.contains("stopped"));
        assert_eq!(details, "a block is due (at core/src/sim/remote/upload.rs:452)");
        assert_eq!(describe("x", None).1, "x");
    }
}
