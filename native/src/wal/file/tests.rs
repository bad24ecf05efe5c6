//! The file WAL against real files (in a temp dir) and against the fault-injecting disk.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use walab_core::device::FailureProfile;
use walab_core::group_commit::{Config, Policy, SyncError};
use walab_core::session::preset::Tuning;

use super::fault_fs::{CutMode, FaultFs};
use super::{segment_file_name, FileBackend};
use super::fs::{RealFs, WalFs};
use crate::wal::{Wal, WalError, WalOptions};

const SMALL_SEGMENT_BYTES: u64 = 4096;

fn real_backend(dir: &Path, segment_bytes: u64) -> Box<FileBackend> {
    Box::new(FileBackend::new(Arc::new(RealFs), dir.to_path_buf(), segment_bytes, true))
}

fn fault_backend(fs: &FaultFs, segment_bytes: u64) -> Box<FileBackend> {
    Box::new(FileBackend::new(Arc::new(fs.clone()), PathBuf::from("/wal/default/0"), segment_bytes, true))
}

/// The first segment of the fault-injected WAL at `/wal/default/0`: the one every
/// small test appends to. Failing *its* syncs (not "the next sync of any file") keeps
/// the spare segment, prepared and synced on another thread, from taking the failure.
fn first_segment() -> PathBuf {
    PathBuf::from("/wal/default/0").join(segment_file_name(1))
}

fn keys_of(records: &[walab_core::codec::tiny::TinyRecord]) -> Vec<String> {
    records.iter().map(|r| String::from_utf8_lossy(&r.key).into_owned()).collect()
}

#[test]
fn records_from_concurrent_writers_survive_a_reopen_in_seq_order() {
    let dir = tempfile::tempdir().unwrap();
    let (wal, recovered) = Wal::open(real_backend(dir.path(), SMALL_SEGMENT_BYTES), WalOptions::default()).unwrap();
    assert!(recovered.records.is_empty());
    let handles: Vec<_> = (0..4)
        .map(|w| {
            let mut writer = wal.writer();
            std::thread::spawn(move || {
                (0..40).map(|n| writer.append(format!("w{w}-{n}").as_bytes(), &[b'v'; 60]).unwrap()).collect::<Vec<u64>>()
            })
        })
        .collect();
    let mut seqs: Vec<u64> = handles.into_iter().flat_map(|h| h.join().unwrap()).collect();
    seqs.sort_unstable();
    assert_eq!(seqs, (1..=160).collect::<Vec<u64>>());
    let stats = wal.stats();
    assert!(stats.persists_ok >= 1);
    assert!(stats.persists_ok <= 160, "one sync per batch, never more than one per record");
    drop(wal);
    // 160 records of about 80 bytes do not fit in one 4 KiB segment.
    let segments = RealFs.list(dir.path()).unwrap().into_iter().filter(|n| n.starts_with("wal-")).count();
    assert!(segments >= 3, "{segments} segments");
    let (wal, recovered) = Wal::open(real_backend(dir.path(), SMALL_SEGMENT_BYTES), WalOptions::default()).unwrap();
    assert_eq!(recovered.records.len(), 160);
    assert!(recovered.records.windows(2).all(|w| w[1].seq == w[0].seq + 1));
    assert_eq!(recovered.next_seq, 161);
    let mut writer = wal.writer();
    assert_eq!(writer.append(b"after", b"reopen").unwrap(), 161);
}

#[test]
fn a_failed_sync_fails_every_waiter_and_stops_the_log_until_reopened() {
    let fs = FaultFs::new(512);
    let (wal, _) = Wal::open(fault_backend(&fs, 1 << 16), WalOptions::default()).unwrap();
    let mut writer = wal.writer();
    writer.append(b"durable", b"1").unwrap();
    fs.fail_sync_of(&first_segment(), 1).unwrap();
    assert_eq!(writer.append(b"unknown", b"2"), Err(WalError::Failed(SyncError::Io)));
    // No more appends, even though the disk would now accept them (fsyncgate: a retried
    // sync finds nothing dirty and "succeeds").
    assert_eq!(writer.append(b"refused", b"3"), Err(WalError::Failed(SyncError::Io)));
    assert_eq!(wal.stats().persists_failed, 1);
    drop(wal);
    // The page cache still shows the failed record; the device does not have it.
    let segment = PathBuf::from("/wal/default/0").join(segment_file_name(1));
    let cached = fs.read_page_cache(&segment).unwrap();
    assert!(cached.windows(7).any(|w| w == b"unknown"));
    let (wal, recovered) = Wal::open(fault_backend(&fs, 1 << 16), WalOptions::default()).unwrap();
    assert_eq!(keys_of(&recovered.records), vec!["durable"]);
    let mut writer = wal.writer();
    assert_eq!(writer.append(b"again", b"4").unwrap(), 2);
}

/// Opens a WAL on `fs`, acknowledges `durable`, fails the sync of `unknown`, closes.
fn fail_the_second_record(fs: &FaultFs) {
    let (wal, _) = Wal::open(fault_backend(fs, 1 << 16), WalOptions::default()).unwrap();
    let mut writer = wal.writer();
    writer.append(b"durable", b"1").unwrap();
    fs.fail_sync_of(&first_segment(), 1).unwrap();
    assert_eq!(writer.append(b"unknown", b"2"), Err(WalError::Failed(SyncError::Io)));
}

#[test]
fn a_failed_sync_leaves_its_record_in_the_page_cache_on_ext4_and_xfs_but_not_on_btrfs() {
    for (profile, kept_in_cache) in [(FailureProfile::KeepCache, true), (FailureProfile::RevertCache, false)] {
        // The WAL's recovery reads past the page cache: on every file system it finds
        // only what was acknowledged, and the next record takes seq 2.
        let fs = FaultFs::with_profile(512, profile);
        fail_the_second_record(&fs);
        let cached = fs.read_page_cache(&first_segment()).unwrap();
        assert_eq!(cached.windows(7).any(|w| w == b"unknown"), kept_in_cache, "{profile:?}");
        let (wal, recovered) = Wal::open(fault_backend(&fs, 1 << 16), WalOptions::default()).unwrap();
        assert_eq!(keys_of(&recovered.records), vec!["durable"], "{profile:?}");
        assert_eq!(wal.writer().append(b"again", b"3").unwrap(), 2, "{profile:?}");
        drop(wal);
        // A recovery that read through the cache would bring the failed record back
        // where the cache keeps it (ext4, XFS): its writer was told it failed.
        let fs = FaultFs::with_profile(512, profile);
        fail_the_second_record(&fs);
        fs.read_through_page_cache(true);
        let (_wal, recovered) = Wal::open(fault_backend(&fs, 1 << 16), WalOptions::default()).unwrap();
        let expected: &[&str] = if kept_in_cache { &["durable", "unknown"] } else { &["durable"] };
        assert_eq!(keys_of(&recovered.records), expected, "{profile:?}");
    }
}

#[test]
fn many_waiters_on_a_failed_sync_all_get_errors() {
    let fs = FaultFs::new(512);
    let (wal, _) = Wal::open(fault_backend(&fs, 1 << 16), WalOptions::default()).unwrap();
    // The first segment's third sync from now fails.
    fs.fail_sync_of(&first_segment(), 3).unwrap();
    let handles: Vec<_> = (0..8)
        .map(|w| {
            let mut writer = wal.writer();
            std::thread::spawn(move || {
                let mut outcomes = Vec::new();
                for n in 0..20 {
                    let outcome = writer.append(format!("w{w}-{n}").as_bytes(), b"x");
                    let stop = outcome.is_err();
                    outcomes.push(outcome);
                    if stop {
                        break;
                    }
                }
                outcomes
            })
        })
        .collect();
    let outcomes: Vec<_> = handles.into_iter().flat_map(|h| h.join().unwrap()).collect();
    let acked = outcomes.iter().filter(|o| o.is_ok()).count();
    let failed = outcomes.iter().filter(|o| matches!(o, Err(WalError::Failed(_)))).count();
    assert_eq!(acked + failed, outcomes.len());
    assert_eq!(failed, 8, "every writer ends on an error");
    drop(wal);
    let (_wal, recovered) = Wal::open(fault_backend(&fs, 1 << 16), WalOptions::default()).unwrap();
    // Everything acknowledged is there; nothing after the failed batch is.
    assert_eq!(recovered.records.len(), acked);
}

#[test]
fn a_torn_tail_is_cut_and_later_appends_survive_the_next_recovery() {
    let fs = FaultFs::new(32);
    let (wal, _) = Wal::open(fault_backend(&fs, 1 << 14), WalOptions::default()).unwrap();
    let mut writer = wal.writer();
    for n in 0..10 {
        writer.append(format!("k{n}").as_bytes(), &[7u8; 50]).unwrap();
    }
    // Cut the power during the 12th persist's sync (write, then sync: the 2nd call).
    fs.schedule_cut(2, CutMode::Tear, 99);
    assert!(writer.append(b"torn", &[9u8; 200]).is_err());
    drop(wal);
    fs.restart();
    let (wal, recovered) = Wal::open(fault_backend(&fs, 1 << 14), WalOptions::default()).unwrap();
    assert_eq!(recovered.records.len(), 10);
    let mut writer = wal.writer();
    writer.append(b"after-cut", b"x").unwrap();
    drop(wal);
    let (_wal, recovered) = Wal::open(fault_backend(&fs, 1 << 14), WalOptions::default()).unwrap();
    assert_eq!(recovered.records.len(), 11);
    assert_eq!(recovered.records[10].key, b"after-cut");
}

#[test]
fn a_full_disk_fails_the_append_with_no_space() {
    let fs = FaultFs::new(512);
    let (wal, _) = Wal::open(fault_backend(&fs, 1 << 16), WalOptions::default()).unwrap();
    let mut writer = wal.writer();
    writer.append(b"a", b"1").unwrap();
    // The log's own file: the spare segment may still be zero-filled on another thread.
    fs.fail_next_write_of(&first_segment(), libc::ENOSPC).unwrap();
    assert_eq!(writer.append(b"b", b"2"), Err(WalError::Failed(SyncError::NoSpace)));
}

#[test]
fn damage_followed_by_later_records_is_corruption_not_a_torn_tail() {
    let dir = tempfile::tempdir().unwrap();
    let (wal, _) = Wal::open(real_backend(dir.path(), SMALL_SEGMENT_BYTES), WalOptions::default()).unwrap();
    let mut writer = wal.writer();
    for n in 0..120 {
        writer.append(format!("key-{n}").as_bytes(), &[1u8; 50]).unwrap();
    }
    drop(wal);
    let first = dir.path().join(segment_file_name(1));
    let mut bytes = std::fs::read(&first).unwrap();
    bytes[100] ^= 0xff;
    std::fs::write(&first, bytes).unwrap();
    let error = Wal::open(real_backend(dir.path(), SMALL_SEGMENT_BYTES), WalOptions::default()).err().unwrap();
    let WalError::Corrupt(message) = error else { panic!("expected corruption, got {error:?}") };
    assert!(message.contains("wal-00000000000000000001.log: checksum mismatch at byte"), "{message}");
}

#[test]
fn trim_removes_only_what_the_consumer_and_every_reader_confirmed() {
    let dir = tempfile::tempdir().unwrap();
    let (wal, _) = Wal::open(real_backend(dir.path(), SMALL_SEGMENT_BYTES), WalOptions::default()).unwrap();
    let reader = wal.register_reader("cdc", 0).unwrap();
    let mut writer = wal.writer();
    let mut last = 0;
    for n in 0..200 {
        last = writer.append(format!("key-{n}").as_bytes(), &[1u8; 50]).unwrap();
    }
    // (Counting files would race with the helper thread that prepares the next segment.)
    let first = dir.path().join(segment_file_name(1));
    let second = dir.path().join(segment_file_name(2));
    assert!(second.exists(), "200 records of about 70 bytes span several 4 KiB segments");
    wal.confirm_consumer(last);
    writer.append(b"tick", b"1").unwrap();
    assert!(first.exists(), "the reader at seq 0 pins every segment");
    assert_eq!(wal.stats().segments_removed, 0);
    wal.confirm_reader(reader, last);
    writer.append(b"tick", b"2").unwrap();
    assert!(!first.exists());
    assert!(!second.exists());
    assert!(wal.stats().segments_removed >= 2);
    drop(wal);
    let (_wal, recovered) = Wal::open(real_backend(dir.path(), SMALL_SEGMENT_BYTES), WalOptions::default()).unwrap();
    // The newest records are still there, so the next seq continues.
    assert_eq!(recovered.next_seq, last + 3);
}

#[test]
fn a_second_process_cannot_open_the_same_log() {
    let dir = tempfile::tempdir().unwrap();
    let (_wal, _) = Wal::open(real_backend(dir.path(), SMALL_SEGMENT_BYTES), WalOptions::default()).unwrap();
    let error = Wal::open(real_backend(dir.path(), SMALL_SEGMENT_BYTES), WalOptions::default()).err().unwrap();
    assert!(matches!(error, WalError::Open(ref m) if m.contains("cannot lock")), "{error:?}");
}

#[test]
fn the_no_sync_policy_acknowledges_what_a_power_cut_then_takes_away() {
    let fs = FaultFs::new(512);
    let options = WalOptions { policy: Some(Policy::NoSync), trace_events_max: None };
    let (wal, _) = Wal::open(fault_backend(&fs, 1 << 16), options).unwrap();
    let mut writer = wal.writer();
    for n in 0..5 {
        writer.append(format!("k{n}").as_bytes(), b"v").unwrap();
    }
    fs.cut_power(CutMode::DropUnsynced, 1);
    drop(wal);
    fs.restart();
    let (_wal, recovered) = Wal::open(fault_backend(&fs, 1 << 16), WalOptions::default()).unwrap();
    assert!(recovered.records.is_empty(), "five acknowledged writes, none durable");
}

#[test]
fn a_record_framed_by_the_writer_and_sealed_by_the_driver_is_the_codec_s_record() {
    for (key, value) in [(&b"user:1"[..], &b"alice"[..]), (b"k", &[7u8; 300][..]), (b"", b"")] {
        let mut record = Vec::new();
        crate::wal::frame_unsequenced(&mut record, key, value).unwrap();
        crate::wal::seal_record(&mut record, 42);
        assert_eq!(record, walab_core::codec::tiny::encode(42, walab_core::codec::Op::Put, key, value));
    }
    let mut record = Vec::new();
    assert!(matches!(crate::wal::frame_unsequenced(&mut record, b"k", &vec![0u8; 70_000]), Err(WalError::Refused(_))));
}

fn leveldb_backend(dir: &Path, segment_bytes: u64) -> Box<FileBackend> {
    Box::new(FileBackend::with_format(
        Arc::new(RealFs),
        dir.to_path_buf(),
        segment_bytes,
        true,
        super::SegmentFormat::Leveldb,
    ))
}

#[test]
fn the_leveldb_format_writes_one_record_per_group_that_leveldb_s_scan_reads() {
    let dir = tempfile::tempdir().unwrap();
    let (wal, _) = Wal::open(leveldb_backend(dir.path(), 8192), WalOptions::default()).unwrap();
    let handles: Vec<_> = (0..4)
        .map(|w| {
            let mut writer = wal.writer();
            std::thread::spawn(move || {
                for n in 0..50 {
                    writer.append(format!("w{w}-{n}").as_bytes(), &[b'v'; 40]).unwrap();
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    let persists = wal.stats().persists_ok;
    drop(wal);
    // Every segment is a LevelDB log: the core's LevelDB scan reads one batch per persist.
    let mut batches = 0;
    for name in RealFs.list(dir.path()).unwrap().into_iter().filter(|n| n.starts_with("wal-")) {
        let bytes = std::fs::read(dir.path().join(&name)).unwrap();
        let segment = walab_core::codec::leveldb::LogSegment { bytes: &bytes, log_number: None };
        let scan = walab_core::codec::leveldb::scan_log(walab_core::codec::leveldb::LogFormat::LevelDb, &[segment], 0);
        batches += scan.records.len() as u64;
    }
    assert_eq!(batches, persists);
    let (wal, recovered) = Wal::open(leveldb_backend(dir.path(), 8192), WalOptions::default()).unwrap();
    assert_eq!(recovered.records.len(), 200);
    assert!(recovered.records.windows(2).all(|w| w[1].seq == w[0].seq + 1));
    let mut writer = wal.writer();
    assert_eq!(writer.append(b"after", b"reopen").unwrap(), 201);
    drop(wal);
    // The wrong --format is refused, never mistaken for a torn tail.
    let error = Wal::open(real_backend(dir.path(), 8192), WalOptions::default()).err().unwrap();
    assert!(matches!(error, WalError::Open(ref m) if m.contains("pass --format leveldb")), "{error:?}");
    let (_wal, recovered) = Wal::open(leveldb_backend(dir.path(), 8192), WalOptions::default()).unwrap();
    assert_eq!(recovered.records.len(), 201);
}

#[test]
fn a_leveldb_segment_holds_each_batch_as_the_write_batch_of_its_records() {
    use walab_core::codec::leveldb::{HeaderKind, LogWriter};
    use walab_core::codec::tiny::{self, HEADER_BYTES};
    use walab_core::codec::write_batch::{BatchOp, WriteBatch};
    use walab_core::codec::Op;
    use walab_core::group_commit::{Action, GroupCommit};
    use walab_core::time::Nanos;
    use crate::wal::Backend;

    let dir = tempfile::tempdir().unwrap();
    let mut backend = leveldb_backend(dir.path(), 1 << 20);
    backend.recover().unwrap();
    let mut machine = GroupCommit::new(Config::file(Policy::Group)).unwrap();
    // What the old path did: decode every record and encode the group as a WriteBatch.
    let mut expected = LogWriter::new(HeaderKind::Legacy);
    let mut seq = 0u64;
    for (batch_index, records) in [1u64, 3, 40, 2, 300].into_iter().enumerate() {
        for _ in 0..records {
            seq += 1;
            let value = vec![seq as u8; (seq as usize * 131) % 3000];
            machine.handle_append(Nanos(seq), 1, &tiny::encode(seq, Op::Put, format!("key-{seq}").as_bytes(), &value)).unwrap();
        }
        let Some(Action::Persist(batch)) = machine.poll_action() else { panic!("a batch to persist") };
        let ops = batch
            .records()
            .map(|record| {
                let decoded = tiny::decode_payload(&record[HEADER_BYTES..]).unwrap();
                BatchOp::Put { column_family: 0, key: decoded.key, value: decoded.value }
            })
            .collect();
        expected.add_batch(&WriteBatch::new(batch.tickets.first.0, ops));
        backend.write_unsynced(&batch).unwrap();
        machine.handle_persisted(Nanos(seq), batch.id, Ok(())).unwrap();
        while machine.poll_action().is_some() {}
        assert_eq!(batch_index as u64 + 1, batch.id.0);
    }
    drop(backend);
    let file = std::fs::read(dir.path().join(segment_file_name(1))).unwrap();
    let written = expected.bytes();
    assert!(written.len() > 3 * walab_core::codec::leveldb::BLOCK_BYTES, "groups cross blocks");
    assert_eq!(&file[..written.len()], written);
    assert!(file[written.len()..].iter().all(|&byte| byte == 0));
}

/// A backend whose persist panics: a bug in a backend must not leave writers blocked.
struct PanickingBackend;

impl crate::wal::Backend for PanickingBackend {
    fn describe(&self) -> String {
        "panicking://".to_string()
    }
    fn recover(&mut self) -> Result<crate::wal::Recovered, WalError> {
        Ok(crate::wal::Recovered { next_seq: 1, segment: 1, ..Default::default() })
    }
    fn segment_bytes_max(&self) -> u64 {
        u64::MAX
    }
    fn persist(&mut self, _batch: walab_core::group_commit::Batch, _done: crate::wal::Completion) {
        panic!("deliberate backend bug (test)");
    }
    fn write_unsynced(&mut self, _batch: &walab_core::group_commit::Batch) -> Result<(), SyncError> {
        Ok(())
    }
    fn remove_segments(&mut self, _segments: &[u64]) -> Result<(), WalError> {
        Ok(())
    }
}

#[test]
fn writers_learn_the_log_is_closed_when_the_driver_dies() {
    let (wal, _) = Wal::open(Box::new(PanickingBackend), WalOptions::default()).unwrap();
    let handles: Vec<_> = (0..4)
        .map(|w| {
            let mut writer = wal.writer();
            std::thread::spawn(move || writer.append(format!("w{w}").as_bytes(), b"v"))
        })
        .collect();
    for handle in handles {
        assert_eq!(handle.join().unwrap(), Err(WalError::Closed));
    }
    // A writer that comes after the driver died is refused at once.
    let mut late = wal.writer();
    assert_eq!(late.append(b"late", b"v"), Err(WalError::Closed));
}

/// A two-thread runtime like the bench's, for the async writers' tests.
fn task_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

#[test]
fn async_writers_get_every_seq_once_and_their_records_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let (wal, _) = Wal::open(real_backend(dir.path(), SMALL_SEGMENT_BYTES), WalOptions::default()).unwrap();
    let runtime = task_runtime();
    let tasks: Vec<_> = (0..64)
        .map(|w| {
            let mut writer = wal.async_writer();
            runtime.spawn(async move {
                let mut seqs = Vec::new();
                for n in 0..10 {
                    seqs.push(writer.append(format!("t{w}-{n}").as_bytes(), &[b'v'; 30]).await.unwrap());
                }
                seqs
            })
        })
        .collect();
    let mut seqs: Vec<u64> = tasks.into_iter().flat_map(|t| runtime.block_on(t).unwrap()).collect();
    seqs.sort_unstable();
    assert_eq!(seqs, (1..=640).collect::<Vec<u64>>());
    let stats = wal.stats();
    assert!(stats.persists_ok < 640, "64 concurrent tasks share syncs: {} syncs for 640 records", stats.persists_ok);
    drop(wal);
    let (_, recovered) = Wal::open(real_backend(dir.path(), SMALL_SEGMENT_BYTES), WalOptions::default()).unwrap();
    assert_eq!(recovered.records.len(), 640);
    let mut keys = keys_of(&recovered.records);
    keys.sort();
    let mut expected: Vec<String> = (0..64).flat_map(|w| (0..10).map(move |n| format!("t{w}-{n}"))).collect();
    expected.sort();
    assert_eq!(keys, expected);
}

#[test]
fn an_async_writer_sees_a_failed_sync_and_the_log_stays_stopped() {
    let fs = FaultFs::new(512);
    let (wal, _) = Wal::open(fault_backend(&fs, 1 << 16), WalOptions::default()).unwrap();
    let runtime = task_runtime();
    let mut writer = wal.async_writer();
    runtime.block_on(async {
        assert_eq!(writer.append(b"durable", b"1").await, Ok(1));
        fs.fail_sync_of(&first_segment(), 1).unwrap();
        assert_eq!(writer.append(b"unknown", b"2").await, Err(WalError::Failed(SyncError::Io)));
        assert_eq!(writer.append(b"refused", b"3").await, Err(WalError::Failed(SyncError::Io)));
    });
    drop(wal);
    let (_, recovered) = Wal::open(fault_backend(&fs, 1 << 16), WalOptions::default()).unwrap();
    assert_eq!(keys_of(&recovered.records), vec!["durable"]);
}

#[test]
fn async_writers_learn_the_log_is_closed_when_the_driver_dies() {
    let (wal, _) = Wal::open(Box::new(PanickingBackend), WalOptions::default()).unwrap();
    let runtime = task_runtime();
    let tasks: Vec<_> = (0..4)
        .map(|w| {
            let mut writer = wal.async_writer();
            runtime.spawn(async move { writer.append(format!("t{w}").as_bytes(), b"v").await })
        })
        .collect();
    for task in tasks {
        assert_eq!(runtime.block_on(task).unwrap(), Err(WalError::Closed));
    }
    let mut late = wal.async_writer();
    assert_eq!(runtime.block_on(late.append(b"late", b"v")), Err(WalError::Closed));
}

#[test]
fn the_inline_file_backend_answers_a_batch_before_it_syncs_the_next() {
    // Appends that arrive while a sync runs form the next batch. The inline backend
    // blocks the driver in each sync, so the driver must tell the finished batch OK
    // *before* it starts the next sync, or those writers would wait out two syncs. The
    // gate holds the second sync: the first writer's OK must arrive while it is held.
    let fs = FaultFs::new(512);
    let (wal, _) = Wal::open(fault_backend(&fs, 1 << 16), WalOptions::default()).unwrap();
    let (mut first, mut second) = (wal.writer(), wal.writer());
    // The first segment exists once the log is open; a spare being zero-filled passes.
    fs.close_sync_gate_of(&first_segment()).unwrap();
    // However this test ends, the gate opens, so the log can close.
    struct OpenGateOnDrop<'a>(&'a FaultFs);
    impl Drop for OpenGateOnDrop<'_> {
        fn drop(&mut self) {
            self.0.open_sync_gate();
        }
    }
    let _open_at_end = OpenGateOnDrop(&fs);
    let (first_done, first_outcome) = std::sync::mpsc::channel();
    std::thread::spawn(move || first_done.send(first.append(b"first", b"1")));
    wait_until(|| fs.syncs_at_gate() == 1);
    let second_thread = std::thread::spawn(move || second.append(b"second", b"2"));
    // Give the second append time to reach the driver's channel while sync 1 is held
    // (were it later, it would form its batch after the first OK in any order).
    std::thread::sleep(std::time::Duration::from_millis(100));
    fs.allow_syncs(1);
    let outcome = first_outcome.recv_timeout(std::time::Duration::from_secs(20));
    fs.open_sync_gate();
    assert_eq!(outcome, Ok(Ok(1)), "the first batch's OK waited for the second batch's sync");
    assert_eq!(second_thread.join().unwrap(), Ok(2));
}

/// Polls `condition` until it holds (a test helper for states another thread reaches).
fn wait_until(condition: impl Fn() -> bool) {
    let started = std::time::Instant::now();
    while !condition() {
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "the condition never came true");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Two sync threads and no cohort hold: batches start beside a running sync as soon as
/// they may, which is what these tests hold at the gate (with the hold, writers held up
/// by a slow sync would all ride the next one).
fn pooled_backend(fs: &FaultFs, segment_bytes: u64) -> Box<FileBackend> {
    Box::new(fault_backend(fs, segment_bytes).with_tuning(Tuning { inflight_max: Some(2), cohort_hold_percent: Some(0), ..Tuning::default() }))
}

/// Opens the gate however a test ends, so the log can close.
struct OpenGateOnDrop<'a>(&'a FaultFs);

impl Drop for OpenGateOnDrop<'_> {
    fn drop(&mut self) {
        self.0.open_sync_gate();
    }
}

/// Starts `writers` thread writers that append `each` records (`w<w>-<n>`) until one
/// fails, collecting acknowledged keys and the errors that ended them.
fn spawn_writers(
    wal: &Wal,
    writers: usize,
    each: usize,
) -> (Vec<std::thread::JoinHandle<Option<WalError>>>, Arc<std::sync::Mutex<Vec<(u64, String)>>>) {
    let acked = Arc::new(std::sync::Mutex::new(Vec::new()));
    let handles = (0..writers)
        .map(|w| {
            let (mut writer, acked) = (wal.writer(), Arc::clone(&acked));
            std::thread::spawn(move || {
                for n in 0..each {
                    let key = format!("w{w}-{n}");
                    match writer.append(key.as_bytes(), &[b'v'; 50]) {
                        Ok(seq) => acked.lock().unwrap().push((seq, key)),
                        Err(error) => return Some(error),
                    }
                }
                None
            })
        })
        .collect();
    (handles, acked)
}

#[test]
fn with_sync_threads_two_syncs_run_at_once_and_every_ack_survives_a_power_cut() {
    let fs = FaultFs::new(512);
    let (wal, _) = Wal::open(pooled_backend(&fs, 1 << 20), WalOptions::default()).unwrap();
    assert_eq!(wal.stats().persists_ok, 0);
    fs.close_sync_gate_of(&first_segment()).unwrap();
    let _open_at_end = OpenGateOnDrop(&fs);
    let (handles, acked) = spawn_writers(&wal, 16, 30);
    // The first record syncs alone, inline; the batch of everyone who queued behind it
    // goes to a sync thread. Once batches of two or more form while one is held, the
    // next runs beside it on the other thread: two syncs wait at the gate at once.
    // Until then, one sync at a time is let through.
    let started = std::time::Instant::now();
    while fs.syncs_at_gate() < 2 {
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "two syncs never ran at once");
        std::thread::sleep(std::time::Duration::from_millis(20));
        if fs.syncs_at_gate() == 1 {
            fs.allow_syncs(1);
        }
    }
    fs.open_sync_gate();
    for handle in handles {
        assert_eq!(handle.join().unwrap(), None);
    }
    let mut seqs: Vec<u64> = acked.lock().unwrap().iter().map(|(seq, _)| *seq).collect();
    seqs.sort_unstable();
    assert_eq!(seqs, (1..=480).collect::<Vec<u64>>(), "every seq acknowledged once");
    // The power goes before the log is closed: only what the syncs made durable stays.
    fs.cut_power(CutMode::Tear, 7);
    drop(wal);
    fs.restart();
    let (_wal, recovered) = Wal::open(pooled_backend(&fs, 1 << 20), WalOptions::default()).unwrap();
    let found: std::collections::HashSet<String> = keys_of(&recovered.records).into_iter().collect();
    let acked = acked.lock().unwrap();
    let lost: Vec<&String> = acked.iter().map(|(_, key)| key).filter(|key| !found.contains(*key)).collect();
    assert!(lost.is_empty(), "acknowledged and lost: {lost:?}");
}

#[test]
fn with_sync_threads_a_failed_sync_fails_its_batch_and_every_later_one() {
    for failing in [3u64, 6, 9] {
        let fs = FaultFs::new(512);
        let (wal, _) = Wal::open(pooled_backend(&fs, 1 << 20), WalOptions::default()).unwrap();
        fs.fail_sync_of(&first_segment(), failing).unwrap();
        let (handles, acked) = spawn_writers(&wal, 12, 200);
        for handle in handles {
            // Every writer runs into the failure: the log takes nothing after it.
            assert_eq!(handle.join().unwrap(), Some(WalError::Failed(SyncError::Io)), "failing sync {failing}");
        }
        let mut seqs: Vec<u64> = acked.lock().unwrap().iter().map(|(seq, _)| *seq).collect();
        seqs.sort_unstable();
        // Acknowledgements stop at the failed batch: what was told OK has no hole.
        assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<u64>>(), "failing sync {failing}");
        let mut late = wal.writer();
        assert_eq!(late.append(b"late", b"x"), Err(WalError::Failed(SyncError::Io)));
        fs.cut_power(CutMode::DropUnsynced, 1);
        drop(wal);
        fs.restart();
        let (_wal, recovered) = Wal::open(pooled_backend(&fs, 1 << 20), WalOptions::default()).unwrap();
        let found: std::collections::HashSet<String> = keys_of(&recovered.records).into_iter().collect();
        for (_, key) in acked.lock().unwrap().iter() {
            assert!(found.contains(key), "failing sync {failing}: {key} was acknowledged and lost");
        }
    }
}

#[test]
fn with_sync_threads_records_on_real_files_survive_a_reopen_in_seq_order() {
    let dir = tempfile::tempdir().unwrap();
    let backend = || real_backend(dir.path(), SMALL_SEGMENT_BYTES).with_sync_threads(2);
    let (wal, _) = Wal::open(Box::new(backend()), WalOptions::default()).unwrap();
    let (handles, acked) = spawn_writers(&wal, 8, 40);
    for handle in handles {
        assert_eq!(handle.join().unwrap(), None);
    }
    assert_eq!(acked.lock().unwrap().len(), 320);
    drop(wal);
    let (_wal, recovered) = Wal::open(Box::new(backend()), WalOptions::default()).unwrap();
    assert_eq!(recovered.records.len(), 320);
    assert!(recovered.records.windows(2).all(|w| w[1].seq == w[0].seq + 1));
}

#[test]
fn a_format_file_that_came_back_empty_is_named_and_an_empty_log_starts_over() {
    // A log whose files came back empty after a power cut: FORMAT and its segment
    // exist, with no bytes that reached the disk.
    let dir = tempfile::tempdir().unwrap();
    drop(Wal::open(real_backend(dir.path(), 8192), WalOptions::default()).unwrap());
    std::fs::write(dir.path().join(super::FORMAT_FILE_NAME), b"").unwrap();
    for name in RealFs.list(dir.path()).unwrap().into_iter().filter(|n| n.starts_with("wal-")) {
        std::fs::write(dir.path().join(name), vec![0u8; 8192]).unwrap();
    }
    // Nothing was ever durable: it opens as the new log it is, and FORMAT says so again.
    let (wal, recovered) = Wal::open(real_backend(dir.path(), 8192), WalOptions::default()).unwrap();
    assert!(recovered.records.is_empty());
    let note = recovered.repaired.unwrap();
    assert!(note.contains("FORMAT was empty and no segment held a byte") && note.contains("in the tiny format"), "{note}");
    let mut writer = wal.writer();
    writer.append(b"k", b"v").unwrap();
    drop(wal);
    assert!(std::fs::read_to_string(dir.path().join(super::FORMAT_FILE_NAME)).unwrap().starts_with("tiny\n"));
    // With records in its segments, an empty FORMAT cannot tell their format: refused,
    // naming the format this log is opened with and what to do.
    std::fs::write(dir.path().join(super::FORMAT_FILE_NAME), b"").unwrap();
    let error = Wal::open(real_backend(dir.path(), 8192), WalOptions::default()).err().unwrap();
    let WalError::Open(message) = error else { panic!("{error:?}") };
    assert!(message.contains("FORMAT is empty"), "{message}");
    assert!(message.contains("in the tiny format") && !message.contains("the  format"), "{message}");
}
