//! `walab serve` end to end: the built binary on a real file WAL, the Durable Streams
//! protocol over real HTTP, killed and restarted.

use std::path::Path;
use std::process::Command;

use serde_json::json;

mod serve_common;
use serve_common::{eventually, files_in, index_of, Server, Streams};

/// A server that uploads nothing during a test (its blocks seal after an hour).
fn start(wal_dir: &Path) -> Server {
    start_with(wal_dir, &["--block-ms", "3600000"])
}

fn start_with(wal_dir: &Path, flags: &[&str]) -> Server {
    let mut command = Command::new(env!("CARGO_BIN_EXE_walab"));
    command.args(["serve", "--wal", &format!("file://{}", wal_dir.display())]).args(flags);
    Server::spawn(command, 0)
}

const JSON: &str = "application/json";
const BYTES: &str = "application/octet-stream";

#[tokio::test]
async fn pipelined_appends_each_get_a_place_of_their_own_and_read_back_once_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    let streams = Streams::of(&server);
    assert_eq!(streams.create("one", JSON, b"").await.status, 201);
    let appends = (0..64).map(|n| {
        let streams = &streams;
        async move { (n, streams.append("one", JSON, json!({ "n": n }).to_string().as_bytes(), None).await) }
    });
    // Each POST's answer names where its record ends: 64 different ends, 1 to 64.
    let mut written_at = vec![0; 64];
    for (n, answer) in futures::future::join_all(appends).await {
        assert_eq!(answer.status, 204, "{}", answer.text());
        written_at[n] = index_of(&answer.next());
    }
    let mut ends = written_at.clone();
    ends.sort();
    assert_eq!(ends, (1..=64).collect::<Vec<u64>>());
    // The read gives each message once, in the order of those places.
    let messages = streams.messages("one").await;
    assert_eq!(messages.len(), 64);
    for (place, message) in messages.iter().enumerate() {
        let n = message["n"].as_u64().unwrap() as usize;
        assert_eq!(written_at[n], place as u64 + 1, "message {n}");
    }
    // Reads from any returned offset start right after that record.
    let middle = streams.read_from("one", &format!("{:016}_{:016}", 0, 0)).await;
    assert_eq!(middle.json().as_array().unwrap().len(), 64);
    let tail = streams.tail("one").await;
    assert_eq!(index_of(&tail), 64);
    let at_tail = streams.read_from("one", &tail).await;
    assert_eq!((at_tail.status, at_tail.text().as_str(), at_tail.header("stream-up-to-date")), (200, "[]", Some("true")));
}

/// A client sends its whole body before it reads the answer: a body over the limit is read
/// to its end and refused with `413`, never cut off with a reset connection, and the
/// connection's next request is answered.
#[tokio::test]
async fn a_body_over_the_limit_is_read_to_its_end_and_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    let s = Streams::of(&server);
    assert_eq!(s.create("big", BYTES, b"").await.status, 201);
    for megabytes in [5, 10, 10, 10, 32] {
        let answer = s.append("big", BYTES, &vec![7u8; megabytes << 20], None).await;
        assert_eq!(answer.status, 413, "{megabytes} MiB: {}", answer.text());
        assert!(answer.error().contains("over this server's limit of 4194304 bytes"), "{}", answer.error());
    }
    assert_eq!(s.append("big", BYTES, b"small", None).await.status, 204);
    assert_eq!(s.bytes("big").await, b"small");
}

#[tokio::test]
async fn bad_requests_are_refused_as_the_protocol_says_and_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    let s = Streams::of(&server);
    assert_eq!(s.create("s", "text/plain", b"x").await.status, 201);
    assert_eq!(s.create("j", JSON, b"").await.status, 201);
    let producer = |epoch: &'static str, seq: &'static str| [("content-type", "text/plain"), ("producer-id", "p"), ("producer-epoch", epoch), ("producer-seq", seq)];
    let refusals = [
        (s.append("s", "text/plain", b"", None).await, 400, "an empty body appends nothing"),
        (s.append_with("s", &[], b"x", None).await, 400, "needs a Content-Type"),
        (s.append("s", JSON, b"{}", None).await, 409, "the stream's content type is text/plain"),
        (s.append("j", JSON, b"[]", None).await, 400, "an empty JSON array"),
        (s.append("j", JSON, b"{ nope }", None).await, 400, "the body is not JSON"),
        (s.append("none", "text/plain", b"x", None).await, 404, "no such stream"),
        (s.append_with("s", &producer("0", "1abc"), b"x", None).await, 400, "Producer-Seq: \"1abc\" is not a non-negative whole number"),
        (s.append_with("s", &producer("9007199254740992", "0"), b"x", None).await, 400, "more than 2^53 - 1"),
        (s.append_with("s", &[("content-type", "text/plain"), ("producer-id", "p")], b"x", None).await, 400, "give all three or none"),
        (s.append("s", "text/plain", &vec![b'x'; (4 << 20) + 1], None).await, 413, "over this server's limit of 4194304 bytes"),
        (s.read_from("s", "0,1").await, 400, "offset \"0,1\" is not -1, now or an offset this server gave"),
        (s.read_from("s", "").await, 400, "offset \"\" is empty"),
        (s.get("s", "offset=-1&offset=now").await, 400, "given more than once"),
        (s.read_from("s", "9999999999999999_9999999999999999").await, 400, "is past the stream's tail"),
        (s.read_from("s", "0000000000000000_0000000000000007").await, 400, "is not where a record starts"),
        (s.get("s", "live=long-poll").await, 400, "a live read needs an offset"),
        (s.create_with("t", &[("stream-ttl", "060")]).await, 400, "Stream-TTL \"060\" is not a whole number"),
        (s.create_with("t", &[("stream-ttl", "1"), ("stream-expires-at", "2030-01-01T00:00:00Z")]).await, 400, "give one or the other"),
        (s.create_with("t", &[("stream-expires-at", "tomorrow")]).await, 400, "not an RFC 3339 time"),
        (s.create("s", JSON, b"").await, 409, "another configuration: content type application/json"),
        (s.create_with("t", &[("stream-fork-offset", "0000000000000000_0000000000000000")]).await, 400, "need Stream-Forked-From"),
        (s.create_with("f", &[("stream-forked-from", "/v1/stream/none")]).await, 404, "no such stream"),
        (s.read_from("a//b", "-1").await, 400, "path segment \"\""),
        (s.create("__ds/x", JSON, b"").await, 400, "which the protocol reserves"),
    ];
    for (answer, status, text) in refusals {
        assert_eq!(answer.status, status, "{}", answer.text());
        if answer.body.is_empty() {
            continue;
        }
        let error = answer.error();
        assert!(error.contains(text), "{error:?} does not say {text:?}");
    }
    // Every refusal left the streams as they were.
    assert_eq!(s.bytes("s").await, b"x");
    assert_eq!(s.messages("j").await, Vec::<serde_json::Value>::new());
    let gone = reqwest::get(server.url("/elsewhere")).await.unwrap();
    assert_eq!(gone.status(), 404);
    assert_eq!(gone.headers().get("x-content-type-options").unwrap(), "nosniff");
}

#[tokio::test]
async fn a_producer_retry_is_a_duplicate_also_after_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    let said = server.preamble.join("\n");
    assert!(said.contains("/default/0.serve/meta is new, bound now to the WAL file://"), "{said}");
    assert!(said.contains("the WAL gave back 0 records"), "{said}");
    let s = Streams::of(&server);
    s.create("s", "text/plain", b"").await;
    let mut ends = Vec::new();
    for seq in 0..3 {
        let answer = s.append("s", "text/plain", format!("p{seq} ").as_bytes(), Some(("p", 1, seq))).await;
        assert_eq!((answer.status, answer.header("producer-seq")), (200, Some(seq.to_string().as_str())), "{}", answer.text());
        ends.push(answer.next());
        assert_eq!(s.append("s", "text/plain", b"- ", None).await.status, 204);
    }
    let again = s.append("s", "text/plain", b"p2 ", Some(("p", 1, 2))).await;
    assert_eq!((again.status, again.header("producer-epoch"), again.header("producer-seq")), (204, Some("1"), Some("2")));
    server.crash();

    let server = start(dir.path());
    // What it found, said plainly: one stream, nothing in objects yet, the requests back
    // from the WAL (the six appends; the empty creation wrote no record).
    let said = server.preamble.join("\n");
    assert!(said.contains("holds 1 stream and 0 committed objects; the WAL gave back 6 records: 6 requests not yet in objects"), "{said}");
    let s = Streams::of(&server);
    // After the restart, from the WAL alone: the retried seqs are duplicates, naming the
    // highest seq accepted.
    for seq in [2, 0] {
        let again = s.append("s", "text/plain", b"p? ", Some(("p", 1, seq))).await;
        assert_eq!((again.status, again.header("producer-seq")), (204, Some("2")), "seq {seq}");
    }
    let gap = s.append("s", "text/plain", b"p4 ", Some(("p", 1, 4))).await;
    assert_eq!((gap.status, gap.header("producer-expected-seq"), gap.header("producer-received-seq")), (409, Some("3"), Some("4")));
    assert!(gap.error().contains("expected seq 3"), "{}", gap.error());
    assert_eq!(s.append("s", "text/plain", b"p3 ", Some(("p", 1, 3))).await.status, 200);
    let stale = s.append("s", "text/plain", b"old ", Some(("p", 0, 4))).await;
    assert_eq!((stale.status, stale.header("producer-epoch")), (403, Some("1")));
    // A new session of the producer fences the old one; a new epoch starts at 0.
    assert_eq!(s.append("s", "text/plain", b"new ", Some(("p", 2, 1))).await.status, 400);
    assert_eq!(s.append("s", "text/plain", b"new0 ", Some(("p", 2, 0))).await.status, 200);
    let fenced = s.append("s", "text/plain", b"p4 ", Some(("p", 1, 4))).await;
    assert_eq!((fenced.status, fenced.header("producer-epoch")), (403, Some("2")));
    assert!(fenced.error().contains("producer epoch 1 is fenced: the current epoch is 2"), "{}", fenced.error());
    assert_eq!(String::from_utf8(s.bytes("s").await).unwrap(), "p0 - p1 - p2 - p3 new0 ");
    // A retried seq is read from where its record ends, as the first answer said.
    assert_eq!(s.read_from("s", &ends[1]).await.text(), "- p2 - p3 new0 ");
}

#[tokio::test]
async fn a_post_is_one_record_whole_also_when_it_is_larger_than_a_wal_record_and_after_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    let s = Streams::of(&server);
    s.create("j", JSON, b"").await;
    s.create("b", BYTES, b"").await;
    // A batch of 500 messages under one producer seq: one record.
    let batch: Vec<serde_json::Value> = (0..500).map(|n| json!({ "n": n })).collect();
    let answer = s.append("j", JSON, serde_json::to_string(&batch).unwrap().as_bytes(), Some(("p", 0, 0))).await;
    assert_eq!((answer.status, index_of(&answer.next())), (200, 1));
    // 300 KB in one POST: five WAL records joined back into one stream record.
    let big: Vec<u8> = (0..300_000u32).map(|n| (n % 251) as u8).collect();
    let answer = s.append("b", BYTES, &big, Some(("p", 0, 0))).await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.next(), format!("{:016}_{:016}", 1, 300_000));
    server.crash();

    let server = start(dir.path());
    let s = Streams::of(&server);
    assert_eq!(s.messages("j").await, batch);
    assert_eq!(s.bytes("b").await, big);
    assert_eq!(s.append("b", BYTES, &big, Some(("p", 0, 0))).await.status, 204, "the retry is a duplicate");
    assert_eq!(s.tail("b").await, format!("{:016}_{:016}", 1, 300_000));
}

const SMALL_BLOCKS: &[&str] =
    &["--block-bytes", "4096", "--block-ms", "20", "--stream-object-bytes", "2048", "--segment-bytes", "65536"];

#[tokio::test]
async fn records_read_across_objects_and_the_log_cache_are_one_sequence_also_after_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let server = start_with(dir.path(), SMALL_BLOCKS);
    let s = Streams::of(&server);
    s.create("a", BYTES, b"").await;
    s.create("b", JSON, b"").await;
    let value = |n: u64| format!("{n:0>100}").into_bytes();
    for chunk in (0..1000u64).collect::<Vec<_>>().chunks(50) {
        let appends = chunk.iter().map(|&n| {
            let s = &s;
            async move { assert_eq!(s.append("a", BYTES, &value(n), None).await.status, 204) }
        });
        futures::future::join_all(appends).await;
    }
    // One producer on stream b, one seq after the other.
    for seq in 0..200u64 {
        let answer = s.append("b", JSON, json!({ "seq": seq }).to_string().as_bytes(), Some(("p", 1, seq))).await;
        assert_eq!((answer.status, index_of(&answer.next())), (200, seq + 1));
    }
    eventually("everything committed", async || {
        index_of(&s.committed("a").await) == 1000 && index_of(&s.committed("b").await) == 200
    })
    .await;
    let wal_dir = dir.path().join("default/0");
    eventually("the WAL's first segment removed", async || !files_in(&wal_dir).contains(&"wal-00000000000000000001.log".to_string())).await;
    let objects = files_in(&dir.path().join("default/0.serve/objects"));
    assert!(objects.len() >= 2, "objects: {objects:?}");

    let a = s.bytes("a").await;
    assert_eq!(a.len(), 100_000);
    let mut values: Vec<Vec<u8>> = a.chunks(100).map(<[u8]>::to_vec).collect();
    values.sort();
    assert_eq!(values, (0..1000).map(value).collect::<Vec<_>>(), "every value once");
    let b = s.messages("b").await;
    assert_eq!(b, (0..200).map(|seq| json!({ "seq": seq })).collect::<Vec<_>>());
    // Ten more stay in the log cache or join an object: the sequence goes on either way.
    for n in 1000..1010 {
        assert_eq!(index_of(&s.append("a", BYTES, &value(n), None).await.next()), n + 1);
    }
    server.crash();

    let server = start_with(dir.path(), SMALL_BLOCKS);
    let s = Streams::of(&server);
    let again = s.bytes("a").await;
    assert_eq!((again.len(), &again[..100_000]), (101_000, &a[..]));
    assert_eq!(s.messages("b").await, b);
    // The producer's state came back from the commit: the WAL records are trimmed.
    let answer = s.append("b", JSON, b"{}", Some(("p", 1, 199))).await;
    assert_eq!((answer.status, answer.header("producer-seq")), (204, Some("199")));
    let late = s.append("b", JSON, b"{}", Some(("p", 1, 201))).await;
    assert_eq!((late.status, late.header("producer-expected-seq")), (409, Some("200")));
}

#[tokio::test]
async fn uploads_compact_so_the_metadata_stays_bounded_and_every_record_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let flags = ["--block-bytes", "4096", "--block-ms", "10", "--compact-bytes", "65536", "--segment-bytes", "65536"];
    let server = start_with(dir.path(), &flags);
    let s = Streams::of(&server);
    let names = ["a", "b", "c"];
    for name in names {
        s.create(name, JSON, b"").await;
    }
    // Many small uploads: each carries a run of every stream written since the last.
    for n in 0..1500u64 {
        let name = names[(n % 3) as usize];
        let answer = s.append(name, JSON, json!({ "n": n, "pad": "x".repeat(60) }).to_string().as_bytes(), Some((name, 0, n / 3))).await;
        assert_eq!(answer.status, 200, "{}", answer.text());
        if n % 15 == 14 {
            tokio::time::sleep(std::time::Duration::from_millis(12)).await;
        }
    }
    let stats = || async {
        let reply = s.client.get(server.url("/stats")).send().await.unwrap().bytes().await.unwrap();
        serde_json::from_slice::<serde_json::Value>(&reply).unwrap()
    };
    eventually("everything committed", async || {
        let mut all = true;
        for name in names {
            all &= index_of(&s.committed(name).await) == 500;
        }
        all
    })
    .await;
    let uploads = stats().await["object_puts"].as_u64().unwrap();
    assert!(uploads > 100, "{uploads} uploads: too few to show anything");
    // Without compaction every upload would leave a run per stream it carried: at least
    // one per upload. Compacted, the runs stay a few per size tier.
    eventually("the runs compacted", async || stats().await["meta_runs"].as_u64().unwrap() <= 3 * 40).await;
    // The objects they replaced go once their grace is over.
    eventually("garbage deleted", async || files_in(&dir.path().join("default/0.serve/objects")).len() <= 60).await;
    let expected = |name: &str| -> Vec<serde_json::Value> {
        let first = names.iter().position(|n| *n == name).unwrap() as u64;
        (0..500).map(|k| json!({ "n": first + 3 * k, "pad": "x".repeat(60) })).collect()
    };
    for name in names {
        assert_eq!(s.messages(name).await, expected(name), "{name}");
    }
    server.crash();
    let server = start_with(dir.path(), &flags);
    let s = Streams::of(&server);
    for name in names {
        assert_eq!(s.messages(name).await, expected(name), "{name} after a restart");
        let again = s.append(name, JSON, b"{}", Some((name, 0, 499))).await;
        assert_eq!(again.status, 204, "{name}");
    }
}

#[tokio::test]
async fn a_crash_between_upload_and_commit_leaves_an_orphan_that_expires() {
    let dir = tempfile::tempdir().unwrap();
    let objects_dir = dir.path().join("default/0.serve/objects");
    let mut server = start_with(dir.path(), &["--block-ms", "20", "--crash-at", "before-commit"]);
    let s = Streams::of(&server);
    s.create("s", "text/plain", b"").await;
    assert_eq!(s.append("s", "text/plain", b"first ", None).await.status, 204);
    let exit = server.child.wait().expect("the server ends");
    assert!(!exit.success(), "the server aborted: {exit:?}");
    assert_eq!(files_in(&objects_dir), vec![format!("{:020}", 0)], "the orphan is uploaded");

    let server = start_with(dir.path(), &["--block-ms", "20"]);
    assert!(server.preamble.iter().any(|line| line.contains("expired 1 object ids")), "{:?}", server.preamble);
    let s = Streams::of(&server);
    assert_eq!(index_of(&s.append("s", "text/plain", b"second", None).await.next()), 2);
    eventually("both records committed", async || index_of(&s.committed("s").await) == 2).await;
    // Id 0 expired with its object; the commits used new ids.
    let objects = files_in(&objects_dir);
    assert!(!objects.is_empty() && !objects.contains(&format!("{:020}", 0)), "objects: {objects:?}");
    assert_eq!(s.bytes("s").await, b"first second");
}

#[tokio::test]
async fn streams_deleted_closed_forked_and_expiring_stay_so_across_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let server = start_with(dir.path(), SMALL_BLOCKS);
    let s = Streams::of(&server);
    s.create("source", "text/plain", b"inherited ").await;
    s.append("source", "text/plain", b"and more", None).await;
    let fork = s.create_with("fork", &[("stream-forked-from", "/v1/stream/source"), ("stream-fork-offset", "0000000000000001_0000000000000010"), ("stream-fork-sub-offset", "3")]).await;
    assert_eq!((fork.status, fork.next().as_str()), (201, "0000000000000002_0000000000000013"));
    s.append("fork", "text/plain", b"!", None).await;
    assert_eq!(s.delete("source").await.status, 204);
    s.create("closed", "text/plain", b"final").await;
    assert_eq!(s.close("closed").await.header("stream-closed"), Some("true"));
    s.create("deleted", "text/plain", b"gone").await;
    s.delete("deleted").await;
    let expiry = chrono_in(2);
    s.create_with("expiring", &[("stream-expires-at", &expiry), ("content-type", "text/plain")]).await;
    // Let some of it reach objects, then crash.
    eventually("the fork committed", async || index_of(&s.committed("fork").await) == 3).await;
    server.crash();

    let server = start_with(dir.path(), SMALL_BLOCKS);
    let s = Streams::of(&server);
    assert_eq!(s.head("source").await.status, 410, "soft-deleted: the fork still reads it");
    assert_eq!(s.create("source", "text/plain", b"").await.status, 409, "its name stays taken");
    assert_eq!(s.bytes("fork").await, b"inherited and!");
    let closed = s.head("closed").await;
    assert_eq!((closed.header("stream-closed"), s.append("closed", "text/plain", b"x", None).await.status), (Some("true"), 409));
    assert_eq!(s.head("deleted").await.status, 404);
    assert_eq!(s.create("deleted", "text/plain", b"anew").await.status, 201, "a deleted name may be used again");
    assert_eq!(s.bytes("deleted").await, b"anew", "and nothing of the old stream shows");
    eventually("the stream expired", async || s.head("expiring").await.status == 404).await;
    // The fork's delete frees the soft-deleted source, also after another crash.
    assert_eq!(s.delete("fork").await.status, 204);
    assert_eq!(s.head("source").await.status, 404);
    server.crash();
    let server = start_with(dir.path(), SMALL_BLOCKS);
    let s = Streams::of(&server);
    assert_eq!((s.head("source").await.status, s.head("fork").await.status), (404, 404));
    assert_eq!(s.create("source", "text/plain", b"").await.status, 201);
}

/// The data bytes of every object file under `dir`.
fn object_bytes(dir: &Path) -> u64 {
    files_in(dir).iter().map(|name| std::fs::metadata(dir.join(name)).unwrap().len()).sum()
}

#[tokio::test]
async fn a_fork_reads_its_source_s_committed_objects_and_copies_none() {
    let dir = tempfile::tempdir().unwrap();
    // Records larger than --compact-bytes: no object is ever rewritten, so the objects'
    // bytes count what was uploaded.
    let flags = ["--block-ms", "20", "--compact-bytes", "1024"];
    let server = start_with(dir.path(), &flags);
    let s = Streams::of(&server);
    s.create("source", BYTES, b"").await;
    let record = |n: u8| vec![b'a' + n; 20_000];
    for n in 0..10 {
        assert_eq!(s.append("source", BYTES, &record(n), None).await.status, 204);
    }
    eventually("the source committed", async || index_of(&s.committed("source").await) == 10).await;
    let objects_dir = dir.path().join("default/0.serve/objects");
    let uploaded = object_bytes(&objects_dir);
    assert!(uploaded >= 200_000, "{uploaded} bytes of objects");
    // A fork at the source's eighth record, and one inside its fourth (a sub-offset).
    let at = |records: u64| format!("{:016}_{:016}", records, records * 20_000);
    let from = ("stream-forked-from", "/v1/stream/source");
    assert_eq!(s.create_with("fork", &[from, ("stream-fork-offset", &at(8))]).await.status, 201);
    let inside = s.create_with("inside", &[from, ("stream-fork-offset", &at(3)), ("stream-fork-sub-offset", "5")]).await;
    assert_eq!(inside.status, 201);
    assert_eq!(s.append("fork", BYTES, b"!", None).await.status, 204);
    assert_eq!(s.append("inside", BYTES, b"?", None).await.status, 204);
    eventually("the forks' own records committed", async || {
        index_of(&s.committed("fork").await) == 9 && index_of(&s.committed("inside").await) == 5
    })
    .await;
    // What the forks added to the objects is their own records (and the part of a record
    // the sub-offset keeps), not the source's 160,000 and 60,000 bytes below the fork.
    let added = object_bytes(&objects_dir) - uploaded;
    assert!(added < 20_000, "the forks added {added} bytes of objects");
    let source: Vec<u8> = (0..10).flat_map(record).collect();
    let expected_fork = [&source[..160_000], b"!"].concat();
    let expected_inside = [&source[..60_005], b"?"].concat();
    assert_eq!(s.bytes("fork").await, expected_fork);
    assert_eq!(s.bytes("inside").await, expected_inside);
    server.crash();
    let server = start_with(dir.path(), &flags);
    let s = Streams::of(&server);
    assert_eq!(s.bytes("fork").await, expected_fork, "after a restart");
    assert_eq!(s.bytes("inside").await, expected_inside, "after a restart");
}

/// An RFC 3339 time `seconds` from now.
fn chrono_in(seconds: u64) -> String {
    let at = std::time::SystemTime::now() + std::time::Duration::from_secs(seconds);
    let since = at.duration_since(std::time::UNIX_EPOCH).unwrap();
    let (days, rest) = (since.as_secs() / 86_400, since.as_secs() % 86_400);
    // Civil from days (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rest / 3600, rest % 3600 / 60, rest % 60)
}

#[test]
fn a_metadata_log_belongs_to_one_wal() {
    let dir = tempfile::tempdir().unwrap();
    let meta = format!("file://{}", dir.path().join("meta").display());
    let first = dir.path().join("first");
    let mut command = Command::new(env!("CARGO_BIN_EXE_walab"));
    command.args(["serve", "--wal", &format!("file://{}", first.display()), "--meta", &meta]);
    Server::spawn(command, 0).crash();
    let other = Command::new(env!("CARGO_BIN_EXE_walab"))
        .args(["serve", "--wal", &format!("file://{}", dir.path().join("second").display()), "--meta", &meta, "--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&other.stderr);
    assert_eq!(other.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("this metadata log belongs to the WAL file://"), "{stderr}");
    assert!(stderr.contains(&format!("{}/default/0", first.display())), "{stderr}");
    assert!(stderr.contains("give this WAL its own --meta"), "{stderr}");
}

#[tokio::test]
async fn a_metadata_directory_that_came_back_empty_starts_over_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let wal = format!("file://{}", dir.path().display());
    let mut command = Command::new(env!("CARGO_BIN_EXE_walab"));
    command.args(["serve", "--wal", &wal]);
    Server::spawn(command, 0).crash();
    // A power cut on a machine whose server never synced them: every metadata file's
    // bytes are gone (FORMAT and the segments are there, empty or zero).
    let meta_dir = dir.path().join("default/0.serve/meta");
    let names = files_in(&meta_dir);
    assert!(names.contains(&"FORMAT".to_string()), "{names:?}");
    for name in names.iter().filter(|name| *name == "FORMAT" || name.starts_with("wal-")) {
        let path = meta_dir.join(name);
        let len = if name == "FORMAT" { 0 } else { std::fs::metadata(&path).unwrap().len() as usize };
        std::fs::write(&path, vec![0u8; len]).unwrap();
    }
    let mut command = Command::new(env!("CARGO_BIN_EXE_walab"));
    command.args(["serve", "--wal", &wal]);
    let server = Server::spawn(command, 0);
    let said = server.preamble.join("\n");
    assert!(said.contains("FORMAT was empty and no segment held a byte") && said.contains("in the tiny format"), "{said}");
    assert!(!said.contains("the  format"), "{said}");
    let s = Streams::of(&server);
    assert_eq!(s.create("s", "text/plain", b"after").await.status, 201);
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

#[tokio::test]
async fn every_ack_printed_by_load_http_is_where_its_records_end() {
    every_ack_is_readable(&[]).await;
}

#[tokio::test]
async fn every_ack_printed_by_load_http_with_batches_is_where_its_records_end() {
    every_ack_is_readable(&["--batch", "3"]).await;
}

async fn every_ack_is_readable(flags: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let server = start_with(dir.path(), &["--block-ms", "10"]);
    let load = Command::new(env!("CARGO_BIN_EXE_walab"))
        .args(["load", "--http", &server.base, "--writers", "16", "--records", "200", "--streams", "4", "--producers", "8"])
        .args(["--run-id", "t", "--record-bytes", "10"])
        .args(flags)
        .output()
        .expect("walab load runs");
    assert!(load.status.success(), "{}", String::from_utf8_lossy(&load.stderr));
    let acks = ledger(&load.stdout);
    assert_eq!(acks.iter().map(|ack| ack.4).sum::<u64>(), 200);
    let s = Streams::of(&server);
    for stream in ["t-0", "t-1", "t-2", "t-3"] {
        let mut ends: Vec<&String> = acks.iter().filter(|ack| ack.0 == stream).map(|ack| &ack.1).collect();
        ends.sort();
        // Each acknowledged request is a record: the acks' ends are the records' ends,
        // one per index, and the last one is the stream's tail.
        assert_eq!(ends.iter().map(|end| index_of(end)).collect::<Vec<_>>(), (1..=ends.len() as u64).collect::<Vec<_>>());
        assert_eq!(&s.tail(stream).await, *ends.last().unwrap());
        let total = s.bytes(stream).await.len() as u64;
        for end in ends {
            let bytes: u64 = end.split('_').nth(1).unwrap().parse().unwrap();
            let (pages, _) = s.read_pages(stream, end).await;
            assert_eq!(pages.concat().len() as u64, total - bytes, "read from {end}");
        }
    }
}

#[tokio::test]
async fn a_crash_between_the_commit_and_the_wal_trim_loses_and_repeats_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // The first block seals at about 500 records; the writers go on while it uploads.
    let flags = ["--block-bytes", "65536", "--block-ms", "2000", "--segment-bytes", "65536"];
    let mut server = start_with(dir.path(), &[&flags[..], &["--crash-at", "after-commit"]].concat());
    // Every writer is a producer on a JSON stream.
    let load = Command::new(env!("CARGO_BIN_EXE_walab"))
        .args(["load", "--http", &server.base, "--writers", "8", "--seconds", "60", "--streams", "3", "--producers", "8"])
        .args(["--run-id", "c", "--content", "json"])
        .output()
        .expect("walab load runs");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let exit = loop {
        if let Some(exit) = server.child.try_wait().expect("the server's status") {
            break exit;
        }
        assert!(std::time::Instant::now() < deadline, "the server never crashed at the commit");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert!(!exit.success(), "the server aborted at the commit: {exit:?}");
    assert!(!load.status.success(), "the load ends with the server: {}", String::from_utf8_lossy(&load.stderr));
    let acks = ledger(&load.stdout);
    assert!(acks.len() > 100, "acks before the first commit: {}", acks.len());
    // The crash left the WAL untrimmed: its first segment still holds committed records.
    assert!(files_in(&dir.path().join("default/0")).contains(&"wal-00000000000000000001.log".to_string()));

    let server = start_with(dir.path(), &flags);
    let s = Streams::of(&server);
    let mut committed = 0;
    for stream in ["c-0", "c-1", "c-2"] {
        committed += index_of(&s.committed(stream).await);
        // Exactly once: each acknowledged request's end is a record's end; the records
        // are as many as the requests that were acknowledged or in flight.
        let tail = index_of(&s.tail(stream).await);
        let acked: Vec<u64> = acks.iter().filter(|ack| ack.0 == stream).map(|ack| index_of(&ack.1)).collect();
        let mut sorted = acked.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), acked.len(), "{stream}: two acks at one end");
        assert!(sorted.last().is_none_or(|&last| last <= tail), "{stream}: an ack past the tail {tail}");
        assert!(tail <= acked.len() as u64 + 8, "{stream}: {tail} records for {} acks and at most 8 in flight", acked.len());
        assert_eq!(s.messages(stream).await.len() as u64, tail);
    }
    assert!(committed > 0, "the commit before the crash counts after the restart");
    // Dedup survives: each producer's last acknowledged seq is a duplicate, and the next
    // one after the highest the server holds is fresh.
    let producers: std::collections::BTreeSet<(String, String)> = acks.iter().map(|ack| (ack.0.clone(), ack.2.clone())).collect();
    for (stream, producer) in producers {
        let last: u64 = acks.iter().filter(|ack| ack.2 == producer).map(|ack| ack.3.parse::<u64>().unwrap()).max().unwrap();
        let again = s.append(&stream, JSON, b"\"retry\"", Some((&producer, 0, last))).await;
        assert_eq!(again.status, 204, "{producer} seq {last}: {}", again.text());
        let held: u64 = again.header("producer-seq").unwrap().parse().unwrap();
        assert!(held >= last, "{producer}: the server holds seq {held}, below the acknowledged {last}");
        let next = s.append(&stream, JSON, b"\"next\"", Some((&producer, 0, held + 1))).await;
        assert_eq!(next.status, 200, "{producer} seq {}: {}", held + 1, next.text());
    }
}
