//! `walab serve` on the WALs that outlive the machine: an S3 WAL with S3 objects and an
//! S3 metadata log (walab's S3 test server, in this process, one per test), and a
//! Postgres WAL with a Postgres metadata log (the local PostgreSQL, one cluster name per
//! test). The same contract as on a file WAL, the crashes around the commit, fencing.

mod common;
mod serve_common;
use serve_common::{eventually, files_in, index_of, Server, Streams};

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


const SMALL_BLOCKS: &[&str] = &["--block-bytes", "4096", "--block-ms", "20", "--stream-object-bytes", "2048"];

/// The contract on `setup`: records read back once each across the committed objects
/// and the log cache, a producer's retry is a duplicate, a gap is `409` and a stale
/// epoch `403`; and all of it again after a crash, the producers' state coming back from
/// the metadata log once the WAL records are trimmed.
async fn keeps_the_contract(setup: &Setup) {
    let server = setup.with(SMALL_BLOCKS).start();
    let s = Streams::of(&server);
    assert_eq!(s.create("a", "application/octet-stream", b"").await.status, 201);
    assert_eq!(s.create("b", "application/json", b"").await.status, 201);
    let value = |n: u64| format!("{n:0>100}").into_bytes();
    for chunk in (0..400u64).collect::<Vec<_>>().chunks(50) {
        let appends = chunk.iter().map(|&n| {
            let s = &s;
            async move {
                let answer = s.append("a", "application/octet-stream", &value(n), None).await;
                assert_eq!(answer.status, 204, "{}", answer.text());
            }
        });
        futures::future::join_all(appends).await;
    }
    for seq in 0..100u64 {
        let answer = s.append("b", "application/json", json!({ "seq": seq }).to_string().as_bytes(), Some(("p", 1, seq))).await;
        assert_eq!((answer.status, index_of(&answer.next())), (200, seq + 1), "{}", answer.text());
    }
    let again = s.append("b", "application/json", b"{}", Some(("p", 1, 99))).await;
    assert_eq!((again.status, again.header("producer-seq")), (204, Some("99")));
    let gap = s.append("b", "application/json", b"{}", Some(("p", 1, 101))).await;
    assert_eq!((gap.status, gap.header("producer-expected-seq")), (409, Some("100")));
    eventually("everything committed", async || {
        index_of(&s.committed("a").await) == 400 && index_of(&s.committed("b").await) == 100
    })
    .await;
    let stats: Value = serde_json::from_slice(&s.client.get(server.url("/stats")).send().await.unwrap().bytes().await.unwrap()).unwrap();
    assert!(stats["object_puts"].as_u64().unwrap() >= 2, "{stats}");

    let a = s.bytes("a").await;
    let mut values: Vec<Vec<u8>> = a.chunks(100).map(<[u8]>::to_vec).collect();
    values.sort();
    assert_eq!(values, (0..400).map(value).collect::<Vec<_>>(), "every value once");
    let b = s.messages("b").await;
    assert_eq!(b, (0..100).map(|seq| json!({ "seq": seq })).collect::<Vec<_>>());
    // Ten more, in the log cache or in an object: the sequence goes on either way.
    for n in 400..410 {
        assert_eq!(index_of(&s.append("a", "application/octet-stream", &value(n), None).await.next()), n + 1);
    }
    server.crash();

    let server = setup.with(SMALL_BLOCKS).start();
    let s = Streams::of(&server);
    let again = s.bytes("a").await;
    assert_eq!((again.len(), &again[..40_000]), (41_000, &a[..]));
    assert_eq!(&again[40_000..], (400..410).flat_map(value).collect::<Vec<u8>>());
    assert_eq!(s.messages("b").await, b);
    let retry = s.append("b", "application/json", b"{}", Some(("p", 1, 99))).await;
    assert_eq!((retry.status, retry.header("producer-seq")), (204, Some("99")), "after the restart");
    let late = s.append("b", "application/json", b"{}", Some(("p", 1, 150))).await;
    assert_eq!((late.status, late.header("producer-expected-seq")), (409, Some("100")));
    assert_eq!(s.append("b", "application/json", b"\"new 0\"", Some(("p", 2, 0))).await.status, 200);
    let old = s.append("b", "application/json", b"{}", Some(("p", 1, 100))).await;
    assert_eq!((old.status, old.header("producer-epoch")), (403, Some("2")));
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
    let server = setup.with(&["--block-ms", "20", "--crash-at", "before-commit"]).start();
    let s = Streams::of(&server);
    s.create("s", "text/plain", b"").await;
    assert_eq!(s.append("s", "text/plain", b"first ", None).await.status, 204);
    let (exit, said) = server.ended();
    assert!(!exit.success(), "the server aborted: {exit:?}");
    assert!(said.contains("crashing at BeforeCommit"), "{said}");
    assert_eq!(files_in(&objects_dir), vec![format!("{:020}", 0)], "the orphan is uploaded");

    let server = setup.with(&["--block-ms", "20"]).start();
    assert!(server.preamble.iter().any(|line| line.contains("expired 1 object ids")), "{:?}", server.preamble);
    let s = Streams::of(&server);
    assert_eq!(index_of(&s.append("s", "text/plain", b"second", None).await.next()), 2);
    eventually("both records committed", async || index_of(&s.committed("s").await) == 2).await;
    let objects = files_in(&objects_dir);
    assert!(!objects.is_empty() && !objects.contains(&format!("{:020}", 0)), "objects: {objects:?}");
    assert_eq!(s.bytes("s").await, b"first second");
}

/// The acks `walab load --http` printed: (stream, offset, producer, seq, records).
fn ledger(stdout: &[u8]) -> Vec<(String, String, String, String, u64)> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            assert_eq!((fields.len(), fields[0]), (6, "ack"), "{line}");
            (fields[1].into(), fields[2].into(), fields[3].into(), fields[4].into(), fields[5].parse().unwrap())
        })
        .collect()
}

/// A crash after the commit, before the WAL is confirmed, on `setup`: every acknowledged
/// request is there once, and each producer's dedup goes on.
async fn a_crash_after_the_commit_loses_and_repeats_nothing(setup: &Setup) {
    let flags = ["--block-bytes", "65536", "--block-ms", "2000"];
    let server = setup.with(&[&flags[..], &["--crash-at", "after-commit"]].concat()).start();
    let load = Command::new(env!("CARGO_BIN_EXE_walab"))
        .args(["load", "--http", &server.base, "--writers", "8", "--seconds", "60", "--streams", "3", "--producers", "8"])
        .args(["--run-id", "c", "--content", "json"])
        .output()
        .expect("walab load runs");
    let (exit, said) = server.ended();
    assert!(!exit.success(), "the server aborted at the commit: {exit:?}");
    assert!(said.contains("crashing at AfterCommit"), "{said}");
    assert!(!load.status.success(), "the load ends with the server: {}", String::from_utf8_lossy(&load.stderr));
    let acks = ledger(&load.stdout);
    assert!(acks.len() > 100, "acks before the first commit: {}", acks.len());

    let server = setup.with(&flags).start();
    let s = Streams::of(&server);
    let mut committed = 0;
    for stream in ["c-0", "c-1", "c-2"] {
        committed += index_of(&s.committed(stream).await);
        let tail = index_of(&s.tail(stream).await);
        let mut ends: Vec<u64> = acks.iter().filter(|ack| ack.0 == stream).map(|ack| index_of(&ack.1)).collect();
        let acked = ends.len();
        ends.sort();
        ends.dedup();
        assert_eq!(ends.len(), acked, "{stream}: two acks at one end");
        assert!(ends.last().is_none_or(|&last| last <= tail), "{stream}: an ack past the tail {tail}");
        assert!(tail <= acked as u64 + 8, "{stream}: {tail} records for {acked} acks and at most 8 in flight");
        assert_eq!(s.messages(stream).await.len() as u64, tail);
    }
    assert!(committed > 0, "the commit before the crash counts after the restart");
    let producers: std::collections::BTreeSet<(String, String)> = acks.iter().map(|ack| (ack.0.clone(), ack.2.clone())).collect();
    for (stream, producer) in producers {
        let last: u64 = acks.iter().filter(|ack| ack.2 == producer).map(|ack| ack.3.parse::<u64>().unwrap()).max().unwrap();
        let again = s.append(&stream, "application/json", b"\"retry\"", Some((&producer, 0, last))).await;
        assert_eq!(again.status, 204, "{producer} seq {last}: {}", again.text());
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
    let first = setup.start();
    let one = Streams::of(&first);
    assert_eq!(one.create("s", "text/plain", b"before ").await.status, 201);
    let second = setup.start();
    let fenced = one.append("s", "text/plain", b"fenced? ", None).await;
    assert_eq!((fenced.status, fenced.json()["outcome"].as_str()), (503, Some("unknown")), "{}", fenced.text());
    assert!(fenced.error().contains("fenced"), "{}", fenced.text());
    let after = one.append("s", "text/plain", b"after ", None).await;
    assert_eq!((after.status, after.json()["outcome"].as_str()), (503, Some("not appended")), "{}", after.text());
    let two = Streams::of(&second);
    assert_eq!(index_of(&two.append("s", "text/plain", b"second", None).await.next()), 2);
    assert_eq!(two.bytes("s").await, b"before second");
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
        .query_opt("SELECT trim_offset FROM walab_node WHERE cluster = $1 AND node = '0_meta'", &[&cluster])
        .await
        .expect("the node table");
    row.map_or(0, |row| row.get(0))
}

#[tokio::test]
async fn on_postgres_the_metadata_log_compacts_and_a_restart_reads_everything_back() {
    let cluster = unique("serve-compact");
    let objects = tempfile::tempdir().unwrap();
    let setup = Setup::postgres(&cluster, objects.path()).with(&[&SMALL_BLOCKS[..], &["--meta-snapshot-every", "6"]].concat());
    let server = setup.start();
    let s = Streams::of(&server);
    s.create("c", "application/json", b"").await;
    for seq in 0..300u64 {
        let answer = s.append("c", "application/json", json!({ "seq": seq }).to_string().as_bytes(), Some(("p", 1, seq))).await;
        assert_eq!((answer.status, index_of(&answer.next())), (200, seq + 1), "{}", answer.text());
        if seq % 30 == 29 {
            // Let a block seal now and then, so there are many uploads.
            eventually("the block committed", async || index_of(&s.committed("c").await) == seq + 1).await;
        }
    }
    eventually("the metadata log trimmed below a snapshot", async || meta_trim_offset(&cluster).await > 0).await;
    let before = s.messages("c").await;
    assert_eq!(before, (0..300).map(|seq| json!({ "seq": seq })).collect::<Vec<_>>());
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
    let s = Streams::of(&server);
    assert_eq!(s.messages("c").await, before);
    assert_eq!(index_of(&s.committed("c").await), 300);
    let retry = s.append("c", "application/json", b"{}", Some(("p", 1, 299))).await;
    assert_eq!((retry.status, retry.header("producer-seq")), (204, Some("299")), "dedup from the snapshot");
    let next = s.append("c", "application/json", b"{}", Some(("p", 1, 300))).await;
    assert_eq!((next.status, index_of(&next.next())), (200, 301));
}

/// A WAL PUT that keeps failing (`500` to the first try and to every retry of the S3
/// client): the writer hears `503` `"outcome":"unknown"` and the server takes no more
/// appends; after a restart the record is not there and offsets go on without a gap.
#[tokio::test]
async fn on_s3_a_failing_put_answers_503_unknown_and_stops_appends() {
    let s3 = LocalS3::start();
    let mut setup = Setup::s3(&s3, &unique("failed-put")).with(&["--block-ms", "3600000"]);
    // `fence=read` (walab serve's default is the lease): no lease renewals, so that the
    // next PUTs are this append's alone.
    setup.args[1].push_str("?fence=read");
    let server = setup.start();
    let s = Streams::of(&server);
    assert_eq!(s.create("s", "text/plain", b"kept ").await.status, 201);
    // The next PUTs the server sends are this append's frame and its retries (no uploads
    // run, no lease renewals): fail more of them than the client retries.
    let next = s3.control().puts_seen() + 1;
    for nth in next..next + S3_CLIENT_ATTEMPTS {
        s3.control().fail_put(nth);
    }
    let failed = s.append("s", "text/plain", b"failed ", None).await;
    assert_eq!((failed.status, failed.json()["outcome"].as_str()), (503, Some("unknown")), "{}", failed.text());
    assert_eq!(s3.control().faults_pending(), 0, "every attempt was sent and failed");
    assert!(failed.error().contains("may or may not be durable"), "{}", failed.text());
    let after = s.append("s", "text/plain", b"after ", None).await;
    assert_eq!((after.status, after.json()["outcome"].as_str()), (503, Some("not appended")), "{}", after.text());
    server.crash();
    let server = setup.start();
    let s = Streams::of(&server);
    assert_eq!(s.bytes("s").await, b"kept ");
    assert_eq!(index_of(&s.append("s", "text/plain", b"next", None).await.next()), 2);
}

/// The S3 client's attempts at one request: the first and `object_store`'s 10 retries.
const S3_CLIENT_ATTEMPTS: u64 = 11;
