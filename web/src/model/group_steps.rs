//! Group commit's figure state: the queue, the leader and its batch, at the player's instant,
//! and a caption for every instant, both read from the group-commit run's trace.
//!
//! While a sync runs, arriving writes queue. When it returns, the writes of its batch
//! are woken with their OK, and the first write in the queue becomes the leader: it
//! takes the whole queue as one batch, writes it once and syncs once. The tie rule is
//! the case where a write arrives at the very instant a sync returns: it was not in that
//! sync, so it joins the batch the next leader forms at that same instant. Everything
//! here is derived from the trace's events, so a dropped trace could be captioned too.

use walab_core::time::Nanos;
use walab_core::trace::{Event, Trace};

/// The tie rule on a run of its own (the tiny store's arrivals never meet a sync's
/// end exactly): writes at 0, 0.5 and 1.0 ms with L = 1 ms, so write 3 arrives at the
/// instant B1's sync returns.
pub fn tie_example() -> Result<Trace, String> {
    use walab_core::group_commit::{Config, Policy};
    use walab_core::sim::commit::{self, Arrivals, CommitSetup, Keep};
    let latency = Nanos::from_millis(1);
    let setup = CommitSetup { keep: Keep::ALL, ..CommitSetup::new(Config::file(Policy::Group), latency) };
    let arrivals = Arrivals::Given(vec![Nanos::ZERO, Nanos(latency.0 / 2), latency]);
    let run = commit::run(&setup, &arrivals).map_err(|error| error.to_string())?;
    run.trace.ok_or_else(|| "the simulator kept no trace".to_string())
}

/// Where a write is in group commit's figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    NotYet,
    Queued,
    /// In the batch whose sync is running; `leader` is the write that formed it.
    Syncing { batch: u64, leader: bool },
    Acked,
    Failed,
}

impl Slot {
    pub fn name(self) -> &'static str {
        match self {
            Slot::NotYet => "not-yet",
            Slot::Queued => "queued",
            Slot::Syncing { leader: true, .. } => "leader",
            Slot::Syncing { .. } => "syncing",
            Slot::Acked => "acked",
            Slot::Failed => "failed",
        }
    }
}

/// A batch whose sync runs at the instant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunningBatch {
    pub batch: u64,
    pub leader: u64,
    pub writes: Vec<u64>,
    pub bytes: u64,
    pub start: Nanos,
}

/// The figure at one instant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupAt {
    pub at: Nanos,
    /// Indexed by write id - 1.
    pub slots: Vec<Slot>,
    /// Queued writes in arrival order.
    pub queue: Vec<u64>,
    pub running: Vec<RunningBatch>,
    /// The writes woken with OK at this very instant.
    pub woken: Vec<u64>,
    /// A write that arrived exactly when a sync returned, if the tie rule applied now.
    pub tie: Option<u64>,
}

/// Every event of the trace, folded into the figure at `t`.
pub fn group_at(trace: &Trace, t: Nanos) -> GroupAt {
    let mut slots = vec![Slot::NotYet; trace.writes.len()];
    let mut arrival_order: Vec<u64> = Vec::new();
    let mut running: Vec<RunningBatch> = Vec::new();
    let mut sync_batch: Vec<(u64, u64)> = Vec::new();
    let mut woken = Vec::new();
    let set = |slots: &mut Vec<Slot>, id: u64, slot: Slot| {
        if let Some(entry) = usize::try_from(id).ok().and_then(|id| id.checked_sub(1)).and_then(|index| slots.get_mut(index)) {
            *entry = slot;
        }
    };
    for event in trace.events.iter().take_while(|event| event.at <= t) {
        match &event.event {
            Event::Arrive { write } => {
                set(&mut slots, *write, Slot::Queued);
                arrival_order.push(*write);
            }
            Event::BatchFormed { batch, first_write, writes, bytes, .. } => {
                let ids: Vec<u64> = (*first_write..first_write + writes).collect();
                for id in &ids {
                    set(&mut slots, *id, Slot::Syncing { batch: *batch, leader: *id == *first_write });
                }
                running.push(RunningBatch { batch: *batch, leader: *first_write, writes: ids, bytes: *bytes, start: event.at });
            }
            Event::SyncStart { sync, batch: Some(batch), .. } => sync_batch.push((*sync, *batch)),
            Event::SyncEnd { sync, .. } => {
                if let Some((_, batch)) = sync_batch.iter().find(|(running_sync, _)| running_sync == sync) {
                    running.retain(|entry| entry.batch != *batch);
                }
            }
            Event::Ack { first_write, writes } => {
                for id in *first_write..first_write + writes {
                    set(&mut slots, id, Slot::Acked);
                    if event.at == t {
                        woken.push(id);
                    }
                }
                // A batch whose OK came without a sync (the no-sync policies) is done too.
                running.retain(|entry| !entry.writes.contains(first_write));
            }
            Event::Fail { first_write, writes, .. } => {
                for id in *first_write..first_write + writes {
                    set(&mut slots, id, Slot::Failed);
                }
            }
            _ => {}
        }
    }
    let queue: Vec<u64> = arrival_order
        .into_iter()
        .filter(|id| usize::try_from(*id).ok().and_then(|id| id.checked_sub(1)).and_then(|index| slots.get(index)) == Some(&Slot::Queued))
        .collect();
    let tie = tie_at(trace, t);
    GroupAt { at: t, slots, queue, running, woken, tie }
}

/// The tie rule at `t`: a write that arrived at the very instant a sync returned.
fn tie_at(trace: &Trace, t: Nanos) -> Option<u64> {
    let at_t = trace.events.iter().filter(|event| event.at == t);
    let sync_ended = at_t.clone().any(|event| matches!(event.event, Event::SyncEnd { .. }));
    if !sync_ended {
        return None;
    }
    at_t.filter_map(|event| match event.event {
        Event::Arrive { write } => Some(write),
        _ => None,
    })
    .next()
}

fn writes_list(ids: &[u64]) -> String {
    let numbers: Vec<String> = ids.iter().map(u64::to_string).collect();
    match numbers.as_slice() {
        [] => "no write".to_string(),
        [one] => format!("write {one}"),
        [first, .., last] if ids.windows(2).all(|pair| pair[1] == pair[0] + 1) && ids.len() > 2 => format!("writes {first} to {last}"),
        [init @ .., last] => format!("writes {} and {last}", init.join(", ")),
    }
}

/// What happened at instant `t`, in words: built from the events at `t` and the state
/// just before.
pub fn caption_at(trace: &Trace, t: Nanos) -> String {
    let before = if t.0 == 0 { None } else { Some(group_at(trace, Nanos(t.0 - 1))) };
    let now = group_at(trace, t);
    let mut parts: Vec<String> = Vec::new();
    let events: Vec<&Event> = trace.events.iter().filter(|event| event.at == t).map(|event| &event.event).collect();
    let sync_ran_before = before.as_ref().is_some_and(|state| !state.running.is_empty());
    // Syncs that returned, and who they woke.
    let ended: Vec<u64> = before
        .as_ref()
        .map(|state| state.running.iter().filter(|batch| !now.running.iter().any(|still| still.batch == batch.batch)).map(|batch| batch.batch).collect())
        .unwrap_or_default();
    for batch in &ended {
        let woken: Vec<u64> = before
            .as_ref()
            .and_then(|state| state.running.iter().find(|entry| entry.batch == *batch))
            .map(|entry| entry.writes.clone())
            .unwrap_or_default();
        parts.push(format!("B{batch}'s sync returns: its leader wakes {} with OK", writes_list(&woken)));
    }
    let arrived: Vec<u64> = events.iter().filter_map(|event| match event { Event::Arrive { write } => Some(*write), _ => None }).collect();
    let formed: Vec<&RunningBatch> = now.running.iter().filter(|batch| batch.start == t).collect();
    if let Some(tie) = now.tie {
        let joined = formed.iter().find(|batch| batch.writes.contains(&tie)).map(|batch| format!("B{}", batch.batch)).unwrap_or_else(|| "the next batch".into());
        parts.push(format!("write {tie} arrives at that very instant: the tie rule says it was not in the sync that just returned, so it joins {joined}"));
    }
    for batch in &formed {
        let followers: Vec<u64> = batch.writes.iter().copied().filter(|id| *id != batch.leader).collect();
        let how = if sync_ran_before && !ended.is_empty() {
            format!("write {} was first in the queue and leads B{}", batch.leader, batch.batch)
        } else {
            format!("B{}: write {} finds no sync running and leads", batch.batch, batch.leader)
        };
        let takes = if followers.is_empty() {
            "it writes its record and syncs it alone".to_string()
        } else {
            format!("it takes {} from the queue, writes {} bytes once and syncs once", writes_list(&followers), batch.bytes)
        };
        parts.push(format!("{how}; {takes}"));
    }
    let queued_now: Vec<u64> = arrived.iter().copied().filter(|id| now.queue.contains(id)).collect();
    if !queued_now.is_empty() {
        let running: Vec<String> = now.running.iter().map(|batch| format!("B{}", batch.batch)).collect();
        let behind = if running.is_empty() { String::new() } else { format!(" while {}'s sync runs", running.join(" and ")) };
        parts.push(format!("{} arrives and queues{behind} (queue: {})", writes_list(&queued_now), writes_list(&now.queue).trim_start_matches("writes ").trim_start_matches("write ")));
    }
    if parts.is_empty() {
        let acked = now.slots.iter().filter(|slot| **slot == Slot::Acked).count();
        parts.push(format!("nothing new: {} acknowledged so far", crate::format::count(acked, "write")));
    }
    let mut caption = format!("{} ms: ", crate::url_state::format_millis(t));
    caption.push_str(&parts.join("; "));
    caption.push('.');
    caption
}

#[cfg(test)]
mod tests {
    use super::*;
    use walab_core::group_commit::{Config, Policy};
    use walab_core::sim::commit;

    fn tiny_trace(policy: Policy) -> Trace {
        let (setup, arrivals) = commit::tiny_store_setup(Config::file(policy));
        commit::run(&setup, &arrivals).unwrap().trace.unwrap()
    }

    fn instants(trace: &Trace) -> Vec<Nanos> {
        trace.instants()
    }

    #[test]
    fn b11_takes_writes_18_to_20_with_18_leading() {
        let trace = tiny_trace(Policy::Group);
        let formed = trace.events.iter().find(|event| matches!(event.event, Event::BatchFormed { batch: 11, .. })).unwrap().at;
        let state = group_at(&trace, formed);
        let batch = state.running.iter().find(|batch| batch.batch == 11).unwrap();
        assert_eq!(batch.leader, 18);
        assert_eq!(batch.writes, [18, 19, 20]);
        assert_eq!(state.slots[17], Slot::Syncing { batch: 11, leader: true });
        assert_eq!(state.slots[18], Slot::Syncing { batch: 11, leader: false });
        assert!(!state.queue.contains(&18));
        // Just before, 19 and 20 were queued behind a running sync.
        let before = group_at(&trace, Nanos(formed.0 - 1));
        assert!(before.queue.contains(&19) && before.queue.contains(&20), "{:?}", before.queue);
        assert!(!before.running.is_empty());
        let caption = caption_at(&trace, formed);
        assert!(caption.contains("leads B11"), "{caption}");
    }

    #[test]
    fn every_instant_has_its_own_caption() {
        for policy in [Policy::Group, Policy::PerWrite] {
            let trace = tiny_trace(policy);
            let captions: Vec<String> = instants(&trace).into_iter().map(|t| caption_at(&trace, t)).collect();
            assert!(captions.len() > 20);
            for pair in captions.windows(2) {
                assert_ne!(pair[0], pair[1]);
            }
            assert!(captions.iter().all(|caption| !caption.contains('{') && !caption.contains("Some(")));
        }
    }

    #[test]
    fn the_tie_rule_is_named_when_it_applies() {
        let trace = tie_example().unwrap();
        let ties: Vec<(Nanos, u64)> = instants(&trace).into_iter().filter_map(|t| group_at(&trace, t).tie.map(|write| (t, write))).collect();
        for (t, write) in &ties {
            let state = group_at(&trace, *t);
            assert!(matches!(state.slots[*write as usize - 1], Slot::Syncing { .. }), "write {write} joins the batch formed at {t:?}");
            assert!(caption_at(&trace, *t).contains("tie rule"));
        }
        assert_eq!(ties, [(Nanos::from_millis(1), 3)]);
        let state = group_at(&trace, Nanos::from_millis(1));
        assert_eq!(state.running[0].writes, [2, 3]);
        assert_eq!(state.running[0].leader, 2);
    }
}
