//! The two wire protocols the load generator speaks: the Durable Streams protocol
//! (walab serve, the Node reference server) and S2's REST API (s2-lite).
//!
//! Each server gets the same work: a message of `message_bytes` bytes, `batch` of them
//! per request, answered once durable. What differs is only how a request is written:
//!
//! - Durable Streams: streams are created with `PUT /v1/stream/{name}`
//!   (`Content-Type: application/json`); an append is `POST /v1/stream/{name}` whose body
//!   is a JSON array of the batch's messages (the server flattens one level: one message
//!   each), each message a JSON string of `message_bytes` bytes with its quotes, as the
//!   TypeScript client's `IdempotentProducer` sends a batch. With idempotent producers
//!   each request carries `Producer-Id`, `Producer-Epoch: 0` and `Producer-Seq` (one seq
//!   per request) and a fresh append is answered `200`; without them `204`.
//! - S2: a basin is created with `POST /v1/basins`, streams with `POST /v1/streams`
//!   (header `s2-basin`); an append is `POST /v1/streams/{name}/records` with the JSON
//!   `{"records":[{"body":"..."}, ...]}` (format `raw`: each body is the message's
//!   `message_bytes` bytes of text), answered with the positions it took.

use bytes::Bytes;
use http::header::{CONTENT_TYPE, HOST};
use http::{HeaderValue, Request, StatusCode};
use http_body_util::Full;

use crate::conn::{Answer, Connection};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Protocol {
    /// The Durable Streams protocol, streams at `/v1/stream/{name}`.
    Ds,
    /// S2's REST API (`/v1/basins`, `/v1/streams/{name}/records`).
    S2,
}

/// Where the streams are and how to write to them.
#[derive(Clone, Debug)]
pub struct Target {
    pub protocol: Protocol,
    /// `HOST:PORT`.
    pub authority: String,
    /// S2's basin (unused by Durable Streams).
    pub basin: String,
}

/// The bytes of one message's text: `message_bytes` of a letter.
fn filler(bytes: usize) -> String {
    "x".repeat(bytes)
}

impl Target {
    /// `http://HOST:PORT[/]` to a target.
    pub fn parse(protocol: Protocol, url: &str, basin: &str) -> Result<Target, String> {
        let bad = || format!("--url {url}: use http://HOST:PORT");
        let rest = url.strip_prefix("http://").ok_or_else(bad)?;
        let authority = rest.trim_end_matches('/');
        if authority.is_empty() || authority.contains('/') || !authority.contains(':') {
            return Err(bad());
        }
        if protocol == Protocol::S2 {
            // S2's rule: 8 to 48 of lowercase letters, digits and hyphens, no hyphen at an end.
            let valid = (8..=48).contains(&basin.len())
                && basin
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !basin.starts_with('-')
                && !basin.ends_with('-');
            if !valid {
                return Err(format!(
                    "--basin {basin}: 8 to 48 lowercase letters, digits and inner hyphens"
                ));
            }
        }
        Ok(Target {
            protocol,
            authority: authority.to_string(),
            basin: basin.to_string(),
        })
    }

    fn request(&self, method: http::Method, path: &str) -> http::request::Builder {
        let builder = Request::builder()
            .method(method)
            .uri(path)
            .header(HOST, self.authority.as_str());
        match self.protocol {
            Protocol::Ds => builder,
            Protocol::S2 => builder.header("s2-basin", self.basin.as_str()),
        }
    }

    /// The path of a stream's appends.
    pub fn append_path(&self, stream: &str) -> String {
        match self.protocol {
            Protocol::Ds => format!("/v1/stream/{stream}"),
            Protocol::S2 => format!("/v1/streams/{stream}/records"),
        }
    }

    /// S2 only: creates the basin (an existing one is fine).
    pub async fn ensure_basin(&self, connection: &mut Connection) -> Result<(), String> {
        if self.protocol != Protocol::S2 {
            return Ok(());
        }
        let body = serde_json::json!({ "basin": self.basin }).to_string();
        let request = self
            .request(http::Method::POST, "/v1/basins")
            .header(CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|error| error.to_string())?;
        let answer = connection.exchange(request).await?;
        match answer.status {
            StatusCode::OK | StatusCode::CREATED | StatusCode::CONFLICT => Ok(()),
            _ => Err(format!(
                "POST /v1/basins {}: {}",
                self.basin,
                answer.describe()
            )),
        }
    }

    /// Creates a stream (JSON content for Durable Streams), or finds it there.
    pub async fn create_stream(
        &self,
        connection: &mut Connection,
        stream: &str,
    ) -> Result<(), String> {
        let (request, what) = match self.protocol {
            Protocol::Ds => {
                let path = format!("/v1/stream/{stream}");
                let request = self
                    .request(http::Method::PUT, &path)
                    .header(CONTENT_TYPE, "application/json")
                    .body(Full::new(Bytes::new()))
                    .map_err(|error| error.to_string())?;
                (request, format!("PUT {path}"))
            }
            Protocol::S2 => {
                let body = serde_json::json!({ "stream": stream }).to_string();
                let request = self
                    .request(http::Method::POST, "/v1/streams")
                    .header(CONTENT_TYPE, "application/json")
                    .body(Full::new(Bytes::from(body)))
                    .map_err(|error| error.to_string())?;
                (request, format!("POST /v1/streams {stream}"))
            }
        };
        let answer = connection.exchange(request).await?;
        match answer.status {
            StatusCode::OK | StatusCode::CREATED => Ok(()),
            StatusCode::CONFLICT if self.protocol == Protocol::S2 => Ok(()),
            _ => Err(format!("{what}: {}", answer.describe())),
        }
    }

    /// The body of an append of `batch` messages of `message_bytes` each.
    pub fn append_body(&self, batch: usize, message_bytes: usize) -> Bytes {
        let message = match self.protocol {
            // A JSON string of `message_bytes` bytes, its two quotes included.
            Protocol::Ds => format!("\"{}\"", filler(message_bytes.saturating_sub(2))),
            Protocol::S2 => format!("{{\"body\":\"{}\"}}", filler(message_bytes)),
        };
        let messages = vec![message; batch].join(",");
        Bytes::from(match self.protocol {
            Protocol::Ds => format!("[{messages}]"),
            Protocol::S2 => format!("{{\"records\":[{messages}]}}"),
        })
    }

    /// One append request; `producer` is a Durable Streams idempotent producer's id and
    /// this request's seq.
    pub fn append_request(
        &self,
        path: &str,
        body: Bytes,
        producer: Option<(&HeaderValue, u64)>,
    ) -> Request<Full<Bytes>> {
        let mut builder = self
            .request(http::Method::POST, path)
            .header(CONTENT_TYPE, "application/json");
        if self.protocol == Protocol::S2 {
            builder = builder.header("s2-format", "raw");
        }
        if let Some((id, seq)) = producer {
            builder = builder
                .header("Producer-Id", id.clone())
                .header("Producer-Epoch", "0")
                .header("Producer-Seq", HeaderValue::from(seq));
        }
        builder
            .body(Full::new(body))
            .expect("a request from checked parts")
    }

    /// Checks an append's answer: a fresh append of `batch` messages, durable.
    pub fn check_append(
        &self,
        path: &str,
        answer: &Answer,
        batch: usize,
        idempotent: bool,
    ) -> Result<(), String> {
        match self.protocol {
            Protocol::Ds => {
                let expected = if idempotent {
                    StatusCode::OK
                } else {
                    StatusCode::NO_CONTENT
                };
                if answer.status != expected {
                    let why = if idempotent && answer.status == StatusCode::NO_CONTENT {
                        " (a duplicate: this seq was taken before)"
                    } else {
                        ""
                    };
                    return Err(format!(
                        "POST {path}: expected {expected}, got {}{why}",
                        answer.describe()
                    ));
                }
                if !answer.headers.contains_key("stream-next-offset") {
                    return Err(format!(
                        "POST {path}: {} without Stream-Next-Offset",
                        answer.status
                    ));
                }
                Ok(())
            }
            Protocol::S2 => {
                if answer.status != StatusCode::OK {
                    return Err(format!("POST {path}: {}", answer.describe()));
                }
                let ack: serde_json::Value =
                    serde_json::from_slice(&answer.body).map_err(|error| {
                        format!(
                            "POST {path}: an answer that is not JSON ({error}): {}",
                            answer.describe()
                        )
                    })?;
                let seq = |end: &str| ack[end]["seq_num"].as_u64();
                match (seq("start"), seq("end")) {
                    (Some(start), Some(end)) if end.checked_sub(start) == Some(batch as u64) => {
                        Ok(())
                    }
                    _ => Err(format!(
                        "POST {path}: {batch} records sent, the ack says {}",
                        answer.describe()
                    )),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_durable_streams_batch_is_a_json_array_of_strings_of_the_message_size() {
        let target = Target::parse(Protocol::Ds, "http://127.0.0.1:1", "").unwrap();
        let body = target.append_body(3, 100);
        let messages: Vec<String> = serde_json::from_slice(&body).unwrap();
        assert_eq!(messages.len(), 3);
        assert!(messages
            .iter()
            .all(|m| serde_json::to_string(m).unwrap().len() == 100));
    }

    #[test]
    fn an_s2_batch_is_records_with_bodies_of_the_message_size() {
        let target = Target::parse(Protocol::S2, "http://127.0.0.1:1/", "walab-bench").unwrap();
        let body: serde_json::Value = serde_json::from_slice(&target.append_body(2, 100)).unwrap();
        let records = body["records"].as_array().unwrap();
        assert_eq!(records.len(), 2);
        assert!(records
            .iter()
            .all(|r| r["body"].as_str().unwrap().len() == 100));
    }

    #[test]
    fn a_bad_url_or_basin_is_refused_by_name() {
        assert!(Target::parse(Protocol::Ds, "https://x:1", "")
            .unwrap_err()
            .contains("--url"));
        assert!(Target::parse(Protocol::Ds, "http://host-without-port", "")
            .unwrap_err()
            .contains("--url"));
        assert!(Target::parse(Protocol::S2, "http://127.0.0.1:1", "Short")
            .unwrap_err()
            .contains("--basin"));
    }
}
