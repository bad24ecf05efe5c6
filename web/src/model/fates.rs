//! After a power cut: what became of each write that had arrived.
//!
//! An acknowledged write either survived recovery or was lost (a broken promise); a
//! write never told OK either is absent or survived without its OK (an unknown outcome
//! that turned out well). The lanes and the tiny store's figures draw these.

use walab_core::sim::tiny::CrashState;
use walab_core::time::Nanos;
use walab_core::trace::Trace;

/// A write's fate after the cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Told OK, and recovery found it.
    Survived,
    /// Told OK, and recovery did not find it.
    Lost,
    /// Never told OK, yet recovery found it.
    SurvivedWithoutOk,
    /// Never told OK, and gone.
    Absent,
}

impl Fate {
    pub fn class(self) -> &'static str {
        match self {
            Fate::Survived => "survived",
            Fate::Lost => "lost",
            Fate::SurvivedWithoutOk => "survived-without-ok",
            Fate::Absent => "absent",
        }
    }

    /// The short mark drawn at the end of a write's lane.
    pub fn mark(self) -> &'static str {
        match self {
            Fate::Survived => "OK, kept",
            Fate::Lost => "OK, LOST",
            Fate::SurvivedWithoutOk => "kept, no OK",
            Fate::Absent => "gone",
        }
    }

    pub fn words(self) -> &'static str {
        match self {
            Fate::Survived => "told OK and found by recovery",
            Fate::Lost => "told OK and lost: a broken promise",
            Fate::SurvivedWithoutOk => "never told OK, yet found by recovery",
            Fate::Absent => "never told OK, and gone",
        }
    }

    /// Every fate (the figures' legends spell them out as markup; a test keeps them equal).
    #[cfg(test)]
    pub const ALL: [Fate; 4] = [Fate::Survived, Fate::Lost, Fate::SurvivedWithoutOk, Fate::Absent];
}

/// The fates' keys as markup, for the figures' legends (a test keeps them equal to
/// [`Fate::words`]).
macro_rules! fate_keys {
    () => {
        r#"<span class="key survived">told OK and found by recovery</span><span class="key lost">told OK and lost: a broken promise</span><span class="key survived-without-ok">never told OK, yet found by recovery</span><span class="key absent">never told OK, and gone</span>"#
    };
}
pub(crate) use fate_keys;

/// The writes that had arrived strictly before the cut.
pub fn arrived_before(trace: &Trace, at: Nanos) -> Vec<u64> {
    trace.writes.iter().filter(|write| write.arrival < at).map(|write| write.id).collect()
}

/// Each arrived write's fate in one post-crash state.
pub fn fates(arrived: &[u64], crash: &CrashState) -> Vec<(u64, Fate)> {
    arrived
        .iter()
        .map(|id| {
            let acknowledged = crash.acknowledged.contains(id);
            let recovered = crash.recovery.recovered.contains(id);
            let fate = match (acknowledged, recovered) {
                (true, true) => Fate::Survived,
                (true, false) => Fate::Lost,
                (false, true) => Fate::SurvivedWithoutOk,
                (false, false) => Fate::Absent,
            };
            (*id, fate)
        })
        .collect()
}

/// The ids with one fate.
pub fn with_fate(fates: &[(u64, Fate)], fate: Fate) -> Vec<u64> {
    fates.iter().filter(|(_, each)| *each == fate).map(|(id, _)| *id).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_legends_name_every_fate_in_its_words() {
        for fate in Fate::ALL {
            assert!(fate_keys!().contains(&format!("<span class=\"key {}\">{}</span>", fate.class(), fate.words())), "{fate:?}");
        }
    }
}
