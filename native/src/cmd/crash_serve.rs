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

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use http::header::HeaderValue;
use http::StatusCode;
use serde::Serialize;
use walab_core::rng::Rng;

use super::protocol_client::{appended, header, Appended, Client, Content, ProducerHeaders, START_OFFSET};
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

/// A running `walab serve` child and the tail of what it printed.
struct Server {
    child: Child,
    authority: String,
    tail: Arc<Mutex<VecDeque<String>>>,
}

/// Lines of the server's stderr kept for error messages.
const TAIL_LINES: usize = 20;

/// How much later every other server seals a block by age.
const SLOW_BLOCK_FACTOR: u64 = 50;

/// How long a server may take to recover and listen.
const START_TIMEOUT: Duration = Duration::from_secs(120);

impl Server {
    /// Starts the `n`th server of the test: every other one seals its blocks only after
    /// [`SLOW_BLOCK_FACTOR`] times `--block-ms` (or when full), so that a kill also finds
    /// a long WAL tail to replay and the check reads records from the log cache, not only
    /// from objects.
    fn start(params: &ServeCrashParams, n: u64) -> Result<Server, CliError> {
        let block_ms = match n % 2 {
            0 => params.block_ms,
            _ => params.block_ms.saturating_mul(SLOW_BLOCK_FACTOR).min(3_600_000),
        };
        let mut command = Command::new(&params.exe);
        command
            .args(["serve", "--wal", &params.wal, "--cluster", &params.cluster, "--node", &params.node])
            .args(["--listen", "127.0.0.1:0", "--block-bytes", &params.block_bytes.to_string()])
            .args(["--block-ms", &block_ms.to_string(), "--stream-object-bytes", &(params.block_bytes / 4).to_string()]);
        for (flag, value) in [("--endpoint", &params.endpoint), ("--objects", &params.objects), ("--meta", &params.meta), ("--fault", &params.fault)] {
            if let Some(value) = value {
                command.args([flag, value.as_str()]);
            }
        }
        if let Some(bytes) = params.segment_bytes {
            command.args(["--segment-bytes", &bytes.to_string()]);
        }
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|error| CliError::failed(format!("cannot start walab serve: {error}")))?;
        let stderr = child.stderr.take().expect("piped");
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let (listening, address) = mpsc::sync_channel(1);
        let kept = Arc::clone(&tail);
        // Reads stderr to its end, so that the server never writes into a full pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Some(address) = line.strip_prefix("walab serve: listening on http://") {
                    let _ = listening.try_send(address.trim().to_string());
                }
                let mut kept = kept.lock().unwrap_or_else(|p| p.into_inner());
                if kept.len() == TAIL_LINES {
                    kept.pop_front();
                }
                kept.push_back(line);
            }
        });
        let mut server = Server { child, authority: String::new(), tail };
        match address.recv_timeout(START_TIMEOUT) {
            Ok(authority) => server.authority = authority,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                server.kill();
                return Err(CliError::failed(format!("walab serve did not listen within {} s", START_TIMEOUT.as_secs())));
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let _ = server.child.wait();
                return Err(CliError::failed(format!("walab serve ended before it listened: {}", server.last_words())));
            }
        }
        Ok(server)
    }

    /// The server's last line on stderr, without its `walab: ` prefix.
    fn last_words(&self) -> String {
        let tail = self.tail.lock().unwrap_or_else(|p| p.into_inner());
        tail.back().map_or("(nothing on stderr)".to_string(), |line| line.trim_start_matches("walab: ").to_string())
    }

    /// Whether the server already ended by itself.
    fn ended(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
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

/// A stream as read back: its messages in order, and the offsets the reads named, each
/// with the number of messages before it.
#[derive(Default, Debug)]
struct ReadBack {
    messages: Vec<ReadMessage>,
    boundaries: Vec<(usize, String)>,
}

/// Reads stream `name` from its start to its tail, a chunk at a time, each from the
/// offset the last one named.
async fn read_all(client: &mut Client, name: &str) -> Result<ReadBack, Stop> {
    let mut read = ReadBack::default();
    let mut offset = START_OFFSET.to_string();
    loop {
        let answer = client.read(name, &offset).await.map_err(Stop::Harness)?;
        if answer.status != StatusCode::OK {
            return Err(Stop::Broken(format!("stream {name}: GET ?offset={offset} answered {}, expected its messages", answer.describe())));
        }
        let messages: Vec<ReadMessage> = serde_json::from_slice(&answer.body).map_err(|error| {
            Stop::Broken(format!(
                "stream {name}: GET ?offset={offset}: not a JSON array of this test's messages ({error}): {}",
                String::from_utf8_lossy(&answer.body[..answer.body.len().min(200)])
            ))
        })?;
        let Some(next) = answer.next_offset().map(str::to_string) else {
            return Err(Stop::Broken(format!("stream {name}: GET ?offset={offset} answered without {}", header::STREAM_NEXT_OFFSET)));
        };
        let up_to_date = answer.says(header::STREAM_UP_TO_DATE);
        if messages.is_empty() && !up_to_date {
            return Err(Stop::Broken(format!("stream {name}: GET ?offset={offset} answered no message, yet not up to date")));
        }
        if !messages.is_empty() && next <= offset && offset != START_OFFSET {
            return Err(Stop::Broken(format!("stream {name}: GET ?offset={offset} gave messages and a next offset {next} that does not sort after it")));
        }
        read.messages.extend(messages);
        read.boundaries.push((read.messages.len(), next.clone()));
        if up_to_date {
            return Ok(read);
        }
        offset = next;
    }
}

/// Checks a stream as read back against the ledger: every message one of this test's
/// producers' on this stream, with the bytes it sent; each request's messages together
/// and in order, each request once, each producer's requests in seq order; every
/// acknowledged request there and nothing unacknowledged; and every offset an
/// acknowledgement named where its request ends (at a read's boundary exactly, and in
/// the order of the stream). Gives where each request ends, in messages from the start.
fn check_read(names: &Names, producers: &[Producer], stream: usize, ledger: &Ledger, read: &ReadBack, record_bytes: usize) -> Result<HashMap<(usize, u64), usize>, String> {
    let name = &names.streams[stream];
    let mut ends: HashMap<(usize, u64), usize> = HashMap::new();
    let mut last_seq: HashMap<usize, u64> = HashMap::new();
    let mut at = 0;
    while at < read.messages.len() {
        let first = &read.messages[at];
        let producer = match names.by_id.get(&first.p) {
            Some(&producer) if producers[producer].stream == stream => producer,
            _ => return Err(format!("stream {name} message {at}: from producer {:?}, not one of this stream's", first.p)),
        };
        let (id, seq, batch) = (&names.producers[producer], first.s, producers[producer].batch);
        for i in 0..batch {
            let expected = message_of(id, seq, i, record_bytes);
            let found = read.messages.get(at + i as usize);
            let right = found.is_some_and(|m| serde_json::from_str::<ReadMessage>(&expected).is_ok_and(|e| e == *m));
            if !right {
                return Err(format!(
                    "stream {name} message {}: producer {id} seq {seq}'s message {i} of {batch} expected, found {}",
                    at + i as usize,
                    found.map_or("the end of the stream".to_string(), |m| format!("producer {} seq {} message {}", m.p, m.s, m.i))
                ));
            }
        }
        at += batch as usize;
        if let Some(earlier) = ends.insert((producer, seq), at) {
            return Err(format!("stream {name}: producer {id} seq {seq} is there twice, ending at message {earlier} and at {at}"));
        }
        if let Some(&before) = last_seq.get(&producer) {
            if before >= seq {
                return Err(format!("stream {name} message {}: producer {id} seq {seq} after its seq {before}", at - batch as usize));
            }
        }
        last_seq.insert(producer, seq);
        if !ledger.requests.contains_key(&(producer, seq)) {
            return Err(format!("stream {name} message {}: holds producer {id} seq {seq}, which no answer acknowledged (not even a retry)", at - batch as usize));
        }
    }
    // Nothing acknowledged missing.
    let mut named: Vec<(usize, &str, usize, u64)> = Vec::new();
    for (&(producer, seq), offset) in &ledger.requests {
        if producers[producer].stream != stream {
            continue;
        }
        let Some(&end) = ends.get(&(producer, seq)) else {
            return Err(format!(
                "stream {name}: producer {} seq {seq} was acknowledged{}, but the stream does not hold it",
                names.producers[producer],
                offset.as_ref().map_or(String::new(), |offset| format!(" at offset {offset}"))
            ));
        };
        if let Some(offset) = offset {
            named.push((end, offset, producer, seq));
        }
    }
    // The named offsets: at the reads' boundaries exactly, and in the stream's order.
    let boundaries: HashMap<usize, &str> = read.boundaries.iter().map(|(at, offset)| (*at, offset.as_str())).collect();
    named.sort();
    for pair in named.windows(2) {
        let ((end, offset, producer, seq), (next_end, next_offset, ..)) = (pair[0], pair[1]);
        if offset >= next_offset {
            return Err(format!(
                "stream {name}: producer {} seq {seq} ends at message {end} and was acknowledged at offset {offset}, which does not sort before offset {next_offset} named for the request ending at message {next_end}",
                names.producers[producer]
            ));
        }
    }
    for &(end, offset, producer, seq) in &named {
        if let Some(&boundary) = boundaries.get(&end) {
            if boundary != offset {
                return Err(format!(
                    "stream {name}: producer {} seq {seq} was acknowledged at offset {offset}, but the read that ended with it named offset {boundary}",
                    names.producers[producer]
                ));
            }
        }
    }
    if let (Some(&(end, offset, producer, seq)), Some((_, tail))) = (named.last(), read.boundaries.last()) {
        if offset > tail.as_str() {
            return Err(format!(
                "stream {name}: producer {} seq {seq} (ending at message {end}) was acknowledged at offset {offset}, past the stream's tail {tail}",
                names.producers[producer]
            ));
        }
    }
    Ok(ends)
}

/// Reads the stream from offsets that acknowledgements named (a few, chosen at random)
/// and checks that each read starts right after its request: with the request that
/// follows it in the stream, or empty at the tail.
async fn check_offsets(
    client: &mut Client,
    names: &Names,
    stream: usize,
    ledger: &Ledger,
    read: &ReadBack,
    ends: &HashMap<(usize, u64), usize>,
    rng: &mut Rng,
) -> Result<u64, Stop> {
    let name = &names.streams[stream];
    let mut named: Vec<(&String, usize, usize, u64)> = ledger.offsets[stream]
        .iter()
        .filter_map(|(offset, &(producer, seq))| ends.get(&(producer, seq)).map(|&end| (offset, end, producer, seq)))
        .collect();
    named.sort();
    let mut reads = 0;
    for _ in 0..OFFSET_READS_PER_CHECK.min(named.len()) {
        let (offset, end, producer, seq) = named[rng.below(named.len() as u64) as usize];
        let answer = client.read(name, offset).await.map_err(Stop::Harness)?;
        let first = serde_json::from_slice::<Vec<ReadMessage>>(&answer.body).ok().filter(|_| answer.status == StatusCode::OK).map(|m| m.into_iter().next());
        let expected = read.messages.get(end);
        let right = match (&first, expected) {
            (Some(Some(found)), Some(expected)) => found == expected,
            (Some(None), None) => answer.says(header::STREAM_UP_TO_DATE),
            _ => false,
        };
        if !right {
            return Err(Stop::Broken(format!(
                "stream {name}: a read from offset {offset}, where producer {} seq {seq} was acknowledged to end, answered {}; expected {}",
                names.producers[producer],
                match &first {
                    Some(Some(found)) => format!("producer {} seq {} message {} first", found.p, found.s, found.i),
                    Some(None) => "no message".to_string(),
                    None => answer.describe(),
                },
                expected.map_or("no message (the tail)".to_string(), |m| format!("producer {} seq {} message {} first", m.p, m.s, m.i))
            )));
        }
        reads += 1;
    }
    Ok(reads)
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
        let stop = Arc::new(AtomicBool::new(false));
        let (produced, uploaded): (Vec<Produced>, u64) = runtime.block_on(async {
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
        })?;
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
            None => runtime.block_on(async {
                let mut client = Client::open(&server.authority).await.map_err(Stop::Harness)?.answer_within(ANSWER_WITHIN);
                let retried = retry(&mut client, &names, &mut producers, &mut ledger, params.record_bytes).await?;
                // The streams are read at once, each on a connection of its own; the first
                // stream's broken promise is the one reported.
                let (names, ledger, producers, authority) = (&names, &ledger, &producers, &server.authority);
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
            }),
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

#[cfg(test)]
mod tests {
    use super::*;

    const BYTES: usize = 60;

    /// Two producers of two messages per request on one stream.
    fn setup() -> (Names, Vec<Producer>) {
        let ids = ["p0".to_string(), "p1".to_string()];
        let names = Names {
            streams: vec!["s".to_string()],
            producers: ids.to_vec(),
            by_id: ids.iter().enumerate().map(|(index, id)| (id.clone(), index)).collect(),
        };
        let producers = (0..2)
            .map(|p| Producer { index: p, id: HeaderValue::from_str(&ids[p]).unwrap(), stream: 0, next_seq: 0, batch: 2, last: None, in_flight: None })
            .collect();
        (names, producers)
    }

    fn messages(requests: &[(&str, u64)]) -> Vec<ReadMessage> {
        let mut out = Vec::new();
        for &(id, seq) in requests {
            for i in 0..2 {
                out.push(serde_json::from_str(&message_of(id, seq, i, BYTES)).unwrap());
            }
        }
        out
    }

    /// p0 seq 0 ending at "o2", p1 seq 0 at "o4", p0 seq 1 acknowledged by a duplicate
    /// only (no offset).
    fn acked(names: &Names, producers: &[Producer]) -> Ledger {
        let mut ledger = Ledger::new(1);
        for (producer, seq, offset) in [(0, 0, Some("o2")), (1, 0, Some("o4")), (0, 1, None)] {
            assert!(ledger.ack(names, &producers[producer], seq, offset).is_ok());
        }
        ledger
    }

    fn right() -> ReadBack {
        ReadBack { messages: messages(&[("p0", 0), ("p1", 0), ("p0", 1)]), boundaries: vec![(4, "o4".to_string()), (6, "o6".to_string())] }
    }

    fn check(read: &ReadBack) -> Result<HashMap<(usize, u64), usize>, String> {
        let (names, producers) = setup();
        check_read(&names, &producers, 0, &acked(&names, &producers), read, BYTES)
    }

    #[test]
    fn a_read_as_acknowledged_passes_and_each_broken_promise_is_named() {
        let ends = check(&right()).unwrap();
        assert_eq!(ends[&(0, 0)], 2);
        assert_eq!(ends[&(1, 0)], 4);
        assert_eq!(ends[&(0, 1)], 6);

        let lost = ReadBack { messages: messages(&[("p0", 0), ("p1", 0)]), boundaries: vec![(4, "o4".to_string())] };
        assert_eq!(check(&lost).unwrap_err(), "stream s: producer p0 seq 1 was acknowledged, but the stream does not hold it");
        let twice = ReadBack { messages: messages(&[("p0", 0), ("p1", 0), ("p0", 1), ("p0", 0)]), ..right() };
        assert!(check(&twice).unwrap_err().contains("producer p0 seq 0 is there twice"), "{:?}", check(&twice));
        let unacked = ReadBack { messages: messages(&[("p0", 0), ("p1", 0), ("p0", 1), ("p1", 1)]), ..right() };
        assert_eq!(check(&unacked).unwrap_err(), "stream s message 6: holds producer p1 seq 1, which no answer acknowledged (not even a retry)");
        let mut torn = right();
        torn.messages.remove(3);
        assert!(check(&torn).unwrap_err().contains("producer p1 seq 0's message 1 of 2 expected, found producer p0 seq 1 message 0"), "{:?}", check(&torn));
        let mut bytes = right();
        bytes.messages[1].v.push('x');
        assert!(check(&bytes).unwrap_err().contains("message 1: producer p0 seq 0's message 1 of 2 expected"), "{:?}", check(&bytes));
        let mut stranger = right();
        stranger.messages[0].p = "q".to_string();
        assert!(check(&stranger).unwrap_err().contains("from producer \"q\", not one of this stream's"));
        let reordered = ReadBack { messages: messages(&[("p0", 1), ("p1", 0), ("p0", 0)]), ..right() };
        assert!(check(&reordered).unwrap_err().contains("producer p0 seq 0 after its seq 1"), "{:?}", check(&reordered));
    }

    #[test]
    fn an_acknowledged_offset_must_be_where_its_request_ends() {
        // The read's boundary after message 4 names another offset than p1 seq 0's.
        let moved = ReadBack { boundaries: vec![(4, "o5".to_string()), (6, "o6".to_string())], ..right() };
        assert_eq!(
            check(&moved).unwrap_err(),
            "stream s: producer p1 seq 0 was acknowledged at offset o4, but the read that ended with it named offset o5"
        );
        // Offsets that do not sort as the stream does.
        let (names, producers) = setup();
        let mut ledger = Ledger::new(1);
        for (producer, seq, offset) in [(0, 0, Some("o5")), (1, 0, Some("o4")), (0, 1, None)] {
            assert!(ledger.ack(&names, &producers[producer], seq, offset).is_ok());
        }
        let unsorted = ReadBack { boundaries: vec![(6, "o6".to_string())], ..right() };
        let error = check_read(&names, &producers, 0, &ledger, &unsorted, BYTES).unwrap_err();
        assert!(error.contains("producer p0 seq 0 ends at message 2 and was acknowledged at offset o5, which does not sort before offset o4"), "{error}");
        // An offset past the tail.
        let short = ReadBack { boundaries: vec![(6, "o3".to_string())], ..right() };
        assert!(check(&short).unwrap_err().contains("past the stream's tail o3"), "{:?}", check(&short));
    }

    #[test]
    fn an_acknowledgement_that_contradicts_an_earlier_one_is_a_broken_promise() {
        let (names, producers) = setup();
        let mut ledger = acked(&names, &producers);
        assert!(ledger.ack(&names, &producers[0], 0, Some("o2")).is_ok(), "the same acknowledgement again is no news");
        assert!(ledger.ack(&names, &producers[0], 0, None).is_ok(), "a duplicate names no offset");
        assert_eq!((ledger.len(), ledger.messages), (3, 6));
        let Err(Stop::Broken(copy)) = ledger.ack(&names, &producers[0], 0, Some("o9")) else { panic!("a second offset for p0 seq 0") };
        assert!(copy.contains("producer p0 seq 0 acknowledged at offset o9, but already at offset o2: a second copy"), "{copy}");
        let Err(Stop::Broken(taken)) = ledger.ack(&names, &producers[1], 7, Some("o2")) else { panic!("o2 twice") };
        assert!(taken.contains("offset o2: named for producer p1 seq 7, but already for producer p0 seq 0"), "{taken}");
        // A duplicate's acknowledgement gains its offset when a fresh answer names one.
        assert!(ledger.ack(&names, &producers[0], 1, Some("o6")).is_ok());
        assert_eq!(ledger.requests[&(0, 1)].as_deref(), Some("o6"));
    }

    #[test]
    fn a_message_depends_on_its_producer_seq_and_place_and_has_the_asked_length() {
        let message = message_of("p", 3, 1, 80);
        assert_eq!(message.len(), 80, "{message}");
        assert!(message_of("a-long-producer", 12345, 0, 10).starts_with(r#"{"p":"a-long-producer","s":12345,"i":0,"v":""}"#));
        let parsed: ReadMessage = serde_json::from_str(&message).unwrap();
        assert_eq!((parsed.p.as_str(), parsed.s, parsed.i), ("p", 3, 1));
        assert_eq!(message_of("p", 3, 1, 80), message);
        assert_ne!(message_of("p", 3, 0, 80), message);
        assert_ne!(message_of("p", 4, 1, 80), message);
        assert_ne!(message_of("q", 3, 1, 80), message);
        assert_eq!(&request_body("p", 3, 1, 80)[..], message_of("p", 3, 0, 80).as_bytes());
        let batch: Vec<ReadMessage> = serde_json::from_slice(&request_body("p", 3, 3, 80)).unwrap();
        assert_eq!(batch.iter().map(|m| m.i).collect::<Vec<_>>(), vec![0, 1, 2]);
    }
}
