//! Faults the test server injects on request, counted by PUT; and the count of every
//! request by kind ([`Control::requests_seen`], what `walab s3-server --requests-file`
//! writes out for the benchmarks).
//!
//! Every PUT the server receives gets the next number, 1 first, once it holds its key's
//! lock (object PUTs only: copies and multipart parts are not counted). A fault names the number it hits, so a
//! test that wants the next upload to fail reads [`Control::puts_seen`] and asks for
//! that plus one. Each fault fires once.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use super::latency::RequestKind;

/// What happens to one PUT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PutFault {
    /// Answer `500 InternalError` without writing anything (S3's own transient error;
    /// a client that retries sends the PUT again, and the retry gets the next number).
    Fail,
    /// Hold the PUT this long after its precondition was checked and before it is
    /// written (still under the key's lock): a slow write inside the store.
    Stall(Duration),
    /// Close the connection without an answer before anything is written.
    DropBeforeWrite,
    /// Write the object, then close the connection without an answer: the client
    /// cannot tell a stored object from a lost one.
    DropAfterWrite,
}

/// Faults still to fire, the PUT counter, and the server's switches. Shared between
/// the server and whoever starts it (tests, `walab s3-server` flags).
#[derive(Debug)]
pub struct Control {
    puts: AtomicU64,
    faults: Mutex<BTreeMap<u64, PutFault>>,
    locking: AtomicBool,
    /// Requests received, by [`RequestKind`] (as the latency profile classes them).
    requests: [AtomicU64; 5],
}

impl Default for Control {
    fn default() -> Control {
        Control {
            puts: AtomicU64::new(0),
            faults: Mutex::new(BTreeMap::new()),
            locking: AtomicBool::new(true),
            requests: Default::default(),
        }
    }
}

impl Control {
    /// Requests of `kind` received so far (every request, whatever its outcome).
    pub fn requests_seen(&self, kind: RequestKind) -> u64 {
        self.requests[kind as usize].load(Ordering::SeqCst)
    }

    /// The counts as lines `KIND N`, one per kind (`put`, `head`, `get`, `list`, `delete`).
    pub fn requests_text(&self) -> String {
        RequestKind::ALL.iter().map(|kind| format!("{} {}\n", kind.name(), self.requests_seen(*kind))).collect()
    }

    pub(super) fn count_request(&self, kind: RequestKind) {
        self.requests[kind as usize].fetch_add(1, Ordering::SeqCst);
    }

    /// PUTs received so far.
    pub fn puts_seen(&self) -> u64 {
        self.puts.load(Ordering::SeqCst)
    }

    /// Asks for `fault` on the `nth` PUT (1 is the first the server receives); a later
    /// call for the same number replaces it.
    pub fn put_fault(&self, nth: u64, fault: PutFault) {
        self.faults.lock().expect("fault table").insert(nth, fault);
    }

    /// Fails the `nth` PUT with `500 InternalError`.
    pub fn fail_put(&self, nth: u64) {
        self.put_fault(nth, PutFault::Fail);
    }

    /// Holds the `nth` PUT for `stall` between its check and its write.
    pub fn stall_put(&self, nth: u64, stall: Duration) {
        self.put_fault(nth, PutFault::Stall(stall));
    }

    /// Closes the `nth` PUT's connection without an answer, before the write or after.
    pub fn drop_put_connection(&self, nth: u64, after_write: bool) {
        self.put_fault(nth, if after_write { PutFault::DropAfterWrite } else { PutFault::DropBeforeWrite });
    }

    /// Faults asked for and not yet fired.
    pub fn faults_pending(&self) -> usize {
        self.faults.lock().expect("fault table").len()
    }

    /// Whether a conditional PUT checks and writes under its key's lock (the default).
    /// Off, the check and the write are two steps another request can come between,
    /// as in s3s-fs alone: only for tests that must see that race.
    pub fn set_locking(&self, on: bool) {
        self.locking.store(on, Ordering::SeqCst);
    }

    pub fn locking(&self) -> bool {
        self.locking.load(Ordering::SeqCst)
    }

    /// Counts one PUT and takes the fault asked for it, if any.
    pub(super) fn next_put(&self) -> Option<PutFault> {
        let nth = self.puts.fetch_add(1, Ordering::SeqCst) + 1;
        self.faults.lock().expect("fault table").remove(&nth)
    }
}

/// Parses `N` (a PUT number, at least 1).
pub fn parse_put_number(flag: &str, text: &str) -> Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(nth) if nth >= 1 => Ok(nth),
        _ => Err(format!("{flag}: {text:?} is not a PUT number (1 is the first PUT)")),
    }
}

/// Parses `N:MS` for `--stall-put`.
pub fn parse_stall(text: &str) -> Result<(u64, Duration), String> {
    let (nth, millis) =
        text.split_once(':').ok_or_else(|| format!("--stall-put: expected N:MS (PUT number, milliseconds), found {text:?}"))?;
    let nth = parse_put_number("--stall-put", nth)?;
    let stall = walab_core::time::Nanos::parse_millis(millis)
        .ok_or_else(|| format!("--stall-put: {millis:?} is not a number of milliseconds"))?;
    Ok((nth, Duration::from_nanos(stall.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_fault_fires_once_on_its_put() {
        let control = Control::default();
        control.fail_put(2);
        control.stall_put(3, Duration::from_millis(5));
        assert_eq!(control.next_put(), None);
        assert_eq!(control.next_put(), Some(PutFault::Fail));
        assert_eq!(control.next_put(), Some(PutFault::Stall(Duration::from_millis(5))));
        assert_eq!(control.next_put(), None);
        assert_eq!(control.puts_seen(), 4);
        assert_eq!(control.faults_pending(), 0);
    }

    #[test]
    fn fault_flags_parse_or_say_what_is_wrong() {
        assert_eq!(parse_stall("4:2.5"), Ok((4, Duration::from_micros(2_500))));
        assert_eq!(parse_stall("4"), Err("--stall-put: expected N:MS (PUT number, milliseconds), found \"4\"".into()));
        assert_eq!(parse_stall("0:5"), Err("--stall-put: \"0\" is not a PUT number (1 is the first PUT)".into()));
        assert_eq!(parse_put_number("--fail-put", "x"), Err("--fail-put: \"x\" is not a PUT number (1 is the first PUT)".into()));
    }
}
