//! Part 4: the append procedure, in the right order and in the order that loses
//! acknowledged writes. The bench plays one step per (display) millisecond.
use super::Timeline;
use walab_core::time::Nanos;

/// One step of APPEND.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    TakeSeq,
    Frame,
    /// Write the record and wait for the sync that makes it durable.
    WriteAndSync,
    /// Write the record into the page cache only (the bug's step 3).
    WriteOnly,
    Apply,
    MakeVisible,
    Acknowledge,
    /// The bug's late sync, after the client already has its OK.
    SyncLater,
}

impl Step {
    pub fn text(self) -> &'static str {
        match self {
            Step::TakeSeq => "take the next sequence number",
            Step::Frame => "frame the record: CRC32C, length, type, payload",
            Step::WriteAndSync => "write it and wait for the group's sync: now it is durable",
            Step::WriteOnly => "write it into the page cache (no sync yet)",
            Step::Apply => "apply it to the MemTable",
            Step::MakeVisible => "make seq visible to readers",
            Step::Acknowledge => "send OK to the client",
            Step::SyncLater => "sync the log, some time later",
        }
    }

    fn makes_durable(self) -> bool {
        matches!(self, Step::WriteAndSync | Step::SyncLater)
    }
}

/// The order every engine must follow: durable before acknowledged.
pub const RIGHT_ORDER: [Step; 6] =
    [Step::TakeSeq, Step::Frame, Step::WriteAndSync, Step::Apply, Step::MakeVisible, Step::Acknowledge];
/// The order that produces "acknowledged but lost": the OK goes out before the sync.
pub const WRONG_ORDER: [Step; 7] = [
    Step::TakeSeq,
    Step::Frame,
    Step::WriteOnly,
    Step::Apply,
    Step::MakeVisible,
    Step::Acknowledge,
    Step::SyncLater,
];

/// The time the bench gives one step.
pub const STEP: Nanos = Nanos::from_millis(1);

pub fn timeline() -> Timeline {
    let marks: Vec<Nanos> = (1..=WRONG_ORDER.len() as u64).map(|step| Nanos(STEP.0 * step)).collect();
    Timeline { end: *marks.last().expect("steps"), marks }
}

/// How many steps of an order have completed at `now`.
pub fn steps_done(now: Nanos, order_len: usize) -> usize {
    usize::try_from(now.0 / STEP.0).unwrap_or(usize::MAX).min(order_len)
}

/// What a power failure does to the write once `done` steps of `order` completed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub acknowledged: bool,
    pub durable: bool,
}

impl Outcome {
    /// The broken promise: the client was told OK and the write is gone.
    pub fn acknowledged_but_lost(self) -> bool {
        self.acknowledged && !self.durable
    }
}

pub fn outcome(order: &[Step], done: usize) -> Outcome {
    let completed = &order[..done.min(order.len())];
    Outcome {
        acknowledged: completed.contains(&Step::Acknowledge),
        durable: completed.iter().any(|step| step.makes_durable()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_right_order_never_loses_an_acknowledged_write() {
        for done in 0..=RIGHT_ORDER.len() {
            assert!(!outcome(&RIGHT_ORDER, done).acknowledged_but_lost(), "after {done} steps");
        }
    }

    #[test]
    fn the_wrong_order_loses_the_write_between_ok_and_sync() {
        let lost: Vec<usize> =
            (0..=WRONG_ORDER.len()).filter(|done| outcome(&WRONG_ORDER, *done).acknowledged_but_lost()).collect();
        assert_eq!(lost, [6], "only a cut after the OK and before the late sync");
    }

    #[test]
    fn steps_follow_the_clock() {
        assert_eq!(steps_done(Nanos::ZERO, 6), 0);
        assert_eq!(steps_done(Nanos::from_micros(2_500), 6), 2);
        assert_eq!(steps_done(Nanos::from_millis(9), 6), 6);
    }
}

