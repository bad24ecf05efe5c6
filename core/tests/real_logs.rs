//! Logs written by the real LevelDB 1.23 and RocksDB 7.8 (see fixtures/make_fixtures.sh)
//! decode to exactly the write batches their writers recorded in `expected.jsonl`, and
//! walab's encoder, given those batches, writes the very same bytes.

use serde_json::{json, Value};
use walab_core::codec::leveldb::{scan_log, HeaderKind, LogFormat, LogScan, LogSegment, LogWriter};
use walab_core::codec::write_batch::{BatchOp, WriteBatch};
use walab_core::scan::{ScanCheck, StopReason};

fn fixture(path: &str) -> Vec<u8> {
    let full = format!("{}/tests/fixtures/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&full).unwrap_or_else(|error| panic!("{full}: {error}"))
}

fn expected(dir: &str) -> Vec<Value> {
    let text = String::from_utf8(fixture(&format!("{dir}/expected.jsonl"))).unwrap();
    text.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("the fixtures write UTF-8 keys and values")
}

/// The test's own rendering of a batch entry, in the fixture writers' shape.
fn op_json(op: &BatchOp) -> Value {
    let with_cf = |mut value: Value, column_family: u32| {
        if column_family != 0 {
            value["cf"] = json!(column_family);
        }
        value
    };
    match op {
        BatchOp::Put { column_family, key, value } => with_cf(
            json!({"op": "put", "key": text(key), "value": text(value), "value_len": value.len()}),
            *column_family,
        ),
        BatchOp::Delete { column_family, key } => with_cf(json!({"op": "del", "key": text(key)}), *column_family),
        BatchOp::SingleDelete { column_family, key } => {
            with_cf(json!({"op": "single_del", "key": text(key)}), *column_family)
        }
        BatchOp::Merge { column_family, key, value } => with_cf(
            json!({"op": "merge", "key": text(key), "value": text(value), "value_len": value.len()}),
            *column_family,
        ),
        BatchOp::RangeDelete { column_family, begin_key, end_key } => with_cf(
            json!({"op": "range_del", "begin": text(begin_key), "end": text(end_key)}),
            *column_family,
        ),
        BatchOp::LogData { blob } => json!({"op": "log_data", "blob": text(blob)}),
        other => panic!("the fixtures do not write {other:?}"),
    }
}

fn decoded(scan: &LogScan) -> Vec<Value> {
    scan.records
        .iter()
        .map(|record| json!({"seq": record.batch.seq, "ops": record.batch.ops.iter().map(op_json).collect::<Vec<_>>()}))
        .collect()
}

fn scan_fixture(format: LogFormat, path: &str, log_number: Option<u32>) -> LogScan {
    let bytes = fixture(path);
    scan_log(format, &[LogSegment { bytes: &bytes, log_number }], 0)
}

#[test]
fn leveldb_log_decodes_to_what_plyvel_wrote() {
    let scan = scan_fixture(LogFormat::LevelDb, "leveldb-1.23/000003.log", None);
    assert_eq!(decoded(&scan), expected("leveldb-1.23"));
    assert_eq!(scan.stop.reason, StopReason::End);
    assert_eq!(scan.stop.offset, fixture("leveldb-1.23/000003.log").len() as u64);
    // The 75,000-byte value spans three blocks: FIRST, MIDDLE, LAST.
    let big = scan.records.iter().find(|record| record.fragments > 1).expect("a fragmented record");
    assert_eq!(big.fragments, 3);
    assert_eq!(scan.next_seq, 9);
}

#[test]
fn rocksdb_legacy_log_decodes_to_what_rocksdb_wrote() {
    let scan = scan_fixture(LogFormat::RocksDb, "rocksdb-7.8-legacy/000004.log", Some(4));
    assert_eq!(decoded(&scan), expected("rocksdb-7.8-legacy"));
    assert_eq!(scan.stop.reason, StopReason::End);
    assert!(scan.records.iter().all(|record| !record.recyclable));
    // The same bytes read as LevelDB: every header is legacy, but the column-family and
    // RocksDB-only entries decode too (the batch format is shared).
    let as_leveldb = scan_fixture(LogFormat::LevelDb, "rocksdb-7.8-legacy/000004.log", None);
    assert_eq!(as_leveldb.records.len(), scan.records.len());
}

#[test]
fn rocksdb_recycled_log_stops_at_the_old_log() {
    let scan = scan_fixture(LogFormat::RocksDb, "rocksdb-7.8-recycled-aligned/000010.log", Some(10));
    assert_eq!(decoded(&scan), expected("rocksdb-7.8-recycled-aligned"));
    assert!(scan.records.iter().all(|record| record.recyclable));
    assert_eq!(scan.stop.reason, StopReason::OldRecord);
    assert_eq!(scan.stop.offset, 2 * 233);
    let old = scan.checks.iter().find_map(|check| match check {
        ScanCheck::LogNumber { expected, found, ok: false, .. } => Some((*expected, *found)),
        _ => None,
    });
    assert_eq!(old, Some((10, 4)));
}

#[test]
fn rocksdb_recycled_log_with_an_unaligned_tail_keeps_the_new_records() {
    let scan = scan_fixture(LogFormat::RocksDb, "rocksdb-7.8-recycled/000010.log", Some(10));
    assert_eq!(decoded(&scan), expected("rocksdb-7.8-recycled"));
    // The new tail ends inside an old record: whatever the bytes there say, the scan
    // stops without accepting anything more.
    assert!(!scan.stop.reason.is_clean());
    assert_eq!(scan.stop.offset, scan.records.last().map(|record| record.offset + record.len).unwrap());
}

/// The batch a fixture writer recorded, rebuilt from its JSON line.
fn batch_from_json(line: &Value) -> WriteBatch {
    let bytes = |field: &str, op: &Value| op[field].as_str().unwrap().as_bytes().to_vec();
    let ops = line["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|op| {
            let column_family = op["cf"].as_u64().unwrap_or(0) as u32;
            match op["op"].as_str().unwrap() {
                "put" => BatchOp::Put { column_family, key: bytes("key", op), value: bytes("value", op) },
                "del" => BatchOp::Delete { column_family, key: bytes("key", op) },
                "single_del" => BatchOp::SingleDelete { column_family, key: bytes("key", op) },
                "merge" => BatchOp::Merge { column_family, key: bytes("key", op), value: bytes("value", op) },
                "range_del" => {
                    BatchOp::RangeDelete { column_family, begin_key: bytes("begin", op), end_key: bytes("end", op) }
                }
                "log_data" => BatchOp::LogData { blob: bytes("blob", op) },
                other => panic!("the fixtures do not write {other}"),
            }
        })
        .collect();
    WriteBatch::new(line["seq"].as_u64().unwrap(), ops)
}

/// walab's writer, given the batches the real library was asked to write, produces the
/// library's bytes exactly (for a recycled file: up to where the old log shows through).
/// Returns how many bytes that is.
fn assert_encoder_matches(dir: &str, log: &str, kind: HeaderKind) -> usize {
    let mut writer = LogWriter::new(kind);
    for line in expected(dir) {
        writer.add_batch(&batch_from_json(&line));
    }
    let real = fixture(&format!("{dir}/{log}"));
    let ours = writer.into_bytes();
    assert!(ours.len() <= real.len());
    assert!(ours == real[..ours.len()], "{dir}: walab's encoding differs from the real log");
    ours.len()
}

#[test]
fn encoder_writes_the_real_libraries_bytes() {
    let whole = assert_encoder_matches("leveldb-1.23", "000003.log", HeaderKind::Legacy);
    assert_eq!(whole, fixture("leveldb-1.23/000003.log").len());
    let whole = assert_encoder_matches("rocksdb-7.8-legacy", "000004.log", HeaderKind::Legacy);
    assert_eq!(whole, fixture("rocksdb-7.8-legacy/000004.log").len());
    let new_log = assert_encoder_matches("rocksdb-7.8-recycled-aligned", "000010.log", HeaderKind::Recyclable { log_number: 10 });
    assert_eq!(new_log, 2 * 233);
    assert_encoder_matches("rocksdb-7.8-recycled", "000010.log", HeaderKind::Recyclable { log_number: 10 });
}
