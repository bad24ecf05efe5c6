//! The other direction: logs that walab's encoder writes are recovered by the real
//! LevelDB 1.23 (plyvel) and RocksDB 7.8. Each test makes an empty database with the
//! real library, swaps its log file for one walab wrote, reopens it with the library
//! and compares every key and value with the state the batches should produce.
//!
//! These need Debian's python3-plyvel, librocksdb-dev, rocksdb-tools and g++, which CI
//! does not install, so they are ignored by default:
//!
//!     cargo test -p walab --test real_libraries -- --ignored

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use walab_core::codec::leveldb::{scan_log, HeaderKind, LogFormat, LogSegment, LogWriter, BLOCK_BYTES};
use walab_core::scan::StopReason;
use walab_core::codec::write_batch::{BatchOp, WriteBatch};

const IGNORE_REASON: &str = "needs python3-plyvel, librocksdb-dev, rocksdb-tools and g++";

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../core/tests/fixtures")
}

fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("walab-real-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn run(command: &mut Command) -> String {
    let output = command.output().unwrap_or_else(|error| panic!("{command:?}: {error} ({IGNORE_REASON})"));
    assert!(output.status.success(), "{command:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap()
}

fn rocksdb_writer(dir: &Path) -> PathBuf {
    let binary = dir.join("rocksdb_writer");
    run(Command::new("g++")
        .args(["-std=c++17", "-O1"])
        .arg(fixtures().join("rocksdb_writer.cc"))
        .args(["-lrocksdb", "-o"])
        .arg(&binary));
    binary
}

/// The only `*.log` in a fresh database directory.
fn the_log(dir: &Path) -> PathBuf {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "log"))
        .collect();
    assert_eq!(logs.len(), 1, "one log in {dir:?}");
    logs.pop().unwrap()
}

fn log_number(log: &Path) -> u32 {
    log.file_stem().unwrap().to_str().unwrap().parse().unwrap()
}

fn put(key: &str, value: &[u8]) -> BatchOp {
    BatchOp::Put { column_family: 0, key: key.into(), value: value.to_vec() }
}

fn del(key: &str) -> BatchOp {
    BatchOp::Delete { column_family: 0, key: key.into() }
}

/// Batches numbered from seq 1, one sequence number per data entry.
fn numbered(batches: Vec<Vec<BatchOp>>) -> Vec<WriteBatch> {
    let mut seq = 1;
    batches
        .into_iter()
        .map(|ops| {
            let batch = WriteBatch::new(seq, ops);
            seq = batch.next_seq();
            batch
        })
        .collect()
}

/// What the database holds after these batches (merge = concatenation, as the C++
/// program's merge operator does).
fn state(batches: &[WriteBatch]) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut state = BTreeMap::new();
    for op in batches.iter().flat_map(|batch| &batch.ops) {
        match op {
            BatchOp::Put { key, value, .. } => {
                state.insert(key.clone(), value.clone());
            }
            BatchOp::Delete { key, .. } | BatchOp::SingleDelete { key, .. } => {
                state.remove(key);
            }
            BatchOp::Merge { key, value, .. } => state.entry(key.clone()).or_default().extend_from_slice(value),
            BatchOp::RangeDelete { begin_key, end_key, .. } => {
                state.retain(|key, _| !(key >= begin_key && key < end_key));
            }
            _ => {}
        }
    }
    state
}

/// Parses `[family<TAB>]key<TAB>value-hex` lines into the default family's state.
fn parse_dump(text: &str) -> BTreeMap<Vec<u8>, Vec<u8>> {
    text.lines()
        .map(|line| {
            let fields: Vec<&str> = line.split('\t').collect();
            let (key, value) = match fields.as_slice() {
                [key, value] => (key, value),
                ["default", key, value] => (key, value),
                other => panic!("unexpected line {other:?}"),
            };
            let value = (0..value.len()).step_by(2).map(|at| u8::from_str_radix(&value[at..at + 2], 16).unwrap()).collect();
            (key.as_bytes().to_vec(), value)
        })
        .collect()
}

fn big_value() -> Vec<u8> {
    (0..70_000u32).map(|index| b'a' + (index % 26) as u8).collect()
}

#[test]
#[ignore = "needs python3-plyvel, librocksdb-dev, rocksdb-tools and g++"]
fn leveldb_recovers_a_log_walab_wrote() {
    let dir = scratch("leveldb");
    let db = dir.join("db");
    let script = fixtures().join("leveldb_writer.py");
    run(Command::new("/usr/bin/python3").arg(&script).arg("init").arg(&db));
    let batches = numbered(vec![
        vec![put("user:1", b"alice")],
        vec![put("user:2", b"bob"), put("order:9", b"book")],
        vec![del("user:2")],
        vec![put("big", &big_value())],
        vec![put("user:3", b"carol"), del("user:1")],
    ]);
    let mut writer = LogWriter::new(HeaderKind::Legacy);
    for batch in &batches {
        writer.add_batch(batch);
    }
    std::fs::write(the_log(&db), writer.bytes()).unwrap();
    let dump = run(Command::new("/usr/bin/python3").arg(&script).arg("read").arg(&db));
    assert_eq!(parse_dump(&dump), state(&batches));
}

fn rocksdb_batches() -> Vec<WriteBatch> {
    numbered(vec![
        vec![put("user:1", b"alice"), put("user:2", b"bob")],
        vec![del("user:1"), BatchOp::SingleDelete { column_family: 0, key: b"user:2".to_vec() }],
        vec![BatchOp::Merge { column_family: 0, key: b"tags".to_vec(), value: b"red".to_vec() }],
        vec![BatchOp::Merge { column_family: 0, key: b"tags".to_vec(), value: b",blue".to_vec() }],
        vec![put("a:1", b"x"), put("a:2", b"y"), put("b:1", b"z")],
        vec![
            BatchOp::RangeDelete { column_family: 0, begin_key: b"a:".to_vec(), end_key: b"a:~".to_vec() },
            BatchOp::LogData { blob: b"walab was here".to_vec() },
        ],
        vec![put("big", &big_value())],
        vec![put("user:9", b"last")],
    ])
}

#[test]
#[ignore = "needs python3-plyvel, librocksdb-dev, rocksdb-tools and g++"]
fn rocksdb_recovers_a_legacy_log_walab_wrote() {
    let dir = scratch("rocksdb-legacy");
    let tool = rocksdb_writer(&dir);
    let db = dir.join("db");
    run(Command::new(&tool).arg("init").arg(&db));
    let batches = rocksdb_batches();
    let mut writer = LogWriter::new(HeaderKind::Legacy);
    for batch in &batches {
        writer.add_batch(batch);
    }
    let log = the_log(&db);
    std::fs::write(&log, writer.bytes()).unwrap();
    // RocksDB's own WAL dumper reads every batch, with its seq and count.
    let dump = run(Command::new("ldb").arg("dump_wal").arg(format!("--walfile={}", log.display())));
    let seqs: Vec<u64> = dump.lines().map(|line| line.split(',').next().unwrap().parse().unwrap()).collect();
    assert_eq!(seqs, batches.iter().map(|batch| batch.seq).collect::<Vec<_>>());
    let dump = run(Command::new(&tool).arg("read").arg(&db));
    assert_eq!(parse_dump(&dump), state(&batches));
}

#[test]
#[ignore = "needs python3-plyvel, librocksdb-dev, rocksdb-tools and g++"]
fn rocksdb_recovers_a_recycled_log_walab_wrote_and_ignores_the_old_tail() {
    let dir = scratch("rocksdb-recycled");
    let tool = rocksdb_writer(&dir);
    let db = dir.join("db");
    run(Command::new(&tool).arg("init").arg(&db).arg("recycle"));
    let log = the_log(&db);
    let number = log_number(&log);
    // The file's earlier life: log number - 3, with records that would overwrite
    // user:1 if RocksDB replayed them. The old file ends inside the block where the new
    // log ends, and the new log ends inside an old record, so RocksDB meets a torn old
    // record and then the end of the file. (Where the new log ends exactly at an intact
    // old record, RocksDB 7.8's recovery in kSkipAnyCorruptedRecords mode spins on that
    // record forever: see rocksdb-7.8-recycled-aligned in the fixtures.)
    let mut old = LogWriter::new(HeaderKind::Recyclable { log_number: number - 3 });
    for seq in 1..=40 {
        old.add_batch(&WriteBatch::new(seq, vec![put("user:1", &[b'o'; 2000])]));
    }
    let batches = rocksdb_batches();
    let mut new = LogWriter::new(HeaderKind::Recyclable { log_number: number });
    for batch in &batches {
        new.add_batch(batch);
    }
    let mut file = old.into_bytes();
    let new_len = new.bytes().len();
    assert!(file.len() > new_len, "the old tail is still there");
    assert_eq!(file.len() / BLOCK_BYTES, new_len / BLOCK_BYTES, "the old tail ends in the new log's last block");
    file[..new_len].copy_from_slice(new.bytes());
    let ours = scan_log(LogFormat::RocksDb, &[LogSegment { bytes: &file, log_number: Some(number) }], 0);
    assert_eq!(ours.records.len(), batches.len());
    assert_ne!(ours.stop.reason, StopReason::OldRecord, "the new log must end inside an old record");
    std::fs::write(&log, &file).unwrap();
    let dump = run(Command::new("timeout").arg("60").arg(&tool).arg("read").arg(&db).arg("recycle"));
    assert_eq!(parse_dump(&dump), state(&batches));
}
