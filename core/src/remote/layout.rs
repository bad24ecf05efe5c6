//! Where a node's WAL lives in a bucket, and how recovery decides which objects count.
//!
//! # Keys
//!
//! A node owns one prefix, `<path>/<cluster>/<node>/`, and writes two kinds of object
//! under it:
//!
//! ```text
//! <prefix>registration                                  who owns the node, and its sessions
//! <prefix>00000000000000000003/wal/00000000000000004096-00000000000000008311
//!         └── epoch ─────────┘     └── start ─────────┘ └── end (exclusive) ─┘
//! ```
//!
//! Epochs and offsets are 20-digit zero-padded decimals (a `u64` has at most 20), so the
//! lexicographic order of a LIST is the numeric order. Offsets are addresses in the
//! WAL's byte space: the object holds exactly one stream frame
//! ([`crate::codec::stream`]) whose header repeats `start`, and whose length makes
//! it end at `end`. The next bulk starts where this one ends, so the objects of one
//! session tile the address space without holes.
//!
//! # Sessions and which objects are valid
//!
//! Every time a process takes the node over it gets a new epoch, recovers, and records a
//! *session* in the registration: its epoch and the WAL address where its own objects
//! begin (the end of what it recovered). A session's objects are valid only inside its
//! range, from its own start up to the next session's start. An older epoch's object at
//! or beyond a newer session's start was written by a process that had already lost the
//! node (a fenced straggler, never acknowledged), and recovery ignores it however late
//! it lands. An object whose epoch never recorded a session was written by nobody who
//! owned the node, and is ignored too. Within the valid objects recovery walks from the
//! lowest start, each object starting where the previous one ended, and stops at the
//! first gap; where two valid objects start at the same address the newer epoch wins.
//! [`plan_chain`] makes that decision from the LIST alone; reading and checking each
//! object's frame comes after.

use core::fmt;

use super::lease::Lease;

/// Digits in every epoch and offset of a key.
pub const KEY_NUMBER_DIGITS: usize = 20;
/// The registration object's name under the node prefix.
pub const REGISTRATION_NAME: &str = "registration";
/// The registration's format marker.
pub const REGISTRATION_FORMAT: &str = "walab-s3-registration-1";
/// A node's prefix: `<path>/<cluster>/<node>/`, or `<cluster>/<node>/` with no path.
pub fn node_prefix(path: &str, cluster: &str, node: &str) -> String {
    let path = path.trim_matches('/');
    if path.is_empty() {
        format!("{cluster}/{node}/")
    } else {
        format!("{path}/{cluster}/{node}/")
    }
}

/// The key of the node's registration.
pub fn registration_key(node_prefix: &str) -> String {
    format!("{node_prefix}{REGISTRATION_NAME}")
}

/// One WAL object's name, parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct WalObject {
    pub epoch: u64,
    /// WAL address of the frame's first byte.
    pub start: u64,
    /// WAL address just past the frame.
    pub end: u64,
}

impl WalObject {
    /// The object's key under `node_prefix`.
    pub fn key(&self, node_prefix: &str) -> String {
        format!(
            "{node_prefix}{:0w$}/wal/{:0w$}-{:0w$}",
            self.epoch,
            self.start,
            self.end,
            w = KEY_NUMBER_DIGITS
        )
    }

    pub fn bytes(&self) -> u64 {
        self.end - self.start
    }
}

/// What a key under the node prefix turned out to be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyKind {
    Registration,
    Wal(WalObject),
    /// Something walab did not write (kept, reported, never read).
    Foreign(String),
}

fn parse_number(text: &str) -> Option<u64> {
    if text.len() != KEY_NUMBER_DIGITS || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// Classifies a listed key (the full key, prefix included).
pub fn parse_key(node_prefix: &str, key: &str) -> KeyKind {
    let Some(rest) = key.strip_prefix(node_prefix) else {
        return KeyKind::Foreign(key.to_string());
    };
    if rest == REGISTRATION_NAME {
        return KeyKind::Registration;
    }
    let parts: Vec<&str> = rest.split('/').collect();
    let parsed = match parts.as_slice() {
        [epoch, "wal", range] => range.split_once('-').and_then(|(start, end)| {
            let object = WalObject {
                epoch: parse_number(epoch)?,
                start: parse_number(start)?,
                end: parse_number(end)?,
            };
            (object.start < object.end).then_some(object)
        }),
        _ => None,
    };
    match parsed {
        Some(object) => KeyKind::Wal(object),
        None => KeyKind::Foreign(key.to_string()),
    }
}

/// One owner's stretch of the log: objects of `epoch` are valid from `start_offset` up
/// to the next session's start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Session {
    pub epoch: u64,
    /// WAL address where this session's first object starts.
    pub start_offset: u64,
    /// The seq of this session's first record (what an empty log resumes from).
    pub first_seq: u64,
}

/// The registration object's body.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Registration {
    pub format: String,
    /// The current owner's epoch. Only the owner writes WAL objects under it.
    pub epoch: u64,
    /// A random id of the owning process: two claimers that raced to the same epoch
    /// (possible only on a store whose conditional PUT is not atomic) tell each other apart.
    pub owner: String,
    /// Sessions that began writing, oldest first, with non-decreasing starts.
    pub sessions: Vec<Session>,
    /// The owner's lease, when it acknowledges on one (`fence=lease`,
    /// [`super::lease`]): a claimer waits it out before it LISTs. Absent from the JSON
    /// when there is none, so a `fence=read` registration reads as it always did.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub lease: Option<Lease>,
}

impl Registration {
    /// The registration of a node nobody has claimed yet.
    pub fn unclaimed() -> Registration {
        Registration {
            format: REGISTRATION_FORMAT.to_string(),
            epoch: 0,
            owner: String::new(),
            sessions: Vec::new(),
            lease: None,
        }
    }

    /// The registration a new owner writes to take the node over: the next epoch and
    /// its own owner id, the sessions and the lease unchanged (the lease is the one the
    /// new owner waits out, and a later claimer must too). `None` when the epoch cannot
    /// grow.
    pub fn claimed_by(&self, owner: &str) -> Option<Registration> {
        let epoch = self.epoch.checked_add(1)?;
        Some(Registration {
            epoch,
            owner: owner.to_string(),
            ..self.clone()
        })
    }

    /// The registration after the owner records its own session: sessions that can own
    /// no object any more (given the lowest listed start) dropped, then the owner's
    /// epoch from `start_offset` on, whose first record will carry `first_seq`.
    pub fn with_session(
        &self,
        lowest_start: Option<u64>,
        start_offset: u64,
        first_seq: u64,
    ) -> Registration {
        let mut sessions = prune_sessions(&self.sessions, lowest_start);
        sessions.push(Session {
            epoch: self.epoch,
            start_offset,
            first_seq,
        });
        Registration {
            sessions,
            ..self.clone()
        }
    }

    /// The same registration recording `lease` merged over the one it records
    /// ([`Lease::merge`]: a renewal never moves the lease back).
    pub fn with_lease(&self, lease: Lease) -> Registration {
        Registration {
            lease: Lease::merge(self.lease, Some(lease)),
            ..self.clone()
        }
    }

    /// The same registration with no lease: what a clean close writes, once its owner
    /// will acknowledge nothing more.
    pub fn without_lease(&self) -> Registration {
        Registration {
            lease: None,
            ..self.clone()
        }
    }

    /// Checks what a decoded registration says: walab's format, sessions whose starts
    /// never go back, and no session newer than the owner's epoch. The bytes themselves
    /// (JSON) are the native edge's business.
    pub fn check(&self) -> Result<(), RegistrationError> {
        if self.format != REGISTRATION_FORMAT {
            return Err(RegistrationError::Format {
                found: self.format.clone(),
            });
        }
        if self
            .sessions
            .windows(2)
            .any(|pair| pair[1].start_offset < pair[0].start_offset)
        {
            return Err(RegistrationError::SessionsGoBack);
        }
        if self
            .sessions
            .iter()
            .any(|session| session.epoch > self.epoch)
        {
            return Err(RegistrationError::SessionAboveEpoch);
        }
        Ok(())
    }
}

/// Why a registration cannot be trusted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RegistrationError {
    /// Not walab's format marker.
    Format { found: String },
    /// A session starts below the one before it.
    SessionsGoBack,
    /// A session's epoch is above the registration's own.
    SessionAboveEpoch,
}

impl fmt::Display for RegistrationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegistrationError::Format { found } => {
                write!(
                    f,
                    "registration format {found:?}, expected {REGISTRATION_FORMAT:?}"
                )
            }
            RegistrationError::SessionsGoBack => f.write_str("registration sessions go backwards"),
            RegistrationError::SessionAboveEpoch => {
                f.write_str("registration names a session newer than its epoch")
            }
        }
    }
}

impl std::error::Error for RegistrationError {}

/// Why recovery left a listed WAL object out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case", tag = "reason"))]
pub enum Ignored {
    /// Its epoch never recorded a session: written by a process that never owned the node.
    UnknownEpoch,
    /// Below its own session's start (cannot be written by a correct owner).
    BeforeSession,
    /// At or past a newer session's start: a fenced writer's straggler.
    FencedBeyondTakeover { takeover_offset: u64 },
    /// Overlapped by an object of a newer epoch or by the chain already walked.
    Superseded,
    /// After the gap where the chain stopped.
    AfterGap,
}

/// Where the walk over object names stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case", tag = "stop"))]
pub enum ChainStop {
    /// The last valid object was reached.
    End,
    /// No valid object starts at `offset`, but later ones exist.
    Gap { offset: u64 },
}

/// The objects to read, in order, and what was left out.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ChainPlan {
    pub chain: Vec<WalObject>,
    pub ignored: Vec<(WalObject, Ignored)>,
    pub stop: ChainStop,
}

/// Decides, from the listed names and the registration's sessions, which objects form
/// the log and in which order (see the module docs).
pub fn plan_chain(listed: &[WalObject], sessions: &[Session]) -> ChainPlan {
    let mut ignored = Vec::new();
    let mut valid = Vec::new();
    for &object in listed {
        let Some(index) = sessions
            .iter()
            .position(|session| session.epoch == object.epoch)
        else {
            ignored.push((object, Ignored::UnknownEpoch));
            continue;
        };
        if object.start < sessions[index].start_offset {
            ignored.push((object, Ignored::BeforeSession));
            continue;
        }
        let takeover = sessions[index + 1..]
            .iter()
            .map(|session| session.start_offset)
            .min();
        match takeover {
            Some(takeover_offset) if object.start >= takeover_offset => {
                ignored.push((object, Ignored::FencedBeyondTakeover { takeover_offset }));
            }
            _ => valid.push(object),
        }
    }
    // By start; at one start, the newest epoch first.
    crate::sort::sort_by(&mut valid, |a, b| a.start.cmp(&b.start).then(b.epoch.cmp(&a.epoch)));
    let mut chain: Vec<WalObject> = Vec::new();
    let mut stop = ChainStop::End;
    for object in valid {
        if let ChainStop::Gap { .. } = stop {
            ignored.push((object, Ignored::AfterGap));
            continue;
        }
        match chain.last() {
            None => chain.push(object),
            Some(last) if object.start == last.end => chain.push(object),
            Some(last) if object.start < last.end => ignored.push((object, Ignored::Superseded)),
            Some(last) => {
                stop = ChainStop::Gap { offset: last.end };
                ignored.push((object, Ignored::AfterGap));
            }
        }
    }
    ChainPlan {
        chain,
        ignored,
        stop,
    }
}

/// The sessions still worth keeping once the log's lowest object starts at
/// `lowest_start`: a session whose successor starts at or below it can own no object
/// any more. The newest session is always kept.
pub fn prune_sessions(sessions: &[Session], lowest_start: Option<u64>) -> Vec<Session> {
    let Some(lowest) = lowest_start else {
        return sessions.last().copied().into_iter().collect();
    };
    sessions
        .iter()
        .enumerate()
        .filter(|(index, _)| {
            sessions
                .get(index + 1)
                .is_none_or(|next| next.start_offset > lowest)
        })
        .map(|(_, session)| *session)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(epoch: u64, start: u64, end: u64) -> WalObject {
        WalObject { epoch, start, end }
    }

    fn session(epoch: u64, start_offset: u64) -> Session {
        Session {
            epoch,
            start_offset,
            first_seq: 1,
        }
    }

    #[test]
    fn keys_round_trip_and_sort_numerically() {
        let prefix = node_prefix("/wal/", "default", "0");
        assert_eq!(prefix, "wal/default/0/");
        assert_eq!(node_prefix("", "c", "7"), "c/7/");
        let small = object(3, 9, 100);
        let large = object(3, 100, 1000);
        assert_eq!(
            small.key(&prefix),
            "wal/default/0/00000000000000000003/wal/00000000000000000009-00000000000000000100"
        );
        assert!(small.key(&prefix) < large.key(&prefix));
        assert_eq!(parse_key(&prefix, &small.key(&prefix)), KeyKind::Wal(small));
        assert_eq!(
            parse_key(&prefix, "wal/default/0/registration"),
            KeyKind::Registration
        );
        for foreign in [
            "wal/default/0/3/wal/9-100",
            "wal/default/0/00000000000000000003/wal/x",
            "elsewhere",
        ] {
            assert!(
                matches!(parse_key(&prefix, foreign), KeyKind::Foreign(_)),
                "{foreign}"
            );
        }
        let backwards = format!("{prefix}{:020}/wal/{:020}-{:020}", 1, 50, 50);
        assert!(matches!(
            parse_key(&prefix, &backwards),
            KeyKind::Foreign(_)
        ));
    }

    #[test]
    fn registration_check_rejects_nonsense() {
        let mut registration = Registration::unclaimed();
        registration.epoch = 2;
        registration.owner = "abc".into();
        registration.sessions = vec![session(1, 0), session(2, 500)];
        assert_eq!(registration.check(), Ok(()));
        registration.sessions = vec![session(1, 600), session(2, 500)];
        assert_eq!(registration.check(), Err(RegistrationError::SessionsGoBack));
        registration.sessions = vec![session(3, 0)];
        assert_eq!(
            registration.check(),
            Err(RegistrationError::SessionAboveEpoch)
        );
        registration.format = "other".into();
        assert!(registration
            .check()
            .unwrap_err()
            .to_string()
            .contains("expected"));
    }

    #[test]
    fn one_session_walks_in_order_and_stops_at_a_gap() {
        let listed = [
            object(1, 100, 200),
            object(1, 0, 100),
            object(1, 300, 400),
            object(1, 200, 250),
        ];
        let plan = plan_chain(&listed, &[session(1, 0)]);
        assert_eq!(
            plan.chain,
            vec![object(1, 0, 100), object(1, 100, 200), object(1, 200, 250)]
        );
        assert_eq!(plan.stop, ChainStop::Gap { offset: 250 });
        assert_eq!(plan.ignored, vec![(object(1, 300, 400), Ignored::AfterGap)]);
    }

    #[test]
    fn a_fenced_epochs_stragglers_beyond_the_takeover_are_ignored() {
        // Epoch 1 wrote 0..100 and 100..200; epoch 2 recovered only 0..100 (the second
        // landed after its LIST), started at 100 and wrote 100..150 and 150..260. A
        // late straggler of epoch 1 that happens to start at 150 must not be used.
        let listed = [
            object(1, 0, 100),
            object(1, 100, 200),
            object(1, 150, 180),
            object(2, 100, 150),
            object(2, 150, 260),
            object(7, 260, 300),
        ];
        let plan = plan_chain(&listed, &[session(1, 0), session(2, 100)]);
        assert_eq!(
            plan.chain,
            vec![object(1, 0, 100), object(2, 100, 150), object(2, 150, 260)]
        );
        assert_eq!(plan.stop, ChainStop::End);
        assert!(plan.ignored.contains(&(
            object(1, 100, 200),
            Ignored::FencedBeyondTakeover {
                takeover_offset: 100
            }
        )));
        assert!(plan.ignored.contains(&(
            object(1, 150, 180),
            Ignored::FencedBeyondTakeover {
                takeover_offset: 100
            }
        )));
        assert!(plan
            .ignored
            .contains(&(object(7, 260, 300), Ignored::UnknownEpoch)));
    }

    #[test]
    fn after_trim_the_walk_starts_at_the_lowest_valid_object() {
        // Epoch 2's first object was trimmed; epoch 1's straggler at 100 survives and
        // would start the walk if validity were judged from the listing alone.
        let listed = [object(1, 100, 200), object(2, 150, 260)];
        let plan = plan_chain(&listed, &[session(1, 0), session(2, 100)]);
        assert_eq!(plan.chain, vec![object(2, 150, 260)]);
    }

    #[test]
    fn newer_epoch_wins_at_the_same_start() {
        // Two sessions starting at the same address (the first wrote nothing that counts).
        let listed = [object(1, 0, 100), object(2, 0, 80), object(2, 80, 120)];
        let plan = plan_chain(&listed, &[session(1, 0), session(2, 0)]);
        assert_eq!(plan.chain, vec![object(2, 0, 80), object(2, 80, 120)]);
    }

    #[test]
    fn pruning_keeps_sessions_that_can_still_own_objects() {
        let sessions = [session(1, 0), session(2, 100), session(3, 300)];
        assert_eq!(prune_sessions(&sessions, Some(50)), sessions.to_vec());
        assert_eq!(
            prune_sessions(&sessions, Some(100)),
            vec![session(2, 100), session(3, 300)]
        );
        assert_eq!(prune_sessions(&sessions, Some(400)), vec![session(3, 300)]);
        assert_eq!(prune_sessions(&sessions, None), vec![session(3, 300)]);
    }
}
