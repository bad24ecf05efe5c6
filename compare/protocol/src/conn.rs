//! One HTTP/1.1 connection per client task, as every load generator here holds them.
//!
//! hyper's connection API, not a pool: a producer opens one TCP connection with
//! `TCP_NODELAY` and sends one request at a time on it, so what is measured is one
//! request's round trip through the server and nothing of a pool's queueing.

use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;

/// The most bytes of an answer read whole (appends, creates; not an SSE body).
const ANSWER_BYTES_MAX: usize = 1 << 20;

/// An answer read whole.
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Answer {
    /// The status and the start of the body, for an error message.
    pub fn describe(&self) -> String {
        let text = String::from_utf8_lossy(&self.body);
        let text: String = text.chars().take(300).collect();
        format!("{}: {}", self.status, text.trim())
    }
}

pub struct Connection {
    authority: String,
    sender: SendRequest<Full<Bytes>>,
}

impl Connection {
    pub async fn open(authority: &str) -> Result<Connection, String> {
        let stream = tokio::net::TcpStream::connect(authority)
            .await
            .map_err(|error| format!("http://{authority}: {error}"))?;
        stream
            .set_nodelay(true)
            .map_err(|error| format!("http://{authority}: TCP_NODELAY: {error}"))?;
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|error| format!("http://{authority}: {error}"))?;
        // Ends when the server closes the connection or the sender is dropped.
        tokio::spawn(connection);
        Ok(Connection {
            authority: authority.to_string(),
            sender,
        })
    }

    /// Sends one request and answers its head, the body still to be read (an SSE
    /// response); `Err` when no answer came.
    pub async fn send(
        &mut self,
        request: Request<Full<Bytes>>,
    ) -> Result<http::Response<Incoming>, String> {
        let target = format!("http://{}{}", self.authority, request.uri());
        self.sender
            .ready()
            .await
            .map_err(|error| format!("{target}: {error}"))?;
        self.sender
            .send_request(request)
            .await
            .map_err(|error| format!("{target}: {error}"))
    }

    /// Sends one request and reads the whole answer, whatever its status.
    pub async fn exchange(&mut self, request: Request<Full<Bytes>>) -> Result<Answer, String> {
        let target = format!("http://{}{}", self.authority, request.uri());
        let response = self.send(request).await?;
        let status = response.status();
        let (parts, body) = response.into_parts();
        let body = Limited::new(body, ANSWER_BYTES_MAX)
            .collect()
            .await
            .map_err(|error| format!("{target}: {status}: the answer's body: {error}"))?
            .to_bytes();
        Ok(Answer {
            status,
            headers: parts.headers,
            body,
        })
    }
}
