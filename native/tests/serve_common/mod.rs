//! A running `walab serve` for the serve tests: started on port 0, its address read from
//! its stderr, killed (SIGKILL, a crash) when dropped.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub struct Server {
    pub child: Child,
    /// `http://ADDR`.
    pub base: String,
    /// What the server printed before it listened, and the `lines_after` lines after.
    pub preamble: Vec<String>,
    /// What it prints after that, once it has ended.
    rest: Option<JoinHandle<String>>,
}

impl Server {
    /// Starts `command` (a `walab serve ...` without `--listen`) on 127.0.0.1:0 and waits
    /// until it listens; `lines_after` more lines of stderr go to the preamble.
    pub fn spawn(mut command: Command, lines_after: usize) -> Server {
        let mut child = command
            .args(["--listen", "127.0.0.1:0"])
            .stderr(Stdio::piped())
            .spawn()
            .expect("walab serve starts");
        let mut stderr = BufReader::new(child.stderr.take().expect("stderr is piped"));
        let mut preamble = Vec::new();
        let address = loop {
            let mut line = String::new();
            assert!(stderr.read_line(&mut line).expect("stderr") > 0, "the server ended before it listened: {preamble:?}");
            match line.trim().strip_prefix("walab serve: listening on ") {
                Some(address) => break address.to_string(),
                None => preamble.push(line.trim().to_string()),
            }
        };
        for _ in 0..lines_after {
            let mut line = String::new();
            stderr.read_line(&mut line).expect("stderr");
            preamble.push(line.trim().to_string());
        }
        // Keep reading stderr so that the server never writes into a full or closed pipe.
        let rest = std::thread::spawn(move || {
            let mut rest = String::new();
            let _ = stderr.read_to_string(&mut rest);
            rest
        });
        Server { child, base: address, preamble, rest: Some(rest) }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub fn crash(mut self) {
        self.child.kill().expect("kill");
        self.child.wait().expect("wait");
    }

    /// Waits (at most 30 s) for the server to end by itself; its exit and what it printed.
    pub fn ended(mut self) -> (ExitStatus, String) {
        let deadline = Instant::now() + Duration::from_secs(30);
        let exit = loop {
            if let Some(exit) = self.child.try_wait().expect("the server's status") {
                break exit;
            }
            assert!(Instant::now() < deadline, "the server never ended");
            std::thread::sleep(Duration::from_millis(20));
        };
        (exit, self.rest.take().expect("read once").join().expect("the reader thread"))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A server's answer to one protocol request.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|value| value.to_str().ok())
    }

    /// `Stream-Next-Offset`.
    pub fn next(&self) -> String {
        self.header("stream-next-offset").unwrap_or_else(|| panic!("no Stream-Next-Offset: {self:?}")).to_string()
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body as JSON (an error's `{"error": ...}`, a JSON stream's messages).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|_| panic!("not JSON: {}", self.text()))
    }

    /// The `error` an error's body names.
    pub fn error(&self) -> String {
        self.json()["error"].as_str().unwrap_or_else(|| panic!("no error: {}", self.text())).to_string()
    }
}

async fn reply(request: reqwest::RequestBuilder) -> Reply {
    let response = request.send().await.expect("the server answers");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.bytes().await.expect("a body").to_vec();
    Reply { status, headers, body }
}

/// A small client of the Durable Streams protocol for the tests: a server's streams at
/// `/v1/stream/{name}`.
pub struct Streams<'a> {
    pub client: reqwest::Client,
    pub base: &'a str,
}

/// A producer's `(id, epoch, seq)`.
pub type Producer<'a> = Option<(&'a str, u64, u64)>;

impl<'a> Streams<'a> {
    pub fn of(server: &'a Server) -> Streams<'a> {
        Streams { client: reqwest::Client::new(), base: &server.base }
    }

    pub fn url(&self, stream: &str) -> String {
        format!("{}/v1/stream/{stream}", self.base)
    }

    /// `PUT` with a content type and an initial body.
    pub async fn create(&self, stream: &str, content_type: &str, body: &[u8]) -> Reply {
        reply(self.client.put(self.url(stream)).header("content-type", content_type).body(body.to_vec())).await
    }

    /// `PUT` with these headers.
    pub async fn create_with(&self, stream: &str, headers: &[(&str, &str)]) -> Reply {
        let mut request = self.client.put(self.url(stream));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        reply(request).await
    }

    /// `POST` of `body` as `content_type`, as `producer` if given.
    pub async fn append(&self, stream: &str, content_type: &str, body: &[u8], producer: Producer<'_>) -> Reply {
        self.append_with(stream, &[("content-type", content_type)], body, producer).await
    }

    /// `POST` with these headers.
    pub async fn append_with(&self, stream: &str, headers: &[(&str, &str)], body: &[u8], producer: Producer<'_>) -> Reply {
        let mut request = self.client.post(self.url(stream)).body(body.to_vec());
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        if let Some((id, epoch, seq)) = producer {
            request = request.header("producer-id", id).header("producer-epoch", epoch.to_string()).header("producer-seq", seq.to_string());
        }
        reply(request).await
    }

    /// `POST` closing the stream (empty body).
    pub async fn close(&self, stream: &str) -> Reply {
        reply(self.client.post(self.url(stream)).header("stream-closed", "true")).await
    }

    pub async fn delete(&self, stream: &str) -> Reply {
        reply(self.client.delete(self.url(stream))).await
    }

    pub async fn head(&self, stream: &str) -> Reply {
        reply(self.client.head(self.url(stream))).await
    }

    /// `GET ?{query}` (`offset=...&live=...`).
    pub async fn get(&self, stream: &str, query: &str) -> Reply {
        reply(self.client.get(format!("{}?{query}", self.url(stream)))).await
    }

    /// A catch-up read from `offset`.
    pub async fn read_from(&self, stream: &str, offset: &str) -> Reply {
        self.get(stream, &format!("offset={offset}")).await
    }

    /// How far the stream's records are in committed objects (walab's extension on
    /// `HEAD`).
    pub async fn committed(&self, stream: &str) -> String {
        let head = self.head(stream).await;
        assert_eq!(head.status, 200, "HEAD {stream}: {head:?}");
        head.header("walab-committed-offset").expect("walab-committed-offset").to_string()
    }

    /// The stream's tail (`HEAD`).
    pub async fn tail(&self, stream: &str) -> String {
        let head = self.head(stream).await;
        assert_eq!(head.status, 200, "HEAD {stream}: {head:?}");
        head.next()
    }

    /// Everything from `offset` on, read answer by answer until one is up to date: the
    /// bodies of the answers, and the tail they end at.
    pub async fn read_pages(&self, stream: &str, offset: &str) -> (Vec<Vec<u8>>, String) {
        let mut pages = Vec::new();
        let mut at = offset.to_string();
        for _ in 0..100_000 {
            let page = self.read_from(stream, &at).await;
            assert_eq!(page.status, 200, "GET {stream} at {at}: {}", page.text());
            let next = page.next();
            let done = page.header("stream-up-to-date") == Some("true");
            assert!(done || next > at, "a read at {at} made no progress");
            pages.push(page.body);
            if done {
                return (pages, next);
            }
            at = next;
        }
        panic!("{stream}: never up to date");
    }

    /// A byte stream's bytes from the start.
    pub async fn bytes(&self, stream: &str) -> Vec<u8> {
        self.read_pages(stream, "-1").await.0.concat()
    }

    /// A JSON stream's messages from the start.
    pub async fn messages(&self, stream: &str) -> Vec<serde_json::Value> {
        let (pages, _) = self.read_pages(stream, "-1").await;
        pages
            .iter()
            .flat_map(|page| {
                let messages: Vec<serde_json::Value> = serde_json::from_slice(page).expect("a JSON array");
                messages
            })
            .collect()
    }
}

/// Waits (at most a minute, polling) until `done` holds.
pub async fn eventually(what: &str, mut done: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done().await {
        assert!(Instant::now() < deadline, "never happened: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The names of the files in `dir`, sorted.
pub fn files_in(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| entries.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    names.sort();
    names
}

/// An offset token's record index.
pub fn index_of(offset: &str) -> u64 {
    offset.split('_').next().and_then(|index| index.parse().ok()).unwrap_or_else(|| panic!("not an offset: {offset}"))
}
