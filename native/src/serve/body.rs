//! What a stream's bytes mean: content types, and JSON mode's messages.
//!
//! Most streams are bytes: a `POST`'s body is appended as it is and a read returns the
//! bytes of the records it covers, one after the other. A stream created as
//! `application/json` keeps *messages*: a `POST` body must be JSON; an array is
//! flattened one level (each element is one message, `[]` is refused), anything else is
//! one message; a read returns every message it covers as one JSON array. A record
//! stores its messages' text as sent, joined by commas, so a read is the records'
//! bodies joined by commas inside brackets, and no message is parsed again to be read.

use serde_json::value::RawValue;

/// JSON mode's media type.
pub const JSON_MEDIA_TYPE: &str = "application/json";
/// What a stream created without a `Content-Type` has.
pub const DEFAULT_CONTENT_TYPE: &str = "application/octet-stream";

/// The media type of a `Content-Type` value (`type/subtype`, lowercase, parameters
/// dropped): what two content types are compared by.
pub fn media_type(content_type: &str) -> String {
    content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase()
}

/// Whether two content types have the same media type, without allocating.
pub fn same_media_type(a: &str, b: &str) -> bool {
    fn media(content_type: &str) -> &str {
        content_type.split(';').next().unwrap_or("").trim()
    }
    media(a).eq_ignore_ascii_case(media(b))
}

/// Whether SSE carries the stream's data as text (`text/*`, JSON) rather than base64.
pub fn sse_as_text(content_type: &str) -> bool {
    let media = media_type(content_type);
    media.starts_with("text/") || media == JSON_MEDIA_TYPE
}

/// Why a JSON body was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JsonError {
    Invalid(String),
    /// `[]` in a `POST`: an append of nothing.
    EmptyArray,
}

impl std::fmt::Display for JsonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JsonError::Invalid(error) => write!(f, "the body is not JSON: {error}"),
            JsonError::EmptyArray => write!(f, "an empty JSON array appends no message"),
        }
    }
}

/// A JSON body's messages as a record body (their text joined by commas), and how many
/// there are; `None` for `[]` when `empty_array_allowed` (a `PUT` creating an empty
/// stream).
pub fn json_record(body: &[u8], empty_array_allowed: bool) -> Result<Option<(Vec<u8>, usize)>, JsonError> {
    let value: &RawValue = serde_json::from_slice(body).map_err(|error| JsonError::Invalid(error.to_string()))?;
    let text = value.get();
    if !text.starts_with('[') {
        return Ok(Some((text.as_bytes().to_vec(), 1)));
    }
    let messages: Vec<&RawValue> = serde_json::from_str(text).map_err(|error| JsonError::Invalid(error.to_string()))?;
    if messages.is_empty() {
        return if empty_array_allowed { Ok(None) } else { Err(JsonError::EmptyArray) };
    }
    Ok(Some((join(messages.iter().map(|m| m.get().as_bytes())), messages.len())))
}

fn join<'a>(parts: impl Iterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    for (n, part) in parts.enumerate() {
        if n > 0 {
            out.push(b',');
        }
        out.extend_from_slice(part);
    }
    out
}

/// The first `count` messages of a stored JSON record as a record body, or the number
/// of messages it holds when it holds fewer.
pub fn json_prefix(record: &[u8], count: u64) -> Result<Vec<u8>, usize> {
    let text = [&b"["[..], record, b"]"].concat();
    // A stored record was checked when it was appended: it parses.
    let messages: Vec<&RawValue> = serde_json::from_slice(&text).unwrap_or_default();
    if count > messages.len() as u64 {
        return Err(messages.len());
    }
    Ok(join(messages.iter().take(count as usize).map(|m| m.get().as_bytes())))
}

/// Joins record bodies into what a read returns: bytes one after the other, or for a
/// JSON stream one array of every message.
pub fn read_body<'a>(json: bool, bodies: impl Iterator<Item = &'a [u8]>) -> Vec<u8> {
    if !json {
        return bodies.flatten().copied().collect();
    }
    let mut out = vec![b'['];
    out.extend(join(bodies));
    out.push(b']');
    out
}

/// What a read returns as pieces that share the records' bytes instead of copying them:
/// the bodies, and for a JSON stream the brackets and commas around them.
pub fn read_parts(json: bool, bodies: &[std::sync::Arc<[u8]>]) -> Vec<bytes::Bytes> {
    let mut parts = Vec::with_capacity(bodies.len() * 2 + 2);
    if json {
        parts.push(bytes::Bytes::from_static(b"["));
    }
    for (n, body) in bodies.iter().enumerate() {
        if json && n > 0 {
            parts.push(bytes::Bytes::from_static(b","));
        }
        parts.push(bytes::Bytes::from_owner(std::sync::Arc::clone(body)));
    }
    if json {
        parts.push(bytes::Bytes::from_static(b"]"));
    }
    parts
}

/// Joins two record bodies of one stream into one (a fork's inherited prefix and its
/// initial body).
pub fn concat(json: bool, first: &[u8], second: &[u8]) -> Vec<u8> {
    if first.is_empty() || second.is_empty() {
        return [first, second].concat();
    }
    match json {
        true => [first, b",", second].concat(),
        false => [first, second].concat(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(body: &str) -> Result<Option<(String, usize)>, JsonError> {
        json_record(body.as_bytes(), false).map(|found| found.map(|(bytes, n)| (String::from_utf8(bytes).unwrap(), n)))
    }

    #[test]
    fn an_array_is_flattened_one_level_and_anything_else_is_one_message() {
        assert_eq!(record(r#"{"event": "created"}"#), Ok(Some((r#"{"event": "created"}"#.into(), 1))));
        assert_eq!(record(r#"[{"event": "a"}, {"event": "b"}]"#), Ok(Some((r#"{"event": "a"},{"event": "b"}"#.into(), 2))));
        assert_eq!(record("[[1,2], [3,4]]"), Ok(Some(("[1,2],[3,4]".into(), 2))));
        assert_eq!(record("[[[1,2,3]]]"), Ok(Some(("[[1,2,3]]".into(), 1))));
        assert_eq!(record(" 42 "), Ok(Some(("42".into(), 1))));
        assert_eq!(record("[]"), Err(JsonError::EmptyArray));
        assert_eq!(json_record(b" [ ] ", true), Ok(None));
        assert!(matches!(record("{ invalid json }"), Err(JsonError::Invalid(_))));
        assert!(matches!(record(""), Err(JsonError::Invalid(_))));
        assert!(matches!(json_record(&[0xff, b'1'], false), Err(JsonError::Invalid(_))));
    }

    #[test]
    fn reads_join_records_and_a_prefix_counts_messages() {
        let bodies: [&[u8]; 2] = [br#"{"a":1},{"b":2}"#, b"[3]"];
        assert_eq!(read_body(true, bodies.iter().copied()), br#"[{"a":1},{"b":2},[3]]"#.to_vec());
        assert_eq!(read_body(true, std::iter::empty()), b"[]".to_vec());
        assert_eq!(read_body(false, [&b"ab"[..], b"c"].into_iter()), b"abc".to_vec());
        let shared: Vec<std::sync::Arc<[u8]>> = bodies.iter().map(|body| std::sync::Arc::from(*body)).collect();
        assert_eq!(read_parts(true, &shared).concat(), read_body(true, bodies.iter().copied()));
        assert_eq!(read_parts(false, &shared).concat(), read_body(false, bodies.iter().copied()));
        assert_eq!(json_prefix(br#"{"a":1},{"b":[2, 3]},"c""#, 2), Ok(br#"{"a":1},{"b":[2, 3]}"#.to_vec()));
        assert_eq!(json_prefix(br#"{"a":1}"#, 0), Ok(Vec::new()));
        assert_eq!(json_prefix(br#"{"a":1}"#, 2), Err(1));
        assert_eq!(concat(true, b"1,2", b"3"), b"1,2,3".to_vec());
        assert_eq!(concat(true, b"", b"3"), b"3".to_vec());
        assert_eq!(concat(false, b"hel", b"XY"), b"helXY".to_vec());
    }

    #[test]
    fn content_types_compare_by_media_type() {
        assert_eq!(media_type("Application/JSON; charset=utf-8"), "application/json");
        assert!(same_media_type("TEXT/plain", "text/plain; charset=utf-8") && !same_media_type("text/plain", "text/html"));
        assert!(sse_as_text("text/plain") && sse_as_text("application/json; charset=utf-8"));
        assert!(!sse_as_text("application/octet-stream") && !sse_as_text("image/png"));
    }
}
