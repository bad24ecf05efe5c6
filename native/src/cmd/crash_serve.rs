//! `walab crash-test --serve`: SIGKILL `walab serve` under load from the protocol's
//! idempotent producers, restart it, and check every promise the stream store made (the
//! mode is described in [`super::crash_test`]'s module doc).
//!
//! The load runs in this process, so that the harness knows what no ledger printed by a
//! killed child could tell: which request each producer had in flight when the server
//! died. Every writer is an idempotent producer (epoch 0) on one of the JSON streams,
//! sending one request at a time on a connection of its own, each request `--batch`
//! messages under one `Producer-Seq`; several producers share each stream, so a stream
//! has several appends in flight at once. A message's bytes are a function of its
//! producer, seq and place in the request, so a retry sends the same bytes and a read can
//! be checked without keeping what was sent.
//!
//! The protocol makes a request atomic: its messages are appended all together or not
//! at all, and a retry of its seq is either a duplicate (`204`: they are there) or a fresh
//! append (`200`: they were not). So after a kill there is nothing in between to sort
//! out, and any other answer is a broken promise.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::header::HeaderValue;
use http::StatusCode;
use serde::Serialize;
use walab_core::rng::Rng;

use super::protocol_client::{appended, Appended, Client, Content, ProducerHeaders};
use crate::cli_error::CliError;

/// What the serve crash test runs against and how hard.
#[derive(Clone, Debug)]
pub struct ServeCrashParams {
    /// The walab binary to start as the server.
    pub exe: PathBuf,
    pub wal: String,
    pub cluster: String,
    pub node: String,
    pub endpoint: Option<String>,
    /// `--objects` and `--meta` for the server (`None`: the server's default).
    pub objects: Option<String>,
    pub meta: Option<String>,
    /// `--segment-bytes` for the server's WAL (small, so that trims remove segments).
    pub segment_bytes: Option<u64>,
    /// A hidden `walab serve --fault` to start the server with (the test of this test).
    pub fault: Option<String>,
    pub kills: u64,
    pub producers: usize,
    pub streams: usize,
    /// Bytes per message (at least its names: producer, seq and place).
    pub record_bytes: usize,
    pub seed: u64,
    pub kill_after_ms_max: u64,
    /// The server's `--block-bytes` and `--block-ms`: small, so uploads, commits and
    /// trims happen many times a round.
    pub block_bytes: usize,
    pub block_ms: u64,
    /// Messages per request (one `Producer-Seq` for all of them).
    pub batch: u64,
    pub run_id: String,
}

/// The most messages one request of the test carries.
pub const BATCH_MAX: u64 = 1000;

/// How long the harness waits for an answer after the restart (retries, reads) before it
/// reports the server as not answering. The load's requests have no bound: the kill
/// ends them.
const ANSWER_WITHIN: Duration = Duration::from_secs(30);

/// Acknowledged requests whose offset each check reads directly, per stream.
const OFFSET_READS_PER_CHECK: usize = 8;

/// What the serve crash test found.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct ServeCrashReport {
    /// SIGKILLs of the server (each followed by a restart and a check).
    pub kills: u64,
    /// Distinct acknowledged requests, each checked after every later kill, and the
    /// messages they hold.
    pub acked: u64,
    pub acked_messages: u64,
    /// Messages read back and checked, summed over the checks.
    pub checked: u64,
    /// Reads from an acknowledged request's offset, each checked to start right after it.
    pub offsets_read: u64,
    /// Retries answered as duplicates (`204`).
    pub duplicates: u64,
    /// Requests in flight at a kill, and what their retry found: already durable (a
    /// duplicate) or not (appended then).
    pub in_flight: u64,
    pub in_flight_durable: u64,
    pub in_flight_appended: u64,
    /// Objects the servers uploaded before their kills (from `GET /stats`; 0 from a
    /// server without it): the uploads ran, and the checks read from objects too.
    pub objects_uploaded: u64,
    pub seconds: f64,
    /// The first broken promise, if any.
    pub broken: Option<String>,
}

/// One producer: its stream, its next seq, what it last got and what it had in flight.
#[derive(Clone, Debug)]
struct Producer {
    index: usize,
    id: HeaderValue,
    stream: usize,
    next_seq: u64,
    /// Messages per request.
    batch: u64,
    /// The last acknowledged request's seq.
    last: Option<u64>,
    /// The seq of a request sent without an answer when the server died.
    in_flight: Option<u64>,
}

impl Producer {
    fn name(&self) -> &str {
        self.id.to_str().unwrap_or("?")
    }
}

/// Message `i` of request `seq` of producer `id`: a JSON object naming all three, then a
/// filler that depends on them, `record_bytes` in all (or the names alone, if longer).
fn message_of(id: &str, seq: u64, i: u64, record_bytes: usize) -> String {
    let named = |filler: &str| format!(r#"{{"p":"{id}","s":{seq},"i":{i},"v":"{filler}"}}"#);
    let filler_bytes = record_bytes.saturating_sub(named("").len());
    let mut filler = String::with_capacity(filler_bytes);
    let mut state = seq.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (i << 32) ^ id.len() as u64;
    while filler.len() < filler_bytes {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        filler.push((b'a' + (state >> 59) as u8 % 26) as char);
    }
    named(&filler)
}

/// "1 message", "3 messages".
fn messages_text(n: u64) -> String {
    format!("{n} message{}", if n == 1 { "" } else { "s" })
}

/// The body of request `seq`: one message, or a JSON array of `count`.
fn request_body(id: &str, seq: u64, count: u64, record_bytes: usize) -> bytes::Bytes {
    let messages: Vec<String> = (0..count).map(|i| message_of(id, seq, i, record_bytes)).collect();
    bytes::Bytes::from(match count {
        1 => messages.into_iter().next().unwrap_or_default(),
        _ => format!("[{}]", messages.join(",")),
    })
}

/// A message as read back.
#[derive(serde::Deserialize, Debug, PartialEq)]
struct ReadMessage {
    p: String,
    s: u64,
    i: u64,
    v: String,
}

/// One request as `producer`, with the bytes [`request_body`] gives; `Err` when no
/// answer came.
async fn send(client: &mut Client, stream: &str, producer: &Producer, seq: u64, record_bytes: usize) -> Result<super::protocol_client::Answer, String> {
    let body = request_body(producer.name(), seq, producer.batch, record_bytes);
    client.append(stream, Content::Json, body, Some(ProducerHeaders { id: &producer.id, epoch: 0, seq })).await
}

/// How a phase ended when it did not end well.
enum Stop {
    /// A broken promise: the test's finding.
    Broken(String),
    /// The harness could not go on (the server died by itself, did not answer).
    Harness(String),
}

/// Every acknowledged request so far: by `(producer, seq)`, the offset its answer named
/// (`None` when only a duplicate answered it, which names none), and by stream and
/// offset the request it was named for.
#[derive(Default)]
struct Ledger {
    requests: HashMap<(usize, u64), Option<String>>,
    offsets: Vec<HashMap<String, (usize, u64)>>,
    messages: u64,
}

impl Ledger {
    fn new(streams: usize) -> Ledger {
        Ledger { offsets: vec![HashMap::new(); streams], ..Ledger::default() }
    }

    /// Adds an acknowledgement; a broken promise if it contradicts an earlier one.
    fn ack(&mut self, names: &Names, producer: &Producer, seq: u64, offset: Option<&str>) -> Result<(), Stop> {
        let (index, stream) = (producer.index, producer.stream);
        let (id, name) = (producer.name(), &names.streams[stream]);
        if let Some(offset) = offset {
            if let Some(&(other, other_seq)) = self.offsets[stream].get(offset) {
                if (other, other_seq) != (index, seq) {
                    return Err(Stop::Broken(format!(
                        "stream {name} offset {offset}: named for producer {id} seq {seq}, but already for producer {} seq {other_seq}",
                        names.producers[other]
                    )));
                }
            }
        }
        match self.requests.get_mut(&(index, seq)) {
            Some(Some(earlier)) => match offset {
                Some(offset) if offset != earlier => Err(Stop::Broken(format!(
                    "stream {name}: producer {id} seq {seq} acknowledged at offset {offset}, but already at offset {earlier}: a second copy"
                ))),
                _ => Ok(()),
            },
            Some(none) => {
                if let Some(offset) = offset {
                    *none = Some(offset.to_string());
                    self.offsets[stream].insert(offset.to_string(), (index, seq));
                }
                Ok(())
            }
            None => {
                self.requests.insert((index, seq), offset.map(str::to_string));
                if let Some(offset) = offset {
                    self.offsets[stream].insert(offset.to_string(), (index, seq));
                }
                self.messages += producer.batch;
                Ok(())
            }
        }
    }

    fn len(&self) -> u64 {
        self.requests.len() as u64
    }
}

struct Names {
    streams: Vec<String>,
    producers: Vec<String>,
    by_id: HashMap<String, usize>,
}

/// What one producer did in a round of load.
struct Produced {
    producer: Producer,
    acks: Vec<(u64, String)>,
    broken: Option<String>,
}

/// Appends as `producer` until the connection fails (the kill) or `stop`.
async fn produce(authority: String, stream: String, mut producer: Producer, record_bytes: usize, stop: Arc<AtomicBool>) -> Produced {
    let mut acks = Vec::new();
    let mut client = match Client::open(&authority).await {
        Ok(client) => client,
        // The server is already gone: nothing was sent.
        Err(_) => return Produced { producer, acks, broken: None },
    };
    while !stop.load(Ordering::Relaxed) {
        let seq = producer.next_seq;
        let answer = match send(&mut client, &stream, &producer, seq, record_bytes).await {
            Ok(answer) => answer,
            Err(_) => {
                producer.in_flight = Some(seq);
                break;
            }
        };
        let broken = match appended(&answer, true) {
            Ok(Appended::Fresh { next_offset }) => {
                acks.push((seq, next_offset));
                producer.last = Some(seq);
                producer.next_seq += 1;
                continue;
            }
            Ok(Appended::Duplicate { .. }) => {
                format!("stream {stream}: producer {} seq {seq}, sent for the first time, was answered as a duplicate", producer.name())
            }
            Err(refused) => format!("stream {stream}: producer {} seq {seq}: answered {refused}, expected an append", producer.name()),
        };
        return Produced { producer, acks, broken: Some(broken) };
    }
    Produced { producer, acks, broken: None }
}

/// What a round's retries found.
#[derive(Default)]
struct Retried {
    in_flight: u64,
    durable: u64,
    appended: u64,
    duplicates: u64,
}

/// Retries each producer's in-flight request, then its last acknowledged one, on the
/// restarted server, and checks the answers: the one in flight is a duplicate (it was
/// durable) or a fresh append (it was not), the last acknowledged one a duplicate.
async fn retry(client: &mut Client, names: &Names, producers: &mut [Producer], ledger: &mut Ledger, record_bytes: usize) -> Result<Retried, Stop> {
    let mut retried = Retried::default();
    for producer in producers.iter_mut() {
        let stream = &names.streams[producer.stream];
        if let Some(seq) = producer.in_flight.take() {
            retried.in_flight += 1;
            let answer = send(client, stream, producer, seq, record_bytes).await.map_err(Stop::Harness)?;
            match appended(&answer, true) {
                Ok(Appended::Fresh { next_offset }) => {
                    retried.appended += 1;
                    ledger.ack(names, producer, seq, Some(&next_offset))?;
                }
                Ok(Appended::Duplicate { .. }) => {
                    retried.durable += 1;
                    retried.duplicates += 1;
                    ledger.ack(names, producer, seq, None)?;
                }
                Err(refused) => {
                    return Err(Stop::Broken(format!(
                        "stream {stream}: producer {} seq {seq} ({}) was in flight at the kill; its retry was answered {refused}, expected a duplicate or a fresh append",
                        producer.name(),
                        messages_text(producer.batch)
                    )))
                }
            }
            producer.last = Some(seq);
            producer.next_seq = seq + 1;
        }
        if let Some(seq) = producer.last {
            let answer = send(client, stream, producer, seq, record_bytes).await.map_err(Stop::Harness)?;
            match appended(&answer, true) {
                Ok(Appended::Duplicate { highest_seq }) if highest_seq.is_none_or(|highest| highest >= seq) => retried.duplicates += 1,
                Ok(Appended::Duplicate { highest_seq }) => {
                    return Err(Stop::Broken(format!(
                        "stream {stream}: retrying producer {}'s last acknowledged seq {seq} was answered a duplicate whose highest accepted seq is {highest_seq:?}",
                        producer.name()
                    )))
                }
                other => {
                    return Err(Stop::Broken(format!(
                        "stream {stream}: retrying producer {}'s last acknowledged seq {seq} was answered {}, expected a duplicate (204)",
                        producer.name(),
                        match other {
                            Ok(Appended::Fresh { next_offset }) => format!("as a fresh append ending at {next_offset}: a second copy"),
                            Err(refused) => refused.to_string(),
                            Ok(Appended::Duplicate { .. }) => unreachable!("matched above"),
                        }
                    )))
                }
            }
        }
    }
    Ok(retried)
}

/// The server's `GET /stats` `object_puts` (0 from a server without it).
async fn objects_uploaded(authority: &str) -> u64 {
    #[derive(serde::Deserialize)]
    struct Stats {
        object_puts: u64,
    }
    let Ok(client) = Client::open(authority).await else { return 0 };
    let mut client = client.answer_within(Duration::from_secs(5));
    match client.get("/stats").await {
        Ok(answer) if answer.status == StatusCode::OK => serde_json::from_slice::<Stats>(&answer.body).map_or(0, |stats| stats.object_puts),
        _ => 0,
    }
}

/// One round's load: every producer appends until the kill, `delay` after the start;
/// what each was answered, and how many objects the server had uploaded by then.
fn load_until_kill(
    runtime: &tokio::runtime::Runtime,
    server: &mut Server,
    producers: &[Producer],
    names: &Names,
    params: &ServeCrashParams,
    delay: Duration,
) -> Result<(Vec<Produced>, u64), CliError> {
    let stop = Arc::new(AtomicBool::new(false));
    runtime.block_on(async {
        let tasks: Vec<_> = producers
            .iter()
            .map(|producer| {
                let stream = names.streams[producer.stream].clone();
                tokio::spawn(produce(server.authority.clone(), stream, producer.clone(), params.record_bytes, Arc::clone(&stop)))
            })
            .collect();
        tokio::time::sleep(delay).await;
        let uploaded = objects_uploaded(&server.authority).await;
        let ended_by_itself = server.ended();
        server.kill();
        stop.store(true, Ordering::Relaxed);
        let mut produced = Vec::new();
        for task in tasks {
            produced.push(task.await.map_err(|error| CliError::failed(format!("crash-test: a producer task failed: {error}")))?);
        }
        if ended_by_itself {
            return Err(CliError::failed(format!("walab serve died before the kill: {}", server.last_words())));
        }
        Ok((produced, uploaded))
    })
}

/// After a restart: retries what was in flight at the kill, then reads every stream back
/// and checks it (messages, then offsets); the retries, messages checked and offsets read.
async fn retry_and_check(
    authority: &str,
    names: &Names,
    producers: &mut [Producer],
    ledger: &mut Ledger,
    params: &ServeCrashParams,
    round_rng: &mut Rng,
) -> Result<(Retried, u64, u64), Stop> {
    let mut client = Client::open(authority).await.map_err(Stop::Harness)?.answer_within(ANSWER_WITHIN);
    let retried = retry(&mut client, names, producers, ledger, params.record_bytes).await?;
    // The streams are read at once, each on a connection of its own; the first
    // stream's broken promise is the one reported.
    let (ledger, producers) = (&*ledger, &*producers);
    let seeds: Vec<u64> = (0..params.streams).map(|_| round_rng.below(u64::MAX)).collect();
    let checks = (0..params.streams).map(|stream| {
        let seed = seeds[stream];
        async move {
            let mut client = Client::open(authority).await.map_err(Stop::Harness)?.answer_within(ANSWER_WITHIN);
            let read = read_all(&mut client, &names.streams[stream]).await?;
            let ends = check_read(names, producers, stream, ledger, &read, params.record_bytes).map_err(Stop::Broken)?;
            let reads = check_offsets(&mut client, names, stream, ledger, &read, &ends, &mut Rng::new(seed)).await?;
            Ok::<_, Stop>((read.messages.len() as u64, reads))
        }
    });
    let (mut messages, mut offsets_read) = (0, 0);
    for checked in futures::future::join_all(checks).await {
        let (stream_messages, reads) = checked?;
        messages += stream_messages;
        offsets_read += reads;
    }
    Ok((retried, messages, offsets_read))
}

/// Runs the rounds: load, SIGKILL, restart, retry, check. `Err` only when the harness
/// could not run; a broken promise is the report's `broken`.
pub fn serve_kill_test(params: &ServeCrashParams, mut round_line: impl FnMut(&str)) -> Result<ServeCrashReport, CliError> {
    let names = Names {
        streams: (0..params.streams).map(|s| format!("{}-s{s}", params.run_id)).collect(),
        producers: (0..params.producers).map(|p| format!("{}-p{p}", params.run_id)).collect(),
        by_id: (0..params.producers).map(|p| (format!("{}-p{p}", params.run_id), p)).collect(),
    };
    let mut producers = Vec::new();
    for (p, id) in names.producers.iter().enumerate() {
        let id = HeaderValue::from_str(id).map_err(|_| CliError::usage(format!("{id}: not usable as a producer id")))?;
        producers.push(Producer { index: p, id, stream: p % params.streams, next_seq: 0, batch: params.batch, last: None, in_flight: None });
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|error| CliError::failed(format!("crash-test: cannot start the runtime: {error}")))?;
    let mut rng = Rng::new(params.seed);
    let mut ledger = Ledger::new(params.streams);
    let mut report = ServeCrashReport::default();
    let started = Instant::now();
    let mut server = Server::start(params, 0)?;
    runtime
        .block_on(async {
            let mut client = Client::open(&server.authority).await?.answer_within(ANSWER_WITHIN);
            for name in &names.streams {
                client.create(name, Content::Json).await?;
            }
            Ok::<_, String>(())
        })
        .map_err(|error| CliError::failed(format!("crash-test: {error} (walab serve: {})", server.last_words())))?;
    for round in 1..=params.kills {
        let acked_before = ledger.len();
        // Load, then the kill at a random moment.
        let delay = Duration::from_millis(1 + rng.below(params.kill_after_ms_max.max(1)));
        let (produced, uploaded) = load_until_kill(&runtime, &mut server, &producers, &names, params, delay)?;
        report.kills += 1;
        report.objects_uploaded += uploaded;
        let mut broken = None;
        for done in produced {
            let producer = done.producer;
            for (seq, offset) in &done.acks {
                if let Err(stop) = ledger.ack(&names, &producer, *seq, Some(offset)) {
                    broken = broken.or(Some(stop));
                }
            }
            if let Some(message) = done.broken {
                broken = broken.or(Some(Stop::Broken(message)));
            }
            let index = producer.index;
            producers[index] = producer;
        }
        let load_acked = ledger.len() - acked_before;
        // Restart on the same WAL, metadata and objects; retry; read everything back.
        let restarting = Instant::now();
        server = Server::start(params, round)?;
        let restart = restarting.elapsed();
        let checking = Instant::now();
        let mut round_rng = Rng::new(rng.below(u64::MAX));
        let checked: Result<(Retried, u64, u64), Stop> = match broken {
            Some(stop) => Err(stop),
            None => runtime.block_on(retry_and_check(&server.authority, &names, &mut producers, &mut ledger, params, &mut round_rng)),
        };
        let (retried, messages, offsets_read) = match checked {
            Ok(checked) => checked,
            Err(Stop::Broken(message)) => {
                report.acked = ledger.len();
                report.acked_messages = ledger.messages;
                report.seconds = started.elapsed().as_secs_f64();
                report.broken = Some(format!("round {round}: {message}"));
                return Ok(report);
            }
            Err(Stop::Harness(message)) => {
                return Err(CliError::failed(format!("round {round}: {message} (walab serve: {})", server.last_words())));
            }
        };
        report.checked += messages;
        report.offsets_read += offsets_read;
        report.duplicates += retried.duplicates;
        report.in_flight += retried.in_flight;
        report.in_flight_durable += retried.durable;
        report.in_flight_appended += retried.appended;
        report.acked = ledger.len();
        report.acked_messages = ledger.messages;
        round_line(&format!(
            "round {round}/{}: killed after {} ms, {} requests acked ({} in all, {}), {} in flight (durable {}, appended on retry {}), {} duplicates answered, {messages} messages checked, {offsets_read} offsets read, {uploaded} objects uploaded; restart {} ms, check {} ms",
            params.kills,
            delay.as_millis(),
            load_acked,
            ledger.len(),
            messages_text(ledger.messages),
            retried.in_flight,
            retried.durable,
            retried.appended,
            retried.duplicates,
            restart.as_millis(),
            checking.elapsed().as_millis(),
        ));
    }
    server.kill();
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// Prints a round's line and flushes it.
pub fn print_line(out: &mut dyn Write, line: &str) {
    let _ = writeln!(out, "{line}").and_then(|()| out.flush());
}

mod check;
mod server;

use self::check::{check_offsets, check_read, read_all};
use self::server::Server;

#[cfg(test)]
mod tests;
