//! The figure beside its words.
//!
//! A chapter is a few scenes. A [`Scene`] is one figure and the text that explains it:
//! its *stage* holds the figure, the controls that act on it (the player, the power
//! button, the cut's field), the step's sentence and the outcome of the run, and its
//! *prose* is the chapter's text about that figure. The stage is what the student looks
//! at while reading, so the two are never far apart:
//!
//! - on a wide screen the stage sticks to the top of the window in its own column and
//!   the prose scrolls beside it, so the sentence being read and the figure it talks
//!   about are on screen together;
//! - on a narrow screen (a phone, a narrow window) the stage comes first and its text
//!   follows it;
//! - in presenter mode only the stages are shown, in large type, the figure beside its
//!   controls and outcome.
//!
//! The stage's parts are slots, so every chapter lays out alike and a figure can later
//! take pointer input without the chapter changing shape: `controls` (the bar across the
//! stage's top: the player and the step's sentence), `settings` (the run's choices),
//! `actions` (what the student does to the run: the power button, the cut's field),
//! `figure` (the drawing itself; `drawn`, a figure function given the measured room), `overlay` (drawn over the figure, for handles and hit
//! areas; it sits in the same box as the figure, positioned over it), `outcome` (what the
//! run ended in: the report of a power cut, a verdict). A stage with room puts the figure
//! on the left and the settings, actions and outcome beside it, so a cut's result is on
//! screen with the figure it explains.
//!
//! The stage also measures its figure slot and hands its width and text size, in CSS
//! pixels, to the figures inside it through [`FigureRoom`], so a figure can lay itself out
//! for the room it has (larger type on a projector, fewer labels on a phone) instead of
//! being scaled down until its text cannot be read. The text size is the slot's CSS
//! `font-size`, which presenter mode raises.
//!
//! A link can name the scene it opens on (`opens_here`): a shared link with a power cut
//! opens on the cut and its result, not on the chapter's first paragraph.

use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;
use yew::prelude::*;

/// The room a stage's figure slot gives its figure, in CSS pixels: its width and the size
/// its text should be drawn at. Zero until it has been measured (and outside a stage).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FigureRoom {
    pub width: f64,
    pub text: f64,
}

impl FigureRoom {
    /// Whether the slot has been measured, so a figure can be laid out at its size.
    pub fn measured(self) -> bool {
        self.width > 0.0 && self.text > 0.0
    }
}

/// The size a figure is drawn at: in the room a stage measured (CSS pixels, so its text
/// keeps the stage's size), or else at the figure's own design size, scaled to its column.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Drawing {
    pub width: f64,
    pub text: f64,
    /// A monospace character's width at that text size.
    pub char: f64,
    /// Laid out at the measured room (the SVG gets the `fitted` class: no sideways swipe).
    pub fitted: bool,
}

impl FigureRoom {
    /// The drawing for this room, or the design size when the room is not measured; never
    /// narrower than `width_min` (a figure that cannot be drawn narrower scrolls instead).
    pub fn drawing(self, design_width: f64, design_text: f64, width_min: f64) -> Drawing {
        if self.measured() {
            Drawing { width: self.width.max(width_min), text: self.text, char: self.text * 0.62, fitted: true }
        } else {
            Drawing { width: design_width, text: design_text, char: design_text * 0.62, fitted: false }
        }
    }
}

/// Words flowed into lines of at most `chars` characters (a longer word has a line of
/// its own).
pub fn wrap_words(text: &str, chars: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(line) if line.chars().count() + 1 + word.chars().count() <= chars => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

/// The room of the figure slot this figure is drawn in.
#[hook]
pub fn use_figure_room() -> FigureRoom {
    use_context::<FigureRoom>().unwrap_or_default()
}

#[derive(Properties, PartialEq)]
pub struct SceneProps {
    /// What the scene is about, one or two words (`data-scene`, for tests and styles).
    pub name: AttrValue,
    /// A heading above the scene, spanning both columns.
    #[prop_or_default]
    pub title: Option<AttrValue>,
    /// The drawing of the step at the playhead.
    #[prop_or_default]
    pub figure: Html,
    /// A figure laid out for the room the stage measured, drawn first in the figure's slot
    /// (a figure that is a plain function cannot read the stage's [`FigureRoom`] itself).
    #[prop_or_default]
    pub drawn: Option<Callback<FigureRoom, Html>>,
    /// Drawn over the figure, in the same box (handles, hit areas, marks).
    #[prop_or_default]
    pub overlay: Html,
    /// The choices that set up the run (mode, seed, load).
    #[prop_or_default]
    pub settings: Html,
    /// The bar across the stage's top: the player and the step's sentence.
    #[prop_or_default]
    pub controls: Html,
    /// What the student does to the run: the power button, the cut's field.
    #[prop_or_default]
    pub actions: Html,
    /// What the run ended in: a power cut's report, a verdict.
    #[prop_or_default]
    pub outcome: Html,
    /// This scene is where the link opens (the page scrolls to it when the view loads).
    #[prop_or_default]
    pub opens_here: bool,
    /// The chapter's text about this figure.
    #[prop_or_default]
    pub children: Html,
}

/// One figure and its words.
#[component]
pub fn Scene(props: &SceneProps) -> Html {
    let slot = use_node_ref();
    let room = use_slot_room(slot.clone());
    let holder = use_node_ref();
    let stage_height = use_height(holder.clone());
    let has_prose = props.children != Html::default();
    html! {
        <section class={classes!("scene", (!has_prose).then_some("stage-only"))} data-scene={props.name.clone()}
            data-opens-here={props.opens_here.then_some("true")}>
            if let Some(title) = &props.title { <h3 class="scene-title">{ title.clone() }</h3> }
            <div class="stage-holder" ref={holder} style={(stage_height > 0.0).then(|| format!("--stage-height: {stage_height}px"))}><div class="stage">
                if props.controls != Html::default() { <div class="stage-bar">{ props.controls.clone() }</div> }
                if props.settings != Html::default() { <div class="stage-settings">{ props.settings.clone() }</div> }
                if props.actions != Html::default() { <div class="stage-actions">{ props.actions.clone() }</div> }
                <div class="stage-figure" ref={slot}>
                    <ContextProvider<FigureRoom> context={room}>
                        { props.drawn.as_ref().map(|draw| draw.emit(room)).unwrap_or_default() }
                        { props.figure.clone() }
                    </ContextProvider<FigureRoom>>
                    if props.overlay != Html::default() { <div class="stage-overlay">{ props.overlay.clone() }</div> }
                </div>
                if props.outcome != Html::default() { <div class="stage-outcome">{ props.outcome.clone() }</div> }
            </div></div>
            if has_prose { <div class="scene-prose">{ props.children.clone() }</div> }
        </section>
    }
}

/// The width and text size of the element behind `slot`, kept up to date by a
/// `ResizeObserver` (presenter mode and a phone's rotation both resize the slot).
#[hook]
fn use_slot_room(slot: NodeRef) -> FigureRoom {
    let room = use_state_eq(FigureRoom::default);
    {
        let room = room.clone();
        use_effect_with(slot, move |slot| {
            let observer = slot.cast::<web_sys::Element>().and_then(|element| {
                let measure = move || room.set(measure_room(&element));
                measure();
                observe(slot, measure)
            });
            move || drop(observer)
        });
    }
    *room
}

/// The slot's inner width (whole pixels: a sub-pixel change is not worth drawing the
/// figure again) and its CSS font size.
fn measure_room(element: &web_sys::Element) -> FigureRoom {
    let text = web_sys::window()
        .and_then(|window| window.get_computed_style(element).ok().flatten())
        .and_then(|style| style.get_property_value("font-size").ok())
        .and_then(|size| size.trim_end_matches("px").parse::<f64>().ok())
        .unwrap_or(0.0);
    FigureRoom { width: f64::from(element.client_width()), text }
}

/// The height of the element behind `node`, kept up to date by a `ResizeObserver`.
#[hook]
fn use_height(node: NodeRef) -> f64 {
    let height = use_state_eq(|| 0.0f64);
    {
        let height = height.clone();
        use_effect_with(node, move |node| {
            let observer = node.cast::<web_sys::Element>().and_then(|element| {
                let measure = move || height.set(f64::from(element.client_height()));
                measure();
                observe(node, measure)
            });
            move || drop(observer)
        });
    }
    *height
}

/// A `ResizeObserver` on `node` that calls `measure`; it stops when dropped.
fn observe(node: &NodeRef, measure: impl Fn() + 'static) -> Option<Observed> {
    let element = node.cast::<web_sys::Element>()?;
    let callback = Closure::<dyn FnMut(js_sys::Array)>::new(move |_entries: js_sys::Array| measure());
    let resize = web_sys::ResizeObserver::new(callback.as_ref().unchecked_ref()).ok()?;
    resize.observe(&element);
    Some(Observed { resize, _callback: callback })
}

/// A running `ResizeObserver` and its callback.
struct Observed {
    resize: web_sys::ResizeObserver,
    _callback: Closure<dyn FnMut(js_sys::Array)>,
}

impl Drop for Observed {
    fn drop(&mut self) {
        self.resize.disconnect();
    }
}

/// Where a freshly opened view starts: at the scene its link names (a power cut's), or
/// at the top of the page.
pub fn scroll_to_opening() {
    let Some(window) = web_sys::window() else { return };
    let scene = window.document().and_then(|document| document.query_selector(".scene[data-opens-here]").ok().flatten());
    match scene {
        Some(scene) => scene.scroll_into_view(),
        None => window.scroll_to_with_x_and_y(0.0, 0.0),
    }
}
