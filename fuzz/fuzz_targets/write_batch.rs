//! The WriteBatch decoder on arbitrary bytes: it never panics, and whatever it decodes
//! encodes to bytes that decode to the same batch.
#![no_main]
use libfuzzer_sys::fuzz_target;
use walab_core::codec::write_batch::{decode_batch, encode_batch};

fuzz_target!(|data: &[u8]| {
    if let Ok(batch) = decode_batch(data) {
        let bytes = encode_batch(&batch);
        assert!(bytes.len() <= data.len());
        assert_eq!(decode_batch(&bytes), Ok(batch));
    }
});
