//! `walab serve` end to end: the built binary on a real file WAL, real HTTP.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

mod serve_common;
use serve_common::Server;

/// A server that uploads nothing during a test (its blocks seal after an hour).
fn start(wal_dir: &Path) -> Server {
    start_with(wal_dir, &["--block-ms", "3600000"])
}

fn start_with(wal_dir: &Path, flags: &[&str]) -> Server {
    let mut command = Command::new(env!("CARGO_BIN_EXE_walab"));
    command.args(["serve", "--wal", &format!("file://{}", wal_dir.display())]).args(flags);
    Server::spawn(command, 0)
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

#[tokio::test]
async fn pipelined_appends_get_every_offset_once_and_read_back_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    let client = reqwest::Client::new();
    let records = server.url("/streams/one/records");
    let appends = (0..64).map(|n| {
        let (client, records) = (&client, &records);
        async move { (n, post(client, records, format!("record {n}").as_bytes(), None).await) }
    });
    let mut offset_of = vec![None; 64];
    for (n, (status, body)) in futures::future::join_all(appends).await {
        assert_eq!(status, 200, "{body}");
        let offset = body["offset"].as_u64().expect("an offset") as usize;
        assert!(offset_of.iter().all(|given| *given != Some(offset)), "offset {offset} given twice");
        offset_of[n] = Some(offset);
    }
    let (status, read) = get(&client, &format!("{records}?from=0&max=1000")).await;
    assert_eq!(status, 200, "{read}");
    assert_eq!((read["next"].as_u64(), read["end"].as_u64()), (Some(64), Some(64)));
    let read = read["records"].as_array().unwrap();
    assert_eq!(read.len(), 64);
    for (offset, record) in read.iter().enumerate() {
        assert_eq!(record["offset"].as_u64(), Some(offset as u64));
        let n = offset_of.iter().position(|given| *given == Some(offset)).expect("an append got this offset");
        assert_eq!(decoded(record), format!("record {n}").into_bytes());
        assert!(record.get("producer").is_none(), "an anonymous append has no producer: {record}");
    }

    for expected in 0..3 {
        let (status, body) = post(&client, &server.url("/streams/two/records"), b"x", None).await;
        assert_eq!((status, body["offset"].as_u64()), (200, Some(expected)));
    }
    let (_, window) = get(&client, &format!("{records}?from=60&max=2")).await;
    let offsets: Vec<u64> = window["records"].as_array().unwrap().iter().map(|r| r["offset"].as_u64().unwrap()).collect();
    assert_eq!((offsets, window["next"].as_u64()), (vec![60, 61], Some(62)));
    assert_eq!(get(&client, &server.url("/streams/one")).await, (200, serde_json::json!({"end": 64, "committed": 0})));
    let (_, list) = get(&client, &server.url("/streams")).await;
    assert_eq!(
        list,
        serde_json::json!({"streams": [
            {"stream": "one", "end": 64, "committed": 0},
            {"stream": "two", "end": 3, "committed": 0},
        ]})
    );
}

#[tokio::test]
async fn bad_requests_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    let client = reqwest::Client::new();
    assert_eq!(post(&client, &server.url("/streams/s/records"), b"x", None).await.0, 200);
    let refusals = [
        (post(&client, &server.url("/streams/a!b/records"), b"x", None).await, 400, "stream name \"a!b\" holds byte 0x21"),
        (post(&client, &server.url(&format!("/streams/{}/records", "s".repeat(129))), b"x", None).await, 400, "more than 128"),
        (post(&client, &server.url("/streams/s/records"), &vec![0; 64_001], None).await, 413, "over the limit of 64000"),
        (post(&client, &server.url("/streams/s/records"), b"x", Some(("p/1", 1, 0))).await, 400, "producer id \"p/1\""),
        (get(&client, &server.url("/streams/none/records")).await, 404, "stream none has no records"),
        (get(&client, &server.url("/streams/none")).await, 404, "stream none has no records"),
        (get(&client, &server.url("/streams/s/records?from=2")).await, 400, "from 2 is past the stream's end 1"),
        (get(&client, &server.url("/streams/s/records?max=0")).await, 400, "max 0: must be between 1 and 1000"),
        (get(&client, &server.url("/streams/s/records?from=-1")).await, 400, "from and max are whole numbers"),
        (get(&client, &server.url("/nothing")).await, 404, "no such route"),
    ];
    for ((status, body), expected_status, expected_text) in refusals {
        let error = body["error"].as_str().unwrap_or_else(|| panic!("no error in {body}"));
        assert_eq!(status, expected_status, "{error}");
        assert!(error.contains(expected_text), "{error:?} does not say {expected_text:?}");
    }
    let incomplete = client.post(server.url("/streams/s/records")).header("walab-producer", "p").body("x").send().await.unwrap();
    let (status, body) = answer(incomplete).await;
    assert_eq!((status, body["error"].as_str()), (400, Some("walab-producer needs walab-producer-epoch")));
}

#[tokio::test]
async fn a_producer_retry_is_a_duplicate_also_after_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let client = reqwest::Client::new();
    let server = start(dir.path());
    let records = server.url("/streams/s/records");
    let mut offsets = Vec::new();
    for seq in 0..3 {
        let (status, body) = post(&client, &records, format!("p {seq}").as_bytes(), Some(("p", 1, seq))).await;
        assert_eq!(status, 200, "{body}");
        offsets.push(body["offset"].as_u64().unwrap());
        let (status, _) = post(&client, &records, b"anonymous", None).await;
        assert_eq!(status, 200);
    }
    assert_eq!(offsets, vec![0, 2, 4]);
    let (status, body) = post(&client, &records, b"p 2", Some(("p", 1, 2))).await;
    assert_eq!((status, body), (200, serde_json::json!({"offset": 4, "duplicate": true})));
    server.crash();

    let server = start(dir.path());
    let records = server.url("/streams/s/records");
    let (status, body) = post(&client, &records, b"p 2", Some(("p", 1, 2))).await;
    assert_eq!((status, body), (200, serde_json::json!({"offset": 4, "duplicate": true})), "after the restart");
    let (status, body) = post(&client, &records, b"p 4", Some(("p", 1, 4))).await;
    assert_eq!((status, body["expected_seq"].as_u64()), (409, Some(3)), "{body}");
    assert!(body["error"].as_str().unwrap().contains("expected seq 3"));
    let (status, body) = post(&client, &records, b"p 3", Some(("p", 1, 3))).await;
    assert_eq!((status, body), (200, serde_json::json!({"offset": 6})));
    let (status, body) = post(&client, &records, b"old", Some(("p", 0, 4))).await;
    assert_eq!((status, body["current_epoch"].as_u64()), (409, Some(1)), "{body}");
    // A new session of the producer fences the old one.
    let (status, body) = post(&client, &records, b"new 0", Some(("p", 2, 0))).await;
    assert_eq!((status, body), (200, serde_json::json!({"offset": 7})));
    let (status, body) = post(&client, &records, b"p 4", Some(("p", 1, 4))).await;
    assert_eq!((status, body["current_epoch"].as_u64()), (409, Some(2)), "{body}");
    assert!(body["error"].as_str().unwrap().contains("producer p epoch 1 is fenced: the current epoch is 2"));

    let (_, read) = get(&client, &records).await;
    let table: Vec<(u64, String, Option<u64>, Option<u64>)> = read["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (r["offset"].as_u64().unwrap(), String::from_utf8(decoded(r)).unwrap(), r["epoch"].as_u64(), r["seq"].as_u64())
        })
        .collect();
    let expected: Vec<(u64, String, Option<u64>, Option<u64>)> = vec![
        (0, "p 0".into(), Some(1), Some(0)),
        (1, "anonymous".into(), None, None),
        (2, "p 1".into(), Some(1), Some(1)),
        (3, "anonymous".into(), None, None),
        (4, "p 2".into(), Some(1), Some(2)),
        (5, "anonymous".into(), None, None),
        (6, "p 3".into(), Some(1), Some(3)),
        (7, "new 0".into(), Some(2), Some(0)),
    ];
    assert_eq!(table, expected);
}

async fn post_batch(client: &reqwest::Client, url: &str, values: &[&[u8]], producer: Option<(&str, u64, u64)>) -> (u16, Value) {
    let mut body = Vec::new();
    for value in values {
        body.extend_from_slice(&(value.len() as u32).to_be_bytes());
        body.extend_from_slice(value);
    }
    post_body(client, url, body, producer).await
}

async fn post_body(client: &reqwest::Client, url: &str, body: Vec<u8>, producer: Option<(&str, u64, u64)>) -> (u16, Value) {
    let mut request = client.post(url).body(body);
    if let Some((id, epoch, seq)) = producer {
        request = request
            .header("walab-producer", id)
            .header("walab-producer-epoch", epoch.to_string())
            .header("walab-producer-seq", seq.to_string());
    }
    answer(request.send().await.expect("the server answers")).await
}

/// Every record of `stream` as (offset, value, producer, seq), from the log cache.
async fn stream_table(client: &reqwest::Client, server: &Server, stream: &str) -> Vec<(u64, String, Option<String>, Option<u64>)> {
    let (status, read) = get(client, &server.url(&format!("/streams/{stream}/records?from=0&max=1000"))).await;
    assert_eq!(status, 200, "{read}");
    read["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let producer = r["producer"].as_str().map(str::to_string);
            (r["offset"].as_u64().unwrap(), String::from_utf8(decoded(r)).unwrap(), producer, r["seq"].as_u64())
        })
        .collect()
}

#[tokio::test]
async fn a_batch_takes_consecutive_offsets_and_a_bad_one_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    let client = reqwest::Client::new();
    let batch = server.url("/streams/s/batch");
    assert_eq!(post_batch(&client, &batch, &[b"a", b"", b"c"], None).await, (200, serde_json::json!({"offset": 0, "count": 3})));
    assert_eq!(post(&client, &server.url("/streams/s/records"), b"d", None).await, (200, serde_json::json!({"offset": 3})));
    // A body larger than one record may be (two of 40,000 bytes) is a batch's to take.
    let big = vec![b'e'; 40_000];
    assert_eq!(post_batch(&client, &batch, &[&big, &big], None).await, (200, serde_json::json!({"offset": 4, "count": 2})));
    let values: Vec<String> = stream_table(&client, &server, "s").await.into_iter().map(|r| r.1).collect();
    let e = "e".repeat(40_000);
    assert_eq!(values, vec!["a".to_string(), String::new(), "c".into(), "d".into(), e.clone(), e]);

    let mut thousand_and_one = Vec::new();
    for _ in 0..1001 {
        thousand_and_one.extend_from_slice(&[0, 0, 0, 1, b'x']);
    }
    let refusals = [
        (post_body(&client, &batch, vec![], None).await, 400, "batch body: no records"),
        (post_body(&client, &batch, vec![0, 0, 0, 5, b'x'], None).await, 400, "record 0 at byte 0: 5 bytes announced, 1 left"),
        (post_body(&client, &batch, vec![0, 0, 0, 1, b'x', 0], None).await, 400, "length at byte 5 is cut short"),
        (post_body(&client, &batch, vec![0, 0, 250, 1], None).await, 400, "64001 bytes is over the limit of 64000"),
        (post_body(&client, &batch, thousand_and_one, None).await, 400, "more than 1000 records"),
        (post_body(&client, &batch, vec![0; (4 << 20) + 1], None).await, 413, "batch body over the limit of 4194304 bytes"),
        (post_batch(&client, &server.url("/streams/a!b/batch"), &[b"x"], None).await, 400, "stream name \"a!b\""),
        (post_batch(&client, &batch, &[b"x", b"y"], Some(("p", 1, u64::MAX))).await, 400, "past the last seq"),
    ];
    for ((status, body), expected_status, expected_text) in refusals {
        let error = body["error"].as_str().unwrap_or_else(|| panic!("no error in {body}"));
        assert_eq!(status, expected_status, "{error}");
        assert!(error.contains(expected_text), "{error:?} does not say {expected_text:?}");
    }
    assert_eq!(get(&client, &server.url("/streams/s")).await.1["end"].as_u64(), Some(6), "nothing refused was appended");
}

#[tokio::test]
async fn a_retried_batch_is_a_duplicate_also_after_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let client = reqwest::Client::new();
    let server = start(dir.path());
    let batch = server.url("/streams/s/batch");
    let p = |seq| Some(("p", 1, seq));
    assert_eq!(post_batch(&client, &batch, &[b"p0", b"p1", b"p2"], p(0)).await, (200, serde_json::json!({"offset": 0, "count": 3})));
    assert_eq!(post(&client, &server.url("/streams/s/records"), b"anonymous", None).await.0, 200);
    assert_eq!(post_batch(&client, &batch, &[b"p3", b"p4"], p(3)).await, (200, serde_json::json!({"offset": 4, "count": 2})));
    let duplicate = serde_json::json!({"offset": 4, "count": 2, "duplicate": true});
    assert_eq!(post_batch(&client, &batch, &[b"p3", b"p4"], p(3)).await, (200, duplicate.clone()));
    let conflicts = [
        // Overlapping partly, leaving a gap, and an older batch (not the last one).
        (post_batch(&client, &batch, &[b"p4", b"p5"], p(4)).await, "seq 4 is not the next one: expected seq 5"),
        (post_batch(&client, &batch, &[b"p6"], p(6)).await, "seq 6 is not the next one: expected seq 5"),
        (post_batch(&client, &batch, &[b"p0", b"p1", b"p2"], p(0)).await, "seq 0 is not the next one: expected seq 5"),
    ];
    for ((status, body), text) in conflicts {
        assert_eq!((status, body["expected_seq"].as_u64()), (409, Some(5)), "{body}");
        assert!(body["error"].as_str().unwrap().contains(text), "{body}");
    }
    server.crash();

    let server = start(dir.path());
    let batch = server.url("/streams/s/batch");
    assert_eq!(post_batch(&client, &batch, &[b"p3", b"p4"], p(3)).await, (200, duplicate), "after the restart");
    // The batch's last record alone, through the single append: the same offset.
    let (status, body) = post(&client, &server.url("/streams/s/records"), b"p4", p(4)).await;
    assert_eq!((status, body), (200, serde_json::json!({"offset": 5, "duplicate": true})));
    let (status, body) = post_batch(&client, &batch, &[b"p4", b"p5"], p(4)).await;
    assert_eq!((status, body["expected_seq"].as_u64()), (409, Some(5)), "{body}");
    assert_eq!(post_batch(&client, &batch, &[b"p5", b"p6"], p(5)).await, (200, serde_json::json!({"offset": 6, "count": 2})));
    let table: Vec<(u64, String, Option<u64>)> = stream_table(&client, &server, "s").await.into_iter().map(|r| (r.0, r.1, r.3)).collect();
    let expected: Vec<(u64, String, Option<u64>)> = vec![
        (0, "p0".into(), Some(0)),
        (1, "p1".into(), Some(1)),
        (2, "p2".into(), Some(2)),
        (3, "anonymous".into(), None),
        (4, "p3".into(), Some(3)),
        (5, "p4".into(), Some(4)),
        (6, "p5".into(), Some(5)),
        (7, "p6".into(), Some(6)),
    ];
    assert_eq!(table, expected);
}

#[tokio::test]
async fn a_batch_retried_after_its_upload_and_a_crash_is_a_duplicate() {
    let dir = tempfile::tempdir().unwrap();
    let client = reqwest::Client::new();
    let server = start_with(dir.path(), SMALL_BLOCKS);
    let batch = server.url("/streams/s/batch");
    // 60 records of 100 bytes (about 8 KB): more than one 4 KB block, so the batch's run
    // is split across commits and joined again from their snapshots.
    let values: Vec<Vec<u8>> = (0..60).map(|n| format!("{n:0>100}").into_bytes()).collect();
    let values: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
    assert_eq!(post_batch(&client, &batch, &values[..1], Some(("p", 1, 0))).await.1["offset"].as_u64(), Some(0));
    assert_eq!(post(&client, &server.url("/streams/s/records"), b"anonymous", None).await.0, 200);
    let first = serde_json::json!({"offset": 2, "count": 60});
    assert_eq!(post_batch(&client, &batch, &values, Some(("p", 1, 1))).await, (200, first));
    eventually("everything committed", async || committed(&client, &server, "s").await == 62).await;
    server.crash();

    let server = start_with(dir.path(), SMALL_BLOCKS);
    let batch = server.url("/streams/s/batch");
    let (status, body) = post_batch(&client, &batch, &values, Some(("p", 1, 1))).await;
    assert_eq!((status, body), (200, serde_json::json!({"offset": 2, "count": 60, "duplicate": true})));
    let (status, body) = post_batch(&client, &batch, &values[..2], Some(("p", 1, 0))).await;
    assert_eq!((status, body["expected_seq"].as_u64()), (409, Some(61)), "{body}");
}

/// Waits (at most a minute, polling) until `done` holds.
async fn eventually(what: &str, mut done: impl AsyncFnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !done().await {
        assert!(std::time::Instant::now() < deadline, "never happened: {what}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Every record of `stream`, paging with `next` until the end: (offset, value, seq).
async fn read_all(client: &reqwest::Client, server: &Server, stream: &str) -> Vec<(u64, Vec<u8>, Option<u64>)> {
    let mut records = Vec::new();
    let mut from = 0;
    loop {
        let (status, page) = get(client, &server.url(&format!("/streams/{stream}/records?from={from}&max=1000"))).await;
        assert_eq!(status, 200, "{page}");
        for record in page["records"].as_array().unwrap() {
            records.push((record["offset"].as_u64().unwrap(), decoded(record), record["seq"].as_u64()));
        }
        let next = page["next"].as_u64().unwrap();
        if next == page["end"].as_u64().unwrap() {
            return records;
        }
        assert!(next > from, "a read made no progress at {from}");
        from = next;
    }
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| entries.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    names.sort();
    names
}

async fn committed(client: &reqwest::Client, server: &Server, stream: &str) -> u64 {
    get(client, &server.url(&format!("/streams/{stream}"))).await.1["committed"].as_u64().unwrap_or(0)
}

const SMALL_BLOCKS: &[&str] =
    &["--block-bytes", "4096", "--block-ms", "20", "--stream-object-bytes", "2048", "--segment-bytes", "65536"];

#[tokio::test]
async fn records_read_across_objects_and_the_log_cache_are_one_gapless_sequence_also_after_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let client = reqwest::Client::new();
    let server = start_with(dir.path(), SMALL_BLOCKS);
    let value = |n: u64| format!("{n:0>100}").into_bytes();
    for chunk in (0..1000u64).collect::<Vec<_>>().chunks(50) {
        let appends = chunk.iter().map(|&n| {
            let (client, server) = (&client, &server);
            async move {
                let a = post(client, &server.url("/streams/a/records"), &value(n), None).await;
                assert_eq!(a.0, 200, "{}", a.1);
            }
        });
        futures::future::join_all(appends).await;
    }
    // One producer on stream b, one seq after the other.
    for seq in 0..200u64 {
        let (status, body) = post(&client, &server.url("/streams/b/records"), &value(seq), Some(("p", 1, seq))).await;
        assert_eq!((status, body["offset"].as_u64()), (200, Some(seq)));
    }
    eventually("everything committed", async || {
        committed(&client, &server, "a").await == 1000 && committed(&client, &server, "b").await == 200
    })
    .await;
    let wal_dir = dir.path().join("default/0");
    eventually("the WAL's first segment removed", async || {
        !files_in(&wal_dir).contains(&"wal-00000000000000000001.log".to_string())
    })
    .await;
    let objects = files_in(&dir.path().join("default/0.serve/objects"));
    assert!(objects.len() >= 2, "objects: {objects:?}");

    let a = read_all(&client, &server, "a").await;
    assert_eq!(a.iter().map(|r| r.0).collect::<Vec<u64>>(), (0..1000).collect::<Vec<u64>>(), "offsets without a gap");
    let mut values: Vec<Vec<u8>> = a.iter().map(|r| r.1.clone()).collect();
    values.sort();
    assert_eq!(values, (0..1000).map(value).collect::<Vec<_>>(), "every value once");
    let b = read_all(&client, &server, "b").await;
    assert_eq!(b, (0..200).map(|n| (n, value(n), Some(n))).collect::<Vec<_>>());
    // Ten more stay in the log cache or join an object: the sequence goes on either way.
    for n in 1000..1010 {
        assert_eq!(post(&client, &server.url("/streams/a/records"), &value(n), None).await.1["offset"].as_u64(), Some(n));
    }
    server.crash();

    let server = start_with(dir.path(), SMALL_BLOCKS);
    let again = read_all(&client, &server, "a").await;
    assert_eq!(again.len(), 1010);
    assert_eq!(&again[..1000], &a[..]);
    assert_eq!(again[1000..].iter().map(|r| r.1.clone()).collect::<Vec<_>>(), (1000..1010).map(value).collect::<Vec<_>>());
    assert_eq!(read_all(&client, &server, "b").await, b);
    // The producer's state came back from the commit: the WAL records are trimmed.
    let (status, body) = post(&client, &server.url("/streams/b/records"), &value(199), Some(("p", 1, 199))).await;
    assert_eq!((status, body), (200, serde_json::json!({"offset": 199, "duplicate": true})));
    let (status, body) = post(&client, &server.url("/streams/b/records"), b"late", Some(("p", 1, 150))).await;
    assert_eq!((status, body["expected_seq"].as_u64()), (409, Some(200)));
}

#[tokio::test]
async fn a_crash_between_upload_and_commit_leaves_an_orphan_that_expires() {
    let dir = tempfile::tempdir().unwrap();
    let client = reqwest::Client::new();
    let objects_dir = dir.path().join("default/0.serve/objects");
    let mut server = start_with(dir.path(), &["--block-ms", "20", "--crash-at", "before-commit"]);
    let (status, body) = post(&client, &server.url("/streams/s/records"), b"first", None).await;
    assert_eq!((status, body), (200, serde_json::json!({"offset": 0})));
    let exit = server.child.wait().expect("the server ends");
    assert!(!exit.success(), "the server aborted: {exit:?}");
    assert_eq!(files_in(&objects_dir), vec![format!("{:020}", 0)], "the orphan is uploaded");

    let server = start_with(dir.path(), &["--block-ms", "20"]);
    assert!(server.preamble.iter().any(|line| line.contains("expired 1 object ids")), "{:?}", server.preamble);
    let (status, body) = post(&client, &server.url("/streams/s/records"), b"second", None).await;
    assert_eq!((status, body), (200, serde_json::json!({"offset": 1})));
    eventually("both records committed", async || committed(&client, &server, "s").await == 2).await;
    // Id 0 expired with its object; the commits used new ids.
    let objects = files_in(&objects_dir);
    assert!(!objects.is_empty() && !objects.contains(&format!("{:020}", 0)), "objects: {objects:?}");
    let records = read_all(&client, &server, "s").await;
    assert_eq!(records, vec![(0, b"first".to_vec(), None), (1, b"second".to_vec(), None)]);
}

#[tokio::test]
async fn every_ack_printed_by_load_http_is_readable_at_its_offset() {
    every_ack_is_readable(&[]).await;
}

#[tokio::test]
async fn every_ack_printed_by_load_http_with_batches_is_readable_at_its_offset() {
    // 200 records over 16 writers in batches of 3: every writer's last batch is shorter.
    every_ack_is_readable(&["--batch", "3"]).await;
}

async fn every_ack_is_readable(flags: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let server = start_with(dir.path(), &["--block-ms", "10"]);
    let load = Command::new(env!("CARGO_BIN_EXE_walab"))
        .args(["load", "--http", &server.base, "--writers", "16", "--records", "200", "--streams", "4", "--producers", "8"])
        .args(["--run-id", "t"])
        .args(flags)
        .output()
        .expect("walab load runs");
    assert!(load.status.success(), "{}", String::from_utf8_lossy(&load.stderr));
    assert!(String::from_utf8_lossy(&load.stderr).contains("load: 200 acked in"), "{}", String::from_utf8_lossy(&load.stderr));
    let mut acks: Vec<(String, u64, String, String)> = String::from_utf8(load.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            assert_eq!((fields.len(), fields[0]), (5, "ack"), "{line}");
            (fields[1].to_string(), fields[2].parse().unwrap(), fields[3].to_string(), fields[4].to_string())
        })
        .collect();
    acks.sort();
    assert_eq!(acks.len(), 200);
    let client = reqwest::Client::new();
    let mut stored = Vec::new();
    for stream in ["t-0", "t-1", "t-2", "t-3"] {
        // Paged: a read below the log cache ends with the object it came from.
        let mut from = 0;
        loop {
            let (_, page) = get(&client, &server.url(&format!("/streams/{stream}/records?from={from}"))).await;
            for record in page["records"].as_array().unwrap() {
                let producer = record["producer"].as_str().unwrap_or("-").to_string();
                let seq = record["seq"].as_u64().map_or("-".to_string(), |seq| seq.to_string());
                stored.push((stream.to_string(), record["offset"].as_u64().unwrap(), producer, seq));
            }
            from = page["next"].as_u64().unwrap();
            if from == page["end"].as_u64().unwrap() {
                break;
            }
        }
    }
    stored.sort();
    assert_eq!(stored, acks, "what was acknowledged is what is stored, offset for offset");
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

#[tokio::test]
async fn a_crash_between_the_commit_and_the_wal_trim_loses_and_repeats_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // The first block seals at about 500 records; the writers go on while it uploads.
    let flags = ["--block-bytes", "65536", "--block-ms", "2000", "--segment-bytes", "65536"];
    let mut server = start_with(dir.path(), &[&flags[..], &["--crash-at", "after-commit"]].concat());
    // Every writer is a producer, so every stored record names its (producer, seq).
    let load = Command::new(env!("CARGO_BIN_EXE_walab"))
        .args(["load", "--http", &server.base, "--writers", "8", "--seconds", "60", "--streams", "3", "--producers", "8"])
        .args(["--run-id", "c"])
        .output()
        .expect("walab load runs");
    // The load stops at its first failed request, once the server is gone.
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
    let client = reqwest::Client::new();
    let streams = ["c-0", "c-1", "c-2"];
    let mut committed_total = 0;
    let mut stored: Vec<(String, u64, String, u64)> = Vec::new();
    let mut last_of: std::collections::BTreeMap<String, (String, u64, u64)> = Default::default();
    for stream in streams {
        committed_total += committed(&client, &server, stream).await;
        let mut from = 0;
        loop {
            let (status, page) = get(&client, &server.url(&format!("/streams/{stream}/records?from={from}"))).await;
            assert_eq!(status, 200, "{page}");
            for record in page["records"].as_array().unwrap() {
                let offset = record["offset"].as_u64().unwrap();
                let producer = record["producer"].as_str().expect("every record has a producer").to_string();
                let seq = record["seq"].as_u64().unwrap();
                assert_eq!(offset, stored.iter().filter(|r| r.0 == stream).count() as u64, "offsets follow without a gap");
                last_of.insert(producer.clone(), (stream.to_string(), seq, offset));
                stored.push((stream.to_string(), offset, producer, seq));
            }
            from = page["next"].as_u64().unwrap();
            if from == page["end"].as_u64().unwrap() {
                break;
            }
        }
    }
    assert!(committed_total > 0, "the commit before the crash counts after the restart");
    // Exactly once: each producer's seqs are 0, 1, 2, ... in offset order, none twice.
    for producer in last_of.keys() {
        let seqs: Vec<u64> = stored.iter().filter(|r| &r.2 == producer).map(|r| r.3).collect();
        assert_eq!(seqs, (0..seqs.len() as u64).collect::<Vec<_>>(), "producer {producer}'s seqs");
    }
    // Every acknowledged record is there, at the offset it was acknowledged with.
    for ack in &acks {
        assert!(stored.contains(ack), "acknowledged {ack:?} is not stored at its offset");
    }
    // Dedup survives: each producer's last stored seq is a duplicate at its offset, an
    // earlier one a gap, and the next one gets the stream's next offset.
    for (producer, (stream, seq, offset)) in &last_of {
        let records = server.url(&format!("/streams/{stream}/records"));
        let (status, body) = post(&client, &records, b"retry", Some((producer, 1, *seq))).await;
        assert_eq!((status, body), (200, serde_json::json!({"offset": offset, "duplicate": true})), "{producer} seq {seq}");
        if *seq > 0 {
            let (status, body) = post(&client, &records, b"old", Some((producer, 1, seq - 1))).await;
            assert_eq!((status, body["expected_seq"].as_u64()), (409, Some(seq + 1)), "{body}");
        }
        let end = get(&client, &server.url(&format!("/streams/{stream}"))).await.1["end"].as_u64().unwrap();
        let (status, body) = post(&client, &records, b"next", Some((producer, 1, seq + 1))).await;
        assert_eq!((status, body), (200, serde_json::json!({"offset": end})), "{producer} seq {}", seq + 1);
    }
}
