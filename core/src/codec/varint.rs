//! LEB128 variable-length unsigned integers, as LevelDB and RocksDB write them: seven bits
//! per byte, least significant group first, the high bit set on every byte but the last.
//! Values below 128 take one byte, which is why the tiny store's short keys and values
//! cost one length byte each.

/// Appends `value` in LEB128.
pub fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Why a varint could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VarintError {
    /// The bytes ran out before the last byte of the varint.
    Truncated,
    /// More than ten bytes, or a value that does not fit in 64 bits.
    Overflow,
}

/// Reads a LEB128 value from the front of `bytes`; returns it and the bytes it used.
pub fn get_varint(bytes: &[u8]) -> Result<(u64, usize), VarintError> {
    let mut value: u64 = 0;
    for (index, &byte) in bytes.iter().enumerate() {
        if index == 10 {
            return Err(VarintError::Overflow);
        }
        let group = u64::from(byte & 0x7f);
        let shift = 7 * index as u32;
        if index == 9 && group > 1 {
            return Err(VarintError::Overflow);
        }
        value |= group << shift;
        if byte & 0x80 == 0 {
            return Ok((value, index + 1));
        }
    }
    Err(VarintError::Truncated)
}

/// The number of bytes [`put_varint`] writes for `value`.
pub fn varint_len(mut value: u64) -> usize {
    let mut len = 1;
    while value >= 0x80 {
        value >>= 7;
        len += 1;
    }
    len
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_bytes() {
        let mut out = Vec::new();
        put_varint(&mut out, 5);
        put_varint(&mut out, 127);
        put_varint(&mut out, 128);
        put_varint(&mut out, 300);
        assert_eq!(out, [0x05, 0x7f, 0x80, 0x01, 0xac, 0x02]);
    }

    #[test]
    fn round_trips_and_lengths() {
        for value in [0u64, 1, 127, 128, 16_383, 16_384, u32::MAX as u64, u64::MAX] {
            let mut out = Vec::new();
            put_varint(&mut out, value);
            assert_eq!(out.len(), varint_len(value));
            assert_eq!(get_varint(&out), Ok((value, out.len())));
        }
    }

    #[test]
    fn rejects_truncated_and_overflowing() {
        assert_eq!(get_varint(&[0x80]), Err(VarintError::Truncated));
        assert_eq!(get_varint(&[]), Err(VarintError::Truncated));
        assert_eq!(get_varint(&[0xff; 11]), Err(VarintError::Overflow));
        assert_eq!(
            get_varint(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02]),
            Err(VarintError::Overflow)
        );
    }
}
