//! The WAL on an object store: one PUT per bulk, pipelined, fenced by epoch.
//!
//! # What one append costs
//!
//! On S3 the price is per request, not per byte, and a PUT takes tens of milliseconds.
//! So the WAL never PUTs a record on its own: the core's group-commit machine
//! ([`walab_core::group_commit`], the same one the file WAL and the browser run) gathers
//! everything that arrived while earlier uploads were in flight into one *bulk*, and
//! this backend turns each bulk into exactly one object:
//!
//! ```text
//! <path>/<cluster>/<node>/<epoch>/wal/<start>-<end>      one stream frame (offset, length, CRC32, records)
//! ```
//!
//! Up to `inflight_max` uploads (4 by default) run at once on this backend's own tokio
//! runtime; [`Backend::persist`] only spawns the upload and returns, and the task calls
//! [`Completion::complete`] when S3 has answered. Uploads may finish in any order; the
//! machine releases acknowledgements in submission order, only once a bulk and every
//! bulk before it are stored.
//!
//! A second, third, fourth upload in flight buys throughput, but every one is a PUT:
//! with W writers and every slot used at once, a bulk carries about W / inflight_max
//! records, so the PUTs per record would rise as the round trip gets faster. So a bulk starts *beside* another upload only once it holds
//! enough records to be worth a PUT of its own; with nothing in flight it starts at
//! once, whatever it holds. With the cohort hold (after an upload, the next bulk waits
//! briefly for the writers it answered) 64 closed-loop writers ride one PUT, and at
//! 1,024 every slot carries several hundred: group commit is first a cost lever here,
//! then a throughput one. The numbers are the object store's preset
//! ([`walab_core::session::preset`]).
//!
//! # Fencing: why an acknowledged record survives a takeover
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
//!    PUTs returns and before reporting the bulk stored. If the epoch or owner moved,
//!    the bulk fails with [`SyncError::Fenced`], and so (the machine being fail-stop)
//!    does every later one. Nothing of this writer is acknowledged again. The read is
//!    a HEAD: step 3's conditional PUT returned the registration's ETag, and while a
//!    HEAD still shows that ETag the registration is the one step 3 wrote, naming this
//!    writer (only claimers write it after step 3, and every claim writes another owner
//!    id). Only when the ETag differs does the check GET the body and compare epoch and
//!    owner (a claim, or a store that spells ETags differently on HEAD and PUT; a body
//!    that still names the writer then lends its ETag to later checks).
//!
//! A HEAD carries no body, which once was most of a bulk's latency: s3s-fs's own binary
//! sends a GET's answer as two writes (headers, then the body read from the file) on a
//! socket without `TCP_NODELAY`, so the body waited for the client's delayed ACK, about
//! 40 ms, while a HEAD or PUT answer is one write (`examples/s3_floor.rs` measured GET
//! ~43 ms, HEAD ~0.2 ms, PUT ~2 ms there; the test server now sets `TCP_NODELAY`). On
//! S3 a HEAD is still the cheaper read: no body to send, and the same request price.
//!
//! The argument, for a store whose reads see every completed write (S3 has been
//! strongly consistent since 2020, HEAD included; R2, GCS and MinIO are too): a bulk is
//! acknowledged only after its PUT returned *and then* a read of the registration still
//! showed the writer's epoch and owner (its body, or the ETag of the writer's own
//! session write). That read came before the new owner's claim was written, which came
//! before the new owner's LIST; so the LIST shows the object, and the object lies below
//! the new session's start. Acknowledgements being in order, every earlier bulk was
//! checked the same way. Bulks that land after the claim are never acknowledged, and
//! either are recovered (if the LIST saw them: an unacknowledged record may appear) or
//! lie past the new session's start and are ignored.
//!
//! ## The second fence: a lease (`fence=lease`)
//!
//! Step 4 costs a second round trip on every acknowledgement. With `fence=lease` in the
//! URL (`s3://bucket/path?fence=lease&lease=10s&skew=1s`, those two the defaults) the
//! session write of step 3 also records a lease, a wall-clock expiry and the skew
//! allowed for, and a background task renews it every quarter lease by a conditional
//! PUT on the ETag of this writer's last write (`Fence::renew`). A bulk whose PUT
//! returned before the lease's deadline (the expiry minus the skew, kept on the
//! monotonic clock from the renewal's send, [`OwnerLease`]) is acknowledged with no read
//! at all; one that returned later falls back to step 4's read. A new owner's claim
//! (step 1) replaces the registration, so the old owner's next renewal fails on its
//! condition and fences it; and the new owner LISTs (step 2) only once the lease it
//! replaced plus the skew has passed on its own clock. Every bulk the old owner
//! acknowledged on its lease returned before that lease ended in true time, so before
//! the LIST, which therefore shows it; a bulk of the old owner landing later was never
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
//! # Recovery
//!
//! Lists the node's prefix, keeps the objects [`layout::plan_chain`] says are valid,
//! reads them (16 at a time), and hands them to the core's
//! [`walab_core::remote::recovery::walk_chain`], which checks each: its frame must start at the key's
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
//! # Trim and Reset
//!
//! The driver groups bulks into trim units (`segment_bytes_max`, `--segment-bytes`) and
//! asks to remove a unit once every record in it is confirmed by the consumer. This
//! backend deletes those objects oldest first, one by one, on a single background task,
//! and stops at the first failed DELETE: the remaining objects then still tile the log
//! from some address on, so a later recovery never meets a hole of its own making.
//! [`reset`] starts a new session from an empty log: it takes the node over, deletes
//! every object, and records a session that starts where the log ended, so seqs go on.

pub mod layout;
pub mod local_server;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use object_store::aws::AmazonS3Builder;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, UpdateVersion};
use walab_core::codec::stream::encode_frame_records;
use walab_core::codec::tiny::{self, TinyRecord};
use walab_core::group_commit::{Batch, Config, SyncError};
use walab_core::session::preset::{Storage, Tuning};
use walab_core::remote::lease::{takeover_wait, FenceMode, Lease, LeaseJudgement, OwnerLease};
use walab_core::remote::recovery::{walk_chain, LeftOut, OutOfReach, WalkStop, Walked};
use walab_core::time::Nanos;

use self::layout::{parse_key, plan_chain, registration_key, KeyKind, Registration, RegistrationJson, WalObject};
/// Checks one recovered object (the core's; the tests damage objects through it).
pub use walab_core::remote::recovery::{decode_object, ObjectDamage};
use super::{Backend, Completion, Recovered, WalError};

/// Attempts at claiming the registration before giving up (each lost one re-reads).
pub const CLAIM_ATTEMPTS_MAX: usize = 8;
/// Objects read at once during recovery.
pub const RECOVERY_READS_INFLIGHT_MAX: usize = 16;
/// Times a claimer asks again how long to wait out the replaced lease (see
/// `S3Backend::wait_out_lease`).
pub const TAKEOVER_WAITS_MAX: usize = 16;
/// How long a clean close waits for the renewal in flight and for the lease's release.
pub const RELEASE_WAIT_MAX: Duration = Duration::from_secs(5);
/// Worker threads of the backend's tokio runtime.
pub const RUNTIME_WORKER_THREADS: usize = 2;
/// Requests this backend sent, by kind (shared with whoever asked for them).
#[derive(Debug, Default)]
pub struct RequestCounts {
    /// WAL object PUTs (one per bulk).
    pub wal_puts: AtomicU64,
    /// Registration reads after uploads (the fence checks: a HEAD, or a GET when the
    /// HEAD cannot decide).
    pub fence_reads: AtomicU64,
    /// Lease renewals (`fence=lease`): conditional PUTs of the registration.
    pub lease_renewals: AtomicU64,
    /// Everything else: claims, LISTs, recovery GETs, DELETEs, a lease's release.
    pub other: AtomicU64,
}

/// Where a node's log lives: a store, the bucket's name (for messages), the node prefix.
#[derive(Clone, Debug)]
pub struct S3Location {
    pub bucket: String,
    pub node_prefix: String,
}

impl S3Location {
    pub fn describe(&self) -> String {
        format!("s3://{}/{}", self.bucket, self.node_prefix)
    }
}

/// Builds the client for `bucket`: credentials and region from the standard AWS
/// environment variables (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
/// `AWS_SESSION_TOKEN`, `AWS_REGION`, ...; on EC2 or ECS the instance's role), and
/// `endpoint` for S3-compatible servers (plain `http://` allowed there).
pub fn connect(bucket: &str, endpoint: Option<&str>) -> Result<Arc<dyn ObjectStore>, String> {
    let mut builder = AmazonS3Builder::from_env().with_bucket_name(bucket);
    if std::env::var_os("AWS_REGION").is_none() && std::env::var_os("AWS_DEFAULT_REGION").is_none() {
        builder = builder.with_region("us-east-1");
    }
    if let Some(endpoint) = endpoint {
        builder = builder.with_endpoint(endpoint).with_allow_http(endpoint.starts_with("http://"));
    }
    let store = builder.build().map_err(|error| format!("s3://{bucket}: cannot configure the client: {error}"))?;
    Ok(Arc::new(store))
}

/// The S3 backend of the WAL. See the module docs.
pub struct S3Backend {
    /// The backend's own runtime (`None` only while dropping).
    runtime: Option<tokio::runtime::Runtime>,
    store: Arc<dyn ObjectStore>,
    location: S3Location,
    create: bool,
    trim_unit_bytes: u64,
    /// This process's random owner id.
    owner: String,
    /// The epoch claimed at recovery (0 before).
    epoch: u64,
    /// WAL address of the next frame.
    next_offset: u64,
    /// Trim unit (the driver's segment) → the objects in it, oldest first.
    units: BTreeMap<u64, Vec<Path>>,
    /// Set once a fence check failed: later uploads are not even sent.
    fenced: Arc<AtomicBool>,
    /// How a bulk is fenced: a read after its PUT, or a lease (`fence=` in the URL).
    fence_mode: FenceMode,
    /// What the fence checks compare with (set at recovery).
    fence: Arc<Fence>,
    /// The lease's background renewal (`fence=lease`, once recovered).
    renewer: Option<Renewer>,
    /// The monotonic clock lease deadlines are kept on.
    clock: MonoClock,
    deleter: Option<tokio::sync::mpsc::UnboundedSender<Vec<Path>>>,
    counts: Arc<RequestCounts>,
    /// What the user set on top of the object store's preset.
    tuning: Tuning,
}

fn random_owner_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    hasher.write_u128(nanos);
    format!("{:016x}-{}", hasher.finish(), std::process::id())
}

fn store_error(subject: &str, error: &object_store::Error) -> String {
    // object_store's messages span lines; keep the CLI's one-line rule.
    let text = error.to_string().replace('\n', " ");
    format!("{subject}: {text}")
}

/// What [`S3Backend::claim`] got: the registration as written, and its version.
struct Claim {
    registration: Registration,
    version: UpdateVersion,
}

/// A node's state as recovery found it (shared by open and [`reset`]).
struct Found {
    claim: Claim,
    chain: Vec<(WalObject, Vec<TinyRecord>)>,
    /// Where the new session starts and its first seq.
    start_offset: u64,
    next_seq: u64,
    repaired: Option<String>,
    /// Objects recovery left out (deleted once the new session is recorded).
    garbage: Vec<WalObject>,
}

impl S3Backend {
    /// A backend for the node at `location` in `store`. `create`: a node never claimed
    /// may be created (`load`, `bench`) rather than refused (`dump`). `trim_unit_bytes`
    /// is the record bytes per trim unit.
    pub fn new(
        store: Arc<dyn ObjectStore>,
        location: S3Location,
        create: bool,
        trim_unit_bytes: u64,
    ) -> Result<S3Backend, String> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(RUNTIME_WORKER_THREADS)
            .thread_name("wal-s3")
            .enable_all()
            .build()
            .map_err(|error| format!("{}: cannot start the I/O runtime: {error}", location.describe()))?;
        let registration = Self::path(&registration_key(&location.node_prefix));
        let clock = MonoClock(std::time::Instant::now());
        Ok(S3Backend {
            runtime: Some(runtime),
            store,
            location,
            create,
            trim_unit_bytes: trim_unit_bytes.max(1),
            owner: random_owner_id(),
            epoch: 0,
            next_offset: 0,
            units: BTreeMap::new(),
            fenced: Arc::new(AtomicBool::new(false)),
            fence_mode: FenceMode::Read,
            fence: Arc::new(Fence {
                registration,
                epoch: 0,
                owner: String::new(),
                e_tag: None,
                e_tag_seen: std::sync::Mutex::new(None),
                clock,
                lease: None,
            }),
            renewer: None,
            clock,
            deleter: None,
            counts: Arc::new(RequestCounts::default()),
            tuning: Tuning::default(),
        })
    }

    /// What the user set on top of the object store's preset
    /// ([`walab_core::session::preset::Storage::ObjectStore`]): `--inflight`,
    /// `--per-write`, `--cohort-hold`, the URL's `pipeline_min=`.
    pub fn with_tuning(mut self, tuning: Tuning) -> S3Backend {
        self.tuning = tuning;
        self
    }

    /// How bulks are fenced (`fence=read`, the default, or `fence=lease`; see
    /// [`walab_core::remote::lease`]).
    pub fn with_fence(mut self, fence_mode: FenceMode) -> S3Backend {
        self.fence_mode = fence_mode;
        self
    }

    /// The request counters (cloned handle; they keep counting).
    pub fn request_counts(&self) -> Arc<RequestCounts> {
        Arc::clone(&self.counts)
    }

    fn runtime(&self) -> &tokio::runtime::Runtime {
        self.runtime.as_ref().expect("the runtime lives until drop")
    }

    fn path(key: &str) -> Path {
        Path::from(key)
    }

    async fn read_registration(
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
    async fn claim(&self) -> Result<Claim, WalError> {
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
    /// what the objects read make of the log ([`walk_chain`]).
    async fn find(&self, take_over: bool) -> Result<Found, WalError> {
        let claim = if take_over { self.claim().await? } else { self.read_claim().await? };
        if take_over {
            // The claim kept the replaced registration's lease: wait it out before the
            // LIST, so every bulk its owner acknowledged on it is listed.
            self.wait_out_lease(claim.registration.lease).await?;
        }
        let sessions = &claim.registration.sessions;
        let plan = plan_chain(&self.list_wal_objects().await?, sessions);
        let bodies = self.read_objects(&plan.chain).await?;
        let claimed_epoch = take_over.then_some(claim.registration.epoch);
        let walked = walk_chain(&plan, &bodies, sessions, claimed_epoch).map_err(|refusal| self.refusal(refusal))?;
        let repaired = walked.left_out.as_ref().map(|left_out| self.left_out_note(left_out));
        let Walked { chain, start_offset, next_seq, garbage, .. } = walked;
        Ok(Found { claim, chain, start_offset, next_seq, repaired, garbage })
    }

    /// Waits until this process's wall clock has passed `replaced` (the lease of the
    /// registration a claim replaced) plus the larger of its recorded skew and this
    /// writer's own ([`takeover_wait`]). Asks again after each sleep, at most
    /// [`TAKEOVER_WAITS_MAX`] times: the wall clock may move otherwise than the sleep.
    async fn wait_out_lease(&self, replaced: Option<Lease>) -> Result<(), WalError> {
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
    async fn read_claim(&self) -> Result<Claim, WalError> {
        let key = Self::path(&registration_key(&self.location.node_prefix));
        self.counts.other.fetch_add(1, Ordering::Relaxed);
        match Self::read_registration(self.store.as_ref(), &key).await? {
            Some((registration, version)) => Ok(Claim { registration, version }),
            None => Err(WalError::Open(format!("{}: no log here", self.location.describe()))),
        }
    }

    /// Every WAL object under the node prefix (one LIST).
    async fn list_wal_objects(&self) -> Result<Vec<WalObject>, WalError> {
        let prefix = &self.location.node_prefix;
        self.counts.other.fetch_add(1, Ordering::Relaxed);
        let listed: Vec<object_store::ObjectMeta> = self
            .store
            .list(Some(&Self::path(prefix)))
            .try_collect()
            .await
            .map_err(|e| WalError::Open(store_error(&self.location.describe(), &e)))?;
        Ok(listed
            .iter()
            .filter_map(|meta| match parse_key(prefix, meta.location.as_ref()) {
                KeyKind::Wal(object) => Some(object),
                _ => None,
            })
            .collect())
    }

    /// The objects' bodies, in order, [`RECOVERY_READS_INFLIGHT_MAX`] GETs at a time.
    async fn read_objects(&self, objects: &[WalObject]) -> Result<Vec<bytes::Bytes>, WalError> {
        let fetches = objects.iter().map(|object| {
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
        futures::stream::iter(fetches).buffered(RECOVERY_READS_INFLIGHT_MAX).try_collect().await
    }

    /// The one-line refusal for a log with acknowledged records out of reach.
    fn refusal(&self, refusal: OutOfReach) -> WalError {
        let prefix = &self.location.node_prefix;
        let what = match refusal.stop {
            WalkStop::Damaged { object, damage } => format!("{}: {damage}", object.key(prefix)),
            WalkStop::Gap { offset } => format!("no object starts at {offset}"),
            WalkStop::EarlyEnd => "the log ends early".to_string(),
        };
        WalError::Corrupt(format!("{}: {what}, and {} lies beyond it", self.location.describe(), refusal.beyond.key(prefix)))
    }

    /// The one-line note for what recovery left out.
    fn left_out_note(&self, left_out: &LeftOut) -> String {
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
    async fn record_session(
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

    /// Deletes objects in the background, in order, stopping at the first failure.
    fn start_deleter(&mut self) {
        let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel::<Vec<Path>>();
        let store = Arc::clone(&self.store);
        let counts = Arc::clone(&self.counts);
        self.runtime().spawn(async move {
            let mut stopped = false;
            while let Some(paths) = receiver.recv().await {
                for path in paths {
                    if stopped {
                        break;
                    }
                    counts.other.fetch_add(1, Ordering::Relaxed);
                    match store.delete(&path).await {
                        Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                        // Deleting past a failed delete could open a hole in the log.
                        Err(_) => stopped = true,
                    }
                }
            }
        });
        self.deleter = Some(sender);
    }
}

/// What the check after an upload compares the registration with.
struct Fence {
    registration: Path,
    epoch: u64,
    owner: String,
    /// The registration's ETag as this writer's session write left it (`None` when the
    /// store returned none). A HEAD that still shows it proves the registration unchanged.
    e_tag: Option<String>,
    /// A newer ETag known to name this writer: a lease renewal's, or one a full read
    /// found (a store whose HEAD and PUT spell ETags differently); later checks then
    /// compare with it.
    e_tag_seen: std::sync::Mutex<Option<String>>,
    clock: MonoClock,
    /// Under `fence=lease`: the lease this writer holds.
    lease: Option<LeaseHold>,
}

/// The backend's monotonic clock, as the core's [`Nanos`] since the backend was made.
#[derive(Clone, Copy, Debug)]
struct MonoClock(std::time::Instant);

impl MonoClock {
    fn now(&self) -> Nanos {
        Nanos(u64::try_from(self.0.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }
}

/// The wall clock, in nanoseconds since the Unix epoch (what a lease's expiry is in).
fn wall_now() -> Nanos {
    let since_epoch = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    Nanos(u64::try_from(since_epoch.as_nanos()).unwrap_or(u64::MAX))
}

/// What [`S3Backend::record_session`] wrote, and when it was sent.
struct SessionWrite {
    registration: Registration,
    version: UpdateVersion,
    sent_at: Nanos,
    sent_wall: Nanos,
}

/// The lease a `fence=lease` writer holds: the core's deadline, and the registration
/// as this writer last wrote it with its version (what the next renewal writes over).
struct LeaseHold {
    state: std::sync::Mutex<LeaseState>,
}

struct LeaseState {
    owner: OwnerLease,
    registration: Registration,
    version: UpdateVersion,
}

impl LeaseHold {
    fn state(&self) -> std::sync::MutexGuard<'_, LeaseState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// How one renewal went.
enum Renewal {
    Renewed,
    /// Refused on its condition, and the registration names another owner.
    Fenced,
    /// Not answered, or refused by a write of this writer's own whose answer was lost
    /// (then its version is adopted): try again soon.
    Failed,
}

/// The renewal task and what stops it.
struct Renewer {
    stop: tokio::sync::watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Fence {
    fn new(registration: Path, epoch: u64, owner: String, clock: MonoClock, mode: FenceMode, session: Option<SessionWrite>) -> Fence {
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

    /// Under `fence=lease`, whether a bulk whose PUT returned at `put_returned_at` is
    /// acknowledged on the lease, without a read.
    fn on_lease(&self, put_returned_at: Nanos) -> bool {
        self.lease.as_ref().is_some_and(|hold| hold.state().owner.judge(put_returned_at) == LeaseJudgement::Acknowledge)
    }

    /// One renewal: the registration as this writer last wrote it, with a fresh lease,
    /// conditionally on that write's version.
    async fn renew(&self, store: &dyn ObjectStore, counts: &RequestCounts) -> Renewal {
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
    fn renewal_due_at(&self) -> Nanos {
        self.lease.as_ref().map_or(Nanos::MAX, |hold| hold.state().owner.renewal_due_at())
    }

    /// Whether the registration, read now, still names this writer's epoch and owner.
    /// `Err` when the store could not answer.
    async fn still_ours(&self, store: &dyn ObjectStore, counts: &RequestCounts) -> Result<bool, ()> {
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

/// Uploads one bulk and runs the fence check; the result the driver is told.
async fn upload(
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
    // The fence check: only a registration that still names us lets the bulk count.
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
async fn renew_lease(
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
    fn install_fence(&mut self, session: Option<SessionWrite>) {
        let registration = Self::path(&registration_key(&self.location.node_prefix));
        let fence = Fence::new(registration, self.epoch, self.owner.clone(), self.clock, self.fence_mode, session);
        self.fence = Arc::new(fence);
    }

    /// Starts the lease's renewals (`fence=lease` only).
    fn start_renewer(&mut self) {
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
    fn release_lease(&mut self) {
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

impl Backend for S3Backend {
    fn describe(&self) -> String {
        self.location.describe()
    }

    fn recover(&mut self) -> Result<Recovered, WalError> {
        // `create` false (dump) only reads: no claim, so a live writer is not fenced,
        // and nothing may be appended.
        let take_over = self.create;
        let found = self.runtime().block_on(self.find(take_over))?;
        let lowest_start = found.chain.first().map(|(object, _)| object.start);
        let session = if take_over {
            Some(self.runtime().block_on(self.record_session(
                &found.claim,
                lowest_start,
                found.start_offset,
                found.next_seq,
            ))?)
        } else {
            self.fenced.store(true, Ordering::Release);
            None
        };
        self.epoch = found.claim.registration.epoch;
        self.install_fence(session);
        self.start_renewer();
        self.next_offset = found.start_offset;
        self.start_deleter();
        let prefix = self.location.node_prefix.clone();
        // Left-out objects are garbage now that the session is recorded; failures
        // here only leave them for a later recovery to ignore again.
        let garbage: Vec<Path> = found.garbage.iter().map(|o| Self::path(&o.key(&prefix))).collect();
        let (store, counts) = (Arc::clone(&self.store), Arc::clone(&self.counts));
        self.runtime().spawn(async move {
            for path in garbage {
                counts.other.fetch_add(1, Ordering::Relaxed);
                let _ = store.delete(&path).await;
            }
        });
        let mut recovered = Recovered { next_seq: found.next_seq, repaired: found.repaired, ..Recovered::default() };
        for (unit, (object, records)) in found.chain.into_iter().enumerate() {
            let unit = unit as u64;
            recovered.lsn += records.iter().map(|r| tiny::record_len(r.key.len(), r.value.len()) as u64).sum::<u64>();
            recovered.segments.push((unit, records.last().map(|r| r.seq)));
            self.units.insert(unit, vec![Self::path(&object.key(&prefix))]);
            recovered.records.extend(records);
        }
        recovered.segment = recovered.segments.len() as u64;
        recovered.segment_bytes = 0;
        Ok(recovered)
    }

    fn segment_bytes_max(&self) -> u64 {
        self.trim_unit_bytes
    }

    fn persist(&mut self, batch: Batch, done: Completion) {
        let bytes = encode_frame_records(self.next_offset, batch.records());
        let object = WalObject { epoch: self.epoch, start: self.next_offset, end: self.next_offset + bytes.len() as u64 };
        self.next_offset = object.end;
        let path = Self::path(&object.key(&self.location.node_prefix));
        self.units.entry(batch.segment).or_default().push(path.clone());
        let (store, fenced, counts) = (Arc::clone(&self.store), Arc::clone(&self.fenced), Arc::clone(&self.counts));
        let fence = Arc::clone(&self.fence);
        self.runtime().spawn(async move {
            let result = upload(store, path, bytes::Bytes::from(bytes), fence, fenced, counts).await;
            done.complete(result, batch.bytes);
        });
    }

    fn machine_config(&self) -> Config {
        Storage::ObjectStore.config(&self.tuning)
    }

    fn write_unsynced(&mut self, _batch: &Batch) -> Result<(), SyncError> {
        // An object store has no "written but not durable": the acknowledge-before-
        // sync policies make no sense here.
        Err(SyncError::Unavailable)
    }

    fn remove_segments(&mut self, segments: &[u64]) -> Result<(), WalError> {
        let mut paths = Vec::new();
        for segment in segments {
            paths.extend(self.units.remove(segment).unwrap_or_default());
        }
        match &self.deleter {
            Some(deleter) if !paths.is_empty() => {
                deleter.send(paths).map_err(|_| WalError::Closed)?;
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

impl Drop for S3Backend {
    fn drop(&mut self) {
        // The driver has answered every writer by now: nothing more is acknowledged.
        if self.runtime.is_some() {
            self.release_lease();
        }
        // Let queued DELETEs finish (briefly); uploads have all completed by now.
        self.deleter = None;
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_timeout(Duration::from_secs(5));
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
    let found = backend.runtime().block_on(backend.find(true))?;
    let prefix = backend.location.node_prefix.clone();
    let store = Arc::clone(&backend.store);
    // Oldest first, so that a failure part-way still leaves a log without holes.
    let mut doomed: Vec<WalObject> = found.chain.iter().map(|(object, _)| *object).collect();
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
