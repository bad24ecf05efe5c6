//! Where each field of a tiny-store record sits, so the hex view can colour it.
//!
//! The record itself comes from `walab_core::codec::tiny`; this module only walks its
//! bytes once more and names the ranges (CRC, length, type, seq, op, key length, key,
//! value length, value). The lengths are LEB128 varints, so the ranges are found by
//! decoding them, never assumed to be one byte.

use walab_core::codec::tiny::{CRC_BYTES, HEADER_BYTES, LENGTH_BYTES, OP_BYTES, SEQ_BYTES, TYPE_BYTES};
use walab_core::codec::varint::get_varint;

/// One named field of a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Crc,
    Length,
    Type,
    Seq,
    Op,
    KeyLength,
    Key,
    ValueLength,
    Value,
}

impl Field {
    /// The CSS class the hex view gives the field's bytes.
    pub fn class(self) -> &'static str {
        match self {
            Field::Crc => "f-crc",
            Field::Length => "f-len",
            Field::Type => "f-type",
            Field::Seq => "f-seq",
            Field::Op => "f-op",
            Field::KeyLength => "f-klen",
            Field::Key => "f-key",
            Field::ValueLength => "f-vlen",
            Field::Value => "f-value",
        }
    }

    /// The legend's name for the field.
    pub fn label(self) -> &'static str {
        match self {
            Field::Crc => "CRC32C",
            Field::Length => "length",
            Field::Type => "type",
            Field::Seq => "seq",
            Field::Op => "op",
            Field::KeyLength => "key length",
            Field::Key => "key",
            Field::ValueLength => "value length",
            Field::Value => "value",
        }
    }

    pub const ALL: [Field; 9] = [
        Field::Crc,
        Field::Length,
        Field::Type,
        Field::Seq,
        Field::Op,
        Field::KeyLength,
        Field::Key,
        Field::ValueLength,
        Field::Value,
    ];
}

/// A field and the byte range `start..end` it occupies inside the record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldSpan {
    pub field: Field,
    pub start: usize,
    pub end: usize,
}

/// Why a byte string is not a whole tiny-store record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayoutError {
    /// The bytes end inside the named field.
    Truncated(Field),
    /// A length varint that does not decode.
    BadVarint(Field),
}

/// Splits one record into its fields, in order, covering every byte.
pub fn tiny_record_fields(record: &[u8]) -> Result<Vec<FieldSpan>, LayoutError> {
    let mut spans = Vec::with_capacity(Field::ALL.len());
    let mut at = 0usize;
    let fixed = |spans: &mut Vec<FieldSpan>, at: &mut usize, field, bytes: usize| {
        if record.len() < *at + bytes {
            return Err(LayoutError::Truncated(field));
        }
        spans.push(FieldSpan { field, start: *at, end: *at + bytes });
        *at += bytes;
        Ok(())
    };
    // The widths are the core codec's, so the colours follow the bytes it writes.
    fixed(&mut spans, &mut at, Field::Crc, CRC_BYTES)?;
    fixed(&mut spans, &mut at, Field::Length, LENGTH_BYTES)?;
    fixed(&mut spans, &mut at, Field::Type, TYPE_BYTES)?;
    debug_assert_eq!(at, HEADER_BYTES);
    fixed(&mut spans, &mut at, Field::Seq, SEQ_BYTES)?;
    fixed(&mut spans, &mut at, Field::Op, OP_BYTES)?;
    for (length_field, body_field) in [(Field::KeyLength, Field::Key), (Field::ValueLength, Field::Value)] {
        let (length, used) = get_varint(&record[at..]).map_err(|error| match error {
            walab_core::codec::varint::VarintError::Truncated => LayoutError::Truncated(length_field),
            walab_core::codec::varint::VarintError::Overflow => LayoutError::BadVarint(length_field),
        })?;
        fixed(&mut spans, &mut at, length_field, used)?;
        let length = usize::try_from(length).map_err(|_| LayoutError::BadVarint(length_field))?;
        fixed(&mut spans, &mut at, body_field, length)?;
    }
    Ok(spans)
}

#[cfg(test)]
mod tests {
    use super::*;
    use walab_core::tiny_store;

    #[test]
    fn write_1_splits_into_the_nine_fields() {
        let record = tiny_store::WRITES[0].record();
        let spans = tiny_record_fields(&record).unwrap();
        let ranges: Vec<(Field, usize, usize)> = spans.iter().map(|s| (s.field, s.start, s.end)).collect();
        assert_eq!(
            ranges,
            [
                (Field::Crc, 0, 4),
                (Field::Length, 4, 6),
                (Field::Type, 6, 7),
                (Field::Seq, 7, 15),
                (Field::Op, 15, 16),
                (Field::KeyLength, 16, 17),
                (Field::Key, 17, 23),
                (Field::ValueLength, 23, 24),
                (Field::Value, 24, 29),
            ]
        );
    }

    #[test]
    fn every_tiny_store_record_is_covered_exactly() {
        for write in &tiny_store::WRITES {
            let record = write.record();
            let spans = tiny_record_fields(&record).unwrap();
            assert_eq!(spans.first().unwrap().start, 0);
            assert_eq!(spans.last().unwrap().end, record.len());
            for pair in spans.windows(2) {
                assert_eq!(pair[0].end, pair[1].start);
            }
        }
    }

    #[test]
    fn a_cut_record_names_the_field_it_ends_in() {
        let record = tiny_store::WRITES[0].record();
        assert_eq!(tiny_record_fields(&record[..5]), Err(LayoutError::Truncated(Field::Length)));
        assert_eq!(tiny_record_fields(&record[..20]), Err(LayoutError::Truncated(Field::Key)));
    }
}
