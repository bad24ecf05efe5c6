//! The stream store over a WAL whose storage fails: every waiter learns its outcome is
//! unknown, and the store takes nothing more.

use std::sync::Arc;

use serde_json::{json, Value};
use walab::serve::objects::Objects;
use walab::serve::{http, Store};
use walab::wal::{Backend, Completion, Recovered, Wal, WalError, WalOptions};
use walab_core::group_commit::{Batch, SyncError};
use walab_core::stream_store::meta::MetaState;

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

async fn answer(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    (status, serde_json::from_slice(&response.bytes().await.unwrap()).unwrap())
}

#[tokio::test]
async fn a_failed_wal_answers_503_unknown_and_stops_appends() {
    let (wal, recovered) = Wal::open(Box::new(FailingAfter { good_batches: 1 }), WalOptions::default()).unwrap();
    let objects_dir = tempfile::tempdir().unwrap();
    let objects = Arc::new(Objects::local(objects_dir.path().to_path_buf()).unwrap());
    let store = Arc::new(Store::recover(wal, recovered, &MetaState::default(), objects).unwrap());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, http::router(store)).await });
    let client = reqwest::Client::new();
    let records = format!("{base}/streams/s/records");
    let first = answer(client.post(&records).body("kept").send().await.unwrap()).await;
    assert_eq!(first, (200, json!({"offset": 0})));
    let (status, failed) = answer(client.post(&records).body("lost?").send().await.unwrap()).await;
    assert_eq!((status, failed["outcome"].as_str()), (503, Some("unknown")), "{failed}");
    assert!(failed["error"].as_str().unwrap().contains("may or may not be durable"), "{failed}");
    let (status, later) = answer(client.post(&records).body("after").send().await.unwrap()).await;
    assert_eq!((status, later["outcome"].as_str()), (503, Some("not appended")), "{later}");
    assert!(later["error"].as_str().unwrap().contains("restart the server"), "{later}");
    let (status, read) = answer(client.get(&records).send().await.unwrap()).await;
    assert_eq!(status, 200);
    assert_eq!((read["end"].as_u64(), read["records"].as_array().unwrap().len()), (Some(1), 1), "{read}");
}
