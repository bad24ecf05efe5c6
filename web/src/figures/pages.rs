//! Part 9: the two pages as sectors, in the buffer pool and on the data file, and the
//! log REDO walks; SQLite's WAL mode beside it, with whole pages in the log.

use std::rc::Rc;

use yew::prelude::*;

use crate::model::pages_view::{PagesAt, Phase, WalAt};

#[derive(Properties, PartialEq)]
pub struct PagesFigureProps {
    pub at: Rc<PagesAt>,
}

const WIDTH: f64 = 900.0;
const TEXT: f64 = 15.0;
const LEFT: f64 = 10.0;

/// A page's sectors in a row from `x`, `width` wide: each names the version it holds, in
/// full when there is room ("sector 0: v4"), else short ("s0: v4").
fn sector_boxes(x: f64, y: f64, sectors: &[u64], width: f64, (place, page_no): (&'static str, u32), (text, char): (f64, f64)) -> Html {
    let each = width / sectors.len().max(1) as f64;
    let height = text * 2.0;
    let full = each - 3.0 >= "sector 0: v88".len() as f64 * char + 10.0;
    html! {
        <g class="sectors">
            { for sectors.iter().enumerate().map(|(index, lsn)| html! {
                <g class={classes!("sector", (*lsn == 0).then_some("empty"))} data-place={place} data-page={page_no.to_string()} data-sector={index.to_string()} data-lsn={lsn.to_string()}>
                    <rect x={(x + index as f64 * each).to_string()} y={y.to_string()} width={(each - 3.0).to_string()} height={height.to_string()} rx="3" />
                    <text x={(x + index as f64 * each + 5.0).to_string()} y={(y + height * 0.68).to_string()}>{ if full { format!("sector {index}: v{lsn}") } else { format!("s{index}: v{lsn}") } }</text>
                </g>
            }) }
        </g>
    }
}

/// The figure's two areas (buffer pool, data file): side by side when both fit, else one
/// above the other. Returns each area's (x, top) and their width.
fn areas(width: f64, char: f64, area_height: f64) -> ([(f64, f64); 2], f64) {
    let side_by_side = width >= 2.0 * 34.0 * char + 3.0 * LEFT;
    if side_by_side {
        let each = (width - 3.0 * LEFT) / 2.0;
        ([(LEFT, 0.0), (2.0 * LEFT + each, 0.0)], each)
    } else {
        ([(LEFT, 0.0), (LEFT, area_height)], width - 2.0 * LEFT)
    }
}

fn memory_title(phase: Phase) -> &'static str {
    match phase {
        Phase::Running => "buffer pool (memory)",
        Phase::Cut => "buffer pool: gone with the power",
        Phase::Recovering => "buffer pool: REDO rebuilds the pages here",
        Phase::Done => "buffer pool after recovery",
    }
}

#[component]
pub fn PagesFigure(props: &PagesFigureProps) -> Html {
    let at = &props.at;
    let crate::layout::Drawing { width, text, char, fitted } = crate::layout::use_figure_room().drawing(WIDTH, TEXT, 240.0);
    let line = text * 1.45;
    let page_height = 2.6 * line;
    let row = page_height + 1.2 * line;
    // An area: its title, then a page a row.
    let area_height = 1.4 * line + 2.0 * row;
    let ([(mem_x, mem_top), (disk_x, disk_top)], area_width) = areas(width, char, area_height);
    let mem_title = memory_title(at.phase);
    let mem_pages = [1u32, 2].iter().enumerate().map(|(index, page_no)| {
        let y = mem_top + 1.4 * line + index as f64 * row;
        let touched = at.touched == Some(*page_no);
        match at.buffer.iter().find(|page| page.page_no == *page_no) {
            Some(page) => html! {
                <g class={classes!("mem-page", page.dirty.then_some("dirty"), page.final_page.then_some("final"), touched.then_some("touched"))}
                    data-place="buffer" data-page={page_no.to_string()} data-lsn={page.page_lsn.to_string()} data-final={page.final_page.to_string()}
                    data-state={if page.dirty { "dirty" } else { "clean" }}>
                    <rect x={mem_x.to_string()} y={y.to_string()} width={area_width.to_string()} height={page_height.to_string()} rx="5" />
                    <text class="page-name" x={(mem_x + 8.0).to_string()} y={(y + line).to_string()}>{ format!("P{page_no} · pageLSN {}{}", page.page_lsn, if page.dirty { " · dirty" } else { "" }) }</text>
                    <text class="entries" x={(mem_x + 8.0).to_string()} y={(y + 2.1 * line).to_string()}>{ page.entries.clone() }</text>
                </g>
            },
            None => html! {
                <g class="mem-page absent" data-place="buffer" data-page={page_no.to_string()} data-final="false" data-state="absent">
                    <rect x={mem_x.to_string()} y={y.to_string()} width={area_width.to_string()} height={page_height.to_string()} rx="5" />
                    <text class="entries" x={(mem_x + 8.0).to_string()} y={(y + 1.5 * line).to_string()}>{ format!("P{page_no}: not in memory") }</text>
                </g>
            },
        }
    });
    let disk_pages = at.disk.iter().enumerate().map(|(index, page)| {
        let y = disk_top + 1.4 * line + index as f64 * row;
        let state = if page.damaged { "damaged" } else if page.torn() { "torn" } else { "intact" };
        let name = match state {
            "torn" => format!("P{} TORN: two versions", page.page_no),
            "damaged" => format!("P{} damaged: nothing restores it", page.page_no),
            _ => format!("P{}", page.page_no),
        };
        html! {
            <g class={classes!("disk-page", state, (at.touched == Some(page.page_no)).then_some("touched"))} data-place="disk" data-page={page.page_no.to_string()} data-state={state}>
                <text class="page-name" x={disk_x.to_string()} y={(y + 0.9 * line).to_string()}>{ name }</text>
                { sector_boxes(disk_x, y + 1.2 * line, &page.sectors, area_width, ("disk", page.page_no), (text, char)) }
            </g>
        }
    });
    let areas_bottom = disk_top + area_height;
    // The log: a cell a record, as many a row as the width holds.
    let cell = "+image".len() as f64 * char + 12.0;
    let cell_height = 2.4 * line;
    let log_top = areas_bottom + 1.5 * line;
    let per_row = (((width - 2.0 * LEFT) / (cell + 4.0)).floor() as usize).max(1);
    let place = |index: usize| (LEFT + (index % per_row) as f64 * (cell + 4.0), log_top + (index / per_row) as f64 * (cell_height + 6.0));
    let log = at.log.iter().enumerate().map(|(index, entry)| {
        let (x, y) = place(index);
        html! {
            <g class={classes!("log-record", entry.mark.class(), (at.redo_lsn == Some(entry.lsn)).then_some("current"))} data-lsn={entry.lsn.to_string()} data-state={entry.mark.class()}>
                <rect x={x.to_string()} y={y.to_string()} width={cell.to_string()} height={cell_height.to_string()} rx="4" />
                <text x={(x + 6.0).to_string()} y={(y + line).to_string()}>{ format!("{} P{}", entry.lsn, entry.page_no) }</text>
                <text class="small" x={(x + 6.0).to_string()} y={(y + 2.0 * line).to_string()}>{ if entry.image { "+image" } else { "change" } }</text>
            </g>
        }
    });
    let log_rows = at.log.len().div_ceil(per_row).max(1);
    let log_bottom = log_top + log_rows as f64 * (cell_height + 6.0);
    let redo = (at.redo_point > 0).then(|| {
        let (x, y) = place(at.redo_point.saturating_sub(1) as usize);
        let words = format!("redo point: REDO starts at LSN {}", at.redo_point);
        let anchor = if x + words.len() as f64 * char > width - LEFT { "end" } else { "start" };
        let text_x = if anchor == "end" { (width - LEFT).max(x) } else { x };
        html! {
            <g class="redo-point" data-redo-lsn={at.redo_point.to_string()}>
                <line x1={(x - 2.0).to_string()} x2={(x - 2.0).to_string()} y1={(y - 6.0).to_string()} y2={(y + cell_height + 4.0).to_string()} />
                <text x={text_x.to_string()} y={(log_bottom + 0.9 * line).to_string()} text-anchor={anchor}>{ words }</text>
            </g>
        }
    });
    let height = log_bottom + 1.4 * line;
    html! {
        <figure class="figure pages-figure" data-figure="pages" data-phase={at.phase.class()}
            aria-label={format!("two pages in memory and on the data file; {}", mem_title)}>
            <svg class={classes!(fitted.then_some("fitted"))} viewBox={format!("0 0 {width} {height}")} style={format!("--text: {text}px")} aria-hidden="true">
                <text class="area-title" x={mem_x.to_string()} y={(mem_top + line).to_string()}>{ mem_title }</text>
                <text class="area-title" x={disk_x.to_string()} y={(disk_top + line).to_string()}>{ "data file (survives the power cut)" }</text>
                { for mem_pages }
                { for disk_pages }
                <text class="area-title" x={LEFT.to_string()} y={(log_top - 0.5 * line).to_string()}>{ "the log" }</text>
                { for log }
                { redo.unwrap_or_default() }
            </svg>
            <figcaption class="legend">
                <span class="key page-dirty">{ "dirty: changed in memory, not yet on the data file" }</span>
                <span class="key page-torn">{ "torn: sectors of two versions (v = the pageLSN a sector's bytes belong to)" }</span>
                <span class="key log-image">{ "+image: a full-page image logged with the change" }</span>
                <span class="key log-applied">{ "REDO applied or installed" }</span>
                <span class="key log-skipped">{ "REDO skipped (already on the page)" }</span>
            </figcaption>
        </figure>
    }
}

#[derive(Properties, PartialEq)]
pub struct WalModeFigureProps {
    pub at: Rc<WalAt>,
    pub caption: AttrValue,
}

/// What the -wal file's title says about its resets.
fn resets_words(resets: usize) -> &'static str {
    match resets {
        0 => "",
        1 => ", reset once by a checkpoint",
        _ => ", reset by each checkpoint",
    }
}

/// SQLite's WAL mode: frames (whole pages) in the `-wal` file, copied back by checkpoints.
#[component]
pub fn WalModeFigure(props: &WalModeFigureProps) -> Html {
    let at = &props.at;
    let crate::layout::Drawing { width, text, char, fitted } = crate::layout::use_figure_room().drawing(WIDTH, TEXT, 240.0);
    let line = text * 1.45;
    let title = crate::layout::wrap_words(&format!("the -wal file: one frame per committed page{}", resets_words(at.salt_resets)),
        ((width - 2.0 * LEFT) / char).floor().max(10.0) as usize);
    let frame_width = "whole P1 v8".len() as f64 * char + 12.0;
    let frame_height = 2.4 * line;
    let per_row = (((width - 2.0 * LEFT) / (frame_width + 6.0)).floor() as usize).max(1);
    let frames_top = title.len() as f64 * line + 0.5 * line;
    let frame_rows = at.frames.len().div_ceil(per_row).max(1);
    let frames = at.frames.iter().enumerate().map(|(index, (frame, page_no, lsn, whole))| {
        let x = LEFT + (index % per_row) as f64 * (frame_width + 6.0);
        let y = frames_top + (index / per_row) as f64 * (frame_height + 6.0);
        html! {
            <g class={classes!("frame", (!whole).then_some("torn"))} data-frame={frame.to_string()} data-page={page_no.to_string()} data-lsn={lsn.to_string()}>
                <rect x={x.to_string()} y={y.to_string()} width={frame_width.to_string()} height={frame_height.to_string()} rx="4" />
                <text x={(x + 6.0).to_string()} y={(y + line).to_string()}>{ format!("frame {frame}") }</text>
                <text class="small" x={(x + 6.0).to_string()} y={(y + 2.0 * line).to_string()}>{ format!("whole P{page_no} v{lsn}") }</text>
            </g>
        }
    });
    // An empty -wal file says why it is empty.
    let empty = at.frames.is_empty().then(|| {
        let why = if at.salt_resets > 0 { "empty: the checkpoint copied every frame into the database file, then reset the -wal file" } else { "empty: nothing committed yet" };
        let lines = crate::layout::wrap_words(why, ((width - 2.0 * LEFT) / char).floor().max(10.0) as usize);
        html! {
            <text class="wal-empty" data-empty={if at.salt_resets > 0 { "reset" } else { "fresh" }}>
                { for lines.iter().enumerate().map(|(index, words)| html! {
                    <tspan x={(LEFT + 6.0).to_string()} y={(frames_top + (index as f64 + 1.0) * line).to_string()}>{ words.clone() }</tspan>
                }) }
            </text>
        }
    });
    let empty_rows = if at.frames.is_empty() { 2 } else { frame_rows };
    let db_top = frames_top + empty_rows as f64 * (frame_height + 6.0) + 0.4 * line;
    let name_width = 3.0 * char + 8.0;
    let db = at.db.iter().enumerate().map(|(row, (page_no, sectors))| {
        let y = db_top + 0.6 * line + row as f64 * (2.0 * text + 8.0);
        html! {
            <g class="db-page" data-place="db" data-page={page_no.to_string()}>
                <text class="page-name" x={LEFT.to_string()} y={(y + text * 1.36).to_string()}>{ format!("P{page_no}") }</text>
                { sector_boxes(LEFT + name_width, y, sectors, (width - 2.0 * LEFT - name_width).min(60.0 * char), ("db", *page_no), (text, char)) }
            </g>
        }
    });
    let height = db_top + 0.6 * line + at.db.len().max(1) as f64 * (2.0 * text + 8.0) + 6.0;
    let db_title = crate::layout::wrap_words("the database file: written only by a checkpoint", ((width - 2.0 * LEFT) / char).floor().max(10.0) as usize);
    html! {
        <figure class="figure wal-mode-figure" data-figure="sqlite-wal" aria-label="SQLite's WAL mode: whole pages in the log, copied back by the checkpoint">
            <svg class={classes!(fitted.then_some("fitted"))} viewBox={format!("0 0 {width} {}", height + (db_title.len() as f64 - 1.0) * line)} style={format!("--text: {text}px")} aria-hidden="true">
                { for title.iter().enumerate().map(|(index, words)| html! {
                    <text class="area-title" x={LEFT.to_string()} y={((index as f64 + 1.0) * line - 2.0).to_string()}>{ words.clone() }</text>
                }) }
                { for frames }
                { empty.unwrap_or_default() }
                { for db_title.iter().enumerate().map(|(index, words)| html! {
                    <text class="area-title" x={LEFT.to_string()} y={(db_top + index as f64 * line).to_string()}>{ words.clone() }</text>
                }) }
                <g transform={format!("translate(0 {})", (db_title.len() as f64 - 1.0) * line)}>{ for db }</g>
            </svg>
            <p class="wal-caption" aria-live="polite">{ props.caption.clone() }</p>
        </figure>
    }
}
