//! The tiny store's record, byte for byte as Part 4 of the teaching page draws it.
//!
//! ```text
//! +----------------+-----------+--------+------------------------------------------------+
//! | CRC32C (u32 LE)| length u16| type u8| payload                                        |
//! | over type +    | LE, bytes |FULL = 1| seq u64 LE | op u8 | klen | key | vlen | value |
//! | payload        | of payload|        |            |PUT = 1| LEB128     | LEB128       |
//! +----------------+-----------+--------+------------------------------------------------+
//!  0              4           6        7
//! ```
//!
//! The header is LevelDB's and RocksDB's layout, but the CRC is stored unmasked, as the
//! page shows it. The payload is the tiny store's own: one write per record, so a torn
//! write shows up record by record (real engines put a whole commit group in one record).
//! A delete carries an empty value with its length byte, so `del user:2` is
//! 7 + 8 + 1 + 1 + 6 + 1 = 24 bytes and `put user:1 alice` is 29.

use super::varint::{get_varint, put_varint, VarintError};
use super::Op;
use crate::checksum::crc32c;

/// The header's fields, in order: the CRC32C, the payload's length, the record type.
pub const CRC_BYTES: usize = 4;
pub const LENGTH_BYTES: usize = 2;
pub const TYPE_BYTES: usize = 1;
/// Bytes in a record header: CRC (4), length (2), type (1).
pub const HEADER_BYTES: usize = CRC_BYTES + LENGTH_BYTES + TYPE_BYTES;
/// The payload's fixed fields: the sequence number (little-endian) and the op byte; the
/// key and the value follow, each behind a LEB128 length.
pub const SEQ_BYTES: usize = 8;
pub const OP_BYTES: usize = 1;
/// The record type of a whole record. The tiny store never fragments.
pub const TYPE_FULL: u8 = 1;
/// The op byte of a put.
pub const OP_PUT: u8 = 1;
/// The op byte of a delete.
pub const OP_DEL: u8 = 0;

/// One decoded write.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct TinyRecord {
    pub seq: u64,
    pub op: Op,
    pub key: Vec<u8>,
    pub value: Vec<u8>,
}

/// Why a payload (already checksum-verified) did not parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PayloadError {
    /// Fewer bytes than the fields need.
    Truncated,
    /// An op byte other than PUT (1) or DEL (0).
    UnknownOp(u8),
    /// A length varint that overflows.
    BadVarint,
    /// Bytes left over after the value.
    TrailingBytes,
}

/// Frames one write as a tiny-store record. Panics only if the payload exceeds
/// 65,535 bytes, which the u16 length cannot describe; callers bound values first
/// (see [`payload_len`]).
pub fn encode(seq: u64, op: Op, key: &[u8], value: &[u8]) -> Vec<u8> {
    let payload = encode_payload(seq, op, key, value);
    let length = u16::try_from(payload.len()).expect("tiny record payload over 65,535 bytes");
    let crc = crc32c(&[&[TYPE_FULL], &payload]);
    let mut record = Vec::with_capacity(HEADER_BYTES + payload.len());
    record.extend_from_slice(&crc.to_le_bytes());
    record.extend_from_slice(&length.to_le_bytes());
    record.push(TYPE_FULL);
    record.extend_from_slice(&payload);
    record
}

/// Offset of the seq inside a record (right after the header).
pub const SEQ_OFFSET: usize = HEADER_BYTES;

/// A payload longer than the u16 length can describe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PayloadTooLarge {
    pub payload_bytes: usize,
}

impl core::fmt::Display for PayloadTooLarge {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "record payload of {} bytes exceeds the format's 65,535", self.payload_bytes)
    }
}

/// Frames a put into `out` (cleared first) with its seq and CRC left zero, for a writer
/// that learns its seq later: [`seal`] fills both in. The bytes are [`encode`]'s once
/// sealed; building them in a reused buffer lets a steady writer allocate nothing.
pub fn encode_unsequenced_put(out: &mut Vec<u8>, key: &[u8], value: &[u8]) -> Result<(), PayloadTooLarge> {
    let payload_bytes = payload_len(key.len(), value.len());
    let length = u16::try_from(payload_bytes).map_err(|_| PayloadTooLarge { payload_bytes })?;
    out.clear();
    out.extend_from_slice(&[0, 0, 0, 0]);
    out.extend_from_slice(&length.to_le_bytes());
    out.push(TYPE_FULL);
    out.extend_from_slice(&[0; 8]);
    out.push(OP_PUT);
    put_varint(out, key.len() as u64);
    out.extend_from_slice(key);
    put_varint(out, value.len() as u64);
    out.extend_from_slice(value);
    debug_assert_eq!(out.len(), HEADER_BYTES + payload_bytes);
    Ok(())
}

/// Writes `seq` into a record made by [`encode_unsequenced_put`] and seals it with its
/// CRC32C (over the type byte and the payload).
pub fn seal(record: &mut [u8], seq: u64) {
    record[SEQ_OFFSET..SEQ_OFFSET + 8].copy_from_slice(&seq.to_le_bytes());
    let crc = crc32c(&[&[TYPE_FULL], &record[HEADER_BYTES..]]);
    record[..4].copy_from_slice(&crc.to_le_bytes());
}

/// Where the key of a put framed by [`encode_unsequenced_put`] lies in the record.
pub fn put_key_range(record_key_bytes: usize) -> core::ops::Range<usize> {
    let start = SEQ_OFFSET + 8 + 1 + super::varint::varint_len(record_key_bytes as u64);
    start..start + record_key_bytes
}

/// The payload alone: seq, op, key and value behind LEB128 lengths.
pub fn encode_payload(seq: u64, op: Op, key: &[u8], value: &[u8]) -> Vec<u8> {
    let mut payload = Vec::with_capacity(payload_len(key.len(), value.len()));
    payload.extend_from_slice(&seq.to_le_bytes());
    payload.push(match op {
        Op::Put => OP_PUT,
        Op::Del => OP_DEL,
    });
    put_varint(&mut payload, key.len() as u64);
    payload.extend_from_slice(key);
    put_varint(&mut payload, value.len() as u64);
    payload.extend_from_slice(value);
    payload
}

/// Payload bytes for a key and value of these lengths.
pub fn payload_len(key_bytes: usize, value_bytes: usize) -> usize {
    8 + 1
        + super::varint::varint_len(key_bytes as u64)
        + key_bytes
        + super::varint::varint_len(value_bytes as u64)
        + value_bytes
}

/// Whole-record bytes (header included) for a key and value of these lengths.
pub fn record_len(key_bytes: usize, value_bytes: usize) -> usize {
    HEADER_BYTES + payload_len(key_bytes, value_bytes)
}

/// Parses a payload whose checksum has already been verified.
pub fn decode_payload(payload: &[u8]) -> Result<TinyRecord, PayloadError> {
    if payload.len() < 9 {
        return Err(PayloadError::Truncated);
    }
    let seq = u64::from_le_bytes(payload[..8].try_into().expect("eight bytes"));
    let op = match payload[8] {
        OP_PUT => Op::Put,
        OP_DEL => Op::Del,
        other => return Err(PayloadError::UnknownOp(other)),
    };
    let mut rest = &payload[9..];
    let key = take_prefixed(&mut rest)?;
    let value = take_prefixed(&mut rest)?;
    if !rest.is_empty() {
        return Err(PayloadError::TrailingBytes);
    }
    Ok(TinyRecord { seq, op, key: key.to_vec(), value: value.to_vec() })
}

fn take_prefixed<'a>(rest: &mut &'a [u8]) -> Result<&'a [u8], PayloadError> {
    let (len, used) = get_varint(rest).map_err(|error| match error {
        VarintError::Truncated => PayloadError::Truncated,
        VarintError::Overflow => PayloadError::BadVarint,
    })?;
    let tail = &rest[used..];
    let len = usize::try_from(len).map_err(|_| PayloadError::BadVarint)?;
    if tail.len() < len {
        return Err(PayloadError::Truncated);
    }
    let (field, after) = tail.split_at(len);
    *rest = after;
    Ok(field)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_user1_alice_is_29_bytes_golden() {
        let record = encode(1, Op::Put, b"user:1", b"alice");
        assert_eq!(record.len(), 29);
        let crc = crc32c(&[&record[6..]]);
        assert_eq!(&record[..4], &crc.to_le_bytes());
        assert_eq!(&record[4..7], &[22, 0, TYPE_FULL]);
        assert_eq!(
            &record[7..],
            &[
                1, 0, 0, 0, 0, 0, 0, 0, // seq 1
                1, // PUT
                6, b'u', b's', b'e', b'r', b':', b'1', // key
                5, b'a', b'l', b'i', b'c', b'e', // value
            ]
        );
    }

    #[test]
    fn delete_has_an_empty_value() {
        let record = encode(6, Op::Del, b"user:2", b"");
        assert_eq!(record.len(), 24);
        let decoded = decode_payload(&record[HEADER_BYTES..]).unwrap();
        assert_eq!(decoded, TinyRecord { seq: 6, op: Op::Del, key: b"user:2".to_vec(), value: vec![] });
    }

    #[test]
    fn long_values_use_longer_varints() {
        let value = vec![7u8; 300];
        let record = encode(9, Op::Put, b"k", &value);
        assert_eq!(record.len(), record_len(1, 300));
        assert_eq!(decode_payload(&record[HEADER_BYTES..]).unwrap().value, value);
    }

    #[test]
    fn rejects_bad_payloads() {
        assert_eq!(decode_payload(&[0; 5]), Err(PayloadError::Truncated));
        let mut payload = encode_payload(1, Op::Put, b"a", b"b");
        payload[8] = 7;
        assert_eq!(decode_payload(&payload), Err(PayloadError::UnknownOp(7)));
        let mut payload = encode_payload(1, Op::Put, b"a", b"b");
        payload.push(0);
        assert_eq!(decode_payload(&payload), Err(PayloadError::TrailingBytes));
    }
}
