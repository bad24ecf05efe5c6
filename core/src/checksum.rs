//! Checksums.
//!
//! Two CRCs appear in walab's formats:
//! - CRC32C (Castagnoli), used by LevelDB, RocksDB and the tiny store. LevelDB and RocksDB
//!   store it *masked* (rotated and offset, see [`mask_crc32c`]) because a CRC computed over
//!   data that itself contains CRCs is weak; the teaching page shows the tiny store's CRC
//!   unmasked, so the tiny store stores it unmasked.
//! - CRC32 (IEEE, the zlib/Ethernet polynomial), used by the stream store's WAL frame and
//!   for naming the Postgres WAL's slot tables.

// Natively both crates use the CPU's CRC instructions (SSE 4.2, PCLMULQDQ, ARMv8 CRC).
// In WebAssembly the `crc` crate computes the same CRCs from one 256-entry table each.

/// CRC32C over the concatenation of `parts`.
#[cfg(not(target_arch = "wasm32"))]
pub fn crc32c(parts: &[&[u8]]) -> u32 {
    parts.iter().fold(0, |crc, part| ::crc32c::crc32c_append(crc, part))
}

/// CRC32 (IEEE) over `bytes`.
#[cfg(not(target_arch = "wasm32"))]
pub fn crc32(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

#[cfg(target_arch = "wasm32")]
pub use portable::{crc32, crc32c};

/// The same CRCs from one 256-entry table each, for targets without CRC instructions.
#[cfg(any(target_arch = "wasm32", test))]
mod portable {
    use crc::{Crc, Table, CRC_32_ISCSI, CRC_32_ISO_HDLC};

    const CASTAGNOLI: Crc<u32, Table<1>> = Crc::<u32, Table<1>>::new(&CRC_32_ISCSI);
    const IEEE: Crc<u32, Table<1>> = Crc::<u32, Table<1>>::new(&CRC_32_ISO_HDLC);

    /// CRC32C over the concatenation of `parts`.
    pub fn crc32c(parts: &[&[u8]]) -> u32 {
        let mut digest = CASTAGNOLI.digest();
        parts.iter().for_each(|part| digest.update(part));
        digest.finalize()
    }

    /// CRC32 (IEEE) over `bytes`.
    pub fn crc32(bytes: &[u8]) -> u32 {
        IEEE.checksum(bytes)
    }
}

const MASK_DELTA: u32 = 0xa282_ead8;

/// LevelDB's and RocksDB's masking of a stored CRC32C.
pub fn mask_crc32c(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

/// The inverse of [`mask_crc32c`].
pub fn unmask_crc32c(masked: u32) -> u32 {
    masked.wrapping_sub(MASK_DELTA).rotate_left(15)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_vectors() {
        // RFC 3720 appendix B.4: 32 bytes of zeros.
        assert_eq!(crc32c(&[&[0u8; 32]]), 0x8a91_36aa);
        assert_eq!(crc32c(&[b"1234", b"56789"]), 0xe306_9283);
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
    }

    #[test]
    fn the_portable_crcs_equal_the_native_ones() {
        assert_eq!(portable::crc32c(&[&[0u8; 32]]), 0x8a91_36aa);
        assert_eq!(portable::crc32(b"123456789"), 0xcbf4_3926);
        let mut rng = crate::rng::Rng::new(7);
        for len in [0usize, 1, 3, 8, 31, 64, 255, 1000, 4096] {
            let bytes: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
            let (head, tail) = bytes.split_at(len / 3);
            assert_eq!(portable::crc32c(&[head, tail]), crc32c(&[&bytes]), "crc32c over {len} bytes");
            assert_eq!(portable::crc32(&bytes), crc32(&bytes), "crc32 over {len} bytes");
        }
    }

    #[test]
    fn mask_round_trips() {
        for crc in [0u32, 1, 0xdead_beef, u32::MAX] {
            assert_eq!(unmask_crc32c(mask_crc32c(crc)), crc);
        }
        assert_ne!(mask_crc32c(0x1234_5678), 0x1234_5678);
    }
}
