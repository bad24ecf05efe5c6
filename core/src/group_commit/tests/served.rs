//! Closed-loop writers behind a server, as `walab serve`'s producers are: the persists
//! take an object store's round trip (20 to 40 ms, uniform, as `walab s3-server
//! --latency s3-standard`), and every answered writer passes through one server that
//! spends a fixed time on each (answering it, reading its next request) before its next
//! record is appended. Answers therefore come back spread over the server's work, and
//! with enough writers the server, not the store, is the bottleneck.

use std::collections::BTreeMap;

use super::*;
use crate::rng::Rng;
use crate::session::preset::{Storage, Tuning, OBJECT_STORE_BEHIND_HTTP_PIPELINE_ROUND_TRIP_PERCENT};
use crate::sim::clock::{self, InstantBound, Simulation};

struct Served {
    machine: GroupCommit,
    rng: Rng,
    /// The server's time per writer (answer + next request).
    serve: Nanos,
    /// Writers waiting for the server, and when the one it is on appends (the server
    /// is idle when none).
    queue: u64,
    in_service: Option<Nanos>,
    running: Vec<(Nanos, BatchId)>,
    appended_at: BTreeMap<u64, Nanos>,
    /// After `warm_up`: every append-to-answer latency, each persist's records.
    warm_up: Nanos,
    until: Nanos,
    latencies: Vec<Nanos>,
    batches: Vec<u64>,
    /// Round trips drawn, for the mean.
    round_trips: Vec<Nanos>,
    acked: u64,
}

/// What a run measured after its warm-up.
#[derive(Debug)]
struct Measured {
    /// Records answered per second.
    records_per_s: u64,
    /// Persists per 100,000 records.
    persists_per_100k: u64,
    /// Persists per mean round trip, in hundredths (100: one in flight on average).
    inflight_hundredths: u64,
    p50: Nanos,
    p99: Nanos,
    /// The mean round trip the store took.
    round_trip: Nanos,
}

const MS: u64 = 1_000_000;

fn served(tuning: Tuning, writers: u64, serve: Nanos) -> Measured {
    let config = Storage::ObjectStore.config(&tuning);
    let mut sim = Served {
        machine: GroupCommit::new(config).unwrap(),
        rng: Rng::new(7),
        serve,
        queue: writers - 1,
        in_service: Some(serve),
        running: Vec::new(),
        appended_at: BTreeMap::new(),
        warm_up: Nanos(2_000 * MS),
        until: Nanos(8_000 * MS),
        latencies: Vec::new(),
        batches: Vec::new(),
        round_trips: Vec::new(),
        acked: 0,
    };
    let bound = InstantBound { name: "served closed loop", instants_max: 50_000_000 };
    clock::run(&mut sim, bound).unwrap();
    sim.latencies.sort();
    let seconds = (sim.until.0 - sim.warm_up.0) / (1_000 * MS);
    let records: u64 = sim.batches.iter().sum();
    let round_trip = Nanos(sim.round_trips.iter().map(|r| r.0).sum::<u64>() / sim.round_trips.len() as u64);
    let window = sim.until.0 - sim.warm_up.0;
    Measured {
        records_per_s: sim.acked / seconds,
        persists_per_100k: sim.batches.len() as u64 * 100_000 / records.max(1),
        inflight_hundredths: sim.batches.len() as u64 * round_trip.0 * 100 / window,
        p50: sim.latencies[sim.latencies.len() / 2],
        p99: sim.latencies[sim.latencies.len() * 99 / 100],
        round_trip,
    }
}

impl Simulation for Served {
    type Stop = ();

    fn next_arrival(&self) -> Option<Nanos> {
        // An arrival is the server finishing a writer: its record is appended.
        self.in_service
    }
    fn next_completion(&self) -> Option<Nanos> {
        self.running.iter().map(|(at, _)| *at).min()
    }
    fn next_timeout(&self) -> Option<Nanos> {
        self.machine.poll_timeout()
    }
    fn complete(&mut self, now: Nanos) -> core::ops::ControlFlow<()> {
        let (done, running): (Vec<_>, Vec<_>) = self.running.drain(..).partition(|(at, _)| *at == now);
        self.running = running;
        for (_, batch) in done {
            self.machine.handle_persisted(now, batch, Ok(())).unwrap();
        }
        core::ops::ControlFlow::Continue(())
    }
    fn arrive(&mut self, now: Nanos) -> core::ops::ControlFlow<()> {
        if now >= self.until {
            return core::ops::ControlFlow::Break(());
        }
        if self.in_service != Some(now) {
            return core::ops::ControlFlow::Continue(());
        }
        let ticket = self.machine.handle_append(now, 1, &[1u8; 100]).unwrap();
        self.appended_at.insert(ticket.0, now);
        // The server takes the next writer in its queue, if one waits.
        self.in_service = (self.queue > 0).then(|| now + self.serve);
        self.queue = self.queue.saturating_sub(1);
        core::ops::ControlFlow::Continue(())
    }
    fn time_out(&mut self, now: Nanos) {
        self.machine.handle_timeout(now);
    }
    fn act(&mut self, now: Nanos) -> core::ops::ControlFlow<()> {
        while let Some(action) = self.machine.poll_action() {
            match action {
                Action::Persist(batch) => {
                    let round_trip = Nanos((20 + self.rng.below(21)) * MS);
                    if now >= self.warm_up {
                        self.batches.push(batch.tickets.count);
                        self.round_trips.push(round_trip);
                    }
                    self.running.push((now + round_trip, batch.id));
                }
                Action::Ack(tickets) => {
                    for ticket in tickets.iter() {
                        let appended = self.appended_at.remove(&ticket.0).expect("an appended ticket");
                        if now >= self.warm_up {
                            self.latencies.push(now - appended);
                            self.acked += 1;
                        }
                        // To the server: an idle one takes the writer at once.
                        match self.in_service {
                            None => self.in_service = Some(now + self.serve),
                            Some(_) => self.queue += 1,
                        }
                    }
                }
                other => panic!("a group policy asks for no {other:?}"),
            }
        }
        core::ops::ControlFlow::Continue(())
    }
}

/// The object store's preset as `walab serve` runs it.
fn behind_http() -> Tuning {
    Tuning { pipeline_round_trip_percent: Some(OBJECT_STORE_BEHIND_HTTP_PIPELINE_ROUND_TRIP_PERCENT), ..Tuning::default() }
}

fn round_trip_percent(percent: u32) -> Tuning {
    Tuning { pipeline_round_trip_percent: Some(percent), ..Tuning::default() }
}

#[test]
fn behind_a_server_1024_writers_share_fewer_persists_than_one_per_round_trip() {
    for serve_us in [40, 60] {
        let serve = Nanos::from_micros(serve_us);
        let by_slot = served(Tuning::default(), 1024, serve);
        let one_at_a_time = served(Tuning { inflight_max: Some(1), ..Tuning::default() }, 1024, serve);
        let paced = served(behind_http(), 1024, serve);
        let context = format!("{serve_us} us a writer: by slot {by_slot:?}, one at a time {one_at_a_time:?}, paced {paced:?}");
        // By slot every free slot sends whoever has come back: nearly four in flight.
        assert!(by_slot.inflight_hundredths >= 350, "{context}");
        // Paced, a persist starts every round trip and a half: fewer persists than one
        // at a time makes, let alone the slots.
        assert!(paced.inflight_hundredths <= 80, "{context}");
        assert!(paced.persists_per_100k * 3 <= by_slot.persists_per_100k, "{context}");
        assert!(paced.persists_per_100k * 100 <= one_at_a_time.persists_per_100k * 85, "{context}");
        // A record waits at most a round trip and a half for its persist to start, then
        // its own round trip (20 to 40 ms): 85 ms at the mean, 100 at the longest.
        assert!(paced.p99 <= Nanos(100 * MS), "{context}");
        assert!(paced.p50 <= paced.round_trip + paced.round_trip, "{context}");
        if serve_us == 60 {
            // Where the server is the bottleneck (at most 16,666 appends a second) the
            // gathering costs less than a fifth of what it answers.
            assert!(paced.records_per_s * 5 >= by_slot.records_per_s * 4, "{context}");
        }
    }
}

#[test]
fn behind_a_server_64_writers_ride_one_persist_per_round_trip() {
    let serve = Nanos::from_micros(60);
    let paced = served(behind_http(), 64, serve);
    let a_round_trip_s_worth = served(round_trip_percent(100), 64, serve);
    let context = format!("paced {paced:?}, a round trip's worth {a_round_trip_s_worth:?}");
    // Answered over 64 x 60 us, longer than the object store's cohort hold (a tenth of a
    // round trip): without the paced hold the writers split into cohorts that take turns.
    assert!(a_round_trip_s_worth.persists_per_100k >= 2_000, "{context}");
    assert!(a_round_trip_s_worth.p99 >= Nanos(70 * MS), "{context}");
    // The paced hold waits for them all: every persist carries all 64, and an append
    // waits one round trip and the server's turn.
    assert_eq!(paced.persists_per_100k, 100_000 / 64, "{context}");
    assert!(paced.p99 <= Nanos(45 * MS), "{context}");
}

#[test]
fn behind_a_server_a_lone_writer_never_waits() {
    let lone = served(behind_http(), 1, Nanos::from_micros(60));
    assert_eq!(lone.persists_per_100k, 100_000, "every append its own persist: {lone:?}");
    assert!(lone.p99 <= Nanos(40 * MS), "one round trip, no gathering: {lone:?}");
    assert_eq!(lone.inflight_hundredths, 99, "one persist in flight all the time (less the server's turns): {lone:?}");
}
