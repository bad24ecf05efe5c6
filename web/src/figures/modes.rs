//! Part 6: one power cut, four durability modes, every write's fate side by side.

use std::rc::Rc;

use yew::prelude::*;

use crate::benches::fates::Fate;

/// One mode's row: its name and each arrived write's fate (in the worst legal outcome).
#[derive(Clone, Debug, PartialEq)]
pub struct ModeRow {
    pub name: String,
    pub url_name: String,
    pub fates: Vec<(u64, Fate)>,
}

#[derive(Properties, PartialEq)]
pub struct ModesFigureProps {
    pub rows: Rc<Vec<ModeRow>>,
    /// The cut, in milliseconds, as the page writes it.
    pub at: AttrValue,
    /// Writes in the scenario (cells per row).
    pub writes: u64,
}

#[component]
pub fn ModesFigure(props: &ModesFigureProps) -> Html {
    let cell = 28.0;
    let left = 150.0;
    let width = left + cell * props.writes as f64 + 8.0;
    let row_height = 30.0;
    let height = 22.0 + row_height * props.rows.len() as f64;
    let rows = props.rows.iter().enumerate().map(|(row, mode)| {
        let y = 20.0 + row as f64 * row_height;
        let cells = (1..=props.writes).map(|id| {
            let fate = mode.fates.iter().find(|(each, _)| *each == id).map(|(_, fate)| *fate);
            let state = fate.map(Fate::class).unwrap_or("not-arrived");
            let cx = left + (id - 1) as f64 * cell;
            html! {
                <g class={classes!("cell", state)} data-write={id.to_string()} data-state={state}>
                    <title>{ format!("write {id}: {}", fate.map(Fate::words).unwrap_or("had not arrived")) }</title>
                    <rect x={cx.to_string()} y={y.to_string()} width={(cell - 3.0).to_string()} height={(row_height - 6.0).to_string()} rx="3" />
                    <text x={(cx + (cell - 3.0) / 2.0).to_string()} y={(y + 16.0).to_string()} text-anchor="middle">{ id }</text>
                </g>
            }
        });
        let lost = mode.fates.iter().filter(|(_, fate)| *fate == Fate::Lost).count();
        html! {
            <g class="mode-row" data-policy={mode.url_name.clone()} data-lost={lost.to_string()}>
                <text class="mode-name" x="4" y={(y + 16.0).to_string()}>{ mode.name.clone() }</text>
                { for cells }
            </g>
        }
    });
    html! {
        <figure class="figure modes-figure" data-figure="modes" aria-label={format!("each write's fate after a power cut at {} ms, under four durability modes", props.at)}>
            <svg viewBox={format!("0 0 {width} {height}")} aria-hidden="true">
                <text class="axis-title" x={left.to_string()} y="12">{ "writes 1 to 24, after the cut (the worst legal outcome of each mode)" }</text>
                { for rows }
            </svg>
            <figcaption class="legend">
                { for Fate::ALL.iter().map(|fate| html! { <span class={classes!("key", fate.class())}>{ fate.words() }</span> }) }
                <span class="key not-arrived">{ "had not arrived" }</span>
            </figcaption>
        </figure>
    }
}
