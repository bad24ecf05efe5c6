//! `walab inspect` run as a user runs it: the built binary on real files.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use expect_test::expect;
use serde_json::Value;
use walab_core::codec::stream::StreamWriter;
use walab_core::tiny_store::WRITES;

fn walab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_walab")).args(args).output().expect("the walab binary runs")
}

fn fixture(path: &str) -> String {
    format!("{}/../core/tests/fixtures/{path}", env!("CARGO_MANIFEST_DIR"))
}

/// A fresh directory for this test's files.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("walab-inspect-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

fn json_lines(output: &Output) -> Vec<Value> {
    stdout(output).lines().map(|line| serde_json::from_str(line).expect("every stdout line is JSON")).collect()
}

/// A tiny-store segment holding these writes, zero-filled to `segment_bytes`.
fn tiny_segment(ids: std::ops::RangeInclusive<usize>, segment_bytes: usize) -> Vec<u8> {
    let mut bytes: Vec<u8> = WRITES[ids.start() - 1..*ids.end()].iter().flat_map(|write| write.record()).collect();
    bytes.resize(segment_bytes, 0);
    bytes
}

fn write(path: &Path, bytes: &[u8]) -> String {
    std::fs::write(path, bytes).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn tiny_wal1_prints_four_records_and_a_zero_stop() {
    let dir = scratch("wal1");
    let file = write(&dir.join("wal-1"), &tiny_segment(1..=4, 256));
    let output = walab(&["inspect", &file, "--json"]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(stderr(&output), "");
    expect![[r#"
        {"offset":0,"seq":1,"ops":[{"op":"put","key":"user:1","value":"alice","value_len":5}]}
        {"offset":29,"seq":2,"ops":[{"op":"put","key":"user:2","value":"bob","value_len":3}]}
        {"offset":56,"seq":3,"ops":[{"op":"put","key":"order:9","value":"book","value_len":4}]}
        {"offset":85,"seq":4,"ops":[{"op":"put","key":"user:3","value":"carol","value_len":5}]}
        {"stop":"zero","offset":114}
    "#]]
    .assert_eq(&stdout(&output));

    let table = walab(&["inspect", &file]);
    assert_eq!(table.status.code(), Some(0));
    expect![[r#"
        offset  seq  op   key      value
             0    1  put  user:1   alice
            29    2  put  user:2   bob
            56    3  put  order:9  book
            85    4  put  user:3   carol
        stop: zero at byte 114: all-zero header: nothing was written past here
    "#]]
    .assert_eq(&stdout(&table));
}

#[test]
fn tiny_torn_write_exits_1_with_one_line_naming_the_file() {
    // Part 7, case 1: wal-6's unit 3 (bytes 96..128) never reached the media.
    let dir = scratch("torn");
    let mut bytes = tiny_segment(21..=24, 128);
    bytes[96..].fill(0);
    let file = write(&dir.join("wal-6"), &bytes);
    let output = walab(&["inspect", &file, "--json"]);
    assert_eq!(output.status.code(), Some(1));
    let lines = json_lines(&output);
    let seqs: Vec<u64> = lines[..lines.len() - 1].iter().map(|line| line["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, [21, 22, 23]);
    assert_eq!(lines.last().unwrap()["stop"], "checksum");
    let torn_offset = WRITES[20..23].iter().map(|write| write.record().len() as u64).sum::<u64>();
    assert_eq!(lines.last().unwrap()["offset"], torn_offset);
    let message = stderr(&output);
    assert_eq!(message.lines().count(), 1);
    assert!(message.starts_with(&format!("walab: {file}: scan stopped at byte {torn_offset}: checksum mismatch")));
}

#[test]
fn unreadable_file_and_bad_flags_exit_2() {
    let missing = walab(&["inspect", "/nonexistent/wal-1"]);
    assert_eq!(missing.status.code(), Some(2));
    assert_eq!(stdout(&missing), "");
    assert_eq!(stderr(&missing), "walab: /nonexistent/wal-1: cannot read: no such file or directory\n");
    let misplaced = walab(&["inspect", "x.log", "--format", "leveldb", "--log-number", "3"]);
    assert_eq!(misplaced.status.code(), Some(2));
    assert_eq!(stderr(&misplaced), "walab: x.log: --log-number applies only to --format rocksdb\n");
    let unknown = walab(&["inspect", "x.log", "--format", "sqlite"]);
    assert_eq!(unknown.status.code(), Some(2));
}

/// The batches `walab inspect --json` printed, without offsets, against the fixture's
/// record of what the real library was asked to write (values over 64 bytes are left
/// out of inspect's output, so out of the comparison too).
fn assert_prints_what_was_written(output: &Output, dir: &str) {
    let mut printed = json_lines(output);
    printed.pop();
    for line in &mut printed {
        line.as_object_mut().unwrap().remove("offset");
    }
    let text = std::fs::read_to_string(fixture(&format!("{dir}/expected.jsonl"))).unwrap();
    let mut expected: Vec<Value> = text.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    for line in &mut expected {
        for op in line["ops"].as_array_mut().unwrap() {
            if op["value_len"].as_u64().is_some_and(|len| len > 64) {
                op.as_object_mut().unwrap().remove("value");
            }
        }
    }
    assert_eq!(printed, expected);
}

#[test]
fn leveldb_log_written_by_plyvel() {
    let output = walab(&["inspect", &fixture("leveldb-1.23/000003.log"), "--format", "leveldb", "--json"]);
    assert_eq!(output.status.code(), Some(0));
    assert_prints_what_was_written(&output, "leveldb-1.23");
    let stop = json_lines(&output).pop().unwrap();
    assert_eq!(stop["stop"], "end");
    assert_eq!(stop["offset"], std::fs::metadata(fixture("leveldb-1.23/000003.log")).unwrap().len());
}

#[test]
fn rocksdb_legacy_log() {
    let output = walab(&["inspect", &fixture("rocksdb-7.8-legacy/000004.log"), "--format", "rocksdb", "--json"]);
    assert_eq!(output.status.code(), Some(0));
    assert_prints_what_was_written(&output, "rocksdb-7.8-legacy");
}

#[test]
fn rocksdb_recycled_log_stops_at_the_old_record() {
    let log = fixture("rocksdb-7.8-recycled-aligned/000010.log");
    let output = walab(&["inspect", &log, "--format", "rocksdb", "--json"]);
    assert_eq!(output.status.code(), Some(1));
    assert_prints_what_was_written(&output, "rocksdb-7.8-recycled-aligned");
    let stop = json_lines(&output).pop().unwrap();
    assert_eq!(stop["stop"], "old-record");
    assert!(stderr(&output).contains("old record: log number 4, this log is 10"));

    // The log number comes from the file name: the same bytes named 000011.log are all
    // old records, unless --log-number says otherwise.
    let dir = scratch("renamed");
    let renamed = write(&dir.join("000011.log"), &std::fs::read(&log).unwrap());
    let output = walab(&["inspect", &renamed, "--format", "rocksdb", "--json"]);
    assert_eq!(json_lines(&output), [serde_json::json!({"stop": "old-record", "offset": 0})]);
    let output = walab(&["inspect", &renamed, "--format", "rocksdb", "--log-number", "10", "--json"]);
    assert_prints_what_was_written(&output, "rocksdb-7.8-recycled-aligned");
}

#[test]
fn rocksdb_recycled_log_with_an_unaligned_old_tail() {
    let output = walab(&["inspect", &fixture("rocksdb-7.8-recycled/000010.log"), "--format", "rocksdb", "--json"]);
    assert_eq!(output.status.code(), Some(1));
    assert_prints_what_was_written(&output, "rocksdb-7.8-recycled");
}

#[test]
fn stream_frames() {
    let dir = scratch("stream");
    let mut writer = StreamWriter::new(4096);
    writer.add_batch(vec![b"a".to_vec(), b"bb".to_vec()]);
    writer.add_batch(vec![b"ccc".to_vec()]);
    let mut bytes = writer.into_bytes();
    bytes.resize(bytes.len() + 40, 0);
    let file = write(&dir.join("wal.bin"), &bytes);
    let output = walab(&["inspect", &file, "--format", "stream", "--json"]);
    assert_eq!(output.status.code(), Some(0));
    expect![[r#"
        {"offset":0,"frame_offset":4096,"length":9,"records":2}
        {"offset":25,"frame_offset":4121,"length":8,"records":1}
        {"stop":"zero","offset":49}
    "#]]
    .assert_eq(&stdout(&output));
}

#[test]
fn compressed_rocksdb_log_is_named_as_unsupported() {
    // What RocksDB 7.8 writes first when opened with wal_compression = kZSTD: a type-9
    // record whose 4-byte payload names the compression (7 = zstd).
    use walab_core::checksum::{crc32c, mask_crc32c};
    let payload = [7u8, 0, 0, 0];
    let mut bytes = mask_crc32c(crc32c(&[&[9], &payload])).to_le_bytes().to_vec();
    bytes.extend([4, 0, 9]);
    bytes.extend(payload);
    let dir = scratch("compressed");
    let file = write(&dir.join("000004.log"), &bytes);
    let output = walab(&["inspect", &file, "--format", "rocksdb"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("wal_compression"), "{}", stderr(&output));
}
