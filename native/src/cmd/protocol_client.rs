//! A small client of the Durable Streams protocol, what `load --http`, `bench --http`
//! and `crash-test --serve` speak to a server: `walab serve`, or any other server of the
//! protocol (the Node reference server, for comparison).
//!
//! A stream is a URL, here `BASE/v1/stream/{name}`. `PUT` creates it with a content
//! type (`201`, or `200` when it already exists alike); `POST` appends a body to it and
//! is answered once the append is durable, with the stream's new tail in
//! `Stream-Next-Offset`; `GET ?offset=X` reads what follows offset `X` (`-1`: the start),
//! a chunk at a time, each answer naming the offset to read from next and saying
//! `Stream-Up-To-Date: true` once it reached the tail. Offsets are opaque strings that
//! sort as the stream does; a client only ever sends back offsets it was given.
//!
//! A JSON stream (`application/json`) keeps message boundaries: a POST of a JSON array
//! appends each element as a message of its own, all of them or none, and a read answers
//! a JSON array of messages. A byte stream keeps none: a read answers the bytes.
//!
//! An idempotent producer sends `Producer-Id`, `Producer-Epoch` and `Producer-Seq` with
//! each POST, the seq one higher per request (however many messages it holds). The
//! server answers a new seq `200`, a seq it already has `204` (a duplicate: nothing
//! appended, also after a restart), a seq past the next one `409` with
//! `Producer-Expected-Seq`, and an epoch below the producer's current one `403` with
//! that epoch in `Producer-Epoch`. A retry after a lost answer is therefore safe: it is
//! appended once.

use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use http::header::{HeaderMap, HeaderValue, CONTENT_TYPE, HOST};
use http::{Request, StatusCode};
use hyper_util::rt::TokioIo;

/// Where streams live under a server's base URL.
pub const STREAM_ROOT: &str = "/v1/stream/";

/// The protocol's headers (HTTP header names are case-insensitive; these are as `http`
/// compares them).
pub mod header {
    pub const PRODUCER_ID: &str = "producer-id";
    pub const PRODUCER_EPOCH: &str = "producer-epoch";
    pub const PRODUCER_SEQ: &str = "producer-seq";
    pub const PRODUCER_EXPECTED_SEQ: &str = "producer-expected-seq";
    pub const PRODUCER_RECEIVED_SEQ: &str = "producer-received-seq";
    pub const STREAM_NEXT_OFFSET: &str = "stream-next-offset";
    pub const STREAM_UP_TO_DATE: &str = "stream-up-to-date";
    pub const STREAM_CLOSED: &str = "stream-closed";
}

/// The offset a read starts from to get a stream from its beginning.
pub const START_OFFSET: &str = "-1";

/// The most bytes of an answer this client reads (a read's chunk is the server's choice).
const ANSWER_BYTES_MAX: usize = 64 << 20;

/// A stream's content type, as far as these clients use them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Content {
    /// `application/octet-stream`: bytes without boundaries; a batch is its records'
    /// bytes one after another.
    Bytes,
    /// `application/json`: messages; a batch is a JSON array, one message per element.
    Json,
}

impl Content {
    pub fn mime(self) -> &'static str {
        match self {
            Content::Bytes => "application/octet-stream",
            Content::Json => "application/json",
        }
    }

    pub fn header(self) -> HeaderValue {
        HeaderValue::from_static(self.mime())
    }
}

/// A whole answer: status, headers, body.
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|value| value.to_str().ok())
    }

    /// A header that holds a non-negative integer.
    pub fn number(&self, name: &str) -> Option<u64> {
        self.header(name).and_then(|value| value.trim().parse().ok())
    }

    /// `Stream-Next-Offset`.
    pub fn next_offset(&self) -> Option<&str> {
        self.header(header::STREAM_NEXT_OFFSET)
    }

    /// Whether a `true`-valued header (`Stream-Up-To-Date`, `Stream-Closed`) is there.
    pub fn says(&self, name: &str) -> bool {
        self.header(name).is_some_and(|value| value.trim().eq_ignore_ascii_case("true"))
    }

    /// The status, the protocol's headers it carries and the start of the body, for an
    /// error message.
    pub fn describe(&self) -> String {
        let mut text = self.status.to_string();
        for name in [header::PRODUCER_EPOCH, header::PRODUCER_SEQ, header::PRODUCER_EXPECTED_SEQ, header::PRODUCER_RECEIVED_SEQ, header::STREAM_CLOSED] {
            if let Some(value) = self.header(name) {
                text.push_str(&format!(", {name}: {value}"));
            }
        }
        let body = String::from_utf8_lossy(&self.body[..self.body.len().min(300)]).trim().to_string();
        if !body.is_empty() {
            text.push_str(&format!(": {body}"));
        }
        text
    }
}

/// What a successful append's answer says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Appended {
    /// Appended now; the stream's tail after it.
    Fresh { next_offset: String },
    /// A producer's seq the server already had: nothing appended. `highest_seq` is the
    /// server's highest accepted seq for the producer at this epoch, when it says.
    Duplicate { highest_seq: Option<u64> },
}

/// Why an append was not taken.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refused {
    /// `403`: a newer epoch of the producer wrote; its epoch.
    StaleEpoch { current: Option<u64> },
    /// `409` with the seqs: the server expected another seq.
    SeqGap { expected: Option<u64>, received: Option<u64> },
    /// `409` with `Stream-Closed: true`.
    Closed,
    /// Anything else: the answer described.
    Other(String),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let number = |n: &Option<u64>| n.map_or("?".to_string(), |n| n.to_string());
        match self {
            Refused::StaleEpoch { current } => write!(f, "403: a stale producer epoch (the current one is {})", number(current)),
            Refused::SeqGap { expected, received } => {
                write!(f, "409: a seq gap (expected seq {}, received {})", number(expected), number(received))
            }
            Refused::Closed => write!(f, "409: the stream is closed"),
            Refused::Other(answer) => write!(f, "{answer}"),
        }
    }
}

/// Reads an append's answer. `as_producer`: the request carried producer headers, so a
/// `204` is a duplicate; without them a `204` (or `200`) is a fresh append.
pub fn appended(answer: &Answer, as_producer: bool) -> Result<Appended, Refused> {
    let fresh = |answer: &Answer| match answer.next_offset() {
        Some(offset) if !offset.is_empty() => Ok(Appended::Fresh { next_offset: offset.to_string() }),
        _ => Err(Refused::Other(format!("{} without a {} header", answer.describe(), header::STREAM_NEXT_OFFSET))),
    };
    match answer.status {
        StatusCode::OK => fresh(answer),
        StatusCode::NO_CONTENT if !as_producer => fresh(answer),
        StatusCode::NO_CONTENT => Ok(Appended::Duplicate { highest_seq: answer.number(header::PRODUCER_SEQ) }),
        StatusCode::FORBIDDEN if as_producer => Err(Refused::StaleEpoch { current: answer.number(header::PRODUCER_EPOCH) }),
        StatusCode::CONFLICT if answer.says(header::STREAM_CLOSED) => Err(Refused::Closed),
        StatusCode::CONFLICT if answer.header(header::PRODUCER_EXPECTED_SEQ).is_some() => Err(Refused::SeqGap {
            expected: answer.number(header::PRODUCER_EXPECTED_SEQ),
            received: answer.number(header::PRODUCER_RECEIVED_SEQ),
        }),
        _ => Err(Refused::Other(answer.describe())),
    }
}

/// `http://HOST:PORT[/]`: the authority, to connect to and to send as `Host`.
pub fn authority_of(url: &str) -> Option<String> {
    let authority = url.strip_prefix("http://")?.trim_end_matches('/');
    (!authority.is_empty() && !authority.contains('/') && authority.contains(':')).then(|| authority.to_string())
}

/// Escapes an offset (or a stream name) for a URL: everything but the unreserved
/// characters as `%XX`. Offsets are opaque, so a client escapes whatever it was given.
pub fn escape(text: &str) -> String {
    percent_encoding::utf8_percent_encode(text, UNRESERVED_COMPLEMENT).to_string()
}

const UNRESERVED_COMPLEMENT: &percent_encoding::AsciiSet =
    &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// The path of stream `name`.
pub fn stream_path(name: &str) -> String {
    format!("{STREAM_ROOT}{}", escape(name))
}

/// One HTTP/1.1 connection (hyper's connection API, with `TCP_NODELAY`): no pool, one
/// request at a time.
pub struct Connection {
    sender: hyper::client::conn::http1::SendRequest<Body>,
}

impl Connection {
    pub async fn open(authority: &str) -> Result<Connection, String> {
        let stream = tokio::net::TcpStream::connect(authority).await.map_err(|error| format!("http://{authority}: {error}"))?;
        stream.set_nodelay(true).map_err(|error| format!("http://{authority}: TCP_NODELAY: {error}"))?;
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|error| format!("http://{authority}: {error}"))?;
        // Ends when the server closes the connection or the sender is dropped.
        tokio::spawn(connection);
        Ok(Connection { sender })
    }

    /// Sends one request and reads the whole answer, whatever its status; `Err` only when
    /// no whole answer came (the connection failed or closed: the server may have died).
    pub async fn exchange(&mut self, request: Request<Body>) -> Result<Answer, String> {
        self.sender.ready().await.map_err(|error| error.to_string())?;
        let response = self.sender.send_request(request).await.map_err(|error| error.to_string())?;
        let (parts, body) = response.into_parts();
        let body = axum::body::to_bytes(Body::new(body), ANSWER_BYTES_MAX)
            .await
            .map_err(|error| format!("{}: the answer's body: {error}", parts.status))?;
        Ok(Answer { status: parts.status, headers: parts.headers, body })
    }
}

/// An idempotent producer's headers for one request.
#[derive(Clone, Copy, Debug)]
pub struct ProducerHeaders<'a> {
    pub id: &'a HeaderValue,
    pub epoch: u64,
    pub seq: u64,
}

/// Builds an append: `POST path` with the body, its content type and, for a producer,
/// its headers.
pub fn append_request(path: &str, host: &HeaderValue, content: Content, body: Bytes, producer: Option<ProducerHeaders<'_>>) -> Result<Request<Body>, String> {
    let mut request = Request::post(path).header(HOST, host.clone()).header(CONTENT_TYPE, content.header());
    if let Some(producer) = producer {
        request = request
            .header(header::PRODUCER_ID, producer.id.clone())
            .header(header::PRODUCER_EPOCH, HeaderValue::from(producer.epoch))
            .header(header::PRODUCER_SEQ, HeaderValue::from(producer.seq));
    }
    request.body(Body::from(body)).map_err(|error| format!("POST {path}: {error}"))
}

/// Requests to one server on one connection, each answered before the next.
pub struct Client {
    connection: Connection,
    host: HeaderValue,
    authority: String,
    /// How long an answer may take before the request counts as failed (`None`: no
    /// bound).
    answer_within: Option<Duration>,
}

impl Client {
    pub async fn open(authority: &str) -> Result<Client, String> {
        let host = HeaderValue::from_str(authority).map_err(|_| format!("{authority}: not a host"))?;
        Ok(Client { connection: Connection::open(authority).await?, host, authority: authority.to_string(), answer_within: None })
    }

    /// Every later request fails (`Err`) when its whole answer has not come within
    /// `bound`: a server that stops answering is reported instead of waited for.
    pub fn answer_within(mut self, bound: Duration) -> Client {
        self.answer_within = Some(bound);
        self
    }

    async fn exchange(&mut self, request: Request<Body>) -> Result<Answer, String> {
        let what = format!("{} http://{}{}", request.method(), self.authority, request.uri());
        let answer = match self.answer_within {
            None => self.connection.exchange(request).await,
            Some(bound) => match tokio::time::timeout(bound, self.connection.exchange(request)).await {
                Ok(answer) => answer,
                Err(_) => Err(format!("no answer within {} s", bound.as_secs_f64())),
            },
        };
        answer.map_err(|error| format!("{what}: {error}"))
    }

    async fn send(&mut self, request: http::request::Builder, body: Body) -> Result<Answer, String> {
        let request = request.header(HOST, self.host.clone()).body(body).map_err(|error| error.to_string())?;
        self.exchange(request).await
    }

    /// Creates stream `name` with this content type, or finds it there alike.
    pub async fn create(&mut self, name: &str, content: Content) -> Result<(), String> {
        let path = stream_path(name);
        let answer = self.send(Request::put(&path).header(CONTENT_TYPE, content.header()), Body::empty()).await?;
        match answer.status {
            StatusCode::CREATED | StatusCode::OK => Ok(()),
            _ => Err(format!("PUT http://{}{path}: {}", self.authority, answer.describe())),
        }
    }

    /// One append to stream `name`; the answer as it came (see [`appended`]).
    pub async fn append(&mut self, name: &str, content: Content, body: Bytes, producer: Option<ProducerHeaders<'_>>) -> Result<Answer, String> {
        let path = stream_path(name);
        let request = append_request(&path, &self.host, content, body, producer)?;
        self.exchange(request).await
    }

    /// A catch-up read of stream `name` from `offset`.
    pub async fn read(&mut self, name: &str, offset: &str) -> Result<Answer, String> {
        self.get(&format!("{}?offset={}", stream_path(name), escape(offset))).await
    }

    /// `HEAD` of stream `name`.
    pub async fn head(&mut self, name: &str) -> Result<Answer, String> {
        self.send(Request::head(stream_path(name)), Body::empty()).await
    }

    /// A `GET` of any path on the server (`/stats`).
    pub async fn get(&mut self, path: &str) -> Result<Answer, String> {
        self.send(Request::get(path), Body::empty()).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, headers: &[(&str, &str)]) -> Answer {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.insert(http::HeaderName::from_bytes(name.as_bytes()).unwrap(), HeaderValue::from_str(value).unwrap());
        }
        Answer { status: StatusCode::from_u16(status).unwrap(), headers: map, body: Bytes::from_static(b"why") }
    }

    #[test]
    fn an_append_answer_is_read_as_the_protocol_says() {
        let fresh = Appended::Fresh { next_offset: "0_12".to_string() };
        assert_eq!(appended(&answer(200, &[("Stream-Next-Offset", "0_12")]), true), Ok(fresh.clone()));
        assert_eq!(appended(&answer(204, &[("Stream-Next-Offset", "0_12")]), false), Ok(fresh));
        assert_eq!(appended(&answer(204, &[("Producer-Seq", "7")]), true), Ok(Appended::Duplicate { highest_seq: Some(7) }));
        assert_eq!(appended(&answer(403, &[("Producer-Epoch", "3")]), true), Err(Refused::StaleEpoch { current: Some(3) }));
        assert_eq!(
            appended(&answer(409, &[("Producer-Expected-Seq", "4"), ("Producer-Received-Seq", "6")]), true),
            Err(Refused::SeqGap { expected: Some(4), received: Some(6) })
        );
        assert_eq!(appended(&answer(409, &[("Stream-Closed", "TRUE")]), true), Err(Refused::Closed));
        // A success without the tail is not one a client can use.
        let Err(Refused::Other(text)) = appended(&answer(200, &[]), true) else { panic!("no offset") };
        assert!(text.contains("without a stream-next-offset header"), "{text}");
        let Err(Refused::Other(text)) = appended(&answer(503, &[]), true) else { panic!("503") };
        assert_eq!(text, "503 Service Unavailable: why");
    }

    #[test]
    fn offsets_and_names_are_escaped_for_a_url_and_base_urls_checked() {
        assert_eq!(escape("0000_0012"), "0000_0012");
        assert_eq!(escape("-1"), "-1");
        assert_eq!(escape("a+b c/%"), "a%2Bb%20c%2F%25");
        assert_eq!(stream_path("run-1.s0"), "/v1/stream/run-1.s0");
        assert_eq!(authority_of("http://127.0.0.1:7070/").as_deref(), Some("127.0.0.1:7070"));
        assert_eq!(authority_of("https://127.0.0.1:7070"), None);
        assert_eq!(authority_of("http://127.0.0.1:7070/v1"), None);
        assert_eq!(authority_of("http://localhost"), None);
    }

    #[tokio::test]
    async fn a_server_that_does_not_answer_is_reported_after_the_bound() {
        // Accepts the connection and reads nothing back to it.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let authority = listener.local_addr().unwrap().to_string();
        let held = tokio::spawn(async move { listener.accept().await.map(|(socket, _)| socket) });
        let client = Client::open(&authority).await.unwrap();
        let mut client = client.answer_within(Duration::from_millis(200));
        let error = client.get("/stats").await.err().expect("no answer");
        assert_eq!(error, format!("GET http://{authority}/stats: no answer within 0.2 s"));
        drop(held);
    }
}
