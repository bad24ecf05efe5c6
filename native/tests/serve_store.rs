//! The stream store over a WAL whose storage fails: every waiter learns its outcome is
//! unknown, and the store takes nothing more.

use std::sync::Arc;

use serde_json::Value;
use walab::serve::meta_log::{self, MetaLog};
use walab::serve::objects::Objects;
use walab::serve::{http, Store};
use walab::wal::{Backend, Completion, Recovered, Wal, WalError, WalOptions};
use walab_core::group_commit::{Batch, SyncError};

/// A storage whose first `good_batches` persists succeed and every later one fails.
struct FailingAfter {
    good_batches: usize,
}

impl Backend for FailingAfter {
    fn describe(&self) -> String {
        "failing-after".to_string()
    }
    fn recover(&mut self) -> Result<Recovered, WalError> {
        Ok(Recovered { next_seq: 1, ..Recovered::default() })
    }
    fn segment_bytes_max(&self) -> u64 {
        u64::MAX
    }
    fn persist(&mut self, batch: Batch, done: Completion) {
        if self.good_batches == 0 {
            done.complete(Err(SyncError::Io), batch.bytes);
        } else {
            self.good_batches -= 1;
            done.complete(Ok(()), batch.bytes);
        }
    }
    fn write_unsynced(&mut self, _batch: &Batch) -> Result<(), SyncError> {
        Ok(())
    }
    fn remove_segments(&mut self, _segments: &[u64]) -> Result<(), WalError> {
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_wal_answers_503_unknown_and_stops_appends() {
    let (wal, recovered) = Wal::open(Box::new(FailingAfter { good_batches: 1 }), WalOptions::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let objects = Arc::new(Objects::local(dir.path().join("objects")).unwrap());
    let meta = tokio::task::block_in_place(|| MetaLog::open(meta_log::file_backend(dir.path().join("meta")))).unwrap();
    let (store, _) = Store::recover(wal, recovered, Arc::new(meta), objects).unwrap();
    let store = Arc::new(store);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, http::router(store, http::HttpOptions::default())).await });
    let client = reqwest::Client::new();
    let stream = format!("{base}/v1/stream/s");
    let post = |body: &'static str| client.post(&stream).header("content-type", "text/plain").body(body).send();
    // Creating it writes no WAL record (no initial body); the first append takes the one
    // good persist.
    assert_eq!(client.put(&stream).header("content-type", "text/plain").send().await.unwrap().status(), 201);
    assert_eq!(post("kept").await.unwrap().status(), 204);
    let failed = post("lost?").await.unwrap();
    assert_eq!(failed.status(), 503);
    let failed: Value = serde_json::from_slice(&failed.bytes().await.unwrap()).unwrap();
    assert_eq!(failed["outcome"].as_str(), Some("unknown"), "{failed}");
    assert!(failed["error"].as_str().unwrap().contains("may or may not be durable"), "{failed}");
    let later = post("after").await.unwrap();
    assert_eq!(later.status(), 503);
    let later: Value = serde_json::from_slice(&later.bytes().await.unwrap()).unwrap();
    assert_eq!(later["outcome"].as_str(), Some("not appended"), "{later}");
    assert!(later["error"].as_str().unwrap().contains("restart the server"), "{later}");
    // Reads go on: only the acknowledged record is there.
    let read = client.get(&stream).send().await.unwrap();
    assert_eq!(read.status(), 200);
    assert_eq!(read.text().await.unwrap(), "kept");
}
