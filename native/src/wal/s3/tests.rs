//! The S3 WAL against a real S3 server on 127.0.0.1 (walab's test server, started by each test, see
//! [`super::local_server`]): the contract (Append, Read, Trim, Reset), ordered
//! acknowledgements around a slow PUT, a failed PUT, a takeover, a server restart, and
//! the fence check's reads (one HEAD per upload; a GET when the HEAD cannot decide).
//!
//! Three tests wrap the real client in [`FaultyStore`], which delays or fails one chosen
//! WAL upload, or changes the ETag every HEAD shows, and passes everything else through
//! to the server.

use std::collections::HashSet;
use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures::stream::BoxStream;
use futures::TryStreamExt;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore, ObjectStoreExt,
    PutMultipartOptions, PutOptions, PutPayload, PutResult,
};
use walab_core::codec::tiny::TinyRecord;
use walab_core::group_commit::SyncError;

use super::layout::{node_prefix, parse_key, registration_key, KeyKind, Registration, RegistrationJson};
use walab_core::remote::lease::{FenceMode, LeaseTerms};
use walab_core::session::preset::Tuning;
use walab_core::time::Nanos;
use super::local_server::{LocalS3, BUCKET};
use super::{decode_object, reset, S3Backend, S3Location};
use walab_core::trace::Event;

use crate::wal::{Wal, WalError, WalOptions};

fn client(server: &LocalS3) -> Arc<dyn ObjectStore> {
    let store = server
        .client_builder()
        .build()
        .expect("a client for the local server");
    Arc::new(store)
}

fn location(node: &str) -> S3Location {
    S3Location { bucket: BUCKET.to_string(), node_prefix: node_prefix("wal", "test", node) }
}

/// A backend with its own client. Every backend gets a fresh client: a client's pooled
/// connections belong to the runtime that opened them, and each backend has its own.
fn backend(server: &LocalS3, node: &str, trim_unit_bytes: u64) -> Box<S3Backend> {
    backend_on(client(server), node, trim_unit_bytes)
}

fn backend_on(store: Arc<dyn ObjectStore>, node: &str, trim_unit_bytes: u64) -> Box<S3Backend> {
    fenced_on_with_units(store, node, trim_unit_bytes, FenceMode::Read)
}

/// A backend fenced as `fence` says (trim units of 1 MiB).
fn fenced_on(store: Arc<dyn ObjectStore>, node: &str, fence: FenceMode) -> Box<S3Backend> {
    fenced_on_with_units(store, node, 1 << 20, fence)
}

fn fenced_on_with_units(store: Arc<dyn ObjectStore>, node: &str, trim_unit_bytes: u64, fence: FenceMode) -> Box<S3Backend> {
    Box::new(S3Backend::new(store, location(node), true, trim_unit_bytes).expect("backend").with_fence(fence).with_tuning(plain()))
}

/// Group commit alone: a batch starts whenever an upload slot is free, with no cohort
/// hold, so the tests count the batches and PUTs that group commit makes by itself.
fn plain() -> Tuning {
    Tuning { pipeline_min_records: Some(0), cohort_hold_percent: Some(0), ..Tuning::default() }
}

/// `fence=lease` with a lease short enough that a test waits it out in about a second.
fn short_lease() -> FenceMode {
    FenceMode::Lease(LeaseTerms::new(Nanos::from_millis(1_000), Nanos::from_millis(100)).unwrap())
}

/// The registration as the server holds it now.
fn stored_registration(server: &LocalS3, node: &str) -> Registration {
    let store = client(server);
    let key = Path::from(registration_key(&location(node).node_prefix));
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let bytes = runtime.block_on(async { ObjectStoreExt::get(store.as_ref(), &key).await.unwrap().bytes().await.unwrap() });
    Registration::from_bytes(&bytes).unwrap()
}

fn wall_now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64
}

fn options() -> WalOptions {
    WalOptions { policy: None, trace_events_max: Some(1_000_000) }
}

fn keys_of(records: &[TinyRecord]) -> Vec<String> {
    records.iter().map(|r| String::from_utf8_lossy(&r.key).into_owned()).collect()
}

/// Every object under the node's prefix, as (key kind, size).
fn listing(server: &LocalS3, node: &str) -> Vec<(KeyKind, u64)> {
    let prefix = location(node).node_prefix;
    let store = client(server);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let metas: Vec<ObjectMeta> = runtime.block_on(store.list(Some(&Path::from(prefix.as_str()))).try_collect()).unwrap();
    let mut out: Vec<(KeyKind, u64)> = metas.iter().map(|m| (parse_key(&prefix, m.location.as_ref()), m.size)).collect();
    out.sort_by_key(|(kind, _)| format!("{kind:?}"));
    out
}

fn wal_objects(server: &LocalS3, node: &str) -> Vec<super::layout::WalObject> {
    let mut objects: Vec<_> = listing(server, node)
        .into_iter()
        .filter_map(|(kind, _)| match kind {
            KeyKind::Wal(object) => Some(object),
            _ => None,
        })
        .collect();
    objects.sort_by_key(|o| (o.start, o.epoch));
    objects
}

/// The keys acknowledged, and the keys refused with why.
type Outcomes = (Vec<String>, Vec<(String, WalError)>);

/// `writers` threads append `{tag}-{w}-{n}` for n = 0, 1, ... while `keep_going(n)` holds
/// and no append is refused; returns the acked keys and the failed ones.
fn run_writers(
    wal: &Wal,
    writers: usize,
    tag: &str,
    keep_going: impl Fn(usize) -> bool + Clone + Send + 'static,
) -> (Vec<String>, Vec<(String, WalError)>) {
    let acked = Arc::new(Mutex::new(Vec::new()));
    let failed = Arc::new(Mutex::new(Vec::new()));
    let handles: Vec<_> = (0..writers)
        .map(|w| {
            let mut writer = wal.writer();
            let (acked, failed, tag, keep_going) =
                (Arc::clone(&acked), Arc::clone(&failed), tag.to_string(), keep_going.clone());
            std::thread::spawn(move || {
                let mut n = 0;
                while keep_going(n) {
                    let key = format!("{tag}-{w}-{n}");
                    n += 1;
                    match writer.append(key.as_bytes(), &[b'v'; 50]) {
                        Ok(_) => acked.lock().unwrap().push(key),
                        Err(error) => {
                            failed.lock().unwrap().push((key, error));
                            break;
                        }
                    }
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    let acked = std::mem::take(&mut *acked.lock().unwrap());
    let failed = std::mem::take(&mut *failed.lock().unwrap());
    (acked, failed)
}

/// Appends `per_writer` records from each of `writers` threads; returns the acked keys
/// and the failed ones.
fn append_all(wal: &Wal, writers: usize, per_writer: usize, tag: &str) -> (Vec<String>, Vec<(String, WalError)>) {
    run_writers(wal, writers, tag, move |n| n < per_writer)
}

#[test]
fn append_then_read_returns_every_record_in_order_from_framed_objects() {
    let server = LocalS3::start();
    let (wal, recovered) = Wal::open(backend(&server, "0", 1 << 20), options()).unwrap();
    assert!(recovered.records.is_empty());
    assert_eq!(recovered.next_seq, 1);
    let (acked, failed) = append_all(&wal, 8, 30, "a");
    assert!(failed.is_empty(), "{failed:?}");
    let stats = wal.stats();
    drop(wal);
    assert_eq!(acked.len(), 240);
    assert!(stats.persists_ok < 240, "{} PUTs for 240 records: batches must group", stats.persists_ok);

    // The objects: one per batch, named <epoch>/wal/<start>-<end>, tiling the address space.
    let objects = wal_objects(&server, "0");
    assert_eq!(objects.len() as u64, stats.persists_ok);
    assert!(objects.iter().all(|o| o.epoch == 1));
    assert_eq!(objects[0].start, 0);
    assert!(objects.windows(2).all(|pair| pair[1].start == pair[0].end));
    assert!(listing(&server, "0").iter().any(|(kind, _)| *kind == KeyKind::Registration));

    // Read: a new owner recovers every acknowledged record, seqs 1..=240 in order.
    let (wal, recovered) = Wal::open(backend(&server, "0", 1 << 20), options()).unwrap();
    assert_eq!(recovered.records.len(), 240);
    assert!(recovered.records.windows(2).all(|pair| pair[1].seq == pair[0].seq + 1));
    assert_eq!(recovered.records[0].seq, 1);
    assert_eq!(recovered.next_seq, 241);
    let recovered_keys: HashSet<String> = keys_of(&recovered.records).into_iter().collect();
    assert!(acked.iter().all(|key| recovered_keys.contains(key)));
    let mut writer = wal.writer();
    assert_eq!(writer.append(b"after", b"reopen").unwrap(), 241);
    drop(writer);
    drop(wal);
    // The second session's objects carry epoch 2 and go on where the first ended.
    let objects = wal_objects(&server, "0");
    let last = objects.last().unwrap();
    assert_eq!(last.epoch, 2);
    assert_eq!(last.start, objects[objects.len() - 2].end);
}

#[test]
fn recovery_checks_every_crc_and_stops_at_a_damaged_last_object() {
    let server = LocalS3::start();
    let (wal, _) = Wal::open(backend(&server, "0", 1 << 20), options()).unwrap();
    let mut writer = wal.writer();
    for n in 0..5 {
        writer.append(format!("k{n}").as_bytes(), b"value").unwrap();
    }
    drop(writer);
    drop(wal);
    let objects = wal_objects(&server, "0");
    assert_eq!(objects.len(), 5, "one writer, one record per batch");
    // Flip one body byte of the last object on the server's disk.
    let last = objects.last().unwrap();
    let file = server.bucket_dir().join(last.key(&location("0").node_prefix));
    let mut bytes = std::fs::read(&file).unwrap();
    assert!(decode_object(last, &bytes, None).is_ok());
    let end = bytes.len() - 1;
    bytes[end] ^= 0x40;
    assert!(decode_object(last, &bytes, None).is_err());
    std::fs::write(&file, &bytes).unwrap();
    let (wal, recovered) = Wal::open(backend(&server, "0", 1 << 20), options()).unwrap();
    assert_eq!(keys_of(&recovered.records), vec!["k0", "k1", "k2", "k3"]);
    assert!(recovered.repaired.as_deref().unwrap().contains("left out the last object"));
    drop(wal);

    // Damage *before* the end is corruption: acknowledged records lie beyond it.
    let objects = wal_objects(&server, "0");
    let first = objects.iter().find(|o| o.start == 0).unwrap();
    let file = server.bucket_dir().join(first.key(&location("0").node_prefix));
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[20] ^= 0x01;
    std::fs::write(&file, &bytes).unwrap();
    match Wal::open(backend(&server, "0", 1 << 20), options()) {
        Err(WalError::Corrupt(message)) => assert!(message.contains("checksum"), "{message}"),
        Err(other) => panic!("expected corruption, got {other}"),
        Ok(_) => panic!("expected corruption, got an open log"),
    }
}

#[test]
fn trim_deletes_only_objects_wholly_below_the_confirmed_seq() {
    let server = LocalS3::start();
    // Tiny trim units: each holds a few batches.
    let (wal, _) = Wal::open(backend(&server, "0", 512), options()).unwrap();
    let (acked, failed) = append_all(&wal, 4, 25, "t");
    assert!(failed.is_empty());
    assert_eq!(acked.len(), 100);
    let before = wal_objects(&server, "0");
    wal.confirm_consumer(60);
    // The driver trims on its next round; an append makes one happen.
    let mut writer = wal.writer();
    writer.append(b"nudge", b"v").unwrap();
    drop(writer);
    let stats_wait = std::time::Instant::now();
    while wal.stats().segments_removed == 0 && stats_wait.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(wal.stats().segments_removed > 0);
    drop(wal); // waits for the queued DELETEs
    let after = wal_objects(&server, "0");
    assert!(after.len() < before.len(), "{} objects before, {} after", before.len(), after.len());
    let (wal, recovered) = Wal::open(backend(&server, "0", 512), options()).unwrap();
    // Nothing above the confirmed seq went; what is left starts at or below 61 and
    // runs without a hole to the end.
    let first = recovered.records.first().unwrap().seq;
    assert!(first > 1 && first <= 61, "first kept seq {first}");
    assert_eq!(recovered.records.last().unwrap().seq, 101);
    assert!(recovered.records.windows(2).all(|pair| pair[1].seq == pair[0].seq + 1));
    drop(wal);
}

#[test]
fn reset_starts_an_empty_log_whose_seqs_go_on() {
    let server = LocalS3::start();
    let (wal, _) = Wal::open(backend(&server, "0", 1 << 20), options()).unwrap();
    let (acked, _) = append_all(&wal, 2, 10, "r");
    assert_eq!(acked.len(), 20);
    drop(wal);
    let mut resetter = backend(&server, "0", 1 << 20);
    let report = reset(&mut resetter).unwrap();
    drop(resetter);
    assert_eq!(report.next_seq, 21);
    assert!(report.objects_deleted >= 1);
    assert!(wal_objects(&server, "0").is_empty());
    let (wal, recovered) = Wal::open(backend(&server, "0", 1 << 20), options()).unwrap();
    assert!(recovered.records.is_empty());
    assert_eq!(recovered.next_seq, 21);
    let mut writer = wal.writer();
    assert_eq!(writer.append(b"fresh", b"v").unwrap(), 21);
    drop(writer);
    drop(wal);
    let (_wal, recovered) = Wal::open(backend(&server, "0", 1 << 20), options()).unwrap();
    assert_eq!(keys_of(&recovered.records), vec!["fresh"]);
}

#[test]
fn dump_of_a_node_never_claimed_is_refused() {
    let server = LocalS3::start();
    let backend = Box::new(S3Backend::new(client(&server), location("absent"), false, 1 << 20).unwrap());
    match Wal::open(backend, options()) {
        Err(WalError::Open(message)) => assert!(message.contains("no log here"), "{message}"),
        _ => panic!("expected a refusal"),
    }
}

/// Passes everything to the real server, except that the `nth` WAL upload (1-based) is
/// delayed or fails.
#[derive(Debug)]
struct FaultyStore {
    inner: Arc<dyn ObjectStore>,
    wal_puts: AtomicU64,
    nth: u64,
    fault: Fault,
    /// Set when the faulty PUT has been reached.
    reached: Arc<std::sync::atomic::AtomicBool>,
    /// PUTs held until a test lets them go (the lease tests).
    gate: Option<Arc<Gate>>,
}

/// Holds chosen PUTs of a [`FaultyStore`] until the test opens the gate: every PUT of
/// the registration once [`Gate::hold_registration`] was called (a lease's renewals and
/// its release), and one chosen WAL upload. Nothing is timed: a held PUT waits for the
/// test, up to [`GATE_HOLD_MAX`], then fails.
#[derive(Debug, Default)]
struct Gate {
    registration_held: AtomicBool,
    wal_put_held: AtomicU64,
    wal_puts: AtomicU64,
    wal_put_reached: AtomicBool,
    registration_open: AtomicBool,
    wal_open: AtomicBool,
}

/// The longest a held PUT waits for its gate before it fails.
const GATE_HOLD_MAX: Duration = Duration::from_secs(60);

impl Gate {
    fn hold_registration(&self) {
        self.registration_held.store(true, Ordering::SeqCst);
    }

    /// Holds the next WAL upload.
    fn hold_next_wal_put(&self) {
        self.wal_put_held.store(self.wal_puts.load(Ordering::SeqCst) + 1, Ordering::SeqCst);
    }

    /// Waits (in the test's thread) until the held WAL upload has reached the store.
    fn wait_for_held_wal_put(&self) {
        let started = std::time::Instant::now();
        while !self.wal_put_reached.load(Ordering::SeqCst) {
            assert!(started.elapsed() < GATE_HOLD_MAX, "the held upload never came");
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    async fn pass(&self, location: &Path) -> object_store::Result<()> {
        let open = if location.as_ref().ends_with("/registration") {
            if !self.registration_held.load(Ordering::SeqCst) {
                return Ok(());
            }
            &self.registration_open
        } else if location.as_ref().contains("/wal/") {
            let n = self.wal_puts.fetch_add(1, Ordering::SeqCst) + 1;
            if n != self.wal_put_held.load(Ordering::SeqCst) {
                return Ok(());
            }
            self.wal_put_reached.store(true, Ordering::SeqCst);
            &self.wal_open
        } else {
            return Ok(());
        };
        let started = tokio::time::Instant::now();
        while !open.load(Ordering::SeqCst) {
            if started.elapsed() > GATE_HOLD_MAX {
                return Err(object_store::Error::Generic { store: "FaultyStore", source: "gate never opened".into() });
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        Ok(())
    }
}

#[derive(Clone, Copy, Debug)]
enum Fault {
    Delay(Duration),
    Fail,
    /// Every HEAD answers with another ETag than the object's (a store that spells ETags
    /// differently on HEAD and PUT); no upload is touched.
    HeadETag,
}

impl fmt::Display for FaultyStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FaultyStore({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for FaultyStore {
    async fn put_opts(&self, location: &Path, payload: PutPayload, opts: PutOptions) -> object_store::Result<PutResult> {
        if let Some(gate) = &self.gate {
            gate.pass(location).await?;
        }
        if location.as_ref().contains("/wal/") && !matches!(self.fault, Fault::HeadETag) {
            let n = self.wal_puts.fetch_add(1, Ordering::SeqCst) + 1;
            if n == self.nth {
                self.reached.store(true, Ordering::SeqCst);
                match self.fault {
                    Fault::Delay(delay) => tokio::time::sleep(delay).await,
                    Fault::Fail => {
                        return Err(object_store::Error::Generic {
                            store: "FaultyStore",
                            source: "injected PUT failure".into(),
                        })
                    }
                    Fault::HeadETag => {}
                }
            }
        }
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> object_store::Result<GetResult> {
        let head = options.head;
        let mut result = self.inner.get_opts(location, options).await?;
        if head && matches!(self.fault, Fault::HeadETag) {
            result.meta.e_tag = Some(format!("\"head-{}\"", result.meta.e_tag.unwrap_or_default().trim_matches('"')));
        }
        Ok(result)
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> object_store::Result<Vec<bytes::Bytes>> {
        self.inner.get_ranges(location, ranges).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> object_store::Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}

fn faulty(server: &LocalS3, nth: u64, fault: Fault) -> Arc<dyn ObjectStore> {
    faulty_reporting(server, nth, fault).0
}

/// A faulty store, and a flag set once its faulty PUT has been reached.
fn faulty_reporting(server: &LocalS3, nth: u64, fault: Fault) -> (Arc<dyn ObjectStore>, Arc<std::sync::atomic::AtomicBool>) {
    let reached = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let store =
        FaultyStore { inner: client(server), wal_puts: AtomicU64::new(0), nth, fault, reached: Arc::clone(&reached), gate: None };
    (Arc::new(store), reached)
}

/// A store that passes everything through except what `gate` holds.
fn gated(server: &LocalS3, gate: &Arc<Gate>) -> Arc<dyn ObjectStore> {
    let store = FaultyStore {
        inner: client(server),
        wal_puts: AtomicU64::new(0),
        nth: 0,
        fault: Fault::Delay(Duration::ZERO),
        reached: Arc::default(),
        gate: Some(Arc::clone(gate)),
    };
    Arc::new(store)
}

#[test]
fn a_slow_put_in_the_middle_holds_back_later_acks_until_it_is_stored() {
    let server = LocalS3::start();
    let (store, slow_put_reached) = faulty_reporting(&server, 3, Fault::Delay(Duration::from_millis(700)));
    let (wal, _) = Wal::open(backend_on(store, "0", 1 << 20), options()).unwrap();
    // One writer appends only once the slow PUT is under way, so a later batch exists
    // however the others' records were grouped (a loaded machine may put all sixteen
    // writers' records in the slow batch, leaving nobody to append beside it).
    let mut late = wal.writer();
    let late_writer = std::thread::spawn(move || {
        let started = std::time::Instant::now();
        while !slow_put_reached.load(Ordering::SeqCst) && started.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(1));
        }
        (0..3).map(|n| late.append(format!("late-{n}").as_bytes(), b"v")).collect::<Vec<_>>()
    });
    let (acked, failed) = append_all(&wal, 16, 12, "s");
    assert!(failed.is_empty(), "{failed:?}");
    assert_eq!(acked.len(), 192);
    assert!(late_writer.join().unwrap().iter().all(|outcome| outcome.is_ok()));
    let trace = wal.close().expect("tracing was on");
    // Fresh log: write ids are seqs. The slow batch is the one whose upload took longest:
    // the third PUT *sent*, which need not be the third batch formed (each upload is a task
    // on the backend's runtime, and two of them may call the store in either order).
    let at_of = |wanted: &dyn Fn(&Event) -> bool| trace.events.iter().find(|e| wanted(&e.event)).map(|e| e.at);
    let (slow_batch, slow_start, slow_end) = trace
        .events
        .iter()
        .filter_map(|e| match &e.event {
            Event::SyncStart { sync, .. } => Some((*sync, e.at)),
            _ => None,
        })
        .filter_map(|(batch, start)| {
            let end = at_of(&|e| matches!(e, Event::SyncEnd { sync, ok: true, .. } if *sync == batch))?;
            Some((batch, start, end))
        })
        .max_by_key(|(_, start, end)| end.0 - start.0)
        .expect("batches were uploaded");
    let slow_first_write = trace
        .events
        .iter()
        .find_map(|e| match &e.event {
            Event::BatchFormed { batch, first_write, .. } if *batch == slow_batch => Some(*first_write),
            _ => None,
        })
        .expect("the slow batch was formed");
    // Later batches were uploaded and stored while the slow one was still in flight...
    let overtaken = trace.events.iter().any(|e| {
        matches!(&e.event, Event::SyncEnd { sync, ok: true, .. } if *sync > slow_batch) && e.at > slow_start && e.at < slow_end
    });
    assert!(overtaken, "no later batch completed during the slow PUT");
    // ...but nothing at or after the slow batch's first write was acknowledged before it
    // was stored,
    let early_ack = trace.events.iter().any(|e| {
        matches!(&e.event, Event::Ack { first_write, writes } if first_write + writes > slow_first_write) && e.at < slow_end
    });
    assert!(!early_ack, "an acknowledgement overtook the slow batch");
    // and acknowledgements came out in write order throughout.
    let acks: Vec<(u64, u64)> = trace
        .events
        .iter()
        .filter_map(|e| match &e.event {
            Event::Ack { first_write, writes } => Some((*first_write, *writes)),
            _ => None,
        })
        .collect();
    assert!(acks.windows(2).all(|pair| pair[1].0 == pair[0].0 + pair[0].1));
    assert_eq!(acks.iter().map(|(_, n)| n).sum::<u64>(), 195, "the 192 records and the late writer's 3");
}

#[test]
fn a_failed_put_fails_its_waiters_and_everything_acked_is_stored() {
    a_failed_put_fails_its_waiters_and_everything_acked_is_stored_with(FenceMode::Read);
}

#[test]
fn a_failed_put_fails_its_waiters_and_everything_acked_is_stored_with_a_lease() {
    a_failed_put_fails_its_waiters_and_everything_acked_is_stored_with(short_lease());
}

fn a_failed_put_fails_its_waiters_and_everything_acked_is_stored_with(fence: FenceMode) {
    let server = LocalS3::start();
    let store = faulty(&server, 4, Fault::Fail);
    let (wal, _) = Wal::open(fenced_on(store, "0", fence), options()).unwrap();
    let (acked, failed) = append_all(&wal, 8, 40, "f");
    assert!(!failed.is_empty(), "the injected failure reached no writer");
    assert!(failed.iter().all(|(_, error)| matches!(error, WalError::Failed(SyncError::Unavailable))));
    // Fail-stop: the log refuses everything until reopened.
    let mut writer = wal.writer();
    assert!(matches!(writer.append(b"late", b"v"), Err(WalError::Failed(_))));
    drop(writer);
    drop(wal);
    let (_wal, recovered) = Wal::open(fenced_on(client(&server), "0", fence), options()).unwrap();
    let recovered_keys: HashSet<String> = keys_of(&recovered.records).into_iter().collect();
    for key in &acked {
        assert!(recovered_keys.contains(key), "acknowledged {key} was not recovered");
    }
    // The failed batch's records were never stored; nothing after the hole is replayed.
    let failed_keys: HashSet<&String> = failed.iter().map(|(key, _)| key).collect();
    assert!(recovered_keys.iter().all(|key| !failed_keys.contains(key)));
    assert!(recovered.records.windows(2).all(|pair| pair[1].seq == pair[0].seq + 1));
}

/// Writers that append until told to stop or refused; returns (acked, failed).
fn append_until(wal: &Arc<Wal>, writers: usize, tag: &str, stop: &Arc<AtomicBool>) -> std::thread::JoinHandle<Outcomes> {
    let (wal, stop, tag) = (Arc::clone(wal), Arc::clone(stop), tag.to_string());
    std::thread::spawn(move || run_writers(&wal, writers, &tag, move |_| !stop.load(Ordering::Relaxed)))
}

#[test]
fn a_takeover_fences_the_old_writer_and_keeps_everything_it_acknowledged() {
    a_takeover_fences_the_old_writer_and_keeps_everything_it_acknowledged_with(FenceMode::Read);
}

/// The takeover race with leases on both sides: the new owner claims while the old one
/// is writing and renewing, waits out the old lease, recovers. The old owner goes on
/// acknowledging on its lease until its next renewal meets the claim; all of that must
/// be in the new owner's recovery. The lease (4 s, renewed every second, acknowledging
/// up to 3.8 s after a renewal's send) leaves the old owner seconds of slack, so every
/// one of its batches is acknowledged on the lease, without a read, on a loaded machine too.
#[test]
fn a_takeover_fences_the_old_writer_and_keeps_everything_it_acknowledged_with_a_lease() {
    let lease = FenceMode::Lease(LeaseTerms::new(Nanos::from_millis(4_000), Nanos::from_millis(200)).unwrap());
    let old_counts = a_takeover_fences_the_old_writer_and_keeps_everything_it_acknowledged_with(lease);
    // Fenced at its renewal: the old owner never read the registration after a PUT.
    assert_eq!(old_counts.fence_reads.load(Ordering::SeqCst), 0);
    assert!(old_counts.lease_renewals.load(Ordering::SeqCst) >= 1);
}

/// Returns the old owner's request counts.
fn a_takeover_fences_the_old_writer_and_keeps_everything_it_acknowledged_with(fence: FenceMode) -> Arc<super::RequestCounts> {
    let server = LocalS3::start();
    let old_backend = fenced_on(client(&server), "0", fence);
    let old_counts = old_backend.request_counts();
    let (old, _) = Wal::open(old_backend, options()).unwrap();
    let old = Arc::new(old);
    let stop = Arc::new(AtomicBool::new(false));
    let old_writers = append_until(&old, 8, "old", &stop);
    std::thread::sleep(Duration::from_millis(400));
    // The new owner claims the node while the old one is mid-run; the old writers keep
    // appending a while longer, so their next upload (or renewal) meets the moved
    // registration.
    let (new, recovered) = Wal::open(fenced_on(client(&server), "0", fence), options()).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    let (old_acked, old_failed) = old_writers.join().unwrap();
    assert!(!old_acked.is_empty());
    assert!(
        old_failed.iter().any(|(_, error)| matches!(error, WalError::Failed(SyncError::Fenced))),
        "the old writer was not fenced: {old_failed:?}"
    );
    let recovered_keys: HashSet<String> = keys_of(&recovered.records).into_iter().collect();
    for key in &old_acked {
        assert!(recovered_keys.contains(key), "the old owner acknowledged {key}, the new one did not recover it");
    }
    let (new_acked, new_failed) = append_all(&new, 4, 20, "new");
    assert!(new_failed.is_empty());
    drop(new);
    drop(old);
    // A third owner sees both owners' acknowledged records, the old one's stragglers
    // beyond the takeover left out, seqs unbroken.
    let (_third, recovered) = Wal::open(fenced_on(client(&server), "0", fence), options()).unwrap();
    let keys: HashSet<String> = keys_of(&recovered.records).into_iter().collect();
    assert!(old_acked.iter().chain(&new_acked).all(|key| keys.contains(key)));
    assert!(recovered.records.windows(2).all(|pair| pair[1].seq == pair[0].seq + 1));
    let new_first = recovered.records.iter().position(|r| r.key.starts_with(b"new")).unwrap();
    assert!(recovered.records[new_first..].iter().all(|r| r.key.starts_with(b"new")));
    old_counts
}

#[test]
fn a_server_restart_mid_run_loses_nothing_acknowledged() {
    a_server_restart_mid_run_loses_nothing_acknowledged_with(FenceMode::Read);
}

#[test]
fn a_server_restart_mid_run_loses_nothing_acknowledged_with_a_lease() {
    a_server_restart_mid_run_loses_nothing_acknowledged_with(short_lease());
}

fn a_server_restart_mid_run_loses_nothing_acknowledged_with(fence: FenceMode) {
    let mut server = LocalS3::start();
    let (wal, _) = Wal::open(fenced_on(client(&server), "0", fence), options()).unwrap();
    let wal = Arc::new(wal);
    let writers = {
        let wal = Arc::clone(&wal);
        std::thread::spawn(move || append_all(&wal, 8, 400, "x"))
    };
    std::thread::sleep(Duration::from_millis(300));
    server.kill();
    std::thread::sleep(Duration::from_millis(300));
    server.restart();
    let (acked, failed) = writers.join().unwrap();
    assert!(!acked.is_empty());
    // Either the client's retries carried the run over the restart, or the log failed
    // and stopped: what it promised is on the server either way.
    assert!(failed.iter().all(|(_, error)| matches!(error, WalError::Failed(_))), "{failed:?}");
    drop(wal);
    let (_wal, recovered) = Wal::open(fenced_on(client(&server), "0", fence), options()).unwrap();
    let keys: HashSet<String> = keys_of(&recovered.records).into_iter().collect();
    for key in &acked {
        assert!(keys.contains(key), "acknowledged {key} lost across the restart");
    }
}

#[test]
fn dump_reads_without_fencing_the_live_writer() {
    let server = LocalS3::start();
    let (wal, _) = Wal::open(backend(&server, "0", 1 << 20), options()).unwrap();
    let mut writer = wal.writer();
    writer.append(b"before", b"v").unwrap();
    let reader = Box::new(S3Backend::new(client(&server), location("0"), false, 1 << 20).unwrap());
    let (dump, recovered) = Wal::open(reader, options()).unwrap();
    assert_eq!(keys_of(&recovered.records), vec!["before"]);
    let mut dump_writer = dump.writer();
    assert!(matches!(dump_writer.append(b"nope", b"v"), Err(WalError::Failed(_))), "a reader cannot append");
    drop(dump_writer);
    drop(dump);
    // The owner was not fenced by the read.
    assert_eq!(writer.append(b"after", b"v").unwrap(), 2);
    drop(writer);
    drop(wal);
    let (_wal, recovered) = Wal::open(backend(&server, "0", 1 << 20), options()).unwrap();
    assert_eq!(keys_of(&recovered.records), vec!["before", "after"]);
}

#[test]
fn every_upload_is_followed_by_one_fence_read_a_head_that_matches() {
    let server = LocalS3::start();
    let backend = backend(&server, "0", 1 << 20);
    let counts = backend.request_counts();
    let (wal, _) = Wal::open(backend, options()).unwrap();
    let (acked, failed) = append_all(&wal, 8, 30, "h");
    assert!(failed.is_empty(), "{failed:?}");
    assert_eq!(acked.len(), 240);
    drop(wal);
    let puts = counts.wal_puts.load(Ordering::SeqCst);
    assert!(puts > 0);
    // One read per upload: the HEAD showed the session write's ETag, no GET was needed.
    assert_eq!(counts.fence_reads.load(Ordering::SeqCst), puts);
}

#[test]
fn a_head_with_another_etag_falls_back_to_reading_the_body_and_still_acknowledges() {
    let server = LocalS3::start();
    let backend = backend_on(faulty(&server, 0, Fault::HeadETag), "0", 1 << 20);
    let counts = backend.request_counts();
    let (wal, _) = Wal::open(backend, options()).unwrap();
    let (acked, failed) = append_all(&wal, 4, 20, "e");
    assert!(failed.is_empty(), "{failed:?}");
    drop(wal);
    let puts = counts.wal_puts.load(Ordering::SeqCst);
    // Every check: a HEAD that could not decide, then a GET whose body named the writer.
    assert_eq!(counts.fence_reads.load(Ordering::SeqCst), 2 * puts);
    let (_wal, recovered) = Wal::open(backend_on(client(&server), "0", 1 << 20), options()).unwrap();
    let keys: HashSet<String> = keys_of(&recovered.records).into_iter().collect();
    assert!(acked.iter().all(|key| keys.contains(key)));
    assert_eq!(acked.len(), 80);
}

#[test]
fn with_a_lease_no_bulk_waits_for_a_registration_read() {
    let server = LocalS3::start();
    // The default lease (10 s, skew 1 s): this run ends long before its deadline.
    let leased = fenced_on(client(&server), "0", FenceMode::Lease(LeaseTerms::default()));
    let counts = leased.request_counts();
    let (wal, _) = Wal::open(leased, options()).unwrap();
    let lease = stored_registration(&server, "0").lease.expect("the session write records a lease");
    assert_eq!(lease.skew_ms, 1_000);
    let (acked, failed) = append_all(&wal, 8, 30, "l");
    assert!(failed.is_empty(), "{failed:?}");
    assert_eq!(acked.len(), 240);
    drop(wal);
    assert!(counts.wal_puts.load(Ordering::SeqCst) > 0);
    assert_eq!(counts.fence_reads.load(Ordering::SeqCst), 0, "a batch read the registration");
    // The clean close released the lease, and everything is there.
    assert_eq!(stored_registration(&server, "0").lease, None);
    let (_wal, recovered) = Wal::open(backend(&server, "0", 1 << 20), options()).unwrap();
    let keys: HashSet<String> = keys_of(&recovered.records).into_iter().collect();
    assert!(acked.iter().all(|key| keys.contains(key)));
}

#[test]
fn a_held_lease_is_renewed_in_the_background_and_moves_forward() {
    let server = LocalS3::start();
    let backend = fenced_on(client(&server), "0", short_lease());
    let counts = backend.request_counts();
    let (wal, _) = Wal::open(backend, options()).unwrap();
    let first = stored_registration(&server, "0").lease.unwrap();
    let mut writer = wal.writer();
    writer.append(b"k", b"v").unwrap();
    // Renewals come every quarter lease with nothing appended; wait for two.
    let started = std::time::Instant::now();
    while counts.lease_renewals.load(Ordering::SeqCst) < 2 {
        assert!(started.elapsed() < Duration::from_secs(60), "no renewals");
        std::thread::sleep(Duration::from_millis(20));
    }
    let renewed = stored_registration(&server, "0");
    assert!(renewed.lease.unwrap().expires_unix_ms > first.expires_unix_ms);
    assert_eq!(renewed.sessions.len(), 1, "a renewal keeps the sessions");
    // Still the owner: appends are acknowledged.
    writer.append(b"k2", b"v").unwrap();
    drop(writer);
    drop(wal);
    assert_eq!(stored_registration(&server, "0").lease, None);
}

/// The check this fence rests on: a PUT that returns after the lease's deadline is not
/// acknowledged on the lease. The old owner's renewals are held (a stalled owner), one
/// of its uploads is held until the new owner has claimed, waited out the lease and
/// recovered; then the upload lands and returns. Acknowledging it would promise a
/// record the new owner's recovery did not see; the fallback read finds the claim
/// instead, and the record is a straggler every later recovery ignores. Skip the lease
/// check (acknowledge whatever returns) and this test fails.
#[test]
fn a_put_returning_after_the_lease_is_not_acknowledged_and_its_object_is_ignored() {
    let server = LocalS3::start();
    let gate = Arc::new(Gate::default());
    let old_backend = fenced_on(gated(&server, &gate), "0", short_lease());
    let old_counts = old_backend.request_counts();
    let (old, _) = Wal::open(old_backend, options()).unwrap();
    // The old owner stalls: none of its renewals reaches the store from now on.
    gate.hold_registration();
    let mut writer = old.writer();
    assert_eq!(writer.append(b"early", b"v").unwrap(), 1);
    gate.hold_next_wal_put();
    let late = std::thread::spawn(move || writer.append(b"late", b"v"));
    gate.wait_for_held_wal_put();
    let lease = stored_registration(&server, "0").lease.expect("the old owner's lease");

    // The new owner claims, waits out the old lease, lists and recovers.
    let new_backend = fenced_on(client(&server), "0", short_lease());
    let (new, recovered) = Wal::open(new_backend, options()).unwrap();
    assert!(
        wall_now_ms() >= lease.expires_unix_ms + lease.skew_ms,
        "the new owner recovered before the old lease ({lease:?}) and its skew had passed"
    );
    assert_eq!(keys_of(&recovered.records), vec!["early"]);

    // Now the held upload lands and returns, well past the old owner's deadline.
    gate.wal_open.store(true, Ordering::SeqCst);
    let outcome = late.join().unwrap();
    assert!(
        matches!(outcome, Err(WalError::Failed(SyncError::Fenced))),
        "the old owner acknowledged a record after its lease ran out (the new owner never saw it): {outcome:?}"
    );
    // The late batch was decided by the fallback read, not by a renewal (all held).
    assert!(old_counts.fence_reads.load(Ordering::SeqCst) >= 1);
    gate.registration_open.store(true, Ordering::SeqCst);
    drop(old);

    let mut writer = new.writer();
    assert_eq!(writer.append(b"new", b"v").unwrap(), 2);
    drop(writer);
    drop(new);
    // The old epoch's object of `late` is still in the bucket, at the new session's
    // start: a straggler, ignored.
    assert!(wal_objects(&server, "0").iter().any(|o| o.epoch == 1 && o.start > 0));
    let (_third, recovered) = Wal::open(fenced_on(client(&server), "0", short_lease()), options()).unwrap();
    assert_eq!(keys_of(&recovered.records), vec!["early", "new"]);
}
