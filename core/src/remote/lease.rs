//! The lease fence: acknowledging a batch without reading the registration after its PUT.
//!
//! # What the fence read costs, and what replaces it
//!
//! The object-store WAL's default fence (`fence=read`) reads the registration after
//! every upload and acknowledges the batch only if the read still names the writer: the
//! read came after the PUT returned and before any new owner's claim, and the claim
//! comes before the new owner's LIST, so the LIST sees the object. That proof costs a
//! second round trip on every acknowledgement, about doubling a batch's latency on S3.
//!
//! A lease moves the proof off the acknowledgement path. The registration carries the
//! owner's *lease*: a wall-clock expiry ([`Lease::expires_unix_ms`]) and the clock skew
//! the owner allowed for ([`Lease::skew_ms`]). The owner renews it in the background,
//! every [`LeaseTerms::renew_interval`] (a quarter of the lease), by writing the
//! registration back conditionally on the ETag of its own last write (`If-Match`), so
//! once a new owner's claim has replaced the registration every renewal fails and the
//! old owner learns it is fenced. Then:
//!
//! - **The owner** acknowledges a batch whose PUT returned before its *acknowledgement
//!   deadline* without any read ([`OwnerLease::judge`]). A successful renewal sent at
//!   the owner's wall-clock time `w` and monotonic time `m`, recording expiry `E`, sets
//!   the deadline to `m + (E - w) - skew` on the monotonic clock ([`OwnerLease::renewed`]):
//!   the expiry minus the skew, measured from the send on a clock no one can step. A batch
//!   whose PUT returned later is not acknowledged on the lease: it falls back to the
//!   fence read (the native backend's choice; waiting for the next renewal would prove
//!   as much, but a renewal that is late is usually late because the store is not
//!   answering, and the read then decides in one round trip).
//! - **A new owner** claims as before (a conditional PUT of `epoch + 1` and its owner id
//!   on the ETag it read), and then, before it LISTs, waits until its own wall clock
//!   reads at least the replaced lease's expiry plus the larger of the recorded skew and
//!   its own ([`takeover_wait`]). A claim never lowers a lease ([`Lease::merge`]): the
//!   registration keeps, through every claim and renewal, an expiry at least as late as
//!   any an owner still acting on could have recorded.
//!
//! The claim comes *before* the wait, not after: an owner that is alive renews every
//! quarter lease, so a claimer that waited first and then claimed on the ETag it had
//! read would find the ETag changed every time and never win. Claimed first, the
//! registration stops accepting the old owner's renewals at once; what the wait then
//! covers is the old owner's last lease, which no renewal can extend any more.
//!
//! # Why nothing the old owner acknowledged is missed
//!
//! Assume every participant's wall clock is within its configured skew `s` of true time
//! at every instant (so two clocks differ by at most the sum of their skews), and that
//! a monotonic clock's rate over one lease is that of true time (the skew covers the
//! difference). Let the old owner acknowledge a batch on the lease: its PUT returned at
//! true time `t_r`, earlier on the monotonic clock than the deadline of a successful
//! renewal sent at true time `t_w` (wall reading `w`, within `s_o` of `t_w`) that
//! recorded `E`. Then
//!
//! ```text
//! t_r < t_w + (E - w) - s_o  <=  t_w + E - (t_w - s_o) - s_o  =  E
//! ```
//!
//! That renewal succeeded, so it was written before the new owner's claim (a claim
//! replaces the registration, after which the renewal's `If-Match` fails), and every
//! later write of the registration kept an expiry `R >= E` ([`Lease::merge`]); the claim
//! replaced a registration recording `R`. The new owner LISTs only once its wall clock
//! reads `R + s_n` or more (`s_n` at least its own skew), that is at true time
//! `t_l >= R + s_n - s_n = R >= E > t_r`. The object was written when its PUT returned,
//! before `t_l`, and the store's LIST sees every completed write (S3, R2, GCS and MinIO
//! are strongly consistent): the LIST shows it. Acknowledgements are in order, and every
//! earlier batch was stored and checked (on the lease or by a read) before this one was
//! acknowledged, so the LIST shows every object of the old session up to this batch, and
//! recovery's walk covers them all. A batch acknowledged by the fallback read is covered
//! as under `fence=read`: the read came after its PUT returned and still named the
//! writer, so before the claim, before the LIST.
//!
//! # Why a straggler of the old owner is ignored
//!
//! Recovery is the same as under `fence=read`: the new owner records a session starting
//! at the end of what it recovered, and an older epoch's object at or past that address
//! is ignored by every later recovery ([`super::layout::plan_chain`]). A batch of the old
//! owner whose PUT lands after the new owner's LIST was never acknowledged: its PUT
//! returned after the LIST, so after `R`, so after the old owner's deadline (by the
//! inequality above read backwards), and the fallback read after it finds the new owner's
//! claim. Either its object lies past the new session's start and is ignored, or the
//! LIST saw it (then it is recovered, an unacknowledged record that appears). The old
//! owner stops sending at its next renewal, which fails on the claim's ETag.
//!
//! # What a lease costs
//!
//! A takeover of a node whose owner died waits up to one lease plus the skew before it
//! LISTs (a clean close releases the lease, so the next owner of a node closed cleanly
//! waits nothing). The owner pays one registration PUT per renewal interval, whatever
//! its write rate. If renewals keep failing (the store unreachable), acknowledgements
//! fall back to the fence read once the deadline passes; a renewal that fails on its
//! condition fences the writer.
//!
//! The defaults, lease [`LEASE_DEFAULT`] (10 s) and skew [`SKEW_DEFAULT`] (1 s): a
//! renewal every 2.5 s is 0.4 registration PUTs a second, nothing beside a WAL that
//! PUTs a batch every few tens of milliseconds, and leaves three more renewals to fail
//! before the deadline (9 s after a renewal's send) is reached; a dead owner's node is
//! taken over within 11 s, the order of a coordination service's session timeout.
//! Clocks kept by NTP or a cloud's time service stay within milliseconds of true time,
//! so 1 s is a wide margin; its price is a deadline 1 s earlier (unseen while renewals
//! succeed) and a takeover 1 s later.

use core::fmt;

use crate::time::Nanos;

/// The default lease length.
pub const LEASE_DEFAULT: Nanos = Nanos(10_000_000_000);
/// The default allowed clock skew.
pub const SKEW_DEFAULT: Nanos = Nanos(1_000_000_000);
/// The shortest lease accepted.
pub const LEASE_MIN: Nanos = Nanos(100_000_000);
/// The longest lease accepted (a dead owner's node waits this long to be taken over).
pub const LEASE_MAX: Nanos = Nanos(300_000_000_000);
/// The skew may be at most the lease divided by this: after a renewal the owner then
/// keeps at least half a lease of validity past the next renewal's due time.
pub const LEASE_PER_SKEW_MIN: u64 = 4;
/// Renewals per lease: the owner renews every `lease / RENEWALS_PER_LEASE`.
pub const RENEWALS_PER_LEASE: u64 = 4;
/// Retries per renewal interval after a renewal that failed without being refused.
pub const RETRIES_PER_RENEWAL: u64 = 5;
/// A recorded lease whose takeover instant lies further than this beyond a claimer's
/// clock is refused rather than waited out: the longest lease plus its largest skew.
pub const TAKEOVER_WAIT_MAX: Nanos = Nanos(LEASE_MAX.0 + LEASE_MAX.0 / LEASE_PER_SKEW_MIN);

const NANOS_PER_MS: u64 = 1_000_000;

/// How a writer makes sure it still owns the node before it acknowledges a batch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FenceMode {
    /// Read the registration after every PUT (`fence=read`, the default).
    #[default]
    Read,
    /// Hold a lease and acknowledge on it (`fence=lease`).
    Lease(LeaseTerms),
}

impl FenceMode {
    /// The URL spelling.
    pub fn name(&self) -> &'static str {
        match self {
            FenceMode::Read => "read",
            FenceMode::Lease(_) => "lease",
        }
    }

    pub fn lease_terms(&self) -> Option<LeaseTerms> {
        match self {
            FenceMode::Read => None,
            FenceMode::Lease(terms) => Some(*terms),
        }
    }
}

/// A lease's length and the clock skew allowed for, checked to fit together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseTerms {
    lease: Nanos,
    skew: Nanos,
}

/// Why a lease length or skew was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeaseTermsError {
    LeaseTooShort { lease: Nanos },
    LeaseTooLong { lease: Nanos },
    SkewTooLarge { lease: Nanos, skew: Nanos },
}

impl fmt::Display for LeaseTermsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LeaseTermsError::LeaseTooShort { lease } => {
                write!(f, "lease {lease} is shorter than the shortest accepted, {LEASE_MIN}")
            }
            LeaseTermsError::LeaseTooLong { lease } => {
                write!(f, "lease {lease} is longer than the longest accepted, {LEASE_MAX}")
            }
            LeaseTermsError::SkewTooLarge { lease, skew } => write!(
                f,
                "skew {skew} is more than a {LEASE_PER_SKEW_MIN}th of the lease {lease}"
            ),
        }
    }
}

impl std::error::Error for LeaseTermsError {}

impl Default for LeaseTerms {
    fn default() -> LeaseTerms {
        LeaseTerms {
            lease: LEASE_DEFAULT,
            skew: SKEW_DEFAULT,
        }
    }
}

impl LeaseTerms {
    pub fn new(lease: Nanos, skew: Nanos) -> Result<LeaseTerms, LeaseTermsError> {
        if lease < LEASE_MIN {
            return Err(LeaseTermsError::LeaseTooShort { lease });
        }
        if lease > LEASE_MAX {
            return Err(LeaseTermsError::LeaseTooLong { lease });
        }
        if skew.0 > lease.0 / LEASE_PER_SKEW_MIN {
            return Err(LeaseTermsError::SkewTooLarge { lease, skew });
        }
        Ok(LeaseTerms { lease, skew })
    }

    pub fn lease(&self) -> Nanos {
        self.lease
    }

    pub fn skew(&self) -> Nanos {
        self.skew
    }

    /// How often the owner renews.
    pub fn renew_interval(&self) -> Nanos {
        Nanos(self.lease.0 / RENEWALS_PER_LEASE)
    }

    /// How soon a renewal that failed (without being refused) is tried again.
    pub fn retry_interval(&self) -> Nanos {
        Nanos(self.renew_interval().0 / RETRIES_PER_RENEWAL)
    }

    /// The lease a registration write sent at wall-clock time `sent_wall` (nanoseconds
    /// since the Unix epoch) records: the expiry rounded down to a millisecond, the skew
    /// rounded up.
    pub fn record(&self, sent_wall: Nanos) -> Lease {
        Lease {
            expires_unix_ms: sent_wall.0.saturating_add(self.lease.0) / NANOS_PER_MS,
            skew_ms: self.skew.0.div_ceil(NANOS_PER_MS),
        }
    }
}

/// The lease a registration records: until when its owner may acknowledge on it (in
/// the owner's wall clock), and the skew the owner allowed for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Lease {
    /// Milliseconds since the Unix epoch.
    pub expires_unix_ms: u64,
    pub skew_ms: u64,
}

impl Lease {
    /// Two leases as one that ends no earlier than either and allows for the larger
    /// skew: what a claim or a renewal writes over a recorded lease, so a registration's
    /// lease never moves back.
    pub fn merge(a: Option<Lease>, b: Option<Lease>) -> Option<Lease> {
        match (a, b) {
            (Some(a), Some(b)) => Some(Lease {
                expires_unix_ms: a.expires_unix_ms.max(b.expires_unix_ms),
                skew_ms: a.skew_ms.max(b.skew_ms),
            }),
            (a, None) => a,
            (None, b) => b,
        }
    }

    /// The wall-clock instant (nanoseconds since the Unix epoch) from which a claimer
    /// allowing `own_skew` may LIST: the expiry plus the larger skew.
    pub fn list_not_before(&self, own_skew: Nanos) -> Nanos {
        let skew = self.skew_ms.saturating_mul(NANOS_PER_MS).max(own_skew.0);
        Nanos(
            self.expires_unix_ms
                .saturating_mul(NANOS_PER_MS)
                .saturating_add(skew),
        )
    }
}

/// A recorded lease that runs implausibly far beyond the claimer's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseTooFar {
    pub list_not_before: Nanos,
    pub now_wall: Nanos,
}

impl fmt::Display for LeaseTooFar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the registration's lease lets a new owner list only {} from now, more than the longest lease \
             and skew ({TAKEOVER_WAIT_MAX}): a clock is wrong",
            self.list_not_before - self.now_wall
        )
    }
}

impl std::error::Error for LeaseTooFar {}

/// How long a claimer that replaced a registration recording `replaced` must still wait
/// before it LISTs, its wall clock reading `now_wall` and allowing `own_skew`
/// ([`Nanos::ZERO`]: list now). Ask again after waiting: the wall clock may have moved
/// otherwise than the wait.
pub fn takeover_wait(
    replaced: Option<Lease>,
    own_skew: Nanos,
    now_wall: Nanos,
) -> Result<Nanos, LeaseTooFar> {
    let Some(lease) = replaced else {
        return Ok(Nanos::ZERO);
    };
    let list_not_before = lease.list_not_before(own_skew);
    let wait = list_not_before.saturating_sub(now_wall);
    if wait > TAKEOVER_WAIT_MAX {
        return Err(LeaseTooFar {
            list_not_before,
            now_wall,
        });
    }
    Ok(wait)
}

/// What the owner does with a batch whose PUT returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeaseJudgement {
    /// Returned before the acknowledgement deadline: stored, no read needed.
    Acknowledge,
    /// Returned at or after it (or no renewal succeeded yet): the lease proves nothing;
    /// read the registration.
    ReadRegistration,
}

/// The owner's side of the lease, on its monotonic clock (nanoseconds from any origin
/// that does not move).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OwnerLease {
    terms: LeaseTerms,
    acknowledge_before: Option<Nanos>,
    last_sent: Option<Nanos>,
}

impl OwnerLease {
    pub fn new(terms: LeaseTerms) -> OwnerLease {
        OwnerLease {
            terms,
            acknowledge_before: None,
            last_sent: None,
        }
    }

    pub fn terms(&self) -> LeaseTerms {
        self.terms
    }

    /// A conditional write of the registration recording `written` succeeded; it was
    /// sent at monotonic `sent_at`, when the wall clock read `sent_wall`. The deadline
    /// becomes `sent_at + (expiry - sent_wall) - skew`, if later than the one before
    /// (each successful write justifies its own deadline, see the module docs).
    pub fn renewed(&mut self, sent_at: Nanos, sent_wall: Nanos, written: Lease) {
        let expiry = written.expires_unix_ms.saturating_mul(NANOS_PER_MS);
        let valid_for = expiry
            .saturating_sub(sent_wall.0)
            .saturating_sub(self.terms.skew.0);
        let deadline = Nanos(sent_at.0.saturating_add(valid_for));
        self.acknowledge_before = Some(self.acknowledge_before.map_or(deadline, |d| d.max(deadline)));
        self.last_sent = Some(self.last_sent.map_or(sent_at, |s| s.max(sent_at)));
    }

    /// The monotonic instant before which a returned PUT is acknowledged on the lease.
    pub fn acknowledge_before(&self) -> Option<Nanos> {
        self.acknowledge_before
    }

    /// A batch whose PUT returned at monotonic `put_returned_at`.
    pub fn judge(&self, put_returned_at: Nanos) -> LeaseJudgement {
        match self.acknowledge_before {
            Some(deadline) if put_returned_at < deadline => LeaseJudgement::Acknowledge,
            _ => LeaseJudgement::ReadRegistration,
        }
    }

    /// When the next renewal is due: a renewal interval after the last successful one
    /// was sent (at once if none was).
    pub fn renewal_due_at(&self) -> Nanos {
        self.last_sent
            .map_or(Nanos::ZERO, |sent| sent + self.terms.renew_interval())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn terms(lease_ms: u64, skew_ms: u64) -> LeaseTerms {
        LeaseTerms::new(Nanos(lease_ms * MS), Nanos(skew_ms * MS)).unwrap()
    }

    #[test]
    fn terms_refuse_what_does_not_fit_by_name() {
        assert_eq!(LeaseTerms::default(), terms(10_000, 1_000));
        assert_eq!(
            LeaseTerms::new(Nanos(50 * MS), Nanos::ZERO),
            Err(LeaseTermsError::LeaseTooShort { lease: Nanos(50 * MS) })
        );
        assert!(LeaseTerms::new(Nanos(301_000 * MS), Nanos::ZERO)
            .unwrap_err()
            .to_string()
            .starts_with("lease 301000.0 ms is longer"));
        assert_eq!(
            LeaseTerms::new(Nanos(1_000 * MS), Nanos(251 * MS))
                .unwrap_err()
                .to_string(),
            "skew 251.0 ms is more than a 4th of the lease 1000.0 ms"
        );
        assert!(LeaseTerms::new(Nanos(1_000 * MS), Nanos(250 * MS)).is_ok());
        let t = terms(10_000, 1_000);
        assert_eq!(t.renew_interval(), Nanos(2_500 * MS));
        assert_eq!(t.retry_interval(), Nanos(500 * MS));
    }

    #[test]
    fn a_put_returned_before_the_deadline_is_acknowledged_and_one_after_it_is_not() {
        // Lease 10 s, skew 1 s. The renewal was sent at monotonic 5 s, the wall clock
        // reading 1,000,000.0004 s: expiry 1,000,010.000 s (rounded down to the ms), so
        // the deadline is 5 s + (10 s - 0.4 ms) - 1 s on the monotonic clock.
        let t = terms(10_000, 1_000);
        let mut owner = OwnerLease::new(t);
        assert_eq!(owner.judge(Nanos(1)), LeaseJudgement::ReadRegistration, "no renewal yet");
        assert_eq!(owner.renewal_due_at(), Nanos::ZERO);
        let sent_wall = Nanos(1_000_000_000_400_000);
        let written = t.record(sent_wall);
        assert_eq!(written, Lease { expires_unix_ms: 1_000_010_000, skew_ms: 1_000 });
        owner.renewed(Nanos(5_000 * MS), sent_wall, written);
        let deadline = Nanos(5_000 * MS + 10_000 * MS - 400_000 - 1_000 * MS);
        assert_eq!(owner.acknowledge_before(), Some(deadline));
        assert_eq!(owner.judge(Nanos(deadline.0 - 1)), LeaseJudgement::Acknowledge);
        // At and after the deadline (the lease's expiry minus the skew) the lease
        // proves nothing: acknowledging there could miss the new owner's LIST.
        assert_eq!(owner.judge(deadline), LeaseJudgement::ReadRegistration);
        assert_eq!(owner.judge(Nanos(20_000 * MS)), LeaseJudgement::ReadRegistration);
        assert_eq!(owner.renewal_due_at(), Nanos(7_500 * MS));
    }

    #[test]
    fn a_renewal_never_moves_the_deadline_back() {
        let t = terms(1_000, 100);
        let mut owner = OwnerLease::new(t);
        owner.renewed(Nanos(2_000 * MS), Nanos(50_000 * MS), t.record(Nanos(50_000 * MS)));
        let first = owner.acknowledge_before().unwrap();
        assert_eq!(first, Nanos(2_900 * MS));
        // A write that recorded an expiry already past when it was sent (a wall clock
        // stepped forward) justifies nothing and leaves the deadline where it was.
        owner.renewed(Nanos(2_100 * MS), Nanos(60_000 * MS), t.record(Nanos(50_000 * MS)));
        assert_eq!(owner.acknowledge_before(), Some(first));
        assert_eq!(owner.renewal_due_at(), Nanos(2_350 * MS));
    }

    #[test]
    fn a_claimer_waits_out_the_replaced_lease_plus_the_larger_skew() {
        let recorded = Lease { expires_unix_ms: 100_000, skew_ms: 1_000 };
        assert_eq!(takeover_wait(None, Nanos(MS), Nanos(1)), Ok(Nanos::ZERO));
        assert_eq!(
            takeover_wait(Some(recorded), Nanos(500 * MS), Nanos(99_000 * MS)),
            Ok(Nanos(2_000 * MS))
        );
        assert_eq!(
            takeover_wait(Some(recorded), Nanos(3_000 * MS), Nanos(99_000 * MS)),
            Ok(Nanos(4_000 * MS))
        );
        assert_eq!(takeover_wait(Some(recorded), Nanos::ZERO, Nanos(101_000 * MS)), Ok(Nanos::ZERO));
        let far = Lease { expires_unix_ms: 10_000_000, skew_ms: 0 };
        let refused = takeover_wait(Some(far), Nanos::ZERO, Nanos(1_000 * MS)).unwrap_err();
        assert!(refused.to_string().contains("a clock is wrong"), "{refused}");
    }

    #[test]
    fn merged_leases_never_end_earlier() {
        let a = Lease { expires_unix_ms: 5, skew_ms: 9 };
        let b = Lease { expires_unix_ms: 7, skew_ms: 1 };
        assert_eq!(Lease::merge(Some(a), Some(b)), Some(Lease { expires_unix_ms: 7, skew_ms: 9 }));
        assert_eq!(Lease::merge(None, Some(b)), Some(b));
        assert_eq!(Lease::merge(Some(a), None), Some(a));
        assert_eq!(Lease::merge(None, None), None);
    }

    /// The argument of the module docs, run on a controllable clock: an owner whose wall
    /// clock runs `s` behind true time and a claimer whose runs `s` ahead (the worst case
    /// the skew allows: the owner's expiry is early in its own eyes, the claimer's wait
    /// short), for several send instants and every return instant at a 0.1 ms grain.
    /// Every PUT the owner acknowledges on the lease returned before the claimer's LIST,
    /// the last one just before it.
    #[test]
    fn every_put_acknowledged_on_the_lease_returned_before_the_takeover_list() {
        let t = terms(1_000, 100);
        let skew = t.skew().0 as i64;
        for sent_true_ms in [0u64, 7, 333, 999] {
            let sent_true = 10_000 * MS + sent_true_ms * MS;
            let owner_wall = Nanos((sent_true as i64 - skew) as u64);
            let mut owner = OwnerLease::new(t);
            // The owner's monotonic clock reads true time here (any origin would do).
            let written = t.record(owner_wall);
            owner.renewed(Nanos(sent_true), owner_wall, written);
            // The claimer replaced that registration at once and waits out its lease:
            // it lists at the first true instant its clock (s ahead) allows.
            let claimer_now = |true_ns: u64| Nanos((true_ns as i64 + skew) as u64);
            let mut list_true = sent_true;
            while takeover_wait(Some(written), t.skew(), claimer_now(list_true)).unwrap() > Nanos::ZERO {
                list_true += MS / 10;
            }
            let mut last_acknowledged = None;
            for returned_true in (sent_true..sent_true + 2_000 * MS).step_by((MS / 10) as usize) {
                if owner.judge(Nanos(returned_true)) == LeaseJudgement::Acknowledge {
                    assert!(returned_true < list_true, "acknowledged at {returned_true}, listed at {list_true}");
                    last_acknowledged = Some(returned_true);
                }
            }
            // The bound is tight: the last PUT acknowledged returned one step before the LIST.
            assert_eq!(last_acknowledged, Some(list_true - MS / 10));
            // And the lease is not idle: most of it is usable.
            assert_eq!(owner.judge(Nanos(sent_true + 800 * MS)), LeaseJudgement::Acknowledge);
        }
    }
}
