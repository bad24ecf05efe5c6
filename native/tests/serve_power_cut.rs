//! The stream store through power cuts: its WAL and metadata log on the simulated disk
//! the crash tests use (everything not synced is dropped or torn at the cut), rebuilt
//! after each reboot. Every acknowledged request is there after the cut, a producer's
//! retried seq is a duplicate, and nothing unacknowledged shows up twice.

use std::path::PathBuf;
use std::sync::Arc;

use walab::serve::append::{AppendRequest, CreateRequest};
use walab::serve::meta_log::MetaLog;
use walab::serve::objects::Objects;
use walab::serve::read::READ_BYTES_MAX;
use walab::serve::store::StoreError;
use walab::serve::Store;
use walab::wal::file::fault_fs::{CutMode, FaultFs};
use walab::wal::file::FileBackend;
use walab::wal::{Wal, WalOptions};
use walab_core::stream_store::offset::Offset;
use walab_core::stream_store::record::ProducerStamp;

fn backend(fs: &FaultFs, dir: &str) -> Box<FileBackend> {
    Box::new(FileBackend::new(Arc::new(fs.clone()), PathBuf::from(dir), 64 << 10, true))
}

/// The store on `fs` as a restart finds it (its uploads never run: everything stays in
/// the WAL and the metadata log).
fn open(fs: &FaultFs, objects: &std::path::Path) -> Store {
    let meta = MetaLog::open(backend(fs, "/serve/meta")).expect("the metadata log opens");
    let (wal, recovered) = Wal::open(backend(fs, "/wal/default/0"), WalOptions::default()).expect("the WAL opens");
    let objects = Arc::new(Objects::local(objects.to_path_buf()).unwrap());
    Store::recover(wal, recovered, Arc::new(meta), objects).expect("the store recovers").0
}

fn request(body: &str, seq: u64) -> AppendRequest {
    AppendRequest {
        content_type: Some("text/plain".into()),
        body: body.as_bytes().to_vec(),
        producer: Some(ProducerStamp { id: "p".into(), epoch: 0, seq }),
        stream_seq: None,
        close: false,
    }
}

async fn text(store: &Store) -> String {
    let stream = store.find("s", false).await.expect("the stream is there");
    let answer = store.read(&stream, Offset::START, READ_BYTES_MAX).await.unwrap();
    String::from_utf8(answer.bodies.concat()).unwrap()
}

#[test]
fn a_power_cut_keeps_every_acknowledged_request_and_each_retry_is_a_duplicate() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let objects = tempfile::tempdir().unwrap();
    let fs = FaultFs::new(512);
    let mut acknowledged = String::new();
    let mut next_seq = 0;
    for round in 0..6u64 {
        let store = open(&fs, objects.path());
        let unknown = runtime.block_on(async {
            if round == 0 {
                let create = CreateRequest { content_type: Some("text/plain".into()), ..CreateRequest::default() };
                assert!(store.create("s", create).await.unwrap().new);
            }
            // What the last round acknowledged survived the cut, and nothing more.
            assert_eq!(text(&store).await, acknowledged, "after cut {round}");
            if next_seq > 0 {
                // The last acknowledged seq again, after the cut: a duplicate.
                let again = store.append("s", request("again", next_seq - 1)).await.unwrap();
                assert!(again.duplicate && again.producer == Some((0, next_seq - 1)), "{again:?}");
            }
            for _ in 0..5 {
                let body = format!("[{round}.{next_seq}]");
                let appended = store.append("s", request(&body, next_seq)).await.unwrap();
                assert!(!appended.duplicate);
                acknowledged.push_str(&body);
                next_seq += 1;
            }
            // One more is in flight when the power fails: acknowledged before the cut
            // (then it must survive), or not (then its outcome is unknown and the next
            // round's producer sends it again).
            let mode = if round % 2 == 0 { CutMode::Tear } else { CutMode::DropUnsynced };
            let cut = async {
                tokio::time::sleep(std::time::Duration::from_micros(200 * round)).await;
                fs.cut_power(mode, round);
            };
            let (in_flight, ()) = futures::future::join(store.append("s", request("?", next_seq)), cut).await;
            match in_flight {
                Ok(appended) => {
                    assert!(!appended.duplicate);
                    acknowledged.push('?');
                    next_seq += 1;
                    None
                }
                Err(StoreError::Unknown(_) | StoreError::Stopped(_)) => Some(next_seq),
                Err(other) => panic!("{other:?}"),
            }
        });
        drop(store);
        fs.restart();
        // A request whose outcome is unknown is sent again: a duplicate if it survived,
        // a fresh append if not; either way it is in the stream once.
        if let Some(seq) = unknown {
            let store = open(&fs, objects.path());
            runtime.block_on(async {
                let retry = store.append("s", request("?", seq)).await.unwrap();
                assert_eq!(retry.producer.map(|(_, seq)| seq), Some(seq));
                acknowledged.push('?');
                next_seq += 1;
                assert_eq!(text(&store).await, acknowledged);
            });
        }
    }
}
