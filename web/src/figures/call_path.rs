//! Part 2's call figure: one call run on a record, and where the record's bytes are when
//! the call returns.
//!
//! The four places a byte can be are stacked from the process down to the stable media.
//! When the student picks a call, its record starts in the process's memory and travels
//! down, place by place, to the last place the call waits for (a CSS animation keyed by the
//! call, so each pick plays it again; none under `prefers-reduced-motion`). The places a
//! power loss wipes are marked, so whether the bytes survive is read off the picture.

use yew::prelude::*;

use crate::model::chain::{survives, Failure, Stage};

#[derive(Properties, PartialEq)]
pub struct CallPathProps {
    /// The call, as a program writes it.
    pub call: AttrValue,
    /// What it makes durable: the record, or the file's name.
    pub carries: AttrValue,
    pub url_name: AttrValue,
    /// Where it leaves the bytes when it returns.
    pub leaves: Stage,
}

/// The places, top to bottom, with the short label the figure gives each.
const PLACES: [(Stage, &str); 4] = [
    (Stage::AppBuffer, "process memory"),
    (Stage::PageCache, "page cache (kernel)"),
    (Stage::DeviceCache, "drive's volatile cache"),
    (Stage::Media, "stable media"),
];

/// How far down the stack a call's bytes get.
fn props_depth(leaves: Stage) -> usize {
    PLACES.iter().position(|(stage, _)| *stage == leaves).unwrap_or(0)
}

#[component]
pub fn CallPath(props: &CallPathProps) -> Html {
    let crate::layout::Drawing { width, text, char, fitted } = crate::layout::use_figure_room().drawing(560.0, 15.0, 260.0);
    let row = (text * 2.6).max(38.0);
    let title = format!("{} returns: {} is in the {}", props.call, props.carries, PLACES[props_depth(props.leaves)].1);
    let lines = crate::layout::wrap_words(&title, ((width - 8.0) / (char * 0.95)).floor().max(12.0) as usize);
    let line_h = text * 1.3;
    let top = line_h * lines.len() as f64 + text * 0.5;
    let height = top + row * PLACES.len() as f64 + 6.0;
    let depth = props_depth(props.leaves);
    let token_w = (text * 4.6).min(width * 0.3);
    // The long marks fit beside the longest label only in a wide room.
    let long_marks = width > (22.0 + 23.0) * char + token_w + 30.0;
    let token_x = width - token_w - 8.0;
    let y_of = |index: usize| top + row * index as f64;
    let places = PLACES.iter().enumerate().map(|(index, (stage, label))| {
        let y = y_of(index);
        let reached = index <= depth;
        let kept = survives(*stage, Failure::PowerLoss);
        html! {
            <g class={classes!("place", reached.then_some("reached"), (index == depth).then_some("here"), kept.then_some("durable"))}
                data-place={label.to_string()} data-reached={reached.to_string()}>
                <rect x="2" y={(y + 3.0).to_string()} width={(width - 4.0).to_string()} height={(row - 6.0).to_string()} rx="6" />
                <text x="12" y={(y + row / 2.0 + text * 0.35).to_string()}>{ *label }</text>
                <text class="power-mark" x={(token_x - 10.0).to_string()} y={(y + row / 2.0 + text * 0.35).to_string()} text-anchor="end">
                    { match (kept, long_marks) {
                        (true, true) => "survives a power loss",
                        (false, true) => "wiped by a power loss",
                        (true, false) => "kept",
                        (false, false) => "wiped",
                    } }
                </text>
            </g>
        }
    });
    let kept = survives(props.leaves, Failure::PowerLoss);
    let style = format!("--from: {:.1}px; --to: {:.1}px; --steps: {}", y_of(0) + 6.0, y_of(depth) + 6.0, depth.max(1));
    html! {
        <div class="figure call-path" role="figure" data-figure="call-path" data-call={props.url_name.clone()} data-leaves={PLACES[depth].1}
            data-kept={kept.to_string()} aria-label={format!("{} returns with the record's bytes in the {}", props.call, PLACES[depth].1)}>
            <svg class={classes!(fitted.then_some("fitted"))} viewBox={format!("0 0 {width} {height}")} style={format!("--text: {text}px")} aria-hidden="true">
                <text class="call-title">{ for lines.iter().enumerate().map(|(index, line)| html! {
                    <tspan x="4" y={(line_h * (index as f64 + 0.85)).to_string()}>{ line.clone() }</tspan>
                }) }</text>
                { for places }
                <g key={props.url_name.to_string()} class="call-record" style={style}>
                    <rect x={token_x.to_string()} y="0" width={token_w.to_string()} height={(row - 12.0).to_string()} rx="5" />
                    <text x={(token_x + token_w / 2.0).to_string()} y={((row - 12.0) / 2.0 + text * 0.35).to_string()} text-anchor="middle">{ props.carries.strip_prefix("the ").unwrap_or(&props.carries).split(' ').next_back().unwrap_or("record") }</text>
                </g>
            </svg>
        </div>
    }
}
