//! `walab serve` on the WALs that outlive the machine: an S3 WAL with S3 objects and an
//! S3 metadata log (walab's S3 test server, in this process, one per test), and a
//! Postgres WAL with a Postgres metadata log (the local PostgreSQL, one cluster name per
//! test). The same contract as on a file WAL, the crashes around the commit, fencing.

mod common;
mod serve_common;
use serve_common::Server;

use std::process::Command;

use serde_json::{json, Value};
use walab::wal::s3::local_server::{LocalS3, BUCKET};

const POSTGRES: &str = "postgres://postgres@127.0.0.1:5432/test";

/// A name no other test (or earlier run) uses: an S3 path, a Postgres cluster.
fn unique(test: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("{test}-{}-{nanos}", std::process::id())
}

/// How to start one `walab serve`: its flags and environment.
#[derive(Clone)]
struct Setup {
    args: Vec<String>,
    env: Vec<(&'static str, String)>,
}

impl Setup {
    /// An S3 WAL, S3 objects and an S3 metadata log, all under `s3://walab/<path>`.
    fn s3(server: &LocalS3, path: &str) -> Setup {
        let url = format!("s3://{BUCKET}/{path}");
        Setup {
            args: vec![
                "--wal".into(),
                url.clone(),
                "--objects".into(),
                url.clone(),
                "--meta".into(),
                url,
                "--endpoint".into(),
                server.endpoint(),
            ],
            env: server.env(),
        }
    }

    /// A Postgres WAL and metadata log under `cluster`, objects in `objects_dir`.
    fn postgres(cluster: &str, objects_dir: &std::path::Path) -> Setup {
        Setup {
            args: vec![
                "--wal".into(),
                POSTGRES.into(),
                "--cluster".into(),
                cluster.into(),
                "--meta".into(),
                POSTGRES.into(),
                "--objects".into(),
                format!("file://{}", objects_dir.display()),
            ],
            env: Vec::new(),
        }
    }

    fn with(&self, flags: &[&str]) -> Setup {
        let mut setup = self.clone();
        setup.args.extend(flags.iter().map(|flag| flag.to_string()));
        setup
    }

    fn command(&self, subcommand: &str) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_walab"));
        command.arg(subcommand).args(&self.args);
        for (name, value) in &self.env {
            command.env(name, value);
        }
        command
    }

    fn start(&self) -> Server {
        Server::spawn(self.command("serve"), 0)
    }
}


async fn answer(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let body = response.bytes().await.expect("a body");
    let json = serde_json::from_slice(&body).unwrap_or_else(|_| panic!("not JSON: {}", String::from_utf8_lossy(&body)));
    (status, json)
}

async fn post(client: &reqwest::Client, url: &str, value: &[u8], producer: Option<(&str, u64, u64)>) -> (u16, Value) {
    let mut request = client.post(url).body(value.to_vec());
    if let Some((id, epoch, seq)) = producer {
        request = request
            .header("walab-producer", id)
            .header("walab-producer-epoch", epoch.to_string())
            .header("walab-producer-seq", seq.to_string());
    }
    answer(request.send().await.expect("the server answers")).await
}

async fn get(client: &reqwest::Client, url: &str) -> (u16, Value) {
    answer(client.get(url).send().await.expect("the server answers")).await
}

fn decoded(record: &Value) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(record["value_base64"].as_str().expect("value_base64")).expect("base64")
}

/// Waits (at most a minute, polling) until `done` holds.
async fn eventually(what: &str, mut done: impl AsyncFnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !done().await {
        assert!(std::time::Instant::now() < deadline, "never happened: {what}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Every record of `stream` as the server answers it, paging with `next` until the end.
async fn read_pages(client: &reqwest::Client, server: &Server, stream: &str) -> Vec<Value> {
    let mut records = Vec::new();
    let mut from = 0;
    loop {
        let (status, page) = get(client, &server.url(&format!("/streams/{stream}/records?from={from}&max=1000"))).await;
        assert_eq!(status, 200, "{page}");
        records.extend(page["records"].as_array().unwrap().iter().cloned());
        let next = page["next"].as_u64().unwrap();
        if next == page["end"].as_u64().unwrap() {
            return records;
        }
        assert!(next > from, "a read made no progress at {from}");
        from = next;
    }
}

/// Every record of `stream`: (offset, value, seq).
async fn read_all(client: &reqwest::Client, server: &Server, stream: &str) -> Vec<(u64, Vec<u8>, Option<u64>)> {
    let records = read_pages(client, server, stream).await;
    records.iter().map(|record| (record["offset"].as_u64().unwrap(), decoded(record), record["seq"].as_u64())).collect()
}

async fn committed(client: &reqwest::Client, server: &Server, stream: &str) -> u64 {
    get(client, &server.url(&format!("/streams/{stream}"))).await.1["committed"].as_u64().unwrap_or(0)
}

const SMALL_BLOCKS: &[&str] = &["--block-bytes", "4096", "--block-ms", "20", "--stream-object-bytes", "2048"];

/// The contract on `setup`: offsets without a gap read back across the committed objects
/// and the log cache, a producer's retry is a duplicate, a gap and a stale epoch are
/// `409`; and all of it again after a crash, the producers' state coming back from the
/// metadata log once the WAL records are trimmed.
async fn keeps_the_contract(setup: &Setup) {
    let client = reqwest::Client::new();
    let server = setup.with(SMALL_BLOCKS).start();
    let value = |n: u64| format!("{n:0>100}").into_bytes();
    for chunk in (0..400u64).collect::<Vec<_>>().chunks(50) {
        let appends = chunk.iter().map(|&n| {
            let (client, server) = (&client, &server);
            async move {
                let (status, body) = post(client, &server.url("/streams/a/records"), &value(n), None).await;
                assert_eq!(status, 200, "{body}");
            }
        });
        futures::future::join_all(appends).await;
    }
    for seq in 0..100u64 {
        let (status, body) = post(&client, &server.url("/streams/b/records"), &value(seq), Some(("p", 1, seq))).await;
        assert_eq!((status, body["offset"].as_u64()), (200, Some(seq)), "{body}");
    }
    let b_records = server.url("/streams/b/records");
    let (status, body) = post(&client, &b_records, &value(99), Some(("p", 1, 99))).await;
    assert_eq!((status, body), (200, json!({"offset": 99, "duplicate": true})));
    let (status, body) = post(&client, &b_records, b"gap", Some(("p", 1, 101))).await;
    assert_eq!((status, body["expected_seq"].as_u64()), (409, Some(100)), "{body}");
    eventually("everything committed", async || {
        committed(&client, &server, "a").await == 400 && committed(&client, &server, "b").await == 100
    })
    .await;
    let stats = get(&client, &server.url("/stats")).await.1;
    assert!(stats["object_puts"].as_u64().unwrap() >= 2, "{stats}");

    let a = read_all(&client, &server, "a").await;
    assert_eq!(a.iter().map(|r| r.0).collect::<Vec<u64>>(), (0..400).collect::<Vec<u64>>(), "offsets without a gap");
    let mut values: Vec<Vec<u8>> = a.iter().map(|r| r.1.clone()).collect();
    values.sort();
    assert_eq!(values, (0..400).map(value).collect::<Vec<_>>(), "every value once");
    let b = read_all(&client, &server, "b").await;
    assert_eq!(b, (0..100).map(|n| (n, value(n), Some(n))).collect::<Vec<_>>());
    // Ten more, in the log cache or in an object: the sequence goes on either way.
    for n in 400..410 {
        assert_eq!(post(&client, &server.url("/streams/a/records"), &value(n), None).await.1["offset"].as_u64(), Some(n));
    }
    server.crash();

    let server = setup.with(SMALL_BLOCKS).start();
    let again = read_all(&client, &server, "a").await;
    assert_eq!(again.len(), 410);
    assert_eq!(&again[..400], &a[..]);
    assert_eq!(again[400..].iter().map(|r| r.1.clone()).collect::<Vec<_>>(), (400..410).map(value).collect::<Vec<_>>());
    assert_eq!(read_all(&client, &server, "b").await, b);
    let b_records = server.url("/streams/b/records");
    let (status, body) = post(&client, &b_records, &value(99), Some(("p", 1, 99))).await;
    assert_eq!((status, body), (200, json!({"offset": 99, "duplicate": true})), "after the restart");
    let (status, body) = post(&client, &b_records, b"late", Some(("p", 1, 50))).await;
    assert_eq!((status, body["expected_seq"].as_u64()), (409, Some(100)), "{body}");
    let (status, body) = post(&client, &b_records, b"new 0", Some(("p", 2, 0))).await;
    assert_eq!((status, body), (200, json!({"offset": 100})));
    let (status, body) = post(&client, &b_records, b"old", Some(("p", 1, 100))).await;
    assert_eq!((status, body["current_epoch"].as_u64()), (409, Some(2)), "{body}");
}

fn files_in(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| entries.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    names.sort();
    names
}

#[tokio::test]
async fn on_s3_the_contract_holds_across_a_crash() {
    let server = LocalS3::start();
    let path = unique("contract");
    keeps_the_contract(&Setup::s3(&server, &path)).await;
    // Everything is in the bucket: the data WAL, its own node for the metadata log, objects.
    let root = server.bucket_dir().join(&path);
    assert!(root.join("default/0/registration").exists());
    assert!(root.join("default/0_meta/registration").exists());
    assert!(files_in(&root.join("objects")).len() >= 2, "{:?}", files_in(&root.join("objects")));
}

#[tokio::test]
async fn on_postgres_with_a_postgres_metadata_log_the_contract_holds_across_a_crash() {
    let cluster = unique("serve-contract");
    let objects = tempfile::tempdir().unwrap();
    keeps_the_contract(&Setup::postgres(&cluster, objects.path())).await;
    // The metadata log is its own Postgres WAL: node 0_meta of the same cluster.
    let dump = Command::new(env!("CARGO_BIN_EXE_walab"))
        .args(["dump", "--wal", POSTGRES, "--cluster", &cluster, "--node", "0_meta", "--json"])
        .output()
        .unwrap();
    let keys = common::keys_of_json_dump(&dump);
    assert!(keys.len() >= 4 && keys.iter().all(|key| key == "meta"), "{keys:?}");
}

#[tokio::test]
async fn on_s3_a_crash_between_upload_and_commit_leaves_an_orphan_that_expires() {
    let s3 = LocalS3::start();
    let path = unique("orphan");
    let setup = Setup::s3(&s3, &path);
    let objects_dir = s3.bucket_dir().join(&path).join("objects");
    let client = reqwest::Client::new();
    let server = setup.with(&["--block-ms", "20", "--crash-at", "before-commit"]).start();
    let (status, body) = post(&client, &server.url("/streams/s/records"), b"first", None).await;
    assert_eq!((status, body), (200, json!({"offset": 0})));
    let (exit, said) = server.ended();
    assert!(!exit.success(), "the server aborted: {exit:?}");
    assert!(said.contains("crashing at BeforeCommit"), "{said}");
    assert_eq!(files_in(&objects_dir), vec![format!("{:020}", 0)], "the orphan is uploaded");

    let server = setup.with(&["--block-ms", "20"]).start();
    assert!(server.preamble.iter().any(|line| line.contains("expired 1 object ids")), "{:?}", server.preamble);
    let (status, body) = post(&client, &server.url("/streams/s/records"), b"second", None).await;
    assert_eq!((status, body), (200, json!({"offset": 1})));
    eventually("both records committed", async || committed(&client, &server, "s").await == 2).await;
    let objects = files_in(&objects_dir);
    assert!(!objects.is_empty() && !objects.contains(&format!("{:020}", 0)), "objects: {objects:?}");
    let records = read_all(&client, &server, "s").await;
    assert_eq!(records, vec![(0, b"first".to_vec(), None), (1, b"second".to_vec(), None)]);
}

/// The acks `walab load --http` printed: (stream, offset, producer, seq).
fn ledger(stdout: &[u8]) -> Vec<(String, u64, String, u64)> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            assert_eq!((fields.len(), fields[0]), (5, "ack"), "{line}");
            (fields[1].to_string(), fields[2].parse().unwrap(), fields[3].to_string(), fields[4].parse().unwrap())
        })
        .collect()
}

/// A crash after the commit, before the WAL is confirmed, on `setup`: every acknowledged
/// record is read back once, at its offset, and each producer's dedup goes on.
async fn a_crash_after_the_commit_loses_and_repeats_nothing(setup: &Setup) {
    let flags = ["--block-bytes", "65536", "--block-ms", "2000"];
    let server = setup.with(&[&flags[..], &["--crash-at", "after-commit"]].concat()).start();
    let load = Command::new(env!("CARGO_BIN_EXE_walab"))
        .args(["load", "--http", &server.base, "--writers", "8", "--seconds", "60", "--streams", "3", "--producers", "8"])
        .args(["--run-id", "c"])
        .output()
        .expect("walab load runs");
    let (exit, said) = server.ended();
    assert!(!exit.success(), "the server aborted at the commit: {exit:?}");
    assert!(said.contains("crashing at AfterCommit"), "{said}");
    assert!(!load.status.success(), "the load ends with the server: {}", String::from_utf8_lossy(&load.stderr));
    let acks = ledger(&load.stdout);
    assert!(acks.len() > 100, "acks before the first commit: {}", acks.len());

    let server = setup.with(&flags).start();
    let client = reqwest::Client::new();
    let mut committed_total = 0;
    let mut stored: Vec<(String, u64, String, u64)> = Vec::new();
    let mut last_of: std::collections::BTreeMap<String, (String, u64, u64)> = Default::default();
    for stream in ["c-0", "c-1", "c-2"] {
        committed_total += committed(&client, &server, stream).await;
        for record in read_pages(&client, &server, stream).await {
            let offset = record["offset"].as_u64().unwrap();
            let producer = record["producer"].as_str().expect("every record has a producer").to_string();
            let seq = record["seq"].as_u64().unwrap();
            assert_eq!(offset, stored.iter().filter(|r| r.0 == stream).count() as u64, "offsets follow without a gap");
            last_of.insert(producer.clone(), (stream.to_string(), seq, offset));
            stored.push((stream.to_string(), offset, producer, seq));
        }
    }
    assert!(committed_total > 0, "the commit before the crash counts after the restart");
    for producer in last_of.keys() {
        let seqs: Vec<u64> = stored.iter().filter(|r| &r.2 == producer).map(|r| r.3).collect();
        assert_eq!(seqs, (0..seqs.len() as u64).collect::<Vec<_>>(), "producer {producer}'s seqs, each once");
    }
    for ack in &acks {
        assert!(stored.contains(ack), "acknowledged {ack:?} is not stored at its offset");
    }
    for (producer, (stream, seq, offset)) in &last_of {
        let records = server.url(&format!("/streams/{stream}/records"));
        let (status, body) = post(&client, &records, b"retry", Some((producer, 1, *seq))).await;
        assert_eq!((status, body), (200, json!({"offset": offset, "duplicate": true})), "{producer} seq {seq}");
    }
}

#[tokio::test]
async fn on_s3_a_crash_between_the_commit_and_the_wal_trim_loses_and_repeats_nothing() {
    let s3 = LocalS3::start();
    a_crash_after_the_commit_loses_and_repeats_nothing(&Setup::s3(&s3, &unique("after-commit"))).await;
}

#[tokio::test]
async fn on_postgres_a_crash_between_the_commit_and_the_wal_trim_loses_and_repeats_nothing() {
    let objects = tempfile::tempdir().unwrap();
    a_crash_after_the_commit_loses_and_repeats_nothing(&Setup::postgres(&unique("serve-after-commit"), objects.path()))
        .await;
}

/// A second server on the same WAL and metadata log claims both: the first one's next
/// append is fenced, which its writer hears as `503` with its outcome unknown, and the
/// new server holds every record acknowledged before.
async fn a_second_server_fences_the_first(setup: &Setup) {
    let client = reqwest::Client::new();
    let first = setup.start();
    let (status, body) = post(&client, &first.url("/streams/s/records"), b"before", None).await;
    assert_eq!((status, body), (200, json!({"offset": 0})));
    let second = setup.start();
    let (status, body) = post(&client, &first.url("/streams/s/records"), b"fenced?", None).await;
    assert_eq!((status, body["outcome"].as_str()), (503, Some("unknown")), "{body}");
    assert!(body["error"].as_str().unwrap().contains("fenced"), "{body}");
    let (status, body) = post(&client, &first.url("/streams/s/records"), b"after", None).await;
    assert_eq!((status, body["outcome"].as_str()), (503, Some("not appended")), "{body}");
    let (status, body) = post(&client, &second.url("/streams/s/records"), b"second", None).await;
    assert_eq!((status, body), (200, json!({"offset": 1})));
    let records = read_all(&client, &second, "s").await;
    assert_eq!(records, vec![(0, b"before".to_vec(), None), (1, b"second".to_vec(), None)]);
}

#[tokio::test]
async fn on_s3_a_second_server_fences_the_first() {
    let s3 = LocalS3::start();
    a_second_server_fences_the_first(&Setup::s3(&s3, &unique("fence"))).await;
}

#[tokio::test]
async fn on_postgres_a_second_server_fences_the_first() {
    let objects = tempfile::tempdir().unwrap();
    a_second_server_fences_the_first(&Setup::postgres(&unique("serve-fence"), objects.path())).await;
}

#[test]
fn a_second_server_on_a_file_metadata_log_is_refused_by_its_lock() {
    let dir = tempfile::tempdir().unwrap();
    let wal = format!("file://{}", dir.path().display());
    let setup = Setup { args: vec!["--wal".into(), wal], env: Vec::new() };
    let _first = setup.start();
    let second = setup.command("serve").args(["--listen", "127.0.0.1:0"]).output().unwrap();
    assert_eq!(second.status.code(), Some(1));
    let said = String::from_utf8_lossy(&second.stderr);
    assert!(said.contains("--meta: ") && said.contains("locked by another process"), "{said}");
}

#[test]
fn a_wal_that_is_not_a_file_needs_meta_and_objects_by_name() {
    let s3 = LocalS3::start();
    let refused = |setup: Setup| {
        let output = setup.command("serve").args(["--listen", "127.0.0.1:0"]).output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{output:?}");
        let said = String::from_utf8(output.stderr).unwrap();
        assert_eq!(said.lines().count(), 1, "{said}");
        said
    };
    let wal = format!("s3://{BUCKET}/x");
    let bare = Setup { args: vec!["--wal".into(), wal.clone(), "--endpoint".into(), s3.endpoint()], env: s3.env() };
    let said = refused(bare.clone());
    assert!(said.contains(&format!("--wal {wal}: a WAL that is not file:// needs --meta URL and --objects URL")), "{said}");
    let said = refused(bare.with(&["--objects", &wal]));
    assert!(said.contains("needs --meta URL:") && !said.contains("--objects URL"), "{said}");
    let said = refused(Setup { args: vec!["--wal".into(), POSTGRES.into(), "--meta".into(), POSTGRES.into()], env: Vec::new() });
    assert!(said.contains("needs --objects URL:"), "{said}");
    let said = refused(bare.with(&["--objects", &wal, "--meta", "ftp://x"]));
    assert!(said.contains("--meta ftp://x: unknown scheme"), "{said}");
    let said = refused(bare.with(&["--objects", &wal, "--meta", &format!("{POSTGRES}?segmnts=4")]));
    assert!(said.contains("--meta") && said.contains("unknown option \"segmnts\""), "{said}");
}

/// The metadata log's trim offset in Postgres (the node row of `<node>_meta`).
async fn meta_trim_offset(cluster: &str) -> i64 {
    let (client, connection) = tokio_postgres::connect(POSTGRES, tokio_postgres::NoTls).await.expect("postgres");
    tokio::spawn(connection);
    let row = client
        .query_opt("SELECT trim_offset FROM pico_wal_node WHERE cluster = $1 AND node = '0_meta'", &[&cluster])
        .await
        .expect("the node table");
    row.map_or(0, |row| row.get(0))
}

#[tokio::test]
async fn on_postgres_the_metadata_log_compacts_and_a_restart_reads_everything_back() {
    let cluster = unique("serve-compact");
    let objects = tempfile::tempdir().unwrap();
    let setup = Setup::postgres(&cluster, objects.path()).with(&[&SMALL_BLOCKS[..], &["--meta-snapshot-every", "6"]].concat());
    let client = reqwest::Client::new();
    let server = setup.start();
    let value = |n: u64| format!("{n:0>100}").into_bytes();
    for seq in 0..300u64 {
        let (status, body) = post(&client, &server.url("/streams/c/records"), &value(seq), Some(("p", 1, seq))).await;
        assert_eq!((status, body["offset"].as_u64()), (200, Some(seq)), "{body}");
        if seq % 30 == 29 {
            // Let a block seal now and then, so there are many uploads.
            eventually("the block committed", async || committed(&client, &server, "c").await == seq + 1).await;
        }
    }
    eventually("the metadata log trimmed below a snapshot", async || meta_trim_offset(&cluster).await > 0).await;
    let before = read_all(&client, &server, "c").await;
    assert_eq!(before, (0..300).map(|n| (n, value(n), Some(n))).collect::<Vec<_>>());
    server.crash();

    // What is left of the metadata log starts past its first record.
    let dump = Command::new(env!("CARGO_BIN_EXE_walab"))
        .args(["dump", "--wal", POSTGRES, "--cluster", &cluster, "--node", "0_meta", "--json"])
        .output()
        .unwrap();
    assert!(dump.status.success(), "{}", String::from_utf8_lossy(&dump.stderr));
    let first_seq: u64 = String::from_utf8_lossy(&dump.stdout)
        .lines()
        .next()
        .map(|line| serde_json::from_str::<Value>(line).unwrap()["seq"].as_u64().unwrap())
        .expect("records after the trim");
    assert!(first_seq > 1, "the metadata log was not trimmed: it starts at record {first_seq}");

    let server = setup.start();
    assert_eq!(read_all(&client, &server, "c").await, before);
    assert_eq!(committed(&client, &server, "c").await, 300);
    let records = server.url("/streams/c/records");
    let (status, body) = post(&client, &records, &value(299), Some(("p", 1, 299))).await;
    assert_eq!((status, body), (200, json!({"offset": 299, "duplicate": true})), "dedup from the snapshot");
    let (status, body) = post(&client, &records, b"next", Some(("p", 1, 300))).await;
    assert_eq!((status, body), (200, json!({"offset": 300})));
}

/// A WAL PUT that keeps failing (`500` to the first try and to every retry of the S3
/// client): the writer hears `503` `"outcome":"unknown"` and the server takes no more
/// appends; after a restart the record is not there and offsets go on without a gap.
#[tokio::test]
async fn on_s3_a_failing_put_answers_503_unknown_and_stops_appends() {
    let s3 = LocalS3::start();
    let setup = Setup::s3(&s3, &unique("failed-put")).with(&["--block-ms", "3600000"]);
    let client = reqwest::Client::new();
    let server = setup.start();
    let records = server.url("/streams/s/records");
    let (status, body) = post(&client, &records, b"kept", None).await;
    assert_eq!((status, body), (200, json!({"offset": 0})));
    // The next PUTs the server sends are this append's frame and its retries (no uploads
    // run): fail more of them than the client retries.
    let next = s3.control().puts_seen() + 1;
    for nth in next..next + S3_CLIENT_ATTEMPTS {
        s3.control().fail_put(nth);
    }
    let (status, body) = post(&client, &records, b"failed", None).await;
    assert_eq!((status, body["outcome"].as_str()), (503, Some("unknown")), "{body}");
    assert_eq!(s3.control().faults_pending(), 0, "every attempt was sent and failed");
    assert!(body["error"].as_str().unwrap().contains("may or may not be durable"), "{body}");
    let (status, body) = post(&client, &records, b"after", None).await;
    assert_eq!((status, body["outcome"].as_str()), (503, Some("not appended")), "{body}");
    server.crash();
    let server = setup.start();
    assert_eq!(read_all(&client, &server, "s").await, vec![(0, b"kept".to_vec(), None)]);
    let (status, body) = post(&client, &records_of(&server), b"next", None).await;
    assert_eq!((status, body), (200, json!({"offset": 1})));
}

/// The S3 client's attempts at one request: the first and `object_store`'s 10 retries.
const S3_CLIENT_ATTEMPTS: u64 = 11;

fn records_of(server: &Server) -> String {
    server.url("/streams/s/records")
}
