//! The stream WAL scan on arbitrary bytes: it never panics, and every accepted frame
//! re-encodes to exactly the bytes at its offset.
#![no_main]
use libfuzzer_sys::fuzz_target;
use walab_core::codec::stream::{encode_frame, scan_stream};

fuzz_target!(|data: &[u8]| {
    let scan = scan_stream(&[data], None, 0);
    for accepted in &scan.frames {
        let bytes = encode_frame(&accepted.frame);
        let start = accepted.offset as usize;
        assert_eq!(&data[start..start + bytes.len()], &bytes[..]);
    }
    assert!(scan.stop.offset as usize <= data.len());
});
