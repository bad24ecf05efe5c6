//! The chapters: one function or component per Part of the teaching page.
//!
//! Each chapter is short text in walab's own words beside a live model. Chapters take
//! the lab's state as props and send [`LabAction`]s up; what they show is computed in
//! [`crate::model`] from the core's runs.

use yew::prelude::*;

use crate::model::ModelRef;
use crate::player::PlayerState;
use crate::state::LabAction;
use crate::url_state::LabParams;

pub mod choice;
pub mod commit;
pub mod controls;
pub mod cut_handle;
pub mod dropped_view;
pub mod dropzone;
pub mod failed_sync;
pub mod intro;
pub mod models;
pub mod modes;
#[cfg(test)]
mod never_panics;
pub mod pages;
pub mod power;
pub mod predict;
pub mod record;
pub mod remote;
pub mod replication;
pub mod segments;
pub mod sync_calls;
pub mod torn;
pub mod wrapup;

/// The Parts' titles, as the navigation lists them.
pub const PART_TITLES: [&str; 15] = [
    "Start here",
    "What acknowledged means",
    "What fsync guarantees",
    "When fsync fails",
    "The record and the append",
    "Group commit",
    "Durability modes",
    "Power loss and torn writes",
    "Segments and truncation",
    "The WAL in B-tree engines",
    "Replication",
    "On AWS",
    "What you've learned",
    "A WAL with no local disk",
    "The WAL in Postgres",
];

/// The order the navigation lists the Parts in: the two on the WAL with no local disk come
/// after Part 11 and before the wrap-up, keeping their numbers (13 and 14), so links to
/// Part 12 keep opening it.
pub const NAV_ORDER: [u8; 15] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14, 12];

/// What every chapter receives.
#[derive(Properties, PartialEq, Clone)]
pub struct ChapterProps {
    pub params: LabParams,
    pub player: PlayerState,
    pub model: ModelRef,
    /// A dropped trace file, or why it could not be read.
    #[prop_or_default]
    pub dropped: Option<Result<crate::model::dropped::Dropped, String>>,
    /// A value typed into a field that the lab refused, for the field to show.
    #[prop_or_default]
    pub field_problem: Option<crate::state::FieldProblem>,
    pub on_action: Callback<LabAction>,
}

/// A cited source, shown beside the fact it supports.
pub fn source(name: &'static str, href: &'static str) -> Html {
    html! { <a class="source" {href} target="_blank" rel="noopener">{ format!("[{name}]") }</a> }
}

/// Static prose written as markup: one string on the page, drawn once, where the same
/// text as `html!` nodes would cost code for every element.
pub fn markup(html: &'static str) -> Html {
    Html::from_html_unchecked(AttrValue::Static(html))
}

/// Markup made at run time from the lab's own values (numbers, ids, file names), each
/// text passed through [`escape`]; cheaper than `html!` for a table's many cells.
pub fn markup_owned(html: String) -> Html {
    Html::from_html_unchecked(AttrValue::from(html))
}

/// Text made safe to place in markup.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Said wherever a dropped trace file plays: the page's address cannot carry it.
pub const LINK_NOTE: &str = "<p class=\"note link-note\">A link cannot carry a dropped file: this page's address (and any link copied from it) opens the lab's own run of this Part, not your file. To share what you see, send the file with the link.</p>";

/// The chapter for a Part.
#[component]
pub fn Chapter(props: &ChapterProps) -> Html {
    let part = props.params.part;
    let props = props.clone();
    let body = match part {
        0 => intro::start_chapter(&props),
        1 => html! { <intro::AckChapter ..props /> },
        2 => html! { <sync_calls::SyncChapter ..props /> },
        3 => failed_sync::failed_sync_chapter(&props),
        4 => html! { <record::RecordChapter ..props /> },
        5 => commit::group_commit_chapter(&props),
        6 => html! { <modes::ModesChapter ..props /> },
        7 => torn::torn_chapter(&props),
        8 => html! { <segments::SegmentsChapter ..props /> },
        9 => html! { <pages::PagesChapter ..props /> },
        10 => html! { <replication::ReplicationChapter ..props /> },
        11 => html! { <><models::BudgetCalculator ..props.clone() /><wrapup::AwsChapter ..props /></> },
        12 => html! { <wrapup::LearnedChapter ..props /> },
        13 => html! { <remote::ObjectStoreChapter ..props /> },
        14 => html! { <remote::PostgresChapter ..props /> },
        part => html! { <p class="error">{ format!("there is no Part {part}") }</p> },
    };
    // Keyed by the Part, so another Part's chapter mounts afresh (its questions, handles and
    // scenes start over) instead of being reconciled with this one's elements.
    html! { <><key={part}>{ body }</></> }
}
