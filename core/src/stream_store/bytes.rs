//! Little-endian fields and length-prefixed texts, shared by the stream store's record,
//! object and metadata codecs.

use super::NameError;

/// Why bytes did not decode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// Fewer bytes than the fields need.
    Truncated,
    /// A name that is not a stream name or producer id.
    BadName(NameError),
    /// A text that is not UTF-8.
    NotUtf8,
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
            DecodeError::NotUtf8 => write!(f, "a text that is not UTF-8"),
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

pub(super) fn put_u16(out: &mut Vec<u8>, value: u16) {
    out.extend_from_slice(&value.to_le_bytes());
}

/// Bytes of at most 255: their length in one byte, then the bytes.
pub(super) fn put_bytes8(out: &mut Vec<u8>, bytes: &[u8]) {
    let len = u8::try_from(bytes.len()).expect("only checked texts of at most 255 bytes are encoded");
    out.push(len);
    out.extend_from_slice(bytes);
}

/// Bytes of at most 65,535: their length in two bytes, then the bytes.
pub(super) fn put_bytes16(out: &mut Vec<u8>, bytes: &[u8]) {
    let len = u16::try_from(bytes.len()).expect("only checked texts of at most 65,535 bytes are encoded");
    put_u16(out, len);
    out.extend_from_slice(bytes);
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

    pub(super) fn u16(&mut self) -> Result<u16, DecodeError> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().expect("two bytes")))
    }

    pub(super) fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("four bytes")))
    }

    pub(super) fn u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("eight bytes")))
    }

    pub(super) fn bytes8(&mut self) -> Result<&'a [u8], DecodeError> {
        let len = usize::from(self.u8()?);
        self.take(len)
    }

    pub(super) fn bytes16(&mut self) -> Result<&'a [u8], DecodeError> {
        let len = usize::from(self.u16()?);
        self.take(len)
    }

    /// A text of at most 255 bytes that `check` accepts.
    pub(super) fn text8(&mut self, check: fn(&str) -> Result<(), NameError>) -> Result<String, DecodeError> {
        let bytes = self.bytes8()?;
        text_of(bytes, check)
    }

    /// A text of at most 65,535 bytes that `check` accepts.
    pub(super) fn text16(&mut self, check: fn(&str) -> Result<(), NameError>) -> Result<String, DecodeError> {
        let bytes = self.bytes16()?;
        text_of(bytes, check)
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

fn text_of(bytes: &[u8], check: fn(&str) -> Result<(), NameError>) -> Result<String, DecodeError> {
    let text = core::str::from_utf8(bytes).map_err(|_| DecodeError::NotUtf8)?;
    check(text).map_err(DecodeError::BadName)?;
    Ok(text.to_string())
}
