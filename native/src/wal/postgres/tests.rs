//! The Postgres WAL against real servers: the one on 127.0.0.1:5432 (database `test`)
//! for most tests, each under a cluster name of its own, and throwaway clusters
//! ([`super::cluster::Cluster`]) where a test needs to own the server.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use walab_core::group_commit::SyncError;

use super::cluster::Cluster;
use super::insert::BatchRow;
use super::*;
use crate::wal::{Wal, WalError, WalOptions};

const SERVER: &str = "postgres://postgres@127.0.0.1:5432/test";
/// Bound on polling loops that wait for a background effect (not a timing assertion).
const POLL_MAX: Duration = Duration::from_secs(30);

/// A cluster name no other test (or earlier run) uses.
fn unique_cluster(test: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("{test}-{}-{nanos}", std::process::id())
}

/// Deliberate faults for the tests of the retry path, put between the backend and its
/// fenced insert ([`InsertRow`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PgFault {
    /// The first batch's first insert commits, but its reply is treated as lost.
    LoseFirstCommitReply,
    /// Before the first batch is inserted, a different row (same epoch) is put at its
    /// offset, as a corrupt table would hold.
    ForeignRowAtFirstBatch,
}

/// The production insert with one fault, armed for the first insert only.
struct FaultyInsert {
    fault: PgFault,
    armed: AtomicBool,
}

impl InsertRow for FaultyInsert {
    fn insert<'a>(&'a self, client: &'a Client, statement: &'a Statement, row: &'a BatchRow<'a>) -> BoxFuture<'a, Result<u64, String>> {
        Box::pin(async move {
            let first = self.armed.swap(false, Ordering::SeqCst);
            if first && self.fault == PgFault::ForeignRowAtFirstBatch {
                let mut foreign = row.body.to_vec();
                let last = foreign.len() - 1;
                foreign[last] ^= 0xff;
                client
                    .execute(&sql::insert_unfenced(row.table), &[&row.start, &row.end, &row.epoch, &foreign])
                    .await
                    .map_err(|e| error_text(&e))?;
            }
            let inserted = FencedInsert.insert(client, statement, row).await?;
            if first && self.fault == PgFault::LoseFirstCommitReply && inserted == 1 {
                return Err("the commit's reply was lost (injected)".to_string());
            }
            Ok(inserted)
        })
    }
}

/// Arms a deliberate fault in a backend not yet opened.
fn inject(backend: &mut PgBackend, fault: PgFault) {
    backend.insert = Arc::new(FaultyInsert { fault, armed: AtomicBool::new(true) });
}

fn backend(url: &str, cluster: &str, create: bool) -> PgBackend {
    let mut backend = PgBackend::new(url, cluster, "0", create).unwrap();
    backend.quiet();
    backend
}

fn open(url: &str, cluster: &str) -> (Wal, Recovered, PgCountersHandle) {
    let backend = backend(url, cluster, true);
    let counters = backend.counters_handle();
    let (wal, recovered) = Wal::open(Box::new(backend), WalOptions::default()).unwrap();
    (wal, recovered, counters)
}

/// Appends `count` records from one writer, returning their keys.
fn append(wal: &Wal, prefix: &str, count: usize) -> Vec<String> {
    let mut writer = wal.writer();
    (0..count)
        .map(|n| {
            let key = format!("{prefix}-{n}");
            writer.append(key.as_bytes(), &[b'v'; 100]).unwrap();
            key
        })
        .collect()
}

fn keys(recovered: &Recovered) -> Vec<String> {
    recovered.records.iter().map(|r| String::from_utf8(r.key.clone()).unwrap()).collect()
}

fn poll(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < POLL_MAX, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn psql(sql: &str) -> String {
    let output = std::process::Command::new("psql")
        .args(["-h", "127.0.0.1", "-U", "postgres", "-d", "test", "-At", "-v", "ON_ERROR_STOP=1", "-c", sql])
        .output()
        .unwrap();
    assert!(output.status.success(), "psql {sql}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

#[test]
fn unknown_url_options_are_refused_by_name() {
    let error = PgBackend::new(&format!("{SERVER}?segmnts=4"), "c", "0", true).err().unwrap();
    assert!(error.contains("unknown option \"segmnts\""), "{error}");
    let error = PgBackend::new(&format!("{SERVER}?segments=2&segmentBytes=64MiB"), "c", "0", true).err().unwrap();
    assert!(error.contains("must exceed max_unflushed_bytes"), "{error}");
    let error = PgBackend::new(SERVER, "c", "Node-1", true).err().unwrap();
    assert!(error.contains("cannot name a slot table"), "{error}");
}

/// Moves one cluster's log to the table names walab used before its tables took its own
/// name (`pico_wal_node` and `pico_wal_{crc32(cluster)}_{node}_{slot}`, the same columns),
/// as a cluster made by an earlier walab holds it.
fn move_to_earlier_names(cluster: &str, segments: u64) {
    psql("CREATE TABLE IF NOT EXISTS pico_wal_node (LIKE walab_node INCLUDING ALL)");
    psql(&format!(
        "BEGIN; INSERT INTO pico_wal_node SELECT * FROM walab_node WHERE cluster = '{cluster}'; \
         DELETE FROM walab_node WHERE cluster = '{cluster}'; COMMIT"
    ));
    for slot in 0..segments {
        let now = ring::slot_table_name(TablePrefix::Walab, cluster, "0", slot).unwrap();
        let earlier = ring::slot_table_name(TablePrefix::Earlier, cluster, "0", slot).unwrap();
        psql(&format!("ALTER TABLE IF EXISTS {now} RENAME TO {earlier}"));
    }
}

#[test]
fn a_cluster_made_with_the_earlier_table_names_keeps_opening_in_them() {
    let cluster = unique_cluster("earlier-names");
    let segments = ring::SEGMENTS_DEFAULT;
    let (wal, _, _) = open(SERVER, &cluster);
    let mut written = append(&wal, "old", 120);
    wal.close();
    move_to_earlier_names(&cluster, segments);
    let in_node_table = |table: &str| psql(&format!("SELECT count(*) FROM {table} WHERE cluster = '{cluster}'"));
    assert_eq!((in_node_table("walab_node"), in_node_table("pico_wal_node")), ("0".to_string(), "1".to_string()));

    // `dump` finds the cluster in the earlier node table, says so, and reads it there.
    let mut reader = backend(SERVER, &cluster, false);
    assert_eq!(keys(&reader.recover().unwrap()), written);
    assert!(reader.notes().contains(&StartupNote::EarlierTablePrefix), "{:?}", reader.notes());
    assert!(StartupNote::EarlierTablePrefix.to_string().contains("pico_wal_node"), "the note names the tables");

    // A writer recovers and appends there too; nothing goes to walab_node.
    let (wal, recovered, _) = open(SERVER, &cluster);
    assert_eq!(keys(&recovered), written);
    written.extend(append(&wal, "new", 80));
    wal.close();
    assert_eq!((in_node_table("walab_node"), in_node_table("pico_wal_node")), ("0".to_string(), "1".to_string()));
    let earlier_rows: i64 = (0..segments)
        .map(|slot| {
            let table = ring::slot_table_name(TablePrefix::Earlier, &cluster, "0", slot).unwrap();
            psql(&format!("SELECT count(*) FROM {table}")).parse::<i64>().unwrap()
        })
        .sum();
    assert!(earlier_rows > 0, "the batches are in the earlier slot tables");
    let (_, recovered, _) = open(SERVER, &cluster);
    assert_eq!(keys(&recovered), written);

    // A new cluster takes walab's names.
    let fresh = unique_cluster("walab-names");
    let (wal, _, _) = open(SERVER, &fresh);
    append(&wal, "x", 1);
    wal.close();
    assert_eq!(psql(&format!("SELECT count(*) FROM walab_node WHERE cluster = '{fresh}'")), "1");
}

#[test]
fn records_survive_a_reopen_in_order_and_seqs_continue() {
    let cluster = unique_cluster("reopen");
    let (wal, recovered, _) = open(SERVER, &cluster);
    assert!(recovered.records.is_empty());
    let handles: Vec<_> = (0..4)
        .map(|w| {
            let mut writer = wal.writer();
            std::thread::spawn(move || {
                for n in 0..50 {
                    writer.append(format!("w{w}-{n}").as_bytes(), b"value").unwrap();
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    wal.close();
    let (wal, recovered, _) = open(SERVER, &cluster);
    assert_eq!(recovered.records.len(), 200);
    let seqs: Vec<u64> = recovered.records.iter().map(|r| r.seq).collect();
    assert_eq!(seqs, (1..=200).collect::<Vec<_>>());
    assert_eq!(recovered.next_seq, 201);
    let mut writer = wal.writer();
    assert_eq!(writer.append(b"after", b"v"), Ok(201));
    wal.close();
    // `dump` reads without claiming.
    let mut reader = backend(SERVER, &cluster, false);
    let recovered = reader.recover().unwrap();
    assert_eq!(recovered.records.len(), 201);
    let epoch = psql(&format!("SELECT epoch FROM walab_node WHERE cluster = '{cluster}'"));
    assert_eq!(reader.epoch().to_string(), epoch, "dump leaves the epoch alone");
}

#[test]
fn dump_of_a_log_never_written_is_a_clear_error() {
    let mut reader = backend(SERVER, &unique_cluster("never"), false);
    let error = reader.recover().err().unwrap();
    assert!(matches!(&error, WalError::Open(m) if m.contains("no WAL for this cluster")), "{error}");
}

#[test]
fn the_ring_wraps_round_with_small_segments_and_a_consumer() {
    let cluster = unique_cluster("wrap");
    // 3 slots of 4 KiB: capacity 8 KiB > 6 KiB unflushed; batches of at most 1 KiB.
    let url = format!("{SERVER}?segments=3&segmentBytes=4KiB&maxBytesInBatch=1KiB&maxUnflushedBytes=6KiB&batchInterval=200us");
    let (wal, _, counters) = open(&url, &cluster);
    let mut writer = wal.writer();
    let mut acked = Vec::new();
    // About 140 bytes a record: 300 records are about 10 generations, three trips round.
    for n in 0..300 {
        let key = format!("r{n}");
        let seq = writer.append(key.as_bytes(), &[b'v'; 100]).unwrap();
        acked.push((seq, key));
        // The consumer keeps 5 records unconfirmed.
        if seq > 5 {
            wal.confirm_consumer(seq - 5);
        }
    }
    let confirmed = acked[acked.len() - 6].0;
    let trim_wanted = counters.get().trims;
    poll("the trim task", || counters.get().trims > trim_wanted || counters.trim_offset() > 0);
    let stats = counters.get();
    assert!(stats.slots_truncated >= 6, "{stats:?}");
    wal.close();
    let table = ring::slot_table_name(TablePrefix::Walab, &cluster, "0", 0).unwrap();
    let generations: u64 = psql(&format!("SELECT coalesce(max(start_offset), 0) / 4096 FROM {table}")).parse().unwrap();
    assert!(generations >= 3, "slot 0 holds generation {generations}: the ring went round");
    // Recovery starts at the trim offset: everything unconfirmed is there, in order.
    let (wal, recovered, _) = open(&url, &cluster);
    let seqs: Vec<u64> = recovered.records.iter().map(|r| r.seq).collect();
    let first = seqs[0];
    assert!(first <= confirmed + 1, "recovery starts at or before the consumer's position");
    assert_eq!(seqs, (first..=300).collect::<Vec<_>>());
    assert_eq!(keys(&recovered).last().unwrap(), "r299");
    wal.close();
}

#[test]
fn appends_wait_for_a_full_ring_until_the_consumer_trims() {
    let cluster = unique_cluster("full");
    let url = format!("{SERVER}?segments=2&segmentBytes=4KiB&maxBytesInBatch=1KiB&maxUnflushedBytes=3KiB&batchInterval=200us");
    let (wal, _, counters) = open(&url, &cluster);
    let wal = Arc::new(wal);
    let last_acked = Arc::new(Mutex::new(0u64));
    let done = Arc::new(AtomicBool::new(false));
    let writer_thread = {
        let (wal, last_acked, done) = (Arc::clone(&wal), Arc::clone(&last_acked), Arc::clone(&done));
        std::thread::spawn(move || {
            let mut writer = wal.writer();
            // Two generations of 4 KiB hold about 58 records; 100 must wrap.
            for n in 0..100 {
                let seq = writer.append(format!("f{n}").as_bytes(), &[b'v'; 100]).unwrap();
                *last_acked.lock().unwrap() = seq;
            }
            done.store(true, Ordering::SeqCst);
        })
    };
    poll("an append to wait on the ring", || wal.stats().ring_waits > 0);
    assert!(!done.load(Ordering::SeqCst), "the writer cannot finish while the ring is full");
    // The consumer confirms what was acknowledged; the slot is released and appends go on.
    let mut finished = false;
    let started = Instant::now();
    while !finished {
        assert!(started.elapsed() < POLL_MAX, "the writer never finished");
        let seq = *last_acked.lock().unwrap();
        wal.confirm_consumer(seq);
        std::thread::sleep(Duration::from_millis(10));
        finished = done.load(Ordering::SeqCst);
    }
    writer_thread.join().unwrap();
    assert!(counters.get().slots_truncated >= 1);
}

#[test]
fn a_retried_insert_finds_its_own_committed_row() {
    let cluster = unique_cluster("retry");
    let mut backend = backend(SERVER, &cluster, true);
    inject(&mut backend, PgFault::LoseFirstCommitReply);
    let counters = backend.counters_handle();
    let (wal, _) = Wal::open(Box::new(backend), WalOptions::default()).unwrap();
    let mut writer = wal.writer();
    assert_eq!(writer.append(b"once", b"value"), Ok(1));
    let stats = counters.get();
    assert_eq!((stats.retries, stats.retries_found_committed), (1, 1));
    wal.close();
    let (wal, recovered, _) = open(SERVER, &cluster);
    assert_eq!(keys(&recovered), ["once"], "exactly one copy");
    wal.close();
}

#[test]
fn a_different_row_at_the_offset_is_corruption_never_success() {
    let cluster = unique_cluster("mismatch");
    let mut backend = backend(SERVER, &cluster, true);
    inject(&mut backend, PgFault::ForeignRowAtFirstBatch);
    let (wal, _) = Wal::open(Box::new(backend), WalOptions::default()).unwrap();
    let mut writer = wal.writer();
    assert_eq!(writer.append(b"k", b"value"), Err(WalError::Failed(SyncError::Mismatch)));
    // Fail-stop: nothing more is taken.
    assert!(matches!(writer.append(b"k2", b"value"), Err(WalError::Failed(_))));
    wal.close();
    // And the foreign row fails recovery's checks: reported, not replayed.
    let error = backend_recover_error(&cluster);
    assert!(error.contains("checksum mismatch"), "{error}");
}

fn backend_recover_error(cluster: &str) -> String {
    match backend(SERVER, cluster, true).recover() {
        Err(WalError::Corrupt(message)) => message,
        other => panic!("expected a corrupt log, got {:?}", other.map(|r| r.records.len())),
    }
}

#[test]
fn the_claim_takes_only_an_epoch_at_least_the_stored_one() {
    let cluster = unique_cluster("claim");
    assert_eq!(claim_epoch(SERVER, &cluster, "0", 5), Ok(true));
    assert_eq!(claim_epoch(SERVER, &cluster, "0", 3), Ok(false));
    assert_eq!(claim_epoch(SERVER, &cluster, "0", 5), Ok(true));
    assert_eq!(claim_epoch(SERVER, &cluster, "0", 6), Ok(true));
    assert_eq!(psql(&format!("SELECT epoch FROM walab_node WHERE cluster = '{cluster}'")), "6");
}

#[test]
fn a_newer_writer_fences_the_old_one() {
    let cluster = unique_cluster("fence");
    let (old, _, _) = open(SERVER, &cluster);
    let before = append(&old, "old", 10);
    let (new, recovered, _) = open(SERVER, &cluster);
    assert_eq!(keys(&recovered), before, "the new writer recovers what the old one acknowledged");
    let mut old_writer = old.writer();
    assert_eq!(old_writer.append(b"late", b"value"), Err(WalError::Failed(SyncError::Fenced)));
    let after = append(&new, "new", 10);
    old.close();
    new.close();
    let (wal, recovered, _) = open(SERVER, &cluster);
    assert_eq!(keys(&recovered), [before, after].concat());
    wal.close();
}

#[test]
fn recovery_stops_at_a_gap_and_deletes_what_lies_beyond() {
    let cluster = unique_cluster("gap");
    let (wal, _, _) = open(SERVER, &cluster);
    let written = append(&wal, "g", 5);
    wal.close();
    // Take out the third batch (one record each: one writer, closed loop).
    let table = ring::slot_table_name(TablePrefix::Walab, &cluster, "0", 0).unwrap();
    psql(&format!("DELETE FROM {table} WHERE start_offset = (SELECT start_offset FROM {table} ORDER BY start_offset OFFSET 2 LIMIT 1)"));
    let mut reopened = backend(SERVER, &cluster, true);
    let recovered = reopened.recover().unwrap();
    assert_eq!(keys(&recovered), written[..2]);
    assert_eq!(reopened.notes().iter().filter(|n| matches!(n, StartupNote::RowsBeyondGapDeleted { rows: 2, .. })).count(), 1);
    drop(reopened);
    // Appends continue at the gap without tripping over the deleted rows' offsets.
    let (wal, recovered, _) = open(SERVER, &cluster);
    assert_eq!(recovered.records.len(), 2);
    let more = append(&wal, "h", 5);
    wal.close();
    let (wal, recovered, _) = open(SERVER, &cluster);
    assert_eq!(keys(&recovered), [&written[..2], &more[..]].concat());
    wal.close();
}

#[test]
fn a_damaged_body_or_a_wrong_epoch_column_is_reported_as_corruption() {
    let cluster = unique_cluster("damage");
    let (wal, _, _) = open(SERVER, &cluster);
    append(&wal, "d", 3);
    wal.close();
    let table = ring::slot_table_name(TablePrefix::Walab, &cluster, "0", 0).unwrap();
    let second = format!("(SELECT start_offset FROM {table} ORDER BY start_offset OFFSET 1 LIMIT 1)");
    psql(&format!("UPDATE {table} SET epoch = epoch - 1 WHERE start_offset = {second}"));
    let error = backend_recover_error(&cluster);
    assert!(error.contains("differs from the epoch"), "{error}");
    psql(&format!("UPDATE {table} SET epoch = epoch + 1, body = overlay(body placing '\\xff'::bytea from 30 for 1) WHERE start_offset = {second}"));
    let error = backend_recover_error(&cluster);
    assert!(error.contains("checksum mismatch"), "{error}");
}

#[test]
fn a_new_ring_applies_only_when_the_wal_is_drained() {
    let cluster = unique_cluster("geometry");
    let small = format!("{SERVER}?segments=4&segmentBytes=64KiB&maxBytesInBatch=16KiB&maxUnflushedBytes=64KiB");
    let larger = format!("{SERVER}?segments=6&segmentBytes=64KiB&maxBytesInBatch=16KiB&maxUnflushedBytes=64KiB");
    let (wal, _, _) = open(&small, &cluster);
    append(&wal, "a", 3);
    wal.close();
    let mut not_drained = backend(&larger, &cluster, true);
    let recovered = not_drained.recover().unwrap();
    assert_eq!(recovered.records.len(), 3);
    assert!(not_drained.notes().iter().any(|n| matches!(n, StartupNote::GeometryKept { .. })));
    drop(not_drained);
    // The consumer confirms everything: the WAL is drained.
    let (wal, recovered, counters) = open(&small, &cluster);
    let last = recovered.records.last().unwrap().seq;
    wal.confirm_consumer(last);
    poll("the trim to reach the head", || counters.trim_offset() == recovered.lsn);
    wal.close();
    let mut drained = backend(&larger, &cluster, true);
    let recovered = drained.recover().unwrap();
    assert!(recovered.records.is_empty());
    assert!(drained.notes().iter().any(|n| matches!(n, StartupNote::GeometryChanged { .. })), "{:?}", drained.notes());
    drop(drained);
    assert_eq!(psql(&format!("SELECT segments FROM walab_node WHERE cluster = '{cluster}'")), "6");
    let (wal, _, _) = open(&larger, &cluster);
    let after = append(&wal, "b", 3);
    wal.close();
    let (wal, recovered, _) = open(&larger, &cluster);
    assert_eq!(keys(&recovered), after);
    wal.close();
}

// Throwaway clusters from here on: each test owns its server, and the server and its
// directory go when the `Cluster` drops, also when the test fails.

#[test]
fn fsync_off_is_refused_unless_the_url_allows_it() {
    let server = Cluster::init(&[("fsync", "off")]).unwrap();
    let mut refused = backend(&server.url(), "c", true);
    let error = refused.recover().err().unwrap();
    assert!(matches!(&error, WalError::Open(m) if m.contains("fsync = off")), "{error}");
    let mut allowed = backend(&format!("{}?allowUnsafe=true", server.url()), "c", true);
    allowed.recover().unwrap();
    assert_eq!(
        allowed.notes()[..2],
        [StartupNote::Warning(ring::StartupWarning::FsyncOffAllowed), StartupNote::Warning(ring::StartupWarning::NoSynchronousStandby)]
    );
}

#[test]
fn a_standby_is_refused_and_its_promotion_is_a_higher_timeline() {
    let primary = Cluster::init(&[]).unwrap();
    let (wal, _, _) = open(&primary.url(), "c");
    let written = append(&wal, "p", 5);
    wal.close();
    let standby = primary.standby().unwrap();
    let error = backend(&standby.url(), "c", true).recover().err().unwrap();
    assert!(matches!(&error, WalError::Open(m) if m.contains("pg_is_in_recovery")), "{error}");
    standby.promote().unwrap();
    let mut promoted = backend(&standby.url(), "c", true);
    let recovered = promoted.recover().unwrap();
    assert_eq!(keys(&recovered), written);
    let verdict = promoted.notes().iter().find_map(|n| match n {
        StartupNote::Timeline(verdict) => Some(*verdict),
        _ => None,
    });
    assert_eq!(verdict, Some(ring::TimelineVerdict::HigherAsynchronous { recorded: 1, current: 2 }));
    drop(promoted);
    // A timeline recorded above the server's reads as a restore from backup.
    standby.psql("UPDATE walab_node SET timeline = 7").unwrap();
    let mut restored = backend(&standby.url(), "c", true);
    restored.recover().unwrap();
    assert!(restored.notes().contains(&StartupNote::Timeline(ring::TimelineVerdict::Lower { recorded: 7, current: 2 })));
}

#[test]
fn kill_9_of_the_postmaster_mid_load_loses_nothing_acknowledged() {
    let server = Cluster::init(&[]).unwrap();
    let (wal, _, _) = open(&server.url(), "c");
    let acked = Arc::new(Mutex::new(Vec::new()));
    let handles: Vec<_> = (0..8)
        .map(|w| {
            let (mut writer, acked) = (wal.writer(), Arc::clone(&acked));
            std::thread::spawn(move || {
                for n in 0..1_000_000u64 {
                    let key = format!("w{w}-{n}");
                    match writer.append(key.as_bytes(), &[b'v'; 100]) {
                        Ok(_) => acked.lock().unwrap().push(key),
                        Err(_) => break,
                    }
                }
            })
        })
        .collect();
    poll("some acknowledgements", || acked.lock().unwrap().len() > 500);
    server.kill_postmaster().unwrap();
    for handle in handles {
        handle.join().unwrap();
    }
    wal.close();
    server.start().unwrap();
    let (wal, recovered, _) = open(&server.url(), "c");
    let found: HashSet<String> = keys(&recovered).into_iter().collect();
    let acked = acked.lock().unwrap();
    let lost: Vec<&String> = acked.iter().filter(|key| !found.contains(*key)).collect();
    assert!(lost.is_empty(), "{} of {} acknowledged records lost, e.g. {:?}", lost.len(), acked.len(), &lost[..lost.len().min(3)]);
    wal.close();
}
