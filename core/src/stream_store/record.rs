//! The WAL record of one append.
//!
//! Each append becomes one tiny-store record in the WAL ([`crate::codec::tiny`]): its key
//! is the stream's name and its value the rest of the append, so `walab dump` shows which
//! stream a record belongs to and the tiny record's CRC32C covers all of it.
//!
//! ```text
//! tiny key:   stream name (1..=128 bytes of [A-Za-z0-9._-])
//! tiny value: +---------+-----------+---------+------------------------------------+-------+
//!             | version | offset    | flags   | producer (flags bit 0 set):        | value |
//!             | u8 = 1  | u64 LE    | u8      | len u8 | id | epoch u64 | seq u64  | rest  |
//!             +---------+-----------+---------+------------------------------------+-------+
//! ```
//!
//! The offset is fixed before the WAL sees the record, so replaying the WAL gives every
//! stream's records at their offsets, and the producer fields let recovery rebuild the
//! producers' table ([`super::producers`]) from the log alone.

use super::{check_name, NameError, NAME_BYTES_MAX};

/// The format version this code writes and reads.
pub const VERSION: u8 = 1;
/// The most bytes in one appended value. With the largest stream and producer names
/// the tiny record's payload stays under its 65,535 bytes.
pub const VALUE_BYTES_MAX: usize = 64_000;
/// The flag bit saying a producer's id, epoch and seq follow.
const FLAG_PRODUCER: u8 = 1;
/// Version, offset, flags.
const FIXED_BYTES: usize = 1 + 8 + 1;

/// Who sent an append, for idempotence: a producer id, its session's epoch, its seq.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ProducerStamp {
    pub id: String,
    pub epoch: u64,
    pub seq: u64,
}

/// One append as the WAL holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppendRecord {
    pub stream: String,
    pub offset: u64,
    pub producer: Option<ProducerStamp>,
    pub value: Vec<u8>,
}

/// Why an append cannot be encoded, or a WAL record does not decode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordError {
    /// The stream name is not a name ([`check_name`]).
    BadStream(NameError),
    /// The producer id is not a name.
    BadProducer(NameError),
    /// A value over [`VALUE_BYTES_MAX`].
    ValueTooLarge { bytes: usize },
    /// A format version this code does not know.
    UnknownVersion(u8),
    /// Flag bits this code does not know.
    UnknownFlags(u8),
    /// Fewer bytes than the fields need.
    Truncated,
}

impl core::fmt::Display for RecordError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            RecordError::BadStream(error) => write!(f, "stream name {error}"),
            RecordError::BadProducer(error) => write!(f, "producer id {error}"),
            RecordError::ValueTooLarge { bytes } => {
                write!(f, "record of {bytes} bytes is over the limit of {VALUE_BYTES_MAX}")
            }
            RecordError::UnknownVersion(version) => write!(f, "unknown append record version {version}"),
            RecordError::UnknownFlags(flags) => write!(f, "unknown append record flags 0x{flags:02x}"),
            RecordError::Truncated => write!(f, "append record truncated"),
        }
    }
}

impl AppendRecord {
    /// Checks the names and the size, so that [`AppendRecord::encode_value`] cannot fail.
    pub fn check(&self) -> Result<(), RecordError> {
        check_name(&self.stream).map_err(RecordError::BadStream)?;
        if let Some(producer) = &self.producer {
            check_name(&producer.id).map_err(RecordError::BadProducer)?;
        }
        if self.value.len() > VALUE_BYTES_MAX {
            return Err(RecordError::ValueTooLarge { bytes: self.value.len() });
        }
        Ok(())
    }

    /// The tiny record's key: the stream name.
    pub fn key(&self) -> &[u8] {
        self.stream.as_bytes()
    }

    /// The tiny record's value, into `out` (cleared first). Call [`AppendRecord::check`]
    /// first: names over [`NAME_BYTES_MAX`] are not representable.
    pub fn encode_value(&self, out: &mut Vec<u8>) {
        out.clear();
        out.push(VERSION);
        out.extend_from_slice(&self.offset.to_le_bytes());
        match &self.producer {
            Some(producer) => {
                assert!(producer.id.len() <= NAME_BYTES_MAX);
                out.push(FLAG_PRODUCER);
                out.push(producer.id.len() as u8);
                out.extend_from_slice(producer.id.as_bytes());
                out.extend_from_slice(&producer.epoch.to_le_bytes());
                out.extend_from_slice(&producer.seq.to_le_bytes());
            }
            None => out.push(0),
        }
        out.extend_from_slice(&self.value);
    }

    /// Decodes a WAL record's key and value.
    pub fn decode(key: &[u8], value: &[u8]) -> Result<AppendRecord, RecordError> {
        let stream = name_of(key).map_err(RecordError::BadStream)?;
        if value.len() < FIXED_BYTES {
            return Err(RecordError::Truncated);
        }
        if value[0] != VERSION {
            return Err(RecordError::UnknownVersion(value[0]));
        }
        let offset = u64::from_le_bytes(value[1..9].try_into().expect("eight bytes"));
        let flags = value[9];
        let mut rest = &value[FIXED_BYTES..];
        let producer = match flags {
            0 => None,
            FLAG_PRODUCER => {
                let (&len, tail) = rest.split_first().ok_or(RecordError::Truncated)?;
                let len = usize::from(len);
                if tail.len() < len + 16 {
                    return Err(RecordError::Truncated);
                }
                let id = name_of(&tail[..len]).map_err(RecordError::BadProducer)?;
                let epoch = u64::from_le_bytes(tail[len..len + 8].try_into().expect("eight bytes"));
                let seq = u64::from_le_bytes(tail[len + 8..len + 16].try_into().expect("eight bytes"));
                rest = &tail[len + 16..];
                Some(ProducerStamp { id, epoch, seq })
            }
            other => return Err(RecordError::UnknownFlags(other)),
        };
        if rest.len() > VALUE_BYTES_MAX {
            return Err(RecordError::ValueTooLarge { bytes: rest.len() });
        }
        Ok(AppendRecord { stream, offset, producer, value: rest.to_vec() })
    }
}

fn name_of(bytes: &[u8]) -> Result<String, NameError> {
    let text = core::str::from_utf8(bytes).map_err(|_| NameError::BadByte {
        byte: bytes.iter().copied().find(|b| !b.is_ascii()).unwrap_or(0),
    })?;
    check_name(text)?;
    Ok(text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::tiny;

    fn stamped() -> AppendRecord {
        AppendRecord {
            stream: "orders".into(),
            offset: 7,
            producer: Some(ProducerStamp { id: "p1".into(), epoch: 2, seq: 9 }),
            value: b"hi".to_vec(),
        }
    }

    #[test]
    fn an_append_with_a_producer_golden() {
        let record = stamped();
        let mut value = Vec::new();
        record.encode_value(&mut value);
        assert_eq!(record.key(), b"orders");
        assert_eq!(
            value,
            [
                1, // version
                7, 0, 0, 0, 0, 0, 0, 0, // offset 7
                1, // flags: producer
                2, b'p', b'1', // producer id
                2, 0, 0, 0, 0, 0, 0, 0, // epoch 2
                9, 0, 0, 0, 0, 0, 0, 0, // seq 9
                b'h', b'i', // value
            ]
        );
        assert_eq!(AppendRecord::decode(record.key(), &value), Ok(record));
    }

    #[test]
    fn an_anonymous_append_round_trips() {
        let record = AppendRecord { stream: "s".into(), offset: u64::MAX, producer: None, value: Vec::new() };
        let mut value = Vec::new();
        record.encode_value(&mut value);
        assert_eq!(value.len(), FIXED_BYTES);
        assert_eq!(AppendRecord::decode(b"s", &value), Ok(record));
    }

    #[test]
    fn the_largest_append_fits_a_tiny_record() {
        let record = AppendRecord {
            stream: "s".repeat(NAME_BYTES_MAX),
            offset: 0,
            producer: Some(ProducerStamp { id: "p".repeat(NAME_BYTES_MAX), epoch: 1, seq: 1 }),
            value: vec![0; VALUE_BYTES_MAX],
        };
        assert_eq!(record.check(), Ok(()));
        let mut value = Vec::new();
        record.encode_value(&mut value);
        assert!(tiny::payload_len(record.key().len(), value.len()) <= usize::from(u16::MAX));
    }

    #[test]
    fn bad_input_is_named() {
        let mut value = Vec::new();
        stamped().encode_value(&mut value);
        assert_eq!(AppendRecord::decode(b"a/b", &value), Err(RecordError::BadStream(NameError::BadByte { byte: b'/' })));
        assert_eq!(AppendRecord::decode(b"s", &value[..20]), Err(RecordError::Truncated));
        assert_eq!(AppendRecord::decode(b"s", &value[..5]), Err(RecordError::Truncated));
        let mut versioned = value.clone();
        versioned[0] = 9;
        assert_eq!(AppendRecord::decode(b"s", &versioned), Err(RecordError::UnknownVersion(9)));
        let mut flagged = value.clone();
        flagged[9] = 4;
        assert_eq!(AppendRecord::decode(b"s", &flagged), Err(RecordError::UnknownFlags(4)));
        let big = AppendRecord { value: vec![0; VALUE_BYTES_MAX + 1], ..stamped() };
        assert_eq!(big.check(), Err(RecordError::ValueTooLarge { bytes: VALUE_BYTES_MAX + 1 }));
        assert_eq!(big.check().unwrap_err().to_string(), "record of 64001 bytes is over the limit of 64000");
    }
}
