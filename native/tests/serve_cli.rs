//! `walab serve` end to end: the built binary on a real file WAL, real HTTP.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::Value;

/// A running `walab serve`; killed (SIGKILL, a crash) when dropped.
struct Server {
    child: Child,
    base: String,
}

impl Server {
    fn start(wal_dir: &Path) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_walab"))
            .args(["serve", "--wal", &format!("file://{}", wal_dir.display()), "--listen", "127.0.0.1:0"])
            .stderr(Stdio::piped())
            .spawn()
            .expect("walab serve starts");
        let mut stderr = BufReader::new(child.stderr.take().expect("stderr is piped"));
        let mut line = String::new();
        stderr.read_line(&mut line).expect("a line on stderr");
        let address = line
            .trim()
            .strip_prefix("walab serve: listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_string();
        // Keep reading stderr so that the server never writes into a full or closed pipe.
        std::thread::spawn(move || {
            let mut rest = String::new();
            let _ = stderr.read_to_string(&mut rest);
        });
        Server { child, base: address }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn crash(mut self) {
        self.child.kill().expect("kill");
        self.child.wait().expect("wait");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
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

#[tokio::test]
async fn pipelined_appends_get_every_offset_once_and_read_back_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
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
    let server = Server::start(dir.path());
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
    let server = Server::start(dir.path());
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

    let server = Server::start(dir.path());
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
