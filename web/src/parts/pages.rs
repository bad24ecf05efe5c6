//! Part 9: the WAL in B-tree engines: pages, checkpoints, torn write-backs and REDO.

use std::collections::BTreeMap;
use std::rc::Rc;

use walab_core::pages::page::{Page, PageNo, PageReadError};
use walab_core::pages::sqlite_wal::WalEvent;
use yew::prelude::*;

use super::ChapterProps;
use crate::model::redo_quorum_budget::describe_page_event;
use crate::model::Model;
use crate::model::pages_view::{pages_at, wal_at};
use crate::figures::pages::{PagesFigure, WalModeFigure};
use crate::layout::Scene;
use crate::player::{player, Clock, PlayerProps};
use crate::state::{LabAction, Setting};
use crate::url_state::PageProtection;

/// A page's cell: its pageLSN and entries, or why it cannot be read.
fn page_cell(page: Option<&Result<Page, PageReadError>>, label: &str) -> String {
    let (class, text) = match page {
        Some(Ok(page)) => ("", format!("pageLSN {}: {}", page.page_lsn, page.describe_entries())),
        Some(Err(PageReadError::Checksum)) => ("danger", "torn: checksum fails".to_string()),
        Some(Err(PageReadError::Malformed)) => ("danger", "malformed".to_string()),
        None => ("", "-".to_string()),
    };
    format!("<td class=\"{class}\" data-label=\"{label}\">{text}</td>")
}

/// Each page at the cut, after recovery and as it was in memory: markup (the keys and
/// values are the tiny store's, plain words).
fn pages_table(at_cut: &BTreeMap<PageNo, Result<Page, PageReadError>>, after: &BTreeMap<PageNo, Result<Page, PageReadError>>, expected: &BTreeMap<PageNo, Page>) -> String {
    let rows: String = expected.iter().map(|(page_no, page)| {
        let good = after.get(page_no).and_then(|page| page.as_ref().ok()) == Some(page);
        format!("<tr data-page=\"{0}\" data-recovered=\"{good}\"><td data-label=\"page\">P{0}</td>{1}{2}<td data-label=\"in memory before\">pageLSN {3}: {4}</td>\
            <td class=\"{5}\" data-label=\"recovered?\">{6}</td></tr>", page_no.0, page_cell(at_cut.get(page_no), "on disk at the cut"),
            page_cell(after.get(page_no), "after recovery"), page.page_lsn, page.describe_entries(),
            if good { "ok" } else { "danger" }, if good { "yes" } else { "NO" })
    }).collect();
    format!("<table class=\"pages stack\"><thead><tr><th>page</th><th>on disk at the power cut</th>\
        <th>after recovery</th><th>before the cut, in memory</th><th>recovered?</th></tr></thead><tbody>{rows}</tbody></table>")
}

#[component]
pub fn PagesChapter(props: &ChapterProps) -> Html {
    let Model::Redo(model) = &*props.model.0 else { return Html::default() };
    let on_player = props.on_action.reform(LabAction::Player);
    let on_protection = props.on_action.reform(|event: Event| {
        let select: web_sys::HtmlSelectElement = event.target_unchecked_into();
        LabAction::Set(Setting::Protection(PageProtection::from_name(&select.value()).unwrap_or(PageProtection::FullPageImages)))
    });
    let done = model.events_done(props.player.now);
    // Only the steps already taken are listed: the later ones would show the final pages.
    // The steps taken, as markup: one string, not a node per step.
    let events: String = model.events.iter().enumerate().take(done).map(|(index, event)| format!(
        "<li class=\"page-event done{}\">{}</li>", if index == model.recovery_from { " recovery-start" } else { "" }, super::escape(&describe_page_event(event)))).collect();
    let caption = AttrValue::from(model.caption_now(props.player.now));
    let figure = model.branch.as_ref().ok().map(|branch| {
        let at = pages_at(&model.events, done, &branch.crash.expected, SECTORS_PER_PAGE);
        html! { <PagesFigure at={Rc::new(at)} /> }
    });
    let sqlite = match &model.sqlite {
        Ok(events) => html! { <SqliteStepper events={Rc::new(events.clone())} /> },
        Err(error) => html! { <p class="error">{ format!("the WAL-mode model refused the run: {error}") }</p> },
    };
    let finished = done >= model.events.len();
    let result = match &model.branch {
        Ok(_) if !finished => html! { <p class="note">{ "Step on through recovery: the pages it rebuilds appear in the buffer pool as REDO reaches them." }</p> },
        Ok(branch) => {
            let all = branch.recovered_everything();
            super::markup_owned(format!("<p class=\"verdict-line {}\" data-recovered-everything=\"{all}\">{}</p>\
                <details class=\"pages-detail\"><summary>each page, at the cut and after recovery</summary>{}</details>",
                if all { "ok" } else { "danger" },
                if all { "Recovery rebuilt both pages exactly as they were before the power cut." }
                else { "Recovery could not rebuild the torn page: the log since the redo point does not hold all of it." },
                pages_table(&branch.pages_at_cut, &branch.pages_after, &branch.crash.expected)))
        }
        Err(error) => html! { <p class="error">{ format!("the page engine refused the run: {error}") }</p> },
    };
    let settings = html! {
        <div class="controls">
            { super::markup(LESSON) }
            <label>{ "torn-page protection " }<select class="protection" onchange={on_protection}>
                { for PageProtection::ALL.iter().map(|protection| html! {
                    <option value={protection.name()} selected={*protection == props.params.protection}>{ protection.label() }</option>
                }) }
            </select></label>
        </div>
    };
    html! {
        <>
        <Scene name="pages" controls={player(&PlayerProps { state: props.player.clone(), on_action: on_player, mark_name: "step".into(), caption: Some(caption), clock: Clock::Steps, ..PlayerProps::default() })}
            {settings} figure={figure.unwrap_or_default()} outcome={result}>
            <div class="prose">
                { super::markup(PAGES) }
                { super::markup_owned(format!("<details class=\"more page-steps\"><summary>every step so far ({done})</summary><ol class=\"page-events\" data-done=\"{done}\">{events}</ol></details>")) }
            </div>
        </Scene>
        <Scene name="sqlite-wal" title="SQLite's WAL mode: whole pages in the log" figure={sqlite}>
            { super::markup("<div class=\"prose\"><p>SQLite in WAL mode logs no changes: each commit appends a frame holding the whole new page to \
                the -wal file and syncs it. The database file is written only by a checkpoint, which copies each page's newest \
                frame back; until it finishes, the -wal file still holds every page whole, so a torn copy is repaired by \
                checkpointing again. The same eight writes, a checkpoint after write 4 and one after write 8 that the power cuts \
                halfway through P1's copy.</p></div>") }
        </Scene>
        </>
    }
}

/// Sectors in one of branch B's pages (64-byte pages of 32-byte sectors).
const SECTORS_PER_PAGE: usize = crate::model::redo_quorum_budget::PAGE_BYTES / crate::model::redo_quorum_budget::SECTOR_BYTES;

#[derive(Properties, PartialEq)]
struct SqliteStepperProps {
    events: Rc<Vec<WalEvent>>,
}

/// SQLite's run, stepped on its own (its steps are not the page engine's).
#[component]
fn SqliteStepper(props: &SqliteStepperProps) -> Html {
    // It opens on the power cut: the checkpoint's copy of P1 torn, the -wal file still whole.
    let step = use_state(|| props.events.iter().position(|event| matches!(event, WalEvent::PowerCut)).map_or(props.events.len(), |cut| cut + 1));
    let total = props.events.len();
    let at = wal_at(&props.events, *step, SECTORS_PER_PAGE);
    let caption = match step.checked_sub(1).and_then(|index| props.events.get(index)) {
        Some(event) => format!("SQLite step {} of {total}: {}.", *step, event.describe()),
        None => "SQLite, before the first write: the -wal file and the database file are empty.".to_string(),
    };
    let back = {
        let step = step.clone();
        Callback::from(move |_: MouseEvent| step.set(step.saturating_sub(1)))
    };
    let forward = {
        let step = step.clone();
        Callback::from(move |_: MouseEvent| step.set((*step + 1).min(total)))
    };
    let start = {
        let step = step.clone();
        Callback::from(move |_: MouseEvent| step.set(0))
    };
    html! {
        <div class="sqlite-stepper" data-step={step.to_string()}>
            <div class="mini-player" role="group" aria-label="SQLite steps">
                <button class="sqlite-start" onclick={start}>{ "⇤" }</button>
                <button class="sqlite-back" onclick={back}>{ "◀ step" }</button>
                <button class="sqlite-forward" onclick={forward}>{ "step ▶" }</button>
                <span class="mark-count">{ format!("step {} of {total}", *step) }</span>
            </div>
            <WalModeFigure at={Rc::new(at)} caption={caption} />
        </div>
    }
}

/// Pages, pageLSN, checkpoints and torn pages.
const PAGES: &str = "<p>Beside this: writes 1 to 8 on two pages (P1 holds the order: keys, P2 the user: keys). A checkpoint after write 4 writes the dirty pages back and records the redo point, where recovery starts; P2 is written back after write 6, and P1's write-back after write 8 is torn by a power cut. The figure opens just after the cut: step back to watch the run, on through recovery, then set the protection to none.</p><details class=\"more\"><summary>Pages, no-force and steal, checkpoints, torn pages: more</summary><p>PostgreSQL, InnoDB and SQLite keep data in fixed-size pages (8 KB in PostgreSQL, 16 KB in InnoDB) and change them in place. They log first too, and add one rule: a dirty page may be written back only once the log is durable up to that page's last change. A commit waits for its log record, never for its pages (no-force), and a page may be written before its transaction commits (steal): ARIES-style recovery. <a class=\"source\" href=\"https://www.postgresql.org/docs/current/wal-intro.html\" target=\"_blank\" rel=\"noopener\">[PostgreSQL: WAL introduction]</a></p><p>A page spans many sectors. PostgreSQL logs a full-page image with the first change to each page after a checkpoint; InnoDB writes every page first to a doublewrite buffer and syncs it before writing the page in place. <a class=\"source\" href=\"https://www.postgresql.org/docs/current/runtime-config-wal.html#GUC-FULL-PAGE-WRITES\" target=\"_blank\" rel=\"noopener\">[PostgreSQL: full_page_writes]</a><a class=\"source\" href=\"https://dev.mysql.com/doc/refman/8.4/en/innodb-doublewrite-buffer.html\" target=\"_blank\" rel=\"noopener\">[MySQL: doublewrite buffer]</a></p></details>";
/// The lesson, beside the figure at every width.
const LESSON: &str = "<p class=\"lesson\"><strong>The lesson:</strong> each page stores the LSN of the last log record applied to it, its pageLSN, so it says which records it already holds. REDO applies a record only when the record's LSN is above the page's: replaying the log twice changes nothing. A power cut can tear a page half-written, and a small log record cannot repair half a page: a full-page image in the log (PostgreSQL) or a doublewrite copy (InnoDB) gives REDO a whole page to start from. Without either, the torn page is lost.</p>";
