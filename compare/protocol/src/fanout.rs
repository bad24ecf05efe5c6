//! `fanout`: many readers tail streams with the Durable Streams protocol's SSE mode
//! while a writer appends, and each message's delivery to each reader is timed from the
//! moment its append was acknowledged.
//!
//! Reader `i` tails stream `i mod streams` from `offset=now` on a connection of its own.
//! Once every reader has had its first `control` event (it is subscribed), the writer
//! appends one message to every stream per round (the streams' appends at once, on up
//! to 64 connections), a round every `interval_ms`. A message carries its round and
//! stream, so a reader knows which append it is seeing. For every (reader, message) the
//! delay is the reader's receipt minus the instant the writer had the append's answer;
//! a reader that sees the message before the writer has its answer counts as 0 (and is
//! counted as `before_ack`). A reader whose connection ends resumes from the last
//! `streamNextOffset` it was given.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::HOST;
use http::Request;
use http_body_util::{BodyExt, Full};

use crate::conn::Connection;
use crate::protocol::{Protocol, Target};
use crate::sse::Parser;
use crate::stats::{Latency, LatencyMs};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The Durable Streams server, http://HOST:PORT.
    #[arg(long)]
    url: String,
    /// SSE readers, one connection each.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=20_000))]
    readers: u32,
    /// Streams tailed (reader i tails stream i mod K).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=20_000))]
    streams: u32,
    /// Rounds of appends (one message to every stream per round).
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    messages: u32,
    /// Milliseconds between rounds.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=60_000))]
    interval_ms: u64,
    /// Bytes per message (about: the JSON object is padded to it).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(40..=65_536))]
    message_bytes: u32,
    /// Seconds to wait for every reader to subscribe, and for the last deliveries.
    #[arg(long, default_value_t = 60.0)]
    wait_seconds: f64,
    /// Names the streams (`<run-id>-<k>`).
    #[arg(long, default_value = "fanout")]
    run_id: String,
}

#[derive(serde::Serialize)]
pub struct Report {
    url: String,
    readers: u32,
    streams: u32,
    messages: u32,
    interval_ms: u64,
    /// (reader, message) pairs that should arrive, and those that did.
    expected: u64,
    delivered: u64,
    /// Pairs whose reader had the message before the writer had the append's answer.
    before_ack: u64,
    subscribe_ms: f64,
    /// Every (reader, message): receipt minus the append's acknowledgement.
    after_ack_ms: LatencyMs,
    /// Every message: its last reader's receipt minus its acknowledgement.
    last_reader_after_ack_ms: LatencyMs,
    /// The writer's appends (send to answer).
    append_ms: LatencyMs,
}

impl Report {
    pub fn summary(&self) -> String {
        format!(
            "fanout {}: {} readers on {} streams, {} of {} delivered: after ack p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; \
             last reader p99 {:.2} ms; appends p50 {:.2} ms",
            self.url,
            self.readers,
            self.streams,
            self.delivered,
            self.expected,
            self.after_ack_ms.p50,
            self.after_ack_ms.p99,
            self.after_ack_ms.max,
            self.last_reader_after_ack_ms.p99,
            self.append_ms.p50
        )
    }
}

/// What a reader saw: (round, instant), in arrival order.
type Seen = Vec<(u32, Instant)>;

/// Tails `path` until it has `rounds` messages or `stop`.
async fn tail(
    authority: String,
    path: String,
    rounds: u32,
    subscribed: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
) -> Result<Seen, String> {
    let mut seen = Seen::with_capacity(rounds as usize);
    let mut offset = "now".to_string();
    let mut counted_subscribed = false;
    while !stop.load(Ordering::Relaxed) && seen.len() < rounds as usize {
        let mut connection = Connection::open(&authority).await?;
        let uri = format!("{path}?offset={offset}&live=sse");
        let request = Request::get(&uri)
            .header(HOST, authority.as_str())
            .body(Full::new(Bytes::new()))
            .map_err(|error| error.to_string())?;
        let response = connection.send(request).await?;
        if response.status() != http::StatusCode::OK {
            return Err(format!("GET {uri}: {}", response.status()));
        }
        let mut body = response.into_body();
        let mut parser = Parser::default();
        while !stop.load(Ordering::Relaxed) && seen.len() < rounds as usize {
            let frame = match tokio::time::timeout(Duration::from_millis(200), body.frame()).await {
                Err(_) => continue,
                Ok(None) => break, // the server closed it: resume from `offset`
                Ok(Some(frame)) => frame.map_err(|error| format!("GET {uri}: {error}"))?,
            };
            let Ok(data) = frame.into_data() else {
                continue;
            };
            let now = Instant::now();
            for event in parser
                .feed(&data)
                .map_err(|error| format!("GET {uri}: {error}"))?
            {
                match event.name.as_str() {
                    "control" => {
                        let control: serde_json::Value = serde_json::from_str(&event.data)
                            .map_err(|error| {
                                format!("GET {uri}: a control event that is not JSON ({error})")
                            })?;
                        if let Some(next) = control["streamNextOffset"].as_str() {
                            offset = next.to_string();
                        }
                        if !counted_subscribed {
                            counted_subscribed = true;
                            subscribed.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                    "data" => {
                        let messages: Vec<serde_json::Value> = serde_json::from_str(&event.data)
                            .map_err(|error| {
                                format!(
                                    "GET {uri}: a data event that is not a JSON array ({error})"
                                )
                            })?;
                        for message in messages {
                            let round = message["r"].as_u64().and_then(|r| u32::try_from(r).ok());
                            seen.push((
                                round.ok_or_else(|| {
                                    format!("GET {uri}: a message without its round: {message}")
                                })?,
                                now,
                            ));
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    Ok(seen)
}

pub async fn run(args: Args) -> Result<Report, String> {
    let target = Target::parse(Protocol::Ds, &args.url, "")?;
    let names: Vec<String> = (0..args.streams)
        .map(|k| format!("{}-{k}", args.run_id))
        .collect();
    let mut setup = Connection::open(&target.authority).await?;
    for name in &names {
        target.create_stream(&mut setup, name).await?;
    }
    let wait = Duration::from_secs_f64(args.wait_seconds);
    let subscribed = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let began = Instant::now();
    let mut readers = Vec::with_capacity(args.readers as usize);
    for i in 0..args.readers {
        let path = target.append_path(&names[i as usize % names.len()]);
        let task = tail(
            target.authority.clone(),
            path,
            args.messages,
            Arc::clone(&subscribed),
            Arc::clone(&stop),
        );
        readers.push(tokio::spawn(task));
    }
    while subscribed.load(Ordering::SeqCst) < args.readers as usize {
        if began.elapsed() > wait {
            stop.store(true, Ordering::Relaxed);
            return Err(format!(
                "{} of {} readers subscribed in {wait:?}",
                subscribed.load(Ordering::SeqCst),
                args.readers
            ));
        }
        if let Some(done) = readers.iter().position(|reader| reader.is_finished()) {
            let error = readers
                .swap_remove(done)
                .await
                .map_err(|error| error.to_string())?
                .err();
            stop.store(true, Ordering::Relaxed);
            return Err(
                error.unwrap_or_else(|| "a reader ended before the first append".to_string())
            );
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let subscribe_ms = began.elapsed().as_secs_f64() * 1000.0;

    // acked[stream][round]
    let acked: Arc<Mutex<Vec<Vec<Option<Instant>>>>> =
        Arc::new(Mutex::new(vec![
            vec![None; args.messages as usize];
            names.len()
        ]));
    let lanes = names.len().min(64);
    let mut lane_connections = Vec::with_capacity(lanes);
    for _ in 0..lanes {
        lane_connections.push(Connection::open(&target.authority).await?);
    }
    let mut append_latency = Latency::new();
    let pad = |round: u32, stream: usize| {
        let head = format!("{{\"r\":{round},\"s\":{stream},\"pad\":\"");
        let fill = (args.message_bytes as usize).saturating_sub(head.len() + 2);
        format!("[{head}{}\"}}]", "x".repeat(fill))
    };
    let start = Instant::now();
    for round in 0..args.messages {
        let mut tasks = Vec::with_capacity(lanes);
        for (lane, mut connection) in lane_connections.drain(..).enumerate() {
            let mine: Vec<(usize, String)> = (lane..names.len())
                .step_by(lanes)
                .map(|s| (s, target.append_path(&names[s])))
                .collect();
            let bodies: Vec<Bytes> = mine
                .iter()
                .map(|(s, _)| Bytes::from(pad(round, *s)))
                .collect();
            let (target, acked) = (target.clone(), Arc::clone(&acked));
            tasks.push(tokio::spawn(async move {
                let mut latency = Latency::new();
                for ((stream, path), body) in mine.into_iter().zip(bodies) {
                    let sent = Instant::now();
                    let answer = connection
                        .exchange(target.append_request(&path, body, None))
                        .await?;
                    let now = Instant::now();
                    target.check_append(&path, &answer, 1, false)?;
                    latency.record_n(now - sent, 1);
                    acked.lock().unwrap_or_else(|p| p.into_inner())[stream][round as usize] =
                        Some(now);
                }
                Ok::<_, String>((connection, latency))
            }));
        }
        for task in tasks {
            match task.await.map_err(|error| error.to_string())? {
                Ok((connection, latency)) => {
                    lane_connections.push(connection);
                    append_latency.merge(&latency);
                }
                Err(error) => {
                    stop.store(true, Ordering::Relaxed);
                    return Err(error);
                }
            }
        }
        tokio::time::sleep_until(
            (start + Duration::from_millis(args.interval_ms * u64::from(round + 1))).into(),
        )
        .await;
    }
    // The last deliveries: wait for every reader, then stop the stragglers.
    let deadline = Instant::now() + wait;
    while readers.iter().any(|reader| !reader.is_finished()) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    stop.store(true, Ordering::Relaxed);

    let acked = acked.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let mut after_ack = Latency::new();
    let mut last_reader: Vec<Vec<Duration>> =
        vec![vec![Duration::ZERO; args.messages as usize]; names.len()];
    let (mut delivered, mut before_ack) = (0u64, 0u64);
    for (i, reader) in readers.into_iter().enumerate() {
        let stream = i % names.len();
        let seen = reader.await.map_err(|error| error.to_string())??;
        for (round, at) in seen {
            let Some(Some(ack)) = acked[stream].get(round as usize) else {
                return Err(format!(
                    "reader {i} saw round {round} of stream {stream}, never appended"
                ));
            };
            let delay = at.saturating_duration_since(*ack);
            before_ack += u64::from(at < *ack);
            delivered += 1;
            after_ack.record_n(delay, 1);
            let last = &mut last_reader[stream][round as usize];
            *last = (*last).max(delay);
        }
    }
    let mut last_reader_latency = Latency::new();
    for delay in last_reader.iter().flatten() {
        last_reader_latency.record_n(*delay, 1);
    }
    Ok(Report {
        url: args.url,
        readers: args.readers,
        streams: args.streams,
        messages: args.messages,
        interval_ms: args.interval_ms,
        expected: u64::from(args.readers) * u64::from(args.messages),
        delivered,
        before_ack,
        subscribe_ms,
        after_ack_ms: after_ack.ms(),
        last_reader_after_ack_ms: last_reader_latency.ms(),
        append_ms: append_latency.ms(),
    })
}
