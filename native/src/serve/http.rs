//! The HTTP edge: routes, headers and JSON, and nothing the [`Store`] decides.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine;
use serde_json::{json, Value};
use walab_core::stream_store::log_cache::{ReadError, READ_RECORDS_MAX};
use walab_core::stream_store::record::{ProducerStamp, RecordError, VALUE_BYTES_MAX};

use super::batch::BATCH_BODY_BYTES_MAX;
use super::store::{AppendError, Appended, ReadFailure, Store};

/// The producer headers.
pub const PRODUCER_HEADER: &str = "walab-producer";
pub const EPOCH_HEADER: &str = "walab-producer-epoch";
pub const SEQ_HEADER: &str = "walab-producer-seq";

/// The routes over one store.
pub fn router(store: Arc<Store>) -> Router {
    Router::new()
        .route("/streams", get(list))
        .route("/stats", get(stats))
        .route("/trace", get(super::live::trace))
        .route("/streams/{stream}", get(summary))
        .route("/streams/{stream}/records", get(read).post(append))
        .route("/streams/{stream}/batch", post(super::batch::append_batch).layer(DefaultBodyLimit::max(BATCH_BODY_BYTES_MAX)))
        .fallback(|| async { error(StatusCode::NOT_FOUND, "no such route; see GET /streams".to_string()) })
        .method_not_allowed_fallback(|| async {
            error(StatusCode::METHOD_NOT_ALLOWED, "method not allowed on this route".to_string())
        })
        // One byte over the limit is enough to tell a record that is too large.
        .layer(DefaultBodyLimit::max(VALUE_BYTES_MAX + 1))
        .with_state(store)
}

pub(super) fn error(status: StatusCode, message: String) -> Response {
    (status, Json(json!({ "error": message }))).into_response()
}

fn header_u64(headers: &HeaderMap, name: &str) -> Result<Option<u64>, String> {
    let Some(value) = headers.get(name) else { return Ok(None) };
    let text = value.to_str().map_err(|_| format!("{name}: not text"))?;
    text.trim().parse().map(Some).map_err(|_| format!("{name}: {text:?} is not a whole number"))
}

/// The producer stamp the headers carry: all three headers, or none.
pub(super) fn producer_of(headers: &HeaderMap) -> Result<Option<ProducerStamp>, String> {
    let id = match headers.get(PRODUCER_HEADER) {
        Some(value) => Some(value.to_str().map_err(|_| format!("{PRODUCER_HEADER}: not text"))?.to_string()),
        None => None,
    };
    let epoch = header_u64(headers, EPOCH_HEADER)?;
    let seq = header_u64(headers, SEQ_HEADER)?;
    match (id, epoch, seq) {
        (None, None, None) => Ok(None),
        (Some(id), Some(epoch), Some(seq)) => Ok(Some(ProducerStamp { id, epoch, seq })),
        (None, _, _) => Err(format!("{EPOCH_HEADER} and {SEQ_HEADER} need {PRODUCER_HEADER}")),
        (Some(_), None, _) => Err(format!("{PRODUCER_HEADER} needs {EPOCH_HEADER}")),
        (Some(_), _, None) => Err(format!("{PRODUCER_HEADER} needs {SEQ_HEADER}")),
    }
}

async fn append(
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
            return error(StatusCode::PAYLOAD_TOO_LARGE, format!("record body over the limit of {VALUE_BYTES_MAX} bytes"))
        }
        Err(rejection) => return error(rejection.status(), format!("record body: {rejection}")),
    };
    match store.append(&stream, producer, body.to_vec()).await {
        Ok(appended) => acknowledgement(appended),
        Err(failure) => append_failure(failure),
    }
}

/// `{"offset":N}` (with `"duplicate":true` for a retried last seq), written directly: the
/// answer every append gets, without building a JSON value first.
fn acknowledgement(appended: Appended) -> Response {
    let body = match appended.duplicate {
        true => format!("{{\"offset\":{},\"duplicate\":true}}", appended.offset),
        false => format!("{{\"offset\":{}}}", appended.offset),
    };
    ([(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], body).into_response()
}

pub(super) fn append_failure(failure: AppendError) -> Response {
    let message = failure.to_string();
    let (status, extra) = match &failure {
        AppendError::BadRecord(RecordError::ValueTooLarge { .. }) => (StatusCode::PAYLOAD_TOO_LARGE, json!({})),
        AppendError::BadName { .. } | AppendError::BadRecord(_) | AppendError::BadBatch(_) => (StatusCode::BAD_REQUEST, json!({})),
        AppendError::StaleEpoch { current, .. } => (StatusCode::CONFLICT, json!({ "current_epoch": current })),
        AppendError::SeqGap { expected, .. } => (StatusCode::CONFLICT, json!({ "expected_seq": expected })),
        AppendError::TooManyProducers { .. } | AppendError::TooManyStreams => (StatusCode::CONFLICT, json!({})),
        AppendError::Unknown(_) => (StatusCode::SERVICE_UNAVAILABLE, json!({ "outcome": "unknown" })),
        AppendError::Stopped(_) => (StatusCode::SERVICE_UNAVAILABLE, json!({ "outcome": "not appended" })),
    };
    let mut body = json!({ "error": message });
    if let (Value::Object(body), Value::Object(extra)) = (&mut body, extra) {
        body.extend(extra);
    }
    (status, Json(body)).into_response()
}

#[derive(serde::Deserialize)]
struct ReadParams {
    from: Option<u64>,
    max: Option<usize>,
}

fn read_failure(failure: ReadFailure) -> Response {
    let status = match &failure {
        ReadFailure::BadStream(..) => StatusCode::BAD_REQUEST,
        ReadFailure::NoSuchStream(_) => StatusCode::NOT_FOUND,
        ReadFailure::Range(ReadError::PastEnd { .. }) => StatusCode::BAD_REQUEST,
        // Records below the cache are in objects the store has lost track of: its bug.
        ReadFailure::Range(ReadError::BelowCache { .. }) => StatusCode::INTERNAL_SERVER_ERROR,
        // A committed object that cannot be read: the object store's trouble.
        ReadFailure::Object(_) => StatusCode::BAD_GATEWAY,
    };
    error(status, failure.to_string())
}

async fn read(
    State(store): State<Arc<Store>>,
    stream: Result<Path<String>, PathRejection>,
    params: Result<Query<ReadParams>, QueryRejection>,
) -> Response {
    let Path(stream) = match stream {
        Ok(stream) => stream,
        Err(rejection) => return error(StatusCode::BAD_REQUEST, format!("stream name: {rejection}")),
    };
    let Query(params) = match params {
        Ok(params) => params,
        Err(rejection) => return error(StatusCode::BAD_REQUEST, format!("from and max are whole numbers: {rejection}")),
    };
    let max = params.max.unwrap_or(READ_RECORDS_MAX);
    if !(1..=READ_RECORDS_MAX).contains(&max) {
        return error(StatusCode::BAD_REQUEST, format!("max {max}: must be between 1 and {READ_RECORDS_MAX}"));
    }
    let answer = match store.read(&stream, params.from.unwrap_or(0), max).await {
        Ok(answer) => answer,
        Err(failure) => return read_failure(failure),
    };
    let base64 = base64::engine::general_purpose::STANDARD;
    let records: Vec<Value> = answer
        .records
        .iter()
        .map(|record| {
            let mut item = json!({ "offset": record.offset, "value_base64": base64.encode(&record.value) });
            if let (Some(stamp), Value::Object(item)) = (&record.producer, &mut item) {
                item.insert("producer".into(), json!(stamp.id));
                item.insert("epoch".into(), json!(stamp.epoch));
                item.insert("seq".into(), json!(stamp.seq));
            }
            item
        })
        .collect();
    Json(json!({ "records": records, "next": answer.next, "end": answer.end })).into_response()
}

async fn summary(State(store): State<Arc<Store>>, stream: Result<Path<String>, PathRejection>) -> Response {
    let Path(stream) = match stream {
        Ok(stream) => stream,
        Err(rejection) => return error(StatusCode::BAD_REQUEST, format!("stream name: {rejection}")),
    };
    match store.summary(&stream) {
        Ok(summary) => Json(json!({ "end": summary.end, "committed": summary.committed })).into_response(),
        Err(failure) => read_failure(failure),
    }
}

async fn list(State(store): State<Arc<Store>>) -> Response {
    Json(json!({ "streams": store.summaries() })).into_response()
}

async fn stats(State(store): State<Arc<Store>>) -> Response {
    Json(store.stats()).into_response()
}
