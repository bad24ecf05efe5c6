//! Part 6: one power cut, four durability modes, every write's fate side by side.

use std::rc::Rc;

use yew::prelude::*;

use crate::model::fates::Fate;

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
    /// Whether the fates are shown: before the answer each cell says only whether the
    /// write had been told OK when the power failed (what the student predicts from).
    #[prop_or(true)]
    pub revealed: bool,
}

/// A cell's class and words before the answer: told OK or not, nothing about survival.
fn before_answer(fate: Fate) -> (&'static str, &'static str) {
    match fate {
        Fate::Survived | Fate::Lost => ("told-ok", "told OK before the power failed"),
        Fate::SurvivedWithoutOk | Fate::Absent => ("no-ok", "not told OK yet"),
    }
}

/// Where the cells go for a figure `width` wide with text `text` high: the mode's name
/// beside its cells when both fit on a line, above them otherwise; the cells wrap onto as
/// many lines as the width needs, so the figure never scrolls sideways.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModesGeometry {
    pub text: f64,
    pub cell: f64,
    /// Left of the first cell (the names' column, or 0 when the names go above).
    pub left: f64,
    pub per_line: u64,
    pub names_above: bool,
    pub line: f64,
}

impl ModesGeometry {
    pub fn new(width: f64, text: f64, writes: u64, longest_name: usize) -> ModesGeometry {
        let char = text * 0.62;
        // A cell holds "24" with room either side.
        let cell = (2.0 * char + 0.7 * text).max(text * 1.55);
        let names = longest_name as f64 * char + 12.0;
        let beside = names + writes as f64 * cell + 8.0 <= width;
        let left = if beside { names } else { 4.0 };
        let per_line = (((width - left - 4.0) / cell).floor() as u64).clamp(1, writes.max(1));
        ModesGeometry { text, cell, left, per_line, names_above: !beside, line: text + 12.0 }
    }

    /// Lines of cells a mode takes.
    pub fn lines(&self, writes: u64) -> u64 {
        writes.div_ceil(self.per_line).max(1)
    }

    /// A mode's height: its name's line (when above) and its lines of cells.
    pub fn row_height(&self, writes: u64) -> f64 {
        let name = if self.names_above { self.text + 6.0 } else { 0.0 };
        name + self.lines(writes) as f64 * self.line + 6.0
    }
}

#[component]
pub fn ModesFigure(props: &ModesFigureProps) -> Html {
    let room = crate::layout::use_figure_room();
    let drawing = room.drawing(830.0, 14.0, 240.0);
    let longest = props.rows.iter().map(|row| row.name.chars().count()).max().unwrap_or(10);
    let geometry = ModesGeometry::new(drawing.width, drawing.text, props.writes, longest);
    let ModesGeometry { text, cell, left, per_line, names_above, line } = geometry;
    let title = if props.revealed {
        "writes 1 to 24, after the cut (the worst legal outcome of each mode)".to_string()
    } else {
        format!("writes 1 to 24 when the power fails at {} ms: which were told OK", props.at)
    };
    let title_lines = crate::layout::wrap_words(&title, ((drawing.width - 8.0) / drawing.char).max(10.0) as usize);
    let top = 6.0 + title_lines.len() as f64 * (text + 4.0) + 4.0;
    let row_height = geometry.row_height(props.writes);
    let width = drawing.width;
    let height = top + row_height * props.rows.len() as f64;
    let rows = props.rows.iter().enumerate().map(|(row, mode)| {
        let y0 = top + row as f64 * row_height;
        let cells_top = if names_above { y0 + text + 6.0 } else { y0 };
        let cells = (1..=props.writes).map(|id| {
            let fate = mode.fates.iter().find(|(each, _)| *each == id).map(|(_, fate)| *fate);
            let (state, words) = match fate {
                Some(fate) if props.revealed => (fate.class(), fate.words()),
                Some(fate) => before_answer(fate),
                None => ("not-arrived", "had not arrived"),
            };
            let index = id - 1;
            let cx = left + (index % per_line) as f64 * cell;
            let y = cells_top + (index / per_line) as f64 * line;
            html! {
                <g class={classes!("cell", state)} data-write={id.to_string()} data-state={state}>
                    <title>{ format!("write {id}: {words}") }</title>
                    <rect x={cx.to_string()} y={y.to_string()} width={(cell - 3.0).to_string()} height={(line - 4.0).to_string()} rx="3" />
                    <text x={(cx + (cell - 3.0) / 2.0).to_string()} y={(y + (line - 4.0) / 2.0 + text * 0.35).to_string()} text-anchor="middle">{ id }</text>
                </g>
            }
        });
        let lost = mode.fates.iter().filter(|(_, fate)| *fate == Fate::Lost && props.revealed).count();
        let name_y = if names_above { y0 + text } else { y0 + (line - 4.0) / 2.0 + text * 0.35 };
        html! {
            <g class="mode-row" data-policy={mode.url_name.clone()} data-lost={lost.to_string()}>
                <text class="mode-name" x="4" y={name_y.to_string()}>{ mode.name.clone() }</text>
                { for cells }
            </g>
        }
    });
    let title = title_lines.iter().enumerate().map(|(index, words)| html! {
        <text class="axis-title" x="4" y={(4.0 + text + index as f64 * (text + 4.0)).to_string()}>{ words.clone() }</text>
    });
    html! {
        <figure class="figure modes-figure" data-figure="modes" data-revealed={props.revealed.to_string()} aria-label={format!("each write's fate after a power cut at {} ms, under four durability modes", props.at)}>
            <svg class={classes!(drawing.fitted.then_some("fitted"))} viewBox={format!("0 0 {width} {height}")} style={format!("--text: {text}px")} aria-hidden="true">
                { for title }
                { for rows }
            </svg>
            if props.revealed {
                { crate::parts::markup(concat!(r#"<figcaption class="legend">"#, crate::model::fates::fate_keys!(), r#"<span class="key not-arrived">had not arrived</span></figcaption>"#)) }
            } else {
                { crate::parts::markup(r#"<figcaption class="legend"><span class="key told-ok">told OK before the power failed</span><span class="key no-ok">not told OK yet</span><span class="key not-arrived">had not arrived</span></figcaption>"#) }
            }
        </figure>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cells_wrap_instead_of_scrolling() {
        // A laptop's stage: names beside one line of 24 cells.
        let wide = ModesGeometry::new(1000.0, 14.0, 24, 17);
        assert!(!wide.names_above);
        assert_eq!(wide.lines(24), 1);
        // A phone: names above, the cells on two lines, every cell inside the width.
        let phone = ModesGeometry::new(350.0, 14.0, 24, 17);
        assert!(phone.names_above);
        assert!(phone.lines(24) >= 2);
        assert!(phone.left + phone.per_line as f64 * phone.cell <= 350.0);
        // A projector's 17 px text in a 600 px slot.
        let presented = ModesGeometry::new(600.0, 17.0, 24, 17);
        assert!(presented.left + presented.per_line as f64 * presented.cell <= 600.0);
    }
}
