//! The WAL on an object store: one PUT per batch, pipelined, fenced by epoch.
//!
//! # What one append costs
//!
//! On S3 the price is per request, not per byte, and a PUT takes tens of milliseconds.
//! So the WAL never PUTs a record on its own: the core's group-commit machine
//! ([`walab_core::group_commit`], the same one the file WAL and the browser run) gathers
//! everything that arrived while earlier uploads were in flight into one *batch*, and
//! this backend turns each batch into exactly one object:
//!
//! ```text
//! <path>/<cluster>/<node>/<epoch>/wal/<start>-<end>      one stream frame (offset, length, CRC32, records)
//! ```
//!
//! Up to `inflight_max` uploads (4 by default) run at once on this backend's own tokio
//! runtime; [`Backend::persist`] only spawns the upload and returns, and the task calls
//! [`Completion::complete`] when S3 has answered. Uploads may finish in any order; the
//! machine releases acknowledgements in submission order, only once a batch and every
//! batch before it are stored.
//!
//! A second, third, fourth upload in flight buys throughput, but every one is a PUT:
//! with W writers and every slot used at once, a batch carries about W / inflight_max
//! records, so the PUTs per record would rise as the round trip gets faster. So a batch
//! starts *beside* another upload only once it holds enough records to be worth a PUT of
//! its own; with nothing in flight it starts at once, whatever it holds. With the cohort
//! hold (after an upload, the next batch waits briefly for the writers it answered)
//! closed-loop writers ride one PUT: group commit is first a cost lever here, then a
//! throughput one. The numbers are the object store's preset
//! ([`walab_core::session::preset`]); what they buy is in BENCHMARKS.md ("The S3 WAL").
//!
//! # The parts
//!
//! - [`claim`]: taking the node over (the conditional claim of its registration, the
//!   LIST and reads of recovery, the session this writer records) and [`reset`];
//! - [`fence`]: every upload's PUT and the check after it, and `fence=lease`'s renewals:
//!   why an acknowledged record survives a takeover is argued there;
//! - [`layout`]: the JSON edge of the core's keys and registration.
//!
//! # Trim and Reset
//!
//! The driver groups batches into trim units (`segment_bytes_max`, `--segment-bytes`) and
//! asks to remove a unit once every record in it is confirmed by the consumer. This
//! backend deletes those objects oldest first, one by one, on a single background task,
//! and stops at the first failed DELETE: the remaining objects then still tile the log
//! from some address on, so a later recovery never meets a hole of its own making.
//! [`reset`] starts a new session from an empty log: it takes the node over, deletes
//! every object, and records a session that starts where the log ended, so seqs go on.

pub mod claim;
pub mod fence;
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
use walab_core::codec::tiny::TinyRecord;
use walab_core::group_commit::{Batch, Config, SyncError};
use walab_core::session::preset::{Storage, Tuning};
use walab_core::remote::lease::{takeover_wait, FenceMode, Lease, LeaseJudgement, OwnerLease};
use walab_core::remote::recovery::{ChainWalk, KeptObject, LeftOut, OutOfReach, WalkStop, WalkedSummary};
use walab_core::time::Nanos;

use self::layout::{parse_key, plan_chain, registration_key, KeyKind, Registration, RegistrationJson, WalObject};
/// Checks one recovered object (the core's; the tests damage objects through it).
pub use walab_core::remote::recovery::{decode_object, ObjectDamage};
use super::{Backend, Completion, Recovered, WalError};
use self::fence::{upload, wall_now, Fence, MonoClock, Renewer, SessionWrite};
pub use self::claim::{reset, ResetReport};

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
    /// WAL object PUTs (one per batch).
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
    /// Trim unit (the driver's segment) → the objects in it, oldest first (names, not
    /// paths: a recovered log of 100,000 objects keeps 24 bytes each).
    units: BTreeMap<u64, Vec<WalObject>>,
    /// Set once a fence check failed: later uploads are not even sent.
    fenced: Arc<AtomicBool>,
    /// How a batch is fenced: a read after its PUT, or a lease (`fence=` in the URL).
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

    /// How batches are fenced (`fence=read`, the default, or `fence=lease`; see
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

impl Backend for S3Backend {
    fn describe(&self) -> String {
        self.location.describe()
    }

    fn recover(&mut self) -> Result<Recovered, WalError> {
        let mut records = Vec::new();
        let mut recovered = self.recover_streaming(&mut |record| records.push(record))?;
        recovered.records = records;
        Ok(recovered)
    }

    fn recover_streaming(&mut self, visit: &mut dyn FnMut(TinyRecord)) -> Result<Recovered, WalError> {
        // `create` false (dump) only reads: no claim, so a live writer is not fenced,
        // and nothing may be appended.
        let take_over = self.create;
        let found = self.runtime().block_on(self.find(take_over, visit))?;
        let lowest_start = found.chain.first().map(|kept| kept.object.start);
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
        recovered.segments.reserve(found.chain.len());
        for (unit, kept) in found.chain.into_iter().enumerate() {
            let unit = unit as u64;
            recovered.lsn += kept.record_bytes;
            recovered.segments.push((unit, kept.last_seq));
            self.units.insert(unit, vec![kept.object]);
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
        self.units.entry(batch.segment).or_default().push(object);
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
            let objects = self.units.remove(segment).unwrap_or_default();
            paths.extend(objects.iter().map(|object| Self::path(&object.key(&self.location.node_prefix))));
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
