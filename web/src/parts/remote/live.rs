//! Part 13's live view: a running `walab serve`'s `GET /trace`, drawn as it happens.
//!
//! It connects when the page was served by `walab serve` (which marks the page with a
//! `walab-serve` meta tag) or when the address has `server=URL`; otherwise it says how to
//! start one and draws nothing. What it draws is `model::live`'s fold of the events,
//! redrawn a few times a second rather than once per event.

use std::cell::RefCell;
use std::rc::Rc;

use gloo_events::EventListener;
use wasm_bindgen::JsCast;
use yew::prelude::*;

use super::figures::BatchLanes;
use crate::model::dropped::trace_json;
use crate::model::live::{persist_name, LiveState};

/// How often the view redraws while events arrive.
const REDRAW_MS: u32 = 250;


enum Connection {
    /// No server to watch: the page was not served by one and no `server=` names one.
    NoServer,
    Live(String),
    /// Not connected (yet, or any more) to this URL; the browser tries again.
    Lost(String),
}

#[derive(Default)]
struct Feed {
    state: Option<LiveState>,
    connection: Option<Connection>,
    /// Events received since the last redraw, as the feed sent them (JSON).
    pending: Vec<String>,
    changed: bool,
}

/// Events the page holds between two redraws at most; a page that falls further behind
/// skips the rest and says how many it skipped.
const PENDING_MAX: usize = 20_000;

impl Feed {
    /// Folds the pending events in: read back as one trace, with the page's one reader.
    fn fold(&mut self) {
        let (Some(state), false) = (self.state.as_mut(), self.pending.is_empty()) else { return };
        let events = std::mem::take(&mut self.pending).join(",");
        let text = format!(r#"{{"format_version":1,"scenario":"","policy":"","unit_bytes":0,"files":[],"writes":[],"events":[{events}],"events_max":0,"truncated":false}}"#);
        if let Ok(batch) = trace_json(&text) {
            for event in &batch.events {
                state.apply(event);
            }
        }
    }
}

/// Where the feed is: the address's `server=` (checked by the URL layer), else this page's
/// own server when `walab serve` served it.
fn feed_url(server: Option<&str>) -> Option<String> {
    if let Some(server) = server {
        return Some(format!("{server}/trace"));
    }
    let window = web_sys::window()?;
    let document = window.document()?;
    let origin = window.location().origin().ok()?;
    document.query_selector("meta[name='walab-serve']").ok().flatten().map(|_| format!("{origin}/trace"))
}

fn message_data(event: &web_sys::Event) -> Option<String> {
    event.dyn_ref::<web_sys::MessageEvent>()?.data().as_string()
}

/// The live feed, kept by the chapter that shows it (a hook, not a component of its own:
/// a component costs the page more than this whole view).
pub struct LiveFeed(Rc<RefCell<Feed>>);

#[hook]
pub fn use_live_feed(server: Option<String>) -> LiveFeed {
    let feed = use_mut_ref(Feed::default);
    let redraw = use_force_update();
    {
        let feed = feed.clone();
        use_effect_with(server, move |server| {
            let connected = connect(&feed, server.as_deref());
            let ticker = gloo_timers::callback::Interval::new(REDRAW_MS, move || {
                let mut feed = feed.borrow_mut();
                feed.fold();
                if std::mem::take(&mut feed.changed) {
                    redraw.force_update();
                }
            });
            move || {
                if let Some((source, listeners)) = connected {
                    source.close();
                    drop(listeners);
                }
                drop(ticker);
            }
        });
    }
    LiveFeed(feed)
}

/// The view: how to start a server, or what the connected one does.
pub fn live_view(feed: &LiveFeed) -> Html {
    let feed = feed.0.borrow();
    let (name, status) = match &feed.connection {
        None | Some(Connection::NoServer) => ("none", None),
        Some(Connection::Live(url)) => ("live", Some(format!("Watching {url} live: every event since this page connected, timed in ms from the first one."))),
        Some(Connection::Lost(url)) => ("lost", Some(format!("No answer from {url}: the server is not running or has stopped; the browser keeps trying."))),
    };
    html! {
        <div class="live-server" data-connection={name}>
            if let Some(status) = status {
                <p class={classes!("live-status", (name == "lost").then_some("error"))}>{ status }</p>
            } else {
                { super::super::markup("<p class=\"live-none note\">Everything above is simulated. When walab serve, the real stream store, serves this page, this section watches it run: batches going durable, blocks sealed, uploaded and committed. None is connected now, so nothing is drawn here. Start one on a WAL of your own, serving this page: <code class=\"live-command\">walab serve --wal file:///tmp/x --page dist</code> (dist is the page trunk build makes), open the address it prints with ?part=13, and append to it, for example with walab load --http URL --writers 8 --seconds 30. Or add server=URL to this page's address.</p>") }
            }
            if let Some(state) = &feed.state { { live_picture(state) } }
        </div>
    }
}

/// Opens the feed, if there is one to open.
fn connect(feed: &Rc<RefCell<Feed>>, server: Option<&str>) -> Option<(web_sys::EventSource, [EventListener; 3])> {
    let url = feed_url(server);
    let source = url.as_ref().and_then(|url| web_sys::EventSource::new(url).ok());
    {
        let mut feed = feed.borrow_mut();
        feed.connection = Some(match (&url, &source) {
            (None, _) => Connection::NoServer,
            (Some(url), _) => Connection::Lost(url.clone()),
        });
        feed.changed = true;
    }
    let (url, source) = (url?, source?);
    let on_header = {
        let (feed, url) = (feed.clone(), url.clone());
        EventListener::new(&source, "header", move |event| {
            let mut feed = feed.borrow_mut();
            // A new connection (also after the server restarted) starts afresh.
            if let Some(header) = message_data(event).and_then(|data| trace_json(&data).ok()) {
                feed.state = Some(LiveState::from_header(&header));
                feed.pending.clear();
                feed.connection = Some(Connection::Live(url.clone()));
                feed.changed = true;
            }
        })
    };
    let on_event = {
        let feed = feed.clone();
        EventListener::new(&source, "message", move |event| {
            let mut feed = feed.borrow_mut();
            if let (true, Some(data)) = (feed.state.is_some(), message_data(event)) {
                if feed.pending.len() < PENDING_MAX {
                    feed.pending.push(data);
                } else if let Some(state) = feed.state.as_mut() {
                    state.dropped += 1;
                }
                feed.changed = true;
            }
        })
    };
    let on_error = {
        let feed = feed.clone();
        EventListener::new(&source, "error", move |_| {
            let mut feed = feed.borrow_mut();
            feed.connection = Some(Connection::Lost(url.clone()));
            feed.changed = true;
        })
    };
    Some((source, [on_header, on_event, on_error]))
}

fn live_picture(state: &LiveState) -> Html {
    let persist = persist_name(&state.wal);
    let (run, now) = state.lanes();
    let lanes = if run.batches.is_empty() {
        super::super::markup("<p class=\"note\">Waiting for the first append.</p>")
    } else {
        html! {
            <>
            <p class="note">{ format!("The last {} batches from the first one's forming: a lane is one {persist}, the tick its acknowledgement.", run.batches.len()) }</p>
            <BatchLanes run={Rc::new(run)} now={now} request={AttrValue::from(persist)} />
            </>
        }
    };
    // The counts, the steps and the blocks as one piece of markup: the page's size budget
    // pays for a string far more cheaply than for a tree of elements.
    html! {
        <>
        { Html::from_html_unchecked(AttrValue::from(state.markup())) }
        { lanes }
        </>
    }
}
