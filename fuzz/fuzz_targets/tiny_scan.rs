//! The tiny store's scan on arbitrary bytes, split into up to three segments: it never
//! panics, and every record it accepts re-encodes to exactly the bytes at its offset.
#![no_main]
use libfuzzer_sys::fuzz_target;
use walab_core::codec::tiny;
use walab_core::scan::scan_tiny;

fuzz_target!(|data: &[u8]| {
    let (first, rest) = data.split_at(data.len() / 2);
    let (second, third) = rest.split_at(rest.len() / 2);
    let segments = [first, second, third];
    let scan = scan_tiny(&segments, 3);
    for accepted in &scan.records {
        let record = &accepted.record;
        let bytes = tiny::encode(record.seq, record.op, &record.key, &record.value);
        let start = accepted.offset as usize;
        assert_eq!(&segments[accepted.segment][start..start + bytes.len()], &bytes[..]);
        assert_eq!(accepted.len as usize, bytes.len());
    }
    assert!(scan.stop.offset as usize <= segments[scan.stop.segment].len());
});
