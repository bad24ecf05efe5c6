//! Every upload's PUT and the check after it, and `fence=lease`'s renewals.
//!
//! # Why an acknowledged record survives a takeover
//!
//! A node's log has one writer at a time. A process that takes the node over (after a
//! crash, or while the old one is merely slow) must recover every record the old one
//! acknowledged, and the old one must never acknowledge anything the new one will not
//! see. The epoch in every key alone does not give that: two epochs never collide on a
//! key, so conditional creates of WAL objects fence nothing. walab follows AutoMQ's
//! design with one registration object per node ([`layout::Registration`]):
//!
//! 1. **Claim.** The new owner reads the registration (body and ETag), and writes it
//!    back with `epoch + 1` and its own random owner id, conditionally on that ETag
//!    (`If-Match`; `If-None-Match: *` for a node never claimed). If another claimer got
//!    there first the condition fails, and it reads and tries again.
//! 2. **Recover.** Only then does it LIST the node's prefix and read the objects
//!    ([`layout::plan_chain`]). If the registration it replaced records a lease (its
//!    owner ran with `fence=lease`, below), it first waits until its wall clock has
//!    passed that lease plus the allowed skew.
//! 3. **Record its session.** It writes the registration once more (conditionally on
//!    its own claim's ETag) with a new session: its epoch and the WAL address where its
//!    own objects will start, the end of what it recovered. From then on any object of
//!    an older epoch at or past that address is a straggler and is ignored by every
//!    later recovery, however late it lands.
//! 4. **Check after every upload.** The writer reads the registration after each of its
//!    PUTs returns and before reporting the batch stored. If the epoch or owner moved,
//!    the batch fails with [`SyncError::Fenced`], and so (the machine being fail-stop)
//!    does every later one. Nothing of this writer is acknowledged again. The read is
//!    a HEAD: step 3's conditional PUT returned the registration's ETag, and while a
//!    HEAD still shows that ETag the registration is the one step 3 wrote, naming this
//!    writer (only claimers write it after step 3, and every claim writes another owner
//!    id). Only when the ETag differs does the check GET the body and compare epoch and
//!    owner (a claim, or a store that spells ETags differently on HEAD and PUT; a body
//!    that still names the writer then lends its ETag to later checks).
//!
//! A HEAD carries no body, which once was most of a batch's latency: s3s-fs's own binary
//! sends a GET's answer as two writes (headers, then the body read from the file) on a
//! socket without `TCP_NODELAY`, so the body waited for the client's delayed ACK, about
//! 40 ms, while a HEAD or PUT answer is one write (`examples/s3_floor.rs` measured GET
//! ~43 ms, HEAD ~0.2 ms, PUT ~2 ms there; the test server now sets `TCP_NODELAY`). On
//! S3 a HEAD is still the cheaper read: no body to send, and the same request price.
//!
//! The argument, for a store whose reads see every completed write (S3 has been
//! strongly consistent since 2020, HEAD included; R2, GCS and MinIO are too): a batch is
//! acknowledged only after its PUT returned *and then* a read of the registration still
//! showed the writer's epoch and owner (its body, or the ETag of the writer's own
//! session write). That read came before the new owner's claim was written, which came
//! before the new owner's LIST; so the LIST shows the object, and the object lies below
//! the new session's start. Acknowledgements being in order, every earlier batch was
//! checked the same way. Batches that land after the claim are never acknowledged, and
//! either are recovered (if the LIST saw them: an unacknowledged record may appear) or
//! lie past the new session's start and are ignored.
//!
//! ## The second fence: a lease (`fence=lease`)
//!
//! Step 4 costs a second round trip on every acknowledgement. With `fence=lease` in the
//! URL (`s3://bucket/path?fence=lease&lease=10s&skew=1s`, those two the defaults) the
//! session write of step 3 also records a lease, a wall-clock expiry and the skew
//! allowed for, and a background task renews it every quarter lease by a conditional
//! PUT on the ETag of this writer's last write (`Fence::renew`). A batch whose PUT
//! returned before the lease's deadline (the expiry minus the skew, kept on the
//! monotonic clock from the renewal's send, [`OwnerLease`]) is acknowledged with no read
//! at all; one that returned later falls back to step 4's read. A new owner's claim
//! (step 1) replaces the registration, so the old owner's next renewal fails on its
//! condition and fences it; and the new owner LISTs (step 2) only once the lease it
//! replaced plus the skew has passed on its own clock. Every batch the old owner
//! acknowledged on its lease returned before that lease ended in true time, so before
//! the LIST, which therefore shows it; a batch of the old owner landing later was never
//! acknowledged (its PUT returned past the deadline and the read found the claim) and,
//! past the new session's start, is ignored like any straggler. The full argument, and
//! what it assumes of the clocks, is in [`walab_core::remote::lease`]. A clean close
//! writes the registration back without the lease, so only a node whose owner died or
//! stalled waits a lease out; the price of the lease is that wait (up to lease plus
//! skew) and one registration PUT per renewal.
//!
//! ## What still holds when the conditional PUT is not atomic
//!
//! Some S3-compatible servers check the ETag and then write, without a lock (s3s-fs
//! alone does; walab's test server, [`crate::s3_server`], holds a per-key lock across
//! both, and its tests show the race with the lock switched off): two claimers that
//! read the same registration at the same moment can both succeed. Then both hold the
//! same epoch. What still holds:
//!
//! - *Sequential* takeovers (the one that matters: a node dies or stalls, another takes
//!   over) are exactly as above: nothing races the claim.
//! - Of two racing claimers, the registration keeps the later write. Each claimer reads
//!   the registration back after its claim and gives up unless it sees its own owner
//!   id; and every post-upload check compares the owner id as well as the epoch. So at
//!   most one of them acknowledges anything after the other's write became visible.
//! - WAL objects are created with `If-None-Match: *`. Where two same-epoch writers
//!   would hit one key, the second is refused (or, within the store's non-atomic
//!   window, overwrites it): the remaining hole is two same-epoch claimers both passing
//!   the claim check *and* the read-back, which needs their claim requests to interleave
//!   inside the server. On a store with atomic conditional writes (S3, R2, MinIO, GCS)
//!   (nor on the test server) that cannot happen. The takeover race test does not
//!   depend on it either way: it starts the second process while the first is writing,
//!   and checks every acknowledgement of both.
//!

use super::*;

/// What the check after an upload compares the registration with.
pub(super) struct Fence {
    pub(super) registration: Path,
    pub(super) epoch: u64,
    pub(super) owner: String,
    /// The registration's ETag as this writer's session write left it (`None` when the
    /// store returned none). A HEAD that still shows it proves the registration unchanged.
    pub(super) e_tag: Option<String>,
    /// A newer ETag known to name this writer: a lease renewal's, or one a full read
    /// found (a store whose HEAD and PUT spell ETags differently); later checks then
    /// compare with it.
    pub(super) e_tag_seen: std::sync::Mutex<Option<String>>,
    pub(super) clock: MonoClock,
    /// Under `fence=lease`: the lease this writer holds.
    pub(super) lease: Option<LeaseHold>,
}

/// The backend's monotonic clock, as the core's [`Nanos`] since the backend was made.
#[derive(Clone, Copy, Debug)]
pub(super) struct MonoClock(pub(super) std::time::Instant);

impl MonoClock {
    pub(super) fn now(&self) -> Nanos {
        Nanos(u64::try_from(self.0.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }
}

/// The wall clock, in nanoseconds since the Unix epoch (what a lease's expiry is in).
pub(super) fn wall_now() -> Nanos {
    let since_epoch = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    Nanos(u64::try_from(since_epoch.as_nanos()).unwrap_or(u64::MAX))
}

/// What [`S3Backend::record_session`] wrote, and when it was sent.
pub(super) struct SessionWrite {
    pub(super) registration: Registration,
    pub(super) version: UpdateVersion,
    pub(super) sent_at: Nanos,
    pub(super) sent_wall: Nanos,
}

/// The lease a `fence=lease` writer holds: the core's deadline, and the registration
/// as this writer last wrote it with its version (what the next renewal writes over).
pub(super) struct LeaseHold {
    pub(super) state: std::sync::Mutex<LeaseState>,
}

pub(super) struct LeaseState {
    pub(super) owner: OwnerLease,
    pub(super) registration: Registration,
    pub(super) version: UpdateVersion,
}

impl LeaseHold {
    pub(super) fn state(&self) -> std::sync::MutexGuard<'_, LeaseState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// How one renewal went.
pub(super) enum Renewal {
    Renewed,
    /// Refused on its condition, and the registration names another owner.
    Fenced,
    /// Not answered, or refused by a write of this writer's own whose answer was lost
    /// (then its version is adopted): try again soon.
    Failed,
}

/// The renewal task and what stops it.
pub(super) struct Renewer {
    pub(super) stop: tokio::sync::watch::Sender<bool>,
    pub(super) task: tokio::task::JoinHandle<()>,
}

impl Fence {
    pub(super) fn new(registration: Path, epoch: u64, owner: String, clock: MonoClock, mode: FenceMode, session: Option<SessionWrite>) -> Fence {
        let e_tag = session.as_ref().and_then(|written| written.version.e_tag.clone());
        let lease = match (mode.lease_terms(), session) {
            (Some(terms), Some(written)) => {
                let mut owner_lease = OwnerLease::new(terms);
                if let Some(lease) = written.registration.lease {
                    owner_lease.renewed(written.sent_at, written.sent_wall, lease);
                }
                let state = LeaseState { owner: owner_lease, registration: written.registration, version: written.version };
                Some(LeaseHold { state: std::sync::Mutex::new(state) })
            }
            _ => None,
        };
        Fence { registration, epoch, owner, e_tag, e_tag_seen: std::sync::Mutex::new(None), clock, lease }
    }

    /// Under `fence=lease`, whether a batch whose PUT returned at `put_returned_at` is
    /// acknowledged on the lease, without a read.
    pub(super) fn on_lease(&self, put_returned_at: Nanos) -> bool {
        self.lease.as_ref().is_some_and(|hold| hold.state().owner.judge(put_returned_at) == LeaseJudgement::Acknowledge)
    }

    /// One renewal: the registration as this writer last wrote it, with a fresh lease,
    /// conditionally on that write's version.
    pub(super) async fn renew(&self, store: &dyn ObjectStore, counts: &RequestCounts) -> Renewal {
        let Some(hold) = &self.lease else { return Renewal::Failed };
        let (body, version, sent_at, sent_wall) = {
            let state = hold.state();
            let (sent_at, sent_wall) = (self.clock.now(), wall_now());
            let body = state.registration.with_lease(state.owner.terms().record(sent_wall));
            (body, state.version.clone(), sent_at, sent_wall)
        };
        counts.lease_renewals.fetch_add(1, Ordering::Relaxed);
        let put = store.put_opts(&self.registration, PutPayload::from(body.to_bytes()), PutOptions::from(PutMode::Update(version))).await;
        match put {
            Ok(put) => {
                let mut state = hold.state();
                if let Some(lease) = body.lease {
                    state.owner.renewed(sent_at, sent_wall, lease);
                }
                state.registration = body;
                state.version = UpdateVersion { e_tag: put.e_tag.clone(), version: put.version };
                drop(state);
                if let Some(e_tag) = put.e_tag {
                    *self.e_tag_seen.lock().unwrap_or_else(|p| p.into_inner()) = Some(e_tag);
                }
                Renewal::Renewed
            }
            Err(object_store::Error::Precondition { .. }) => {
                // Either a claim replaced the registration, or a renewal of ours landed
                // and its answer was lost (a client retry then meets its own write).
                counts.other.fetch_add(1, Ordering::Relaxed);
                match S3Backend::read_registration(store, &self.registration).await {
                    Ok(Some((now, version))) if now.epoch == self.epoch && now.owner == self.owner => {
                        // Ours: go on from it, the deadline unchanged (the lost write's
                        // send time is not known, so it justifies nothing here).
                        let mut state = hold.state();
                        state.registration = now;
                        state.version = version;
                        Renewal::Failed
                    }
                    Ok(_) => Renewal::Fenced,
                    Err(_) => Renewal::Failed,
                }
            }
            Err(_) => Renewal::Failed,
        }
    }

    /// When the next renewal is due (monotonic).
    pub(super) fn renewal_due_at(&self) -> Nanos {
        self.lease.as_ref().map_or(Nanos::MAX, |hold| hold.state().owner.renewal_due_at())
    }

    /// Whether the registration, read now, still names this writer's epoch and owner.
    /// `Err` when the store could not answer.
    pub(super) async fn still_ours(&self, store: &dyn ObjectStore, counts: &RequestCounts) -> Result<bool, ()> {
        let seen = self.e_tag_seen.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if let Some(expected) = seen.or_else(|| self.e_tag.clone()) {
            // Only a claimer writes the registration, and every claim names another
            // owner: the same ETag is the same registration, still ours. No body needed.
            counts.fence_reads.fetch_add(1, Ordering::Relaxed);
            match store.head(&self.registration).await {
                Ok(meta) if meta.e_tag.as_deref() == Some(expected.as_str()) => return Ok(true),
                // Another ETag: read the body below to tell a claim from a mere
                // difference in how the store spells ETags.
                Ok(_) => {}
                Err(object_store::Error::NotFound { .. }) => return Ok(false),
                Err(_) => return Err(()),
            }
        }
        counts.fence_reads.fetch_add(1, Ordering::Relaxed);
        match S3Backend::read_registration(store, &self.registration).await {
            Ok(Some((now, version))) if now.epoch == self.epoch && now.owner == self.owner => {
                if let Some(e_tag) = version.e_tag {
                    *self.e_tag_seen.lock().unwrap_or_else(|p| p.into_inner()) = Some(e_tag);
                }
                Ok(true)
            }
            Ok(_) => Ok(false),
            Err(_) => Err(()),
        }
    }
}

/// Uploads one batch and runs the fence check; the result the driver is told.
pub(super) async fn upload(
    store: Arc<dyn ObjectStore>,
    path: Path,
    frame: bytes::Bytes,
    fence: Arc<Fence>,
    fenced: Arc<AtomicBool>,
    counts: Arc<RequestCounts>,
) -> Result<(), SyncError> {
    if fenced.load(Ordering::Acquire) {
        return Err(SyncError::Fenced);
    }
    counts.wal_puts.fetch_add(1, Ordering::Relaxed);
    let options = PutOptions::from(PutMode::Create);
    match store.put_opts(&path, PutPayload::from_bytes(frame.clone()), options).await {
        Ok(_) => {}
        Err(object_store::Error::AlreadyExists { .. } | object_store::Error::Precondition { .. }) => {
            // A retried PUT whose first attempt landed finds its own bytes: stored.
            // Anything else at our key was written by a same-epoch rival.
            counts.other.fetch_add(1, Ordering::Relaxed);
            let same = match store.get(&path).await {
                Ok(result) => result.bytes().await.is_ok_and(|stored| stored == frame),
                Err(_) => false,
            };
            if !same {
                fenced.store(true, Ordering::Release);
                return Err(SyncError::Fenced);
            }
        }
        Err(_) => return Err(SyncError::Unavailable),
    }
    let returned_at = fence.clock.now();
    if fenced.load(Ordering::Acquire) {
        // A renewal found the node taken over while this PUT ran.
        return Err(SyncError::Fenced);
    }
    // `fence=lease`: a PUT that returned before the lease's deadline needs no read
    // (the argument is in `walab_core::remote::lease`).
    if fence.on_lease(returned_at) {
        return Ok(());
    }
    // The fence check: only a registration that still names us lets the batch count.
    match fence.still_ours(store.as_ref(), &counts).await {
        Ok(true) => Ok(()),
        Ok(false) => {
            fenced.store(true, Ordering::Release);
            Err(SyncError::Fenced)
        }
        Err(()) => Err(SyncError::Unavailable),
    }
}

/// Renews the lease every renewal interval (sooner again after a failure) until told
/// to stop or fenced. A refused renewal fences the writer: nothing of it is acknowledged
/// again, on the lease or otherwise. Bounded by the backend's life: dropping it stops
/// this loop.
pub(super) async fn renew_lease(
    store: Arc<dyn ObjectStore>,
    fence: Arc<Fence>,
    fenced: Arc<AtomicBool>,
    counts: Arc<RequestCounts>,
    retry_interval: Nanos,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let mut due = fence.renewal_due_at();
    loop {
        let wait = due.saturating_sub(fence.clock.now());
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_nanos(wait.0)) => {}
            _ = stop.changed() => return,
        }
        if fenced.load(Ordering::Acquire) {
            return;
        }
        match fence.renew(store.as_ref(), &counts).await {
            Renewal::Renewed => due = fence.renewal_due_at(),
            Renewal::Fenced => {
                fenced.store(true, Ordering::Release);
                return;
            }
            Renewal::Failed => due = fence.clock.now() + retry_interval,
        }
    }
}

impl S3Backend {
    /// The fence checks' state after this writer's session write (`None`: a reader).
    pub(super) fn install_fence(&mut self, session: Option<SessionWrite>) {
        let registration = Self::path(&registration_key(&self.location.node_prefix));
        let fence = Fence::new(registration, self.epoch, self.owner.clone(), self.clock, self.fence_mode, session);
        self.fence = Arc::new(fence);
    }

    /// Starts the lease's renewals (`fence=lease` only).
    pub(super) fn start_renewer(&mut self) {
        let Some(terms) = self.fence_mode.lease_terms() else { return };
        if self.fence.lease.is_none() {
            return;
        }
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let (store, fence, fenced, counts) =
            (Arc::clone(&self.store), Arc::clone(&self.fence), Arc::clone(&self.fenced), Arc::clone(&self.counts));
        let task = self.runtime().spawn(renew_lease(store, fence, fenced, counts, terms.retry_interval(), stopped));
        self.renewer = Some(Renewer { stop, task });
    }

    /// On a clean close under `fence=lease`: stop renewing, then write the
    /// registration without its lease (conditionally on this writer's last write), so
    /// the next owner need not wait it out. Safe only because nothing of this writer is
    /// acknowledged after the close; a failure leaves the lease to expire.
    pub(super) fn release_lease(&mut self) {
        if let Some(renewer) = self.renewer.take() {
            let _ = renewer.stop.send(true);
            let _ = self.runtime().block_on(async { tokio::time::timeout(RELEASE_WAIT_MAX, renewer.task).await });
        }
        let Some(hold) = &self.fence.lease else { return };
        if self.fenced.load(Ordering::Acquire) {
            return;
        }
        let (body, version) = {
            let state = hold.state();
            (state.registration.without_lease(), state.version.clone())
        };
        self.counts.other.fetch_add(1, Ordering::Relaxed);
        let put = self.store.put_opts(&self.fence.registration, PutPayload::from(body.to_bytes()), PutOptions::from(PutMode::Update(version)));
        let _ = self.runtime().block_on(async { tokio::time::timeout(RELEASE_WAIT_MAX, put).await });
    }
}
