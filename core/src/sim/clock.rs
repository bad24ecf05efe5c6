//! The one event loop every simulator runs on.
//!
//! A simulation is a sequence of instants. At each one the loop asks the simulator when
//! its next input of each kind is due (a writer arriving, something landing in a shared
//! store, something it started completing, the machine's timeout), moves to the
//! earliest, and feeds that instant in a fixed order: landings first, then completions,
//! then arrivals, then the timeout if it is due, and only then lets the simulator carry
//! out what the machine decided. Feeding every input of an instant before asking for
//! actions is the teaching page's tie rule: a write arriving as a sync completes joins
//! the *next* batch, whatever order the inputs are listed in.
//!
//! Landings are for a simulator whose storage is shared with someone other than the
//! machine (the remote WALs, where a second node takes the log over): what reaches the
//! store at an instant (a PUT stored, a row committed, the other node's claim answered)
//! is fed before any completion is reported to the machine, so a read answered at that
//! instant sees it. A simulator with nothing of the kind leaves both at their defaults.
//!
//! The timeout is read once per instant, before anything is fed, so a deadline the
//! instant's own arrivals set is handled at the next visit to that instant rather than in
//! the middle of this one.
//!
//! What each simulator feeds differs (generated arrivals and drawn latencies in
//! [`super::commit`], the tiny store's device syncs and flushes in [`super::tiny`], a
//! quorum's legs in [`crate::quorum`], requests to an object store or Postgres and a
//! takeover in [`super::remote`]); how time moves does not, so it is written once,
//! here, with a named bound on the instants a run may visit.

use core::ops::ControlFlow;

use crate::time::Nanos;

/// The most instants one run may visit, with the name it is reported by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InstantBound {
    pub name: &'static str,
    pub instants_max: u64,
}

/// A run visited its bound of instants and still had more to do (a bug in a simulator,
/// never an input problem: every bound counts the inputs a run can have).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BoundExceeded {
    pub bound: InstantBound,
}

impl core::fmt::Display for BoundExceeded {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}: the run needed more than {} instants", self.bound.name, self.bound.instants_max)
    }
}

impl std::error::Error for BoundExceeded {}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End<S> {
    /// Nothing was left to happen; `last` is the last instant visited.
    Quiet { last: Option<Nanos> },
    /// The simulator stopped the run at instant `at` (a power cut, a chosen
    /// acknowledgement, a finished load, an error).
    Stopped { at: Nanos, stop: S },
}

/// What a simulator tells the loop, and how the loop feeds it.
pub trait Simulation {
    /// Why a simulator stops a run early.
    type Stop;

    /// The next writer's arrival, if any is left.
    fn next_arrival(&self) -> Option<Nanos>;
    /// The earliest completion of anything in flight (a sync, a quorum's commit).
    fn next_completion(&self) -> Option<Nanos>;
    /// The next instant something lands in a shared store before the machine hears of
    /// it (a request that changes the store, another node's request), if the simulator
    /// has any.
    #[inline]
    fn next_landing(&self) -> Option<Nanos> {
        None
    }
    /// The machine's next deadline (a window closing, a periodic sync), if it wants one.
    fn next_timeout(&self) -> Option<Nanos>;

    /// Called once the loop has chosen `now`, before anything is fed; `Break` ends the
    /// run there (a power cut at or before `now`).
    #[inline]
    fn begin(&mut self, _now: Nanos) -> ControlFlow<Self::Stop> {
        ControlFlow::Continue(())
    }
    /// Everything that lands in the store at `now`, before any completion is fed.
    #[inline]
    fn land(&mut self, _now: Nanos) -> ControlFlow<Self::Stop> {
        ControlFlow::Continue(())
    }
    /// Everything that completes at `now`.
    fn complete(&mut self, now: Nanos) -> ControlFlow<Self::Stop>;
    /// Every writer that arrives at `now`.
    fn arrive(&mut self, now: Nanos) -> ControlFlow<Self::Stop>;
    /// The machine's deadline has passed.
    fn time_out(&mut self, now: Nanos);
    /// Carries out the machine's actions at `now` (every input of the instant is in).
    fn act(&mut self, now: Nanos) -> ControlFlow<Self::Stop>;
}

/// The earlier of two optional instants (written out: building an array of options to
/// take its minimum costs a hot loop a third of its time in store-forwarding stalls).
#[inline]
pub fn earliest(a: Option<Nanos>, b: Option<Nanos>) -> Option<Nanos> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}

/// Runs `simulation` instant by instant until nothing is left to happen, the simulator
/// stops it, or it would visit more than `bound` instants.
#[inline]
pub fn run<S: Simulation>(simulation: &mut S, bound: InstantBound) -> Result<End<S::Stop>, BoundExceeded> {
    let mut visited = 0u64;
    let mut last = None;
    loop {
        let timeout = simulation.next_timeout();
        let completion = earliest(simulation.next_landing(), simulation.next_completion());
        let next = earliest(earliest(simulation.next_arrival(), completion), timeout);
        let Some(now) = next else {
            return Ok(End::Quiet { last });
        };
        if visited == bound.instants_max {
            return Err(BoundExceeded { bound });
        }
        visited += 1;
        let instant = (|| {
            simulation.begin(now)?;
            last = Some(now);
            simulation.land(now)?;
            simulation.complete(now)?;
            simulation.arrive(now)?;
            if timeout.is_some_and(|deadline| deadline <= now) {
                simulation.time_out(now);
            }
            simulation.act(now)
        })();
        if let ControlFlow::Break(stop) = instant {
            return Ok(End::Stopped { at: now, stop });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Arrivals at given instants, each completing `latency` later; records the order in
    /// which the loop fed it.
    struct Echo {
        arrivals: Vec<Nanos>,
        next: usize,
        running: Vec<Nanos>,
        latency: Nanos,
        deadline: Option<Nanos>,
        log: Vec<(Nanos, &'static str)>,
        stop_at: Option<Nanos>,
        landings: Vec<Nanos>,
    }

    impl Echo {
        fn new(arrivals: &[u64], latency: u64) -> Echo {
            Echo {
                arrivals: arrivals.iter().map(|&at| Nanos(at)).collect(),
                next: 0,
                running: Vec::new(),
                latency: Nanos(latency),
                deadline: None,
                log: Vec::new(),
                stop_at: None,
                landings: Vec::new(),
            }
        }
    }

    impl Simulation for Echo {
        type Stop = &'static str;

        fn next_arrival(&self) -> Option<Nanos> {
            self.arrivals.get(self.next).copied()
        }
        fn next_completion(&self) -> Option<Nanos> {
            self.running.iter().copied().min()
        }
        fn next_timeout(&self) -> Option<Nanos> {
            self.deadline
        }
        fn next_landing(&self) -> Option<Nanos> {
            self.landings.iter().copied().min()
        }
        fn land(&mut self, now: Nanos) -> ControlFlow<&'static str> {
            while let Some(index) = self.landings.iter().position(|&at| at == now) {
                self.landings.swap_remove(index);
                self.log.push((now, "land"));
            }
            ControlFlow::Continue(())
        }
        fn begin(&mut self, now: Nanos) -> ControlFlow<&'static str> {
            match self.stop_at {
                Some(at) if now >= at => ControlFlow::Break("cut"),
                _ => ControlFlow::Continue(()),
            }
        }
        fn complete(&mut self, now: Nanos) -> ControlFlow<&'static str> {
            while let Some(index) = self.running.iter().position(|&done| done == now) {
                self.running.swap_remove(index);
                self.log.push((now, "complete"));
            }
            ControlFlow::Continue(())
        }
        fn arrive(&mut self, now: Nanos) -> ControlFlow<&'static str> {
            while self.next_arrival() == Some(now) {
                self.next += 1;
                self.log.push((now, "arrive"));
                self.running.push(now + self.latency);
                // A deadline set now is fed at the next visit, not this one.
                self.deadline = Some(now);
            }
            ControlFlow::Continue(())
        }
        fn time_out(&mut self, now: Nanos) {
            self.deadline = None;
            self.log.push((now, "timeout"));
        }
        fn act(&mut self, now: Nanos) -> ControlFlow<&'static str> {
            self.log.push((now, "act"));
            ControlFlow::Continue(())
        }
    }

    const BOUND: InstantBound = InstantBound { name: "test instants", instants_max: 100 };

    #[test]
    fn each_instant_feeds_completions_then_arrivals_then_the_timeout() {
        let mut echo = Echo::new(&[0, 5], 5);
        let end = run(&mut echo, BOUND).unwrap();
        assert_eq!(end, End::Quiet { last: Some(Nanos(10)) });
        let log: Vec<(u64, &str)> = echo.log.iter().map(|(at, what)| (at.0, *what)).collect();
        assert_eq!(
            log,
            [
                (0, "arrive"),
                (0, "act"),
                (0, "timeout"),
                (0, "act"),
                (5, "complete"),
                (5, "arrive"),
                (5, "act"),
                (5, "timeout"),
                (5, "act"),
                (10, "complete"),
                (10, "act"),
            ]
        );
    }

    #[test]
    fn landings_are_fed_before_the_completions_of_their_instant() {
        let mut echo = Echo { landings: vec![Nanos(7), Nanos(5)], ..Echo::new(&[0], 5) };
        assert_eq!(run(&mut echo, BOUND).unwrap(), End::Quiet { last: Some(Nanos(7)) });
        let log: Vec<(u64, &str)> = echo.log.iter().map(|(at, what)| (at.0, *what)).collect();
        assert_eq!(
            log,
            [
                (0, "arrive"),
                (0, "act"),
                (0, "timeout"),
                (0, "act"),
                (5, "land"),
                (5, "complete"),
                (5, "act"),
                (7, "land"),
                (7, "act"),
            ]
        );
    }

    #[test]
    fn a_stop_ends_the_run_before_the_instant_is_fed() {
        let mut echo = Echo { stop_at: Some(Nanos(3)), ..Echo::new(&[0, 5], 5) };
        assert_eq!(run(&mut echo, BOUND).unwrap(), End::Stopped { at: Nanos(5), stop: "cut" });
        assert!(echo.log.iter().all(|(at, _)| at.0 == 0));
    }

    #[test]
    fn a_run_past_its_bound_is_reported_by_name() {
        let mut echo = Echo::new(&[0, 1, 2, 3], 10);
        let bound = InstantBound { name: "tight", instants_max: 3 };
        let error = run(&mut echo, bound).unwrap_err();
        assert_eq!(error.to_string(), "tight: the run needed more than 3 instants");
        let mut exact = Echo::new(&[0], 10);
        let bound = InstantBound { name: "exact", instants_max: 3 };
        assert_eq!(run(&mut exact, bound).unwrap(), End::Quiet { last: Some(Nanos(10)) });
    }
}
