//! The LevelDB/RocksDB scan on arbitrary bytes (the first byte picks the format and the
//! expected log number): it never panics, accepted records lie inside the file in order,
//! and every accepted batch re-encodes to a batch that decodes back to itself.
#![no_main]
use libfuzzer_sys::fuzz_target;
use walab_core::codec::leveldb::{scan_log, LogFormat, LogSegment};
use walab_core::codec::write_batch::{decode_batch, encode_batch};

fuzz_target!(|data: &[u8]| {
    let Some((&selector, bytes)) = data.split_first() else { return };
    let format = if selector & 1 == 0 { LogFormat::LevelDb } else { LogFormat::RocksDb };
    let log_number = (selector & 2 != 0).then_some(u32::from(selector >> 2));
    let scan = scan_log(format, &[LogSegment { bytes, log_number }], 0);
    let mut end = 0;
    for record in &scan.records {
        assert!(record.offset >= end);
        end = record.offset + record.len;
        assert!(end as usize <= bytes.len());
        assert_eq!(decode_batch(&encode_batch(&record.batch)).as_ref(), Ok(&record.batch));
    }
    assert!(scan.stop.offset as usize <= bytes.len());
});
