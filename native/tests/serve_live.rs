//! `walab serve`'s live trace (`GET /trace`, server-sent events) and its page (`--page`):
//! the built binary on a real file WAL, read by a real HTTP client.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use walab_core::trace::{Event, Trace, TraceEvent, OBJECT_SYNC_BASE};

mod serve_common;
use serve_common::Server;

/// A server on a file WAL in `wal_dir`, run from there (so `./dist` means the test's).
fn start(wal_dir: &Path, flags: &[&str]) -> Server {
    let mut command = Command::new(env!("CARGO_BIN_EXE_walab"));
    command.args(["serve", "--wal", &format!("file://{}", wal_dir.display())]).args(flags).current_dir(wal_dir);
    // The line after "listening" says whether a page is served (printed only with --page).
    Server::spawn(command, usize::from(flags.contains(&"--page")))
}

/// One server-sent event: its `event:` name (empty for the default) and its data.
#[derive(Debug)]
struct Message {
    name: String,
    data: String,
}

/// Reads a `text/event-stream` response message by message.
struct EventStream {
    response: reqwest::Response,
    buffer: String,
}

impl EventStream {
    async fn open(client: &reqwest::Client, url: &str) -> EventStream {
        let response = client.get(url).send().await.expect("the server answers");
        assert_eq!(response.status(), 200);
        let kind = response.headers()["content-type"].to_str().unwrap().to_string();
        assert!(kind.starts_with("text/event-stream"), "{kind}");
        assert_eq!(response.headers()["access-control-allow-origin"], "*", "a page from another origin may listen");
        EventStream { response, buffer: String::new() }
    }

    /// The next message with data (keep-alive comments are skipped).
    async fn next(&mut self) -> Message {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut message = Message { name: String::new(), data: String::new() };
                for line in block.lines() {
                    if let Some(name) = line.strip_prefix("event:") {
                        message.name = name.trim().to_string();
                    } else if let Some(data) = line.strip_prefix("data:") {
                        message.data.push_str(data.strip_prefix(' ').unwrap_or(data));
                    }
                }
                if !message.data.is_empty() {
                    return message;
                }
                continue;
            }
            let chunk = tokio::time::timeout(Duration::from_secs(30), self.response.chunk())
                .await
                .expect("an event within 30 s")
                .expect("the stream reads")
                .expect("the stream stays open");
            self.buffer.push_str(std::str::from_utf8(&chunk).expect("utf-8"));
        }
    }

    async fn event(&mut self) -> TraceEvent {
        let message = self.next().await;
        assert_eq!(message.name, "", "after the header every message is an event: {message:?}");
        serde_json::from_str(&message.data).unwrap_or_else(|error| panic!("{error}: {}", message.data))
    }
}

const SMALL_BLOCKS: &[&str] = &["--block-bytes", "4096", "--block-ms", "20", "--stream-object-bytes", "2048"];

#[tokio::test]
async fn the_trace_feed_sends_a_header_then_the_wal_s_and_the_upload_s_events_in_time_order() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), SMALL_BLOCKS);
    let client = reqwest::Client::new();
    let mut feed = EventStream::open(&client, &server.url("/trace")).await;
    let header = feed.next().await;
    assert_eq!(header.name, "header");
    let header: Trace = serde_json::from_str(&header.data).expect("the header is a trace");
    assert_eq!(header.scenario, "walab-serve");
    assert_eq!(header.policy, "group");
    let names: Vec<&str> = header.files.iter().map(|file| file.name.as_str()).collect();
    assert_eq!(names[1..], ["objects", "meta"]);
    assert!(names[0].starts_with("file://"), "the WAL's file is named by its URL: {names:?}");
    assert!(header.events.is_empty());

    // Appends on two streams, while the feed is read (creating them writes no record).
    for stream in ["a", "b"] {
        assert_eq!(client.put(server.url(&format!("/v1/stream/{stream}"))).send().await.unwrap().status(), 201);
    }
    let appends = 40u64;
    let poster = {
        let client = client.clone();
        let base = server.base.clone();
        tokio::spawn(async move {
            for i in 0..appends {
                let stream = if i % 2 == 0 { "a" } else { "b" };
                let response = client
                    .post(format!("{base}/v1/stream/{stream}"))
                    .header("content-type", "application/octet-stream")
                    .body(vec![b'x'; 200])
                    .send()
                    .await
                    .unwrap();
                assert_eq!(response.status(), 204);
            }
        })
    };
    let (mut arrived, mut acked, mut formed, mut synced, mut sealed, mut stored, mut committed) = (0u64, 0u64, 0, 0, 0u64, 0, 0u64);
    let mut confirmed = 0u64;
    let mut last = walab_core::time::Nanos::ZERO;
    let deadline = Instant::now() + Duration::from_secs(60);
    while acked < appends || committed < appends || confirmed == 0 {
        assert!(Instant::now() < deadline, "not everything came: {arrived} arrived, {acked} acked, {committed} committed");
        let event = feed.event().await;
        assert!(event.at >= last, "events in time order: {event:?} after {last:?}");
        last = event.at;
        match event.event {
            Event::Arrive { write } => {
                arrived += 1;
                assert_eq!(write, arrived, "write ids are the WAL's seqs, from 1 on a new WAL");
            }
            Event::BatchFormed { first_write, writes, .. } => {
                formed += 1;
                assert!(first_write + writes - 1 <= arrived, "a batch holds only arrived writes");
            }
            Event::SyncEnd { sync, file: 0, ok, .. } => {
                assert!(ok && sync < OBJECT_SYNC_BASE);
                synced += 1;
            }
            Event::Ack { first_write, writes } => {
                assert_eq!(first_write, acked + 1, "acknowledgements in order");
                acked += writes;
            }
            Event::BlockSealed { records, objects, .. } => {
                sealed += records;
                assert!(objects >= 1);
            }
            Event::SyncEnd { sync, file: 1, ok, .. } => {
                assert!(ok && sync >= OBJECT_SYNC_BASE, "an object's PUT: {sync}");
                stored += 1;
            }
            Event::Committed { records, .. } => committed += records,
            Event::ReaderConfirmed { reader, seq } => {
                assert_eq!(reader, "consumer");
                assert!(seq <= acked, "the WAL is confirmed only below what the upload committed");
                confirmed = seq;
            }
            _ => {}
        }
    }
    poster.await.unwrap();
    assert_eq!((arrived, acked), (appends, appends));
    assert!(formed >= 1 && synced >= 1, "{formed} batches, {synced} syncs");
    assert!(sealed >= appends && stored >= 1, "{sealed} records sealed into blocks, {stored} objects stored");
    let (status, stats) = {
        let response = client.get(server.url("/stats")).send().await.unwrap();
        (response.status().as_u16(), serde_json::from_slice::<Value>(&response.bytes().await.unwrap()).unwrap())
    };
    assert_eq!(status, 200);
    assert_eq!(stats["wal_acked"].as_u64(), Some(appends), "{stats}");
}

#[tokio::test]
async fn a_listener_that_connects_late_gets_events_from_then_on() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), &["--block-ms", "3600000"]);
    let client = reqwest::Client::new();
    let stream = server.url("/v1/stream/s");
    assert_eq!(client.put(&stream).send().await.unwrap().status(), 201);
    let append = |body: &'static str| client.post(&stream).header("content-type", "application/octet-stream").body(body).send();
    for _ in 0..3 {
        assert_eq!(append("early").await.unwrap().status(), 204);
    }
    let mut feed = EventStream::open(&client, &server.url("/trace")).await;
    assert_eq!(feed.next().await.name, "header");
    assert_eq!(append("late").await.unwrap().status(), 204);
    let first = feed.event().await;
    assert_eq!(first.event, Event::Arrive { write: 4 }, "the fourth append is the first the feed shows");
}

#[tokio::test]
async fn the_page_is_served_at_the_root_beside_the_api() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("page");
    std::fs::create_dir(&page).unwrap();
    std::fs::write(page.join("index.html"), "<html><head><title>the lab</title></head></html>").unwrap();
    std::fs::write(page.join("app.js"), "console.log(1)").unwrap();
    let server = start(dir.path(), &["--page", page.to_str().unwrap(), "--block-ms", "3600000"]);
    assert!(server.preamble.iter().any(|line| line.contains("the lab's page at http://")), "{:?}", server.preamble);
    let client = reqwest::Client::new();
    let text = |url: String| {
        let client = client.clone();
        async move {
            let response = client.get(url).send().await.unwrap();
            (response.status().as_u16(), response.text().await.unwrap())
        }
    };
    // The index carries the mark that makes the page watch this server.
    let marked = "<html><head><title>the lab</title><meta name=\"walab-serve\" content=\"trace\"></head></html>".to_string();
    assert_eq!(text(server.url("/")).await, (200, marked.clone()));
    assert_eq!(text(server.url("/index.html")).await, (200, marked));
    assert_eq!(text(server.url("/app.js")).await, (200, "console.log(1)".to_string()));
    // The API's routes are not shadowed by the files.
    let stream = server.url("/v1/stream/s");
    assert_eq!(client.put(&stream).header("content-type", "text/plain").body("v").send().await.unwrap().status(), 201);
    assert_eq!(text(stream).await, (200, "v".to_string()));
    let (status, stats) = text(server.url("/stats")).await;
    assert_eq!(status, 200);
    assert!(stats.contains("\"streams\":1"), "{stats}");
    let (status, missing) = text(server.url("/no-such-file.js")).await;
    assert_eq!(status, 404);
    assert!(missing.contains("no such route or page file"), "{missing}");
    // The page's files go gzipped to a browser that takes gzip; the API's answers do not.
    let wasm = vec![b'w'; 64 << 10];
    std::fs::write(page.join("app.wasm"), &wasm).unwrap();
    let gzipped = |url: String| {
        let client = client.clone();
        async move {
            let response = client.get(url).header("accept-encoding", "gzip").send().await.unwrap();
            let encoding = response.headers().get("content-encoding").map(|v| v.to_str().unwrap().to_string());
            (response.status().as_u16(), encoding, response.bytes().await.unwrap().len())
        }
    };
    let (status, encoding, bytes) = gzipped(server.url("/app.wasm")).await;
    assert_eq!((status, encoding.as_deref()), (200, Some("gzip")));
    assert!(bytes < wasm.len() / 10, "{bytes} bytes on the wire for {}", wasm.len());
    assert_eq!(text(server.url("/app.wasm")).await.1.len(), wasm.len());
    let (status, encoding, _) = gzipped(server.url("/v1/stream/s")).await;
    assert_eq!((status, encoding), (200, None));
}

#[test]
fn a_page_dir_without_an_index_is_refused_by_name_and_dist_is_the_default() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_walab"))
        .args(["serve", "--wal", &format!("file://{}", dir.path().display()), "--listen", "127.0.0.1:0", "--page"])
        .arg(&empty)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--page") && stderr.contains("no index.html in it"), "{stderr}");

    // Without --page, a dist/ in the working directory holding index.html is served.
    std::fs::create_dir(dir.path().join("dist")).unwrap();
    std::fs::write(dir.path().join("dist/index.html"), "default page").unwrap();
    let server = start(dir.path(), &["--block-ms", "3600000"]);
    let body = std::thread::spawn({
        let url = server.url("/");
        move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(async { reqwest::get(url).await.unwrap().text().await.unwrap() })
        }
    })
    .join()
    .unwrap();
    assert!(body.starts_with("<meta name=\"walab-serve\"") && body.ends_with("default page"), "{body}");
}
