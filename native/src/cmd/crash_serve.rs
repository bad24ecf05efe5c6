//! `walab crash-test --serve`: SIGKILL `walab serve` under HTTP load, restart it, and
//! check every promise the stream store made (the mode is described in
//! [`super::crash_test`]'s module doc).
//!
//! The load runs in this process, so that the harness knows what no ledger printed by a
//! killed child could tell: which request each producer had in flight when the server
//! died. Every writer is an idempotent producer (epoch 1) on one of the streams, sending
//! one append at a time on a connection of its own; several producers share each stream,
//! so a stream has several appends in flight at once. A record's bytes are a function of
//! its producer and seq, so a retry sends the same bytes and a read can be checked
//! without keeping what was sent.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Body;
use base64::Engine;
use http::header::{HeaderValue, CONTENT_TYPE, HOST};
use http::{Request, StatusCode};
use serde::Serialize;
use walab_core::rng::Rng;

use super::load_http::Connection;
use crate::cli_error::CliError;
use crate::serve::http::{EPOCH_HEADER, PRODUCER_HEADER, SEQ_HEADER};

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
    pub record_bytes: usize,
    pub seed: u64,
    pub kill_after_ms_max: u64,
    /// The server's `--block-bytes` and `--block-ms`: small, so uploads, commits and
    /// trims happen many times a round.
    pub block_bytes: usize,
    pub block_ms: u64,
    /// Records per request: 1, single appends; more, batch appends.
    pub batch: u64,
    pub run_id: String,
}

/// What the serve crash test found.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct ServeCrashReport {
    /// SIGKILLs of the server (each followed by a restart and a check).
    pub kills: u64,
    /// Distinct acknowledged appends, each checked after every later kill.
    pub acked: u64,
    /// Records read back and checked, summed over the checks.
    pub checked: u64,
    /// Retries answered `duplicate: true` at the right offset.
    pub duplicates: u64,
    /// Requests in flight at a kill, and what their retry found: already durable (a
    /// duplicate) or not (appended then).
    pub in_flight: u64,
    pub in_flight_durable: u64,
    /// Batches in flight whose first records were durable and the rest not.
    pub in_flight_partly: u64,
    pub in_flight_appended: u64,
    /// Records in committed objects at the last check (the upload did run).
    pub committed: u64,
    pub seconds: f64,
    /// The first broken promise, if any.
    pub broken: Option<String>,
}

/// One producer: its stream, its next seq, what it last got and what it had in flight.
#[derive(Clone, Debug)]
struct Producer {
    index: usize,
    id: String,
    stream: usize,
    next_seq: u64,
    /// Records per request (more than 1: batch appends).
    batch: u64,
    /// The last acknowledged request: `(seq, count, offset)`.
    last: Option<(u64, u64, u64)>,
    /// The first seq of a request sent without an answer when the server died.
    in_flight: Option<u64>,
}

/// `{"offset":N}` or `{"offset":N,"duplicate":true}`.
#[derive(serde::Deserialize)]
struct Answer {
    offset: u64,
    #[serde(default)]
    duplicate: bool,
    /// A batch's records (a single append has none).
    count: Option<u64>,
}

/// A `409`'s `expected_seq`.
#[derive(serde::Deserialize)]
struct Conflict {
    expected_seq: Option<u64>,
}

/// The answer to `count` records, if it is a `200` with an offset (and, for a batch, the
/// right count).
fn answer_to(status: StatusCode, body: &[u8], count: u64, batch: bool) -> Option<Answer> {
    let answer = serde_json::from_slice::<Answer>(body).ok().filter(|_| status == StatusCode::OK)?;
    (answer.count == batch.then_some(count)).then_some(answer)
}

#[derive(serde::Deserialize)]
struct Page {
    records: Vec<ReadRecord>,
    next: u64,
    end: u64,
}

#[derive(serde::Deserialize, Clone)]
struct ReadRecord {
    offset: u64,
    value_base64: String,
    producer: Option<String>,
    seq: Option<u64>,
}

#[derive(serde::Deserialize)]
struct Summary {
    committed: u64,
}

/// The bytes producer `id` sends as `seq`: its name and seq, then a filler that depends
/// on both, `record_bytes` in all (or the name and seq alone, if longer).
fn value_of(id: &str, seq: u64, record_bytes: usize) -> Vec<u8> {
    let mut value = format!("{id}/{seq}/").into_bytes();
    let mut filler = seq.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ id.len() as u64;
    while value.len() < record_bytes {
        filler = filler.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        value.push(b'a' + (filler >> 59) as u8 % 26);
    }
    value
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

/// Requests to one server, on one connection.
struct Client {
    connection: Connection,
    host: HeaderValue,
    authority: String,
}

impl Client {
    async fn open(authority: &str) -> Result<Client, String> {
        let host = HeaderValue::from_str(authority).map_err(|_| format!("{authority}: not a host"))?;
        Ok(Client { connection: Connection::open(authority).await?, host, authority: authority.to_string() })
    }

    /// One request as `producer`: `count` records from `seq` with the bytes
    /// [`value_of`] gives, one append on `/records` or (`batch`) one batch append on
    /// `/batch`; `Err` when no answer came.
    async fn send(&mut self, stream: &str, producer: &str, seq: u64, count: u64, batch: bool, record_bytes: usize) -> Result<(StatusCode, bytes::Bytes), String> {
        let (route, body) = match batch {
            false => ("records", value_of(producer, seq, record_bytes)),
            true => {
                let values: Vec<Vec<u8>> = (seq..seq + count).map(|seq| value_of(producer, seq, record_bytes)).collect();
                let mut body = Vec::new();
                crate::serve::batch::encode_batch(values.iter().map(Vec::as_slice), &mut body);
                ("batch", body)
            }
        };
        let request = Request::post(format!("/streams/{stream}/{route}"))
            .header(HOST, self.host.clone())
            .header(PRODUCER_HEADER, producer)
            .header(EPOCH_HEADER, HeaderValue::from_static("1"))
            .header(SEQ_HEADER, HeaderValue::from(seq))
            .header(CONTENT_TYPE, HeaderValue::from_static("application/octet-stream"))
            .body(Body::from(body))
            .map_err(|error| format!("/streams/{stream}/{route}: {error}"))?;
        self.connection.exchange(request).await.map_err(|error| format!("http://{}: {error}", self.authority))
    }

    async fn get(&mut self, path: &str) -> Result<(StatusCode, bytes::Bytes), String> {
        let request = Request::get(path)
            .header(HOST, self.host.clone())
            .body(Body::empty())
            .map_err(|error| format!("{path}: {error}"))?;
        self.connection.exchange(request).await.map_err(|error| format!("http://{}{path}: {error}", self.authority))
    }
}

/// How a phase ended when it did not end well.
enum Stop {
    /// A broken promise: the test's finding.
    Broken(String),
    /// The harness could not go on (the server died by itself, did not answer).
    Harness(String),
}

fn text(body: &[u8]) -> String {
    String::from_utf8_lossy(body).trim().to_string()
}

/// Every acknowledgement so far: by stream, offset to `(producer, seq)`, and by
/// `(producer, seq)` the offset.
#[derive(Default)]
struct Ledger {
    streams: Vec<BTreeMap<u64, (usize, u64)>>,
    offsets: HashMap<(usize, u64), u64>,
}

impl Ledger {
    /// Adds an acknowledgement; a broken promise if it contradicts an earlier one.
    fn ack(&mut self, names: &Names, producer: usize, stream: usize, seq: u64, offset: u64) -> Result<bool, Stop> {
        let id = &names.producers[producer];
        let name = &names.streams[stream];
        if let Some(&earlier) = self.offsets.get(&(producer, seq)) {
            if earlier != offset {
                return Err(Stop::Broken(format!(
                    "stream {name}: producer {id} seq {seq} acknowledged at offset {offset}, but it was already acknowledged at offset {earlier}: a second copy"
                )));
            }
            return Ok(false);
        }
        if let Some(&(other, other_seq)) = self.streams[stream].get(&offset) {
            return Err(Stop::Broken(format!(
                "stream {name} offset {offset}: acknowledged to producer {id} seq {seq}, but already to producer {} seq {other_seq}",
                names.producers[other]
            )));
        }
        self.streams[stream].insert(offset, (producer, seq));
        self.offsets.insert((producer, seq), offset);
        Ok(true)
    }

    fn len(&self) -> u64 {
        self.offsets.len() as u64
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
    acks: Vec<(u64, u64)>,
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
    let (count, batch) = (producer.batch, producer.batch > 1);
    while !stop.load(Ordering::Relaxed) {
        let seq = producer.next_seq;
        let (status, body) = match client.send(&stream, &producer.id, seq, count, batch, record_bytes).await {
            Ok(answered) => answered,
            Err(_) => {
                producer.in_flight = Some(seq);
                break;
            }
        };
        let broken = match answer_to(status, &body, count, batch) {
            Some(answer) if !answer.duplicate => {
                acks.extend((0..count).map(|i| (seq + i, answer.offset + i)));
                producer.last = Some((seq, count, answer.offset));
                producer.next_seq += count;
                continue;
            }
            Some(answer) => format!(
                "stream {stream}: producer {} seq {seq}, sent for the first time, was answered as a duplicate of offset {}",
                producer.id, answer.offset
            ),
            None => format!(
                "stream {stream}: producer {} seq {seq} ({count} records): answered {status} {}, expected an offset",
                producer.id,
                text(&body)
            ),
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
    /// Batches whose first records were durable and the rest not.
    partly: u64,
    appended: u64,
    duplicates: u64,
}

/// Retries each producer's in-flight request, then its last acknowledged one, on the
/// restarted server, and checks the answers.
///
/// An in-flight single append is either durable (a duplicate) or not (appended now). An
/// in-flight batch is several WAL records, so a kill may leave any prefix of it durable:
/// all (a duplicate), none (appended now), or the first few, which the server answers
/// with `409` and the `expected_seq` after them; then the prefix is sent again as a batch
/// of its own (a duplicate, at the offset it has) and the rest appended.
async fn retry(client: &mut Client, names: &Names, producers: &mut [Producer], ledger: &mut Ledger, record_bytes: usize) -> Result<Retried, Stop> {
    let mut retried = Retried::default();
    for producer in producers.iter_mut() {
        let stream = &names.streams[producer.stream];
        let id = &producer.id;
        let (count, batch) = (producer.batch, producer.batch > 1);
        let ack = |ledger: &mut Ledger, seq: u64, count: u64, offset: u64| -> Result<(), Stop> {
            (0..count).try_for_each(|i| ledger.ack(names, producer.index, producer.stream, seq + i, offset + i).map(drop))
        };
        if let Some(seq) = producer.in_flight.take() {
            retried.in_flight += 1;
            let (status, body) = client.send(stream, id, seq, count, batch, record_bytes).await.map_err(Stop::Harness)?;
            let expected = serde_json::from_slice::<Conflict>(&body).ok().and_then(|conflict| conflict.expected_seq);
            match (answer_to(status, &body, count, batch), expected) {
                (Some(answer), _) => {
                    match answer.duplicate {
                        true => {
                            retried.durable += 1;
                            retried.duplicates += 1;
                        }
                        false => retried.appended += 1,
                    }
                    ack(ledger, seq, count, answer.offset)?;
                    producer.last = Some((seq, count, answer.offset));
                }
                (None, Some(expected)) if batch && status == StatusCode::CONFLICT && seq < expected && expected < seq + count => {
                    retried.partly += 1;
                    let head = expected - seq;
                    let (status, body) = client.send(stream, id, seq, head, batch, record_bytes).await.map_err(Stop::Harness)?;
                    match answer_to(status, &body, head, batch) {
                        Some(answer) if answer.duplicate => {
                            retried.duplicates += 1;
                            ack(ledger, seq, head, answer.offset)?;
                        }
                        _ => {
                            return Err(Stop::Broken(format!(
                                "stream {stream}: producer {id} seq {seq}: the batch in flight at the kill was durable up to seq {expected} (its retry's 409), but sending seqs {seq}..{expected} again was answered {status} {}, expected a duplicate",
                                text(&body)
                            )))
                        }
                    }
                    let rest = count - head;
                    let (status, body) = client.send(stream, id, expected, rest, batch, record_bytes).await.map_err(Stop::Harness)?;
                    match answer_to(status, &body, rest, batch) {
                        Some(answer) if !answer.duplicate => {
                            ack(ledger, expected, rest, answer.offset)?;
                            producer.last = Some((expected, rest, answer.offset));
                        }
                        _ => {
                            return Err(Stop::Broken(format!(
                                "stream {stream}: producer {id} seq {expected}: the rest of the batch in flight at the kill was answered {status} {}, expected a fresh append",
                                text(&body)
                            )))
                        }
                    }
                }
                (None, _) => {
                    return Err(Stop::Broken(format!(
                        "stream {stream}: producer {id} seq {seq} ({count} records) was in flight at the kill; its retry was answered {status} {}, expected a duplicate with the offset it has or a fresh append",
                        text(&body)
                    )))
                }
            }
            producer.next_seq = seq + count;
        }
        if let Some((seq, count, offset)) = producer.last {
            let (status, body) = client.send(stream, id, seq, count, batch, record_bytes).await.map_err(Stop::Harness)?;
            match answer_to(status, &body, count, batch) {
                Some(answer) if answer.duplicate && answer.offset == offset => retried.duplicates += 1,
                _ => {
                    return Err(Stop::Broken(format!(
                        "stream {stream} offset {offset}: retrying producer {id}'s last acknowledged seq {seq} ({count} records) was answered {status} {}, expected {{\"offset\":{offset},\"duplicate\":true}}",
                        text(&body)
                    )))
                }
            }
        }
    }
    Ok(retried)
}

/// Checks one page of a stream's read, from offset `from`, against the ledger: each
/// record at the next offset, one of this test's producers' acknowledged seqs at its
/// acknowledged offset, with the bytes it sent, not seen before in this read.
fn check_page(
    names: &Names,
    stream: usize,
    ledger: &Ledger,
    from: u64,
    records: &[ReadRecord],
    seen: &mut HashMap<(usize, u64), u64>,
    record_bytes: usize,
) -> Result<(), String> {
    let name = &names.streams[stream];
    let acked = &ledger.streams[stream];
    let base64 = base64::engine::general_purpose::STANDARD;
    for (k, record) in records.iter().enumerate() {
        let offset = from + k as u64;
        if record.offset != offset {
            return Err(format!(
                "stream {name} offset {offset}: the read from {from} gave offset {} in its place (a gap or a reordering)",
                record.offset
            ));
        }
        let (producer, seq) = match (record.producer.as_ref().and_then(|id| names.by_id.get(id)), record.seq) {
            (Some(&producer), Some(seq)) => (producer, seq),
            _ => {
                return Err(format!(
                    "stream {name} offset {offset}: a record of producer {:?} seq {:?}, not one of this test's producers",
                    record.producer, record.seq
                ))
            }
        };
        let id = &names.producers[producer];
        if let Some(earlier) = seen.insert((producer, seq), offset) {
            return Err(format!(
                "stream {name} offset {offset}: producer {id} seq {seq} is there twice, at offsets {earlier} and {offset}"
            ));
        }
        match acked.get(&offset) {
            None => {
                return Err(format!(
                    "stream {name} offset {offset}: holds producer {id} seq {seq}, which no answer acknowledged (not even a retry)"
                ))
            }
            Some(&(p, s)) if (p, s) != (producer, seq) => {
                return Err(format!(
                    "stream {name} offset {offset}: acknowledged to producer {} seq {s}, found producer {id} seq {seq}",
                    names.producers[p]
                ))
            }
            Some(_) => {}
        }
        let sent = value_of(id, seq, record_bytes);
        if base64.decode(&record.value_base64).ok().as_deref() != Some(&sent[..]) {
            return Err(format!(
                "stream {name} offset {offset}: producer {id} seq {seq}'s bytes differ from the {} bytes it sent",
                sent.len()
            ));
        }
    }
    Ok(())
}

/// Checks that nothing acknowledged on `stream` lies at or past the end its read found.
fn check_end(names: &Names, stream: usize, ledger: &Ledger, end: u64) -> Result<(), String> {
    match ledger.streams[stream].range(end..).next() {
        Some((&offset, &(producer, seq))) => Err(format!(
            "stream {} offset {offset}: producer {} seq {seq} was acknowledged there, but the stream ends at {end}",
            names.streams[stream], names.producers[producer]
        )),
        None => Ok(()),
    }
}

/// Reads stream `stream` from offset 0 to its end and checks it against the ledger:
/// gapless, every record some producer's acknowledged seq at its acknowledged offset with
/// the bytes it sent, each once, and nothing acknowledged missing. Gives the records
/// checked and the stream's committed end.
async fn check_stream(client: &mut Client, names: &Names, stream: usize, ledger: &Ledger, record_bytes: usize) -> Result<(u64, u64), Stop> {
    let name = &names.streams[stream];
    let page_max = (400_000 / (record_bytes * 4 / 3 + 200)).clamp(1, 1000);
    let mut seen: HashMap<(usize, u64), u64> = HashMap::new();
    let mut from = 0;
    let end = loop {
        let path = format!("/streams/{name}/records?from={from}&max={page_max}");
        let (status, body) = client.get(&path).await.map_err(Stop::Harness)?;
        if status == StatusCode::NOT_FOUND && from == 0 {
            // No record at all (a stream whose appends were all cut by kills).
            break 0;
        }
        let page = match (status, serde_json::from_slice::<Page>(&body)) {
            (StatusCode::OK, Ok(page)) => page,
            _ => return Err(Stop::Broken(format!("stream {name}: GET {path} answered {status} {}, expected records", text(&body)))),
        };
        check_page(names, stream, ledger, from, &page.records, &mut seen, record_bytes).map_err(Stop::Broken)?;
        if page.next >= page.end {
            break page.end;
        }
        if page.records.is_empty() || page.next != from + page.records.len() as u64 {
            return Err(Stop::Broken(format!(
                "stream {name}: the read from {from} gave {} records and next {} below the end {}",
                page.records.len(),
                page.next,
                page.end
            )));
        }
        from = page.next;
    };
    check_end(names, stream, ledger, end).map_err(Stop::Broken)?;
    let committed = match end {
        0 => 0,
        _ => {
            let (status, body) = client.get(&format!("/streams/{name}")).await.map_err(Stop::Harness)?;
            match (status, serde_json::from_slice::<Summary>(&body)) {
                (StatusCode::OK, Ok(summary)) => summary.committed,
                _ => return Err(Stop::Broken(format!("stream {name}: GET /streams/{name} answered {status} {}", text(&body)))),
            }
        }
    };
    Ok((end, committed))
}

/// Runs the rounds: load, SIGKILL, restart, retry, check. `Err` only when the harness
/// could not run; a broken promise is the report's `broken`.
pub fn serve_kill_test(params: &ServeCrashParams, mut round_line: impl FnMut(&str)) -> Result<ServeCrashReport, CliError> {
    let names = Names {
        streams: (0..params.streams).map(|s| format!("{}-s{s}", params.run_id)).collect(),
        producers: (0..params.producers).map(|p| format!("{}-p{p}", params.run_id)).collect(),
        by_id: (0..params.producers).map(|p| (format!("{}-p{p}", params.run_id), p)).collect(),
    };
    let mut producers: Vec<Producer> = (0..params.producers)
        .map(|p| Producer { index: p, id: names.producers[p].clone(), stream: p % params.streams, next_seq: 0, batch: params.batch, last: None, in_flight: None })
        .collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|error| CliError::failed(format!("crash-test: cannot start the runtime: {error}")))?;
    let mut rng = Rng::new(params.seed);
    let mut ledger = Ledger { streams: vec![BTreeMap::new(); params.streams], offsets: HashMap::new() };
    let mut report = ServeCrashReport::default();
    let started = Instant::now();
    let mut server = Server::start(params, 0)?;
    for round in 1..=params.kills {
        let acked_before = ledger.len();
        // Load, then the kill at a random moment.
        let delay = Duration::from_millis(1 + rng.below(params.kill_after_ms_max.max(1)));
        let stop = Arc::new(AtomicBool::new(false));
        let produced: Vec<Produced> = runtime.block_on(async {
            let tasks: Vec<_> = producers
                .iter()
                .map(|producer| {
                    let stream = names.streams[producer.stream].clone();
                    tokio::spawn(produce(server.authority.clone(), stream, producer.clone(), params.record_bytes, Arc::clone(&stop)))
                })
                .collect();
            tokio::time::sleep(delay).await;
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
            Ok(produced)
        })?;
        report.kills += 1;
        let mut broken = None;
        for done in produced {
            let producer = done.producer;
            for &(seq, offset) in &done.acks {
                if let Err(stop) = ledger.ack(&names, producer.index, producer.stream, seq, offset) {
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
        let checked: Result<(Retried, u64, u64), Stop> = match broken {
            Some(stop) => Err(stop),
            None => runtime.block_on(async {
                let mut client = Client::open(&server.authority).await.map_err(Stop::Harness)?;
                let retried = retry(&mut client, &names, &mut producers, &mut ledger, params.record_bytes).await?;
                // The streams are read at once, each on a connection of its own; the first
                // stream's broken promise is the one reported.
                let (names, ledger, authority) = (&names, &ledger, &server.authority);
                let checks = (0..params.streams).map(|stream| async move {
                    let mut client = Client::open(authority).await.map_err(Stop::Harness)?;
                    check_stream(&mut client, names, stream, ledger, params.record_bytes).await
                });
                let (mut records, mut committed) = (0, 0);
                for checked in futures::future::join_all(checks).await {
                    let (end, stream_committed) = checked?;
                    records += end;
                    committed += stream_committed;
                }
                Ok((retried, records, committed))
            }),
        };
        let (retried, records, committed) = match checked {
            Ok(checked) => checked,
            Err(Stop::Broken(message)) => {
                report.acked = ledger.len();
                report.seconds = started.elapsed().as_secs_f64();
                report.broken = Some(format!("round {round}: {message}"));
                return Ok(report);
            }
            Err(Stop::Harness(message)) => {
                return Err(CliError::failed(format!("round {round}: {message} (walab serve: {})", server.last_words())));
            }
        };
        report.checked += records;
        report.duplicates += retried.duplicates;
        report.in_flight += retried.in_flight;
        report.in_flight_durable += retried.durable;
        report.in_flight_partly += retried.partly;
        report.in_flight_appended += retried.appended;
        report.committed = committed;
        report.acked = ledger.len();
        round_line(&format!(
            "round {round}/{}: killed after {} ms, {} acked ({} in all), {} in flight (durable {}{}, appended on retry {}), {} duplicates answered, {records} records checked, {committed} committed to objects; restart {} ms, check {} ms",
            params.kills,
            delay.as_millis(),
            load_acked,
            ledger.len(),
            retried.in_flight,
            retried.durable,
            if params.batch > 1 { format!(", partly {}", retried.partly) } else { String::new() },
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

    fn names() -> Names {
        let producers = vec!["p0".to_string(), "p1".to_string()];
        let by_id = producers.iter().enumerate().map(|(index, id)| (id.clone(), index)).collect();
        Names { streams: vec!["s".to_string()], producers, by_id }
    }

    fn record(offset: u64, id: &str, seq: u64, value: &[u8]) -> ReadRecord {
        ReadRecord {
            offset,
            value_base64: base64::engine::general_purpose::STANDARD.encode(value),
            producer: Some(id.to_string()),
            seq: Some(seq),
        }
    }

    /// p0 seq 0 at 0, p1 seq 0 at 1, p0 seq 1 at 2, as acknowledged.
    fn acked(names: &Names) -> Ledger {
        let mut ledger = Ledger { streams: vec![BTreeMap::new()], offsets: HashMap::new() };
        for (producer, seq, offset) in [(0, 0, 0), (1, 0, 1), (0, 1, 2)] {
            assert!(ledger.ack(names, producer, 0, seq, offset).is_ok_and(|new| new));
        }
        ledger
    }

    fn check(records: &[ReadRecord]) -> Result<(), String> {
        let names = names();
        check_page(&names, 0, &acked(&names), 0, records, &mut HashMap::new(), 40)
    }

    #[test]
    fn a_read_as_acknowledged_passes_and_each_broken_promise_is_named() {
        let right = [record(0, "p0", 0, &value_of("p0", 0, 40)), record(1, "p1", 0, &value_of("p1", 0, 40)), record(2, "p0", 1, &value_of("p0", 1, 40))];
        assert_eq!(check(&right), Ok(()));
        let names = names();
        assert_eq!(check_end(&names, 0, &acked(&names), 3), Ok(()));
        let lost = check_end(&names, 0, &acked(&names), 2).unwrap_err();
        assert_eq!(lost, "stream s offset 2: producer p0 seq 1 was acknowledged there, but the stream ends at 2");

        let mut gap = right.clone();
        gap[1].offset = 2;
        assert!(check(&gap).unwrap_err().contains("offset 1: the read from 0 gave offset 2 in its place"));
        let mut twice = right.clone();
        twice[2] = record(2, "p0", 0, &value_of("p0", 0, 40));
        assert_eq!(check(&twice).unwrap_err(), "stream s offset 2: producer p0 seq 0 is there twice, at offsets 0 and 2");
        let mut swapped = right.clone();
        swapped.swap(0, 1);
        (swapped[0].offset, swapped[1].offset) = (0, 1);
        assert_eq!(check(&swapped).unwrap_err(), "stream s offset 0: acknowledged to producer p0 seq 0, found producer p1 seq 0");
        let mut bytes = right.clone();
        bytes[1] = record(1, "p1", 0, &value_of("p1", 1, 40));
        assert!(check(&bytes).unwrap_err().contains("offset 1: producer p1 seq 0's bytes differ"));
        let extra = [right[0].clone(), right[1].clone(), right[2].clone(), record(3, "p1", 1, &value_of("p1", 1, 40))];
        assert!(check(&extra).unwrap_err().contains("offset 3: holds producer p1 seq 1, which no answer acknowledged"));
        let mut stranger = right.clone();
        stranger[0].producer = None;
        assert!(check(&stranger).unwrap_err().contains("not one of this test's producers"));
    }

    #[test]
    fn an_acknowledgement_that_contradicts_an_earlier_one_is_a_broken_promise() {
        let names = names();
        let mut ledger = acked(&names);
        assert!(ledger.ack(&names, 0, 0, 0, 0).is_ok_and(|new| !new), "the same acknowledgement again is no news");
        let Err(Stop::Broken(copy)) = ledger.ack(&names, 0, 0, 0, 5) else { panic!("a second offset for p0 seq 0") };
        assert!(copy.contains("producer p0 seq 0 acknowledged at offset 5, but it was already acknowledged at offset 0"), "{copy}");
        let Err(Stop::Broken(taken)) = ledger.ack(&names, 1, 0, 7, 1) else { panic!("offset 1 twice") };
        assert!(taken.contains("offset 1: acknowledged to producer p1 seq 7, but already to producer p1 seq 0"), "{taken}");
    }

    #[test]
    fn a_value_depends_on_its_producer_and_seq_and_has_the_asked_length() {
        assert_eq!(value_of("p", 3, 40).len(), 40);
        assert_eq!(value_of("p", 3, 40), value_of("p", 3, 40));
        assert_ne!(value_of("p", 3, 40), value_of("p", 4, 40));
        assert_ne!(value_of("p", 3, 40), value_of("q", 3, 40));
        assert!(value_of("a-long-producer", 12345, 4).starts_with(b"a-long-producer/12345/"));
    }
}
