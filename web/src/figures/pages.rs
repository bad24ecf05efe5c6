//! Part 9: the two pages as sectors, in the buffer pool and on the data file, and the
//! log REDO walks; SQLite's WAL mode beside it, with whole pages in the log.

use std::rc::Rc;

use yew::prelude::*;

use crate::benches::pages_view::{DiskPage, PagesAt, WalAt};

#[derive(Properties, PartialEq)]
pub struct PagesFigureProps {
    pub at: Rc<PagesAt>,
}

const WIDTH: f64 = 900.0;

fn sector_boxes(x: f64, y: f64, sectors: &[u64], width: f64, place: &'static str, page_no: u32) -> Html {
    let each = width / sectors.len().max(1) as f64;
    html! {
        <g class="sectors">
            { for sectors.iter().enumerate().map(|(index, lsn)| html! {
                <g class={classes!("sector", (*lsn == 0).then_some("empty"))} data-place={place} data-page={page_no.to_string()} data-sector={index.to_string()} data-lsn={lsn.to_string()}>
                    <rect x={(x + index as f64 * each).to_string()} y={y.to_string()} width={(each - 3.0).to_string()} height="30" rx="3" />
                    <text x={(x + index as f64 * each + 6.0).to_string()} y={(y + 20.0).to_string()}>{ format!("sector {index}: v{lsn}") }</text>
                </g>
            }) }
        </g>
    }
}

fn disk_page(page: &DiskPage, x: f64, y: f64, touched: bool) -> Html {
    let state = if page.damaged { "damaged" } else if page.torn() { "torn" } else { "intact" };
    html! {
        <g class={classes!("disk-page", state, touched.then_some("touched"))} data-place="disk" data-page={page.page_no.to_string()} data-state={state}>
            <text class="page-name" x={x.to_string()} y={(y - 6.0).to_string()}>{ format!("P{} {}", page.page_no, match state {
                "torn" => "TORN: two versions, checksum fails",
                "damaged" => "damaged: nothing could restore it",
                _ => "",
            }) }</text>
            { sector_boxes(x, y, &page.sectors, 380.0, "disk", page.page_no) }
        </g>
    }
}

#[component]
pub fn PagesFigure(props: &PagesFigureProps) -> Html {
    let at = &props.at;
    let memory_title = match at.phase {
        crate::benches::pages_view::Phase::Running => "buffer pool (memory)",
        crate::benches::pages_view::Phase::Cut => "buffer pool: gone with the power",
        crate::benches::pages_view::Phase::Recovering => "buffer pool: REDO rebuilds the pages here",
        crate::benches::pages_view::Phase::Done => "buffer pool after recovery",
    };
    let mem_pages = [1u32, 2].iter().enumerate().map(|(row, page_no)| {
        let y = 44.0 + row as f64 * 74.0;
        match at.buffer.iter().find(|page| page.page_no == *page_no) {
            Some(page) => html! {
                <g class={classes!("mem-page", page.dirty.then_some("dirty"), page.final_page.then_some("final"), (at.touched == Some(*page_no)).then_some("touched"))}
                    data-place="buffer" data-page={page_no.to_string()} data-lsn={page.page_lsn.to_string()} data-final={page.final_page.to_string()}
                    data-state={if page.dirty { "dirty" } else { "clean" }}>
                    <rect x="10" y={y.to_string()} width="400" height="56" rx="5" />
                    <text class="page-name" x="18" y={(y + 20.0).to_string()}>{ format!("P{page_no} · pageLSN {}{}", page.page_lsn, if page.dirty { " · dirty" } else { "" }) }</text>
                    <text class="entries" x="18" y={(y + 42.0).to_string()}>{ page.entries.clone() }</text>
                </g>
            },
            None => html! {
                <g class="mem-page absent" data-place="buffer" data-page={page_no.to_string()} data-final="false" data-state="absent">
                    <rect x="10" y={y.to_string()} width="400" height="56" rx="5" />
                    <text class="entries" x="18" y={(y + 32.0).to_string()}>{ format!("P{page_no}: not in memory") }</text>
                </g>
            },
        }
    });
    let disk_pages = at.disk.iter().enumerate().map(|(row, page)| disk_page(page, 480.0, 56.0 + row as f64 * 74.0, at.touched == Some(page.page_no)));
    let log_y = 210.0;
    let cell = 52.0;
    let log = at.log.iter().enumerate().map(|(index, entry)| {
        let x = 90.0 + index as f64 * (cell + 4.0);
        html! {
            <g class={classes!("log-record", entry.mark.class(), (at.redo_lsn == Some(entry.lsn)).then_some("current"))} data-lsn={entry.lsn.to_string()} data-state={entry.mark.class()}>
                <rect x={x.to_string()} y={log_y.to_string()} width={cell.to_string()} height="40" rx="4" />
                <text x={(x + 6.0).to_string()} y={(log_y + 17.0).to_string()}>{ format!("{} P{}", entry.lsn, entry.page_no) }</text>
                <text class="small" x={(x + 6.0).to_string()} y={(log_y + 33.0).to_string()}>{ if entry.image { "+image" } else { "change" } }</text>
            </g>
        }
    });
    let redo_x = 90.0 + at.redo_point.saturating_sub(1) as f64 * (cell + 4.0) - 2.0;
    html! {
        <figure class="figure pages-figure" data-figure="pages" data-phase={at.phase.class()}
            aria-label={format!("two pages in memory and on the data file; {}", memory_title)}>
            <svg viewBox={format!("0 0 {WIDTH} 290")} aria-hidden="true">
                <text class="area-title" x="10" y="24">{ memory_title }</text>
                <text class="area-title" x="480" y="24">{ "data file (survives the power cut)" }</text>
                { for mem_pages }
                { for disk_pages }
                <text class="area-title" x="10" y={(log_y + 26.0).to_string()}>{ "the log" }</text>
                { for log }
                if at.redo_point > 0 {
                    <g class="redo-point" data-redo-lsn={at.redo_point.to_string()}>
                        <line x1={redo_x.to_string()} x2={redo_x.to_string()} y1={(log_y - 8.0).to_string()} y2={(log_y + 48.0).to_string()} />
                        <text x={redo_x.to_string()} y={(log_y + 66.0).to_string()}>{ format!("redo point: REDO starts at LSN {}", at.redo_point) }</text>
                    </g>
                }
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

/// SQLite's WAL mode: frames (whole pages) in the `-wal` file, copied back by checkpoints.
#[component]
pub fn WalModeFigure(props: &WalModeFigureProps) -> Html {
    let at = &props.at;
    let frames = at.frames.iter().enumerate().map(|(index, (frame, page_no, lsn, whole))| {
        let x = 10.0 + index as f64 * 108.0;
        html! {
            <g class={classes!("frame", (!whole).then_some("torn"))} data-frame={frame.to_string()} data-page={page_no.to_string()} data-lsn={lsn.to_string()}>
                <rect x={x.to_string()} y="40" width="102" height="44" rx="4" />
                <text x={(x + 6.0).to_string()} y="58">{ format!("frame {frame}") }</text>
                <text class="small" x={(x + 6.0).to_string()} y="76">{ format!("whole P{page_no} v{lsn}") }</text>
            </g>
        }
    });
    let db = at.db.iter().enumerate().map(|(row, (page_no, sectors))| {
        let y = 124.0 + row as f64 * 40.0;
        html! {
            <g class="db-page" data-place="db" data-page={page_no.to_string()}>
                <text class="page-name" x="10" y={(y + 20.0).to_string()}>{ format!("P{page_no}") }</text>
                { sector_boxes(50.0, y, sectors, 380.0, "db", *page_no) }
            </g>
        }
    });
    html! {
        <figure class="figure wal-mode-figure" data-figure="sqlite-wal" aria-label="SQLite's WAL mode: whole pages in the log, copied back by the checkpoint">
            <svg viewBox={format!("0 0 {WIDTH} 210")} aria-hidden="true">
                <text class="area-title" x="10" y="26">{ format!("the -wal file: one frame per committed page{}", if at.salt_resets > 0 { format!(" (reset {} after a checkpoint)", if at.salt_resets == 1 { "once".to_string() } else { crate::format::count(at.salt_resets, "time") }) } else { String::new() }) }</text>
                { for frames }
                <text class="area-title" x="10" y="112">{ "the database file: written only by a checkpoint" }</text>
                { for db }
            </svg>
            <p class="wal-caption" aria-live="polite">{ props.caption.clone() }</p>
        </figure>
    }
}
