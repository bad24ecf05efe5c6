//! The protocol's request headers and query parameters, parsed strictly: anything that
//! is not exactly what the protocol describes is refused by name (`400`), never
//! guessed at.

use axum::http::HeaderMap;
use walab_core::stream_store::expiry::{parse_ttl, Expiry};
use walab_core::stream_store::offset::{Offset, ReadFrom};
use walab_core::stream_store::record::{ProducerStamp, STREAM_SEQ_BYTES_MAX};
use walab_core::stream_store::{check_producer_id, check_stream_name};

use super::append::ForkRequest;

pub const STREAM_NEXT_OFFSET: &str = "stream-next-offset";
pub const STREAM_UP_TO_DATE: &str = "stream-up-to-date";
pub const STREAM_CLOSED: &str = "stream-closed";
pub const STREAM_CURSOR: &str = "stream-cursor";
pub const STREAM_SEQ: &str = "stream-seq";
pub const STREAM_TTL: &str = "stream-ttl";
pub const STREAM_EXPIRES_AT: &str = "stream-expires-at";
pub const STREAM_FORKED_FROM: &str = "stream-forked-from";
pub const STREAM_FORK_OFFSET: &str = "stream-fork-offset";
pub const STREAM_FORK_SUB_OFFSET: &str = "stream-fork-sub-offset";
pub const STREAM_SSE_DATA_ENCODING: &str = "stream-sse-data-encoding";
pub const PRODUCER_ID: &str = "producer-id";
pub const PRODUCER_EPOCH: &str = "producer-epoch";
pub const PRODUCER_SEQ: &str = "producer-seq";
pub const PRODUCER_EXPECTED_SEQ: &str = "producer-expected-seq";
pub const PRODUCER_RECEIVED_SEQ: &str = "producer-received-seq";
/// walab's extension: how far the stream's records are in committed objects (`HEAD`).
pub const WALAB_COMMITTED: &str = "walab-committed-offset";

/// Where streams live: `/v1/stream/{name}`.
pub const STREAM_ROOT: &str = "/v1/stream/";

/// The largest integer a producer header may carry: 2^53 - 1, for JavaScript clients.
pub const PRODUCER_INTEGER_MAX: u64 = (1 << 53) - 1;

fn text<'a>(headers: &'a HeaderMap, name: &str) -> Result<Option<&'a str>, String> {
    match headers.get(name) {
        None => Ok(None),
        Some(value) => value.to_str().map(Some).map_err(|_| format!("{name}: not visible ASCII text")),
    }
}

/// Whether `Stream-Closed` is `true` (any case); any other value is as if absent.
pub fn closed(headers: &HeaderMap) -> bool {
    headers.get(STREAM_CLOSED).and_then(|value| value.to_str().ok()).is_some_and(|value| value.eq_ignore_ascii_case("true"))
}

/// The request's `Content-Type`, if it has a non-empty one.
pub fn content_type(headers: &HeaderMap) -> Result<Option<String>, String> {
    Ok(text(headers, "content-type")?.map(str::trim).filter(|value| !value.is_empty()).map(str::to_string))
}

/// A non-negative decimal integer of at most 2^53 - 1, without sign, point, exponent or
/// leading zero.
fn integer(name: &str, value: &str) -> Result<u64, String> {
    let bytes = value.as_bytes();
    let plain = !bytes.is_empty() && bytes.iter().all(u8::is_ascii_digit) && (bytes[0] != b'0' || bytes.len() == 1);
    let number = if plain && bytes.len() <= 16 { value.parse::<u64>().ok() } else { None };
    match number {
        Some(number) if number <= PRODUCER_INTEGER_MAX => Ok(number),
        Some(_) | None if plain => Err(format!("{name}: {value} is more than 2^53 - 1 ({PRODUCER_INTEGER_MAX})")),
        _ => Err(format!("{name}: {value:?} is not a non-negative whole number in plain decimal")),
    }
}

/// The producer stamp the headers carry: all three headers, or none.
pub fn producer(headers: &HeaderMap) -> Result<Option<ProducerStamp>, String> {
    let id = text(headers, PRODUCER_ID)?;
    let epoch = text(headers, PRODUCER_EPOCH)?;
    let seq = text(headers, PRODUCER_SEQ)?;
    match (id, epoch, seq) {
        (None, None, None) => Ok(None),
        (Some(id), Some(epoch), Some(seq)) => {
            check_producer_id(id).map_err(|error| format!("Producer-Id {error}"))?;
            Ok(Some(ProducerStamp { id: id.to_string(), epoch: integer("Producer-Epoch", epoch)?, seq: integer("Producer-Seq", seq)? }))
        }
        _ => Err("Producer-Id, Producer-Epoch and Producer-Seq go together: give all three or none".into()),
    }
}

/// The `Stream-Seq` header.
pub fn stream_seq(headers: &HeaderMap) -> Result<Option<String>, String> {
    match text(headers, STREAM_SEQ)? {
        Some(seq) if seq.len() > STREAM_SEQ_BYTES_MAX => Err(format!("Stream-Seq: more than {STREAM_SEQ_BYTES_MAX} bytes")),
        Some(seq) => Ok(Some(seq.to_string())),
        None => Ok(None),
    }
}

/// `Stream-TTL` or `Stream-Expires-At` (never both).
pub fn expiry(headers: &HeaderMap) -> Result<Expiry, String> {
    let ttl = text(headers, STREAM_TTL)?;
    let at = text(headers, STREAM_EXPIRES_AT)?;
    match (ttl, at) {
        (Some(_), Some(_)) => Err("Stream-TTL and Stream-Expires-At: give one or the other".into()),
        (Some(ttl), None) => parse_ttl(ttl).map(|seconds| Expiry::Ttl { seconds }).map_err(|error| format!("Stream-TTL {ttl:?} {error}")),
        (None, Some(at)) => {
            let time = chrono::DateTime::parse_from_rfc3339(at.trim())
                .map_err(|error| format!("Stream-Expires-At {at:?} is not an RFC 3339 time: {error}"))?;
            let unix_ms = u64::try_from(time.timestamp_millis()).map_err(|_| format!("Stream-Expires-At {at:?} is before 1970"))?;
            Ok(Expiry::At { unix_ms })
        }
        (None, None) => Ok(Expiry::Never),
    }
}

/// An expiry as response headers: `(name, value)`.
pub fn expiry_header(expiry: Expiry) -> Option<(&'static str, String)> {
    match expiry {
        Expiry::Never => None,
        Expiry::Ttl { seconds } => Some((STREAM_TTL, seconds.to_string())),
        Expiry::At { unix_ms } => {
            let time = chrono::DateTime::from_timestamp_millis(i64::try_from(unix_ms).ok()?)?;
            Some((STREAM_EXPIRES_AT, time.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)))
        }
    }
}

/// The stream name in a path below [`STREAM_ROOT`] (percent-decoded).
pub fn stream_name_of_path(path: &str) -> Result<String, String> {
    let decoded = percent_encoding::percent_decode_str(path).decode_utf8().map_err(|_| format!("{path:?}: not UTF-8"))?;
    check_stream_name(&decoded).map_err(|error| format!("stream name {error}"))?;
    Ok(decoded.into_owned())
}

/// A `PUT`'s fork headers.
pub fn fork(headers: &HeaderMap) -> Result<Option<ForkRequest>, String> {
    let from = text(headers, STREAM_FORKED_FROM)?;
    let offset = text(headers, STREAM_FORK_OFFSET)?;
    let sub_offset = text(headers, STREAM_FORK_SUB_OFFSET)?;
    let Some(from) = from else {
        if offset.is_some() || sub_offset.is_some() {
            return Err("Stream-Fork-Offset and Stream-Fork-Sub-Offset need Stream-Forked-From".into());
        }
        return Ok(None);
    };
    // The source's path on this server, or a URL of it.
    let path = match from.find("://") {
        Some(scheme_end) => from[scheme_end + 3..].find('/').map_or("", |slash| &from[scheme_end + 3 + slash..]),
        None => from,
    };
    let path = path.split(['?', '#']).next().unwrap_or("");
    let Some(name) = path.strip_prefix(STREAM_ROOT) else {
        return Err(format!("Stream-Forked-From {from:?}: a stream of this server is at {STREAM_ROOT}NAME"));
    };
    let source = stream_name_of_path(name).map_err(|error| format!("Stream-Forked-From: {error}"))?;
    let offset = match offset {
        Some(token) => Some(Offset::parse(token).map_err(|error| format!("Stream-Fork-Offset {token:?} {error}"))?),
        None => None,
    };
    let sub_offset = match sub_offset {
        Some(value) => Some(integer("Stream-Fork-Sub-Offset", value)?),
        None => None,
    };
    Ok(Some(ForkRequest { source, offset, sub_offset }))
}

/// What a `GET` asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadQuery {
    /// `None`: no `offset` parameter.
    pub offset: Option<ReadFrom>,
    pub live: Live,
    pub cursor: Option<String>,
}

/// A `GET`'s mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Live {
    /// A catch-up read.
    No,
    LongPoll,
    Sse,
}

/// Reads a `GET`'s query: `offset` once and well-formed, `live` one of the modes;
/// parameters it does not know are ignored.
pub fn read_query(query: Option<&str>) -> Result<ReadQuery, String> {
    let mut offset = None;
    let mut live = None;
    let mut cursor = None;
    for (key, value) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        match key.as_ref() {
            "offset" => {
                if offset.is_some() {
                    return Err("offset: given more than once".into());
                }
                offset = Some(ReadFrom::parse(&value).map_err(|error| format!("offset {value:?} {error}"))?);
            }
            "live" => {
                if live.is_some() {
                    return Err("live: given more than once".into());
                }
                live = Some(match value.as_ref() {
                    "long-poll" => Live::LongPoll,
                    "sse" => Live::Sse,
                    other => return Err(format!("live {other:?}: use long-poll or sse")),
                });
            }
            "cursor" => cursor = Some(value.into_owned()),
            _ => {}
        }
    }
    let live = live.unwrap_or(Live::No);
    if live != Live::No && offset.is_none() {
        return Err("a live read needs an offset (-1 for the beginning, now for the tail)".into());
    }
    Ok(ReadQuery { offset, live, cursor })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn producer_headers_come_together_as_plain_integers_up_to_2_53() {
        let stamp = producer(&headers(&[(PRODUCER_ID, "p"), (PRODUCER_EPOCH, "0"), (PRODUCER_SEQ, "9007199254740991")])).unwrap();
        assert_eq!(stamp, Some(ProducerStamp { id: "p".into(), epoch: 0, seq: PRODUCER_INTEGER_MAX }));
        assert_eq!(producer(&HeaderMap::new()), Ok(None));
        for partial in [&[(PRODUCER_ID, "p")][..], &[(PRODUCER_EPOCH, "0")], &[(PRODUCER_ID, "p"), (PRODUCER_EPOCH, "0")]] {
            assert!(producer(&headers(partial)).is_err());
        }
        for bad in ["1abc", "0xyz", "1e3", "-1", "+1", "01", "1.0", "", "9007199254740992", "99999999999999999999"] {
            let error = producer(&headers(&[(PRODUCER_ID, "p"), (PRODUCER_EPOCH, bad), (PRODUCER_SEQ, "0")])).unwrap_err();
            assert!(error.starts_with("Producer-Epoch"), "{bad:?}: {error}");
        }
        assert_eq!(
            producer(&headers(&[(PRODUCER_ID, "p"), (PRODUCER_EPOCH, "9007199254740992"), (PRODUCER_SEQ, "0")])),
            Err("Producer-Epoch: 9007199254740992 is more than 2^53 - 1 (9007199254740991)".into())
        );
        assert!(producer(&headers(&[(PRODUCER_ID, ""), (PRODUCER_EPOCH, "0"), (PRODUCER_SEQ, "0")])).is_err());
    }

    #[test]
    fn expiry_headers() {
        assert_eq!(expiry(&headers(&[(STREAM_TTL, "3600")])), Ok(Expiry::Ttl { seconds: 3600 }));
        assert!(expiry(&headers(&[(STREAM_TTL, "060")])).is_err());
        assert_eq!(expiry(&headers(&[(STREAM_EXPIRES_AT, "2026-01-02T03:04:05.678Z")])), Ok(Expiry::At { unix_ms: 1_767_323_045_678 }));
        assert_eq!(expiry(&headers(&[(STREAM_EXPIRES_AT, "2026-01-02T03:04:05.678+00:00")])), Ok(Expiry::At { unix_ms: 1_767_323_045_678 }));
        assert!(expiry(&headers(&[(STREAM_EXPIRES_AT, "not-a-timestamp")])).is_err());
        assert!(expiry(&headers(&[(STREAM_TTL, "1"), (STREAM_EXPIRES_AT, "2026-01-02T03:04:05Z")])).is_err());
        assert_eq!(expiry_header(Expiry::At { unix_ms: 1_767_323_045_678 }), Some((STREAM_EXPIRES_AT, "2026-01-02T03:04:05.678Z".into())));
    }

    #[test]
    fn queries_and_fork_headers() {
        assert_eq!(read_query(None), Ok(ReadQuery { offset: None, live: Live::No, cursor: None }));
        let query = read_query(Some("offset=now&live=long-poll&cursor=12&foo=bar")).unwrap();
        assert_eq!((query.offset, query.live, query.cursor.as_deref()), (Some(ReadFrom::Now), Live::LongPoll, Some("12")));
        for bad in ["offset=", "offset=a&offset=b", "offset=0%2C1", "live=sse", "offset=-1&live=forever", "offset=0%201"] {
            assert!(read_query(Some(bad)).is_err(), "{bad}");
        }
        let fork = fork(&headers(&[(STREAM_FORKED_FROM, "/v1/stream/a%20b/c"), (STREAM_FORK_SUB_OFFSET, "3")])).unwrap().unwrap();
        assert_eq!((fork.source.as_str(), fork.offset, fork.sub_offset), ("a b/c", None, Some(3)));
        let url = super::fork(&headers(&[(STREAM_FORKED_FROM, "http://127.0.0.1:1/v1/stream/x")])).unwrap().unwrap();
        assert_eq!(url.source, "x");
        assert!(super::fork(&headers(&[(STREAM_FORK_SUB_OFFSET, "0")])).is_err());
        assert!(super::fork(&headers(&[(STREAM_FORKED_FROM, "/elsewhere/x")])).is_err());
        for bad in ["-1", "abc", "1.5", "05", "+1"] {
            assert!(super::fork(&headers(&[(STREAM_FORKED_FROM, "/v1/stream/x"), (STREAM_FORK_SUB_OFFSET, bad)])).is_err(), "{bad}");
        }
        assert!(closed(&headers(&[(STREAM_CLOSED, "TRUE")])));
        assert!(!closed(&headers(&[(STREAM_CLOSED, "yes")])));
    }
}
