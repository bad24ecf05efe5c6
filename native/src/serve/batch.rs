//! The batch append: `POST /streams/{stream}/batch`, several records of one stream in one
//! request, appended at consecutive offsets and answered together.
//!
//! The body is the records one after another, each as its length (4 bytes, big-endian)
//! and its bytes: at least 1 and at most [`BATCH_RECORDS_MAX`] records, each at most
//! [`VALUE_BYTES_MAX`] bytes, the body at most [`BATCH_BODY_BYTES_MAX`]. The producer
//! headers are those of a single append, and the seq names the first record: a batch of
//! `n` takes seqs `seq..seq + n`. The answer is `{"offset":F,"count":n}`: the records are
//! at `F..F + n` in body order; a retried batch whose seqs are all appended already gets
//! `"duplicate":true` and the offsets they got, a batch that overlaps them only partly or
//! leaves a gap gets `409` naming `expected_seq`.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use walab_core::stream_store::record::VALUE_BYTES_MAX;

use super::http::{append_failure, error, producer_of};
use super::store::{Appended, Store, BATCH_RECORDS_MAX};

/// The most bytes in one batch's body (length prefixes included).
pub const BATCH_BODY_BYTES_MAX: usize = 4 << 20;

/// The body's records, or what is wrong with it.
pub fn decode_batch(body: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    let mut values = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let at = body.len() - rest.len();
        let Some((length, tail)) = rest.split_first_chunk::<4>() else {
            return Err(format!("a record's 4-byte length at byte {at} is cut short ({} bytes left)", rest.len()));
        };
        let length = u32::from_be_bytes(*length) as usize;
        if length > VALUE_BYTES_MAX {
            return Err(format!("record {} at byte {at}: {length} bytes is over the limit of {VALUE_BYTES_MAX}", values.len()));
        }
        if tail.len() < length {
            return Err(format!("record {} at byte {at}: {length} bytes announced, {} left", values.len(), tail.len()));
        }
        if values.len() == BATCH_RECORDS_MAX {
            return Err(format!("more than {BATCH_RECORDS_MAX} records"));
        }
        values.push(tail[..length].to_vec());
        rest = &tail[length..];
    }
    if values.is_empty() {
        return Err("no records: a batch holds at least one".to_string());
    }
    Ok(values)
}

/// Lays out `values` as a batch body.
pub fn encode_batch<'a>(values: impl IntoIterator<Item = &'a [u8]>, out: &mut Vec<u8>) {
    for value in values {
        out.extend_from_slice(&(value.len() as u32).to_be_bytes());
        out.extend_from_slice(value);
    }
}

pub async fn append_batch(
    State(store): State<Arc<Store>>,
    stream: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let Path(stream) = match stream {
        Ok(stream) => stream,
        Err(rejection) => return error(StatusCode::BAD_REQUEST, format!("stream name: {rejection}")),
    };
    let producer = match producer_of(&headers) {
        Ok(producer) => producer,
        Err(message) => return error(StatusCode::BAD_REQUEST, message),
    };
    let body = match body {
        Ok(body) => body,
        Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            return error(StatusCode::PAYLOAD_TOO_LARGE, format!("batch body over the limit of {BATCH_BODY_BYTES_MAX} bytes"))
        }
        Err(rejection) => return error(rejection.status(), format!("batch body: {rejection}")),
    };
    let values = match decode_batch(&body) {
        Ok(values) => values,
        Err(message) => return error(StatusCode::BAD_REQUEST, format!("batch body: {message}")),
    };
    match store.append_batch(&stream, producer, values).await {
        Ok(appended) => acknowledgement(appended),
        Err(failure) => append_failure(failure),
    }
}

/// `{"offset":F,"count":N}` (with `"duplicate":true`), written directly.
fn acknowledgement(appended: Appended) -> Response {
    let duplicate = if appended.duplicate { ",\"duplicate\":true" } else { "" };
    let body = format!("{{\"offset\":{},\"count\":{}{duplicate}}}", appended.offset, appended.count);
    ([(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], body).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_round_trips_and_a_bad_one_is_named() {
        let values: Vec<&[u8]> = vec![b"one", b"", b"three"];
        let mut body = Vec::new();
        encode_batch(values.iter().copied(), &mut body);
        assert_eq!(&body[..7], &[0, 0, 0, 3, b'o', b'n', b'e']);
        assert_eq!(decode_batch(&body), Ok(values.iter().map(|v| v.to_vec()).collect()));
        assert_eq!(decode_batch(&body[..body.len() - 1]), Err("record 2 at byte 11: 5 bytes announced, 4 left".into()));
        assert_eq!(decode_batch(&body[..9]), Err("a record's 4-byte length at byte 7 is cut short (2 bytes left)".into()));
        assert_eq!(decode_batch(&[]), Err("no records: a batch holds at least one".into()));
        assert_eq!(
            decode_batch(&[0, 0, 250, 1]),
            Err(format!("record 0 at byte 0: 64001 bytes is over the limit of {VALUE_BYTES_MAX}"))
        );
        let mut long = Vec::new();
        encode_batch(std::iter::repeat_n(&b"x"[..], BATCH_RECORDS_MAX + 1), &mut long);
        assert_eq!(decode_batch(&long), Err(format!("more than {BATCH_RECORDS_MAX} records")));
    }
}
