//! Figures: the lab's drawings of the machine itself.
//!
//! A lesson about the page cache draws the page cache; a lesson about group commit draws
//! the queue and its leader. Each figure here is a component that takes one step's state
//! (values computed in [`crate::model`] from the core's runs at the player's instant)
//! and draws it as SVG or HTML. Figures compute no outcome themselves.
//!
//! Conventions every figure follows, so the browser tests can read a figure back from
//! the DOM and a student on any screen can read it:
//! - the root element has `class="figure"`, a `data-figure` naming it, and an
//!   `aria-label` saying what it shows at this step;
//! - each drawn thing that has a state carries it as data: `data-write="7"
//!   data-state="acked"`, `data-unit="2" data-state="dirty"`, `data-file="wal-5"`;
//! - an SVG has a `viewBox` and no fixed width, so it scales with the column, and its
//!   text is sized so it is at least 12 px at 1024 px wide;
//! - a state change is a CSS transition on the element that changes (skipped under
//!   `prefers-reduced-motion`), so a step moves things instead of swapping pictures;
//! - colours come from the CSS variables in `assets/style.css`, so the dark theme works.

pub mod sync_journey;
pub mod group_commit;
pub mod write_path;
pub mod chain;
pub mod record_bytes;
pub mod failed_sync;
pub mod lanes;
pub mod log_media;
pub mod modes;
pub mod pages;
pub mod quorum;
pub mod segments;
pub mod steady_queue;
pub mod dial;
pub mod call_path;

/// A lane's span (or a vertical line) as a transform of a unit line: `translate` to its
/// start, `scaleX` to its length. A transform, unlike a line's ends, is a CSS property, so
/// between steps the span grows and the playhead slides (the stroke keeps its width
/// through `vector-effect="non-scaling-stroke"`).
pub fn span_style(x: f64, y: f64, length: f64) -> String {
    format!("transform:translate({x:.1}px,{y:.1}px) scaleX({:.2})", length.max(0.01))
}
