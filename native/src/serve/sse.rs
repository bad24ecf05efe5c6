//! `GET ...?live=sse`: a stream's records as server-sent events, from an offset on, as
//! they become durable.
//!
//! Every `data` event (the records of one read: bytes as text, JSON as one array,
//! anything else base64) is followed by a `control` event with the offset after it, the
//! cursor, and whether the reader is up to date or at the end of a closed stream; then
//! the server waits until the WAL acknowledges more (or the stream closes) and sends
//! again. A payload is split into one `data:` line per line of its text, so no byte of a
//! record can end an event early or start one: what a record holds is only ever data.
//! The connection is closed after the stream closes, or after
//! [`super::http::HttpOptions::sse_connection`] (the protocol's ~60 s, so caches can
//! collapse readers), and the client reconnects from the last offset it got.

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use futures::stream;
use walab_core::stream_store::cursor;
use walab_core::stream_store::offset::Offset;

use super::body::{read_body, sse_as_text};
use super::headers::STREAM_SSE_DATA_ENCODING;
use super::read::Waited;

/// The most data bytes one `data` event carries (at least one record).
pub const SSE_EVENT_BYTES_MAX: usize = 1 << 20;
use super::store::{now_unix_ms, Store};
use super::stream::Stream;

/// Writes `payload` as one event's `data:` lines: each line of the text its own line
/// (CR, LF and CRLF all end one), a line that starts with a space written after
/// `data: ` so that the reader's one-space strip keeps it.
fn push_data_lines(out: &mut String, payload: &str) {
    let mut rest = payload;
    loop {
        let end = rest.find(['\r', '\n']).unwrap_or(rest.len());
        let line = &rest[..end];
        out.push_str(if line.starts_with(' ') { "data: " } else { "data:" });
        out.push_str(line);
        out.push('\n');
        if end == rest.len() {
            break;
        }
        let skip = if rest[end..].starts_with("\r\n") { 2 } else { 1 };
        rest = &rest[end + skip..];
    }
}

/// A `data` event of `bodies` (as the stream's content type says).
fn data_event(stream: &Stream, text: bool, bodies: &[Arc<[u8]>]) -> String {
    let joined = read_body(stream.json, bodies.iter().map(|body| &body[..]));
    let payload = match text {
        true => String::from_utf8_lossy(&joined).into_owned(),
        false => base64::engine::general_purpose::STANDARD.encode(&joined),
    };
    let mut out = String::with_capacity(payload.len() + 32);
    out.push_str("event: data\n");
    push_data_lines(&mut out, &payload);
    out.push('\n');
    out
}

/// A `control` event.
fn control_event(next: Offset, cursor: Option<u64>, up_to_date: bool, closed: bool) -> String {
    let mut fields = vec![format!("\"streamNextOffset\":\"{next}\"")];
    if let (false, Some(cursor)) = (closed, cursor) {
        fields.push(format!("\"streamCursor\":\"{cursor}\""));
    }
    if up_to_date || closed {
        fields.push("\"upToDate\":true".into());
    }
    if closed {
        fields.push("\"streamClosed\":true".into());
    }
    format!("event: control\ndata:{{{}}}\n\n", fields.join(","))
}

struct Tail {
    store: Arc<Store>,
    stream: Arc<Stream>,
    at: Offset,
    text: bool,
    cursor: Option<String>,
    deadline: tokio::time::Instant,
    sent_control: bool,
    done: bool,
}

impl Tail {
    fn cursor(&self) -> u64 {
        cursor::respond(now_unix_ms(), self.cursor.as_deref(), self.store.random())
    }

    /// The next chunk of events, or `None` when the connection should end.
    async fn next(&mut self) -> Option<String> {
        while !self.done {
            let answer = match self.store.read(&self.stream, self.at, SSE_EVENT_BYTES_MAX).await {
                Ok(answer) => answer,
                Err(error) => {
                    self.done = true;
                    return Some(format!("event: error\ndata:{}\n\n", serde_json::json!({ "error": error.to_string() })));
                }
            };
            if !answer.is_empty() {
                self.at = answer.next;
                let closed = answer.at_end_of_stream();
                self.done = closed;
                self.sent_control = true;
                let cursor = self.cursor();
                let mut chunk = data_event(&self.stream, self.text, &answer.bodies);
                chunk.push_str(&control_event(answer.next, Some(cursor), answer.up_to_date(), closed));
                return Some(chunk);
            }
            if answer.closed || !self.sent_control {
                self.done = answer.closed;
                self.sent_control = true;
                let cursor = self.cursor();
                return Some(control_event(answer.next, Some(cursor), true, answer.closed));
            }
            match self.store.wait(&self.stream, self.at, self.deadline).await {
                Waited::More | Waited::Closed => continue,
                Waited::Timeout | Waited::Gone => self.done = true,
            }
        }
        None
    }
}

/// The SSE response for `stream` from `from`.
pub fn respond(store: Arc<Store>, stream: Arc<Stream>, from: Offset, cursor: Option<String>, lifetime: std::time::Duration) -> Response {
    let text = sse_as_text(&stream.content_type);
    let tail = Tail { store, stream, at: from, text, cursor, deadline: tokio::time::Instant::now() + lifetime, sent_control: false, done: false };
    let events = stream::unfold(tail, |mut tail| async move {
        let chunk = tail.next().await?;
        Some((Ok::<_, Infallible>(Bytes::from(chunk)), tail))
    });
    let mut response = (StatusCode::OK, Body::from_stream(events)).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if !text {
        headers.insert(STREAM_SSE_DATA_ENCODING, HeaderValue::from_static("base64"));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_is_data_and_nothing_in_a_record_ends_an_event() {
        let mut out = String::new();
        push_data_lines(&mut out, "safe\r\n\r\nevent: control\rdata: {\"x\":1}\n more");
        assert_eq!(out, "data:safe\ndata:\ndata:event: control\ndata:data: {\"x\":1}\ndata:  more\n");
        let mut one = String::new();
        push_data_lines(&mut one, "line1");
        assert_eq!(one, "data:line1\n");
        assert_eq!(
            control_event(Offset::new(1, 5), Some(7), true, false),
            "event: control\ndata:{\"streamNextOffset\":\"0000000000000001_0000000000000005\",\"streamCursor\":\"7\",\"upToDate\":true}\n\n"
        );
        assert_eq!(
            control_event(Offset::new(1, 5), Some(7), false, true),
            "event: control\ndata:{\"streamNextOffset\":\"0000000000000001_0000000000000005\",\"upToDate\":true,\"streamClosed\":true}\n\n"
        );
    }
}
