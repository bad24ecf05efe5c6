//! The HTTP edge: the Durable Streams protocol at `/v1/stream/{name}`, `GET /stats` and
//! `GET /trace`, and nothing the [`Store`] decides.
//!
//! Every response carries the browser security headers the protocol names
//! (`X-Content-Type-Options: nosniff`, `Cross-Origin-Resource-Policy: cross-origin`) and
//! CORS headers for any origin; `OPTIONS` answers a preflight. An error is a status the
//! protocol names and a JSON body `{"error": "..."}` saying what was wrong.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Path, RawQuery, State};
use futures::StreamExt;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use axum::{Json, Router};
use serde_json::json;
use walab_core::stream_store::cursor;
use walab_core::stream_store::offset::ReadFrom;

use super::append::{AppendRequest, CreateRequest};
use super::body::read_parts;
use super::headers::{self as h, Live};
use super::read::{ReadAnswer, Waited, READ_BYTES_MAX};
use super::store::{now_unix_ms, Store, StoreError, REQUEST_BODY_BYTES_MAX, REQUEST_BODY_DRAIN_MAX};
use super::stream::Stream;

/// How long live reads last.
#[derive(Clone, Copy, Debug)]
pub struct HttpOptions {
    /// A long-poll with nothing to return answers `204` after this.
    pub long_poll: Duration,
    /// An SSE connection is closed after this (the client reconnects).
    pub sse_connection: Duration,
}

impl Default for HttpOptions {
    fn default() -> HttpOptions {
        HttpOptions { long_poll: Duration::from_secs(10), sse_connection: Duration::from_secs(60) }
    }
}

#[derive(Clone)]
struct App {
    store: Arc<Store>,
    options: HttpOptions,
}

/// The request headers a browser may send (CORS).
const ALLOWED_HEADERS: &str = "content-type, authorization, if-none-match, stream-seq, stream-ttl, stream-expires-at, \
    stream-closed, producer-id, producer-epoch, producer-seq, stream-forked-from, stream-fork-offset, stream-fork-sub-offset";
/// The response headers a browser's script may read (CORS).
const EXPOSED_HEADERS: &str = "stream-next-offset, stream-cursor, stream-up-to-date, stream-closed, producer-epoch, \
    producer-seq, producer-expected-seq, producer-received-seq, stream-sse-data-encoding, stream-ttl, stream-expires-at, \
    walab-committed-offset, etag, content-type, location";

/// The routes over one store.
pub fn router(store: Arc<Store>, options: HttpOptions) -> Router {
    let app = App { store, options };
    Router::new()
        .route("/stats", get(stats))
        .route("/trace", get(trace))
        .route("/v1/stream/{*path}", any(stream_request))
        .route("/v1/stream", any(|| async { error(StatusCode::NOT_FOUND, "a stream is at /v1/stream/NAME".into()) }))
        .route("/v1/stream/", any(|| async { error(StatusCode::NOT_FOUND, "a stream is at /v1/stream/NAME".into()) }))
        .fallback(|| async { error(StatusCode::NOT_FOUND, "no such route; streams are at /v1/stream/NAME".to_string()) })
        .layer(DefaultBodyLimit::disable())
        .layer(axum::middleware::map_response(protocol_headers))
        .with_state(app)
}

/// The headers every response carries.
async fn protocol_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    headers.insert("cross-origin-resource-policy", HeaderValue::from_static("cross-origin"));
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    headers.insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, HeaderValue::from_static(EXPOSED_HEADERS));
    response
}

pub(super) fn error(status: StatusCode, message: String) -> Response {
    (status, Json(json!({ "error": message }))).into_response()
}

fn value(text: &str) -> HeaderValue {
    HeaderValue::from_str(text).unwrap_or_else(|_| HeaderValue::from_static(""))
}

fn set(response: &mut Response, name: &'static str, text: &str) {
    response.headers_mut().insert(HeaderName::from_static(name), value(text));
}

fn failure(failure: StoreError) -> Response {
    let message = failure.to_string();
    let status = match &failure {
        StoreError::NotFound => StatusCode::NOT_FOUND,
        StoreError::Gone => StatusCode::GONE,
        StoreError::BadRequest(_) => StatusCode::BAD_REQUEST,
        StoreError::Conflict(_) | StoreError::Closed { .. } | StoreError::SeqGap { .. } => StatusCode::CONFLICT,
        StoreError::StaleEpoch { .. } => StatusCode::FORBIDDEN,
        StoreError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
        StoreError::Full(_) => StatusCode::INSUFFICIENT_STORAGE,
        StoreError::Unknown(_) | StoreError::Stopped(_) => StatusCode::SERVICE_UNAVAILABLE,
        StoreError::ObjectStore(_) => StatusCode::BAD_GATEWAY,
        StoreError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
    };
    let mut body = json!({ "error": message });
    match &failure {
        StoreError::Unknown(_) => body["outcome"] = json!("unknown"),
        StoreError::Stopped(_) => body["outcome"] = json!("not appended"),
        _ => {}
    }
    let mut response = (status, Json(body)).into_response();
    match failure {
        StoreError::Closed { tail } => {
            set(&mut response, h::STREAM_CLOSED, "true");
            set(&mut response, h::STREAM_NEXT_OFFSET, &tail.token());
        }
        StoreError::StaleEpoch { current, .. } => set(&mut response, h::PRODUCER_EPOCH, &current.to_string()),
        StoreError::SeqGap { expected, received } => {
            set(&mut response, h::PRODUCER_EXPECTED_SEQ, &expected.to_string());
            set(&mut response, h::PRODUCER_RECEIVED_SEQ, &received.to_string());
        }
        _ => {}
    }
    response
}

fn bad(message: String) -> Response {
    error(StatusCode::BAD_REQUEST, message)
}

async fn stream_request(
    State(app): State<App>,
    method: Method,
    Path(path): Path<String>,
    uri: Uri,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Response {
    if method == Method::OPTIONS {
        return preflight(&headers);
    }
    let name = match h::stream_name_of_path(&path) {
        Ok(name) => name,
        Err(message) => return bad(message),
    };
    let body = match read_body(body).await {
        Ok(body) => body,
        Err(response) => return response,
    };
    match method {
        Method::PUT => create(&app, &name, &uri, &headers, body).await,
        Method::POST => append(&app, &name, &headers, body).await,
        Method::DELETE => match app.store.delete(&name).await {
            Ok(()) => StatusCode::NO_CONTENT.into_response(),
            Err(failed) => failure(failed),
        },
        Method::HEAD => head(&app, &name).await,
        Method::GET => read(&app, &name, query.as_deref(), &headers).await,
        _ => error(StatusCode::METHOD_NOT_ALLOWED, format!("{method} is not a stream operation")),
    }
}

/// A request's body, at most [`REQUEST_BODY_BYTES_MAX`] bytes. A longer one is `413`, but
/// only after the rest of it has been read and dropped (up to [`REQUEST_BODY_DRAIN_MAX`]):
/// a client still sending when the answer comes would see its connection reset instead of
/// the `413`.
async fn read_body(body: Body) -> Result<Bytes, Response> {
    let mut frames = body.into_data_stream();
    let mut kept = bytes::BytesMut::new();
    let mut seen = 0usize;
    while let Some(frame) = frames.next().await {
        let frame = frame.map_err(|failed| error(StatusCode::BAD_REQUEST, format!("the body could not be read: {failed}")))?;
        seen = seen.saturating_add(frame.len());
        if seen <= REQUEST_BODY_BYTES_MAX {
            kept.extend_from_slice(&frame);
        } else if seen > REQUEST_BODY_DRAIN_MAX {
            break;
        }
    }
    if seen > REQUEST_BODY_BYTES_MAX {
        return Err(error(StatusCode::PAYLOAD_TOO_LARGE, format!("the body is over this server's limit of {REQUEST_BODY_BYTES_MAX} bytes")));
    }
    Ok(kept.freeze())
}

fn preflight(headers: &HeaderMap) -> Response {
    let mut response = StatusCode::NO_CONTENT.into_response();
    let allowed = headers.get(header::ACCESS_CONTROL_REQUEST_HEADERS).cloned().unwrap_or(HeaderValue::from_static(ALLOWED_HEADERS));
    let headers = response.headers_mut();
    headers.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("GET, HEAD, POST, PUT, DELETE, OPTIONS"));
    headers.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, allowed);
    headers.insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("600"));
    response
}

async fn create(app: &App, name: &str, uri: &Uri, headers: &HeaderMap, body: Bytes) -> Response {
    let parsed = (|| -> Result<CreateRequest, String> {
        Ok(CreateRequest {
            content_type: h::content_type(headers)?,
            expiry: h::expiry(headers)?,
            close: h::closed(headers),
            fork: h::fork(headers)?,
            body: body.to_vec(),
        })
    })();
    let request = match parsed {
        Ok(request) => request,
        Err(message) => return bad(message),
    };
    let created = match app.store.create(name, request).await {
        Ok(created) => created,
        Err(failed) => return failure(failed),
    };
    let status = if created.new { StatusCode::CREATED } else { StatusCode::OK };
    let mut response = status.into_response();
    if created.new {
        let host = headers.get(header::HOST).and_then(|host| host.to_str().ok()).unwrap_or("localhost");
        set(&mut response, "location", &format!("http://{host}{}", uri.path()));
    }
    response.headers_mut().insert(header::CONTENT_TYPE, value(&created.content_type));
    set(&mut response, h::STREAM_NEXT_OFFSET, &created.tail.token());
    if created.closed {
        set(&mut response, h::STREAM_CLOSED, "true");
    }
    response
}

async fn append(app: &App, name: &str, headers: &HeaderMap, body: Bytes) -> Response {
    let parsed = (|| -> Result<AppendRequest, String> {
        let close = h::closed(headers);
        let content_type = h::content_type(headers)?;
        if body.is_empty() && !close {
            return Err("an empty body appends nothing (only a close, with Stream-Closed: true, may be empty)".into());
        }
        if !body.is_empty() && content_type.is_none() {
            return Err("an append with a body needs a Content-Type".into());
        }
        Ok(AppendRequest { content_type, body: body.to_vec(), producer: h::producer(headers)?, stream_seq: h::stream_seq(headers)?, close })
    })();
    let request = match parsed {
        Ok(request) => request,
        Err(message) => return bad(message),
    };
    let appended = match app.store.append(name, request).await {
        Ok(appended) => appended,
        Err(failed) => return failure(failed),
    };
    let status = if appended.producer.is_some() && appended.data && !appended.duplicate { StatusCode::OK } else { StatusCode::NO_CONTENT };
    let mut response = status.into_response();
    set(&mut response, h::STREAM_NEXT_OFFSET, &appended.tail.token());
    if appended.closed {
        set(&mut response, h::STREAM_CLOSED, "true");
    }
    if let Some((epoch, seq)) = appended.producer {
        set(&mut response, h::PRODUCER_EPOCH, &epoch.to_string());
        set(&mut response, h::PRODUCER_SEQ, &seq.to_string());
    }
    response
}

async fn head(app: &App, name: &str) -> Response {
    let stream = match app.store.find(name, false).await {
        Ok(stream) => stream,
        Err(failed) => return failure(failed),
    };
    let (tail, closed, committed) = {
        let state = stream.lock();
        (state.tail(), state.closed_durably(), state.log.start())
    };
    let mut response = StatusCode::OK.into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, value(&stream.content_type));
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    set(&mut response, h::STREAM_NEXT_OFFSET, &tail.token());
    set(&mut response, h::WALAB_COMMITTED, &committed.token());
    if let Some((name, text)) = h::expiry_header(stream.expiry) {
        set(&mut response, name, &text);
    }
    if closed {
        set(&mut response, h::STREAM_CLOSED, "true");
    }
    response
}

/// The cursor for a live answer.
fn cursor_of(app: &App, client: Option<&str>) -> String {
    cursor::respond(now_unix_ms(), client, app.store.random()).to_string()
}

/// A `200` with records: the body and the headers every read with data carries.
fn records_response(stream: &Stream, answer: &ReadAnswer, headers: &HeaderMap) -> Response {
    let eof = answer.at_end_of_stream();
    let etag = format!("\"{}:{}:{}{}\"", stream.id, answer.from, answer.next, if eof { ":c" } else { "" });
    if headers.get(header::IF_NONE_MATCH).and_then(|value| value.to_str().ok()) == Some(etag.as_str()) {
        let mut response = StatusCode::NOT_MODIFIED.into_response();
        response.headers_mut().insert(header::ETAG, value(&etag));
        return response;
    }
    let parts = read_parts(stream.json, &answer.bodies);
    let body = match parts.len() {
        0 => axum::body::Body::empty(),
        1 => axum::body::Body::from(parts.into_iter().next().expect("one part")),
        _ => axum::body::Body::from_stream(futures::stream::iter(parts.into_iter().map(Ok::<Bytes, std::convert::Infallible>))),
    };
    let mut response = (StatusCode::OK, body).into_response();
    let out = response.headers_mut();
    out.insert(header::CONTENT_TYPE, value(&stream.content_type));
    out.insert(header::ETAG, value(&etag));
    // Records never change once written: a chunk with data may be cached; an empty
    // answer at the tail only says what is there now.
    out.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(if answer.is_empty() { "no-store" } else { "public, max-age=60, stale-while-revalidate=300" }),
    );
    set(&mut response, h::STREAM_NEXT_OFFSET, &answer.next.token());
    if answer.up_to_date() {
        set(&mut response, h::STREAM_UP_TO_DATE, "true");
    }
    if eof {
        set(&mut response, h::STREAM_CLOSED, "true");
    }
    response
}

/// A `204` for a long-poll with nothing to return.
fn nothing_new(stream: &Stream, cursor: Option<String>) -> Response {
    let (tail, closed) = {
        let state = stream.lock();
        (state.tail(), state.closed_durably())
    };
    let mut response = StatusCode::NO_CONTENT.into_response();
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    set(&mut response, h::STREAM_NEXT_OFFSET, &tail.token());
    set(&mut response, h::STREAM_UP_TO_DATE, "true");
    if closed {
        set(&mut response, h::STREAM_CLOSED, "true");
    }
    if let (false, Some(cursor)) = (closed, cursor) {
        set(&mut response, h::STREAM_CURSOR, &cursor);
    }
    response
}

async fn read(app: &App, name: &str, query: Option<&str>, headers: &HeaderMap) -> Response {
    let query = match h::read_query(query) {
        Ok(query) => query,
        Err(message) => return bad(message),
    };
    let stream = match app.store.find(name, true).await {
        Ok(stream) => stream,
        Err(failed) => return failure(failed),
    };
    let from_now = query.offset == Some(ReadFrom::Now);
    let from = app.store.start_of(&stream, query.offset.unwrap_or(ReadFrom::Start));
    match query.live {
        Live::Sse => super::sse::respond(Arc::clone(&app.store), stream, from, query.cursor, app.options.sse_connection),
        Live::No if from_now => {
            let (tail, closed) = {
                let state = stream.lock();
                (state.tail(), state.closed_durably())
            };
            let body: &'static [u8] = if stream.json { b"[]" } else { b"" };
            let mut response = (StatusCode::OK, body).into_response();
            response.headers_mut().insert(header::CONTENT_TYPE, value(&stream.content_type));
            response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            set(&mut response, h::STREAM_NEXT_OFFSET, &tail.token());
            set(&mut response, h::STREAM_UP_TO_DATE, "true");
            if closed {
                set(&mut response, h::STREAM_CLOSED, "true");
            }
            response
        }
        Live::No => match app.store.read(&stream, from, READ_BYTES_MAX).await {
            Ok(answer) => records_response(&stream, &answer, headers),
            Err(failed) => failure(failed),
        },
        Live::LongPoll => {
            let deadline = tokio::time::Instant::now() + app.options.long_poll;
            loop {
                let answer = match app.store.read(&stream, from, READ_BYTES_MAX).await {
                    Ok(answer) => answer,
                    Err(failed) => return failure(failed),
                };
                if !answer.is_empty() {
                    let mut response = records_response(&stream, &answer, headers);
                    if !answer.at_end_of_stream() {
                        set(&mut response, h::STREAM_CURSOR, &cursor_of(app, query.cursor.as_deref()));
                    }
                    return response;
                }
                if answer.closed {
                    return nothing_new(&stream, None);
                }
                match app.store.wait(&stream, from, deadline).await {
                    Waited::More => continue,
                    Waited::Closed | Waited::Timeout => return nothing_new(&stream, Some(cursor_of(app, query.cursor.as_deref()))),
                    Waited::Gone => return failure(StoreError::NotFound),
                }
            }
        }
    }
}

async fn stats(State(app): State<App>) -> Response {
    Json(app.store.stats()).into_response()
}

async fn trace(State(app): State<App>) -> Response {
    super::live::trace(app.store).await
}
