//! Little-endian fields and short names, shared by the stream store's object and
//! metadata codecs.

use super::{check_name, NameError};

/// Why bytes did not decode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// Fewer bytes than the fields need.
    Truncated,
    /// A name that is not a stream or producer name.
    BadName(NameError),
    /// A tag, magic or version this code does not know.
    Unknown { what: &'static str, value: u64 },
    /// The checksum does not match the bytes.
    Checksum,
    /// Bytes left over after the last field.
    TrailingBytes,
    /// Fields that decode but contradict each other.
    Inconsistent(&'static str),
}

impl core::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            DecodeError::Truncated => write!(f, "truncated"),
            DecodeError::BadName(error) => write!(f, "a name {error}"),
            DecodeError::Unknown { what, value } => write!(f, "unknown {what} {value}"),
            DecodeError::Checksum => write!(f, "checksum mismatch"),
            DecodeError::TrailingBytes => write!(f, "bytes after the last field"),
            DecodeError::Inconsistent(what) => write!(f, "inconsistent: {what}"),
        }
    }
}

pub(super) fn put_u64(out: &mut Vec<u8>, value: u64) {
    out.extend_from_slice(&value.to_le_bytes());
}

pub(super) fn put_u32(out: &mut Vec<u8>, value: u32) {
    out.extend_from_slice(&value.to_le_bytes());
}

/// A checked name (at most 128 bytes): its length in one byte, then its bytes.
pub(super) fn put_name(out: &mut Vec<u8>, name: &str) {
    assert!(check_name(name).is_ok(), "only checked names are encoded");
    out.push(name.len() as u8);
    out.extend_from_slice(name.as_bytes());
}

/// Bytes [`put_name`] writes.
pub(super) fn name_bytes(name: &str) -> usize {
    1 + name.len()
}

/// A cursor over bytes being decoded.
pub(super) struct Reader<'a> {
    pub(super) rest: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(super) fn take(&mut self, count: usize) -> Result<&'a [u8], DecodeError> {
        if self.rest.len() < count {
            return Err(DecodeError::Truncated);
        }
        let (field, rest) = self.rest.split_at(count);
        self.rest = rest;
        Ok(field)
    }

    pub(super) fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }

    pub(super) fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("four bytes")))
    }

    pub(super) fn u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("eight bytes")))
    }

    pub(super) fn name(&mut self) -> Result<String, DecodeError> {
        let len = usize::from(self.u8()?);
        let bytes = self.take(len)?;
        let text = core::str::from_utf8(bytes).map_err(|_| DecodeError::BadName(NameError::BadByte { byte: 0x80 }))?;
        check_name(text).map_err(DecodeError::BadName)?;
        Ok(text.to_string())
    }

    /// A count of items that each take at least `item_bytes_min`: a count the bytes left
    /// cannot hold is refused before anything is allocated for it.
    pub(super) fn count(&mut self, item_bytes_min: usize) -> Result<usize, DecodeError> {
        let count = self.u32()? as usize;
        if count.saturating_mul(item_bytes_min) > self.rest.len() {
            return Err(DecodeError::Truncated);
        }
        Ok(count)
    }

    pub(super) fn finish(self) -> Result<(), DecodeError> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(DecodeError::TrailingBytes)
        }
    }
}
