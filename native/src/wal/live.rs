//! A live feed of a running WAL's trace, for `walab serve`'s `GET /trace`.
//!
//! The driver and `walab serve`'s upload hand their events to one [`LiveTrace`], which
//! stamps each with its own monotonic clock under a lock (so the feed is in time order
//! whichever thread sent what) and broadcasts it to every listener. Nothing is built
//! while nobody listens: [`LiveTrace::listening`] is one atomic load, and the driver
//! checks it before making an event.
//!
//! Bounded: each listener has a window of [`LIVE_EVENTS_BUFFERED`] events; a listener
//! that falls further behind loses the oldest of them, and its [`Listener::next`] says
//! how many instead (a `note`), so a slow client never holds memory or the driver back.
//!
//! The events are the core's [`Event`]s, in the JSON `--trace` writes. Their files, in
//! the header every listener gets first ([`LiveTrace::header`]): the WAL, named by its
//! URL (every batch's persist is a sync on it, whatever the storage), `objects` (an object's PUT is sync
//! [`OBJECT_SYNC_BASE`] + its id) and `meta` (the metadata log). Writes are numbered as
//! the log session numbers them: from 1 at the WAL's opening, so on a new WAL a write's
//! number is its seq ([`walab_core::session::trace`]).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::broadcast;
use walab_core::time::Nanos;
use walab_core::trace::{Event, FileKind, Trace, TraceEvent};

/// Events a listener may fall behind by before it loses the oldest.
pub const LIVE_EVENTS_BUFFERED: usize = 4096;

/// The live trace's files, by index.
pub const WAL_FILE: u32 = 0;
pub const OBJECTS_FILE: u32 = 1;
pub const META_FILE: u32 = 2;

pub use walab_core::trace::OBJECT_SYNC_BASE;

/// The feed one WAL (and the server around it) writes to.
pub struct LiveTrace {
    started: Instant,
    listeners: AtomicUsize,
    /// The last stamp handed out, held while sending so stamps follow the send order.
    last: Mutex<Nanos>,
    sender: broadcast::Sender<TraceEvent>,
    scenario: String,
    /// The group-commit policy's name and the WAL's, for the header.
    wal: Mutex<(String, String)>,
}

impl LiveTrace {
    pub fn new(scenario: &str) -> Arc<LiveTrace> {
        let (sender, _) = broadcast::channel(LIVE_EVENTS_BUFFERED);
        Arc::new(LiveTrace {
            started: Instant::now(),
            listeners: AtomicUsize::new(0),
            last: Mutex::new(Nanos::ZERO),
            sender,
            scenario: scenario.to_string(),
            wal: Mutex::new((String::new(), "wal".to_string())),
        })
    }

    /// Whether anyone listens: when not, callers make no event at all.
    pub fn listening(&self) -> bool {
        self.listeners.load(Ordering::Relaxed) > 0
    }

    /// The group-commit policy's name and the WAL's (`file://...`, `s3://...`), for the
    /// header; set by the WAL when it opens.
    pub fn set_wal(&self, policy: &str, name: &str) {
        *self.wal.lock().unwrap_or_else(|p| p.into_inner()) = (policy.to_string(), name.to_string());
    }

    /// Sends one event, stamped now, to every listener; nothing when nobody listens.
    pub fn emit(&self, event: Event) {
        if !self.listening() {
            return;
        }
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        let at = Nanos(self.started.elapsed().as_nanos() as u64).max(*last);
        *last = at;
        // An error means the last listener left meanwhile: nobody to tell.
        let _ = self.sender.send(TraceEvent { at, event });
    }

    /// Emits the events `make` gives, only when someone listens.
    pub fn emit_with(&self, make: impl FnOnce() -> Vec<Event>) {
        if self.listening() {
            for event in make() {
                self.emit(event);
            }
        }
    }

    /// The time on this feed's clock.
    pub fn now(&self) -> Nanos {
        Nanos(self.started.elapsed().as_nanos() as u64)
    }

    /// What a listener needs before the first event: a trace with the files and no
    /// events, `events_max` 0 (the feed has no end).
    pub fn header(&self) -> Trace {
        let (policy, wal) = self.wal.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let mut trace = Trace::new(&self.scenario, &policy, 0);
        trace.events_max = 0;
        trace.add_file(&wal, FileKind::Log, 0);
        trace.add_file("objects", FileKind::Table, 0);
        trace.add_file("meta", FileKind::Manifest, 0);
        trace
    }

    /// A new listener: it gets every event sent from now on.
    pub fn listen(self: &Arc<Self>) -> Listener {
        let receiver = self.sender.subscribe();
        self.listeners.fetch_add(1, Ordering::Relaxed);
        Listener { live: Arc::clone(self), receiver, dropped: 0, pending: None }
    }
}

/// One listener's place in the feed. Dropping it stops the feed's work once it was the
/// last.
pub struct Listener {
    live: Arc<LiveTrace>,
    receiver: broadcast::Receiver<TraceEvent>,
    /// Events lost so far because this listener fell behind.
    pub dropped: u64,
    /// The event after a note of lost events.
    pending: Option<TraceEvent>,
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.live.listeners.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Listener {
    /// The next event; when this listener fell behind, first a note saying how many
    /// events it lost, stamped like the event after them. `None` once the feed is gone.
    pub async fn next(&mut self) -> Option<TraceEvent> {
        if let Some(event) = self.pending.take() {
            return Some(event);
        }
        let mut lost = 0;
        let event = loop {
            match self.receiver.recv().await {
                Ok(event) => break event,
                Err(broadcast::error::RecvError::Lagged(count)) => lost += count,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        };
        if lost == 0 {
            return Some(event);
        }
        self.dropped += lost;
        let text = format!(
            "{lost} events dropped here: this connection fell more than {LIVE_EVENTS_BUFFERED} events behind the server ({} dropped since it connected)",
            self.dropped
        );
        let at = event.at;
        self.pending = Some(event);
        Some(TraceEvent { at, event: Event::Note { text } })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_listener_that_falls_behind_is_told_how_many_events_it_lost_and_goes_on_in_order() {
        let live = LiveTrace::new("test");
        live.emit(Event::Arrive { write: 0 });
        let mut listener = live.listen();
        assert!(live.listening());
        let sent = LIVE_EVENTS_BUFFERED as u64 + 100;
        for write in 1..=sent {
            live.emit(Event::Arrive { write });
        }
        let note = listener.next().await.unwrap();
        let Event::Note { text } = &note.event else { panic!("first a note, got {note:?}") };
        assert!(text.starts_with("100 events dropped here"), "{text}");
        assert_eq!(listener.dropped, 100);
        let mut last = note.at;
        // Then the newest events, from the first one kept, in order, none missing.
        for write in 101..=sent {
            let event = listener.next().await.unwrap();
            assert_eq!(event.event, Event::Arrive { write });
            assert!(event.at >= last, "time order");
            last = event.at;
        }
        drop(listener);
        assert!(!live.listening(), "no listener, no work");
    }

    #[test]
    fn nothing_is_kept_while_nobody_listens() {
        let live = LiveTrace::new("test");
        let mut made = false;
        live.emit_with(|| {
            made = true;
            vec![Event::Arrive { write: 1 }]
        });
        assert!(!made, "no event is made without a listener");
        let listener = live.listen();
        live.emit_with(|| {
            made = true;
            Vec::new()
        });
        assert!(made);
        drop(listener);
    }
}
