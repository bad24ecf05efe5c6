//! Taking a node over: the claim of its registration, recovery's LIST and reads, and the
//! session this writer records; and [`reset`], which takes the node over to start an
//! empty log whose seqs go on. Why the steps come in this order is argued in
//! [`super::fence`].
//!
//! # Recovery
//!
//! Lists the node's prefix, keeps the objects [`layout::plan_chain`] says are valid,
//! reads them (16 at a time), and hands each in turn to the core's
//! [`walab_core::remote::recovery::ChainWalk`], which checks it: its frame must start at the key's
//! `start`, end at its `end`, carry a matching CRC32, and hold tiny-store records whose
//! CRC32C and seqs (each one more than the last) check out. The walk stops at the first
//! gap or bad object. A gap followed by objects of the same session is normal (a later
//! upload of a pipeline was stored, an earlier one was not: none of it was acknowledged);
//! a gap followed by a *later* session's objects means something acknowledged is out of
//! reach, and recovery refuses with [`WalError::Corrupt`]. Objects recovery leaves out
//! are deleted in the background once the new session is recorded.
//!
//! A backend opened without `create` (what `walab dump` uses) only reads: it takes the
//! sessions from the registration as it finds it, claims nothing, records nothing and
//! deletes nothing, so dumping a live node does not fence its writer; appends to it fail.
//!

use super::*;

/// What [`S3Backend::claim`] got: the registration as written, and its version.
pub(super) struct Claim {
    pub(super) registration: Registration,
    pub(super) version: UpdateVersion,
}

/// A node's state as recovery found it (shared by open and [`reset`]).
pub(super) struct Found {
    pub(super) claim: Claim,
    /// The objects that form the log, oldest first (their records went to the visitor).
    pub(super) chain: Vec<KeptObject>,
    /// Where the new session starts and its first seq.
    pub(super) start_offset: u64,
    pub(super) next_seq: u64,
    pub(super) repaired: Option<String>,
    /// Objects recovery left out (deleted once the new session is recorded).
    pub(super) garbage: Vec<WalObject>,
}

impl S3Backend {
    pub(super) async fn read_registration(
        store: &dyn ObjectStore,
        key: &Path,
    ) -> Result<Option<(Registration, UpdateVersion)>, WalError> {
        match store.get(key).await {
            Ok(result) => {
                let version = UpdateVersion { e_tag: result.meta.e_tag.clone(), version: result.meta.version.clone() };
                let bytes = result.bytes().await.map_err(|e| WalError::Open(store_error(key.as_ref(), &e)))?;
                let registration = Registration::from_bytes(&bytes).map_err(|e| WalError::Corrupt(format!("{key}: {e}")))?;
                Ok(Some((registration, version)))
            }
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(error) => Err(WalError::Open(store_error(key.as_ref(), &error))),
        }
    }

    /// Step 1 of the fencing protocol: take the node with a new epoch.
    pub(super) async fn claim(&self) -> Result<Claim, WalError> {
        let key = Self::path(&registration_key(&self.location.node_prefix));
        let store = self.store.as_ref();
        for _ in 0..CLAIM_ATTEMPTS_MAX {
            self.counts.other.fetch_add(1, Ordering::Relaxed);
            let (current, mode) = match Self::read_registration(store, &key).await? {
                Some((registration, version)) => (registration, PutMode::Update(version)),
                None if self.create => (Registration::unclaimed(), PutMode::Create),
                None => return Err(WalError::Open(format!("{}: no log here", self.location.describe()))),
            };
            let claimed =
                current.claimed_by(&self.owner).ok_or_else(|| WalError::Corrupt(format!("{key}: epoch overflow")))?;
            self.counts.other.fetch_add(1, Ordering::Relaxed);
            let put = store.put_opts(&key, PutPayload::from(claimed.to_bytes()), PutOptions::from(mode)).await;
            match put {
                Ok(_) => {}
                Err(object_store::Error::Precondition { .. } | object_store::Error::AlreadyExists { .. }) => continue,
                Err(error) => return Err(WalError::Open(store_error(key.as_ref(), &error))),
            }
            // Read back: on a store whose conditional PUT is not atomic, a racing
            // claimer's write may have replaced ours.
            self.counts.other.fetch_add(1, Ordering::Relaxed);
            match Self::read_registration(store, &key).await? {
                Some((now, version)) if now.owner == claimed.owner && now.epoch == claimed.epoch => {
                    return Ok(Claim { registration: now, version });
                }
                _ => continue,
            }
        }
        Err(WalError::Open(format!(
            "{}: lost the registration to other claimers {CLAIM_ATTEMPTS_MAX} times",
            self.location.describe()
        )))
    }

    /// Steps 1 and 2: claim (unless only reading), list, read, and let the core decide
    /// what the objects read make of the log ([`ChainWalk`]). Objects are read
    /// [`RECOVERY_READS_INFLIGHT_MAX`] at a time and checked in chain order, each one's
    /// records handed to `visit` once it checks out, so recovery holds a few objects,
    /// not the log; the walk stops reading at the first damaged object.
    pub(super) async fn find(&self, take_over: bool, visit: &mut dyn FnMut(TinyRecord)) -> Result<Found, WalError> {
        let claim = if take_over { self.claim().await? } else { self.read_claim().await? };
        if take_over {
            // The claim kept the replaced registration's lease: wait it out before the
            // LIST, so every batch its owner acknowledged on it is listed.
            self.wait_out_lease(claim.registration.lease).await?;
        }
        let sessions = &claim.registration.sessions;
        let plan = plan_chain(&self.list_wal_objects().await?, sessions);
        let mut walk = ChainWalk::new();
        let mut bodies = self.read_objects(&plan.chain);
        for object in &plan.chain {
            let body = bodies.next().await.expect("one body per object of the chain")?;
            if !walk.object(object, &body, visit) {
                break;
            }
        }
        drop(bodies);
        let claimed_epoch = take_over.then_some(claim.registration.epoch);
        let walked = walk.finish(&plan, sessions, claimed_epoch).map_err(|refusal| self.refusal(refusal))?;
        let repaired = walked.left_out.as_ref().map(|left_out| self.left_out_note(left_out));
        let WalkedSummary { chain, start_offset, next_seq, garbage, .. } = walked;
        Ok(Found { claim, chain, start_offset, next_seq, repaired, garbage })
    }

    /// Waits until this process's wall clock has passed `replaced` (the lease of the
    /// registration a claim replaced) plus the larger of its recorded skew and this
    /// writer's own ([`takeover_wait`]). Asks again after each sleep, at most
    /// [`TAKEOVER_WAITS_MAX`] times: the wall clock may move otherwise than the sleep.
    pub(super) async fn wait_out_lease(&self, replaced: Option<Lease>) -> Result<(), WalError> {
        let own_skew = self.fence_mode.lease_terms().map_or(Nanos::ZERO, |terms| terms.skew());
        for _ in 0..TAKEOVER_WAITS_MAX {
            let wait = takeover_wait(replaced, own_skew, wall_now())
                .map_err(|error| WalError::Open(format!("{}: {error}", self.location.describe())))?;
            if wait == Nanos::ZERO {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_nanos(wait.0)).await;
        }
        Err(WalError::Open(format!(
            "{}: the wall clock did not pass the previous owner's lease in {TAKEOVER_WAITS_MAX} waits",
            self.location.describe()
        )))
    }

    /// The registration as it is, for a reader that claims nothing.
    pub(super) async fn read_claim(&self) -> Result<Claim, WalError> {
        let key = Self::path(&registration_key(&self.location.node_prefix));
        self.counts.other.fetch_add(1, Ordering::Relaxed);
        match Self::read_registration(self.store.as_ref(), &key).await? {
            Some((registration, version)) => Ok(Claim { registration, version }),
            None => Err(WalError::Open(format!("{}: no log here", self.location.describe()))),
        }
    }

    /// Every WAL object under the node prefix (one LIST, read a page at a time; only
    /// the parsed names are kept).
    pub(super) async fn list_wal_objects(&self) -> Result<Vec<WalObject>, WalError> {
        let prefix = &self.location.node_prefix;
        self.counts.other.fetch_add(1, Ordering::Relaxed);
        self.store
            .list(Some(&Self::path(prefix)))
            .try_filter_map(|meta| async move {
                Ok(match parse_key(prefix, meta.location.as_ref()) {
                    KeyKind::Wal(object) => Some(object),
                    _ => None,
                })
            })
            .try_collect()
            .await
            .map_err(|e| WalError::Open(store_error(&self.location.describe(), &e)))
    }

    /// The objects' bodies, in order, [`RECOVERY_READS_INFLIGHT_MAX`] GETs at a time
    /// (a GET starts as the caller takes a body).
    pub(super) fn read_objects<'a>(
        &'a self,
        objects: &'a [WalObject],
    ) -> impl futures::Stream<Item = Result<bytes::Bytes, WalError>> + Unpin + 'a {
        let fetches = objects.iter().map(move |object| {
            let store = Arc::clone(&self.store);
            let path = Self::path(&object.key(&self.location.node_prefix));
            self.counts.other.fetch_add(1, Ordering::Relaxed);
            async move {
                let result = match store.get(&path).await {
                    Ok(result) => result.bytes().await,
                    Err(error) => Err(error),
                };
                result.map_err(|e| WalError::Open(store_error(path.as_ref(), &e)))
            }
        });
        Box::pin(futures::stream::iter(fetches).buffered(RECOVERY_READS_INFLIGHT_MAX))
    }

    /// The one-line refusal for a log with acknowledged records out of reach.
    pub(super) fn refusal(&self, refusal: OutOfReach) -> WalError {
        let prefix = &self.location.node_prefix;
        let what = match refusal.stop {
            WalkStop::Damaged { object, damage } => format!("{}: {damage}", object.key(prefix)),
            WalkStop::Gap { offset } => format!("no object starts at {offset}"),
            WalkStop::EarlyEnd => "the log ends early".to_string(),
        };
        WalError::Corrupt(format!("{}: {what}, and {} lies beyond it", self.location.describe(), refusal.beyond.key(prefix)))
    }

    /// The one-line note for what recovery left out.
    pub(super) fn left_out_note(&self, left_out: &LeftOut) -> String {
        match left_out {
            LeftOut::LastObject { object, damage } => format!(
                "{}: left out the last object {}: {damage}",
                self.location.describe(),
                object.key(&self.location.node_prefix)
            ),
            LeftOut::AfterGap { offset, objects } => format!(
                "{}: no object starts at {offset}; left out {objects} later unacknowledged objects",
                self.location.describe()
            ),
        }
    }

    /// Step 3: record this process's session, starting at `start_offset`, and under
    /// `fence=lease` its first lease (the replaced lease, waited out by now, is
    /// dropped). Returns what was written and its version (the fence checks compare
    /// with its ETag; renewals write over it).
    pub(super) async fn record_session(
        &self,
        claim: &Claim,
        lowest_start: Option<u64>,
        start_offset: u64,
        first_seq: u64,
    ) -> Result<SessionWrite, WalError> {
        let key = Self::path(&registration_key(&self.location.node_prefix));
        let (sent_at, sent_wall) = (self.clock.now(), wall_now());
        let session = claim.registration.with_session(lowest_start, start_offset, first_seq).without_lease();
        let registration = match self.fence_mode.lease_terms() {
            Some(terms) => session.with_lease(terms.record(sent_wall)),
            None => session,
        };
        self.counts.other.fetch_add(1, Ordering::Relaxed);
        let mode = PutMode::Update(claim.version.clone());
        match self.store.put_opts(&key, PutPayload::from(registration.to_bytes()), PutOptions::from(mode)).await {
            Ok(put) => Ok(SessionWrite {
                registration,
                version: UpdateVersion { e_tag: put.e_tag, version: put.version },
                sent_at,
                sent_wall,
            }),
            Err(object_store::Error::Precondition { .. }) => Err(WalError::Open(format!(
                "{}: taken over by another process during recovery",
                self.location.describe()
            ))),
            Err(error) => Err(WalError::Open(store_error(key.as_ref(), &error))),
        }
    }
}

/// What [`reset`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResetReport {
    pub epoch: u64,
    pub objects_deleted: u64,
    /// The seq the next append gets.
    pub next_seq: u64,
}

/// Reset: take the node over, delete every object of its log, and record a session
/// that starts where the log ended, so the next open finds an empty log whose seqs
/// continue.
pub fn reset(backend: &mut S3Backend) -> Result<ResetReport, WalError> {
    let found = backend.runtime().block_on(backend.find(true, &mut |_| {}))?;
    let prefix = backend.location.node_prefix.clone();
    let store = Arc::clone(&backend.store);
    // Oldest first, so that a failure part-way still leaves a log without holes.
    let mut doomed: Vec<WalObject> = found.chain.iter().map(|kept| kept.object).collect();
    doomed.extend(found.garbage.iter().copied());
    let deleted = backend.runtime().block_on(async {
        let mut deleted = 0u64;
        for object in &doomed {
            match store.delete(&S3Backend::path(&object.key(&prefix))).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => deleted += 1,
                Err(error) => return Err(WalError::Open(store_error(&object.key(&prefix), &error))),
            }
        }
        Ok(deleted)
    })?;
    let session = backend.runtime().block_on(backend.record_session(&found.claim, None, found.start_offset, found.next_seq))?;
    backend.epoch = found.claim.registration.epoch;
    // Under `fence=lease` the session write took a lease; dropping the backend releases it.
    backend.install_fence(Some(session));
    Ok(ResetReport { epoch: backend.epoch, objects_deleted: deleted, next_seq: found.next_seq })
}
